"""Helpers shared by the per-format assembly steps: netCDF-safe attrs, dim names, lazy variables."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..catalog import ArraySpec
from ..conventions import ATTR_TYPES_KEY, COORDINATE_ROLE_KEY
from ..errors import DimensionNameError, describe
from .group import RawVariable, memory_variable, storage_spec

__all__ = [
    "STORAGE_SPEC_KEY",
    "array_variable",
    "check_dim_names",
    "check_requested_dims",
    "flatten_attrs",
    "generic_dim_names",
    "lazy_variable",
    "memory_variable",
    "netcdf_safe_value",
    "requested_dims",
    "storage_spec",
    "unique_names",
]

#: the ``encoding`` key under which earlier releases kept a raw variable's :class:`ArraySpec`: the spec now
#: belongs to the lazy array (:func:`storage_spec`), and no variable's ``encoding`` holds this key
STORAGE_SPEC_KEY = "xarray_tensogram_spec"


def netcdf_safe_value(value: Any) -> Any:
    """Convert a metadata value into something netCDF attributes can hold.

    Strings, numbers and homogeneous numeric lists stay as they are; booleans
    become ints; ``None`` becomes an empty string; bytes become hex; anything else
    (mixed lists, nested lists) is serialised as compact JSON.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (str, int, float, np.integer, np.floating)):
        if isinstance(value, int) and not isinstance(value, bool) and not (-(2**63) <= value < 2**64):
            return str(value)
        return value
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, str) for v in value):
            return list(value)
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            if all(isinstance(v, int) for v in value) and all(-(2**63) <= v < 2**63 for v in value):
                return np.asarray(value, dtype=np.int64)
            if all(isinstance(v, (int, float)) for v in value):
                return np.asarray(value, dtype=np.float64)
    return json.dumps(value, default=_json_default, separators=(",", ":"), sort_keys=True)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).hex()
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)


def flatten_attrs(mapping: Mapping[Any, Any], prefix: str = "", max_depth: int = 32) -> dict[str, Any]:
    """Flatten nested maps into dotted keys with netCDF-safe values (``{"mars": {"class": "od"}}`` ->
    ``{"mars.class": "od"}``)."""
    out: dict[str, Any] = {}

    def walk(m: Mapping[Any, Any], pre: str, depth: int) -> None:
        for k, v in m.items():
            key = f"{pre}{k}"
            if isinstance(v, Mapping) and v and depth < max_depth:
                walk(v, key + ".", depth + 1)
            elif isinstance(v, Mapping):
                out[key] = netcdf_safe_value(dict(v)) if v else "{}"
            else:
                out[key] = netcdf_safe_value(v)

    walk(mapping, prefix, 0)
    return out


def unique_names(names: Iterable[str]) -> list[str]:
    """Make names unique by suffixing ``_1``, ``_2`` ... to repeats, keeping first occurrences."""
    seen: dict[str, int] = {}
    taken = set()
    out = []
    for n in names:
        if n not in taken:
            out.append(n)
            taken.add(n)
            seen.setdefault(n, 0)
            continue
        i = seen.get(n, 0)
        while True:
            i += 1
            cand = f"{n}_{i}"
            if cand not in taken:
                break
        seen[n] = i
        out.append(cand)
        taken.add(cand)
    return out


def generic_dim_names(
    shape: Sequence[int], taken_sizes: dict[str, int] | None = None, prefix: str = "dim"
) -> list[str]:
    """``dim_0``, ``dim_1`` ... made unique where the same generic name is already used with another size.

    ``taken_sizes`` maps dim names already in the Dataset to their sizes; it is updated.
    """
    taken_sizes = {} if taken_sizes is None else taken_sizes
    names = []
    for axis, size in enumerate(shape):
        base = f"{prefix}_{axis}"
        name = base
        k = 0
        while (name in taken_sizes and taken_sizes[name] != size) or name in names:
            k += 1
            name = f"{base}_{k}"
        taken_sizes[name] = size
        names.append(name)
    return names


def lazy_variable(
    dims: Sequence[Hashable],
    spec: ArraySpec,
    attrs: Mapping[str, Any] | None = None,
    encoding: Mapping[str, Any] | None = None,
) -> RawVariable:
    """A raw variable read lazily through ``spec``; ``encoding["preferred_chunks"]`` is the spec's chunk.

    The one place the preferred chunk is decided: exactly one storage unit (a Tensogram object, 1 along
    the dims stacked from messages; a Tetration tile; a zTensor tensor, or a row band of a raw one over
    256 MiB), as xarray's zarr and h5netcdf backends do. So ``chunks={}`` gives one Dask chunk per unit,
    chunking along units never warns, and ``chunks="auto"`` lets Dask pick whole multiples of the unit
    near ``array.chunk-size``, each read by one task in one pass (:func:`~xarray_tensogram.outer.read_outer`).
    Nothing here imports Dask.
    """
    dims = tuple(dims)
    enc = dict(encoding) if encoding else {}
    # one unit per axis; a tile may overhang the array (min), an empty axis still has a unit of 1 (max)
    units = zip(dims, spec.chunk_shape, spec.shape, strict=True)
    enc["preferred_chunks"] = {d: max(1, min(c, n)) for d, c, n in units}
    enc.setdefault("dtype", spec.dtype)
    return RawVariable(tuple(str(d) for d in dims), spec, typed_attrs(attrs) if attrs else {}, enc)


