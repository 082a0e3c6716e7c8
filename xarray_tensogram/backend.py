"""The xarray backend entrypoint: ``xr.open_dataset(path, engine="tensogram")``.

Shaped like xarray's own backends, one engine for every registered format: sniff the format, open its
file, let its assembly build the raw (CF-encoded) groups, and decode each :class:`TensogramDataStore`
through xarray's own CF machinery. The keyword arguments are declared once (:mod:`xarray_tensogram.options`):
the methods take ``**options`` and present the declared signature to xarray, ``help()`` and IDEs.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends import BackendEntrypoint
from xarray.backends.common import AbstractDataStore, datatree_from_dict_with_io_cleanup
from xarray.core.utils import close_on_error

from . import options as declared
from .assemble.registry import assemble, options_taken
from .conventions import NONE_VAR_NAME
from .decoding import decode_times_in_memory, default_indexes
from .errors import (
    GroupSelectionError,
    IgnoredOptionWarning,
    NotATensorFileError,
    UnsupportedOptionError,
    describe,
    user_stacklevel,
)
from .formats import registry
from .formats.base import FormatFile
from .formats.registry import FormatSpec
from .io import ByteSource, RetryPolicy, is_remote_url, open_source
from .metadata_cache import open_cached
from .raw_variables import RawGroup, xarray_variable

__all__ = ["TensogramBackendEntrypoint", "TensogramDataStore", "open_decoded", "open_raw_groups"]

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _not_a_tensor_file(source: ByteSource) -> NotATensorFileError:
    """No known magic or extension and the default format (whose reader may skip leading junk)
    found nothing: say plainly that this is none of the formats."""
    what = "the file is empty" if source.size == 0 else "unknown magic and extension"
    other = registry.other_format(source)
    *titles, last = [s.title for s in registry.formats().values()]  # "Tensogram, Tetration layout or zTensor"
    return NotATensorFileError(
        f"{describe(source.name)}not a {', '.join(titles)} or {last} file" + (f": {other}" if other else f" ({what})")
    )


def _normalise_drop(drop: str | Iterable[str] | None) -> frozenset[str]:
    return frozenset(() if drop is None else [drop] if isinstance(drop, str) else drop)


class _SharedFile:
    """One open file shared by the stores of its groups: closed when the last store closes."""

    def __init__(self, f: FormatFile[Any], users: int) -> None:
        self.file = f
        self.users = users

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0:
            self.file.close()


class TensogramDataStore(AbstractDataStore):
    """One group of an opened file as assembly produced it; which variables are coordinates is assembly's
    decision, kept as a set of names (:attr:`coord_names`) rather than re-encoded as a CF attribute."""

    __slots__ = ("_closed", "_shared", "attrs", "coord_names", "encoding", "variables")

    def __init__(self, raw: RawGroup, shared: _SharedFile) -> None:
        self.variables = {k: xarray_variable(v) for k, v in raw.variables.items()}
        self.coord_names = raw.coord_names
        self.attrs = raw.attrs
        self.encoding = raw.encoding
        self._shared = shared
        self._closed = False

    def get_variables(self) -> dict[str, xr.Variable]:
        return dict(self.variables)

    def get_attrs(self) -> dict[str, Any]:
        return dict(self.attrs)

    def get_dimensions(self) -> dict[str, int]:
        return {str(d): int(n) for var in self.variables.values() for d, n in var.sizes.items()}

    def get_encoding(self) -> dict[str, Any]:
        return dict(self.encoding)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._shared.release()

    def decode(self, decoders: Mapping[str, Any], drop: frozenset[str]) -> xr.Dataset:
        """The Dataset xarray's ``StoreBackendEntrypoint`` would build, assembly's coordinates as coordinates;
        in-memory CF times and dimension coordinates decoded and indexed here as xarray would, without Dask."""
        with close_on_error(self):
            variables, attrs, cf_coords = conventions.decode_cf_variables(
                decode_times_in_memory(_unsigned_fills_on_disk(self.variables), decoders),
                self.get_attrs(),
                drop_variables=list(drop) or None,
                **decoders,
            )
            coord_names = set(cf_coords) | self.coord_names
            coords = {k: v for k, v in variables.items() if k in coord_names or v.dims == (k,)}
            data = {(None if k == NONE_VAR_NAME else k): v for k, v in variables.items() if k not in coords}
            ds = xr.Dataset(data, coords=default_indexes(coords), attrs=attrs)
            ds.set_close(self.close)
            ds.encoding = self.get_encoding()
            return ds


def _unsigned_fills_on_disk(variables: Mapping[str, xr.Variable]) -> dict[str, xr.Variable]:
    """``variables`` with the fill values of ``_Unsigned`` integers in the stored dtype.

    xarray's decoder reads the fill of an ``_Unsigned`` variable as netCDF and Zarr hand it over: in the
    stored dtype (``np.uint8(255)``), and fails on the plain number (``255``) that a format keeping its
    attributes as JSON or CBOR gives back. A value the stored dtype cannot hold is left for xarray to judge."""
    out = dict(variables)
    for name, var in variables.items():
        if "_Unsigned" not in var.attrs or var.dtype.kind not in "iu":
            continue
        typed = {}
        for k in ("_FillValue", "missing_value"):
            value = var.attrs.get(k)
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                with contextlib.suppress(OverflowError):
                    typed[k] = var.dtype.type(int(value))
        if typed:
            out[name] = var.copy(deep=False)  # a new attrs dict: the raw variable may be cached
            out[name].attrs = {**var.attrs, **typed}
    return out


def _select_group(groups: Mapping[str, Any], group: str | None, name: str) -> str:
    """The key of the group to open: the one asked for, or the only one there is."""
    if group is None:
        if len(groups) == 1:
            return next(iter(groups))
        raise GroupSelectionError(
            f"{name!r} holds objects that cannot share one Dataset; groups: {', '.join(groups)}. "
            f"Open one with group='<name>' (or filter_by_keys={{...}}), "
            f"or all of them with xr.open_datatree(..., engine='tensogram') / xr.open_groups"
        )
    for cand in (group, "/" + group.strip("/"), group.strip("/")):
        if cand in groups:
            return cand
    raise GroupSelectionError(f"{name!r} has no group {group!r}; groups: {', '.join(groups)}")


def _check_applies(spec: FormatSpec, values: Mapping[str, Any], name: str) -> None:
    """A format-specific option given (not at its default) for a format that does not take it is an error."""
    taken = options_taken(spec)
    bad = [
        o.name
        for o in declared.OPTIONS
        if o.scope is declared.Scope.FORMAT and o.name not in taken and values[o.name] != o.default
    ]
    if bad:
        own = [n for n in declared.names(declared.Scope.FORMAT) if n in taken]
        raise UnsupportedOptionError(
            f"{name!r} is a {spec.title} file: option{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
            f"do{'' if len(bad) > 1 else 'es'} not apply to it (its own options: {', '.join(own) or 'none'}; "
            f"remove {'them' if len(bad) > 1 else 'it'})"
        )


class _Opened(NamedTuple):
    """An open file, its raw groups and every open option's value."""

    groups: dict[str, RawGroup]
    file: FormatFile[Any]
    spec: FormatSpec
    values: dict[str, Any]


