"""ECMWF's netCDF converter (``tensogram convert-netcdf``): files open as the original netCDF file does.

Its objects' ``netcdf`` maps say everything the generic stages would guess, so this producer builds the
Datasets itself (:mod:`.read_mapping`) when every object of the file is the converter's, and writes such a
Dataset back as the converter's file split (:mod:`.write_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...raw_variables import RawGroup
from ..interface import Producer
from ..keys import SectionKeys
from .objects import netcdf_map
from .read_mapping import netcdf_groups
from .write_layout import is_netcdf_layout, netcdf_objects

__all__ = ["NetcdfConverter"]


class NetcdfKeys(SectionKeys):
    """A converted object's dotted keys (``netcdf.units``) with string attributes as text: the converter
    stores NC_STRING attributes as arrays of one string, which ``filter_by_keys`` compares as the text."""

    __slots__ = ()
    sections: ClassVar[tuple[str, ...]] = ("netcdf", "cf")
    prefixes: ClassVar[tuple[str, ...]] = ("netcdf.", "cf.")

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        return value[0] if type(value) is tuple and len(value) == 1 and type(value[0]) is str else value


class NetcdfConverter(Producer):
    """Objects whose ``netcdf`` map carries ``_dims`` and ``_file``."""

    label: ClassVar[str] = "netcdf"
    entry_keys: ClassVar[frozenset[str]] = frozenset({"netcdf"})
    assembles: ClassVar[bool] = True
    #: the attribute maps stay nested (flattening them per object, ``_file`` and globals too, was most of an open)
    sections: ClassVar[tuple[str, ...]] = ("netcdf", "cf")

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return netcdf_map(entry) is not None

    def keys_view(self, flat: dict[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
        return NetcdfKeys(flat, entry)

    def assemble(self, objects: Sequence[Any], **options: Any) -> dict[str, RawGroup] | None:
        return netcdf_groups(objects, **options)

    writes_dataset = staticmethod(is_netcdf_layout)
    objects = staticmethod(netcdf_objects)
