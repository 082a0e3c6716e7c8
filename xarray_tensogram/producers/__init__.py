"""The producers whose layouts the mapping knows (see :mod:`..producer` for the interface).

A new producer is a module here with a :class:`~..producer.Producer` subclass and one line in
:data:`REGISTERED`. Order matters only where two could recognise the same object: the first wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .anemoi import AnemoiOutput
from .earthkit import EarthkitEncoder
from .grib_converter import GribConverter, GribKeys
from .interface import Producer
from .netcdf_converter import NetcdfConverter

__all__ = ["REGISTERED", "GribKeys", "producer_for"]

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
    for producer in REGISTERED:
        if producer.recognises(entry, extra):
            return producer
    return None