def _open(filename_or_obj: Any, given: Mapping[str, Any], allowed: Iterable[str] | None = None) -> _Opened:
    """The one opener: check the option names, then open and assemble the file, or read back what an earlier
    open of the same unchanged file built (``metadata_cache``, see :mod:`~xarray_tensogram.metadata_cache`)."""
    # an options error names the path or URL, else the kind of object given
    named = isinstance(filename_or_obj, (str, os.PathLike))
    where = repr(os.fspath(filename_or_obj)) if named else f"opening a {type(filename_or_obj).__name__}"
    declared.check_names(given, where, allowed)
    values = declared.resolve(given)
    values["drop_variables"] = _normalise_drop(values["drop_variables"])
    values["retries"] = RetryPolicy.of(values["retries"])  # a bad value is refused whatever the file
    _warn_remote_only(filename_or_obj, given)
    # what the assembled groups depend on (in a stable order: the entry's key is made from it)
    unkeyed = ("group", "metadata_cache", "retries")
    keyed = {k: values[k] for k in declared.names(*declared.NOT_XARRAY) if k not in unkeyed}
    keyed["drop_variables"] = sorted(values["drop_variables"])
    groups, f, name = open_cached(
        filename_or_obj, values["metadata_cache"], keyed, lambda: _open_now(filename_or_obj, values)
    )
    return _Opened(groups, f, registry.get(name), values)


