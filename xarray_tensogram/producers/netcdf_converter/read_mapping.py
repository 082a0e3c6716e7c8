"""Files from ECMWF's netCDF converter open as the original netCDF file does (``specs/tensogram-from-netcdf.md``).

The objects' ``netcdf`` maps say everything the generic stages would guess (name, ``_dims``, attributes with
their netCDF types, global attributes, the unlimited dim), so naming, dim guessing and stacking are skipped:
each netCDF variable becomes one raw variable with the original attributes, and xarray's own CF decoding
then gives what ``xr.open_dataset(original.nc)`` gives. A 1-D variable named after its own dim is the index
coordinate, as in netCDF; no name makes a coordinate.

The three split modes give the same Dataset: a record split's records are stacked along the unlimited dim
(first, as in every classic-model file), its static variables (repeated in every message) kept once. A
``.tgm`` of several conversions opens as ``xr.open_mfdataset`` of the inputs would (concatenated along the
unlimited dim, merged, else one group per input). The ``cf`` map only duplicates the ``netcdf`` map (for a
packed variable it keeps packed-unit ``valid_*`` that no longer apply), so it is not read: the same Dataset
comes out with and without ``--cf``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...array_spec import ArraySpec, stack_specs
from ...dim_names import check_dim_names, requested_dims
from ...errors import MetadataError, TensogramMappingWarning
from ...layout_record import LayoutRecord
from ...raw_variables import RawGroup, RawVariable, lazy_variable
from .concat import concat_specs
from .objects import NcInput, NcObject, NcVariable, as_nc_object, file_dims, group_inputs, same_object, unlimited_dim

__all__ = ["netcdf_groups"]


def _dims(var: NcVariable, unlimited: str | None) -> list[str]:
    """``_dims``, a record variable's unlimited dim first (its place is unrecorded; first in classic-model files)."""
    dims = list(var.first.dims)
    return [unlimited or "record", *dims] if var.first.record is not None else dims


def _check(var: NcVariable, where: str) -> None:
    """``_dims`` must name every axis and a variable's records agree: a damaged file gets an error naming the object."""
    first = var.first.obj
    if len(var.first.dims) != len(first.shape):
        raise MetadataError(
            f"{where}: message {first.msg} object {first.obj} ({var.name!r}): netcdf._dims {var.first.dims} "
            f"names {len(var.first.dims)} dimensions, the object has shape {list(first.shape)}"
        )
    for o in var.objects[1:]:
        if o.record is not None and (o.obj.shape, o.obj.dtype) != (first.shape, first.dtype):
            raise MetadataError(
                f"{where}: variable {var.name!r} has records of shape {list(first.shape)} ({first.dtype}) in "
                f"message {first.msg} and {list(o.obj.shape)} ({o.obj.dtype}) in message {o.obj.msg}; "
                f"open the messages separately with message_index=..."
            )


def _variable(var: NcVariable, inp: NcInput, dims: list[str]) -> RawVariable:
    """The variable's runs along the unlimited dim (a whole object, or records stacked), joined end to end."""
    specs: list[ArraySpec] = []
    for records, group in itertools.groupby(var.objects, key=lambda o: o.record is not None):
        run = list(group)
        if not records:
            specs += [o.obj.spec() for o in run]
            continue
        first = run[0].obj.spec()
        members: dict[int, Any] = {0: first, **{i: o.obj.spec for i, o in enumerate(run[1:], 1)}}
        specs.append(stack_specs((len(run),), members, template=first))
    spec = specs[0] if len(specs) == 1 else concat_specs(specs)
    obj = var.first.obj
    record = LayoutRecord(netcdf={"file": inp.file_map, "cf": isinstance(obj.entry.get("cf"), dict)}, name_key="name")
    # preferred_chunks: one object (1 along the stacked records), set by lazy_variable
    return lazy_variable(
        dims, spec, var.first.attrs, {**record.to_encoding(), **(obj.pipeline() if obj.pipeline else {})}
    )


def _warn_missing_coordinates(inp: NcInput, names: set[str], where: str) -> None:
    """Warn of ``coordinates`` naming variables the file lacks (the converter skips text ones, converter.rs:309-345)."""
    for var in inp.variables.values():
        listed = var.first.attrs.get("coordinates")
        missing = [c for c in listed.split() if c not in names] if isinstance(listed, str) else []
        if missing:
            warnings.warn(
                f"{where}: variable {var.name!r} lists coordinates {missing} that the file does not hold "
                f"(the netCDF converter skips char and string variables); they are left out",
                TensogramMappingWarning,
                stacklevel=6,
            )


def _group(inp: NcInput, dim_names: Any, where: str) -> RawGroup:
    """One input's raw group: index coordinates as coordinates, every other variable as data, in the file's
    order (as xarray's netCDF readers keep it); xarray's decoding then reads ``coordinates`` attributes."""
    unlimited = inp.unlimited
    variables: dict[str, RawVariable] = {}
    for name, var in inp.variables.items():
        _check(var, where)
        dims = _dims(var, unlimited)
        variables[name] = _variable(var, inp, requested_dims(dim_names, name, len(dims)) or dims)
    _warn_missing_coordinates(inp, set(inp.variables), where)
    group = RawGroup.of(variables, {}, inp.global_attrs)
    if unlimited is not None and unlimited in group.sizes():
        group.encoding["unlimited_dims"] = {unlimited}  # as xarray's netCDF backends record it
    return group


