"""Stage 5: turn a plan into the group record of lazy, CF-encoded variables (:class:`~..raw_variables.RawGroup`).

Stacked dimensions get coordinates (MARS time/step CF-encoded as cfgrib users know them, plus ``valid_time``);
dependent keys become coordinates along the dimensions that determine them; constant keys become netCDF-safe
attributes (``cf.*`` lifted). Each variable's ``encoding`` records what the writer needs to write it back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...array_spec import ArraySpec, stack_specs
from ...dim_names import generic_dim_names
from ...errors import HypercubeError
from ...layout_record import MISSING_OBJECTS_ATTR, WIRE_VERSION_ATTR, LayoutRecord
from ...mars import (
    NUMBER_ATTRS,
    PRESSURE_LEVEL_ATTRS,
    STEP_UNITS,
    STEP_UNITS_DTYPE,
    TIME_UNITS,
    mars_datetime_seconds,
    step_hours,
)
from ...params import TABLE_ATTRS, table_attributes
from ...producers.interface import LEVEL_PREFIX, Producer
from ...raw_variables import RawGroup, RawVariable, array_variable, flatten_attrs, lazy_variable
from .collect import MessageMembers, TgObject
from .hypercube import (
    MARS_TIME_KEYS,
    MESSAGE_SOURCE,
    STEP_KEY,
    TIME_SOURCE,
    CubePlan,
    VarCube,
    dim_value,
    key_of,
)

__all__ = ["CoordObject", "build_group"]


@dataclass
class CoordObject:
    """A coordinate object and the dims it goes on (``None``: matched to the data later)."""

    obj: TgObject
    dims: list[str] | None


def lift_cf(attrs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``cf.units`` -> ``units`` etc., so that xarray's CF decoding sees them; and the names lifted."""
    out: dict[str, Any] = {}
    lifted: list[str] = []
    for k, v in attrs.items():
        if k.startswith("cf.") and k.count(".") == 1:
            out[k[3:]] = v
            lifted.append(k[3:])
        else:
            out.setdefault(k, v)
    return out, lifted


def _values_variable(
    dims: Sequence[str], values: Sequence[Any], attrs: dict[str, Any], shape: tuple[int, ...] | None = None
) -> RawVariable:
    """Numbers as a numeric array (NaN for missing), anything else as text ("" for missing)."""
    shape = (len(values),) if shape is None else shape
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        arr = np.asarray(values if len(present) == len(values) else [np.nan if v is None else v for v in values])
    else:
        arr = np.asarray([("" if v is None else str(v)) for v in values], dtype=object)
    return array_variable(tuple(dims), arr.reshape(shape), attrs)


#: CF time coordinates as cfgrib users know them: seconds since the epoch, hours decoded to timedelta64
_TIME = {"units": TIME_UNITS, "calendar": "proleptic_gregorian"}
_STEP = {"units": STEP_UNITS, "dtype": STEP_UNITS_DTYPE}
#: the coordinate of a dim stacked along a known source: the type all its values must have, and its attributes
_STACKED: dict[str, tuple[type, Mapping[str, str]]] = {
    "mars.number": (int, NUMBER_ATTRS),  # as cfgrib
    TIME_SOURCE: (int, {"standard_name": "forecast_reference_time", "long_name": "initial time of forecast", **_TIME}),
    STEP_KEY: (  # hours: whole ones stored as integers
        float,
        {"standard_name": "forecast_period", "long_name": "time since forecast_reference_time", **_STEP},
    ),
    MESSAGE_SOURCE: (int, {"long_name": "message index in the file"}),
}


def _dim_coordinate(dim: str, source: str, values: list[Any], first: TgObject) -> RawVariable:
    """The coordinate of a stacked dim; ``first``: the first object of a variable stacked along it."""
    attrs = first.producer.dim_attrs(dim, source, first.all_keys()) if first.producer is not None else None
    if attrs is None and source == "mars.levelist" and first.value("mars.levtype") == "pl":
        attrs = dict(PRESSURE_LEVEL_ATTRS)
    if source.startswith(LEVEL_PREFIX):
        return array_variable((dim,), np.asarray(values, dtype=np.float64), attrs or {})
    if attrs is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return array_variable((dim,), np.asarray(values), attrs)
    kind, known = _STACKED.get(source, (type(None), None))
    if known is not None and all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        arr = np.asarray(values, dtype=np.float64 if kind is float else np.int64)
        whole = bool(np.all(arr == np.round(arr)))
        return array_variable((dim,), arr.astype(np.int64) if whole else arr, dict(known))
    return _values_variable((dim,), values, {"long_name": source})


