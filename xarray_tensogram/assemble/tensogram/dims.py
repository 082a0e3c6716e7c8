"""Stage 3: the names of each variable's own axes (its tensor dimensions, not the stacked ones).

Priority, per variable: the ``dim_names`` kwarg (checked: a mistake there is an error) > the
object's ``dim_names`` entry > the file's ``_extra_.dim_names`` (a list, or a map ``{size: name}``
with sizes as ints or strings) > a 1-D coordinate of matching size > ``dim_<axis>``. Malformed
hints in a file are ignored with a warning. Generated names whose sizes clash are made distinct
(only the clashing axes); an explicit name with two sizes is a conflict the caller resolves with
groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common import _dim_names_problem, requested_dims
from .collect import warn

__all__ = ["AxisNames", "parse_file_hint", "parse_object_hint", "resolve_axes"]


@dataclass
class AxisNames:
    """The resolved names of one variable's axes; ``generic[i]`` is True for a generated name."""

    names: list[str]
    generic: list[bool]


def parse_object_hint(raw: Any, rank: int, where: str) -> list[str] | None:
    """An object's ``dim_names`` entry, or None (with a warning) when it is malformed."""
    if raw is None:
        return None
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
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
        if any(v == "" for v in out.values()) or len(set(out.values())) != len(out):
            warn(f"{where}: _extra_.dim_names {raw!r} has an empty or duplicate name; ignored")
            return None
        return out
    if isinstance(raw, list):
        if not ranks or not any(_dim_names_problem(raw, r) is None for r in ranks):
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
    by_size: dict[int, list[str]] = {}
    for cname, size in coord_sizes.items():
        by_size.setdefault(size, []).append(cname)
    for axis, size in enumerate(shape):
        name = file_hint.get(size) if isinstance(file_hint, dict) else None
        if name is None:
            matches = [c for c in by_size.get(size, []) if c not in names]
            name = matches[0] if len(matches) == 1 else None
        if name is None or name in names:
            names.append(f"dim_{axis}")
            generic.append(True)
        else:
            names.append(name)
            generic.append(False)
    return AxisNames(names, generic)


def resolve_axes(
    variables: Mapping[str, tuple[tuple[int, ...], list[str] | None]],
    dim_names: Any,
    file_hint: list[str] | dict[int, str] | None,
    coord_sizes: Mapping[str, int],
) -> tuple[dict[str, AxisNames], dict[str, set[int]]]:
    """Axis names of every variable ``{name: (shape, object hint)}``, and the explicit names claimed at
    several sizes (``{}`` when the variables can share one Dataset)."""
    out = {v: _axes_of(v, shape, dim_names, hint, file_hint, coord_sizes) for v, (shape, hint) in variables.items()}
    sizes: dict[str, set[int]] = {}
    for v, axes in out.items():
        for name, gen, size in zip(axes.names, axes.generic, variables[v][0], strict=True):
            if not gen:
                sizes.setdefault(name, set()).add(size)
    conflicts = {n: s for n, s in sizes.items() if len(s) > 1}
    _rename_clashing_generic(out, variables, sizes, coord_sizes)
    return out, conflicts


def _rename_clashing_generic(
    out: Mapping[str, AxisNames],
    variables: Mapping[str, tuple[tuple[int, ...], Any]],
    explicit: Mapping[str, set[int]],
    coord_sizes: Mapping[str, int],
) -> None:
    """``dim_0`` used with two sizes: the first size keeps the name, the others get ``dim_0_1`` ..."""
    taken: dict[str, int] = {n: next(iter(s)) for n, s in explicit.items()}
    taken.update(coord_sizes)
    for v, axes in out.items():
        for i, (name, gen) in enumerate(zip(axes.names, axes.generic, strict=True)):
            if not gen:
                continue
            size = variables[v][0][i]
            new, k = name, 0
            while (new in taken and taken[new] != size) or new in axes.names[:i]:
                k += 1
                new = f"{name}_{k}"
            taken.setdefault(new, size)
            axes.names[i] = new
