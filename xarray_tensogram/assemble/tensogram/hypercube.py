"""Stage 4: stack the objects of each variable into a hypercube along independent metadata keys.

Only keys that vary are candidates, in this order: MARS time (``date`` + ``time``), ``step``, ``levelist``,
``number``, the other ``mars`` keys, then any other key (the message's global metadata included); keys the
object's producer says restate others never are. A candidate becomes a dimension only if the variable name
and the dimensions already chosen do not determine it; a dependent key becomes a coordinate along the
dimensions that determine it (an attribute when constant within a variable). Nothing proportional to the
cube's cell count is allocated, and a plan whose cells far exceed the objects is refused. Objects on the
same cell are duplicates: a warning, then a ``message`` dimension separates them (``strict=True`` raises).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...conventions import TGM_COORDINATE_NAMES
from ...errors import HypercubeError
from ...mars import mars_datetime_seconds, step_hours
from ...producers.interface import LEVEL_PREFIX, Producer
from .collect import TgObject, flat_keys, warn

__all__ = [
    "MARS_TIME_KEYS",
    "MESSAGE_SOURCE",
    "STEP_KEY",
    "TIME_SOURCE",
    "CubePlan",
    "VarCube",
    "cell_limit",
    "dim_value",
    "plan_hypercube",
]

TIME_SOURCE = "mars.date+mars.time"
STEP_KEY = "mars.step"
MESSAGE_SOURCE = "tensogram.message"
OBJECT_SOURCE = "tensogram.object"
MARS_TIME_KEYS = ("mars.date", "mars.time")
#: a producer's level is a source of its own (the keys are its producer's), never a key of the metadata
_NEVER_STACKED = ("_reserved_.", LEVEL_PREFIX)
#: keys that describe structure, never stacked nor kept as attributes
STRUCTURAL = frozenset({"dim_names", "coordinates", "cf.coordinates"})
DIM_NAMES = {
    TIME_SOURCE: "time",
    STEP_KEY: "step",
    "mars.levelist": "level",
    "mars.number": "number",
    MESSAGE_SOURCE: "message",
    OBJECT_SOURCE: "object",
}
_COMPUTED_FROM = dict.fromkeys(MARS_TIME_KEYS, TIME_SOURCE)
#: the metadata keys a source's values are computed from (others: the key itself)
_SOURCE_KEYS = {TIME_SOURCE: MARS_TIME_KEYS}
_FIRST = (TIME_SOURCE, STEP_KEY, "mars.levelist", "mars.number")
#: order of the stacked dimensions in a variable, as cfgrib users know it; other keys follow in plan order
_OUTPUT_ORDER = {s: i for i, s in enumerate(("mars.number", TIME_SOURCE, STEP_KEY, "mars.levelist"))}


#: what :func:`_varying_in` finds over a group's objects: the keys that vary, every key in order
_Walked = tuple[set[str], list[str]]


def cell_limit(n_objects: int) -> int:
    """The most cells a plan may have: generous for holes, far below a combinatorial blow-up."""
    return max(4096, 64 * n_objects)


@dataclass
class VarCube:
    """One variable's share of the plan."""

    name: str
    objects: list[TgObject]
    dims: list[str]
    shape: tuple[int, ...]
    members: dict[int, TgObject]  # flat (C order over ``shape``) -> object; absent = hole
    dependent: dict[str, list[str]] = field(default_factory=dict)  # varying key -> dims that determine it
    varying: set[str] = field(default_factory=set)  # keys that vary within the variable


@dataclass
class CubePlan:
    sources: dict[str, str]  # dim -> key
    values: dict[str, list[Any]]  # dim -> sorted distinct values
    variables: dict[str, VarCube]
    dup_names: frozenset[str] = frozenset()  # variables whose duplicates a ``message`` dimension separates


def _forced(source: str) -> bool:
    """Sources that are dimensions of the whole Dataset whatever the variable name says (it cannot hold two
    scalar ``time`` coordinates). Not levels: a variable is stacked along its level only where it has several
    (``q`` at 150 hPa beside ``t`` at 600 hPa stay 2-D)."""
    return source in (TIME_SOURCE, STEP_KEY)