def _dependent_coordinate(
    cube: VarCube, key: str, dims: Sequence[str], plan: CubePlan, dim_of: Mapping[str, str]
) -> RawVariable:
    """Values of a dependent key along the (source) dims that determine it; missing cells are empty."""
    names = [dim_of[s] for s in dims]
    shape = tuple(len(plan.values[d]) for d in names)
    position = {d: {v: i for i, v in enumerate(plan.values[d])} for d in names}
    cells: list[Any] = [None] * math.prod(shape)  # bounded: at most the variable's planned cells
    for o in cube.objects:
        flat = 0
        for s, d, n in zip(dims, names, shape, strict=True):
            flat = flat * n + position[d][key_of(dim_value(o, s, plan.dup_names))]
        cells[flat] = o.value(key)
    return _values_variable(names, cells, {"long_name": key}, shape)


def _fill_value(first: TgObject, holes: int) -> Any:
    """NaN, or for integers a sentinel CF decoding masks (holes are not read as zeros); None without holes."""
    kind = first.dtype.kind if holes else ""
    return np.nan if kind in ("f", "c") else np.iinfo(first.dtype).max if kind in ("i", "u") else None


def _attributes(cube: VarCube, first: TgObject) -> tuple[dict[str, Any], list[str]]:
    attrs = flatten_attrs({k: v for k, v in first.entry.items() if k not in ("_reserved_", "dim_names")})
    drop = {o.name_key for o in cube.objects} | cube.varying | set(MARS_TIME_KEYS) | {STEP_KEY}
    return lift_cf(
        {k: v for k, v in attrs.items() if k not in drop and not any(k.startswith(p + ".") for p in cube.varying)}
    )


def _add_table_attributes(first: TgObject, attrs: dict[str, Any], record: LayoutRecord) -> None:
    """units, long_name, standard_name of a known parameter (``params.py``) where missing: the file's own win."""
    if all(k in attrs for k in TABLE_ATTRS):
        return
    added = {k: v for k, v in table_attributes(first.all_keys()).items() if k not in attrs}
    if added:
        attrs.update(added)
        record.table_attrs = added  # not the file's: the writer leaves them out


#: the scalar coordinates a variable not stacked along them has: dim -> (source, the key an object needs)
_SCALAR_SOURCES = {"time": (TIME_SOURCE, "mars.date"), "step": (STEP_KEY, STEP_KEY)}


def _stacked_spec(cube: VarCube, fill: Any) -> ArraySpec:
    """The variable's values: its one object's, or its objects' stacked along the cube's dims."""
    if not cube.dims:
        return cube.members[0].spec()
    # members are built on first read (all share the template's shape, dtype and chunks: one group)
    members = MessageMembers.of(cube.members) or {flat: o.spec for flat, o in cube.members.items()}
    return stack_specs(cube.shape, members, fill_value=fill, template=cube.objects[0].spec())


def _variable(cube: VarCube, inner: list[str], dim_of: Mapping[str, str], dependent: dict[str, str]) -> RawVariable:
    first = cube.objects[0]
    stack = [dim_of[s] for s in cube.dims]
    holes = math.prod(cube.shape) - len(cube.members)
    fill = _fill_value(first, holes)
    attrs, lifted = _attributes(cube, first)
    if holes:
        attrs[MISSING_OBJECTS_ATTR] = holes
        if fill is not None and first.dtype.kind in "iu":
            attrs["_FillValue"] = first.dtype.type(fill)
    scalar = {dim: s for dim, (s, key) in _SCALAR_SOURCES.items() if s not in cube.dims and key in first.keys}
    record = LayoutRecord(  # what the writer needs to turn this variable back into messages
        message_keys={
            dim_of[s]: first.producer.level_source if s.startswith(LEVEL_PREFIX) and first.producer else s
            for s in cube.dims
            if not s.startswith("tensogram.")
        },
        scalar_keys=scalar,
        dependent_keys=dependent,
        name_key=first.name_key or "name",
        cf_attrs=lifted,
    )
    if first.producer is not None:
        attrs = first.producer.attributes(first.all_keys(), attrs, record, cube.dims)
    _add_table_attributes(first, attrs, record)
    encoding = {**record.to_encoding(), **(first.pipeline() if first.pipeline else {})}
    # preferred_chunks: one object (1 along the stacked dims), set by lazy_variable
    return lazy_variable(stack + inner, _stacked_spec(cube, fill), attrs, encoding)


def _scalar_mars_coords(o: TgObject, stack_dims: list[str], coords: dict[str, RawVariable]) -> None:
    if "time" not in stack_dims and "time" not in coords and "mars.date" in o.keys:
        secs = mars_datetime_seconds(o.keys.get("mars.date"), o.keys.get("mars.time", 0))
        if secs is not None:
            coords["time"] = array_variable((), np.int64(secs), {"standard_name": "forecast_reference_time", **_TIME})
    if "step" not in stack_dims and "step" not in coords and STEP_KEY in o.keys:
        h = step_hours(o.keys.get(STEP_KEY))
        if h is not None:
            val = np.int64(h) if float(h).is_integer() else np.float64(h)
            coords["step"] = array_variable((), val, {"standard_name": "forecast_period", **_STEP})


