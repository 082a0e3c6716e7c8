"""What assembly hands the data store for one group: variables, coordinate names, attributes, encoding.

Plain records rather than xarray objects (cfgrib's pattern): each :class:`RawVariable` holds its dims, a
lazy :class:`~xarray_tensogram.catalog.ArraySpec` or values in memory, its attributes and the encoding a
user should see, so the spec belongs to the variable and never rides in ``encoding``. Building a Dataset
during assembly would merge and copy every variable (about 10 us each, 2 ms for a ``.zt`` of 200 tensors)
only for the store to take them out again, and would build indexes, reading lazy coordinates before CF
decoding; indexes are the data store's to make once the variables are decoded, as xarray's own stores
leave them to ``open_dataset``. The assembly stages that change a group after it is built (restoring a
written layout) work on these records too. :func:`xarray_variable` is the one place a record becomes an
``xr.Variable``: the data store calls it, and :meth:`RawGroup.to_dataset` for the consumers that work on
raw Datasets (the virtual Zarr parsers).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
from xarray.core import indexing

from ..array import LazyChunkedArray
from ..catalog import ArraySpec
from ..outer import read_outer

__all__ = ["RawGroup", "RawVariable", "memory_variable", "storage_spec", "xarray_variable"]


@dataclass
class RawVariable:
    """One raw (CF-encoded) variable: its dims, its data (a lazy :class:`ArraySpec`, or values in memory), its
    attributes and the encoding a user should see. ``index``: a lazy selection of a spec, integers only (a
    0-d variable stored with one element)."""

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
        key = self.index if self.index is not None else (slice(None),) * len(self.data.shape)
        return np.asarray(read_outer(self.data, key))

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


def memory_variable(dims: Any, values: Any, attrs: Mapping[str, Any] | None = None) -> xr.Variable:
    """An ``xr.Variable`` of values already in memory, wrapped the way backends wrap data.

    ``xr.Variable(dims, ndarray)`` asks whether the array is a Dask array, which imports ``dask.array``
    (about 0.6 s, on every first open, Dask wanted or not); xarray's CF decoders rebuild each variable
    from its ``_data`` and would ask again. An indexing adapter around the array is not asked, so an
    open without ``chunks`` never imports Dask.
    """
    data = indexing.NumpyIndexingAdapter(np.asarray(values))  # type: ignore[no-untyped-call]  # unannotated in xarray
    return xr.Variable(tuple(dims), data, dict(attrs or {}))


def xarray_variable(raw: RawVariable) -> xr.Variable:
    """The ``xr.Variable`` of a raw variable: the one lazy array over its spec, or its values in memory."""
    if not isinstance(raw.data, ArraySpec):
        var = memory_variable(raw.dims, raw.data, raw.attrs)
        var.encoding = dict(raw.encoding)
        return var
    key = _whole(len(raw.data.shape)) if raw.index is None else indexing.BasicIndexer(raw.index)
    data = indexing.LazilyIndexedArray(LazyChunkedArray(raw.data), key)
    # fastpath (as xarray's own CF coders build variables): the lazy array is taken as it is, which is what
    # xarray's checks would conclude for it anyway
    return xr.Variable(raw.dims, data, dict(raw.attrs), dict(raw.encoding), fastpath=True)


def storage_spec(var: xr.Variable) -> ArraySpec | None:
    """The :class:`ArraySpec` behind a variable made by :func:`xarray_variable` and not indexed since, else None.

    Lets the virtual Zarr parsers, which work on Datasets, map a variable back to its storage chunks. The
    spec belongs to the lazy array (:class:`LazyChunkedArray`), never to ``encoding``, which xarray hands on
    to every view of a variable: a variable indexed, transposed or reshaped since holds another wrapper or
    another key, so it is never taken for the whole spec. The wrappers are read where xarray's own backends
    read them (``Variable._data``, ``LazilyIndexedArray.array`` and ``.key``).
    """
    data = var._data
    if not isinstance(data, indexing.LazilyIndexedArray) or not isinstance(data.array, LazyChunkedArray):
        return None
    whole = data.key.tuple == _whole(var.ndim).tuple and data.array.spec.shape == var.shape
    return data.array.spec if whole else None


@dataclass
class RawGroup:
    """One group as assembly produced it: raw (CF-encoded) variables in order, which of them are coordinates,
    attributes and the group's encoding."""

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
