"""Dataset -> Tensogram messages: the inverse of the hypercube mapping (assemble/tensogram.py).

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
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..codecs import simple_packing, zstd
from ..codecs.bitmaps import RLE
from ..codecs.optional import available
from ..conventions import COORDINATE_ROLE_KEY, DTYPE_KEY, LAYOUT_KEY, STEP_UNITS, TGM_COORDINATE_NAMES, TIME_UNITS
from ..errors import UnsupportedError
from ..formats.tensogram import open_tensogram
from ..formats.tensogram.compression import descriptor_defaults, descriptor_key, float64_only, param_owner
from ..formats.tensogram.masks import DEFAULT_MASK_METHOD
from ..formats.tensogram.writer import (
    OBJECT_DTYPES,
    PIPELINE_PARAMS,
    PIPELINE_VALUES,
    EncodedMessage,
    ObjectInput,
    check_pipeline,
    encode_message,
    encode_message_parts,
    write_messages,
)
from ..grib import (
    GRIB_LEVEL_SOURCE,
    derived_name,
    entry_paths,
    level_keys,
    refresh_repro,
)
from .common import (
    CF_ENCODING_KEYS,
    EncodedDataset,
    as_dataset,
    check_dtypes,
    encode_dataset,
    recast_bools,
    string_payload,
    with_attr_types,
)
from .existing import check_append, check_mode
from .netcdf_layout import is_netcdf_layout, netcdf_objects

__all__ = ["TensogramAccessor", "to_tensogram"]

#: attributes written under ``cf`` for Datasets that did not record which ones were lifted
CF_ATTRS = frozenset(
    {
        "units",
        "long_name",
        "standard_name",
        "calendar",
        "axis",
        "positive",
        "valid_min",
        "valid_max",
        "valid_range",
        "comment",
        "coordinates",
        "cell_methods",
        "grid_mapping",
    }
)
#: encoding keys accepted per variable (short names map to the descriptor's prefixed names)
_ENCODING_ALIASES = {
    "bits_per_value": "sp_bits_per_value",
    "decimal_scale_factor": "sp_decimal_scale_factor",
    "reference_value": "sp_reference_value",
    "binary_scale_factor": "sp_binary_scale_factor",
    "level": "zstd_level",
    "rate": "zfp_rate",
    "precision": "zfp_precision",
    "tolerance": "zfp_tolerance",
}
#: every descriptor key a user may set: the stages, their parameters, the per-object packing values, the byte order
_DESCRIPTOR_KEYS = frozenset(
    {*PIPELINE_VALUES, *PIPELINE_PARAMS, "sp_reference_value", "sp_binary_scale_factor", "byte_order"}
)
#: the writer's mask-method options, one per kind of non-finite value
_MASK_KEYS = ("nan_mask_method", "pos_inf_mask_method", "neg_inf_mask_method")
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


def _set_path(entry: dict[str, Any], dotted: str, value: Any) -> None:
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
            hours = float(np.asarray(value).astype("m8[s]").astype(np.int64)) / 3600.0
        else:
            hours = float(value)
        return [("mars.step", int(hours) if hours.is_integer() else hours)]
    if isinstance(value, np.datetime64) or (isinstance(value, np.generic) and value.dtype.kind == "M"):
        return [(source, str(np.asarray(value).astype("M8[s]")))]
    return [(source, _py(value))]


# -- pipelines: explicit encoding= > the pipeline the variable was read with > defaults --------------
_STAGES = tuple(PIPELINE_VALUES)


def _owned(key: str, desc: Mapping[str, Any]) -> bool:
    """A parameter of a stage not in use is dropped (the codec registry says which stage owns it)."""
    owner = param_owner(key)
    return owner is None or bool(desc.get(owner[0], "none") == owner[1])


def _source_pipeline(var_encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline a variable was read with (``tensogram_compression`` ...); foreign values are ignored
    (a netCDF ``compression: gzip`` is not ours), parameters of stages not in use are dropped."""
    plain = {k: v for k, v in _user_pipeline(var_encoding)[0].items() if k in PIPELINE_PARAMS or k in _STAGES}
    desc: dict[str, Any] = {}
    for stage in _STAGES:
        value = var_encoding.get(f"tensogram_{stage}", plain.get(stage))
        if isinstance(value, str) and value in PIPELINE_VALUES[stage]:
            desc[stage] = value
    for key in PIPELINE_PARAMS:
        if key in plain and _owned(key, desc):
            desc[key] = plain[key]
    return desc