def _add_valid_time(coords: dict[str, RawVariable]) -> None:
    t, s = coords.get("time"), coords.get("step")
    if t is None or s is None or t.attrs.get("units") != TIME_UNITS or s.attrs.get("units") != STEP_UNITS:
        return
    seconds = np.add.outer(t.values.astype(np.int64), np.round(s.values.astype(np.float64) * 3600).astype(np.int64))
    attrs = {"standard_name": "time", "long_name": "time", **_TIME}
    coords["valid_time"] = array_variable(t.dims + s.dims, seconds, attrs)  # along time, step, both or none


def _match_trailing(shape: tuple[int, ...], variables: Mapping[str, RawVariable]) -> list[str] | None:
    for v in variables.values():
        if v.ndim >= len(shape) and tuple(v.shape[-len(shape) :]) == shape:
            return [str(d) for d in v.dims[-len(shape) :]]
    return None


def _coordinate_variables(
    coords: Sequence[CoordObject], variables: Mapping[str, RawVariable], out: dict[str, RawVariable]
) -> None:
    taken = {str(d): n for v in variables.values() for d, n in zip(v.dims, v.shape, strict=True)}
    for c in coords:
        o = c.obj
        dims = [] if not o.shape else c.dims or _match_trailing(o.shape, variables) or generic_dim_names(o.shape, taken)
        attrs, lifted = lift_cf(
            flatten_attrs({k: v for k, v in o.entry.items() if k not in ("_reserved_", "dim_names", "name")})
        )
        if o.role is not None:
            attrs = {**o.role.attrs, **attrs}  # the producer's attributes, the file's over them
        out.setdefault(o.name, lazy_variable(dims, o.spec(), attrs, LayoutRecord(cf_attrs=lifted).to_encoding()))


def add_same(name: str, new: RawVariable, out: dict[str, RawVariable]) -> None:
    existing = out.get(name)
    if existing is None:
        out[name] = new
    elif existing.dims != new.dims or not np.array_equal(existing.values, new.values):
        raise HypercubeError(
            f"fields disagree on coordinate {name!r} (different grids or levels in one group); "
            f"open them separately with filter_by_keys={{'mars.grid': ...}} or {{'mars.area': ...}}"
        )


def _producer_scalars(
    o: TgObject, producer: Producer, stack: list[str], scalars: dict[str, RawVariable], disagree: set[str]
) -> None:
    """The scalar coordinates a producer gives a variable: kept while every variable agrees on the value;
    where two differ the coordinate is dropped, and each variable's attributes hold its own value."""
    for name, new in producer.scalar_coordinates(o.all_keys(), o.level, stack).items():
        if name in disagree:
            continue
        existing = scalars.setdefault(name, new)
        if existing is not new and not np.array_equal(existing.values, new.values):
            del scalars[name]
            disagree.add(name)


def build_group(
    plan: CubePlan,
    axes: Mapping[str, list[str]],
    coords: Sequence[CoordObject],
    global_attrs: Mapping[str, Any],
    grid_coords: Mapping[str, RawVariable],
) -> RawGroup:
    """The raw (CF-encoded) variables of one group."""
    dim_of = {s: d for d, s in plan.sources.items()}
    variables: dict[str, RawVariable] = {}
    out: dict[str, RawVariable] = dict(grid_coords)
    disagree: set[str] = set()
    scalars: dict[str, RawVariable] = {}
    for vname, cube in plan.variables.items():
        stack = [dim_of[s] for s in cube.dims]
        for d in stack:
            if d not in out:
                out[d] = _dim_coordinate(d, plan.sources[d], plan.values[d], cube.objects[0])
        dependent: dict[str, str] = {}  # the writer puts these keys back into each object's metadata
        for key, dets in cube.dependent.items():
            cv = _dependent_coordinate(cube, key, dets, plan, dim_of)
            name = key if key not in out or out[key].equals(cv) else f"{vname}.{key}"
            out[name] = cv
            dependent[name] = key
        variables[vname] = _variable(cube, axes[vname], dim_of, dependent)
        _scalar_mars_coords(cube.objects[0], stack, out)
        producer = cube.objects[0].producer
        if producer is not None:
            _producer_scalars(cube.objects[0], producer, stack, scalars, disagree)
    # a name that is some variable's dim (t on 850/600 hPa beside q at 150 hPa) is no scalar coordinate
    dims = {d for v in variables.values() for d in v.dims}
    out.update({name: var for name, var in scalars.items() if name not in dims and name not in out})
    _add_valid_time(out)
    _coordinate_variables(coords, variables, out)
    return RawGroup.of(variables, out, {**global_attrs, WIRE_VERSION_ATTR: 3})