def _warn_remote_only(filename_or_obj: Any, given: Mapping[str, Any]) -> None:
    """``storage_options`` and ``retries`` act on remote URLs only: given for a local path, say they do nothing."""
    if not isinstance(filename_or_obj, (str, os.PathLike)) or is_remote_url(os.fsdecode(filename_or_obj)):
        return
    for name in ("storage_options", "retries"):
        if given.get(name) not in (None, {}):
            warnings.warn(
                f"{name}={given[name]!r} has no effect on the local file {os.fsdecode(filename_or_obj)!r}: "
                "it applies to remote URLs only (s3://, https://, ...)",
                IgnoredOptionWarning,
                stacklevel=user_stacklevel(),
            )


def _open_now(filename_or_obj: Any, values: dict[str, Any]) -> tuple[dict[str, RawGroup], FormatFile[Any], str]:
    """Sniff, open the format's file, assemble every group; the groups, the file and the format's name."""
    source = open_source(filename_or_obj, values["storage_options"], retries=values["retries"])
    with close_on_error(source):
        sniffed = registry.sniff(source)
        spec = sniffed or registry.default()
        _check_applies(spec, values, source.name)
        reader_options = {k: values[k] for k in declared.keywords_of(spec.open) if k != "storage_options"}
        try:
            f = registry.open_file(spec, source, storage_options=values["storage_options"], **reader_options)
        except NotATensorFileError as exc:
            if sniffed is not None:
                raise
            raise _not_a_tensor_file(source) from exc
    with close_on_error(f):
        return assemble(spec, f, values), f, spec.name


def open_raw_groups(filename_or_obj: Any, **options: Any) -> tuple[dict[str, xr.Dataset], FormatFile[Any]]:
    """The raw (not yet CF-decoded) Dataset of every group, and the open file to close, for the Zarr views
    (which need the lazy arrays' specs). ``options``: those of ``open_dataset`` but CF decoding; None: default."""
    given = {k: v for k, v in options.items() if v is not None}
    opened = _open(filename_or_obj, given, declared.names(*declared.NOT_XARRAY))
    return {k: g.to_dataset() for k, g in opened.groups.items()}, opened.file


def _decoders(values: Mapping[str, Any]) -> dict[str, Any]:
    """xarray's CF decoding switches with xarray's defaults. ``decode_timedelta`` passes through: MARS ``step``
    carries the ``dtype`` attribute xarray's encoder writes, so it decodes by default; netCDF "hours" do not."""
    on = ("mask_and_scale", "decode_times", "decode_coords", "concat_characters")  # by default, as in xarray
    return {n: True if n in on and values[n] is None else values[n] for n in declared.names(declared.Scope.XARRAY)}


def _decode_groups(opened: _Opened, every: bool) -> dict[str, xr.Dataset]:
    """Every group (``every``), else the one to open, decoded; the ``group`` option keeps only that one (as root).
    Each Dataset closes its share of the file."""
    groups, keep = opened.groups, opened.values["group"]
    with close_on_error(opened.file):  # on an error the file closes, whatever shares were handed out
        if keep is not None or not every:
            groups = {"/": groups[_select_group(groups, keep, opened.file.name)]}
        elif "/" not in groups:  # the root holds the attributes all groups share
            groups = {"/": RawGroup({}, attrs=dict(next(iter(groups.values())).attrs)), **groups}
        shared = _SharedFile(opened.file, len(groups))
        decoders, drop = _decoders(opened.values), opened.values["drop_variables"]
        return {
            (name if name.startswith("/") else "/" + name): TensogramDataStore(raw, shared).decode(decoders, drop)
            for name, raw in groups.items()
        }


def open_decoded(filename_or_obj: Any, **options: Any) -> tuple[dict[str, xr.Dataset], _Opened]:
    """Every group decoded, keyed by group path, and the opened file with its format record (for ``info``,
    which prints the format's own summary beside xarray's without opening the file twice)."""
    opened = _open(filename_or_obj, options)
    return {k: _with_default_indexes(ds) for k, ds in _decode_groups(opened, every=True).items()}, opened


def _with_default_indexes(ds: xr.Dataset) -> xr.Dataset:
    """The indexes ``xr.open_dataset`` creates by default (the store leaves that to xarray, as xarray's
    own store does), for callers that use the Datasets without going through ``xr.open_*``."""
    to_index = {k: c.variable for k, c in ds.coords.items() if c.dims == (k,) and k not in ds.xindexes}
    if not to_index:
        return ds
    indexed: xr.Dataset = ds.assign_coords(xr.Coordinates(to_index))
    indexed.set_close(ds.close)  # assign_coords returns a Dataset that would not close the file
    return indexed


