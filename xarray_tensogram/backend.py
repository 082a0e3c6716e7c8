"""The xarray backend entrypoint: ``xr.open_dataset(path, engine="tensogram")``.

Thin by design: sniff the magic, open the format's file object, let the assembly
step build a raw Dataset of lazy variables, then apply xarray's own CF decoding.
One engine serves Tensogram (``.tgm``), Tetration (``.tet``) and zTensor (``.zt``).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

import xarray as xr
from xarray.backends import BackendEntrypoint

from .io import ByteSource, is_remote_url, open_source

__all__ = ["TensogramBackendEntrypoint", "sniff_format"]

MAGICS = {
    b"TENSOGRM": "tensogram",
    b"TETR": "tetr",
    b"ZTEN0001": "ztensor",
    b"ZTEN1000": "ztensor",
    b"\x89ZT2\r\n\x1a\n": "ztensor",
}
EXTENSIONS = {".tgm": "tensogram", ".tensogram": "tensogram", ".tet": "tetr", ".zt": "ztensor"}


def _format_from_bytes(head: bytes) -> str | None:
    for magic, fmt in MAGICS.items():
        if head.startswith(magic):
            return fmt
    return None


def _extension_format(name: Any) -> str | None:
    try:
        ext = os.path.splitext(os.fspath(name))[1].lower()
    except TypeError:
        return None
    return EXTENSIONS.get(ext)


def sniff_format(source: ByteSource) -> str | None:
    """Format name from the magic bytes at offset 0, else from the extension."""
    head = source.read(0, min(8, source.size), what="magic") if source.size else b""
    return _format_from_bytes(head) or _extension_format(source.name)


def _normalise_drop(drop_variables: str | Iterable[str] | None) -> frozenset[str]:
    if drop_variables is None:
        return frozenset()
    if isinstance(drop_variables, str):
        return frozenset([drop_variables])
    return frozenset(drop_variables)


class TensogramBackendEntrypoint(BackendEntrypoint):
    """Open Tensogram (``.tgm``), Tetration (``.tet``) and zTensor (``.zt``) files lazily.

    Keyword arguments (all optional):

    ``variable_key``
        dotted metadata key naming Tensogram variables (default: ``name``, ``mars.param``,
        ``param``, ``mars.shortName``, ``shortName``, else ``object_<i>``).
    ``dim_names``
        a list of dimension names for every variable, or a dict ``variable -> list``.
    ``filter_by_keys``
        ``{dotted key: value or list of values}``: keep only matching Tensogram objects.
    ``group``
        the group to open when a file holds objects that cannot share one Dataset.
    ``verify_hash``
        check every Tensogram object's xxh3 hash when it is read (zTensor: checksums).
    ``strict``
        raise on a damaged message instead of skipping it with a warning.
    ``storage_options``
        passed to fsspec for remote URLs.
    ``drop_variables``, ``mask_and_scale``, ``decode_times``, ``decode_timedelta``, ``use_cftime``,
    ``decode_coords``
        as everywhere in xarray, applied through xarray's own CF decoding.
    """

    description = "Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files, lazily and storage-chunked"
    url = "https://github.com/ecmwf/tensogram"
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "variable_key", "dim_names", "filter_by_keys", "group",
        "verify_hash", "strict", "storage_options", "mask_and_scale", "decode_times", "decode_timedelta",
        "use_cftime", "decode_coords",
    )
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            if isinstance(filename_or_obj, (bytes, bytearray, memoryview)):
                return _format_from_bytes(bytes(filename_or_obj[:8])) is not None
            if isinstance(filename_or_obj, (str, os.PathLike)):
                path = os.fspath(filename_or_obj)
                if isinstance(path, str) and is_remote_url(path):
                    return _extension_format(path.split("?")[0]) is not None
                try:
                    with open(path, "rb") as f:
                        head = f.read(8)
                except OSError:
                    return _extension_format(path) is not None  # unreadable now: the extension decides
                if _format_from_bytes(head) is not None:
                    return True
                # readable but no magic: only a .tgm may start with bytes the scanner skips;
                # .tet and .zt files always start with their magic (mesh files also use .tet)
                return _extension_format(path) == "tensogram"
            if hasattr(filename_or_obj, "read") and hasattr(filename_or_obj, "seek"):
                pos = filename_or_obj.tell()
                filename_or_obj.seek(0)  # sources read absolute offsets, so sniff from the start too
                head = filename_or_obj.read(8)
                filename_or_obj.seek(pos)
                return _format_from_bytes(head) is not None
        except Exception:
            return False
        return False

    # -- opening --------------------------------------------------------------------------------
    def _open_raw(self, filename_or_obj: Any, *, storage_options: Mapping[str, Any] | None, strict: bool,
                  variable_key: str | None, dim_names: Any, filter_by_keys: Any, verify_hash: bool,
                  drop_variables: frozenset[str]) -> tuple[dict[str, xr.Dataset], Any]:
        source = open_source(filename_or_obj, storage_options)
        try:
            fmt = sniff_format(source)
            if fmt == "tensogram" or fmt is None:
                from .assemble.tensogram import tensogram_groups
                from .formats.tensogram import open_tensogram

                f = open_tensogram(source, strict=strict)
                groups = tensogram_groups(f, variable_key=variable_key, dim_names=dim_names,
                                          filter_by_keys=filter_by_keys, verify_hash=verify_hash,
                                          drop_variables=drop_variables)
            elif fmt == "tetr":
                from .assemble.tetr import tetr_to_dataset
                from .formats.tetr import open_tetr

                f = open_tetr(source)
                groups = {"/": tetr_to_dataset(f, drop_variables=drop_variables, dim_names=dim_names)}
            else:
                from .assemble.ztensor import ztensor_to_dataset
                from .formats.ztensor import open_ztensor

                f = open_ztensor(source)
                groups = {"/": ztensor_to_dataset(f, drop_variables=drop_variables, dim_names=dim_names,
                                                  **({"verify": True} if verify_hash else {}))}
        except BaseException:
            source.close()
            raise
        return groups, f

    @staticmethod
    def _decode(ds: xr.Dataset, close: Any, *, mask_and_scale: Any, decode_times: Any, decode_timedelta: Any,
                use_cftime: Any, decode_coords: Any, drop_variables: frozenset[str]) -> xr.Dataset:
        if decode_timedelta is None and decode_times is not False:
            decode_timedelta = True  # steps are time deltas, as cfgrib users expect
        kwargs = {}
        if use_cftime is not None:
            kwargs["use_cftime"] = use_cftime
        out = xr.decode_cf(
            ds,
            mask_and_scale=True if mask_and_scale is None else mask_and_scale,
            decode_times=True if decode_times is None else decode_times,
            decode_coords=True if decode_coords is None else decode_coords,
            decode_timedelta=decode_timedelta,
            drop_variables=list(drop_variables) or None,
            **kwargs,
        )
        for name, var in out.variables.items():
            if name in ds.variables and "preferred_chunks" in ds.variables[name].encoding:
                var.encoding.setdefault("preferred_chunks", ds.variables[name].encoding["preferred_chunks"])
        out.set_close(close)
        return out

    def open_dataset(  # type: ignore[override]
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
        mask_and_scale: Any = None,
        decode_times: Any = None,
        decode_timedelta: Any = None,
        use_cftime: Any = None,
        decode_coords: Any = None,
    ) -> xr.Dataset:
        drop = _normalise_drop(drop_variables)
        groups, f = self._open_raw(filename_or_obj, storage_options=storage_options, strict=strict,
                                   variable_key=variable_key, dim_names=dim_names, filter_by_keys=filter_by_keys,
                                   verify_hash=verify_hash, drop_variables=drop)
        try:
            if group is None and len(groups) == 1:
                ds = next(iter(groups.values()))
            else:
                from .assemble.tensogram import tensogram_to_dataset  # noqa: F401  (message format)
                from .errors import GroupSelectionError

                key = None
                if group is not None:
                    for cand in (group, "/" + group.strip("/"), group.strip("/")):
                        if cand in groups:
                            key = cand
                            break
                    if key is None:
                        raise GroupSelectionError(f"{getattr(f, 'name', '')!r} has no group {group!r}; groups: {', '.join(groups)}")
                else:
                    raise GroupSelectionError(
                        f"{getattr(f, 'name', '')!r} holds objects that cannot share one Dataset; groups: "
                        f"{', '.join(groups)}. Open one with group='<name>' (or filter_by_keys={{...}}), "
                        f"or all of them with xr.open_datatree(..., engine='tensogram') / xr.open_groups"
                    )
                ds = groups[key]
            return self._decode(ds, f.close, mask_and_scale=mask_and_scale, decode_times=decode_times,
                                decode_timedelta=decode_timedelta, use_cftime=use_cftime,
                                decode_coords=decode_coords, drop_variables=drop)
        except BaseException:
            f.close()
            raise

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        variable_key: str | None = None,
        dim_names: Any = None,
        filter_by_keys: Mapping[str, Any] | None = None,
        verify_hash: bool = False,
        strict: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        mask_and_scale: Any = None,
        decode_times: Any = None,
        decode_timedelta: Any = None,
        use_cftime: Any = None,
        decode_coords: Any = None,
        **kwargs: Any,
    ) -> dict[str, xr.Dataset]:
        drop = _normalise_drop(drop_variables)
        groups, f = self._open_raw(filename_or_obj, storage_options=storage_options, strict=strict,
                                   variable_key=variable_key, dim_names=dim_names, filter_by_keys=filter_by_keys,
                                   verify_hash=verify_hash, drop_variables=drop)
        out: dict[str, xr.Dataset] = {}
        if "/" not in groups:
            root = xr.Dataset(attrs=dict(next(iter(groups.values())).attrs))
            out["/"] = root
        for name, ds in groups.items():
            key = name if name.startswith("/") else "/" + name
            out[key] = self._decode(ds, f.close, mask_and_scale=mask_and_scale, decode_times=decode_times,
                                    decode_timedelta=decode_timedelta, use_cftime=use_cftime,
                                    decode_coords=decode_coords, drop_variables=drop)
        return out

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> xr.DataTree:  # type: ignore[override]
        groups = self.open_groups_as_dict(filename_or_obj, **kwargs)
        return xr.DataTree.from_dict(groups)
