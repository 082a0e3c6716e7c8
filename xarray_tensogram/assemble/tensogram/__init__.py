"""Tensogram messages -> raw groups, in five stages (DESIGN.md "Mapping conventions"):

1. :mod:`.collect` — the objects of the selected messages with their metadata;
2. :mod:`.naming` — variable names, and which objects are coordinates;
3. :mod:`.dims` — the names of each variable's own axes;
4. :mod:`.hypercube` — objects stacked along independent metadata keys;
5. :mod:`.build` — the Dataset (or one per group, for real conflicts only).

Producers' layouts plug in through :mod:`xarray_tensogram.producers.interface` (registered in ``producers/``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...dim_names import check_dim_names
from ...errors import GroupSelectionError, HypercubeError, TensogramMappingWarning, XarrayTensogramError
from ...outer import read_outer
from ...producers.interface import Producer, derived
from ...raw_variables import RawGroup, RawVariable, array_variable, flatten_attrs
from ..written_layout import restore_written_layout
from .build import CoordObject, add_same, build_group
from .collect import TgObject, apply_filter, collect_objects, select_messages, warn
from .dims import AxisNames, claimed, consistent_hint, distinct_hints, parse_file_hint, parse_object_hint, resolve_axes
from .hypercube import plan_hypercube
from .naming import NAME_KEYS, name_objects

__all__ = ["NAME_KEYS", "TensogramMappingWarning", "tensogram_groups"]


def _where(o: TgObject) -> str:
    return f"message {o.msg} object {o.obj} ({o.name!r})"


def _same_values(a: TgObject, b: TgObject) -> bool:
    """Whether two objects of one (name, shape) hold the same values."""
    if a.dtype != b.dtype:
        return False
    if a.frame_hash is not None and b.frame_hash is not None and a.frame_hash == b.frame_hash:
        return True
    if a.remote_frame is not None and a.remote_frame == b.remote_frame and a.entry == b.entry:
        # remote file: frames of the same length with the same metadata are taken as the same coordinate
        # (comparing values would cost two requests per message; local files are always compared)
        return True
    whole = (slice(None),) * len(a.shape)
    return bool(
        np.array_equal(read_outer(a.spec(), whole), read_outer(b.spec(), whole), equal_nan=a.dtype.kind in "fc")
    )


def unique_coordinates(objs: Sequence[TgObject]) -> list[CoordObject]:
    """One coordinate per (name, shape); the same coordinate repeated in several messages must hold the
    same values (compared by frame hash when the file has them, else by value)."""
    seen: dict[tuple[str, tuple[int, ...]], TgObject] = {}
    out: list[CoordObject] = []
    for o in objs:
        first = seen.get((o.name, o.shape))
        if first is not None:
            if not _same_values(first, o):
                raise HypercubeError(
                    f"coordinate {o.name!r} differs between {_where(first)} and {_where(o)}; open the messages "
                    f"separately with message_index=... (or filter_by_keys=...)"
                )
            continue
        seen[(o.name, o.shape)] = o
        dims = list(o.role.dims) if o.role is not None else None
        if o.shape and dims is None:  # its own dim_names, else a 1-D coordinate is its own dim
            hint = parse_object_hint(o.entry.get("dim_names"), len(o.shape), _where(o))
            dims = hint or ([o.name] if len(o.shape) == 1 else None)
        out.append(CoordObject(o, dims))
    return out


def _coord_sizes(coords: Sequence[CoordObject]) -> dict[str, set[int]]:
    sizes: dict[str, set[int]] = {}
    for c in coords:
        if c.dims is not None and len(c.obj.shape) == 1:
            sizes.setdefault(c.dims[0], set()).add(c.obj.shape[0])
    return sizes


def _coords_for(
    coords: Sequence[CoordObject],
    axes: Mapping[str, AxisNames],
    shapes: Mapping[str, tuple[int, ...]],
    only_group: bool,
    sizes: Mapping[str, set[int]],
) -> list[CoordObject]:
    """The coordinates that belong with these variables. A 1-D coordinate no axis uses stays on a
    dimension of its own; an axis named like a coordinate of another size is an error (``sizes``: theirs)."""
    used = claimed(axes, shapes, {})
    out = []
    for c in coords:
        if c.dims is None or len(c.obj.shape) != 1:
            named = c.dims is not None and all(n in used.get(d, ()) for d, n in zip(c.dims, c.obj.shape, strict=True))
            if not c.obj.shape or only_group or named or _fits_trailing(c.obj.shape, shapes):
                out.append(c)
            continue
        d, n = c.dims[0], c.obj.shape[0]
        if d not in used or n in used[d]:  # (no axis uses it: it stays, on a dimension of its own)
            out.append(c)
        elif not used[d] & sizes[d]:
            v = next(v for v, ax in axes.items() if d in ax.names)
            size = shapes[v][axes[v].names.index(d)]
            raise HypercubeError(
                f"variable {v!r} names an axis of size {size} {d!r}, but the coordinate {d!r} in the file has size {n}"
            )
    return out


def _fits_trailing(shape: tuple[int, ...], shapes: Mapping[str, tuple[int, ...]]) -> bool:
    return any(len(s) >= len(shape) and s[-len(shape) :] == shape for s in shapes.values())


def _global_attrs(extra: Mapping[str, Any], varying: set[str]) -> dict[str, Any]:
    attrs = flatten_attrs({k: v for k, v in extra.items() if k != "dim_names"})
    return {k: v for k, v in attrs.items() if k not in varying and not any(k.startswith(p + ".") for p in varying)}


def _guessable_sizes(csizes: Mapping[str, set[int]], shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Coordinate dims that may name an axis of matching size: in a group split by grid, a coordinate
    name with several sizes contributes the size this group's variables have."""
    axis_sizes = {n for s in shapes.values() for n in s}
    fits = {d: sizes & axis_sizes if len(sizes) > 1 else sizes for d, sizes in csizes.items()}
    return {d: next(iter(fit)) for d, fit in fits.items() if len(fit) == 1}


