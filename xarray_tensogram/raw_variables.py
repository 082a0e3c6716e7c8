"""The raw variables and groups every assembly hands on, lazy or in memory, and their netCDF-safe attributes.

A :class:`RawVariable` (cfgrib's pattern) is what assembly gives the data store before CF decoding: dims, a
lazy :class:`ArraySpec` or values in memory, attributes and the encoding a user should see (the spec never
rides in ``encoding``); a :class:`RawGroup` holds them. xarray objects built during assembly would be merged
and copied (about 10 us each) and indexed (reading lazy coordinates) before CF decoding, for nothing.
:func:`xarray_variable` is the one place a record becomes an ``xr.Variable``. Attribute values are made
netCDF-safe (nested maps flattened to dotted keys, typed values restored) so ``to_netcdf`` of an opened
Dataset works.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
from xarray.core import indexing

from .array import LazyChunkedArray
from .array_spec import ArraySpec
from .conventions import ATTR_TYPES_KEY, COORDINATE_ROLE_KEY
from .outer import read_outer

__all__ = [
    "RawGroup",
    "RawVariable",
    "array_variable",
    "flatten_attrs",
    "lazy_variable",
    "netcdf_safe_value",
    "storage_spec",
    "xarray_variable",
]


def netcdf_safe_value(value: Any) -> Any:
    """A metadata value as netCDF attributes can hold it: strings, numbers and homogeneous lists as they are,
    booleans as ints, ``None`` as ``""``, bytes as hex, anything else (mixed, nested) as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):  # beyond 64 bits no netCDF integer holds it
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, (str, float, np.integer, np.floating)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, str) for v in value):
            return list(value)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            ints = all(isinstance(v, int) and -(2**63) <= v < 2**63 for v in value)
            return np.asarray(value, dtype=np.int64 if ints else np.float64)
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
    for k, v in mapping.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v and max_depth > 0:
            out.update(flatten_attrs(v, key + ".", max_depth - 1))
        else:  # an empty or too deep map as JSON
            out[key] = netcdf_safe_value(dict(v) if isinstance(v, Mapping) else v)
    return out


@dataclass
class RawVariable:
    """One raw (CF-encoded) variable; ``index``: an integer selection of a lazy spec (a 0-d variable stored
    with one element)."""

    dims: tuple[str, ...]
    data: ArraySpec | np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)
    encoding: dict[str, Any] = field(default_factory=dict)
    index: tuple[int, ...] | None = None

    @property
    def spec(self) -> ArraySpec | None:
        """The whole lazy array, when the variable is one (a selection of a spec is not)."""
        return self.data if isinstance(self.data, ArraySpec) and self.index is None else None

    @property
    def shape(self) -> tuple[int, ...]:
        return () if self.index is not None else tuple(self.data.shape)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.data.dtype)

    @property
    def sizes(self) -> dict[str, int]:
        return dict(zip(self.dims, self.shape, strict=True))

    @property
    def values(self) -> np.ndarray:
        """The values (read from the file for a lazy variable: for checks at open of small coordinates only)."""
        if not isinstance(self.data, ArraySpec):
            return self.data
        return np.asarray(read_outer(self.data, self.index or ()))  # read_outer completes the key

    def equals(self, other: RawVariable) -> bool:
        """Same dims and values, NaN equal to NaN (as ``xr.Variable.equals``)."""
        if self.dims != other.dims or self.shape != other.shape:
            return False
        try:
            return bool(np.array_equal(self.values, other.values, equal_nan=True))
        except TypeError:  # values NaN cannot be among (strings)
            return bool(np.array_equal(self.values, other.values))


@functools.cache
def _whole(ndim: int) -> indexing.BasicIndexer:
    """The key selecting a whole array of ``ndim`` axes, made once per rank: indexers are immutable, and
    making one checks every axis (a quarter of assembling a ``.zt`` of 200 tensors)."""
    return indexing.BasicIndexer((slice(None),) * ndim)


def xarray_variable(raw: RawVariable) -> xr.Variable:
    """The ``xr.Variable`` of a raw variable: the one lazy array over its spec, or its values in memory.

    Values in memory are wrapped in an indexing adapter, as backends wrap data: ``xr.Variable(dims, ndarray)``
    (and each CF decoder after it) asks whether the array is a Dask array, which imports ``dask.array``
    (about 0.6 s on a first open); the adapter is not asked, so an open without ``chunks`` never imports Dask.
    """
    if not isinstance(raw.data, ArraySpec):
        values = indexing.NumpyIndexingAdapter(np.asarray(raw.data))  # type: ignore[no-untyped-call]  # unannotated in xarray
        return xr.Variable(raw.dims, values, dict(raw.attrs), dict(raw.encoding))
    key = _whole(len(raw.data.shape)) if raw.index is None else indexing.BasicIndexer(raw.index)
    data = indexing.LazilyIndexedArray(LazyChunkedArray(raw.data), key)
    # fastpath (as xarray's own CF coders build variables): the lazy array is taken as it is, which is what
    # xarray's checks would conclude for it anyway
    return xr.Variable(raw.dims, data, dict(raw.attrs), dict(raw.encoding), fastpath=True)


