"""Which assembly step turns an open file of each format into raw (CF-encoded) Datasets.

Keyed by the format names of :mod:`xarray_tensogram.formats.registry`; the format
records stay free of xarray, and this table is the one place the backend looks
up. Adding a format: one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import xarray as xr

from .tensogram import tensogram_groups
from .tetr import tetr_to_dataset
from .ztensor import ztensor_to_dataset

__all__ = ["ASSEMBLERS", "AssembleOptions", "assemble"]


@dataclass(frozen=True)
class AssembleOptions:
    """The open options that shape the variables (only those the format's record lists reach here set)."""

    drop_variables: frozenset[str] = frozenset()
    dim_names: Any = None
    variable_key: str | None = None
    filter_by_keys: Mapping[str, Any] | None = None
    verify_hash: bool = False
    strict: bool = False
    message_index: Any = None
    merge_objects: bool = True
    range_threshold: float = 0.5


def _tensogram(f: Any, o: AssembleOptions) -> dict[str, xr.Dataset]:
    groups = tensogram_groups(
        f,
        variable_key=o.variable_key,
        dim_names=o.dim_names,
        filter_by_keys=o.filter_by_keys,
        verify_hash=o.verify_hash,
        drop_variables=o.drop_variables,
        strict=o.strict,
        message_index=o.message_index,
        merge_objects=o.merge_objects,
        range_threshold=o.range_threshold,
    )
    # the Datasets hold what they need: decoded metadata would only weigh on every garbage collection
    for message in f:
        message.release_metadata()
    return groups


def _tetr(f: Any, o: AssembleOptions) -> dict[str, xr.Dataset]:
    return {"/": tetr_to_dataset(f, drop_variables=o.drop_variables, dim_names=o.dim_names)}


def _ztensor(f: Any, o: AssembleOptions) -> dict[str, xr.Dataset]:
    return {"/": ztensor_to_dataset(f, drop_variables=o.drop_variables, dim_names=o.dim_names, verify=o.verify_hash)}


#: format name -> function building ``{group name: raw Dataset}`` from the open file
ASSEMBLERS: dict[str, Callable[[Any, AssembleOptions], dict[str, xr.Dataset]]] = {
    "tensogram": _tensogram,
    "tetr": _tetr,
    "ztensor": _ztensor,
}


def assemble(format_name: str, f: Any, options: AssembleOptions) -> dict[str, xr.Dataset]:
    """Raw Datasets of every group of the open file ``f`` of format ``format_name``."""
    return ASSEMBLERS[format_name](f, options)