def dim_value(o: TgObject, source: str, dup_names: frozenset[str] = frozenset()) -> Any:
    """The value an object has along a dimension (MARS time in seconds, step in hours)."""
    if source == TIME_SOURCE:
        return _time_value(o.value("mars.date"), o.value("mars.time"))
    if source == STEP_KEY:
        return _step_value(o.value(source))
    if source.startswith(LEVEL_PREFIX):
        return o.level.value if o.level is not None and o.level.name == source[len(LEVEL_PREFIX) :] else None
    if source in (MESSAGE_SOURCE, OBJECT_SOURCE):  # set only for the variables whose duplicates they separate
        return (o.msg if source == MESSAGE_SOURCE else o.obj) if o.name in dup_names else None
    return o.value(source)


def _time_value(date: Any, time: Any) -> Any:
    """MARS date + time as seconds since 1970, else the pair itself (None when neither is there)."""
    secs = mars_datetime_seconds(date, time if time is not None else 0) if date is not None else None
    return secs if secs is not None else (date, time) if (date, time) != (None, None) else None


def _step_value(step: Any) -> Any:
    """MARS step in hours, else the value itself."""
    h = step_hours(step)
    return h if h is not None else step


class _Columns:
    """The objects' values along each key, computed once per key (planning reads each many times): ``raw(k)``
    holds :func:`dim_value` of every object in order, ``keyed(k)`` the same with NaN made comparable. A
    variable's objects are a contiguous span of the rows."""

    def __init__(self, objs: Sequence[TgObject], dup_names: frozenset[str]) -> None:
        self.objs = objs
        self.names = [o.name for o in objs]
        self.raw = raw = functools.cache(functools.partial(_column, objs, dup_names=dup_names))
        # key_of inlined: this runs once per object and key
        self.keyed = functools.cache(lambda key: [("nan",) if type(v) is float and v != v else v for v in raw(key)])


def _column(objs: Sequence[TgObject], source: str, *, dup_names: frozenset[str]) -> list[Any]:
    """:func:`dim_value` of every object, worked out per column where the source is a key or two."""
    if source == TIME_SOURCE:
        return list(map(_time_value, _key_column(objs, "mars.date"), _key_column(objs, "mars.time")))
    if source == STEP_KEY:
        return list(map(_step_value, _key_column(objs, source)))
    if source.startswith(LEVEL_PREFIX) or source in (MESSAGE_SOURCE, OBJECT_SOURCE):
        return [dim_value(o, source, dup_names) for o in objs]
    return _key_column(objs, source)


def _key_column(objs: Sequence[TgObject], key: str) -> list[Any]:
    """``o.value(key)`` of every object (the producer's view asked only where the merged keys lack it)."""
    col = [o.merged.get(key) for o in objs]
    if None in col:
        for i, v in enumerate(col):
            if v is None and objs[i].view is not None:
                col[i] = objs[i].value(key)
    return col


def _candidates(objs: Sequence[TgObject], skip: set[str], cols: _Columns, walked: _Walked) -> list[str]:
    """Keys whose values differ between objects, in the order the module docstring gives."""
    maybe, seen = walked
    producers = {o.producer for o in objs if o.producer is not None}
    levels = list(dict.fromkeys(f"{LEVEL_PREFIX}{o.level.name}" for o in objs if o.level is not None))
    restated = skip | {"mars.levelist"} if levels else skip  # a producer's level restates mars.levelist
    keys = [
        _COMPUTED_FROM.get(k, k)  # MARS date and time make one source
        for k in seen
        if k not in restated
        and not _structural(k)
        and not k.startswith(_NEVER_STACKED)
        and not any(p.restates(k) for p in producers)
    ]
    varying = [k for k in dict.fromkeys(keys + levels) if _varies(k, cols, maybe, bool(producers))]
    first = [k for k in (*_FIRST, *levels) if k in varying]
    return first + sorted((k for k in varying if k not in first), key=lambda k: _rest_order(k, cols))


def _structural(key: str) -> bool:
    """Keys that describe structure: never stacked, nor kept as attributes or dependent coordinates."""
    return key in STRUCTURAL or key.endswith(".dim_names")