# -- several converted files in one .tgm: open_mfdataset's combine ------------------------------------
def _same_attrs(a: NcVariable, b: NcVariable) -> bool:
    x, y = a.first.attrs, b.first.attrs
    pairs = ((np.asarray(x[k]), np.asarray(y[k])) for k in x)  # NaN equal to NaN
    return x.keys() == y.keys() and all(
        np.array_equal(p, q, equal_nan=p.dtype.kind == q.dtype.kind == "f") for p, q in pairs
    )


def _registry_without(inp: NcInput, dim: str | None) -> list[tuple[Any, Any, Any]]:
    return [
        (d["name"], None if d["name"] == dim else d.get("len"), d.get("unlimited")) for d in file_dims(inp.file_map)
    ]


def _concat(a: NcInput, b: NcInput) -> NcInput | None:
    """``b`` appended to ``a`` along their unlimited dimension, when both hold the same variables, the
    variables along it have equal attributes and dims, and every other variable has the same values."""
    dim = a.unlimited
    if dim is None or dim != b.unlimited or list(a.variables) != list(b.variables):
        return None
    if _registry_without(a, dim) != _registry_without(b, dim):
        return None
    merged: dict[str, NcVariable] = {}
    for name, va in a.variables.items():
        vb = b.variables[name]
        da, db = _dims(va, dim), _dims(vb, dim)
        if da != db or not _same_attrs(va, vb):
            return None
        if dim in da:
            if da[0] != dim or va.first.obj.dtype != vb.first.obj.dtype:
                return None  # only along the first axis (where every classic-model file has it)
            merged[name] = NcVariable(name, va.objects + vb.objects)
        elif same_object(va.first, vb.first):
            merged[name] = va
        else:
            return None
    length = a.dim_sizes.get(dim, 0) + b.dim_sizes.get(dim, 0)
    registry = [{**d, "len": length} if d["name"] == dim else d for d in file_dims(a.file_map)]
    return NcInput({"dims": registry}, merged, b.last_record)


def _merge(a: NcInput, b: NcInput) -> NcInput | None:
    """``b``'s variables added to ``a``'s when shared dims and variables are equal (``open_mfdataset``'s merge)."""
    sa, sb = a.dim_sizes, b.dim_sizes
    if any(sa[d] != sb[d] for d in sa.keys() & sb.keys()):
        return None
    merged = dict(a.variables)
    for name, vb in b.variables.items():
        va = merged.get(name)
        if va is None:
            merged[name] = vb
        elif (
            _dims(va, a.unlimited) != _dims(vb, b.unlimited)
            or not _same_attrs(va, vb)
            or len(va.objects) != len(vb.objects)
            or not all(same_object(x, y) for x, y in zip(va.objects, vb.objects, strict=True))
        ):
            return None
    registry = {d["name"]: d for d in file_dims(a.file_map)}
    registry.update({d["name"]: d for d in file_dims(b.file_map) if d["name"] not in registry})
    return NcInput({"dims": list(registry.values())}, merged, max(a.last_record, b.last_record))


def _combine(inputs: Sequence[NcInput]) -> list[NcInput]:
    """Inputs folded left into as few Datasets as ``open_mfdataset`` would make of them."""
    out: list[NcInput] = []
    for inp in inputs:
        joined = (_concat(out[-1], inp) or _merge(out[-1], inp)) if out else None
        if joined is None:
            out.append(inp)
        else:
            out[-1] = joined
    return out


def _keep_selected(objects: Sequence[NcObject]) -> list[NcObject]:
    """``filter_by_keys`` keeps what it selects, its dims' coordinates and what its ``coordinates`` attributes name."""
    kept = {o.name for o in objects if o.obj.selected}
    needed = set(kept)
    for o in objects:
        if o.name in kept:
            needed.update(o.dims)
            listed = o.attrs.get("coordinates")
            if isinstance(listed, str):
                needed.update(listed.split())
            if o.record is not None and (unlimited := unlimited_dim(o.nc["_file"])) is not None:
                needed.add(unlimited)
    return [o for o in objects if o.name in needed]


def netcdf_groups(
    objects: Sequence[Any],
    *,
    file_name: str,
    variable_key: str | None = None,
    dim_names: Any = None,
    filter_by_keys: Mapping[str, Any] | None = None,
    drop_variables: Iterable[str] = (),
) -> dict[str, RawGroup]:
    """The raw (CF-encoded) group of a converted file (``objects``: its ``collect.TgObject`` s, filtered):
    ``{"/": group}``, or ``{"input_<i>": group}`` for concatenated conversions that cannot share one Dataset."""
    named = []
    for o in objects:
        value = o.value(variable_key) if variable_key else None
        named.append(as_nc_object(o, None if value is None or isinstance(value, tuple) else str(value)))
    if variable_key and all(n.name == n.obj.entry.get("name") for n in named):
        warnings.warn(
            f"{file_name}: variable_key={variable_key!r}: no object has this key (as text); the names of the "
            f"netCDF variables are used",
            TensogramMappingWarning,
            stacklevel=5,
        )
    if filter_by_keys:  # the objects it keeps are marked ``selected`` (collect.apply_filter)
        named = _keep_selected(named)
    drop = frozenset(drop_variables)
    named = [o for o in named if o.name not in drop]
    inputs = _combine(group_inputs(named))
    ranks = {n: len(_dims(v, inp.unlimited)) for inp in inputs for n, v in inp.variables.items()}
    check_dim_names(dim_names, ranks, file_name)
    built = [_group(inp, dim_names, file_name) for inp in inputs]
    if len(built) <= 1:  # none: every variable dropped
        return {"/": built[0] if built else RawGroup({})}
    return {f"input_{i}": group for i, group in enumerate(built)}
