"""The xarray backend entrypoint: ``xr.open_dataset(path, engine="tensogram")``.

Thin by design, and shaped like xarray's own backends: sniff the format through
the format registry, open its file object, let the assembly step build the raw
(CF-encoded) variables of each group, wrap every group in a
:class:`TensogramDataStore`, and let xarray's ``StoreBackendEntrypoint`` apply CF
decoding, so ``encoding`` (``preferred_chunks`` included) comes through xarray
itself. One engine serves Tensogram (``.tgm``), Tetration (``.tet``) and zTensor (``.zt``).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

import xarray as xr
from xarray.backends import BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint

from .assemble.registry import AssembleOptions, assemble
from .errors import GroupSelectionError, NotATensorFileError, UnsupportedOptionError, describe
from .formats import registry
from .formats.base import FormatFile
from .io import ByteSource, is_remote_url, open_source

__all__ = ["TensogramBackendEntrypoint", "TensogramDataStore", "open_raw_groups", "sniff_format"]

#: the CF decoding switches, typed as xarray types them
DecodeCoords = bool | Literal["coordinates", "all"] | None
DecodeFlag = bool | Mapping[str, bool] | None


def sniff_format(source: ByteSource) -> str | None:
    """Format name from the magic bytes at offset 0, else from the extension."""
    spec = registry.sniff(source)
    return spec.name if spec is not None else None


def _not_a_tensor_file(source: ByteSource) -> NotATensorFileError:
    """No known magic or extension and the default format (Tensogram, whose messages may follow
    leading junk) found nothing: say plainly that this is none of the three formats."""
    what = "the file is empty" if source.size == 0 else "unknown magic and extension"
    return NotATensorFileError(f"{describe(source.name)}not a Tensogram, Tetration or zTensor file ({what})")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a catalog is built.

    Opening a file of 10,000 messages creates hundreds of thousands of small dicts and lists that all
    stay alive; the collector's periodic full passes over them took about half of the open time.
    Nothing built here forms reference cycles that need collecting right away; the previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _normalise_drop(drop_variables: str | Iterable[str] | None) -> frozenset[str]:
    if drop_variables is None:
        return frozenset()
    if isinstance(drop_variables, str):
        return frozenset([drop_variables])
    return frozenset(drop_variables)


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
    """One group of an opened file, as the variables and attributes xarray decodes.

    Non-index coordinates are announced the CF way, through a global ``coordinates``
    attribute, so xarray's decoding (``decode_coords``) sets them as coordinates.
    """

    __slots__ = ("_closed", "_dataset", "_shared")

    def __init__(self, dataset: xr.Dataset, shared: _SharedFile) -> None:
        self._dataset = dataset
        self._shared = shared
        self._closed = False

    def get_variables(self) -> dict[str, xr.Variable]:
        return {str(k): v for k, v in self._dataset.variables.items()}

    def get_attrs(self) -> dict[str, Any]:
        attrs = dict(self._dataset.attrs)
        variables = self._dataset.variables
        extra = [str(k) for k in self._dataset.coords if variables[k].dims != (k,)]
        if extra:
            previous = attrs.get("coordinates")
            attrs["coordinates"] = " ".join(([previous] if isinstance(previous, str) else []) + extra)
        return attrs

    def get_dimensions(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self._dataset.sizes.items()}

    def get_encoding(self) -> dict[str, Any]:
        return dict(self._dataset.encoding)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._shared.release()


def _select_group(groups: Mapping[str, xr.Dataset], group: str | None, name: str) -> str:
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


def open_raw_groups(
    filename_or_obj: Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    drop_variables: str | Iterable[str] | None = None,
    **format_options: Any,
) -> tuple[dict[str, xr.Dataset], FormatFile[Any]]:
    """The raw (not yet CF-decoded) Dataset of every group, and the open file to close.

    For consumers that need the storage layout behind the variables (the virtual Zarr parsers):
    data variables hold the lazy array, whose ``ArraySpec`` names every chunk's reader.
    ``format_options`` are those of ``open_dataset`` (``dim_names``, ``variable_key`` ...); None means unset.
    """
    options = {k: v for k, v in format_options.items() if v is not None}
    return TensogramBackendEntrypoint._open_groups(
        filename_or_obj, storage_options, _normalise_drop(drop_variables), options
    )


class TensogramBackendEntrypoint(BackendEntrypoint):
    """Open Tensogram (``.tgm``), Tetration (``.tet``) and zTensor (``.zt``) files lazily.

    Keyword arguments (all optional):

    ``variable_key``
        dotted metadata key naming Tensogram variables (default: ``name``, ``mars.param``,
        ``param``, ``mars.shortName``, ``shortName``, else ``object_<i>``). Tensogram only.
    ``dim_names``
        a list of dimension names for every variable, or a dict ``variable -> list``.
    ``filter_by_keys``
        ``{dotted key: value or list of values}``: keep only matching Tensogram objects. Tensogram only.
    ``group``
        the group to open when a file holds objects that cannot share one Dataset.
    ``verify_hash``
        check every Tensogram object's xxh3 hash when it is read (zTensor: checksums; not for
        Tetration, which stores none).
    ``strict``
        raise on a damaged message instead of skipping it with a warning (the other formats always raise).
    ``storage_options``
        passed to fsspec for remote URLs.
    ``message_index``, ``merge_objects``, ``range_threshold``
        Tensogram only: which messages to open (an int, negative from the end, a list or a slice);
        ``merge_objects=False`` opens only the message at ``message_index`` (default 0); reads covering
        less than ``range_threshold`` (0 to 1, default 0.5) of an object use a partial read when its
        pipeline allows one (0: always decode whole objects).
    ``drop_variables``, ``mask_and_scale``, ``decode_times``, ``decode_timedelta``, ``use_cftime``,
    ``decode_coords``, ``concat_characters``
        as everywhere in xarray, applied by xarray's own CF decoding (``decode_timedelta``
        defaults to ``decode_times``: forecast steps are time deltas, as cfgrib users expect).

    An option that does not apply to the format being opened is an :class:`UnsupportedOptionError`
    (a ``ValueError``) naming it.
    """

    description = "Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files, lazily and storage-chunked"
    # xarray shows "Learn more at <url>"; no hosted page exists yet, so this is the documentation's
    # path in the source tree, as in pyproject's project.urls (the reference project's URL misled)
    url = "docs/index.md"
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "variable_key",
        "dim_names",
        "filter_by_keys",
        "group",
        "verify_hash",
        "strict",
        "storage_options",
        "mask_and_scale",
        "decode_times",
        "decode_timedelta",
        "use_cftime",
        "decode_coords",
        "concat_characters",
        "message_index",
        "merge_objects",
        "range_threshold",
    )
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Whether xarray should pick this engine for a file it was not told the engine of.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, bytes or binary file object
            What ``xr.open_dataset`` was given.

        Returns
        -------
        bool
            True for a recognised magic (or, for unreadable sources, a known extension); never raises.
        """
        try:
            return self._guess(filename_or_obj)
        except Exception:
            return False

    @staticmethod
    def _guess(obj: Any) -> bool:
        n = registry.magic_length()
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
            if registry.from_bytes(head) is not None:
                return True
            # readable but no magic: only a format whose reader skips leading bytes may still match
            # (.tet and .zt files always start with their magic; mesh files also use .tet)
            spec = registry.from_extension(path)
            return spec is not None and spec.magic_optional
        if hasattr(obj, "read") and hasattr(obj, "seek"):
            pos = obj.tell()
            obj.seek(0)  # sources read absolute offsets, so sniff from the start too
            head = obj.read(n)
            obj.seek(pos)
            return registry.from_bytes(head) is not None
        return False

    # -- opening --------------------------------------------------------------------------------
    @staticmethod
    def _open_groups(
        filename_or_obj: Any,
        storage_options: Mapping[str, Any] | None,
        drop: frozenset[str],
        format_options: dict[str, Any],
    ) -> tuple[dict[str, xr.Dataset], FormatFile[Any]]:
        """Open the file and assemble the raw Dataset of every group; the file is closed on error."""
        with _gc_paused():
            return TensogramBackendEntrypoint._open_groups_now(filename_or_obj, storage_options, drop, format_options)

    @staticmethod
    def _open_groups_now(
        filename_or_obj: Any,
        storage_options: Mapping[str, Any] | None,
        drop: frozenset[str],
        format_options: dict[str, Any],
    ) -> tuple[dict[str, xr.Dataset], FormatFile[Any]]:
        source = open_source(filename_or_obj, storage_options)
        try:
            sniffed = registry.sniff(source)
            spec = sniffed or registry.default()
            bad = spec.unsupported_options(format_options)
            if bad:
                raise UnsupportedOptionError(
                    f"{source.name!r} is a {spec.title} file: option{'s' if len(bad) > 1 else ''} "
                    f"{', '.join(bad)} do{'' if len(bad) > 1 else 'es'} not apply to it "
                    f"(it takes {', '.join(sorted(spec.options)) or 'none of the format options'})"
                )
            try:
                f = registry.open_file(spec, source, **format_options)
            except NotATensorFileError as exc:
                if sniffed is not None:
                    raise
                raise _not_a_tensor_file(source) from exc
        except BaseException:
            source.close()
            raise
        try:
            opts = AssembleOptions(
                drop_variables=drop,
                dim_names=format_options.get("dim_names"),
                variable_key=format_options.get("variable_key"),
                filter_by_keys=format_options.get("filter_by_keys"),
                verify_hash=bool(format_options.get("verify_hash")),
                strict=bool(format_options.get("strict")),
                message_index=format_options.get("message_index"),
                merge_objects=format_options.get("merge_objects", True),
                range_threshold=format_options.get("range_threshold", 0.5),
            )
            return assemble(spec.name, f, opts), f
        except BaseException:
            f.close()
            raise

    @staticmethod
    def _decode(store: TensogramDataStore, decoders: dict[str, Any], drop: frozenset[str]) -> xr.Dataset:
        """CF-decode one group through xarray's store entrypoint (the store is closed on error)."""
        try:
            return StoreBackendEntrypoint().open_dataset(store, drop_variables=list(drop) or None, **decoders)
        except BaseException:
            store.close()
            raise

    @staticmethod
    def _decoders(
        mask_and_scale: DecodeFlag,
        decode_times: DecodeFlag,
        decode_timedelta: DecodeFlag,
        use_cftime: DecodeFlag,
        decode_coords: DecodeCoords,
        concat_characters: DecodeFlag,
    ) -> dict[str, Any]:
        if decode_timedelta is None and decode_times is not False:
            decode_timedelta = True  # steps are time deltas, as cfgrib users expect
        return {
            "mask_and_scale": True if mask_and_scale is None else mask_and_scale,
            "decode_times": True if decode_times is None else decode_times,
            "decode_coords": True if decode_coords is None else decode_coords,
            "concat_characters": True if concat_characters is None else concat_characters,
            "decode_timedelta": decode_timedelta,
            "use_cftime": use_cftime,
        }

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        variable_key: str | None = None,
        dim_names: Any = None,
        filter_by_keys: Mapping[str, Any] | None = None,
        group: str | None = None,
        verify_hash: bool = False,
        strict: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        mask_and_scale: DecodeFlag = None,
        decode_times: DecodeFlag = None,
        decode_timedelta: DecodeFlag = None,
        use_cftime: DecodeFlag = None,
        decode_coords: DecodeCoords = None,
        concat_characters: DecodeFlag = None,
        message_index: Any = None,
        merge_objects: bool = True,
        range_threshold: float = 0.5,
    ) -> xr.Dataset:
        """Open one file as a lazy Dataset (called by ``xr.open_dataset(..., engine="tensogram")``).

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, bytes or binary file object
            A path, an fsspec URL, the bytes of a file or an open binary file object.
        drop_variables : str or iterable of str, optional
            Variables not to open.
        variable_key : str, optional
            Dotted metadata key naming Tensogram variables (default: the first of ``name``,
            ``mars.param``, ``param``, ``mars.shortName``, ``shortName``). Tensogram only.
        dim_names : list of str or dict, optional
            Dimension names for every variable, or ``{variable: [names]}``.
        filter_by_keys : mapping, optional
            ``{dotted key: value or [values]}``: keep only matching Tensogram objects. Tensogram only.
        group : str, optional
            The group to open when a file holds objects that cannot share one Dataset.
        verify_hash : bool, default False
            Check hashes/checksums when values are read (Tensogram and zTensor).
        strict : bool, default False
            Raise on a damaged Tensogram message instead of skipping it with a warning.
        storage_options : mapping, optional
            Passed to fsspec for remote URLs.
        mask_and_scale, decode_times, decode_timedelta, use_cftime, decode_coords, concat_characters
            As in every xarray backend, applied by xarray's own CF decoding.

        Returns
        -------
        xarray.Dataset
            Lazy variables whose ``encoding["preferred_chunks"]`` is the storage unit.

        Raises
        ------
        GroupSelectionError
            If the file holds several groups and ``group`` names none of them.
        UnsupportedOptionError
            If an option does not apply to the file's format.
        """
        drop = _normalise_drop(drop_variables)
        groups, f = self._open_groups(
            filename_or_obj,
            storage_options,
            drop,
            {
                "variable_key": variable_key,
                "dim_names": dim_names,
                "filter_by_keys": filter_by_keys,
                "verify_hash": verify_hash,
                "strict": strict,
                "message_index": message_index,
                "merge_objects": merge_objects,
                "range_threshold": range_threshold,
            },
        )
        try:
            key = _select_group(groups, group, f.name)
        except BaseException:
            f.close()
            raise
        decoders = self._decoders(
            mask_and_scale, decode_times, decode_timedelta, use_cftime, decode_coords, concat_characters
        )
        return self._decode(TensogramDataStore(groups[key], _SharedFile(f, 1)), decoders, drop)

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        variable_key: str | None = None,
        dim_names: Any = None,
        filter_by_keys: Mapping[str, Any] | None = None,
        group: str | None = None,
        verify_hash: bool = False,
        strict: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        mask_and_scale: DecodeFlag = None,
        decode_times: DecodeFlag = None,
        decode_timedelta: DecodeFlag = None,
        use_cftime: DecodeFlag = None,
        decode_coords: DecodeCoords = None,
        concat_characters: DecodeFlag = None,
        message_index: Any = None,
        merge_objects: bool = True,
        range_threshold: float = 0.5,
    ) -> dict[str, xr.Dataset]:
        """Every group as a decoded Dataset keyed ``"/"``, ``"/name"``...; ``group`` keeps only that one (as root).

        Each Dataset closes its share of the file; the file closes with the last of them.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, bytes or binary file object
            As for :meth:`open_dataset`.
        drop_variables, variable_key, dim_names, filter_by_keys, group, verify_hash, strict, storage_options
            As for :meth:`open_dataset`.
        mask_and_scale, decode_times, decode_timedelta, use_cftime, decode_coords, concat_characters
            As for :meth:`open_dataset`.

        Returns
        -------
        dict of str to xarray.Dataset
            One lazy Dataset per group path.
        """
        drop = _normalise_drop(drop_variables)
        groups, f = self._open_groups(
            filename_or_obj,
            storage_options,
            drop,
            {
                "variable_key": variable_key,
                "dim_names": dim_names,
                "filter_by_keys": filter_by_keys,
                "verify_hash": verify_hash,
                "strict": strict,
                "message_index": message_index,
                "merge_objects": merge_objects,
                "range_threshold": range_threshold,
            },
        )
        try:
            if group is not None:
                groups = {"/": groups[_select_group(groups, group, f.name)]}
            elif "/" not in groups:  # the root holds the attributes all groups share
                groups = {"/": xr.Dataset(attrs=dict(next(iter(groups.values())).attrs)), **groups}
        except BaseException:
            f.close()
            raise
        decoders = self._decoders(
            mask_and_scale, decode_times, decode_timedelta, use_cftime, decode_coords, concat_characters
        )
        shared = _SharedFile(f, len(groups))
        out: dict[str, xr.Dataset] = {}
        try:
            for name, raw in groups.items():
                out[name if name.startswith("/") else "/" + name] = self._decode(
                    TensogramDataStore(raw, shared), decoders, drop
                )
        except BaseException:
            for ds in out.values():
                ds.close()
            f.close()
            raise
        return out

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> xr.DataTree:
        """All groups as one tree; ``tree.close()`` closes the file (every node holds a share of it).

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, bytes or binary file object
            As for :meth:`open_dataset`.
        **kwargs
            The keyword arguments of :meth:`open_dataset`.

        Returns
        -------
        xarray.DataTree
            One node per group (e.g. ``grid_19x36``); the root holds the file's attributes.
        """
        groups = self.open_groups_as_dict(filename_or_obj, **kwargs)
        try:
            tree: xr.DataTree = xr.DataTree.from_dict(groups)
        except BaseException:
            for ds in groups.values():
                ds.close()
            raise
        for path, ds in groups.items():
            tree[path].set_close(ds._close)
        return tree
