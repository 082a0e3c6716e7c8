"""ECMWF's netCDF converter (``tensogram convert-netcdf``): files open as the original netCDF file does.

Its objects carry a ``netcdf`` map with ``_dims`` and ``_file`` (``specs/tensogram-from-netcdf.md``),
which say everything the generic stages would guess, so this producer builds the Datasets itself
(:mod:`..netcdf`) when every object of the file is the converter's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import xarray as xr

from ..netcdf import netcdf_groups
from ..netcdf_layout import netcdf_map
from ..producer import Producer

__all__ = ["NetcdfConverter"]


class NetcdfConverter(Producer):
    """Objects whose ``netcdf`` map carries ``_dims`` and ``_file``."""

    label: ClassVar[str] = "netcdf"
    assembles: ClassVar[bool] = True

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return netcdf_map(entry) is not None

    def assemble(self, objects: Sequence[Any], **options: Any) -> dict[str, xr.Dataset] | None:
        return netcdf_groups(objects, **options)
