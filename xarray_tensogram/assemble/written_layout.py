"""Undo what the message split changed, using the layout hint ``to_tensogram`` records in ``_extra_``.

Splitting a Dataset into one message per combination of its message dims loses
three things that the hypercube rules cannot know: the order of each variable's
dims (stacked dims come first on read), the order and attributes of the message
dims' coordinates (read back sorted, from metadata keys) and the coordinates
that live along message dims without being one (e.g. a ``lead`` time along
``time``). The writer records them under ``_extra_["xarray_layout"]``; this
module applies them to the raw (still CF-encoded) Dataset. Anything in the hint
that no longer fits the file (messages appended or filtered away) is ignored,
so a stale hint never makes a file unreadable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..catalog import cast_spec, cast_values, permute_stacked, transpose_spec, with_leading_axis
from ..conventions import DTYPE_KEY, LAYOUT_KEY
from .common import lazy_variable, memory_variable, storage_spec

__all__ = ["DTYPE_KEY", "LAYOUT_KEY", "restore_written_layout"]


def _permutation(current: np.ndarray, wanted: list[Any]) -> list[int] | None:
    """Positions of ``wanted`` values in ``current``, or None when they are not a reordering of it."""
    if len(wanted) != len(current):
        return None
    listed = current.tolist()
    try:
        perm = [listed.index(v) for v in wanted]
    except ValueError:
        return None
    return perm if len(set(perm)) == len(perm) else None


def _reorder(ds: xr.Dataset, coords: Mapping[str, Any]) -> xr.Dataset:
    """Put each message dim's values back in the written order."""
    for name, spec in coords.items():
        match = spec.get("match") if isinstance(spec, Mapping) else None
        if match is None or name not in ds.dims or name not in ds.coords:
            continue
        perm = _permutation(np.asarray(ds[name].values), list(match))
        if perm is not None and perm != list(range(len(perm))):
            ds = _lazy_specs(ds.isel({name: perm}), ds, name, perm)
    return ds


def _lazy_specs(ds: xr.Dataset, before: xr.Dataset, dim: str, perm: list[int]) -> xr.Dataset:
    """Data variables reordered along a stacked dim stay specs (their objects renumbered), not indexed views."""
    for vname, var in before.data_vars.items():
        spec = storage_spec(var.variable) if dim in var.dims else None
        moved = permute_stacked(spec, var.dims.index(dim), perm) if spec is not None else None
        if moved is not None:
            ds = ds.assign({vname: lazy_variable(var.dims, moved, var.attrs, var.encoding)})
    return ds


def _coordinate(spec: Mapping[str, Any], sizes: Mapping[Any, int]) -> xr.Variable | None:
    if "values" not in spec:
        return None  # a dim without coordinate: only its order was recorded
    dims = [str(d) for d in spec.get("dims", ())]
    try:
        values = np.asarray(spec.get("values"), dtype=np.dtype(str(spec.get("dtype"))))
    except (TypeError, ValueError):
        return None
    if len(dims) != values.ndim:
        return None
    if values.shape != tuple(sizes.get(d, n) for d, n in zip(dims, values.shape, strict=True)):
        return None  # (a dim no object has takes its size from the values)
    attrs = dict(spec.get("attrs") or {})
    return memory_variable(dims, values, attrs)


def _recorded_dtypes(ds: xr.Dataset) -> xr.Dataset:
    """Variables that a lossy stage widened to float64 come back in the dtype they were written from."""
    for name in list(ds.variables):
        var = ds.variables[name]
        wanted = var.attrs.get(DTYPE_KEY)
        if wanted is None:
            continue
        attrs = {k: v for k, v in var.attrs.items() if k != DTYPE_KEY}
        try:
            dtype = np.dtype(str(wanted))
        except TypeError:
            continue
        if dtype.kind not in "fiu" or var.dtype.kind != "f":
            continue
        spec = storage_spec(var)
        if spec is not None:  # lazy: the cast is a transform of the spec
            new = lazy_variable(var.dims, cast_spec(spec, dtype), attrs, {**var.encoding, "dtype": dtype})
        else:  # values assembly holds in memory
            new = memory_variable(var.dims, cast_values(np.asarray(var.values), dtype), attrs)
            new.encoding = {**var.encoding, "dtype": dtype}
        ds = ds.assign({name: new}) if name in ds.data_vars else ds.assign_coords({name: new})
    return ds