def _varies(key: str, cols: _Columns, maybe: set[str], producers: bool) -> bool:
    """Whether a candidate's values differ between objects (``maybe``: the keys not equal in every object,
    tested exactly here). An object without MARS time, step or a level does not make them vary."""
    if not producers and maybe.isdisjoint(_SOURCE_KEYS.get(key, (key,))):
        return False  # the keys it is computed from are the same in every object (no producer's view adds any)
    if _forced(key) or key.startswith(LEVEL_PREFIX):  # no keys of the metadata (but step): not in ``maybe``
        return len({v for v in cols.keyed(key) if v is not None}) > 1
    return key in maybe and len(set(cols.keyed(key))) > 1


def _rest_order(key: str, cols: _Columns) -> tuple[bool, bool, bool]:
    """The other ``mars`` keys first, in the files' order; then (CBOR maps are often sorted, so no meaningful
    order) those named like a coordinate, then numeric ones, so that a text label does not become the dim."""
    if key.startswith("mars."):
        return (False, False, False)
    named = key.rsplit(".", 1)[-1].lower() in TGM_COORDINATE_NAMES
    return (True, not named, not all(map(_numeric, cols.raw(key))))


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def key_of(v: Any) -> Any:
    """A value as the plan indexes it (NaN made comparable)."""
    return ("nan",) if type(v) is float and v != v else v


def _determined(cols: _Columns, rows: range, by: Sequence[str], key: str, with_name: bool) -> bool:
    """Whether ``key``'s value is a function of the name (optionally) and the ``by`` keys, over ``rows``."""
    values = cols.keyed(key)
    parts = ([cols.names] if with_name else []) + [cols.keyed(b) for b in by]
    seen: dict[tuple[Any, ...], Any] = {}
    for i in rows:
        v = values[i]
        if v is None and not with_name:
            continue
        k = tuple(p[i] for p in parts)
        if seen.setdefault(k, v) != v:
            return False
    return True


def _choose(cols: _Columns, candidates: Sequence[str]) -> list[str]:
    chosen: list[str] = []
    rows = range(len(cols.objs))
    for key in candidates:
        # MARS time and step are dimensions of the whole Dataset (one Dataset cannot hold two scalar
        # ``time`` coordinates), so the variable name does not count as determining them
        if not _determined(cols, rows, chosen, key, not _forced(key)):
            chosen.append(key)
    return chosen


def _sorted_unique(values: Iterable[Any]) -> list[Any]:
    distinct = list(dict.fromkeys(key_of(v) for v in values))
    try:
        return sorted(distinct)
    except TypeError:
        return distinct


def _var_dims(cols: _Columns, rows: range, chosen: Sequence[str]) -> list[str]:
    """The chosen keys a variable's rows vary along (MARS time and step: wherever it has them)."""
    seen = ((s, set(map(cols.keyed(s).__getitem__, rows))) for s in chosen)
    return [s for s, values in seen if len(values) > 1 or (_forced(s) and values != {None})]


def _minimal_determinants(cols: _Columns, dims: Sequence[str], key: str) -> list[str]:
    """The smallest subset of ``dims`` (first found, in order) that determines ``key``."""
    rows = range(len(cols.objs))
    for r in range(1, min(len(dims), 6) + 1):
        for subset in itertools.combinations(dims, r):
            if _determined(cols, rows, subset, key, False):
                return list(subset)
    return list(dims)


def _place(
    name: str, objs: list[TgObject], rows: range, dims: list[str], values: Mapping[str, list[Any]], cols: _Columns
) -> tuple[VarCube, list[tuple[TgObject, TgObject]]]:
    shape = tuple(len(values[d]) for d in dims)
    position = [({v: i for i, v in enumerate(values[d])}, cols.keyed(d), n) for d, n in zip(dims, shape, strict=True)]
    members: dict[int, TgObject] = {}
    dups: list[tuple[TgObject, TgObject]] = []
    for o, i in zip(objs, rows, strict=True):
        flat = 0
        for where, keyed, n in position:
            flat = flat * n + where[keyed[i]]
        if flat in members:
            dups.append((members[flat], o))
        else:
            members[flat] = o
    return VarCube(name, objs, dims, shape, members), dups


