"""Stage 3: the names of each variable's own axes (its tensor dimensions, not the stacked ones).

Priority, per variable: the ``dim_names`` kwarg (checked: a mistake there is an error) > the object's
``dim_names`` entry > the file's ``_extra_.dim_names`` (a list, or a map ``{size: name}`` with sizes as
ints or strings) > a 1-D coordinate of matching size > ``dim_<axis>``. Malformed hints in a file are
ignored with a warning. Generated names whose sizes clash, and hinted names at a size that conflicts,
become object-local, ``obj_<i>_dim_<k>`` as in the reference backend (:func:`resolve_axes`); the user's
names with two sizes are a conflict the caller resolves with groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...dim_names import _dim_names_problem, requested_dims
from .collect import warn

__all__ = ["AxisNames", "consistent_hint", "distinct_hints", "parse_file_hint", "parse_object_hint", "resolve_axes"]


@dataclass
class AxisNames:
    """The resolved names of one variable's axes; ``generic[i]`` is True for a generated name."""

    names: list[str]
    generic: list[bool]


def parse_object_hint(raw: Any, rank: int, where: str) -> list[str] | None:
    """An object's ``dim_names`` entry, or None (with a warning) when it is malformed."""
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)):
        warn(f"{where}: dim_names {raw!r} is not a list of names; ignored")
        return None
    problem = _dim_names_problem(list(raw), rank)
    if problem:
        warn(f"{where}: dim_names {list(raw)!r} has {problem}; ignored")
        return None
    return list(raw)


