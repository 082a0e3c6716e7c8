"""GRIB knowledge for files written by ECMWF's GRIB converter: what a cfgrib user expects to see.

The converter (``specs/tensogram-from-grib.md``) writes one float64 object per GRIB message whose ``base[i]``
carries ``mars`` (the MARS namespace, ``grid`` and sometimes ``area``), ``grib_repro`` (the keys that rebuild
the GRIB message) and optionally ``grib`` (six more ecCodes namespaces); the grid is metadata only.

This module turns those keys into what cfgrib gives for the same messages: names (``2t`` -> ``t2m``),
``latitude``/``longitude`` computed from the grid description, a level coordinate named after
``typeOfLevel`` and attributes (``units``, ``long_name``, the rest ``GRIB_``-prefixed). Pure functions on the
*flattened* keys of one object; no ecCodes at runtime. :mod:`.write_layout` is the way back.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..interface import GridCoords, LevelInfo

__all__ = [
    "GRIB_LEVEL_SOURCE",
    "GRIB_PREFIXES",
    "GRIB_SECTIONS",
    "cf_attributes",
    "cfgrib_name",
    "filter_value",
    "gaussian_latitudes",
    "grid_coordinates",
    "is_grib_entry",
    "level_coordinate_attrs",
    "level_info",
    "level_order",
    "variable_name",
]

#: the virtual metadata key a GRIB level dimension stands for (``mars.levelist`` or ``grib_repro.level``)
GRIB_LEVEL_SOURCE = "grib:level"
#: the entry sections whose keys are derived from the independent MARS keys and never make a dimension
GRIB_SECTIONS = ("grib_repro", "grib")
#: their keys' prefixes, once flattened
GRIB_PREFIXES = _REPRO, _GRIB = tuple(f"{s}." for s in GRIB_SECTIONS)

#: cfgrib's attributes of the level coordinates it knows (``cfgrib.dataset.COORD_ATTRS``), empty cells left out
_LEVEL_COLUMNS = ("long_name", "units", "positive", "stored_direction", "standard_name")
_LEVEL_ATTRS: dict[str, dict[str, str]] = {
    name: {k: v for k, v in zip(_LEVEL_COLUMNS, row, strict=True) if v}
    for name, row in {
        "isobaricInhPa": ("pressure", "hPa", "down", "decreasing", "air_pressure"),
        "isobaricInPa": ("pressure", "Pa", "down", "decreasing", "air_pressure"),
        "isobaricLayer": ("pressure", "Pa", "down", "", "air_pressure"),
        "heightAboveGround": ("height above the surface", "m", "up", "", "height"),
        "depthBelowLand": ("soil depth", "m", "down", "", "depth"),
        "depthBelowLandLayer": ("soil depth", "m", "down", "", "depth"),
        "hybrid": ("hybrid level", "1", "down", "", "atmosphere_hybrid_sigma_pressure_coordinate"),
    }.items()
}
_LATITUDE_ATTRS = {"units": "degrees_north", "standard_name": "latitude", "long_name": "latitude"}
_LONGITUDE_ATTRS = {"units": "degrees_east", "standard_name": "longitude", "long_name": "longitude"}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LEADING_DIGITS = re.compile(r"^([0-9]+)(.*)$")


# -- which objects, which keys ---------------------------------------------------------------------------
def is_grib_entry(entry: Mapping[str, Any]) -> bool:
    """An object written by the GRIB converter: it carries ``grib_repro`` (always) or ``grib`` sections."""
    repro, other = entry.get("grib_repro"), entry.get("grib")
    if repro is None and other is None:  # the common answer, without an ABC isinstance per object
        return False
    return isinstance(repro, Mapping) or isinstance(other, Mapping)


def _grib_key(keys: Mapping[str, Any], name: str) -> Any:
    """A GRIB key from ``grib_repro`` or, failing that, from any ``grib.<namespace>``."""
    value = keys.get(_REPRO + name)
    if value is None:
        namespaces = ("parameter", "vertical", "geography", "time", "ls", "statistics")
        value = next((v for ns in namespaces if (v := keys.get(f"{_GRIB}{ns}.{name}")) is not None), None)
    return value


def filter_value(keys: Mapping[str, Any], key: str) -> Any:
    """The value ``filter_by_keys`` compares for ``key``: the dotted key itself, else (for cfgrib's
    undotted keys such as ``typeOfLevel`` or ``shortName``) the GRIB key, else ``mars.<key>``."""
    if key in keys:
        return keys[key]
    if "." in key:
        return None
    value = _grib_key(keys, key)
    return value if value is not None else keys.get("mars." + key)


# -- names -----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1024)  # asked once per object, of a handful of short names
def cfgrib_name(short_name: str) -> str:
    """cfgrib's variable name for an ecCodes short name: identifiers stay (``t``, ``lsm``); leading digits move
    to the end (``2t`` -> ``t2m``, ``10u`` -> ``u10``), with ``m`` after ``2t``/``2d`` as ecCodes' ``cfVarName``
    does; anything else that is not an identifier becomes ``_``."""
    if _IDENTIFIER.match(short_name):
        return short_name
    m = _LEADING_DIGITS.match(short_name)
    if m and m.group(2):
        digits, rest = m.groups()
        # ecCodes: 2t -> t2m, 2d -> d2m, but 2r -> r2, 2sh -> sh2: only temperature and dewpoint carry the "m"
        suffix = "m" if digits == "2" and rest in _TWO_METRE_M else ""
        name = rest + digits + suffix
    else:
        name = short_name
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name if _IDENTIFIER.match(name) else "_" + name


#: short names whose ecCodes cfVarName is ``<name>2m`` (not ``<name>2``)
_TWO_METRE_M = frozenset({"t", "d"})


def variable_name(keys: Mapping[str, Any]) -> str | None:
    """cfgrib's name for a converter object: from the short name, never from the numeric ``mars.param``."""
    short = _grib_key(keys, "shortName")
    if isinstance(short, str) and short and short not in ("~", "unknown"):
        return cfgrib_name(short)
    param = keys.get("mars.param")
    if isinstance(param, str) and param and not param.isdigit():
        return cfgrib_name(param)
    pid = next((v for v in (_grib_key(keys, "paramId"), param) if v is not None), None)
    return f"paramId_{pid}" if pid is not None else None


