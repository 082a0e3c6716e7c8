"""What assembly hands the data store for one group: variables, coordinate names, attributes, encoding.

A plain record rather than an ``xr.Dataset``: building a Dataset merges and copies every variable (about
10 us each, 2 ms for a ``.zt`` of 200 tensors) only for the store to take the variables out again, and a
Dataset made during assembly would build indexes, reading lazy coordinates before CF decoding. Indexes
are the data store's to make once the variables are decoded, as xarray's own stores leave them to
``open_dataset``. Assembly steps that need Dataset operations (stacking messages, restoring a written
layout) may build Datasets and return them: :func:`as_raw_group` takes either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

__all__ = ["RawGroup", "as_raw_group", "raw_dataset"]


@dataclass
class RawGroup:
    """One group as assembly produced it: raw (CF-encoded) variables, which of them are coordinates, attributes
    and the group's encoding. A lazy variable's storage spec is its lazy array's
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

    def to_dataset(self) -> xr.Dataset:
        """The group as a Dataset without indexes (for consumers that work on Datasets: the virtual parsers)."""
        coords = {k: v for k, v in self.variables.items() if k in self.coord_names}
        data = {k: v for k, v in self.variables.items() if k not in self.coord_names}
        ds = xr.Dataset(data, coords=xr.Coordinates(coords, indexes={}), attrs=dict(self.attrs))
        ds.encoding = dict(self.encoding)
        return ds


def raw_dataset(
    variables: Mapping[str, xr.Variable], coords: Mapping[str, xr.Variable], attrs: Mapping[str, Any]
) -> xr.Dataset:
    """A raw Dataset without indexes: ``coords`` and the dimension coordinates among ``variables`` as coordinates."""
    return RawGroup.of(variables, coords, attrs).to_dataset()


def as_raw_group(group: RawGroup | xr.Dataset) -> RawGroup:
    """An assembled group as the record the data store holds (a Dataset's variables taken as they are)."""
    if isinstance(group, RawGroup):
        return group
    return RawGroup(
        {str(k): v for k, v in group.variables.items()},
        frozenset(str(k) for k in group.coords),
        dict(group.attrs),
        dict(group.encoding),
    )
