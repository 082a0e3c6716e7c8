"""A read-only Zarr v3 store over a ``.tgm``, ``.tet`` or ``.zt`` file: ``zarr.open_group(TensogramStore(path))``.

The store opens the file with the backend's own readers and assembly (names, dims, coordinates and attributes
are those of ``open_dataset``); its ``zarr.json`` documents are built at open from metadata only. A chunk
(``<variable>/c/<i>/<j>...``) is one storage unit, read on request by the lazy array's own chunk reader and
served decoded under the ``bytes`` codec alone: every codec the backend decodes is readable through Zarr.
Needs zarr (the ``zarr`` extra): the package imports this module on first use of ``TensogramStore``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import posixpath  # keys under a group path ("" for the root); names hold no "/" (zarr_names)
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from xarray.conventions import encode_dataset_coordinates
from xarray.core.utils import close_on_error
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype

from . import options as declared
from .array_spec import ArraySpec, MissingChunk, chunk_counts, chunk_extent, full_region, read_chunk_into
from .backend import _normalise_drop, _select_group, open_raw_groups
from .errors import NotATensorFileError
from .io import open_source
from .raw_variables import storage_spec
from .zarr_meta import (
    array_document,
    byte_slice,
    default_fill,
    group_document,
    inline_values,
    little_endian_bytes,
    nested_attrs,
    zarr_attrs,
    zarr_dtype,
    zarr_names,
)

__all__ = ["TensogramStore"]


@dataclass(frozen=True)
class _Array:
    """One Zarr array of the store: its geometry and where its chunks come from (a lazy spec, or values
    already in memory: coordinates built from metadata)."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dtype: np.dtype
    fill: Any
    spec: ArraySpec | None = None
    values: np.ndarray | None = None

    @property
    def grid(self) -> tuple[int, ...]:
        return chunk_counts(self.shape, self.chunk_shape)

    def chunk_bytes(self, coords: tuple[int, ...]) -> bytes | None:
        """The chunk at ``coords``, padded with the fill value to the full chunk shape as Zarr stores edge
        chunks; None for a hole of a hypercube (Zarr then fills the chunk itself)."""
        extent = chunk_extent(self.shape, self.chunk_shape, coords)
        region = full_region(extent)
        if self.values is not None:
            block = self.values  # values in memory are one chunk
        else:
            assert self.spec is not None
            block = np.empty(extent, self.spec.dtype)
            try:
                if not read_chunk_into(self.spec.reader, coords, region, block):
                    block = np.asarray(self.spec.reader.read_chunk(coords, region))
            except MissingChunk:
                return None
        if extent != self.chunk_shape:
            padded = np.full(self.chunk_shape, self.fill if self.fill is not None else 0, self.dtype)
            padded[region] = block
            block = padded
        return little_endian_bytes(block, self.dtype)


