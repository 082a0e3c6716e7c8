"""What assembly hands the data store for one group: variables, coordinate names, attributes, encoding.

A plain record rather than an ``xr.Dataset`` (cfgrib's pattern: only the backend module builds xarray's
containers). Building a Dataset merges and copies every variable (about 10 us each, 2 ms for a ``.zt`` of
200 tensors) only for the store to take the variables out again, and a Dataset made during assembly would
build indexes, reading lazy coordinates before CF decoding. Indexes are the data store's to make once the
variables are decoded, as xarray's own stores leave them to ``open_dataset``. The assembly stages that
change a group after it is built (restoring a written layout) work on this record too;
:meth:`RawGroup.to_dataset` is for the consumers outside the data store that work on Datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

__all__ = ["RawGroup"]


@dataclass
class RawGroup:
    """One group as assembly produced it: raw (CF-encoded) variables in order, which of them are coordinates,
    attributes and the group's encoding. A lazy variable's storage spec is its lazy array's
    (:func:`~xarray_tensogram.assemble.common.storage_spec`)."""

    variables: dict[str, xr.Variable]
    coord_names: frozenset[str] = frozenset()
    attrs: dict[str, Any] = field(default_factory=dict)
    encoding: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, variables: Mapping[str, xr.Variable], coords: Mapping[str, xr.Variable], attrs: Mapping[str, Any]
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

    def put(self, name: str, var: xr.Variable, *, coordinate: bool) -> None:
        """Add or replace a variable (a replaced one keeps its place), as a coordinate or as data."""
        self.variables[name] = var
        self.coord_names = self.coord_names | {name} if coordinate else self.coord_names - {name}

    def to_dataset(self) -> xr.Dataset:
        """The group as a Dataset without indexes, for consumers that work on Datasets (the virtual parsers,
        callers inspecting assembly's output); the data store builds its own, decoded."""
        coords = {k: v for k, v in self.variables.items() if k in self.coord_names}
        data = {k: v for k, v in self.variables.items() if k not in self.coord_names}
        ds = xr.Dataset(data, coords=xr.Coordinates(coords, indexes={}), attrs=dict(self.attrs))
        ds.encoding = dict(self.encoding)
        return ds

    def drop(self, names: Iterable[str]) -> None:
        """Remove the variables named (those it does not hold are ignored)."""
        gone = set(names)
        self.variables = {k: v for k, v in self.variables.items() if k not in gone}
        self.coord_names = self.coord_names - gone
