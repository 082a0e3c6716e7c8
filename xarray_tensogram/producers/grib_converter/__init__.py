"""ECMWF's GRIB converter (``tensogram-grib``): objects open as cfgrib opens the GRIB messages.

The GRIB facts live in :mod:`.cfgrib_rules`, their way back into the converter's metadata in
:mod:`.write_layout`; this module answers the mapping stages' and the writer's questions with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...layout_record import LayoutRecord
from ...mars import NUMBER_ATTRS
from ...raw_variables import RawVariable
from ..interface import LEVEL_PREFIX, Keys, LevelInfo, Producer, derived
from ..keys import SectionKeys
from . import cfgrib_rules as grib
from .write_layout import derived_name, entry_paths, level_keys, refresh_repro

__all__ = ["GribConverter", "GribKeys"]


class GribKeys(SectionKeys):
    """A converter object's dotted keys with its ``grib_repro``/``grib`` sections left nested."""

    __slots__ = ()
    sections: ClassVar[tuple[str, ...]] = grib.GRIB_SECTIONS
    prefixes: ClassVar[tuple[str, ...]] = grib.GRIB_PREFIXES


class GribConverter(Producer):
    """Objects carrying ``grib_repro`` (always written) or ``grib`` sections."""

    label: ClassVar[str] = "grib"
    entry_keys: ClassVar[frozenset[str]] = frozenset(grib.GRIB_SECTIONS)
    sections: ClassVar[tuple[str, ...]] = grib.GRIB_SECTIONS
    #: keys that vary with step or level restate them (``stepRange``, ``level``): dropped, as cfgrib does
    dependent_coordinates: ClassVar[bool] = False
    level_source: ClassVar[str] = grib.GRIB_LEVEL_SOURCE
    own_sources: ClassVar[frozenset[str]] = frozenset({grib.GRIB_LEVEL_SOURCE})

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return grib.is_grib_entry(entry)

    def keys_view(self, flat: dict[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
        return GribKeys(flat, entry)

    level = staticmethod(grib.level_info)
    variable_name = staticmethod(grib.variable_name)  # cfgrib's name, never the numeric mars.param
    grid = staticmethod(grib.grid_coordinates)
    level_order = staticmethod(grib.level_order)  # as cfgrib sorts them: decreasing pressure
    filter_value = staticmethod(grib.filter_value)  # cfgrib's undotted keys: typeOfLevel, shortName

    def restates(self, key: str) -> bool:
        return key.startswith(grib.GRIB_PREFIXES)  # grib_repro.level, stepRange ...: never a dim

    def dim_attrs(self, dim: str, source: str, keys: Keys) -> dict[str, str] | None:
        return grib.level_coordinate_attrs(dim) if source.startswith(LEVEL_PREFIX) else None

    def attributes(
        self, keys: Keys, attrs: dict[str, Any], record: LayoutRecord, stacked: Sequence[str]
    ) -> dict[str, Any]:
        """units/long_name and GRIB_* attributes as cfgrib gives them; where the writer puts them back."""
        attrs, paths = grib.cf_attributes(attrs)
        if paths:
            record.attr_paths = paths
        if any(s.startswith(LEVEL_PREFIX) for s in stacked) and "mars.levelist" in keys:
            record.grib_levelist = True
        return attrs

    def scalar_coordinates(self, keys: Keys, level: LevelInfo | None, dims: Sequence[str]) -> dict[str, RawVariable]:
        """A constant level named after typeOfLevel, a constant ensemble member ``number``, as in cfgrib."""
        out = {}
        if level is not None and level.name not in dims:
            out[level.name] = derived((), np.float64(level.value), grib.level_coordinate_attrs(level.name))
        number = keys.get("mars.number")
        if "number" not in dims and isinstance(number, int) and not isinstance(number, bool):
            out["number"] = derived((), np.int64(number), NUMBER_ATTRS)
        return out

    def writes(self, record: LayoutRecord, attrs: Mapping[str, Any]) -> bool:
        return record.attr_paths is not None or any(str(k).startswith("GRIB_") for k in attrs)

    def entry_attrs(self, attrs: Mapping[str, Any], record: LayoutRecord) -> dict[str, Any]:
        """GRIB_*/units/long_name back to grib_repro.* (and grib.*)."""
        return entry_paths(attrs, record.attr_paths)

    def source_keys(self, source: str, value: Any, record: LayoutRecord) -> list[tuple[str, Any]]:
        return level_keys(value, bool(record.grib_levelist))  # the level: its only own source

    def finish_entry(self, entry: dict[str, Any], name: str) -> bool:
        refresh_repro(entry)
        return derived_name(entry) != name  # a GRIB name follows from the short name
