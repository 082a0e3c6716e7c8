"""Names shared by the read side (``assemble/``) and the write side (``write/``).

Metadata keys written into files and attribute/encoding names that a writer puts
where a reader looks for them. They live below both layers so that ``write/``
never imports ``assemble/`` (and the other way round).
"""

from __future__ import annotations

__all__ = [
    "DTYPE_KEY",
    "LAYOUT_KEY",
    "NETCDF_ATTR_TYPES",
    "NETCDF_CF_ATTRIBUTES",
    "NETCDF_CONVERTER_KEYS",
    "NETCDF_ENCODING_KEY",
    "NETCDF_KEY",
    "STEP_UNITS",
    "TETR_FILE_KEYS",
    "TETR_HISTORY_ATTR",
    "TIME_UNITS",
    "ZTENSOR_DIM_NAMES_KEY",
]

#: CF units of the MARS-derived ``time`` (seconds since the epoch) and ``step`` (hours) coordinates
TIME_UNITS = "seconds since 1970-01-01T00:00:00"
STEP_UNITS = "hours"

#: Tensogram ``_extra_`` key holding the layout hint of ``to_tensogram`` (``dims``, ``coords``, ``coord_names``)
LAYOUT_KEY = "xarray_layout"
#: Tensogram base-entry key naming the dtype of values that a lossy stage (simple_packing, zfp) widened to float64
DTYPE_KEY = "xarray_dtype"

#: Dataset attr holding the full ``.tet`` history rows as JSON
TETR_HISTORY_ATTR = "tetr_history"
#: ``.tet`` file-metadata keys, read into and written from Dataset attrs
TETR_FILE_KEYS = ("tool", "library_version", "created_at")

#: zTensor custom key holding a tensor's dimension names
ZTENSOR_DIM_NAMES_KEY = "dim_names"

# -- ECMWF's netCDF converter (``tensogram convert-netcdf``, specs/tensogram-from-netcdf.md) ----------
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
#: variable encoding entry the reader leaves for the writer: the file's dimension registry (``_file``) and
#: whether the conversion wrote ``cf`` maps, so ``to_tensogram`` gives the objects the converter's layout back
NETCDF_ENCODING_KEY = "tensogram_netcdf"