def storage_spec(var: xr.Variable) -> ArraySpec | None:
    """The :class:`ArraySpec` behind a variable made by :func:`xarray_variable` and not indexed since, else None.

    For the Zarr views, which work on Datasets. The spec belongs to the lazy array, not to ``encoding`` (which
    xarray hands on to every view): a variable indexed, transposed or reshaped since holds another wrapper or
    key, so it is never taken for the whole spec. The wrappers are read where xarray's own backends read them.
    """
    data = var._data
    if not isinstance(data, indexing.LazilyIndexedArray) or not isinstance(data.array, LazyChunkedArray):
        return None
    whole = data.key.tuple == _whole(var.ndim).tuple and data.array.spec.shape == var.shape
    return data.array.spec if whole else None


def lazy_variable(
    dims: Sequence[Hashable],
    spec: ArraySpec,
    attrs: Mapping[str, Any] | None = None,
    encoding: Mapping[str, Any] | None = None,
) -> RawVariable:
    """A raw variable read lazily through ``spec``; ``encoding["preferred_chunks"]`` is the spec's chunk.

    The one place the preferred chunk is decided: one storage unit (a Tensogram object, a Tetration tile, a
    zTensor tensor or a row band of a raw one over 256 MiB), as xarray's zarr and h5netcdf backends do. So
    ``chunks={}`` gives one Dask chunk per unit and ``chunks="auto"`` whole multiples of it, each read by one
    task in one pass (:func:`~xarray_tensogram.outer.read_outer`).
    """
    dims = tuple(dims)
    enc = dict(encoding) if encoding else {}
    # one unit per axis; a tile may overhang the array (min), an empty axis still has a unit of 1 (max)
    units = zip(dims, spec.chunk_shape, spec.shape, strict=True)
    enc["preferred_chunks"] = {d: max(1, min(c, n)) for d, c, n in units}
    enc.setdefault("dtype", spec.dtype)
    return RawVariable(tuple(str(d) for d in dims), spec, typed_attrs(attrs) if attrs else {}, enc)


def _parsed(text: str) -> Any:
    """A value written as text: JSON, or a float JSON cannot spell (``"nan"``, ``"inf"``)."""
    try:
        return json.loads(text)
    except ValueError:
        return float(text)


def _typed(value: Any, kind: str) -> Any:
    if kind == "py:bytes":
        return bytes.fromhex(value) if isinstance(value, str) else bytes(value)
    if kind.startswith("py:"):
        if isinstance(value, str):
            if kind == "py:str":
                return value
            value = _parsed(value)
        return {"py:int": int, "py:float": float, "py:bool": bool}.get(kind, lambda v: v)(value)
    dtype = np.dtype(kind)
    if isinstance(value, str) and dtype.kind not in "US":
        value = _parsed(value)
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


@dataclass
class RawGroup:
    """One group as assembly produced it: raw variables in order, which of them are coordinates, attrs, encoding."""

    variables: dict[str, RawVariable]
    coord_names: frozenset[str] = frozenset()
    attrs: dict[str, Any] = field(default_factory=dict)
    encoding: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, variables: Mapping[str, RawVariable], coords: Mapping[str, RawVariable], attrs: Mapping[str, Any]
    ) -> RawGroup:
        """``coords`` and the dimension coordinates among ``variables`` as coordinates, the others as data."""
        names = set(coords) | {k for k, v in variables.items() if v.dims == (k,)}
        return cls({**coords, **variables}, frozenset(names), dict(attrs))

    @property
    def data_names(self) -> list[str]:
        """The data variables' names, in order."""
        return [k for k in self.variables if k not in self.coord_names]

    def sizes(self) -> dict[str, int]:
        """Every dim's length."""
        return {str(d): int(n) for v in self.variables.values() for d, n in v.sizes.items()}

    def put(self, name: str, var: RawVariable, *, coordinate: bool) -> None:
        """Add or replace a variable (a replaced one keeps its place), as a coordinate or as data."""
        self.variables[name] = var
        self.coord_names = self.coord_names | {name} if coordinate else self.coord_names - {name}

    def to_dataset(self) -> xr.Dataset:
        """The group as a Dataset without indexes, for consumers that work on Datasets (the virtual parsers,
        callers inspecting assembly's output); the data store builds its own, decoded."""
        coords = {k: xarray_variable(v) for k, v in self.variables.items() if k in self.coord_names}
        data = {k: xarray_variable(v) for k, v in self.variables.items() if k not in self.coord_names}
        ds = xr.Dataset(data, coords=xr.Coordinates(coords, indexes={}), attrs=dict(self.attrs))
        ds.encoding = dict(self.encoding)
        return ds

    def drop(self, names: Iterable[str]) -> None:
        """Remove the variables named (those it does not hold are ignored)."""
        gone = set(names)
        self.variables = {k: v for k, v in self.variables.items() if k not in gone}
        self.coord_names = self.coord_names - gone


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
    """Dataset attributes with ``names`` added to the CF global ``coordinates`` attribute: writers mark the
    coordinates no data variable names on the variable itself, and read back as that attribute their role is
    xarray's ``decode_coords``'s to decide, as for a netCDF file."""
    out = dict(attrs)
    previous = out.get("coordinates")
    listed = previous.split() if isinstance(previous, str) else []
    listed += [n for n in sorted(names) if n not in listed]
    if listed:
        out["coordinates"] = " ".join(listed)
    return out
