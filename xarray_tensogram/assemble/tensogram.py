"""Tensogram messages -> xarray Datasets: names, dims, coordinates, hypercubes and groups.

The rules are DESIGN.md's "Mapping conventions":

* one variable per data object name; objects with the same name, shape and dtype
  across messages form a hypercube whose stacked dimensions are the metadata keys
  that vary (``mars.step`` -> ``step``); MARS date/time/step become ``time``,
  ``step`` and ``valid_time`` as in cfgrib; holes are filled, duplicates refused;
* objects named like coordinates (latitude, longitude, ...) become coordinates;
* attributes are netCDF-safe (dotted keys, ``cf.*`` lifted, ``_reserved_`` hidden);
* objects that cannot share one Dataset (different grids or dtypes) go to separate
  groups, reachable with ``open_groups`` / ``open_datatree``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import xarray as xr

from ..catalog import ArraySpec, stack_specs
from ..errors import HypercubeError
from . import grib
from .common import flatten_attrs, generic_dim_names, lazy_variable, netcdf_safe_value
from .mars import NUMBER_ATTRS, STEP_UNITS, TIME_UNITS, mars_datetime_seconds, step_hours

__all__ = ["tensogram_groups", "COORDINATE_NAMES", "NAME_KEYS"]

NAME_KEYS = ("name", "mars.param", "param", "mars.shortName", "shortName")
COORDINATE_NAMES = frozenset({
    "latitude", "longitude", "lat", "lon", "rlat", "rlon", "x", "y", "time", "level", "levelist", "step",
    "valid_time", "height", "depth", "pressure", "plev", "number", "realization", "forecast_time",
})
#: preferred order of stacked dimensions; others follow in order of first appearance
DIM_ORDER = ("number", "time", "step", "level")
#: dotted keys whose stacked dimension gets a friendlier name
DIM_ALIASES = {"mars.levelist": "level", "mars.number": "number"}
MARS_TIME_KEYS = ("mars.date", "mars.time")
MARS_STEP_KEY = "mars.step"


@dataclass
class _Object:
    msg: int
    obj: int
    keys: dict[str, Any]  # flattened base entry, hashable values, no _reserved_
    raw_entry: dict
    shape: tuple[int, ...]
    dtype: np.dtype
    name: str
    spec: Callable[[], ArraySpec]
    name_key: str | None = None
    selected: bool = True  # matches filter_by_keys (coordinate objects are kept regardless)
    is_grib: bool = False  # written by ECMWF's GRIB converter (GRIB hook: names, levels, grid, attrs)
    level: grib.LevelInfo | None = None  # its GRIB level (typeOfLevel, value), computed once


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((str(k), _hashable(x)) for k, x in v.items()))
    return v


_SCALARS = frozenset({int, float, str, bool, type(None)})


def _flat_keys(entry: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if not prefix and k == "_reserved_":
            continue
        key = f"{prefix}{k}"
        if type(v) in _SCALARS:  # the common case first: hashable already, no isinstance chain
            out[key] = v
        elif isinstance(v, dict) and v:
            out.update(_flat_keys(v, key + "."))
        else:
            out[key] = _hashable(v)
    return out


def _lookup(keys: Mapping[str, Any], extra: Mapping[str, Any], dotted: str) -> Any:
    if dotted in keys:
        return keys[dotted]
    return extra.get(dotted)


def _filter_value(keys: Mapping[str, Any], extra: Mapping[str, Any], dotted: str, is_grib: bool) -> Any:
    """The value ``filter_by_keys`` compares; GRIB hook: cfgrib's undotted keys (``typeOfLevel``) work too."""
    value = _lookup(keys, extra, dotted)
    return grib.filter_value(keys, dotted) if value is None and is_grib else value


