"""CF times and indexes of values already in memory, made without importing Dask.

xarray (2026.9) asks "is this a Dask array?" of every numpy array it samples while decoding a CF time or
turns into a pandas index (both via ``to_numpy``), which imports ``dask.base`` when Dask is installed: about
75 ms on a process's first open. The coordinates assembly builds from metadata (``time``, ``step``, levels,
labels) are small arrays in memory, so the data store hands xarray what it would compute from them:

- :func:`decode_times_in_memory`: the CF times xarray's *default* decoding would decode, decoded with numpy
  exactly as xarray does (values, resolution, attrs moved to ``encoding``), in the plain cases only:
  integers, a standard calendar, an ISO reference date, results inside datetime64[ns]. Everything else is
  left CF-encoded for xarray's own decoder; tests check each case against that decoder.
- :func:`default_indexes`: the pandas indexes of dimension coordinates as xarray's default index creation
  builds them. xarray does not tell a backend about ``create_default_indexes=False``, so they are there even
  then (xarray's docs allow backends their own indexes; ``ds.drop_indexes`` removes them).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from xarray.core import indexing
from xarray.indexes import PandasIndex

__all__ = ["decode_times_in_memory", "default_indexes"]

#: CF unit names (as xarray spells them) -> numpy time units
_UNITS = {
    "days": "D",
    "hours": "h",
    "minutes": "m",
    "seconds": "s",
    "milliseconds": "ms",
    "microseconds": "us",
    "nanoseconds": "ns",
}
_NANOSECONDS = {"D": 86_400 * 10**9, "h": 3_600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
#: the ``dtype`` attributes xarray decodes at their own resolution (coarser or finer ones: it warns, we defer)
_MARKER = re.compile(r"timedelta64\[(s|ms|us|ns)\]")
_STANDARD_CALENDARS = frozenset({None, "standard", "gregorian", "proleptic_gregorian"})  # None: the default
#: attributes that make xarray's mask/scale coders or bounds handling act on a variable: left to xarray
_OTHER_CODING = frozenset({"_FillValue", "missing_value", "scale_factor", "add_offset", "_Unsigned", "bounds"})
#: an ISO reference date that numpy and pandas read alike (its year checked against datetime64[ns] apart)
_REF_DATE = re.compile(r"(\d{4})-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d{1,9})?)?)?")
_NS_YEARS = range(1678, 2262)  # whole years inside datetime64[ns]
_INT64 = 2**63


def _in_memory(var: xr.Variable) -> bool:
    """Whether ``var`` holds numpy values (the store's memory variables), not a lazy array."""
    return isinstance(var._data, (np.ndarray, indexing.NumpyIndexingAdapter))


def _plain(var: xr.Variable) -> bool:
    """Integer values in memory that no other CF coder touches: the only ones decoded here."""
    return (
        _in_memory(var)
        and var.dtype.kind in "iu"
        and var.dtype.isnative
        and var.dtype.itemsize <= (8 if var.dtype.kind == "i" else 4)
        and var.size > 0
        and not _OTHER_CODING.intersection(var.attrs)
        and not {"units", "calendar"}.intersection(var.encoding)
    )


def _scaled(values: np.ndarray, factor: int, offset: int = 0) -> np.ndarray | None:
    """``values * factor + offset`` as int64, or None where any result would leave int64 (or be NaT)."""
    lo, hi = int(values.min()) * factor + offset, int(values.max()) * factor + offset
    if not -_INT64 < lo <= hi < _INT64:
        return None
    return np.asarray(values.astype(np.int64) * np.int64(factor) + np.int64(offset))


def _decoded(var: xr.Variable, values: np.ndarray, dropped: tuple[str, ...], moved: tuple[str, ...]) -> xr.Variable:
    """``var`` with decoded ``values``: the ``moved`` attrs in ``encoding`` (as xarray's decoder moves them), the
    ``dropped`` ones gone, and the stored dtype kept in ``encoding["dtype"]``."""
    attrs = {k: v for k, v in var.attrs.items() if k not in dropped and k not in moved}
    encoding = dict(var.encoding)
    encoding.update((k, var.attrs[k]) for k in moved if var.attrs.get(k) is not None)
    encoding.setdefault("dtype", var.dtype)
    data = indexing.NumpyIndexingAdapter(values)  # type: ignore[no-untyped-call]  # unannotated in xarray
    return xr.Variable(var.dims, data, attrs, encoding)


def _datetime(var: xr.Variable) -> xr.Variable | None:
    """``var`` decoded to datetime64[ns] (xarray's default ``time_unit``), or None when xarray must decide."""
    units, calendar = var.attrs.get("units"), var.attrs.get("calendar")
    if not isinstance(units, str) or units.count(" since ") != 1 or calendar not in _STANDARD_CALENDARS:
        return None
    unit, ref = (part.strip() for part in units.split(" since "))
    found = _REF_DATE.fullmatch(ref)
    if unit not in _UNITS or found is None or int(found.group(1)) not in _NS_YEARS:
        return None
    try:
        origin = int(np.datetime64(ref.replace(" ", "T"), "ns").astype(np.int64))
    except ValueError:  # not a real date or time (month 13, hour 25): xarray says what is wrong
        return None
    ns = _scaled(np.asarray(var._data), _NANOSECONDS[_UNITS[unit]], origin)
    return None if ns is None else _decoded(var, ns.view("M8[ns]"), (), ("units", "calendar"))


def _timedelta(var: xr.Variable, via_units: bool) -> xr.Variable | None:
    """``var`` decoded to timedelta64 as xarray's ``CFTimedeltaCoder`` would, or None when xarray must decide;
    at the ``dtype`` attribute's resolution (``ns`` without it), or the units' where those are finer."""
    units, marker = var.attrs.get("units"), var.attrs.get("dtype")
    if not isinstance(units, str) or units not in _UNITS:
        return None
    has_marker = isinstance(marker, str) and marker.startswith("timedelta64")
    found = _MARKER.fullmatch(str(marker)) if has_marker else None
    if not (found if has_marker else via_units):
        return None  # an unknown resolution: xarray warns and picks another
    resolution = found.group(1) if found else "ns"
    stored = _UNITS[units]
    finest = stored if stored in ("ms", "us", "ns") else "s"  # xarray reads days, hours, minutes as seconds
    resolution = min(resolution, finest, key=_NANOSECONDS.__getitem__)
    ticks = _scaled(np.asarray(var._data), _NANOSECONDS[stored] // _NANOSECONDS[resolution])
    dropped = ("dtype",) if has_marker else ()
    return None if ticks is None else _decoded(var, ticks.view(f"m8[{resolution}]"), dropped, ("units",))


def decode_times_in_memory(variables: Mapping[str, xr.Variable], decoders: Mapping[str, Any]) -> dict[str, xr.Variable]:
    """``variables`` with the in-memory CF times that xarray's default decoding would decode, decoded here
    (xarray's decoder passes datetime64/timedelta64 through); ``decoders``: the CF switches, defaults filled."""
    if decoders.get("use_cftime") is not None:  # deprecated in xarray, which warns for each variable it decodes
        return dict(variables)
    datetimes, flag = decoders.get("decode_times") is True, decoders.get("decode_timedelta")
    # how xarray's default timedelta decoding reads units: alone (``decode_timedelta=True``), only with the
    # ``dtype`` attribute (False), or not at all (None: no default decoding to mirror)
    via_units = True if flag is True else (False if flag is None and datetimes else None)
    out = dict(variables)
    for name, var in variables.items():
        if not _plain(var):
            continue
        decoded = _timedelta(var, via_units) if via_units is not None else None
        if decoded is None and datetimes:
            decoded = _datetime(var)
        if decoded is not None:
            out[name] = decoded
    return out


def default_indexes(coords: Mapping[Hashable, xr.Variable]) -> xr.Coordinates:
    """``coords`` as coordinates, their dimension coordinates indexed as xarray's default index creation would
    index them: a :class:`~xarray.indexes.PandasIndex` of the same ``pandas.Index``, lazy values read now (as
    xarray reads them for the index)."""
    indexes: dict[Hashable, PandasIndex] = {}
    variables = dict(coords)
    for name, var in coords.items():
        if var.dims != (name,) or var.dtype == np.float16:
            continue  # float16: xarray warns and casts, let it
        values = np.asarray(var._data) if _in_memory(var) else np.asarray(var.values)
        try:
            index = pd.Index(values, dtype=object) if values.dtype.kind == "O" else pd.Index(values)
        except UnicodeEncodeError:
            continue
        indexes[name] = PandasIndex(index, name, coord_dtype=var.dtype)
        variables.update(indexes[name].create_variables({name: var}))
    return xr.Coordinates(variables, indexes=indexes)
