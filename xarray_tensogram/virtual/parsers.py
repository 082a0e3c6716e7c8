"""VirtualiZarr parsers: a ``.tgm``, ``.tet`` or ``.zt`` file as a :class:`ManifestStore`, without copying.

Each parser is a callable ``parser(url, registry) -> ManifestStore`` (VirtualiZarr's ``Parser`` protocol). It
opens the file with this package's own readers and assembly, so dims, coords and attrs are exactly those of
``xr.open_dataset(path, engine="tensogram")``, and maps every storage chunk to its byte range.

Variables without byte ranges in the file (coordinates built from metadata: ``step``, ``valid_time``, ``.tet``
labels; sparse zTensor layouts) are *inlined*: their encoded values live in the store, which always loads them,
so kerchunk references and Icechunk repositories carry them as data; ``inline_reasons`` says why for each (a
key of ``byte_layout.UNREFERENCED``).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import urlparse

import numpy as np
import xarray as xr

from .. import options as declared
from ..array_spec import chunk_counts
from ..backend import _select_group, open_raw_groups
from ..byte_layout import ByteLayout, ChunkRef, Unreferenced, zarr_bytes_codec
from ..errors import UnsupportedError, VirtualMappingWarning
from ..formats import registry as format_registry
from ..formats.registry import FormatSpec
from ..raw_variables import storage_spec
from ..zarr_meta import byte_slice, default_fill, inline_values, json_attr, little_endian_bytes, zarr_attrs
from .chunks import plan_chunks
from .codecs import register

__all__ = ["TensogramParser", "TetrParser", "VirtualMappingWarning", "ZTensorParser"]

INLINE_PREFIX = "memory://xarray-tensogram-inline/"


def _local_path(url: str) -> str:
    parsed = urlparse(url)
    return parsed.path if parsed.scheme == "file" else url


def _check_zarr_dtype(name: str, dtype: np.dtype) -> bool:
    """True when Zarr can hold a variable of this name and dtype; else warn that it is left out."""
    from zarr.core.dtype import parse_data_type

    problem = "a name Zarr cannot hold" if not name or "/" in name or name.startswith("__") else None
    if problem is None:
        try:
            parse_data_type(dtype, zarr_format=3)
        except Exception:
            problem = f"dtype {dtype}, which Zarr cannot hold"
    if problem is not None:
        warnings.warn(
            f"variable {name!r} has {problem}; it is left out of the virtual dataset (open it with engine='tensogram')",
            VirtualMappingWarning,
            stacklevel=4,
        )
    return problem is None


@functools.cache
def _store_class() -> type:
    """A ManifestStore serving the inlined arrays, which it always loads (built on first use: an optional extra)."""
    from virtualizarr.manifests import ManifestStore

    class TensogramManifestStore(ManifestStore):  # type: ignore[misc, unused-ignore]  # Any without virtualizarr
        def __init__(self, group: Any, *, registry: Any, inline: dict[str, bytes], reasons: dict[str, str]) -> None:
            super().__init__(group, registry=registry)
            self._inline, self._reasons = inline, reasons

        @property
        def inline_variables(self) -> list[str]:
            """Variables without byte ranges in the file: loaded by :meth:`to_virtual_dataset`."""
            return list(self._inline)

        @property
        def inline_reasons(self) -> dict[str, str]:
            """Why each inlined variable has no byte ranges: a key of ``byte_layout.UNREFERENCED``."""
            return dict(self._reasons)

        async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
            name, _, rest = key.rpartition("/")
            if name in self._inline and rest != "zarr.json":
                return prototype.buffer.from_bytes(byte_slice(self._inline[name], byte_range))
            return await super().get(key, prototype, byte_range)

        def to_virtual_dataset(
            self, group: str = "", loadable_variables: Iterable[str] | None = None, decode_times: bool | None = None
        ) -> xr.Dataset:
            if loadable_variables is None:
                dims = {d for arr in self._group.arrays.values() for d in (arr.metadata.dimension_names or ())}
                loadable_variables = [n for n in self._group.arrays if n in dims]
            wanted = list(dict.fromkeys([*loadable_variables, *self._inline]))
            vds: xr.Dataset = super().to_virtual_dataset(
                group=group, loadable_variables=wanted, decode_times=decode_times
            )
            return vds

    return TensogramManifestStore


def _manifest(shape: tuple[int, ...], plan: ByteLayout, url: str) -> Any:
    """The chunk manifest of an array of ``shape`` (empty paths are missing chunks: read as the fill value)."""
    from virtualizarr.manifests import ChunkManifest

    grid = chunk_counts(shape, plan.chunk_shape)
    if 0 in grid:
        return ChunkManifest({}, shape=grid)
    paths = np.full(grid, "", dtype=np.dtypes.StringDType())
    offsets, lengths = np.zeros(grid, dtype=np.uint64), np.zeros(grid, dtype=np.uint64)
    for ref in plan.refs:
        paths[ref.coords], offsets[ref.coords], lengths[ref.coords] = ref.path or url, ref.offset, ref.length
    return ChunkManifest.from_arrays(paths=paths, offsets=offsets, lengths=lengths)


class _Parser:
    """Shared by the parsers: open with our assembly, plan the chunks, build the ManifestStore. A parser takes the
    open options of ``open_dataset`` but xarray's CF decoding (:mod:`xarray_tensogram.options`); its format is the
    record naming the class as ``virtual_parser``."""

    def __init__(self, **options: Any) -> None:
        declared.check_names(options, type(self).__name__, declared.names(*declared.NOT_XARRAY))
        self.options = {k: v for k, v in options.items() if v is not None}
        self.group: str | None = self.options.get("group")

    @classmethod
    def format(cls) -> FormatSpec:
        """The format record whose ``virtual_parser`` is this class."""
        ref = f"{cls.__module__}:{cls.__name__}"
        return next(spec for spec in format_registry.formats().values() if spec.virtual_parser == ref)

    def __call__(self, url: str, registry: Any) -> Any:
        register()
        target, mine = _local_path(url), self.format()
        found = _sniff(target, self.options)
        if found is not mine:
            parser = found.virtual_parser.rpartition(":")[2]
            raise UnsupportedError(f"{url!r} is a {found.title} file, not {mine.title}: use {parser}")
        groups, f = open_raw_groups(target, **{**self.options, "group": None})
        try:
            keys = cast("dict[str, Any]", groups)  # _select_group reads only the group names
            return self._store(url, groups[_select_group(keys, self.group, url)], registry)
        finally:
            f.close()

    def _plan(self, url: str, name: str, var: xr.Variable) -> ByteLayout | Unreferenced:
        """The byte ranges of a raw variable, or why it is inlined."""
        if var.dims == (name,):  # dimension coordinates: every open loads them for its index anyway
            return Unreferenced("coordinate")
        spec = storage_spec(var)
        if spec is None:
            return Unreferenced("no-storage")
        if 0 in spec.shape:  # VirtualiZarr cannot write references to zero-size arrays
            return Unreferenced("empty")
        return plan_chunks(spec, url)

    def _store(self, url: str, raw: xr.Dataset, registry: Any) -> Any:
        from virtualizarr.manifests import ManifestArray, ManifestGroup
        from virtualizarr.manifests.utils import create_v3_array_metadata
        from xarray.conventions import encode_dataset_coordinates

        variables, ds_attrs = encode_dataset_coordinates(raw)
        arrays, inline, reasons = {}, {}, {}
        for name, var in variables.items():
            name = str(name)
            plan = self._plan(url, name, var)
            values = inline_values(var) if isinstance(plan, Unreferenced) else None
            dtype = var.dtype if values is None else values.dtype
            if not _check_zarr_dtype(name, dtype):
                continue
            if isinstance(plan, Unreferenced):
                assert values is not None
                reasons[name], inline[name] = plan.reason, little_endian_bytes(values)
                refs = (
                    (ChunkRef((0,) * values.ndim, 0, len(inline[name]), INLINE_PREFIX + name),) if values.size else ()
                )
                plan = ByteLayout(tuple(max(1, s) for s in values.shape), (zarr_bytes_codec(dtype),), refs)
            attrs, fill = zarr_attrs(var)
            meta = create_v3_array_metadata(
                shape=var.shape,
                data_type=dtype,
                chunk_shape=plan.chunk_shape,
                chunk_key_encoding={"name": "default", "configuration": {"separator": "."}},
                fill_value=default_fill(dtype, fill),
                codecs=list(plan.codecs),
                attributes=attrs,
                dimension_names=[str(d) for d in var.dims],
            )
            arrays[name] = ManifestArray(metadata=meta, chunkmanifest=_manifest(var.shape, plan, url))
        group = ManifestGroup(arrays=arrays, attributes={k: json_attr(v) for k, v in ds_attrs.items()})
        return _store_class()(group, registry=registry, inline=inline, reasons=reasons)


class TensogramParser(_Parser):
    """Parser for Tensogram ``.tgm`` files: one Zarr chunk per data object. Options as in ``open_dataset``:
    ``variable_key``, ``dim_names``, ``filter_by_keys``, ``message_index`` (an int, negative from the end, a list
    of ints or a slice), ``merge_objects``, ``group`` (for files with several grids), ``storage_options`` (fsspec,
    for reading the metadata of remote files), ``drop_variables``."""


class TetrParser(_Parser):
    """Parser for Tetration ``.tet`` files: one Zarr chunk per tile (``dim_names``, ``storage_options``)."""


class ZTensorParser(_Parser):
    """Parser for zTensor ``.zt`` files: one Zarr chunk per tensor (``dim_names``, ``storage_options``)."""


def parser_for(path: str | os.PathLike[str], **options: Any) -> _Parser:
    """The parser matching a file's magic (or extension), built with ``options``."""
    parser: type[_Parser] = format_registry.load(_sniff(_local_path(os.fspath(path)), options).virtual_parser)
    return parser(**options)


def _sniff(target: str, options: Mapping[str, Any]) -> FormatSpec:
    """The format of the file at ``target`` (its magic, else its extension), read with the open ``options``."""
    from ..io import open_source

    with open_source(target, options.get("storage_options") or None, retries=options.get("retries")) as src:
        return format_registry.sniff(src) or format_registry.default()