def _matches(value: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
    return any(value == w or (value is not None and str(value) == str(w)) for w in options)


def _lift_cf(attrs: dict[str, Any], lifted: list[str] | None = None) -> dict[str, Any]:
    """``cf.units`` -> ``units`` etc., so that xarray's CF decoding sees them (names recorded in ``lifted``)."""
    out = {}
    for k, v in attrs.items():
        if k.startswith("cf.") and k.count(".") == 1:
            out[k[3:]] = v
            if lifted is not None:
                lifted.append(k[3:])
        else:
            out.setdefault(k, v)
    return out


def _collect(tfile: Any, variable_key: str | None, filter_by_keys: Mapping[str, Any] | None,
             verify_hash: bool) -> tuple[list[_Object], dict[str, Any]]:
    objects: list[_Object] = []
    extra0: dict[str, Any] | None = None
    for m, msg in enumerate(tfile):
        meta = msg.metadata
        extra_flat = _flat_keys(meta.get("_extra_") or {})
        if extra0 is None:
            extra0 = meta.get("_extra_") or {}
        for j in range(len(msg.objects)):
            entry = meta["base"][j]
            keys = _flat_keys(entry)
            is_grib = grib.is_grib_entry(entry)
            selected = not filter_by_keys or all(
                _matches(_filter_value(keys, extra_flat, k, is_grib), v) for k, v in filter_by_keys.items()
            )
            shape, dtype = msg.object_geometry(j)
            name, name_key = None, None
            if is_grib and not variable_key:  # GRIB hook: cfgrib's name, never the numeric mars.param
                name = grib.variable_name(keys)
            for key in ((variable_key,) if variable_key else NAME_KEYS) if name is None else ():
                value = _lookup(keys, extra_flat, key)
                if value is not None and not isinstance(value, tuple):
                    name, name_key = str(value), key
                    break
            if name is None:
                name = f"object_{j}"
            objects.append(_Object(m, j, keys, entry, tuple(shape), dtype, name,
                                   (lambda msg=msg, j=j: msg.array_spec(j, verify_hash=verify_hash)), name_key,
                                   selected, is_grib, grib.level_info(keys) if is_grib else None))
    return objects, extra0 or {}


def _coordinate_names(objects: Sequence[_Object]) -> set[str]:
    """Names that other objects use as a dimension or list in a ``coordinates`` attribute."""
    names: set[str] = set()
    for o in objects:
        dims = o.raw_entry.get("dim_names")
        if isinstance(dims, list):
            names.update(d for d in dims if isinstance(d, str))
        for key in ("coordinates", "cf.coordinates"):
            value = o.keys.get(key)
            if isinstance(value, str):
                names.update(value.split())
    return names


def _is_coordinate(o: _Object, referenced: set[str]) -> bool:
    """Coordinate objects: named like a coordinate, or used by other objects as a dimension/coordinate."""
    if len(o.shape) == 0:
        return o.name in referenced  # a scalar coordinate a data object lists in ``coordinates``
    if len(o.shape) not in (1, 2):
        return False
    return o.name.lower() in COORDINATE_NAMES or o.name in referenced


def _group_objects(data: list[_Object]) -> dict[str, list[_Object]]:
    """Objects that can share one Dataset: same grid shape (and dtype, when a name has several)."""
    by_shape: dict[tuple[int, ...], list[_Object]] = {}
    for o in data:
        by_shape.setdefault(o.shape, []).append(o)
    groups: dict[tuple, list[_Object]] = {}
    for shape, objs in by_shape.items():
        dtypes_per_name: dict[str, set] = {}
        for o in objs:
            dtypes_per_name.setdefault(o.name, set()).add(o.dtype)
        split = any(len(d) > 1 for d in dtypes_per_name.values())
        for o in objs:
            groups.setdefault((shape, o.dtype.name if split else None), []).append(o)
    names: dict[str, list[_Object]] = {}
    for (shape, dtype), objs in groups.items():
        label = "x".join(str(s) for s in shape) if shape else "scalar"
        label = f"grid_{label}" + (f"_{dtype}" if dtype else "")
        names[label] = objs
    return dict(sorted(names.items()))


def _group_forced_grib_levels(objs: Sequence[_Object]) -> set[str]:
    """GRIB hook: level types (``heightAboveGround``...) with several values in a group become dims of every
    variable on that level type, for the same reason as :func:`_group_varying_mars_keys` (2 m and 10 m fields)."""
    values: dict[str, set[float]] = {}
    for o in objs:
        info = o.level
        if info is not None:
            values.setdefault(info.name, set()).add(info.value)
    return {name for name, v in values.items() if len(v) > 1}


def _group_varying_mars_keys(objs: Sequence[_Object]) -> set[str]:
    """MARS time/step keys whose values differ anywhere in a group.

    They become dimensions of every variable that has them (with holes where a
    variable lacks a value), because one Dataset cannot hold two different scalar
    ``time`` or ``step`` coordinates without mislabelling a variable.
    """
    forced: set[str] = set()
    for key in MARS_TIME_KEYS + (MARS_STEP_KEY,):
        values = {o.keys[key] for o in objs if key in o.keys}
        if len(values) > 1:
            forced.add(key)
    return forced


def _stack_dims(objs: list[_Object], name_key_used: set[str],
                forced: set[str] = frozenset(), forced_levels: frozenset[str] | set[str] = frozenset()
                ) -> tuple[list[str], dict[str, str], list[Any]]:
    """Varying keys of a variable's objects -> (stacked dim names, dim -> source key(s), per-object coords)."""
    level = objs[0].level
    # keys in order of first appearance; grib_repro/grib keys restate the MARS keys and never stack
    seen: dict[str, Any] = {}
    for o in objs:
        seen.update(o.keys)  # C-level; insertion order = first appearance
    all_keys = [k for k in seen if grib.is_stackable(k)]
    varying = []
    for k in all_keys:
        if k in name_key_used or k == "dim_names" or k.endswith(".dim_names"):
            continue
        values = {o.keys.get(k, None) for o in objs}
        if len(values) > 1 or k in forced:
            varying.append(k)
    dims: dict[str, str] = {}
    time_varies = any(k in varying for k in MARS_TIME_KEYS)
    if level is not None and ("mars.levelist" in varying or level.name in forced_levels):
        dims[level.name] = grib.GRIB_LEVEL_SOURCE  # GRIB hook: the level dim is named after typeOfLevel
        if "mars.levelist" not in varying and "mars.levelist" in objs[0].keys:
            varying.append("mars.levelist")
    for k in varying:
        if level is not None and k == "mars.levelist":
            continue
        if k in MARS_TIME_KEYS:
            if time_varies:
                dims.setdefault("time", "mars.date+mars.time")
            continue
        if k == MARS_STEP_KEY:
            dims["step"] = k
            continue
        dim = DIM_ALIASES.get(k, k.rsplit(".", 1)[-1])
        if dim in dims:
            dim = k
        dims[dim] = k
    order = DIM_ORDER + ((level.name,) if level is not None else ())
    ordered = [d for d in order if d in dims] + [d for d in dims if d not in order]
    return ordered, dims, varying


def _dim_value(o: _Object, source: str) -> Any:
    if source == "mars.date+mars.time":
        secs = mars_datetime_seconds(o.keys.get("mars.date"), o.keys.get("mars.time", 0))
        return secs if secs is not None else (o.keys.get("mars.date"), o.keys.get("mars.time"))
    if source == MARS_STEP_KEY:
        h = step_hours(o.keys.get(source))
        return h if h is not None else o.keys.get(source)
    if source == grib.GRIB_LEVEL_SOURCE:
        return None if o.level is None else o.level.value
    return o.keys.get(source)


def _sorted_unique(values: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    try:
        return sorted(seen)
    except TypeError:
        return seen


def _coord_variable(dim: str, source: str, values: list[Any]) -> xr.Variable:
    if source == grib.GRIB_LEVEL_SOURCE:
        return xr.Variable((dim,), np.asarray(values, dtype=np.float64), grib.level_coordinate_attrs(dim))
    if source == "mars.date+mars.time" and all(isinstance(v, int) for v in values):
        return xr.Variable((dim,), np.asarray(values, dtype=np.int64),
                           {"standard_name": "forecast_reference_time", "long_name": "initial time of forecast",
                            "units": TIME_UNITS, "calendar": "proleptic_gregorian"})
    if source == MARS_STEP_KEY and all(isinstance(v, float) for v in values):
        arr = np.asarray(values, dtype=np.float64)
        if np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        return xr.Variable((dim,), arr, {"standard_name": "forecast_period", "long_name": "time since forecast_reference_time",
                                         "units": STEP_UNITS})
    if source == "mars.number" and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return xr.Variable((dim,), np.asarray(values, dtype=np.int64), dict(NUMBER_ATTRS))  # as cfgrib
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return xr.Variable((dim,), np.asarray(values), {"long_name": source})
    return xr.Variable((dim,), np.asarray([("" if v is None else str(v)) for v in values], dtype=object),
                       {"long_name": source})


def _inner_dims(o: _Object, ndim_shape: tuple[int, ...], dim_names: Any, file_dims: Any,
                coord_dims: dict[str, int], taken: dict[str, int]) -> list[str]:
    if isinstance(dim_names, Mapping):
        dim_names = dim_names.get(o.name)
    for cand in (dim_names, o.raw_entry.get("dim_names"), file_dims):
        if isinstance(cand, (list, tuple)) and len(cand) == len(ndim_shape) and all(isinstance(c, str) for c in cand):
            return list(cand)
    names: list[str | None] = []
    for size in ndim_shape:
        matches = [n for n, s in coord_dims.items() if s == size and n not in names]
        names.append(matches[0] if len(matches) == 1 else None)
    generic = generic_dim_names(ndim_shape, taken)
    return [n if n is not None else g for n, g in zip(names, generic)]


def _build_group(objs: list[_Object], coords_objs: list[_Object], extra: Mapping[str, Any], *,
                 dim_names: Any, variable_key: str | None, drop_variables: frozenset[str]) -> xr.Dataset:
    name_keys = {variable_key} if variable_key else set(NAME_KEYS)
    file_dims = extra.get("dim_names")
    # coordinate objects (first occurrence of each name wins)
    coord_vars: dict[str, xr.Variable] = {}
    coord_dims: dict[str, int] = {}
    grid_sizes = {s for o in objs for s in o.shape}
    for c in coords_objs:
        if c.name in coord_vars or c.name in drop_variables:
            continue
        if len(c.shape) == 1:
            if c.shape[0] not in grid_sizes and objs:
                continue
            dims = [c.name] if not isinstance(c.raw_entry.get("dim_names"), list) else list(c.raw_entry["dim_names"])
            coord_dims[dims[0]] = c.shape[0]
        else:
            dims = None
        coord_vars[c.name] = (c, dims)  # type: ignore[assignment]
    variables: dict[str, xr.Variable] = {}
    coords_out: dict[str, xr.Variable] = {}
    by_name: dict[str, list[_Object]] = {}
    for o in objs:
        by_name.setdefault(o.name, []).append(o)
    taken: dict[str, int] = dict(coord_dims)
    # stacked dimensions of every variable; a dimension shared by several variables takes the union
    # of their values, so that a combination one variable lacks becomes a hole, not a conflict
    plans: dict[str, tuple[list[str], dict[str, str], list[str]]] = {}
    union: dict[str, list[Any]] = {}
    union_source: dict[str, str] = {}
    kept = [o for name, vo in by_name.items() if name not in drop_variables for o in vo]
    no_scalar_number: set[str] = set()  # set once variables disagree on a constant ensemble member
    forced = _group_varying_mars_keys(kept)
    forced_levels = _group_forced_grib_levels(kept)
    for vname, vobjs in by_name.items():
        if vname in drop_variables:
            continue
        grib_named = vobjs[0].is_grib and not variable_key  # named from grib_repro: mars.param stays a key
        plans[vname] = _stack_dims(vobjs, set() if grib_named else name_keys, forced, forced_levels)
        stack_dims, sources, _varying = plans[vname]
        for d in stack_dims:
            if union_source.setdefault(d, sources[d]) != sources[d]:
                raise HypercubeError(
                    f"dimension {d!r} comes from {union_source[d]!r} for some variables and from {sources[d]!r} for "
                    f"variable {vname!r}; open them separately with filter_by_keys={{...}}"
                )
            union.setdefault(d, []).extend(_dim_value(o, sources[d]) for o in vobjs)
    union = {d: _sorted_unique(v) for d, v in union.items()}
    union.update({d: grib.level_order(d, v) for d, v in union.items() if union_source[d] == grib.GRIB_LEVEL_SOURCE})
    for vname, vobjs in by_name.items():
        if vname in drop_variables:
            continue
        stack_dims, sources, varying = plans[vname]
        dim_values = {d: union[d] for d in stack_dims}
        stack_shape = tuple(len(dim_values[d]) for d in stack_dims)
        members: list[ArraySpec | None] = [None] * max(1, math.prod(stack_shape))
        where: dict[int, _Object] = {}
        for o in vobjs:
            idx = tuple(dim_values[d].index(_dim_value(o, sources[d])) for d in stack_dims)
            flat = int(np.ravel_multi_index(idx, stack_shape)) if stack_shape else 0
            if flat in where:
                other = where[flat]
                raise HypercubeError(
                    f"variable {vname!r}: message {other.msg} object {other.obj} and message {o.msg} object {o.obj} "
                    f"have the same coordinates {dict(zip(stack_dims, idx)) or '(no varying key)'}; "
                    f"select one with filter_by_keys={{...}} on a key that tells them apart, "
                    f"or pass variable_key= to name them differently"
                )
            where[flat] = o
            members[flat] = o.spec()
        holes = sum(1 for m in members if m is None)
        first = vobjs[0]
        grid = _grib_grid(first, dim_names, coords_out) if first.is_grib else None
        inner = grid or _inner_dims(first, first.shape, dim_names, file_dims, coord_dims, taken)
        for d, s in zip(inner, first.shape):
            taken.setdefault(d, s)
        fill = None
        if stack_dims and holes:
            if first.dtype.kind in "fc":
                fill = np.nan
            elif first.dtype.kind in "iu":
                # a sentinel that CF decoding masks, so holes are not mistaken for real zeros
                fill = np.iinfo(first.dtype).max
        if stack_dims:
            spec = stack_specs(stack_shape, members, fill_value=fill)
        else:
            spec = members[0]  # type: ignore[assignment]
        # attributes: keys constant across the variable's objects
        const = {}
        for k, v in first.raw_entry.items():
            if k in ("_reserved_", "dim_names"):
                continue
            const[k] = v
        attrs = flatten_attrs(const)
        drop = (set() if first.is_grib and not variable_key else set(name_keys)) | set(varying) | set(MARS_TIME_KEYS) | {MARS_STEP_KEY}
        if first.is_grib:  # GRIB hook: keys that vary with step/level are not attributes either
            drop |= _nonconstant_keys(vobjs)
        attrs = {k: v for k, v in attrs.items() if k not in drop and not any(k.startswith(p + ".") for p in varying)}
        lifted: list[str] = []
        attrs = _lift_cf(attrs, lifted)
        attr_paths: dict[str, str] = {}
        if first.is_grib:  # GRIB hook: units/long_name and GRIB_* attributes as cfgrib gives them
            attrs, attr_paths = grib.cf_attributes(attrs)
        if holes:
            attrs["tensogram_missing_objects"] = holes
            if fill is not None and first.dtype.kind in "iu":
                attrs["_FillValue"] = first.dtype.type(fill)
        encoding: dict[str, Any] = {
            # what the writer needs to turn this variable back into messages
            "tensogram_message_keys": {d: sources[d] for d in stack_dims},
            "tensogram_scalar_keys": {k: v for k, v in (("time", "mars.date+mars.time"), ("step", MARS_STEP_KEY))
                                      if k not in stack_dims and (v == MARS_STEP_KEY and v in first.keys
                                                                  or v != MARS_STEP_KEY and "mars.date" in first.keys)},
            "tensogram_name_key": first.name_key or "name",
            "tensogram_cf_attrs": lifted,
        }
        if attr_paths:
            encoding["tensogram_attr_paths"] = attr_paths
        if grib.GRIB_LEVEL_SOURCE in sources.values() and "mars.levelist" in first.keys:
            encoding["tensogram_grib_levelist"] = True
        variables[vname] = lazy_variable(stack_dims + inner, spec, attrs, encoding)
        for d in stack_dims:
            cv = _coord_variable(d, sources[d], dim_values[d])
            existing = coords_out.get(d)
            if existing is not None and not existing.equals(cv):
                raise HypercubeError(
                    f"variables disagree on the values of dimension {d!r}; open them separately with "
                    f"filter_by_keys={{'{variable_key or 'name'}': ...}}"
                )
            coords_out[d] = cv
        _scalar_mars_coords(first, stack_dims, coords_out)
        if first.is_grib:
            _scalar_grib_level(first, stack_dims, coords_out)
            _scalar_grib_number(first, stack_dims, coords_out, no_scalar_number)
    # MARS valid_time = time + step
    _add_valid_time(coords_out)
    for cname, (c, dims) in coord_vars.items():  # type: ignore[misc]
        if not c.shape:
            dims = []
        elif dims is None:
            dims = _match_2d_dims(c.shape, variables) or generic_dim_names(c.shape, taken)
        clifted: list[str] = []
        cattrs = _lift_cf(flatten_attrs({k: v for k, v in c.raw_entry.items() if k not in ("_reserved_", "dim_names", "name")}),
                          clifted)
        coords_out.setdefault(cname, lazy_variable(dims, c.spec(), cattrs, {"tensogram_cf_attrs": clifted}))
    ds = xr.Dataset(variables, coords=coords_out)
    ds.attrs = flatten_attrs({k: v for k, v in extra.items() if k != "dim_names"})
    ds.attrs["tensogram_wire_version"] = 3
    return ds


def _nonconstant_keys(objs: Sequence[_Object]) -> set[str]:
    """Flattened keys whose values differ (or are missing) across a variable's objects."""
    first = set(objs[0].keys.items())  # values are hashable (see _flat_keys): set algebra runs in C
    out: set[str] = set()
    for o in objs[1:]:
        out.update(k for k, _ in first.symmetric_difference(o.keys.items()))
    return out


def _derived(dims: Sequence[str], values: np.ndarray | np.generic, attrs: Mapping[str, Any]) -> xr.Variable:
    """A coordinate computed from metadata (GRIB grid or level): the writer does not write it as an object."""
    var = xr.Variable(tuple(dims), values, dict(attrs))
    var.encoding = {"tensogram_derived": True}
    return var


def _check_same(name: str, new: xr.Variable, coords_out: dict[str, xr.Variable]) -> None:
    existing = coords_out.get(name)
    if existing is None:
        coords_out[name] = new
    elif existing.dims != new.dims or not np.array_equal(existing.values, new.values):
        raise HypercubeError(
            f"GRIB fields disagree on coordinate {name!r} (different grids or levels in one group); "
            f"open them separately with filter_by_keys={{'mars.grid': ...}} or {{'mars.area': ...}}"
        )


def _grib_grid(o: _Object, dim_names: Any, coords_out: dict[str, xr.Variable]) -> list[str] | None:
    """GRIB hook: grid dims (latitude/longitude or values) and their coordinates, unless dims were asked for."""
    if dim_names is not None:
        return None
    grid = grib.grid_coordinates(o.keys, o.shape)
    if grid is None:
        return None
    for name, (dims, values, attrs) in grid.coords.items():
        _check_same(name, _derived(dims, values, attrs), coords_out)
    return grid.dims


def _scalar_grib_level(o: _Object, stack_dims: list[str], coords_out: dict[str, xr.Variable]) -> None:
    """GRIB hook: a constant level is a scalar coordinate named after typeOfLevel, as in cfgrib."""
    info = o.level
    if info is None or info.name in stack_dims:
        return
    _check_same(info.name, _derived((), np.float64(info.value), grib.level_coordinate_attrs(info.name)), coords_out)


def _scalar_grib_number(o: _Object, stack_dims: list[str], coords_out: dict[str, xr.Variable],
                        disagree: set[str]) -> None:
    """GRIB hook: a constant ensemble member is a scalar ``number`` coordinate, as in cfgrib; when variables
    have different members it stays an attribute (``mars.number``) of each."""
    value = o.keys.get("mars.number")
    if "number" in stack_dims or "number" in disagree or not isinstance(value, int) or isinstance(value, bool):
        return
    new = _derived((), np.int64(value), NUMBER_ATTRS)
    existing = coords_out.get("number")
    if existing is None:
        coords_out["number"] = new
    elif existing.ndim == 0 and existing.encoding.get("tensogram_derived") and existing.values != new.values:
        del coords_out["number"]
        disagree.add("number")


def _match_2d_dims(shape: tuple[int, ...], variables: Mapping[str, xr.Variable]) -> list[str] | None:
    for v in variables.values():
        if v.ndim >= len(shape) and tuple(v.shape[-len(shape):]) == shape:
            return list(v.dims[-len(shape):])
    return None


def _scalar_mars_coords(o: _Object, stack_dims: list[str], coords_out: dict[str, xr.Variable]) -> None:
    if "time" not in stack_dims and "time" not in coords_out and "mars.date" in o.keys:
        secs = mars_datetime_seconds(o.keys.get("mars.date"), o.keys.get("mars.time", 0))
        if secs is not None:
            coords_out["time"] = xr.Variable((), np.int64(secs), {"standard_name": "forecast_reference_time",
                                                                 "units": TIME_UNITS, "calendar": "proleptic_gregorian"})
    if "step" not in stack_dims and "step" not in coords_out and MARS_STEP_KEY in o.keys:
        h = step_hours(o.keys.get(MARS_STEP_KEY))
        if h is not None:
            val = np.int64(h) if float(h).is_integer() else np.float64(h)
            coords_out["step"] = xr.Variable((), val, {"standard_name": "forecast_period", "units": STEP_UNITS})


def _add_valid_time(coords: dict[str, xr.Variable]) -> None:
    t, s = coords.get("time"), coords.get("step")
    if t is None or s is None or t.attrs.get("units") != TIME_UNITS or s.attrs.get("units") != STEP_UNITS:
        return
    tv = t.values.astype(np.int64)
    sv = np.round(s.values.astype(np.float64) * 3600).astype(np.int64)
    if t.ndim and s.ndim:
        values, dims = tv[:, None] + sv[None, :], (t.dims[0], s.dims[0])
    elif s.ndim:
        values, dims = tv + sv, s.dims
    elif t.ndim:
        values, dims = tv + sv, t.dims
    else:
        values, dims = np.int64(tv + sv), ()
    coords["valid_time"] = xr.Variable(dims, values, {"standard_name": "time", "long_name": "time",
                                                       "units": TIME_UNITS, "calendar": "proleptic_gregorian"})


def tensogram_groups(tfile: Any, *, variable_key: str | None = None, dim_names: Any = None,
                     filter_by_keys: Mapping[str, Any] | None = None, verify_hash: bool = False,
                     drop_variables: Iterable[str] = ()) -> dict[str, xr.Dataset]:
    """All compatible groups of a Tensogram file as raw (CF-encoded) Datasets, keyed by group name."""
    objects, extra = _collect(tfile, variable_key, filter_by_keys, verify_hash)
    drop = frozenset(drop_variables)
    referenced = _coordinate_names(objects)
    coords = [o for o in objects if _is_coordinate(o, referenced)]
    data = [o for o in objects if not _is_coordinate(o, referenced) and o.selected]
    if not data:
        return {"/": _build_group([], coords, extra, dim_names=dim_names, variable_key=variable_key, drop_variables=drop)}
    groups = _group_objects(data)
    out = {}
    for label, objs in groups.items():
        out[label] = _build_group(objs, coords, extra, dim_names=dim_names, variable_key=variable_key,
                                  drop_variables=drop)
    if len(out) == 1:
        return {"/": next(iter(out.values()))}
    return out
