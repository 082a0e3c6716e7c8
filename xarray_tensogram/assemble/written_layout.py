"""Undo what the message split changed, using the layout hint ``to_tensogram`` records in ``_extra_``.

Splitting a Dataset into one message per combination of its message dims loses what the hypercube rules
cannot know: the order of each variable's dims (stacked dims come first on read), the order and attributes
of the message dims' coordinates (read back sorted, from metadata keys) and the coordinates along message
dims that are none of them (a ``lead`` time along ``time``). The writer records them under
``_extra_["xarray_layout"]``; this module applies them to the raw (still CF-encoded) group. What no longer
fits the file (messages appended or filtered away) is ignored: a stale hint never makes a file unreadable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..array_spec import cast_spec, cast_values, permute_stacked, transpose_spec, with_leading_axis
from ..conventions import DTYPE_KEY, LAYOUT_KEY
from ..raw_variables import RawGroup, RawVariable, array_variable, lazy_variable

__all__ = ["DTYPE_KEY", "LAYOUT_KEY", "restore_written_layout"]


def _permutation(current: np.ndarray, wanted: list[Any]) -> list[int] | None:
    """Positions of ``wanted`` values in ``current``, or None when they are not a reordering of it."""
    listed = current.tolist()
    perm = [listed.index(v) for v in wanted if v in listed]
    return perm if len(perm) == len(wanted) == len(listed) == len(set(perm)) else None


def _reorder(group: RawGroup, coords: Mapping[str, Any]) -> None:
    """Put each message dim's values back in the written order: data variables stay specs (their objects
    renumbered), the others are indexed views."""
    sizes = group.sizes()
    for name, spec in coords.items():
        match = spec.get("match") if isinstance(spec, Mapping) else None
        if match is None or name not in sizes or name not in group.coord_names:
            continue
        perm = _permutation(group.variables[name].values, list(match))
        if perm is None or perm == list(range(len(perm))):
            continue
        for vname, var in list(group.variables.items()):
            if name in var.dims:
                group.put(vname, _permuted(var, name, perm), coordinate=vname in group.coord_names)


def _permuted(var: RawVariable, dim: str, perm: list[int]) -> RawVariable:
    """``var`` reordered along ``dim``: a stack's objects renumbered, else values in memory (a lazy coordinate
    along a stacked dim, which the writer never makes, is read)."""
    axis = var.dims.index(dim)
    moved = permute_stacked(var.spec, axis, perm) if var.spec is not None else None
    if moved is not None:
        return replace(var, data=moved)
    return replace(var, data=np.take(var.values, perm, axis=axis), index=None)


def _coordinate(spec: Mapping[str, Any], sizes: Mapping[Any, int]) -> RawVariable | None:
    if "values" not in spec:
        return None  # a dim without coordinate: only its order was recorded
    dims = [str(d) for d in spec.get("dims", ())]
    try:
        values = np.asarray(spec.get("values"), dtype=np.dtype(str(spec.get("dtype"))))
    except (TypeError, ValueError):
        return None
    # a dim no object has takes its size from the values
    fitting = tuple(sizes.get(d, n) for d, n in zip(dims, values.shape, strict=False))
    if len(dims) != values.ndim or values.shape != fitting:
        return None
    return array_variable(dims, values, dict(spec.get("attrs") or {}))


def _recorded_dtypes(group: RawGroup) -> None:
    """Variables that a lossy stage widened to float64 come back in the dtype they were written from."""
    for name, var in list(group.variables.items()):
        try:
            dtype = np.dtype(str(var.attrs[DTYPE_KEY]))
        except (KeyError, TypeError):
            continue
        if dtype.kind not in "fiu" or var.dtype.kind != "f":
            continue
        attrs = {k: v for k, v in var.attrs.items() if k != DTYPE_KEY}
        # lazy: the cast is a transform of the spec; else values assembly holds in memory
        data = cast_spec(var.spec, dtype) if var.spec is not None else cast_values(np.asarray(var.values), dtype)
        new = replace(var, data=data, attrs=attrs, encoding={**var.encoding, "dtype": dtype}, index=None)
        group.put(name, new, coordinate=name in group.coord_names)


def _expand_single(group: RawGroup, coords: Mapping[str, Any], dims: Mapping[str, Any]) -> None:
    """A message dim of length 1 did not vary, so the reader made no dim of it: put it back (lazily)."""
    for name, spec in coords.items():
        if not isinstance(spec, Mapping) or len(spec.get("match") or ()) != 1 or name in group.sizes():
            continue
        group.drop([name])
        for vname, order in dims.items():
            if vname in group.data_names and isinstance(order, list) and name in order:
                group.put(vname, _with_leading_dim(group.variables[vname], name), coordinate=False)


def _with_leading_dim(var: RawVariable, name: str) -> RawVariable:
    attrs = {k: v for k, v in var.attrs.items() if k != name}
    if var.spec is not None:  # lazy: one more stacked axis of the spec
        return lazy_variable((name, *var.dims), with_leading_axis(var.spec), attrs, var.encoding)
    return replace(var, dims=(name, *var.dims), data=var.values[np.newaxis], attrs=attrs, index=None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def restore_written_layout(group: RawGroup, extra: Mapping[str, Any]) -> RawGroup:
    """The raw group with the hint of ``extra`` applied (and the hint itself removed from the attrs)."""
    hint = extra.get(LAYOUT_KEY)
    group.attrs = {k: v for k, v in group.attrs.items() if k != LAYOUT_KEY and not k.startswith(LAYOUT_KEY + ".")}
    _recorded_dtypes(group)
    if not isinstance(hint, Mapping):
        return group
    coords, dims = _mapping(hint.get("coords")), _mapping(hint.get("dims"))
    marked = _timedelta_markers(group.variables)
    _reorder(group, coords)
    _expand_single(group, coords, dims)
    for name, spec in coords.items():
        var = _coordinate(spec, group.sizes()) if isinstance(spec, Mapping) else None
        if var is None:
            continue
        if name in marked and "dtype" not in var.attrs and var.attrs.get("units") == marked[name][0]:
            var.attrs["dtype"] = marked[name][1]
        group.put(name, var, coordinate=spec.get("role") != "data")  # "data": a string variable kept in metadata
    names = hint.get("coord_names")
    if isinstance(names, list):
        group.drop([c for c in group.coord_names if c not in names])
    _written_variables(group, dims, _mapping(hint.get("attrs")))
    return group


def _written_variables(group: RawGroup, dims: Mapping[str, Any], attrs: Mapping[str, Any]) -> None:
    """Data variables get back their dims' order and the attributes the writer had (a key that varied along a
    message dim is constant in a file of one value along it: read alone, it would become an attribute)."""
    for name in group.data_names:
        var, order, kept = group.variables[name], dims.get(name), attrs.get(name)
        if isinstance(order, list) and set(order) == set(var.dims):
            group.put(name, var := _transposed(var, order), coordinate=False)
        if isinstance(kept, list):
            var.attrs = {k: v for k, v in var.attrs.items() if k in kept or k == "coordinates"}


def _timedelta_markers(variables: Mapping[str, RawVariable]) -> dict[Any, tuple[Any, str]]:
    """(units, ``dtype`` marker) of the assembled coordinates that xarray decodes to timedelta64 (MARS ``step``).

    The hint records a coordinate's attributes as the user had them, without the marker (xarray's decoder
    popped it); a hint coordinate in the same units keeps it, so it still decodes by default.
    """
    return {
        name: (var.attrs.get("units"), marker)
        for name, var in variables.items()
        if isinstance(marker := var.attrs.get("dtype"), str) and marker.startswith("timedelta64")
    }


def _transposed(var: RawVariable, order: list[Any]) -> RawVariable:
    """``var`` with its dims in ``order``: a transform of its spec when it has one."""
    axes = [var.dims.index(d) for d in order]
    if var.spec is None:
        return replace(var, dims=tuple(order), data=np.transpose(var.values, axes), index=None)
    return lazy_variable(order, transpose_spec(var.spec, axes), var.attrs, var.encoding)