def _plan(
    by_name: Mapping[str, list[TgObject]],
    skip: set[str],
    extra: Sequence[str],
    dup_names: frozenset[str],
    walked: _Walked,
) -> tuple[list[str], dict[str, list[Any]], dict[str, VarCube], list[tuple[TgObject, TgObject]]]:
    objs = [o for v in by_name.values() for o in v]
    cols = _Columns(objs, dup_names)
    ends = itertools.accumulate(map(len, by_name.values()))
    spans = {n: range(end - len(v), end) for (n, v), end in zip(by_name.items(), ends, strict=True)}
    chosen = _choose(cols, [*_candidates(objs, skip, cols, walked), *extra])
    levelist = "mars.levelist"  # the place of a producer's level
    chosen.sort(key=lambda s: _OUTPUT_ORDER.get(levelist if s.startswith(LEVEL_PREFIX) else s, len(_OUTPUT_ORDER)))
    var_dims = {n: _var_dims(cols, spans[n], chosen) for n in by_name}
    values = {s: _sorted_unique(cols.raw(s)[i] for n in by_name if s in var_dims[n] for i in spans[n]) for s in chosen}
    for s in chosen:
        if s.startswith(LEVEL_PREFIX):  # in the order the producer's users know (cfgrib: decreasing pressure)
            values[s] = _level_producer(objs, s).level_order(s[len(LEVEL_PREFIX) :], values[s])
    cells = sum(math.prod(len(values[d]) for d in dims) for dims in var_dims.values())
    if cells > cell_limit(len(objs)):
        detail = ", ".join(f"{s} ({len(values[s])} values)" for s in chosen)
        raise HypercubeError(
            f"stacking {len(objs)} objects along {detail} would need {cells} cells; these keys do not form a "
            f"hypercube. Open a subset with filter_by_keys={{...}} or message_index=..."
        )
    cubes: dict[str, VarCube] = {}
    dups: list[tuple[TgObject, TgObject]] = []
    for n, v in by_name.items():
        cubes[n], d = _place(n, v, spans[n], var_dims[n], values, cols)
        dups += d
    return chosen, values, cubes, dups


def _level_producer(objs: Sequence[TgObject], source: str) -> Producer:
    """The producer of the first object on a level source (only producers give levels)."""
    name = source[len(LEVEL_PREFIX) :]
    return next(o.producer for o in objs if o.level is not None and o.level.name == name and o.producer is not None)


def _varying_maps(maps: Sequence[Mapping[str, Any]]) -> set[str]:
    """Keys whose value (or presence) differs between flattened maps (NaN counts as equal to NaN)."""
    return _varying_in(maps)[0]


def _varying_in(maps: Sequence[Mapping[str, Any]]) -> _Walked:
    """:func:`_varying_maps`, and every key of the maps in first-seen order (found in the same walk). Maps with
    the same keys (the usual case) are compared column by column, others by a column per key with absences
    marked: either way the per-key work runs in C."""
    if not maps:
        return set(), []
    by_columns = _varying_columns(maps, "")
    if by_columns is not None:  # every map has the first's keys
        return by_columns, list(maps[0])
    keys = list(dict.fromkeys(itertools.chain.from_iterable(maps)))  # different key sets: a column per key
    return _varying_among(maps, keys), keys


def _varying_among(maps: Sequence[Mapping[str, Any]], keys: Iterable[str]) -> set[str]:
    """Those of ``keys`` whose value (or presence) differs between ``maps`` (NaN equal to NaN): a column each."""
    return {k for k in keys if _differs([m.get(k, _ABSENT) for m in maps])} if maps else set()


def _differs(column: list[Any]) -> bool:
    """Whether a column's values are not all equal (NaN equal to NaN)."""
    c0 = column[0]
    return column.count(c0) != len(column) and (type(c0) is not float or c0 == c0 or any(v == v for v in column))


_ABSENT = object()


def _varying_nested(nodes: Sequence[Any], prefix: str) -> set[str]:
    """The dotted keys (under ``prefix``) whose value differs between nested maps, as :func:`_varying_maps`
    finds them in the flattened maps, without flattening (a producer's sections hold some 50 keys per object):
    compared column by column, in C, descending only into maps that differ; different key sets are flattened.
    """
    if all(n is None for n in nodes):
        return set()
    by_columns = _varying_columns(nodes, prefix)
    if by_columns is not None:
        return by_columns
    # different key sets (or not all maps): compare the flattened maps
    return _varying_maps([flat_keys(n, prefix) if isinstance(n, dict) else {} for n in nodes])


