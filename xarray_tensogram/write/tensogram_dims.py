"""Which dims of a Dataset split ``.tgm`` messages, and the metadata keys each message carries.

Dims the reader built from metadata keys (each variable's :class:`~xarray_tensogram.layout_record.LayoutRecord`,
e.g. ``step`` from ``mars.step``) come first; ``message_dims=`` adds more, with a layout hint (in ``_extra_``)
that lets the reader restore the Dataset as written. Values become keys as the reader reads them back (MARS
date/time and step where they fit, CF-encoded values otherwise).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from xarray.core.common import contains_cftime_datetimes

from ..conventions import STEP_UNITS, TIME_UNITS
from ..layout_record import LayoutRecord
from ..producers import SOURCE_OWNERS

__all__ = [
    "MessageDim",
    "message_combos",
    "message_keys",
    "not_objects",
    "plan_dims",
    "py_attrs",
    "py_value",
    "set_path",
]


def py_value(value: Any) -> Any:
    """numpy scalars/arrays -> plain Python values CBOR can hold."""
    if isinstance(value, np.ndarray):
        return [py_value(v) for v in value.tolist()] if value.ndim else py_value(value.item())
    if isinstance(value, np.generic):
        return py_value(value.item())
    if isinstance(value, (list, tuple)):
        return [py_value(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


def set_path(entry: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        if not isinstance(entry.get(p), dict):
            entry[p] = {}
        entry = entry[p]
    entry[last] = value


def key_value(source: str, value: Any) -> list[tuple[str, Any]]:
    """(dotted key, value) pairs that a coordinate value stands for."""
    if source == "mars.date+mars.time":
        ts = np.datetime64(value, "s")
        day = ts.astype("datetime64[D]")
        hh, mm = divmod(int((ts - day).astype(np.int64)) // 60, 60)
        return [("mars.date", int(str(day).replace("-", ""))), ("mars.time", hh * 100 + mm)]
    if source == "mars.step":
        delta = isinstance(value, np.generic) and value.dtype.kind == "m"
        hours = float(np.asarray(value).astype("m8[s]").astype(np.int64)) / 3600.0 if delta else float(value)
        return [("mars.step", int(hours) if hours.is_integer() else hours)]
    if isinstance(value, np.generic) and value.dtype.kind == "M":
        return [(source, str(np.asarray(value).astype("M8[s]")))]
    return [(source, py_value(value))]


@dataclass
class MessageDim:
    """One dim split into messages: the metadata key/value pairs of each index along it."""

    name: str
    source: str
    keys: list[list[tuple[str, Any]]]


def _whole(values: np.ndarray, kind: str, unit: int) -> bool:
    """Datetimes (``M``) or deltas (``m``) without NaT, all whole ``unit`` seconds: as MARS date/time and step hold."""
    if values.dtype.kind != kind or np.isnat(values).any():
        return False
    secs = values.astype("datetime64[s]" if kind == "M" else "timedelta64[s]")
    return bool((secs == values).all() and (secs.astype(np.int64) % unit == 0).all())


def _user_dim(ds: xr.Dataset, name: str) -> tuple[MessageDim, dict[str, Any]]:
    """Keys for a ``message_dims=`` dim and its hint entry (values as the reader will see them, CF-encoded)."""
    coord = ds.coords[name] if name in ds.coords and ds.coords[name].dims == (name,) else None
    if coord is None:
        n = ds.sizes[name]
        return MessageDim(name, name, [[(name, i)] for i in range(n)]), {"dims": [name], "match": list(range(n))}
    values, attrs = np.asarray(coord.values), dict(coord.attrs)
    if name == "time" and _whole(values, "M", 60):  # the names the reader gives MARS date/time and step
        source = "mars.date+mars.time"
        hint = _hint([name], values.astype("datetime64[s]").astype(np.int64), {**attrs, **_MARS_TIME_ATTRS})
    elif name == "step" and _whole(values, "m", 3600):
        source = "mars.step"
        hint = _hint([name], values.astype("timedelta64[h]").astype(np.int64), {**attrs, "units": STEP_UNITS})
    else:
        source, hint = name, _aux_hint(ds, name)
    hint["match"] = list(hint["values"])
    keys = [key_value(source, v) for v in values] if source != name else [[(name, v)] for v in hint["values"]]
    return MessageDim(name, source, keys), hint


#: the attributes of a ``time`` dim written as MARS date/time
_MARS_TIME_ATTRS = {"units": TIME_UNITS, "calendar": "proleptic_gregorian"}


def py_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): py_value(v) for k, v in attrs.items()}


def _hint(dims: Sequence[Hashable], values: np.ndarray, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A coordinate's hint entry: its dims, values, dtype and attributes, as the reader restores it."""
    return {
        "dims": [str(d) for d in dims],
        "values": py_value(values),
        "dtype": values.dtype.str,
        "attrs": py_attrs(attrs),
    }


def _aux_hint(ds: xr.Dataset, name: Any) -> dict[str, Any]:
    """A non-index coordinate along message dims: stored whole in the hint (CF-encoded like to_netcdf)."""
    var = ds.coords[name].variable
    if var.dtype.kind in "Mm" or contains_cftime_datetimes(var):  # times of any calendar: numbers with units
        var = xr.conventions.encode_cf_variable(var, name=name)
    return _hint(var.dims, np.asarray(var.values), var.attrs)


