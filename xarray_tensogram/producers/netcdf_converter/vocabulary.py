"""What the netCDF converter's objects carry besides their values (specs/tensogram-from-netcdf.md), as its read
mapping (:mod:`.objects`) and its write layout (:mod:`.write_layout`) both spell it."""

from __future__ import annotations

__all__ = ["NETCDF_ATTR_TYPES", "NETCDF_CF_ATTRIBUTES", "NETCDF_CONVERTER_KEYS", "NETCDF_KEY"]

#: base-entry map holding a converted variable's attributes and the converter's own keys
NETCDF_KEY = "netcdf"
#: the converter's own keys in that map, never attributes (its exporter drops the same six, export.rs:41-48)
NETCDF_CONVERTER_KEYS = frozenset({"_dims", "_file", "_attr_types", "_global", "_global_types", "record_index"})
#: netCDF attribute type tags of ``_attr_types``/``_global_types`` (metadata.rs:111-141) -> numpy dtype names
NETCDF_ATTR_TYPES = {
    "double": "float64",
    "float": "float32",
    "int": "int32",
    "uint": "uint32",
    "short": "int16",
    "ushort": "uint16",
    "int64": "int64",
    "uint64": "uint64",
    "byte": "int8",
    "ubyte": "uint8",
}
#: the attributes ``--cf`` copies into the ``cf`` map (metadata.rs:14-31)
NETCDF_CF_ATTRIBUTES = (
    "standard_name",
    "long_name",
    "units",
    "calendar",
    "cell_methods",
    "coordinates",
    "axis",
    "positive",
    "valid_min",
    "valid_max",
    "valid_range",
    "bounds",
    "grid_mapping",
    "ancillary_variables",
    "flag_values",
    "flag_meanings",
)
