"""The raw variables every assembly hands on, lazy or in memory, and their netCDF-safe attributes.

A raw variable is what a format's assembly (and a producer's read mapping) gives the data store before
xarray's CF decoding: a lazy one wraps an :class:`ArraySpec` in the one lazy array (:func:`lazy_variable`),
a small one holds its values (:func:`memory_variable`); attribute values are made netCDF-safe (nested maps
flattened to dotted keys, typed values restored) so that ``to_netcdf`` of an opened Dataset works.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr
from xarray.core import indexing

from .array import LazyChunkedArray
from .array_spec import ArraySpec
from .conventions import ATTR_TYPES_KEY, COORDINATE_ROLE_KEY

__all__ = [
    "STORAGE_SPEC_KEY",
    "drop_storage_spec",
    "flatten_attrs",
    "lazy_variable",
    "memory_variable",
    "netcdf_safe_value",
    "storage_spec",
]

#: ``encoding`` key under which :func:`lazy_variable` keeps a raw variable's :class:`ArraySpec` for the layers
#: above (read by :func:`storage_spec`; the data store removes it before xarray decodes)
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


@functools.cache
def _whole(ndim: int) -> indexing.BasicIndexer:
    """The key selecting a whole array of ``ndim`` axes, made once per rank: indexers are immutable, and
    making one checks every axis (a quarter of assembling a ``.zt`` of 200 tensors)."""
    return indexing.BasicIndexer((slice(None),) * ndim)


def lazy_variable(
    dims: Sequence[Hashable],
    spec: ArraySpec,
    attrs: Mapping[str, Any] | None = None,
    encoding: Mapping[str, Any] | None = None,
) -> xr.Variable:
    """An ``xr.Variable`` backed by the one lazy array; ``encoding["preferred_chunks"]`` is the spec's chunk.

    The one place the preferred chunk is decided: exactly one storage unit (a Tensogram object, 1 along
    the dims stacked from messages; a Tetration tile; a zTensor tensor, or a row band of a raw one over
    256 MiB), as xarray's zarr and h5netcdf backends do. So ``chunks={}`` gives one Dask chunk per unit,
    chunking along units never warns, and ``chunks="auto"`` lets Dask pick whole multiples of the unit
    near ``array.chunk-size``, each read by one task in one pass (:func:`~xarray_tensogram.outer.read_outer`).
    Nothing here imports Dask.
    """
    dims = tuple(dims)
    enc = dict(encoding) if encoding else {}
    enc[STORAGE_SPEC_KEY] = spec
    # one unit per axis; a tile may overhang the array (min), an empty axis still has a unit of 1 (max)
    units = zip(dims, spec.chunk_shape, spec.shape, strict=True)
    enc["preferred_chunks"] = {d: max(1, min(c, n)) for d, c, n in units}
    enc.setdefault("dtype", spec.dtype)
    data = indexing.LazilyIndexedArray(LazyChunkedArray(spec), _whole(len(dims)))
    # fastpath (as xarray's own CF coders build variables): the lazy array is taken as it is, which is what
    # xarray's checks would conclude for it anyway
    return xr.Variable(dims, data, typed_attrs(attrs) if attrs else {}, enc, fastpath=True)


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


def memory_variable(dims: Sequence[Hashable], values: Any, attrs: Mapping[str, Any] | None = None) -> xr.Variable:
    """An ``xr.Variable`` of values already in memory (coordinates, labels), wrapped the way backends wrap data.

    ``xr.Variable(dims, ndarray)`` asks whether the array is a Dask array, which imports ``dask.array``
    (about 0.6 s, on every first open, Dask wanted or not); xarray's CF decoders rebuild each variable
    from its ``_data`` and would ask again. An indexing adapter around the array is not asked, so an
    open without ``chunks`` never imports Dask.
    """
    data = indexing.NumpyIndexingAdapter(np.asarray(values))  # type: ignore[no-untyped-call]  # unannotated in xarray
    return xr.Variable(tuple(dims), data, dict(attrs or {}))


def storage_spec(var: xr.Variable) -> ArraySpec | None:
    """The :class:`ArraySpec` behind a variable built by :func:`lazy_variable`, else None.

    Lets assembly transform a raw variable's spec and the virtual Zarr parsers map it back to its storage
    chunks. The spec travels in the variable's public ``encoding`` (:data:`STORAGE_SPEC_KEY`) rather than
    being dug out of xarray's private wrappers (``Variable._data``, ``LazilyIndexedArray.key``), whose
    layout changes between xarray releases. Indexing keeps ``encoding``, so a spec whose shape is not the
    variable's is ignored, and assembly drops the key from any variable it indexes without a new spec
    (:func:`drop_storage_spec`); the data store removes it before xarray decodes, so users never see it.
    """
    spec = var.encoding.get(STORAGE_SPEC_KEY)
    return spec if isinstance(spec, ArraySpec) and spec.shape == var.shape else None


def drop_storage_spec(var: xr.Variable) -> xr.Variable:
    """``var`` (a shallow copy) without the spec in its encoding: for variables indexed or held in memory."""
    if STORAGE_SPEC_KEY not in var.encoding:
        return var
    out: xr.Variable = var.copy(deep=False)
    out.encoding = {k: v for k, v in var.encoding.items() if k != STORAGE_SPEC_KEY}
    return out


def strings_from_payload(spec: Mapping[str, Any]) -> tuple[list[str], np.ndarray]:
    """The dims and values of a string variable a writer kept in metadata (``write.prepare.string_payload``);
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