class _Layout:
    """The key space of one opened file: ``zarr.json`` documents and the arrays whose chunks are read lazily."""

    def __init__(self, where: str) -> None:
        self.where = where  # the file, for messages
        self.documents: dict[str, bytes] = {}
        self.arrays: dict[str, _Array] = {}

    def add_group(self, path: str, raw: xr.Dataset, attrs: Mapping[str, Any]) -> None:
        """The group at ``path`` ("" for the root) and its variables, names Zarr cannot hold renamed."""
        names = [str(n) for n in (*raw.variables, *raw.dims)]
        renamed = zarr_names(list(dict.fromkeys(names)), f"{self.where}, group {path or '/'!r}")
        variables, _ = encode_dataset_coordinates(raw.rename(renamed) if renamed else raw)
        self.documents[posixpath.join(path, "zarr.json")] = group_document(nested_attrs(attrs))
        for name, var in variables.items():
            self.add_array(posixpath.join(path, str(name)), var)

    def add_array(self, path: str, var: xr.Variable) -> None:
        spec = storage_spec(var)
        attrs, fill = zarr_attrs(var)
        values = inline_values(var) if spec is None else None
        served = zarr_dtype(var.dtype if values is None else values.dtype, f"{self.where}, variable {path!r}")
        if served is None:
            return
        if spec is not None:
            # a hypercube hole holds the spec's fill, as the backend fills it, else the variable's _FillValue
            fill, chunks = fill if spec.fill_value is None else spec.fill_value, spec.chunk_shape
        else:
            chunks = tuple(max(1, s) for s in var.shape)
        array = self.arrays[path] = _Array(var.shape, chunks, served, default_fill(served, fill), spec, values)
        self.documents[posixpath.join(path, "zarr.json")] = array_document(
            var.shape, served, chunks, array.fill, nested_attrs(attrs), [str(d) for d in var.dims]
        )

    def find_chunk(self, key: str) -> tuple[_Array, tuple[int, ...]] | None:
        """The array and grid coordinates a chunk key names, or None when it names no chunk of this file."""
        parts = key.split("/")
        for i in (i for i, part in enumerate(parts) if part == "c"):
            array, digits = self.arrays.get("/".join(parts[:i])), parts[i + 1 :]
            if array is None or len(digits) != len(array.shape):
                continue
            # only the key as Zarr writes it names a chunk ("01" does not)
            canonical = all(d.isascii() and d.isdigit() and str(int(d)) == d for d in digits)
            coords = tuple(int(d) for d in digits) if canonical else ()
            inside = canonical and all(c < n for c, n in zip(coords, array.grid, strict=True))
            return (array, coords) if inside else None
        return None

    def keys(self, chunks: bool = True) -> Iterator[str]:
        """Every key; without ``chunks``, an array's chunks only by their common ``<array>/c`` prefix."""
        yield from self.documents
        for path, array in self.arrays.items():
            if chunks:  # Zarr's default chunk keys: "c" (0-d), "c/0/1" (2-d)
                yield from (posixpath.join(path, "c", *map(str, coords)) for coords in np.ndindex(*array.grid))
            elif math.prod(array.grid):
                yield posixpath.join(path, "c")


def _differs(value: Any, default: Any) -> bool:
    """Whether an option's value differs from its default (values without a plain truth value, arrays, do)."""
    try:
        return bool(value != default)
    except (TypeError, ValueError):
        return True


def _scan(path_or_url: Any, options: Mapping[str, Any]) -> tuple[_Layout, Any]:
    """The key space of the file, and the open file to close with the store (None for an empty file)."""
    layout = _Layout(f"file {path_or_url!s}")
    try:
        groups, f = open_raw_groups(path_or_url, **{**options, "group": None})
    except NotATensorFileError:
        with open_source(path_or_url, options.get("storage_options")) as src:
            if src.size:
                raise
        layout.documents["zarr.json"] = group_document({})  # an empty .tgm (no message yet): an empty group
        return layout, None
    with close_on_error(f):
        if options.get("group") is not None:
            groups = {"/": groups[_select_group(groups, options["group"], str(path_or_url))]}
        if "/" not in groups:  # the root holds the attributes all groups share, as open_datatree's root does
            layout.documents["zarr.json"] = group_document(nested_attrs(next(iter(groups.values())).attrs))
        drop = _normalise_drop(options.get("drop_variables"))
        for name, raw in groups.items():
            layout.add_group(name.strip("/"), raw.drop_vars(drop & set(raw.variables)), raw.attrs)
    return layout, f


