"""The producers whose layouts the mapping knows (the interface: :mod:`.interface`).

A new producer is a module or folder here with a :class:`~.interface.Producer` subclass and one line in
:data:`REGISTERED` (the first that recognises an object wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import xarray as xr

from ..layout_record import LayoutRecord
from .anemoi import AnemoiOutput
from .earthkit import EarthkitEncoder
from .grib_converter import GribConverter
from .interface import Producer
from .netcdf_converter import NetcdfConverter

__all__ = ["REGISTERED", "SOURCE_OWNERS", "dataset_writer", "producer_for", "written_by"]

#: every producer layout, in the order they are asked
REGISTERED: tuple[Producer, ...] = (
    GribConverter(),
    AnemoiOutput(),
    EarthkitEncoder(),
    NetcdfConverter(),
)


_ENTRY_KEYS = frozenset().union(*(p.entry_keys for p in REGISTERED))
_EXTRA_KEYS = frozenset().union(*(p.extra_keys for p in REGISTERED))


def producer_for(entry: Mapping[str, Any], extra: Mapping[str, Any]) -> Producer | None:
    """The producer of one object (its nested ``base[i]`` entry, its message's ``_extra_``), if any."""
    if _ENTRY_KEYS.isdisjoint(entry) and (not extra or _EXTRA_KEYS.isdisjoint(extra)):
        return None  # most objects of most files: one set test
    return next((p for p in REGISTERED if p.recognises(entry, extra)), None)


#: the answers of no producer in particular (DESIGN.md's generic rules), for variables none of them writes
GENERIC = Producer()


#: stacking sources that are no metadata key -> the producer whose levels (or other own dims) they are
SOURCE_OWNERS: dict[str, Producer] = {s: p for p in reversed(REGISTERED) for s in p.own_sources}


def written_by(record: LayoutRecord, attrs: Mapping[str, Any]) -> Producer:
    """The producer whose layout a variable (its layout ``record`` as read, its attributes) is written in."""
    return next((p for p in REGISTERED if p.writes(record, attrs)), GENERIC)


def dataset_writer(ds: xr.Dataset) -> Producer | None:
    """The producer that writes ``ds`` whole in its own layout (a Dataset it assembled itself), if any."""
    return next((p for p in REGISTERED if p.assembles and p.writes_dataset(ds)), None)