# -- levels ----------------------------------------------------------------------------------------------
def level_info(keys: Mapping[str, Any]) -> LevelInfo | None:
    """The level coordinate of a GRIB object: named after ``typeOfLevel``, value from ``levelist`` or ``level``."""
    type_of_level = _grib_key(keys, "typeOfLevel")
    if not isinstance(type_of_level, str) or not type_of_level:
        return None
    value = keys.get("mars.levelist")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        value = _grib_key(keys, "level")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return LevelInfo(type_of_level, float(value))


def level_coordinate_attrs(name: str) -> dict[str, str]:
    """cfgrib's attributes for a level coordinate (a generic pair for level types it does not know)."""
    attrs = {"long_name": f"original GRIB coordinate for key: level({name})", "units": "1"}
    attrs.update(_LEVEL_ATTRS.get(name, {}))
    return attrs


def level_order(name: str, values: Sequence[float]) -> list[float]:
    """Sorted as cfgrib sorts them: decreasing for pressure, increasing otherwise."""
    decreasing = _LEVEL_ATTRS.get(name, {}).get("stored_direction") == "decreasing"
    return sorted(values, reverse=decreasing)


# -- grids -----------------------------------------------------------------------------------------------
def _number(keys: Mapping[str, Any], name: str) -> float | None:
    value = _grib_key(keys, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _corner(keys: Mapping[str, Any], axis: str, which: str) -> float | None:
    """``latitudeOfFirstGridPointInDegrees`` and its three siblings."""
    return _number(keys, f"{axis}Of{which}GridPointInDegrees")


def _regular_axis(first: float, last: float, n: int) -> np.ndarray:
    """``n`` values from ``first`` to ``last``, rounded to the micro-degrees GRIB2 stores (no 1e-15 noise)."""
    if n == 1:
        return np.array([first])
    return np.round(first + np.arange(n, dtype=np.float64) * ((last - first) / (n - 1)), 6)


def _latlon(
    lat: np.ndarray, lon: np.ndarray, lat_attrs: Mapping[str, str] = _LATITUDE_ATTRS, along: str = ""
) -> GridCoords:
    """Grid coordinates: latitude and longitude dims (a regular grid), or both ``along`` one dim (a reduced grid)."""
    lat_dim, lon_dim = (along, along) if along else ("latitude", "longitude")
    return GridCoords(
        list(dict.fromkeys((lat_dim, lon_dim))),
        {"latitude": ((lat_dim,), lat, dict(lat_attrs)), "longitude": ((lon_dim,), lon, dict(_LONGITUDE_ATTRS))},
    )


def _regular_ll(keys: Mapping[str, Any], shape: tuple[int, ...]) -> GridCoords | None:
    nj, ni = shape
    area = keys.get("mars.area")
    if isinstance(area, (list, tuple)) and len(area) == 4 and all(isinstance(v, (int, float)) for v in area):
        lat1, lon1, lat2, lon2 = (float(v) for v in area)  # north, west, south, east
    else:
        corners = [_corner(keys, axis, which) for which in ("First", "Last") for axis in ("latitude", "longitude")]
        if None in corners:
            return None
        lat1, lon1, lat2, lon2 = cast(list[float], corners)
        i_negative = bool(_number(keys, "iScansNegatively"))
        if not i_negative and lon1 > lon2:
            lon1 -= 360.0  # a grid across the dateline / Greenwich: one monotone axis, as ecCodes gives it
        elif i_negative and lon1 < lon2:
            lon1 += 360.0
    lat = _regular_axis(lat1, lat2, nj)
    north_to_south = {"stored_direction": "decreasing"} if lat[0] > lat[-1] else {}  # as cfgrib marks them
    return _latlon(lat, _regular_axis(lon1, lon2, ni), {**_LATITUDE_ATTRS, **north_to_south})


def gaussian_latitudes(n: int) -> np.ndarray:
    """The ``2n`` Gaussian latitudes in degrees, north to south: roots of the Legendre polynomial P_2n, by
    Newton's method on all roots at once from the cosine first guess (N1280: a few milliseconds, no matrix)."""
    if n <= 0:
        raise ValueError(f"Gaussian grid number N must be positive, got {n}")
    total = 2 * n
    k = np.arange(1, n + 1, dtype=np.float64)
    x = np.cos(np.pi * (k - 0.25) / (total + 0.5))  # northern hemisphere, decreasing sin(latitude)
    for _ in range(100):
        p_prev, p = np.ones_like(x), x.copy()
        for m in range(2, total + 1):
            p_prev, p = p, ((2 * m - 1) * x * p - (m - 1) * p_prev) / m
        derivative = total * (x * p - p_prev) / (x * x - 1.0)
        dx = p / derivative
        x -= dx
        if np.max(np.abs(dx)) < 1e-15:
            break
    north = np.degrees(np.arcsin(x))
    return np.concatenate([north, -north[::-1]])


#: the largest Gaussian N we compute latitudes for (O1280, ECMWF's finest grid, has N = 1280): bounds the work
MAX_GAUSSIAN_N = 4096


def _gaussian_rows(keys: Mapping[str, Any], rows: int, lat1: float | None, flip: bool) -> np.ndarray | None:
    """``rows`` Gaussian latitudes of ``N`` (south to north if ``flip``) from the one nearest ``lat1`` (else the
    first) on. Metadata that does not describe the object (more rows than ``2N``, an ``N`` beyond any real grid)
    gives None rather than a guess."""
    n = _number(keys, "N")
    if n is None or not n.is_integer() or not 0 < n <= MAX_GAUSSIAN_N or rows > 2 * n:
        return None
    lats = gaussian_latitudes(int(n))[:: -1 if flip else 1]
    start = 0 if lat1 is None else int(np.argmin(np.abs(lats - lat1)))
    return lats[start : start + rows].copy() if start + rows <= lats.size else None


def _reduced_gg(keys: Mapping[str, Any], shape: tuple[int, ...]) -> GridCoords | None:
    """``values`` with latitude/longitude per point; global grids (and latitude bands) only, with ``pl`` summing
    to the object's size."""
    pl = _grib_key(keys, "pl")
    if not isinstance(pl, (list, tuple)) or not pl:
        return None
    if not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pl) or sum(pl) != shape[0]:
        return None
    rows = _gaussian_rows(keys, len(pl), _corner(keys, "latitude", "First"), flip=False)
    if rows is None:
        return None
    lon1 = _corner(keys, "longitude", "First") or 0.0
    counts = np.asarray(pl, dtype=np.int64)
    # position of each point within its row, then lon = lon1 + i * 360 / pl (global rows)
    index_in_row = np.arange(shape[0], dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    lon = lon1 + index_in_row * (360.0 / np.repeat(counts, counts))
    return _latlon(np.repeat(rows, counts), lon, along="values")


def _regular_gg(keys: Mapping[str, Any], shape: tuple[int, ...]) -> GridCoords | None:
    """``latitude``/``longitude`` dims: Gaussian latitudes from ``N``, longitudes from the corners."""
    nj, ni = shape
    lat1, lon1 = _corner(keys, "latitude", "First"), _corner(keys, "longitude", "First")
    lon2 = _corner(keys, "longitude", "Last")
    lat = None if lat1 is None else _gaussian_rows(keys, nj, lat1, bool(_number(keys, "jScansPositively")))
    if lat is None or lon1 is None or lon2 is None:
        return None
    if lon1 > lon2:
        lon1 -= 360.0
    return _latlon(lat, lon1 + np.arange(ni, dtype=np.float64) * ((lon2 - lon1) / (ni - 1) if ni > 1 else 0.0))


#: grids cfgrib gives ``(y, x)`` dims with 2-D latitude/longitude from ecCodes (which we cannot compute)
_YX_GRIDS = frozenset(
    {"rotated_ll", "rotated_gg", "lambert", "lambert_azimuthal_equal_area", "albers", "polar_stereographic"}
)


def grid_coordinates(keys: Mapping[str, Any], shape: tuple[int, ...]) -> GridCoords | None:
    """Grid dims and coordinates from ``mars.grid``/``gridType``, ``mars.area`` and the shape (None: no exact grid)."""
    grid = keys.get("mars.grid") or _grib_key(keys, "gridType")
    if len(shape) == 1:  # cfgrib's dim for grids it has no coordinates for
        return (_reduced_gg(keys, shape) if grid == "reduced_gg" else None) or GridCoords(["values"])
    if len(shape) != 2:
        return None
    if grid in _YX_GRIDS:
        return GridCoords(["y", "x"])  # cfgrib's dims; the projected coordinates need ecCodes
    build = {"regular_ll": _regular_ll, "regular_gg": _regular_gg}.get(grid)
    return build(keys, shape) if build is not None else None


# -- attributes (and back) -------------------------------------------------------------------------------
def cf_attributes(attrs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """cfgrib-style attributes from flattened ones, and the metadata path of each renamed one (for the writer).

    ``grib_repro.X`` -> ``GRIB_X``, ``grib.<ns>.X`` -> ``GRIB_<ns>.X``, the rest unchanged; ``GRIB_units`` and
    ``GRIB_name`` also as ``units``/``long_name``, as cfgrib does.
    """
    out: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for key, value in attrs.items():
        prefix = next((p for p in GRIB_PREFIXES if key.startswith(p)), None)
        if prefix is None:
            out.setdefault(key, value)
            continue
        new = "GRIB_" + key[len(prefix) :]
        out[new], paths[new] = value, key
    for cf_name, grib_name in (("units", "GRIB_units"), ("long_name", "GRIB_name")):
        if grib_name in out and cf_name not in out:
            out[cf_name] = out[grib_name]
    return out, paths