def _producer_grids(by_name: Mapping[str, list[TgObject]], axes: dict[str, AxisNames]) -> dict[str, RawVariable]:
    """Producers' grid dims (latitude/longitude, or values) and coordinates; the axis names replaced in ``axes``."""
    out: dict[str, RawVariable] = {}
    for name, objs in by_name.items():
        first, producer = objs[0], objs[0].producer
        if producer is None or (grid := producer.grid(first.all_keys(), first.shape)) is None:
            continue
        axes[name] = AxisNames(list(grid.dims), [False] * len(grid.dims))
        make = derived if producer.writer_rederives_grid else array_variable
        for cname, (dims, values, attrs) in grid.coords.items():
            add_same(cname, make(dims, values, attrs), out)
    return out


def _object_hints(objects: Sequence[TgObject]) -> list[Any]:
    """The different per-object ``dim_names`` hints of a variable's objects, as lists: found among the tuples
    the objects share before any is made a list (one list per object would be garbage the collector walks)."""
    shared = distinct_hints([o.own_value("dim_names") for o in objects])
    return distinct_hints([list(h) if type(h) is tuple else h for h in shared])


def _dim_hints(
    data: Sequence[TgObject], by_name: Mapping[str, list[TgObject]], file_name: str, only_group: bool
) -> tuple[list[str] | dict[int, str] | None, dict[str, tuple[tuple[int, ...], list[str] | None]]] | None:
    """The dims the messages name (``_extra_.dim_names``) and those each variable's objects name (its shape
    with its ``dim_names``), parsed; None where messages disagree and the group may still be split."""
    file_hints = [o.extra.get("dim_names") for o in data]
    object_hints = {n: _object_hints(v) for n, v in by_name.items()}
    if not only_group and any(len(distinct_hints(h)) > 1 for h in [file_hints, *object_hints.values()]):
        return None
    raw_file_hint = consistent_hint(file_hints, "_extra_.dim_names", repr(file_name))
    file_hint = parse_file_hint(raw_file_hint, [len(v[0].shape) for v in by_name.values()], file_name)
    hints = {}
    for n, v in by_name.items():
        raw = consistent_hint(object_hints[n], f"per-object dim_names of {n!r}", repr(file_name))
        hints[n] = (v[0].shape, parse_object_hint(raw, len(v[0].shape), _where(v[0])))
    return file_hint, hints


def _build_group(
    data: list[TgObject],
    coords: list[CoordObject],
    *,
    dim_names: Any,
    name_keys: set[str],
    strict: bool,
    only_group: bool,
    file_name: str,
    extra: Mapping[str, Any],
) -> RawGroup | None:
    """One group's Dataset, or None when its variables cannot share one (the caller splits them)."""
    by_name: dict[str, list[TgObject]] = {}
    for o in data:
        by_name.setdefault(o.name, []).append(o)
    if any(len({(o.shape, o.dtype) for o in v}) > 1 for v in by_name.values()):
        return None
    shapes = {n: v[0].shape for n, v in by_name.items()}
    parsed = _dim_hints(data, by_name, file_name, only_group)
    if parsed is None:
        return None  # messages that disagree on hints: split by grid first; a group that cannot split warns
    file_hint, hints = parsed
    csizes = _coord_sizes(coords)
    if any(len(s) > 1 for s in csizes.values()) and not only_group:
        return None
    axes, conflicts = resolve_axes(
        hints,
        dim_names,
        file_hint,
        _guessable_sizes(csizes, shapes),
        coord_dims=csizes,
        obj_index={n: v[0].obj for n, v in by_name.items()},
        where=repr(file_name),
        rename_conflicts=only_group,
    )
    if conflicts:
        if only_group:
            raise GroupSelectionError(
                f"{file_name!r}: dimension names used with several sizes: "
                + ", ".join(f"{d!r} ({sorted(s)})" for d, s in conflicts.items())
            )
        return None
    grid_coords = _producer_grids(by_name, axes) if dim_names is None else {}  # asked-for names win
    plan = plan_hypercube(by_name, name_keys, strict=strict)
    mine = _coords_for(coords, axes, shapes, only_group, csizes)
    varying = {k for c in plan.variables.values() for k in c.varying} | set(plan.sources.values())
    return build_group(plan, {n: a.names for n, a in axes.items()}, mine, _global_attrs(extra, varying), grid_coords)