def _declared_signature(method: _Method) -> _Method:
    """Present the declared options as the method's signature (what xarray reads to know the parameters),
    and a docstring entry ``**options`` followed by "The open options" as one entry per declared option."""
    method.__dict__["__signature__"] = declared.signature()
    entry = re.compile(r"^( *)\*\*options\n\1    The open options[^\n]*\n", re.M)
    method.__doc__ = entry.sub(lambda m: declared.numpydoc_entries(m.group(1)) + "\n", method.__doc__ or "")
    return method


class TensogramBackendEntrypoint(BackendEntrypoint):
    """Open Tensogram (``.tgm``), Tetration (``.tet``) and zTensor (``.zt``) files lazily.

    The keyword arguments are declared in :mod:`xarray_tensogram.options` (the README's kwargs table); a
    misspelt one is an :class:`~xarray_tensogram.errors.UnknownOptionError` suggesting the closest option.
    """

    description = "Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files, lazily and storage-chunked"
    # no `url`: xarray shows it as "Learn more at <url>", and this project has no hosted page yet.
    # xarray reads the parameters from the signature only for engines looked up by name, so declare them
    open_dataset_parameters = ("filename_or_obj", *declared.names())
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Whether xarray should pick this engine for a file it was not told the engine of: True for a
        recognised magic (or, for unreadable sources, a known extension); never raises."""
        obj, n = filename_or_obj, registry.magic_length()
        try:
            if isinstance(obj, (bytes, bytearray, memoryview)):
                return registry.from_bytes(bytes(obj[:n])) is not None
            if isinstance(obj, (str, os.PathLike)):
                path = os.fspath(obj)
                if isinstance(path, str) and is_remote_url(path):
                    return registry.from_extension(path.split("?")[0]) is not None
                try:
                    with open(path, "rb") as f:
                        head = f.read(n)
                except OSError:
                    return registry.from_extension(path) is not None  # unreadable now: the extension decides
                # readable but no magic: only a format whose reader skips leading bytes may still match
                spec = registry.from_extension(path)
                return registry.from_bytes(head) is not None or (spec is not None and spec.magic_optional)
            if hasattr(obj, "read") and hasattr(obj, "seek"):
                pos = obj.tell()
                obj.seek(0)  # sources read absolute offsets, so sniff from the start too
                head = obj.read(n)
                obj.seek(pos)
                return registry.from_bytes(head) is not None
        except Exception:
            pass
        return False

    @_declared_signature
    def open_dataset(self, filename_or_obj: Any, **options: Any) -> xr.Dataset:
        """Open one file (one group of it) as a lazy Dataset: ``xr.open_dataset(..., engine="tensogram")``.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, bytes or binary file object
            A path, an fsspec URL, the bytes of a file or an open binary file object.
        **options
            The open options of :mod:`xarray_tensogram.options` (the README's kwargs table).

        Returns
        -------
        xarray.Dataset
            Lazy variables whose ``encoding["preferred_chunks"]`` is the Dask chunk of ``chunks={}``.

        Raises
        ------
        GroupSelectionError
            If the file holds several groups and ``group`` names none of them.
        UnsupportedOptionError
            If an option does not apply to the file's format (``UnknownOptionError``: no such option).
        """
        return _decode_groups(_open(filename_or_obj, options), every=False)["/"]

    @_declared_signature
    def open_groups_as_dict(self, filename_or_obj: Any, **options: Any) -> dict[str, xr.Dataset]:
        """Every group as a lazy Dataset keyed ``"/"``, ``"/name"``...; ``group`` keeps only that one (as root).
        Arguments as for :meth:`open_dataset`; the file closes with the last Dataset."""
        return open_decoded(filename_or_obj, **options)[0]

    @_declared_signature
    def open_datatree(self, filename_or_obj: Any, **options: Any) -> xr.DataTree:
        """All groups as one tree, one node per group (e.g. ``grid_19x36``), the root holding the file's
        attributes. Arguments as for :meth:`open_dataset`; ``tree.close()`` closes the file."""
        return datatree_from_dict_with_io_cleanup(self.open_groups_as_dict(filename_or_obj, **options))