def _typed(value: Any, kind: str) -> Any:
    if kind == "py:bytes":
        return bytes.fromhex(value) if isinstance(value, str) else bytes(value)
    if kind.startswith("py:"):
        if isinstance(value, str):
            if kind == "py:str":
                return value
            try:
                value = json.loads(value)
            except ValueError:
                value = float(value)  # "nan", "inf"
        return {"py:int": int, "py:float": float, "py:bool": bool}.get(kind, lambda v: v)(value)
    dtype = np.dtype(kind)
    if isinstance(value, str) and dtype.kind not in "US":
        try:
            value = json.loads(value)
        except ValueError:
            value = float(value)
    array = np.asarray(value, dtype=dtype)
    return array[()] if array.ndim == 0 else array


def typed_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes with the types a writer recorded under :data:`ATTR_TYPES_KEY` given back (the key removed)."""
    out = dict(attrs)
    out.pop(COORDINATE_ROLE_KEY, None)  # a role, applied by the format's assembly
    types = out.pop(ATTR_TYPES_KEY, None)
    if isinstance(types, str):
        with contextlib.suppress(ValueError):
            types = json.loads(types)
    if not isinstance(types, Mapping):
        return out
    for key, kind in types.items():
        if key in out and isinstance(kind, str):
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                out[key] = _typed(out[key], kind)
    return out


def array_variable(dims: Sequence[Hashable], values: Any, attrs: Mapping[str, Any] | None = None) -> RawVariable:
    """A raw variable of values already in memory (coordinates, labels)."""
    return RawVariable(tuple(str(d) for d in dims), np.asarray(values), dict(attrs or {}))


def requested_dims(
    dim_names: Any, var: str, rank: int, source: str | None = None, *, coordinate: bool = False
) -> list[str] | None:
    """The dims ``dim_names`` gives ``var`` (after :func:`check_dim_names`), else None.

    A list is for every data variable (not for ``coordinate`` variables, which keep their names);
    a dict for the variables it names.
    """
    if dim_names is None:
        return None
    wanted = dim_names.get(var) if isinstance(dim_names, Mapping) else (None if coordinate else dim_names)
    if wanted is None or len(wanted) != rank:
        return None
    return list(wanted)


def check_requested_dims(
    dims: Sequence[str], var: str, shape: Sequence[int], sizes: Mapping[str, int], source: str | None = None
) -> None:
    """Requested dims must agree with the sizes earlier variables gave the same names."""
    clash = [(d, sizes[d], n) for d, n in zip(dims, shape, strict=True) if sizes.get(d, n) != n]
    if clash:
        d, had, n = clash[0]
        raise DimensionNameError(
            f"{describe(source)}dim_names {list(dims)} for {var!r} (rank {len(shape)}, shape "
            f"{list(shape)}) conflict with another variable: dimension {d!r} has length {had} "
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

    ``data`` and ``coords`` map the file's data and coordinate variables to their stored ranks. A list
    names the axes of every data variable, so each must have that many axes (coordinates keep their
    names); a dict ``{variable: [names]}`` names the variables it lists, data or coordinate. Anything
    else (a wrong count, a key that is no variable, a duplicate or empty name) is a
    :class:`DimensionNameError` naming the file, the variable, its axes and what to do. ``axes_note``
    says what the stored axes are where a variable has more (Tensogram's dims stacked from messages).
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


def strings_from_payload(spec: Mapping[str, Any]) -> tuple[list[str], np.ndarray]:
    """The dims and values of a string variable a writer kept in metadata (``write.common.string_payload``);
    raises KeyError/TypeError/ValueError when malformed."""
    dims = [str(d) for d in spec["dims"]]
    dtype = np.dtype(str(spec["dtype"]))
    texts = [str(v) for v in spec["values"]]
    items: list[Any] = [t.encode("latin-1") for t in texts] if dtype.kind == "S" else texts
    values = np.array(items, dtype=dtype).reshape(tuple(int(n) for n in spec.get("shape", [len(texts)])))
    if values.ndim != len(dims):
        raise ValueError(f"{len(dims)} dims for values of shape {values.shape}")
    return dims, values


def with_cf_coordinates(attrs: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Dataset attributes with ``names`` added to the CF global ``coordinates`` attribute.

    Writers mark the coordinates no data variable names on the variable itself (formats without a
    place for xarray's global ``coordinates`` attribute); reading them back as that attribute lets
    xarray's own ``decode_coords`` decide their role, so ``decode_coords=False`` shows the attribute
    as it would for a netCDF file.
    """
    out = dict(attrs)
    previous = out.get("coordinates")
    listed = previous.split() if isinstance(previous, str) else []
    listed += [n for n in sorted(names) if n not in listed]
    if listed:
        out["coordinates"] = " ".join(listed)
    return out
