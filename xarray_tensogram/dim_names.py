"""Dimension names: the ``dim_names`` open option's one rule, checked by every assembly and read mapping before
anything is built, and generic names (``dim_0``, ``dim_1`` ...) made unique where sizes clash."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import DimensionNameError, describe

__all__ = ["check_dim_names", "check_requested_dims", "generic_dim_names", "requested_dims", "unique_names"]


def unique_names(names: Iterable[str], source: str, what: str, category: type[Warning]) -> list[str]:
    """Make names unique by suffixing ``_1``, ``_2`` ... to repeats, keeping first occurrences; one warning
    (``category``) names every ``what`` (``"tensor"``, ``"dataset"``) of ``source`` renamed."""
    out: dict[str, str] = {}  # unique name -> the name it replaces, in order
    last: dict[str, int] = {}  # name -> the last suffix tried for it
    for n in names:
        cand = n
        while cand in out:
            last[n] = last.get(n, 0) + 1
            cand = f"{n}_{last[n]}"
        out[cand] = n
    renamed = [f"{n!r} -> {cand!r}" for cand, n in out.items() if cand != n]
    if renamed:
        warnings.warn(f"{source!r}: duplicate {what} names renamed: " + ", ".join(renamed), category, stacklevel=3)
    return list(out)


def generic_dim_names(shape: Sequence[int], taken_sizes: dict[str, int]) -> list[str]:
    """``dim_0``, ``dim_1`` ... made unique where the same generic name is already used with another size;
    ``taken_sizes`` (dim names already in the Dataset -> sizes) is updated."""
    names = []
    for axis, size in enumerate(shape):
        base = name = f"dim_{axis}"
        k = 0
        while (name in taken_sizes and taken_sizes[name] != size) or name in names:
            k += 1
            name = f"{base}_{k}"
        taken_sizes[name] = size
        names.append(name)
    return names


def requested_dims(dim_names: Any, var: str, rank: int, *, coordinate: bool = False) -> list[str] | None:
    """The dims ``dim_names`` gives ``var`` (after :func:`check_dim_names`), else None: a list is for every data
    variable (``coordinate`` variables keep their names), a dict for the variables it names."""
    wanted = dim_names.get(var) if isinstance(dim_names, Mapping) else (None if coordinate else dim_names)
    return None if wanted is None or len(wanted) != rank else list(wanted)


def check_requested_dims(
    dims: Sequence[str], var: str, shape: Sequence[int], sizes: Mapping[str, int], source: str | None = None
) -> None:
    """Requested dims must agree with the sizes earlier variables gave the same names."""
    for d, n in zip(dims, shape, strict=True):
        if sizes.get(d, n) != n:
            raise DimensionNameError(
                f"{describe(source)}dim_names {list(dims)} for {var!r} (rank {len(shape)}, shape "
                f"{list(shape)}) conflict with another variable: dimension {d!r} has length {sizes[d]} "
                f"there, {n} here"
            )


def _dim_names_problem(wanted: Sequence[Any], rank: int) -> str | None:
    """What is wrong with a list of dim names for a variable of ``rank`` (None: nothing)."""
    if len(wanted) != rank:
        return f"{_entries(len(wanted))} for {rank} ax{'is' if rank == 1 else 'es'}"
    if not all(isinstance(d, str) for d in wanted):
        return "names that are not strings"
    if any(d == "" for d in wanted):
        return "an empty name"
    if len(set(wanted)) != len(wanted):
        return "a duplicate name"
    return None


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _check_one(wanted: Any, var: str, rank: int, what: str, source: str | None, axes_note: str) -> None:
    """One list of names for one variable: strings, distinct, not empty, one per axis."""
    if isinstance(wanted, str) or not isinstance(wanted, Sequence):
        raise DimensionNameError(f"{describe(source)}{what} must be a list of dimension names, got {wanted!r}")
    if len(wanted) != rank:
        raise DimensionNameError(
            f"{describe(source)}{what} has {_entries(len(wanted))} {list(wanted)!r}, but variable {var!r} has "
            f"{rank} {'axis' if rank == 1 else 'axes'}{axes_note}: give one name per axis"
            + ("" if what != "dim_names" else ", or a dict {variable: [names]} for variables of other ranks")
        )
    problem = _dim_names_problem(list(wanted), rank)
    if problem:
        raise DimensionNameError(
            f"{describe(source)}{what}: {list(wanted)!r} has {problem} (variable {var!r} has {rank} axes); "
            f"give distinct, non-empty names"
        )


def check_dim_names(
    dim_names: Any,
    data: Mapping[str, int],
    source: str | None = None,
    coords: Mapping[str, int] | None = None,
    axes_note: str = "",
) -> None:
    """The one rule for the ``dim_names`` open option, for every format, checked before anything is built.

    ``data`` and ``coords`` map data and coordinate variables to their stored ranks. A list names the axes
    of every data variable (coordinates keep their names); a dict ``{variable: [names]}`` those it lists.
    Anything else is a :class:`DimensionNameError` naming the file, variable and axes. ``axes_note`` says
    what the stored axes are where a variable has more (Tensogram's dims stacked from messages).
    """
    if dim_names is None:
        return
    coords = coords or {}
    if isinstance(dim_names, Mapping):
        known = {**coords, **data}
        unknown = [k for k in dim_names if k not in known]
        if unknown:
            raise DimensionNameError(
                f"{describe(source)}dim_names names {unknown!r}, which the file does not hold; "
                f"its variables: {', '.join(map(repr, known)) or 'none'}"
            )
        for var, wanted in dim_names.items():
            _check_one(wanted, var, known[var], f"dim_names for {var!r}", source, axes_note)
        return
    if isinstance(dim_names, str) or not isinstance(dim_names, Sequence):
        raise DimensionNameError(
            f"{describe(source)}dim_names must be a list of dimension names or a dict {{variable: [names]}}, "
            f"got {dim_names!r}"
        )
    for var, rank in data.items():
        _check_one(dim_names, var, rank, "dim_names", source, axes_note)