def parse_file_hint(raw: Any, ranks: Sequence[int], where: str) -> list[str] | dict[int, str] | None:
    """``_extra_.dim_names``: a list (for the variables of its length) or ``{size: name}``."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        try:
            out = {int(k): str(v) for k, v in raw.items()}
        except (TypeError, ValueError):
            warn(f"{where}: _extra_.dim_names {raw!r} maps something that is not a size; ignored")
            return None
        if "" in out.values() or len(set(out.values())) != len(out):
            warn(f"{where}: _extra_.dim_names {raw!r} has an empty or duplicate name; ignored")
            return None
        return out
    if isinstance(raw, list):
        if not any(_dim_names_problem(raw, r) is None for r in ranks):
            warn(f"{where}: _extra_.dim_names {raw!r} fits no variable (ranks {sorted(set(ranks))}); ignored")
            return None
        return [str(x) for x in raw]
    warn(f"{where}: _extra_.dim_names {raw!r} is neither a list nor a map; ignored")
    return None


def _axes_of(
    var: str,
    shape: tuple[int, ...],
    dim_names: Any,
    object_hint: list[str] | None,
    file_hint: list[str] | dict[int, str] | None,
    coord_sizes: Mapping[str, int],
) -> AxisNames:
    rank = len(shape)
    for cand in (
        requested_dims(dim_names, var, rank),
        object_hint,
        file_hint if isinstance(file_hint, list) and len(file_hint) == rank else None,
    ):
        if cand is not None:
            return AxisNames(list(cand), [False] * rank)
    names: list[str] = []
    generic: list[bool] = []
    for axis, size in enumerate(shape):
        name = file_hint.get(size) if isinstance(file_hint, dict) else None
        if name is None:  # the one coordinate of this size not named yet
            matches = [c for c, n in coord_sizes.items() if n == size and c not in names]
            name = matches[0] if len(matches) == 1 else None
        fresh = name if name is not None and name not in names else None
        generic.append(fresh is None)
        names.append(fresh if fresh is not None else f"dim_{axis}")
    return AxisNames(names, generic)


def resolve_axes(
    variables: Mapping[str, tuple[tuple[int, ...], list[str] | None]],
    dim_names: Any,
    file_hint: list[str] | dict[int, str] | None,
    coord_sizes: Mapping[str, int],
    *,
    coord_dims: Mapping[str, set[int]],
    obj_index: Mapping[str, int],
    where: str,
    rename_conflicts: bool,
) -> tuple[dict[str, AxisNames], dict[str, set[int]]]:
    """Axis names of every variable ``{name: (shape, object hint)}``, and the names the user's
    ``dim_names`` claims at several sizes (``{}`` when the variables can share one Dataset).

    One rule for the file's own hints, in every path: a hinted name for a coordinate's (or the user's)
    dimension at another size is wrong in the file, and each such axis gets its object-local name, with one
    warning per name. Hinted names that only disagree among themselves are a conflict of grids: the caller
    splits the variables into groups, and renames them the same way only in a group that cannot be split
    further (``rename_conflicts``). The user's ``dim_names`` are never renamed: their conflicts are errors.
    """
    shapes = {v: shape for v, (shape, _hint) in variables.items()}
    local = _LocalNames(obj_index, shapes)
    out = {v: _axes_of(v, shape, dim_names, hint, file_hint, coord_sizes) for v, (shape, hint) in variables.items()}
    user = {v for v, shape in shapes.items() if requested_dims(dim_names, v, len(shape)) is not None}
    hinted: dict[str, list[tuple[str, int, int]]] = {}  # name -> (variable, axis, size) named by a file hint
    fixed: dict[str, set[int]] = {n: set(s) for n, s in coord_dims.items()}  # sizes a hint must agree with
    for v, axes in out.items():
        for k, (name, gen, size) in enumerate(zip(axes.names, axes.generic, shapes[v], strict=True)):
            if v in user:
                fixed.setdefault(name, set()).add(size)
            elif not gen:
                hinted.setdefault(name, []).append((v, k, size))
    for name, claims in hinted.items():
        sizes = {size for _v, _k, size in claims}
        if (sizes - fixed[name]) if fixed.get(name) else (rename_conflicts and len(sizes) > 1):
            owner = f"coord {name!r}" if name in coord_dims else f"the dim_names argument's {name!r}"
            _rename_hinted(out, name, claims, (owner, fixed.get(name, set())), local, where)
    conflicts = {n: s for n, s in claimed(out, shapes, {}, named_only=True).items() if len(s) > 1}
    _rename_clashing_generic(out, shapes, coord_dims, coord_sizes, local)
    return out, conflicts


def distinct_hints(hints: Sequence[Any]) -> list[Any]:
    """The different ``dim_names`` hints given (absent ones not counted), in order."""
    distinct: list[Any] = []
    for h in hints:
        if h is not None and h not in distinct:
            distinct.append(h)
    return distinct


def consistent_hint(hints: Sequence[Any], what: str, where: str) -> Any:
    """The one ``dim_names`` hint the objects of a variable (or the messages of a file) give, or None with
    a warning when they give several: the file contradicts itself, so its axes get generated names."""
    distinct = distinct_hints(hints)
    if len(distinct) > 1:
        warn(f"{where}: inconsistent {what} between messages ({', '.join(map(repr, distinct[:4]))}); ignored")
        return None
    return distinct[0] if distinct else None


def _sizes(sizes: set[int]) -> str:
    return " or ".join(str(s) for s in sorted(sizes))


def claimed(
    out: Mapping[str, AxisNames],
    shapes: Mapping[str, tuple[int, ...]],
    claims: dict[str, set[int]],
    named_only: bool = False,
) -> dict[str, set[int]]:
    """``claims`` (name -> sizes) plus the size each axis gives its name (``named_only``: no generated names)."""
    for v, axes in out.items():
        for name, gen, size in zip(axes.names, axes.generic, shapes[v], strict=True):
            if not (gen and named_only):
                claims.setdefault(name, set()).add(size)
    return claims


@dataclass
class _LocalNames:
    """``obj_<i>_dim_<k>``: the reference backend's name for axis ``k`` of the variable of object ``i``.

    ``i`` counts objects within a message, so variables of different messages can have the same
    ``i``: a name already given at another size gets a suffix (``obj_0_dim_0_1``) rather than clash.
    """

    obj_index: Mapping[str, int]
    sizes: Mapping[str, tuple[int, ...]]
    given: dict[str, int] = field(default_factory=dict)

    def name(self, var: str, axis: int) -> str:
        size = self.sizes[var][axis]
        base = new = f"obj_{self.obj_index.get(var, 0)}_dim_{axis}"
        k = 0
        while self.given.setdefault(new, size) != size:
            k += 1
            new = f"{base}_{k}"
        return new


def _rename_hinted(
    out: Mapping[str, AxisNames],
    name: str,
    claims: Sequence[tuple[str, int, int]],
    fixed_by: tuple[str, set[int]],
    local: _LocalNames,
    where: str,
) -> None:
    """The hint-conflict rule's action: every axis the file's hints name ``name`` at a size other than
    ``fixed`` (a coordinate's or the user's; all of them when nothing fixes the size) gets its
    object-local name, with one warning naming the axes, their sizes and their new names."""
    owner, fixed = fixed_by
    renamed = [(v, k, size) for v, k, size in claims if size not in fixed]
    for v, k, _size in renamed:
        out[v].names[k], out[v].generic[k] = local.name(v, k), True
    new = [out[v].names[k] for v, k, _size in renamed]
    sizes = {size for _v, _k, size in renamed}
    why = f"which conflicts with {owner} of size {_sizes(fixed)}" if fixed else "which one Dataset cannot hold"
    axes_text = ", ".join(f"{v!r} axis {k} (size {size})" for v, k, size in renamed)
    warn(
        f"{where}: the file's dim_names hints name axes of {'size' if len(sizes) == 1 else 'sizes'} "
        f"{_sizes(sizes)} {name!r} ({axes_text}), {why}; {'that axis is' if len(new) == 1 else 'those axes are'} "
        f"named {', '.join(map(repr, new))} instead"
    )


def _rename_clashing_generic(
    out: Mapping[str, AxisNames],
    shapes: Mapping[str, tuple[int, ...]],
    coords: Mapping[str, set[int]],
    coord_sizes: Mapping[str, int],
    local: _LocalNames,
) -> None:
    """A generated name (``dim_0``) claimed at several sizes, by variables or a coordinate: every such
    axis gets its object-local name (as the reference backend does), unless it has the coordinate's size."""
    claims = {n: set(s) for n, s in coords.items()}
    for n, size in coord_sizes.items():
        claims.setdefault(n, set()).add(size)
    claimed(out, shapes, claims)
    for v, axes in out.items():
        for i, (name, gen, size) in enumerate(zip(axes.names, axes.generic, shapes[v], strict=True)):
            clash = len(claims[name]) > 1 and size not in coords.get(name, set())
            if gen and (clash or name in axes.names[:i]):
                axes.names[i] = local.name(v, i)