class TensogramStore(Store):  # type: ignore[misc, unused-ignore]  # Any in a venv without zarr
    """A read-only Zarr v3 store over a Tensogram ``.tgm``, Tetration ``.tet`` or zTensor ``.zt`` file.

    ``zarr.open_group(TensogramStore(path))``, ``xr.open_zarr(...)`` and ``dask.array.from_zarr(...)`` read
    the values ``xr.open_dataset(path, engine="tensogram")`` reads, one Zarr chunk per storage unit.

    ``path_or_url``: a local path or an fsspec URL. The keywords are the open options of ``open_dataset``
    but xarray's CF switches, which ``xr.open_zarr`` applies; a misspelt one is an error. ``group=None``
    serves every group of a file that has several. Read-only: ``set`` and ``delete`` raise ``ValueError``.
    """

    supports_writes = False
    supports_deletes = False
    supports_listing = True

    def __init__(self, path_or_url: Any, *, read_only: bool = True, **options: Any) -> None:
        if not read_only:
            raise ValueError(
                f"TensogramStore({path_or_url!r}) is read-only: writing through Zarr is not supported; "
                f"write with Dataset.tensogram.to_tensogram (or to_tetr / to_ztensor)"
            )
        declared.check_names(options, f"TensogramStore({path_or_url!r})", declared.names(*declared.NOT_XARRAY))
        super().__init__(read_only=True)
        self.path = str(path_or_url)
        # an option given at its default is the option not given: the two stores are equal
        defaults = declared.resolve({})
        self.options = {k: v for k, v in options.items() if v is not None and _differs(v, defaults[k])}
        self._layout: _Layout | None = None
        self._file: Any = None

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"TensogramStore({self.path!r}{extra})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensogramStore) or type(other) is not type(self):
            return False
        return (self.path, self.options) == (other.path, other.options)

    def __hash__(self) -> int:
        return hash((type(self), self.path, repr(sorted(self.options.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        """Only the path and options: an unpickled store (in a Dask worker) reopens the file on first use."""
        return functools.partial(type(self), self.path, **self.options), ()

    async def _open(self) -> None:
        if self._is_open:
            raise ValueError("store is already open")
        self._layout, self._file = _scan(self.path, self.options)  # metadata only: no payload byte is read
        self._is_open = True

    def close(self) -> None:
        """Release the file; a later read reopens it."""
        if self._file is not None:
            self._file.close()
        self._file, self._layout = None, None
        super().close()

    def _check_writable(self) -> None:
        raise ValueError(
            f"store was opened in read-only mode and does not support writing: {self!r} reads a file; "
            f"write with Dataset.tensogram.to_tensogram (or to_tetr / to_ztensor) instead"
        )

    async def _keyspace(self) -> _Layout:
        await self._ensure_open()
        assert self._layout is not None
        return self._layout

    async def get(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None) -> Buffer | None:
        layout = await self._keyspace()
        data = layout.documents.get(key)
        found = None if data is not None else layout.find_chunk(key)
        if found is not None:
            data = await asyncio.to_thread(found[0].chunk_bytes, found[1])
        return None if data is None else prototype.buffer.from_bytes(byte_slice(data, byte_range))

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        layout = await self._keyspace()
        return key in layout.documents or layout.find_chunk(key) is not None

    async def getsize(self, key: str) -> int:
        """The size of a key; a chunk's is known from its shape, without reading it."""
        layout = await self._keyspace()
        found = None if key in layout.documents else layout.find_chunk(key)
        if found is None:
            return int(await super().getsize(key))
        array, _ = found
        return math.prod(array.chunk_shape) * array.dtype.itemsize

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()

    async def delete(self, key: str) -> None:
        self._check_writable()

    def list(self) -> AsyncIterator[str]:
        return self.list_prefix("")

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in list((await self._keyspace()).keys()):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        layout = await self._keyspace()
        base = prefix.rstrip("/") + "/" if prefix.rstrip("/") else ""
        inside_chunks = any(base.startswith(posixpath.join(p, "c") + "/") for p in layout.arrays)
        keys = layout.keys(chunks=inside_chunks)
        for name in dict.fromkeys(k[len(base) :].split("/")[0] for k in keys if k.startswith(base) and k != base):
            yield name


#: ``(self, path_or_url, *, <each open option a store takes>, read_only=True)``, from the options' declaration
TensogramStore.__init__.__signature__ = declared.signature(  # type: ignore[attr-defined]  # functions take a __signature__
    *declared.NOT_XARRAY,
    first="path_or_url: str | os.PathLike[str]",
    returns="None",
    extra=[inspect.Parameter("read_only", inspect.Parameter.KEYWORD_ONLY, default=True, annotation="bool")],
)