def _varying_columns(nodes: Sequence[Any], prefix: str) -> set[str] | None:
    """The varying keys of maps with the same keys, column by column, into nested maps that differ (None: the
    key sets differ, the caller compares another way)."""
    first = nodes[0]
    names = list(first) if type(first) is dict else []
    if len(nodes) < 2 and type(first) is dict:
        return set()
    # same key sets: every map a dict of the first's size that has all of the first's keys
    if not names or set(map(type, nodes)) != {dict} or set(map(len, nodes)) != {len(names)}:
        return None
    try:  # a column per key, each read in one C loop: no tuple per map for the garbage collector to count
        columns = [list(map(operator.itemgetter(name), nodes)) for name in names]
    except KeyError:
        return None
    out: set[str] = set()
    for name, column in zip(names, columns, strict=True):
        if name == "_reserved_" or column.count(column[0]) == len(column):
            continue
        types = set(map(type, column))
        if dict not in types:
            if _differs(column):
                out.add(f"{prefix}{name}")
        elif types == {dict} and all(column):
            out |= _varying_nested(column, f"{prefix}{name}.")
        else:
            out |= _varying_maps([flat_keys({name: v}, prefix) for v in column])
    return out


def _cube_keys(cube: VarCube, overall: set[str], names: frozenset[str], name_keys: set[str]) -> None:
    """Set the keys that vary within one variable (``overall``: those that vary in its group, the only ones
    that can vary here) and, for each that is no dimension, the dimensions that determine it."""
    cube.varying = _varying_among([o.merged for o in cube.objects], overall)
    producer = cube.objects[0].producer
    if producer is not None:
        for section in producer.sections:  # the producer's nested sections are compared nested
            cube.varying |= _varying_nested([o.entry.get(section) for o in cube.objects], section + ".")
        if not producer.dependent_coordinates:
            return
    cols = _Columns(cube.objects, names)
    for k in sorted(cube.varying):
        if (
            k in cube.dims
            or (k in MARS_TIME_KEYS and TIME_SOURCE in cube.dims)
            or k in name_keys
            or _structural(k)
            or (producer is not None and producer.restates(k))
        ):
            continue
        cube.dependent[k] = _minimal_determinants(cols, cube.dims, k)


def plan_hypercube(by_name: Mapping[str, list[TgObject]], name_keys: set[str], *, strict: bool) -> CubePlan:
    """The stacking plan of one group of variables (see the module docstring)."""
    names: frozenset[str] = frozenset()
    walked = _varying_in([o.merged for v in by_name.values() for o in v])  # once: every plan below asks
    chosen, values, cubes, dups = _plan(by_name, name_keys, (), names, walked)
    if dups:
        text = "; ".join(
            f"variable {a.name!r}: message {a.msg} object {a.obj} and message {b.msg} object {b.obj}"
            for a, b in dups[:10]
        ) + (" ..." if len(dups) > 10 else "")
        if strict:
            raise HypercubeError(
                f"duplicate objects (same name and metadata): {text}; select one with filter_by_keys={{...}} on a "
                f"key that tells them apart, or with message_index=..., or pass variable_key= to name them differently"
            )
        warn(f"duplicate objects (same name and metadata), kept along a 'message' dimension: {text}")
        names = frozenset(a.name for a, _b in dups)
        chosen, values, cubes, dups = _plan(by_name, name_keys, (MESSAGE_SOURCE,), names, walked)
        if dups:
            chosen, values, cubes, dups = _plan(by_name, name_keys, (MESSAGE_SOURCE, OBJECT_SOURCE), names, walked)

    for cube in cubes.values():
        _cube_keys(cube, walked[0], names, name_keys)
    sources = {
        DIM_NAMES.get(s, s[len(LEVEL_PREFIX) :] if s.startswith(LEVEL_PREFIX) else s.rsplit(".", 1)[-1]): s
        for s in chosen
    }
    if len(sources) != len(chosen):  # two keys with the same last part: use the full keys
        sources = {s: s for s in chosen}
    return CubePlan(sources, {d: values[s] for d, s in sources.items()}, cubes, names)