def _grouped(data: list[TgObject], coords: list[CoordObject], **kw: Any) -> dict[str, RawGroup]:
    """``{"/": group}``, or where variables really conflict one group per grid shape (``"/"`` if one is left)."""
    one = _build_group(data, coords, only_group=False, **kw)
    if one is not None:
        return {"/": one}
    built = {label: _build_group(objs, coords, only_group=True, **kw) for label, objs in _shape_groups(data).items()}
    out = {k: v for k, v in built.items() if v is not None}
    return {"/": next(iter(out.values()))} if len(out) == 1 else out


def _shape_groups(data: Sequence[TgObject]) -> dict[str, list[TgObject]]:
    """Fallback for real conflicts: one group per grid shape (and dtype, when a name has several)."""
    by_shape: dict[tuple[int, ...], list[TgObject]] = {}
    for o in data:
        by_shape.setdefault(o.shape, []).append(o)
    groups: dict[str, list[TgObject]] = {}
    for shape, objs in by_shape.items():
        split = len({(o.name, o.dtype) for o in objs}) > len({o.name for o in objs})  # a name with several dtypes
        label = "grid_" + ("x".join(str(s) for s in shape) if shape else "scalar")
        for o in objs:
            groups.setdefault(label + (f"_{o.dtype.name}" if split else ""), []).append(o)
    return dict(sorted(groups.items()))


def _assembling_producer(objects: Sequence[TgObject]) -> Producer | None:
    """The producer of every object, when it builds the Datasets itself (:meth:`Producer.assemble`)."""
    first = next((o.producer for o in objects if o.producer is not None and o.producer.assembles), None)
    if first is None:
        return None
    others = sum(1 for o in objects if o.producer is not first)
    if others:
        warn(
            f"{len(objects) - others} objects follow the {first.label} producer's layout and {others} do not; "
            f"the generic rules apply to all of them (open the messages of each kind with message_index=...)"
        )
        return None
    return first


def _range_threshold(value: Any) -> float:
    """The ``range_threshold`` option as a float, checked: a number from 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise XarrayTensogramError(f"range_threshold must be a number from 0 to 1, got {value!r}")
    return float(value)


def tensogram_groups(
    tfile: Any,
    *,
    verify_hash: bool,
    merge_objects: bool,
    range_threshold: float,
    strict: bool,
    variable_key: str | None = None,
    dim_names: Any = None,
    filter_by_keys: Mapping[str, Any] | None = None,
    drop_variables: Iterable[str] = (),
    message_index: Any = None,
) -> dict[str, RawGroup]:
    """All groups of a Tensogram file as raw (CF-encoded) group records: ``{"/": group}`` unless variables
    really conflict (one name with two shapes or dtypes, one explicit dim name with two sizes). Its keywords
    are the open options Tensogram files take (its format record names it)."""
    fraction = _range_threshold(range_threshold)
    messages = select_messages(len(tfile), message_index, merge_objects)
    objects = collect_objects(tfile, messages, verify_hash=verify_hash, range_threshold=fraction)
    whole = _assembling_producer(objects)
    if whole is not None:  # a layout that says everything builds the Datasets itself
        apply_filter(objects, filter_by_keys, tfile.name)
        groups = whole.assemble(
            objects,
            file_name=tfile.name,
            variable_key=variable_key,
            dim_names=dim_names,
            filter_by_keys=filter_by_keys,
            drop_variables=drop_variables,
        )
        if groups is not None:
            return groups
    name_objects(objects, variable_key)
    apply_filter(objects, filter_by_keys, tfile.name)
    coords = unique_coordinates([o for o in objects if o.is_coord])
    selected = [o for o in objects if not o.is_coord and o.selected]
    check_dim_names(
        dim_names,
        {o.name: len(o.shape) for o in selected},
        tfile.name,
        axes_note=" per object (the dims stacked from messages are named by their metadata keys)",
    )
    drop = frozenset(drop_variables)
    data = [o for o in selected if o.name not in drop]
    coords = [c for c in coords if c.obj.name not in drop]
    name_keys = set(NAME_KEYS) | ({variable_key} if variable_key else set())
    extra = tfile[messages[0]].decoded_metadata().get("_extra_") if messages else None
    extra = extra if isinstance(extra, dict) else {}
    grouped = _grouped(
        data, coords, dim_names=dim_names, name_keys=name_keys, strict=strict, file_name=tfile.name, extra=extra
    )
    out = {k: restore_written_layout(v, extra) for k, v in grouped.items()}
    # the Datasets hold what they need: decoded metadata would only weigh on every garbage collection
    for message in tfile:
        message.release_metadata()
    return out
