"""Dataset -> Tensogram messages: the inverse of the hypercube mapping.

Dims that the backend built from metadata keys (recorded in each variable's
``encoding["tensogram_message_keys"]``, e.g. ``step`` from ``mars.step``) split
the data into one message per combination of their values; ``message_dims=``
adds more for Datasets that did not come from a ``.tgm`` file. Each message has
one object per variable, whose base entry carries the key values at their
dotted paths, ``dim_names``, the lifted CF attributes back under ``cf`` and the
other attributes. Per-variable pipelines come from xarray's usual ``encoding=``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import xarray as xr

from ..codecs.registry import available
from ..formats.tensogram.writer import ObjectInput, encode_message, write_messages
from . import grib

__all__ = ["to_tensogram", "TensogramAccessor"]

#: attributes written under ``cf`` for Datasets that did not record which ones were lifted
CF_ATTRS = frozenset({"units", "long_name", "standard_name", "calendar", "axis", "positive", "valid_min",
                      "valid_max", "valid_range", "comment", "coordinates", "cell_methods", "grid_mapping"})
#: encoding keys accepted per variable (short names map to the descriptor's prefixed names)
_ENCODING_ALIASES = {
    "bits_per_value": "sp_bits_per_value", "decimal_scale_factor": "sp_decimal_scale_factor",
    "reference_value": "sp_reference_value", "binary_scale_factor": "sp_binary_scale_factor",
    "level": "zstd_level", "rate": "zfp_rate", "precision": "zfp_precision", "tolerance": "zfp_tolerance",
}
_DESCRIPTOR_KEYS = frozenset({
    "encoding", "filter", "compression", "sp_bits_per_value", "sp_decimal_scale_factor", "sp_reference_value",
    "sp_binary_scale_factor", "shuffle_element_size", "zstd_level", "szip_rsi", "szip_block_size", "szip_flags",
    "blosc2_codec", "blosc2_clevel", "zfp_mode", "zfp_rate", "zfp_precision", "zfp_tolerance", "byte_order",
})
_EPOCH = np.datetime64("1970-01-01T00:00:00", "s")


def _py(value: Any) -> Any:
    """numpy scalars/arrays -> plain Python values CBOR can hold."""
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()] if value.ndim else _py(value.item())
    if isinstance(value, np.generic):
        return _py(value.item())
    if isinstance(value, (list, tuple)):
        return [_py(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


def _set_path(entry: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = entry
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value


def _datetime_to_mars(value: Any) -> tuple[int, int]:
    ts = np.datetime64(value, "s")
    d = ts.astype("datetime64[D]")
    seconds = int((ts - d).astype(np.int64))
    ymd = str(d).replace("-", "")
    return int(ymd), (seconds // 3600) * 100 + (seconds % 3600) // 60


def _key_value(source: str, value: Any) -> list[tuple[str, Any]]:
    """(dotted key, value) pairs that a coordinate value stands for."""
    if source == "mars.date+mars.time":
        date, time = _datetime_to_mars(value)
        return [("mars.date", date), ("mars.time", time)]
    if source == "mars.step":
        if isinstance(value, (np.timedelta64,)) or (isinstance(value, np.generic) and value.dtype.kind == "m"):
            hours = float(np.timedelta64(value, "s").astype(np.int64)) / 3600.0
        else:
            hours = float(value)
        return [("mars.step", int(hours) if hours.is_integer() else hours)]
    if isinstance(value, np.datetime64) or (isinstance(value, np.generic) and value.dtype.kind == "M"):
        return [(source, str(np.datetime64(value, "s")))]
    return [(source, _py(value))]


def _descriptor_options(encoding: Mapping[str, Any]) -> tuple[dict, str | None]:
    desc: dict[str, Any] = {}
    mask_method = None
    for k, v in encoding.items():
        k2 = _ENCODING_ALIASES.get(k, k)
        if k2 in _DESCRIPTOR_KEYS:
            desc[k2] = v
        elif k == "mask_method":
            mask_method = v
    if desc.get("compression") == "zstd" and "level" in encoding:
        desc["zstd_level"] = int(encoding["level"])
    return desc, mask_method


def _attrs_to_entry(attrs: Mapping[str, Any], cf_attrs: Sequence[str] | None) -> dict:
    entry: dict[str, Any] = {}
    lifted = set(cf_attrs) if cf_attrs is not None else CF_ATTRS
    for k, v in attrs.items():
        if k == "tensogram_missing_objects":
            continue
        key = f"cf.{k}" if k in lifted and "." not in k else k
        _set_path(entry, key, _py(v))
    return entry


def _message_dims(ds: xr.Dataset, message_dims: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    dims: list[str] = []
    sources: dict[str, str] = {}
    for var in ds.data_vars.values():
        for d, src in (var.encoding.get("tensogram_message_keys") or {}).items():
            if d in var.dims and d not in dims:
                dims.append(d)
                sources[d] = src
    for d in message_dims or ():
        if d not in ds.dims:
            raise ValueError(f"message_dims: {d!r} is not a dimension of the Dataset")
        if d not in dims:
            dims.append(d)
            sources[d] = d
    return dims, sources


_WRITER_OPTIONS = frozenset(_DESCRIPTOR_KEYS | set(_ENCODING_ALIASES) | {"mask_method"})


def _check_user_encoding(ds: xr.Dataset, encoding: Mapping[str, Mapping[str, Any]]) -> None:
    for name, enc in encoding.items():
        if name not in ds.variables:
            raise ValueError(f"encoding given for {name!r}, which is not a variable of the Dataset")
        unknown = set(enc) - _WRITER_OPTIONS
        if unknown:
            raise ValueError(f"unknown encoding keys for {name!r}: {sorted(unknown)}; valid keys: {sorted(_WRITER_OPTIONS)}")


def _iter_messages(ds: xr.Dataset, *, message_dims: Sequence[str] | None, encoding: Mapping[str, Mapping[str, Any]],
                   hash: str | None, layout: str, reserved: Mapping[str, Any] | None,
                   mask_method: str | None) -> Iterator[bytes]:
    mdims, sources = _message_dims(ds, message_dims)
    default_mask = mask_method or ("roaring" if available("pyroaring") else "rle")
    # coordinates computed from metadata (GRIB grids and levels) are not objects of their own
    skip_coords = set(mdims) | {"valid_time"} | {c for c in ds.coords if ds[c].encoding.get("tensogram_derived")}
    scalar_keys: dict[str, str] = {}
    for var in ds.data_vars.values():
        scalar_keys.update(var.encoding.get("tensogram_scalar_keys") or {})
    skip_coords |= set(scalar_keys)
    extra = {}
    for k, v in ds.attrs.items():
        if k != "tensogram_wire_version":
            _set_path(extra, k, _py(v))
    ranges = [range(ds.sizes[d]) for d in mdims]
    first = True
    wrote_any = False
    last_combo = tuple(r[-1] for r in ranges) if all(len(r) for r in ranges) else None
    for combo in itertools.product(*ranges) if mdims else [()]:
        sel = dict(zip(mdims, combo))
        base: list[dict] = []
        objects: list[ObjectInput] = []
        for name, var in ds.data_vars.items():
            var_mdims = [d for d in mdims if d in var.dims]
            if any(sel[d] != 0 for d in mdims if d not in var.dims):
                continue
            sub = var.isel({d: sel[d] for d in var_mdims})
            enc = dict(var.encoding)
            enc.update(encoding.get(name, {}))
            desc, var_mask = _descriptor_options(enc)
            values = np.asarray(sub.values)
            if var.attrs.get("tensogram_missing_objects") and values.dtype.kind == "f" and np.isnan(values).all():
                continue  # a hole in the original hypercube stays a hole
            needs_f64 = desc.get("encoding") == "simple_packing" or desc.get("compression") in ("zfp", "sz3")
            if needs_f64 and values.dtype != np.float64:
                values = values.astype(np.float64)  # these stages work on float64 only
            attrs = var.attrs
            is_grib = "tensogram_attr_paths" in var.encoding or any(k.startswith("GRIB_") for k in attrs)
            if is_grib:  # GRIB hook: GRIB_*/units/long_name back to grib_repro.* (and grib.*)
                attrs = grib.entry_paths(attrs, var.encoding.get("tensogram_attr_paths"))
            entry = _attrs_to_entry(attrs, var.encoding.get("tensogram_cf_attrs"))
            for d in var_mdims:
                value = ds[d].values[sel[d]] if d in ds.coords else sel[d]
                pairs = (grib.level_keys(value, bool(var.encoding.get("tensogram_grib_levelist")))
                         if sources[d] == grib.GRIB_LEVEL_SOURCE else _key_value(sources[d], value))
                for key, value in pairs:
                    _set_path(entry, key, value)
            for cname, src in (var.encoding.get("tensogram_scalar_keys") or {}).items():
                if cname in ds.coords and ds[cname].ndim == 0:
                    for key, value in _key_value(src, ds[cname].values[()]):
                        _set_path(entry, key, value)
            if is_grib:
                grib.refresh_repro(entry)
            if not is_grib or grib.derived_name(entry) != name:  # a GRIB name follows from the short name
                _set_path(entry, var.encoding.get("tensogram_name_key") or "name", name)
            entry["dim_names"] = [d for d in var.dims if d not in var_mdims]
            aux = [c for c in ds.coords if c not in skip_coords and c not in ds.dims
                   and set(ds[c].dims) <= set(var.dims) and not any(d in mdims for d in ds[c].dims)]
            if aux:
                _set_path(entry, "cf.coordinates", " ".join(aux))
            base.append(entry)
            desc["shape"] = list(values.shape)
            desc["_mask_method"] = var_mask or default_mask  # consumed by the writer, per object
            objects.append(ObjectInput(values, desc))
        if first:
            for cname, coord in ds.coords.items():
                if cname in skip_coords or any(d in mdims for d in coord.dims):
                    continue
                # times and time deltas are CF-encoded (numbers + units) as to_netcdf does
                encoded = (xr.conventions.encode_cf_variable(coord.variable, name=cname)
                           if coord.dtype.kind in "Mm" else coord.variable)
                values = np.asarray(encoded.values)
                if values.dtype.kind in "OUS":
                    continue  # string labels have no object form
                cf_attrs = list(coord.encoding.get("tensogram_cf_attrs") or CF_ATTRS)
                entry = _attrs_to_entry(encoded.attrs, cf_attrs + ["units", "calendar"])
                entry["name"] = cname
                if list(coord.dims) != [cname]:
                    entry["dim_names"] = list(coord.dims)
                base.append(entry)
                objects.append(ObjectInput(values, {"shape": list(values.shape)}))
            first = False
        if not objects:
            if not wrote_any and combo == last_combo:
                # a Dataset without variables: one message without objects keeps its attributes
                yield encode_message({"_extra_": extra}, [], hash=hash, layout=layout, reserved=reserved)
            continue
        wrote_any = True
        yield encode_message({"base": base, "_extra_": extra}, objects, hash=hash, layout=layout, reserved=reserved,
                             allow_nan=True, allow_inf=True, nan_mask_method=default_mask,
                             pos_inf_mask_method=default_mask, neg_inf_mask_method=default_mask)


def to_tensogram(ds: xr.Dataset | xr.DataArray, path: str | os.PathLike, *, mode: str = "w",
                 message_dims: Sequence[str] | None = None, encoding: Mapping[str, Mapping[str, Any]] | None = None,
                 hash: str | None = "xxh3", layout: str = "buffered", reserved: Mapping[str, Any] | None = None,
                 mask_method: str | None = None) -> int:
    """Write a Dataset as Tensogram messages (the inverse of the backend's hypercube mapping).

    Dimensions that the backend built from metadata keys (or ``message_dims``) split the data
    into one message per combination, with one object per variable. The file is never left
    half-written: ``mode="w"`` writes a temporary file and renames it, ``mode="a"`` truncates
    back to the old size on failure.

    Parameters
    ----------
    ds : xarray.Dataset or xarray.DataArray
        What to write; a DataArray is written as a one-variable Dataset.
    path : str or os.PathLike
        The output file.
    mode : {"w", "a"}, default "w"
        ``"a"`` appends messages to an existing file without rewriting it.
    message_dims : sequence of str, optional
        For Datasets that did not come from a ``.tgm`` file: the leading dimensions that split
        messages. Default: the dimensions recorded in the variables' ``encoding``, else none.
    encoding : mapping, optional
        Per-variable pipeline, e.g. ``{"t": {"compression": "zstd", "level": 5}}``,
        ``{"encoding": "simple_packing", "bits_per_value": 16}``, ``{"filter": "shuffle"}``,
        ``{"compression": "szip", "szip_rsi": 32, "szip_block_size": 16, "szip_flags": 8}``.
        Merged over each variable's own ``encoding``.
    hash : {"xxh3", None}, default "xxh3"
        Per-object integrity hash.
    layout : {"buffered", "streaming"}, default "buffered"
        ``"streaming"`` writes footer-indexed messages.
    reserved : mapping, optional
        Provenance stamps (``{"time": ..., "uuid": ..., "encoder": ...}``); fixing them makes
        equal inputs give equal bytes.
    mask_method : str, optional
        How NaN/Inf positions are stored (``"roaring"`` by default, ``"rle"``, ``"none"``,
        ``"zstd"``, ``"lz4"``, ``"blosc2"``).

    Returns
    -------
    int
        The number of bytes written.

    Raises
    ------
    ValueError
        For an encoding the format cannot store (e.g. an unknown variable in ``encoding``).

    Examples
    --------
    >>> import xarray as xr
    >>> import xarray_tensogram as xt
    >>> ds = xr.open_dataset(xt.sample_path("forecast.tgm"), engine="tensogram")
    >>> n = xt.to_tensogram(ds, "copy.tgm", encoding={"msl": {"compression": "zstd"}})  # doctest: +SKIP
    """
    if isinstance(ds, xr.DataArray):
        ds = ds.to_dataset(name=ds.name or "data")
    _check_user_encoding(ds, encoding or {})
    messages = _iter_messages(ds, message_dims=message_dims, encoding=encoding or {}, hash=hash, layout=layout,
                              reserved=reserved, mask_method=mask_method)
    return write_messages(path, messages, mode=mode)


@xr.register_dataset_accessor("tensogram")
class TensogramAccessor:
    """``ds.tensogram.to_tgm(path, ...)``: the same as :func:`to_tensogram`."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_tgm(self, path: str | os.PathLike, **kwargs: Any) -> int:
        return to_tensogram(self._ds, path, **kwargs)