def _recorded_dims(ds: xr.Dataset) -> tuple[list[MessageDim], dict[str, Any]]:
    """The dims the layout records say were stacked from messages, and the scalar keys that have become dims
    since (``time`` of a concatenation along it): each value one message. Also the hint entries of what the
    reader would not give back as it is: a dim of length 1 (the reader makes a scalar of it), a scalar key made
    a dim, and a message dim selected down to a scalar."""
    dims: dict[str, MessageDim] = {}
    hints: dict[str, Any] = {}
    for name, var in ds.data_vars.items():
        record = LayoutRecord.of(var.encoding, name)
        scalar = record.scalar_keys or {}
        for d, src in [*(record.message_keys or {}).items(), *scalar.items()]:
            if d in var.dims and d not in dims:
                values = ds[d].values if d in ds.coords else np.arange(ds.sizes[d])
                dims[d] = MessageDim(d, src, [key_value(src, v) for v in values])
                if d in scalar or len(values) == 1:
                    hints[d] = _user_dim(ds, d)[1]
            elif d not in scalar and d in ds.coords and ds[d].ndim == 0:
                hints[d] = _aux_hint(ds, d)
    return list(dims.values()), hints


def plan_dims(ds: xr.Dataset, message_dims: Sequence[str] | None) -> tuple[list[MessageDim], dict[str, Any] | None]:
    """Dims recorded as message keys on read come first; ``message_dims=`` adds more.

    Returns the dims and the layout hint (None when the reader gets the Dataset back without one)."""
    dims, hint_coords = _recorded_dims(ds)
    for d in message_dims or ():
        if d not in ds.dims:
            raise ValueError(f"message_dims: {d!r} is not a dimension of the Dataset; dimensions: {list(ds.dims)}")
        if d not in [m.name for m in dims]:
            mdim, hint_coords[d] = _user_dim(ds, d)
            dims.append(mdim)
    if not hint_coords and not any(m.source == m.name for m in dims):
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


def not_objects(ds: xr.Dataset, mdims: Sequence[MessageDim]) -> set[Hashable]:
    """Coordinates that are not objects of their own: message dims, metadata keys, what the reader rebuilds."""
    split = {m.name for m in mdims}
    records = [LayoutRecord.of(var.encoding, name) for name, var in ds.data_vars.items()]
    scalars = {c: s for r in records for c, s in scalar_keys(ds, r).items()}
    # keys that vary along the message dims, written into each object's metadata
    dependent = {c for r in records for c in r.dependent_keys or {} if c in ds.coords}
    dependent = {c for c in dependent if set(ds.variables[c].dims) <= split}
    # coordinates computed from metadata (GRIB grids and levels) are not objects of their own
    derived = {c for c in ds.coords if LayoutRecord.of(ds.variables[c].encoding, c).derived}
    # valid_time is rebuilt by the reader from MARS time and step keys; without both it is written like any other
    mars = {m.source for m in mdims} | set(scalars.values())
    rebuilt = {"valid_time"} if {"mars.step", "mars.date+mars.time"} <= mars else set()
    return split | rebuilt | set(scalars) | derived | dependent


def scalar_keys(ds: xr.Dataset, record: LayoutRecord) -> dict[str, str]:
    """The scalar coordinates of ``ds`` a variable's ``record`` says are metadata keys -> those keys: its scalar
    keys, and its message dims selected down to one value (``isel(step=0)``: every message holds that step)."""
    recorded = {**(record.message_keys or {}), **(record.scalar_keys or {})}
    return {c: s for c, s in recorded.items() if c in ds.coords and ds.variables[c].ndim == 0}


def dependent_value(coord: xr.DataArray, sel: Mapping[str, int]) -> Any:
    """The metadata value a coordinate the reader made of a varying key holds at ``sel``; None where the object
    had no such key (the reader marks those cells NaN or ``""``: a whole number in a float coordinate with
    such cells was an integer key)."""
    value = py_value(coord.isel({d: sel[str(d)] for d in coord.dims}).values)
    if value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    has_holes = coord.dtype.kind == "f" and bool(np.isnan(coord.values).any())
    return int(value) if has_holes and isinstance(value, float) and value.is_integer() else value


def message_combos(ds: xr.Dataset, mdims: Sequence[MessageDim]) -> Iterator[dict[str, int]]:
    """The index of each message dim, one dict per message."""
    for combo in itertools.product(*(range(ds.sizes[m.name]) for m in mdims)):  # no dims: one message
        yield {m.name: i for m, i in zip(mdims, combo, strict=True)}


def _source_keys(source: str, value: Any, record: LayoutRecord) -> list[tuple[str, Any]]:
    """The (dotted key, value) pairs a value of a stacking ``source`` stands for (a producer's level: as it says)."""
    owner = SOURCE_OWNERS.get(source)
    return key_value(source, value) if owner is None else owner.source_keys(source, value, record)


def message_keys(
    ds: xr.Dataset, sel: Mapping[str, int], var_mdims: Sequence[MessageDim], record: LayoutRecord
) -> Iterator[tuple[str, Any]]:
    """The (dotted key, value) pairs of the object at ``sel``: its message dims' keys, the scalar keys (a message
    dim selected down to one value among them) and the ``dependent_keys`` along the message dims."""
    for m in var_mdims:
        if m.source in SOURCE_OWNERS:  # a producer's own source (its levels): the keys its values stand for
            value = ds[m.name].values[sel[m.name]] if m.name in ds.coords else sel[m.name]
            yield from _source_keys(m.source, value, record)
        else:
            yield from m.keys[sel[m.name]]
    for cname, src in scalar_keys(ds, record).items():
        yield from _source_keys(src, ds.variables[cname].values[()], record)
    for cname, src in (record.dependent_keys or {}).items():
        coord = ds.coords.get(cname)
        value = dependent_value(coord, sel) if coord is not None and set(coord.dims) <= set(sel) else None
        if value is not None:
            yield src, value