def _user_pipeline(encoding: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    desc: dict[str, Any] = {}
    for k, v in encoding.items():
        k2 = _ENCODING_ALIASES.get(k, k)
        if k2 in _DESCRIPTOR_KEYS:
            desc[k2] = v
    level = descriptor_key(zstd.CODEC, "level")
    if desc.get("compression") == zstd.CODEC.name and level in desc:
        desc[level] = int(desc[level])
    return desc, encoding.get("mask_method")


def resolve_pipeline(var_encoding: Mapping[str, Any], user: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Descriptor options for one variable: ``user`` (``encoding=``) overrides the source pipeline as a whole
    when it names a stage, else it adds parameters to it; then defaults fill what the stage needs."""
    explicit, mask_method = _user_pipeline(user)
    desc = {} if any(s in explicit for s in _STAGES) else _source_pipeline(var_encoding)
    desc.update(explicit)
    check_pipeline(desc)
    for key, value in descriptor_defaults(desc).items():
        desc.setdefault(key, value)
    return desc, mask_method


def _attrs_to_entry(attrs: Mapping[str, Any], cf_attrs: Sequence[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    lifted = set(cf_attrs) if cf_attrs is not None else CF_ATTRS
    for k, v in attrs.items():
        if k == "tensogram_missing_objects":
            continue
        key = f"cf.{k}" if k in lifted and "." not in k else k
        _set_path(entry, key, _py(v))
    return entry


_WRITER_OPTIONS = frozenset(_DESCRIPTOR_KEYS | set(_ENCODING_ALIASES) | {"mask_method"})


def _check_user_encoding(ds: xr.Dataset, encoding: Mapping[str, Mapping[str, Any]]) -> None:
    for name, enc in encoding.items():
        unknown = set(enc) - _WRITER_OPTIONS - CF_ENCODING_KEYS
        if unknown:
            raise UnsupportedError(
                f"unexpected encoding parameters for variable {name!r}: {sorted(unknown)}; accepted: "
                f"{sorted(_WRITER_OPTIONS)}"
            )
        check_pipeline(_user_pipeline(enc)[0])


# -- message dims: which keys each message carries, and the hint that restores the layout -----------
@dataclass
class _MessageDim:
    """One dim split into messages: the metadata key/value pairs of each index along it."""

    name: str
    source: str
    keys: list[list[tuple[str, Any]]]


def _mars_time_fits(name: str, values: np.ndarray) -> bool:
    """MARS date/time hold whole minutes of a ``time`` dim (the name the reader gives them)."""
    if name != "time" or values.dtype.kind != "M" or np.isnat(values).any():
        return False
    secs = values.astype("datetime64[s]")
    return bool((secs == values).all() and (secs.astype(np.int64) % 60 == 0).all())


def _mars_step_fits(name: str, values: np.ndarray) -> bool:
    if name != "step" or values.dtype.kind != "m" or np.isnat(values).any():
        return False
    secs = values.astype("timedelta64[s]")
    return bool((secs == values).all() and (secs.astype(np.int64) % 3600 == 0).all())


def _user_dim(ds: xr.Dataset, name: str) -> tuple[_MessageDim, dict[str, Any] | None]:
    """Keys for a ``message_dims=`` dim and its hint entry (values as the reader will see them, CF-encoded)."""
    coord = ds.coords[name] if name in ds.coords and ds.coords[name].dims == (name,) else None
    if coord is None:
        return _MessageDim(name, name, [[(name, i)] for i in range(ds.sizes[name])]), {
            "dims": [name],
            "match": list(range(ds.sizes[name])),
        }
    values = np.asarray(coord.values)
    attrs = dict(coord.attrs)
    if _mars_time_fits(name, values):
        source, encoded = "mars.date+mars.time", values.astype("datetime64[s]").astype(np.int64)
        attrs.update(units=TIME_UNITS, calendar="proleptic_gregorian")
    elif _mars_step_fits(name, values):
        source, encoded = "mars.step", values.astype("timedelta64[h]").astype(np.int64)
        attrs["units"] = STEP_UNITS
    else:
        source = name
        var = (
            xr.conventions.encode_cf_variable(coord.variable, name=name)
            if values.dtype.kind in "Mm"
            else coord.variable
        )
        encoded, attrs = np.asarray(var.values), dict(var.attrs)
    keys = [_key_value(source, values[i]) if source != name else [(name, _py(encoded[i]))] for i in range(len(values))]
    hint = {
        "dims": [name],
        "values": _py(encoded),
        "dtype": encoded.dtype.str,
        "attrs": _py_attrs(attrs),
        "match": _py(encoded),
    }
    return _MessageDim(name, source, keys), hint


def _py_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): _py(v) for k, v in attrs.items()}


def _aux_hint(ds: xr.Dataset, name: Any) -> dict[str, Any]:
    """A non-index coordinate along message dims: stored whole in the hint (CF-encoded like to_netcdf)."""
    coord = ds.coords[name]
    var = xr.conventions.encode_cf_variable(coord.variable, name=name) if coord.dtype.kind in "Mm" else coord.variable
    values = np.asarray(var.values)
    return {
        "dims": [str(d) for d in var.dims],
        "values": _py(values),
        "dtype": values.dtype.str,
        "attrs": _py_attrs(var.attrs),
    }


def _plan_dims(ds: xr.Dataset, message_dims: Sequence[str] | None) -> tuple[list[_MessageDim], dict[str, Any] | None]:
    """Dims recorded as message keys on read come first; ``message_dims=`` adds more.

    Returns the dims and the layout hint (None when no ``message_dims=`` dim was split)."""
    dims: list[_MessageDim] = []
    for var in ds.data_vars.values():
        for d, src in (var.encoding.get("tensogram_message_keys") or {}).items():
            if d in var.dims and d not in [m.name for m in dims]:
                values = ds[d].values if d in ds.coords else np.arange(ds.sizes[d])
                dims.append(_MessageDim(d, src, [_key_value(src, v) for v in values]))
    hint_coords: dict[str, Any] = {}
    for d in message_dims or ():
        if d not in ds.dims:
            raise ValueError(f"message_dims: {d!r} is not a dimension of the Dataset; dimensions: {list(ds.dims)}")
        if d in [m.name for m in dims]:
            continue
        mdim, hint = _user_dim(ds, d)
        dims.append(mdim)
        if hint is not None:
            hint_coords[d] = hint
    if not any(m.source == m.name or m.name in hint_coords for m in dims):
        return dims, None
    split = {m.name for m in dims}
    for c in ds.coords:
        if c not in hint_coords and c not in ds.dims and any(d in split for d in ds.coords[c].dims):
            hint_coords[str(c)] = _aux_hint(ds, c)
    hint = {
        "dims": {str(n): [str(d) for d in v.dims] for n, v in ds.data_vars.items()},
        "coords": hint_coords,
        "coord_names": [str(c) for c in ds.coords],
    }
    return dims, hint


# -- objects ------------------------------------------------------------------------------------------
def _object_values(values: np.ndarray, desc: Mapping[str, Any], entry: dict[str, Any]) -> np.ndarray:
    """Values as the pipeline takes them: booleans as uint8 (CF ``dtype: bool``, which xarray decodes back),
    anything else float64 for simple_packing and zfp (the original dtype recorded under ``xarray_dtype``)."""
    if values.dtype.kind == "b":
        entry["dtype"] = "bool"
        values = values.astype(np.uint8)
    if float64_only(desc) and values.dtype != np.float64:
        entry[DTYPE_KEY] = values.dtype.name
        values = values.astype(np.float64)
    return values


def _data_object(
    ds: xr.Dataset,
    name: Any,
    var: xr.DataArray,
    sel: Mapping[str, int],
    mdims: Sequence[_MessageDim],
    user: Mapping[str, Any],
    default_mask: str,
    skip_coords: set[Hashable],
    cf: xr.Variable,
) -> tuple[dict[str, Any], ObjectInput] | None:
    """The base entry and object of one variable in the message at ``sel`` (values and attrs from ``cf``,
    the variable as xarray's CF encoder wrote it); None for a hole."""
    var_mdims = [m for m in mdims if m.name in var.dims]
    where = {m.name: sel[m.name] for m in var_mdims}
    desc, var_mask = resolve_pipeline(var.encoding, user)
    if var.attrs.get("tensogram_missing_objects"):
        hole = np.asarray(var.isel(where).values)
        if hole.dtype.kind == "f" and np.isnan(hole).all():
            return None  # a hole in the original hypercube stays a hole
    if var.dtype.kind in "OUST":
        return None  # kept in metadata (_string_coords)
    values = np.asarray(cf.isel(where).values)
    if values.dtype.kind in "OUSTMm" or values.dtype.kind == "c":
        raise UnsupportedError(
            f"variable {name!r}: dtype {values.dtype} cannot be stored as a .tgm object; supported dtypes: "
            "float16/32/64, bfloat16, (u)int8..64, bool (strings only as coordinates, kept in metadata)"
        )
    typed = with_attr_types(cf, python_too=False)
    attrs = {k: v for k, v in typed.attrs.items() if k != "coordinates"}  # written below, once
    table = var.encoding.get("tensogram_table_attrs") or {}
    if table:  # units/long_name/standard_name the reader took from the parameter table: not the file's own
        attrs = {k: v for k, v in attrs.items() if not (k in table and table[k] == v)}
    is_grib = "tensogram_attr_paths" in var.encoding or any(str(k).startswith("GRIB_") for k in attrs)
    if is_grib:  # GRIB hook: GRIB_*/units/long_name back to grib_repro.* (and grib.*)
        attrs = entry_paths(attrs, var.encoding.get("tensogram_attr_paths"))
    entry = _attrs_to_entry(attrs, var.encoding.get("tensogram_cf_attrs"))
    values = _object_values(values, desc, entry)
    _packing_params_from_finite(values, desc)
    for m in var_mdims:
        i = sel[m.name]
        pairs = (
            level_keys(
                ds[m.name].values[i] if m.name in ds.coords else i, bool(var.encoding.get("tensogram_grib_levelist"))
            )
            if m.source == GRIB_LEVEL_SOURCE
            else m.keys[i]
        )
        for key, value in pairs:
            _set_path(entry, key, value)
    for cname, src in (var.encoding.get("tensogram_scalar_keys") or {}).items():
        if cname in ds.coords and ds[cname].ndim == 0:
            for key, value in _key_value(src, ds[cname].values[()]):
                _set_path(entry, key, value)
    if is_grib:
        refresh_repro(entry)
    if not is_grib or derived_name(entry) != name:  # a GRIB name follows from the short name
        _set_path(entry, var.encoding.get("tensogram_name_key") or "name", name)
    split = {m.name for m in mdims}
    entry["dim_names"] = [d for d in var.dims if d not in {m.name for m in var_mdims}]
    if str(name).lower() in TGM_COORDINATE_NAMES:  # the reader would take it for a coordinate
        entry[COORDINATE_ROLE_KEY] = "data"
    listed = str(cf.attrs.get("coordinates", "")).split()  # as xarray's encoder wrote it (or encoding= said)
    aux = [c for c in listed if c not in skip_coords and c in ds.variables and not any(d in split for d in ds[c].dims)]
    if aux:
        _set_path(entry, "cf.coordinates", " ".join(str(c) for c in aux))
    desc["shape"] = list(values.shape)
    desc["_mask_method"] = var_mask or default_mask  # consumed by the writer, per object
    return entry, ObjectInput(values, desc)


def _packing_params_from_finite(values: np.ndarray, desc: dict[str, Any]) -> None:
    """simple_packing of values with NaN/Inf: the reference encoder needs the packing parameters then, so they
    are computed from the finite values (the non-finite positions go to the object's bitmask)."""
    if desc.get("encoding") != "simple_packing" or "sp_reference_value" in desc or values.dtype.kind != "f":
        return
    finite = values[np.isfinite(values)]
    if finite.size == values.size:
        return
    bits, scale = int(desc.get("sp_bits_per_value", 16)), int(desc.get("sp_decimal_scale_factor", 0))
    reference, binary_scale = simple_packing.compute_params(finite if finite.size else np.zeros(1), bits, scale)
    desc["sp_reference_value"], desc["sp_binary_scale_factor"] = float(reference), int(binary_scale)


def _coordinate_objects(
    ds: xr.Dataset, split: set[str], skip_coords: set[Hashable], cf: Mapping[str, xr.Variable]
) -> Iterator[tuple[dict[str, Any], ObjectInput]]:
    """Coordinates not along message dims, written once (in the first message) as objects, CF-encoded
    (``cf``) as to_netcdf encodes them."""
    for cname, coord in ds.coords.items():
        if cname in skip_coords or any(d in split for d in coord.dims):
            continue
        encoded = with_attr_types(cf.get(str(cname), coord.variable), python_too=False)
        values = np.asarray(encoded.values)
        if values.dtype.kind in "OUST":
            continue  # string labels have no object form: they go into the layout hint (_string_coords)
        cf_attrs = list(coord.encoding.get("tensogram_cf_attrs") or CF_ATTRS)
        entry = _attrs_to_entry(encoded.attrs, [*cf_attrs, "units", "calendar"])
        values = _object_values(values, {}, entry)
        entry["name"] = cname
        if list(coord.dims) != [cname] or not any(cname in v.dims for v in ds.data_vars.values()):
            entry["dim_names"] = [str(d) for d in coord.dims]  # else the reader matches it by name
        yield entry, ObjectInput(values, {"shape": list(values.shape)})


def _string_coords(ds: xr.Dataset, skip_coords: set[Hashable]) -> dict[str, Any]:
    """String variables (no object form in Tensogram) kept in metadata, in the layout hint."""
    out = {}
    for cname, coord in ds.variables.items():
        if cname in skip_coords or coord.dtype.kind not in "OUST":
            continue
        payload = string_payload(str(cname), coord)
        if np.dtype(payload["dtype"]).kind == "S" and not all(v.isascii() for v in payload["values"]):
            raise UnsupportedError(
                f"variable {cname!r}: dtype {coord.dtype} (bytes beyond ASCII) cannot be stored in a .tgm file, "
                "which keeps strings in metadata as text; decode it to str first"
            )
        out[str(cname)] = {
            "dims": payload["dims"],
            "values": np.asarray(payload["values"], dtype=str).reshape(payload["shape"]).tolist(),
            "dtype": payload["dtype"],
            "attrs": _py_attrs(coord.attrs),
        }
        if cname not in ds.coords:
            out[str(cname)]["role"] = "data"
    return out


def _iter_messages(
    ds: xr.Dataset,
    *,
    message_dims: Sequence[str] | None,
    encoding: Mapping[str, Mapping[str, Any]],
    hash: str | None,
    layout: str,
    reserved: Mapping[str, Any] | None,
    mask_method: str | None,
    cf: EncodedDataset,
) -> Iterator[bytes | EncodedMessage]:
    """One message per combination of the message dims' indices, encoded only when the writer asks for it
    (so a Dask-backed Dataset is computed one message at a time)."""
    mdims, hint = _plan_dims(ds, message_dims)
    default_mask = _default_mask(mask_method)
    scalar_keys: dict[str, str] = {}
    for var in ds.data_vars.values():
        scalar_keys.update(var.encoding.get("tensogram_scalar_keys") or {})
    # coordinates computed from metadata (GRIB grids and levels) are not objects of their own
    derived = {c for c in ds.coords if ds[c].encoding.get("tensogram_derived")}
    # valid_time is rebuilt by the reader from MARS time and step keys; without them it is written like any other
    mars = {m.source for m in mdims} | set(scalar_keys.values())
    rebuilt = {"valid_time"} if {"mars.step", "mars.date+mars.time"} & mars else set()
    skip_coords = {m.name for m in mdims} | rebuilt | set(scalar_keys) | derived
    extra: dict[str, Any] = {}
    for k, v in ds.attrs.items():
        if k != "tensogram_wire_version":
            _set_path(extra, k, _py(v))
    global_coords = [c for c in cf.coordinate_only if c not in skip_coords and c in ds.coords]
    if global_coords:  # coordinates no data variable names: the CF global attribute, as to_netcdf writes it
        extra["coordinates"] = " ".join(global_coords)
    strings = _string_coords(ds, skip_coords)
    if strings:
        hint = hint or {}
        hint["coords"] = {**strings, **(hint.get("coords") or {})}
    if hint is not None:
        extra[LAYOUT_KEY] = hint
    mask_kw: dict[str, Any] = {
        "allow_nan": True,
        "allow_inf": True,
        "nan_mask_method": default_mask,
        "pos_inf_mask_method": default_mask,
        "neg_inf_mask_method": default_mask,
    }
    first = True
    wrote_any = False
    ranges = [range(ds.sizes[m.name]) for m in mdims]
    last_combo = tuple(r[-1] for r in ranges) if all(len(r) for r in ranges) else None
    for combo in itertools.product(*ranges) if mdims else [()]:
        sel = {m.name: i for m, i in zip(mdims, combo, strict=True)}
        pairs = []
        for name, var in ds.data_vars.items():
            if any(sel[m.name] != 0 for m in mdims if m.name not in var.dims):
                continue
            made = _data_object(
                ds,
                name,
                var,
                sel,
                mdims,
                encoding.get(str(name), {}),
                default_mask,
                skip_coords,
                cf.variables[str(name)],
            )
            if made is not None:
                pairs.append(made)
        if first:
            pairs.extend(_coordinate_objects(ds, {m.name for m in mdims}, skip_coords, cf.variables))
            first = False
        if not pairs:
            if not wrote_any and combo == last_combo:
                # a Dataset without variables: one message without objects keeps its attributes
                yield encode_message({"_extra_": extra}, [], hash=hash, layout=layout, reserved=reserved)
            continue
        wrote_any = True
        yield encode_message_parts(
            {"base": [p[0] for p in pairs], "_extra_": extra},
            [p[1] for p in pairs],
            hash=hash,
            layout=layout,
            reserved=reserved,
            **mask_kw,
        )


def _default_mask(mask_method: str | None) -> str:
    """How NaN/Inf positions are stored when the caller does not say: roaring bitmaps when pyroaring is there."""
    return mask_method or (DEFAULT_MASK_METHOD if available("pyroaring") else RLE.name)


def _netcdf_message(
    ds: xr.Dataset,
    encoding: Mapping[str, Mapping[str, Any]],
    mask_kw: Mapping[str, Any],
    **kw: Any,
) -> Iterator[bytes | EncodedMessage]:
    """A Dataset read from a netCDF conversion: one message in the converter's layout (its file split)."""
    base, objects = [], []
    for o in netcdf_objects(ds, _py):
        desc, var_mask = resolve_pipeline(o.encoding, encoding.get(o.name, {}))
        values = _object_values(o.values, desc, o.entry)
        desc["shape"] = list(values.shape)
        desc["_mask_method"] = var_mask or mask_kw["nan_mask_method"]
        base.append(o.entry)
        objects.append(ObjectInput(values, desc))
    yield encode_message_parts({"base": base}, objects, **kw, **mask_kw)


def to_tensogram(
    ds: xr.Dataset | xr.DataArray,
    path: str | os.PathLike[str],
    *,
    mode: str = "w",
    message_dims: Sequence[str] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    hash: str | None = "xxh3",
    layout: str = "buffered",
    reserved: Mapping[str, Any] | None = None,
    mask_method: str | None = None,
) -> int:
    """Write a Dataset as Tensogram v3 messages.

    The mapping of the reader is inverted: dimensions built from metadata keys split the data into
    one message per combination, with one object per variable; the other coordinates are written as
    coordinate objects in the first message.

    Parameters
    ----------
    ds
        The Dataset to write (a DataArray is written as a Dataset of one variable).
    path
        The target file. It is written to a temporary file next to it and renamed, so a failed write
        never leaves a half-written file; it gets the permissions ``open(path, "w")`` would give.
    mode
        ``"w"`` (replace) or ``"a"`` (append messages without rewriting the file).
    message_dims
        For a Dataset that did not come from a ``.tgm`` file: the dimensions that split messages.
    encoding
        ``{variable: {...}}`` pipelines: ``encoding`` (``none``, ``simple_packing`` with
        ``bits_per_value``), ``filter`` (``shuffle``), ``compression`` (``zstd`` with ``level``, ``lz4``,
        ``szip``, ``blosc2``, ``zfp``) and their parameters. By default each variable's own
        ``.encoding`` (the pipeline it was read with).
    hash
        ``"xxh3"`` or ``None``.
    layout
        ``"buffered"`` or ``"streaming"``.
    reserved
        Fixed provenance stamps (``{"time": ..., "uuid": ...}``), so equal inputs give equal bytes.
    mask_method
        How NaN/Inf positions are stored (``roaring``, ``rle``, ``none``, ``zstd``, ``lz4``, ``blosc2``).

    Returns
    -------
    int
        The number of bytes written.

    Raises
    ------
    UnsupportedError
        An unknown pipeline value (the message lists the valid ones) or an unsupported dtype.
    NoSuchDirectoryError
        The target's directory does not exist.

    Examples
    --------
    >>> xt.to_tensogram(ds, "out.tgm", encoding={"t": {"compression": "zstd"}})  # doctest: +SKIP
    """
    ds = as_dataset(ds)
    check_mode(mode)
    cf = encode_dataset(ds, encoding, _WRITER_OPTIONS, default_fill=False)  # names, MultiIndex, CF, as to_netcdf
    if mode == "a" and os.path.exists(path):
        split = set(message_dims or ()) | {
            str(d) for v in ds.data_vars.values() for d in (v.encoding.get("tensogram_message_keys") or {})
        }
        _check_append(path, cf, split)
    recast_bools(cf, "u1")  # CF booleans: uint8 objects with ``dtype: bool``, as the reader decodes them
    check_dtypes(
        cf,
        ".tgm",
        lambda dt: dt.kind in "OUST" or dt.name in OBJECT_DTYPES,
        [*OBJECT_DTYPES, "strings (in metadata)"],
    )
    _check_user_encoding(ds, encoding or {})
    if message_dims is None and is_netcdf_layout(ds):  # read from a netCDF conversion: keep its layout
        mask_kw = {"allow_nan": True, "allow_inf": True, **dict.fromkeys(_MASK_KEYS, _default_mask(mask_method))}
        netcdf = _netcdf_message(ds, encoding or {}, mask_kw, hash=hash, layout=layout, reserved=reserved)
        return write_messages(path, netcdf, mode=mode)
    messages = _iter_messages(
        ds,
        message_dims=message_dims,
        encoding=encoding or {},
        hash=hash,
        layout=layout,
        reserved=reserved,
        mask_method=mask_method,
        cf=cf,
    )
    return write_messages(path, messages, mode=mode)


def _check_append(path: str | os.PathLike[str], cf: EncodedDataset, split: set[str]) -> None:
    """Appended messages fit the file's: dims other than message dims (``split``) keep their sizes (objects
    sized by ``dim_names`` and their shapes)."""
    sizes: dict[str, int] = {}
    with open_tensogram(path) as tf:
        for msg in tf.messages:
            for j, entry in enumerate(msg.base):
                dims = entry.get("dim_names")
                if isinstance(dims, list) and j < len(msg):
                    shape = msg.object_geometry(j)[0]
                    sizes.update(zip(map(str, dims), shape[len(shape) - len(dims) :], strict=False))
    # Tensogram appends messages: a variable the file has gains objects (and the reader a message dim, or the
    # values of a message dim); only sizes that cannot stack are refused here
    inner = {n: v.isel({d: 0 for d in v.dims if d in split}) for n, v in cf.variables.items()}
    check_append(os.fspath(path), (), sizes, inner)


@xr.register_dataset_accessor("tensogram")  # type: ignore[no-untyped-call]  # unannotated in xarray
class TensogramAccessor:
    """``ds.tensogram.to_tgm(path, ...)``: the same as :func:`to_tensogram`."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_tgm(self, path: str | os.PathLike[str], **kwargs: Any) -> int:
        return to_tensogram(self._ds, path, **kwargs)