def _expand_single(ds: xr.Dataset, coords: Mapping[str, Any], dims: Mapping[str, Any]) -> xr.Dataset:
    """A message dim of length 1 did not vary, so the reader made no dim of it: put it back (lazily)."""
    for name, spec in coords.items():
        if not isinstance(spec, Mapping) or len(spec.get("match") or ()) != 1 or name in ds.dims:
            continue
        ds = ds.drop_vars([name], errors="ignore")
        for vname, order in dims.items():
            if vname not in ds.data_vars or not isinstance(order, list) or name not in order:
                continue
            var = ds.variables[vname]
            attrs = {k: v for k, v in var.attrs.items() if k != name}
            spec = storage_spec(var)
            if spec is not None:  # lazy: one more stacked axis of the spec
                new = lazy_variable((name, *var.dims), with_leading_axis(spec), attrs, var.encoding)
            else:  # values in memory (stacked variables are specs, see _lazy_specs)
                new = var.set_dims((name, *var.dims), (1, *var.shape))  # type: ignore[no-untyped-call]  # unannotated in xarray
                new.attrs = attrs
            ds = ds.assign({vname: new})
    return ds


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def restore_written_layout(ds: xr.Dataset, extra: Mapping[str, Any]) -> xr.Dataset:
    """The raw Dataset with the hint of ``extra`` applied (and the hint itself removed from the attrs)."""
    hint = extra.get(LAYOUT_KEY)
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != LAYOUT_KEY and not k.startswith(LAYOUT_KEY + ".")}
    ds = _recorded_dtypes(ds)
    if not isinstance(hint, Mapping):
        return ds
    coords, dims = _mapping(hint.get("coords")), _mapping(hint.get("dims"))
    marked = _timedelta_markers(ds)
    ds = _reorder(ds, coords)
    ds = _expand_single(ds, coords, dims)
    for name, spec in coords.items():
        var = _coordinate(spec, ds.sizes) if isinstance(spec, Mapping) else None
        if var is not None and name in marked and "dtype" not in var.attrs:
            units, marker = marked[name]
            if var.attrs.get("units") == units:
                var.attrs["dtype"] = marker
        if var is not None and spec.get("role") == "data":  # a string data variable kept in metadata
            ds = ds.assign({name: var})
        elif var is not None:
            ds = ds.assign_coords({name: var})
    names = hint.get("coord_names")
    if isinstance(names, list):
        ds = ds.drop_vars([c for c in ds.coords if c not in names])
    for name, order in dims.items():
        if name in ds.data_vars and isinstance(order, list) and set(order) == set(ds[name].dims):
            ds = ds.assign({name: _transposed(ds.variables[name], order)})
    return ds


def _timedelta_markers(ds: xr.Dataset) -> dict[Any, tuple[Any, str]]:
    """(units, ``dtype`` marker) of the assembled coordinates that xarray decodes to timedelta64 (MARS ``step``).

    The hint records a coordinate's attributes as the user had them, without the marker (xarray's decoder
    popped it); a hint coordinate in the same units keeps it, so it still decodes by default.
    """
    out: dict[Any, tuple[Any, str]] = {}
    for name, var in ds.variables.items():
        marker = var.attrs.get("dtype")
        if isinstance(marker, str) and marker.startswith("timedelta64"):
            out[name] = (var.attrs.get("units"), marker)
    return out


def _transposed(var: xr.Variable, order: list[Any]) -> xr.Variable:
    """``var`` with its dims in ``order``: a transform of its spec when it has one."""
    spec = storage_spec(var)
    if spec is None:
        moved: xr.Variable = var.transpose(*order)
        return moved
    axes = [var.dims.index(d) for d in order]
    return lazy_variable(order, transpose_spec(spec, axes), var.attrs, var.encoding)
