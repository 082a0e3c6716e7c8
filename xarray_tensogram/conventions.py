"""Names shared by the read side (``assemble/``) and the write side (``write/``).

Metadata keys and attribute/encoding names a writer puts where a reader looks for them, below both layers so
that neither imports the other.
"""

from __future__ import annotations

#: CF units of the MARS-derived ``time`` (seconds since the epoch) and ``step`` (hours) coordinates
TIME_UNITS = "seconds since 1970-01-01T00:00:00"
STEP_UNITS = "hours"
#: ``dtype`` attribute xarray's own timedelta encoder writes: with it, xarray's CF decoding turns ``step``
#: into timedelta64 by default (``decode_timedelta=None``), while plain netCDF "hours" stay numbers
STEP_UNITS_DTYPE = "timedelta64[ns]"

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

#: per-variable key (a ``.zt`` custom key, a ``.tet`` attr) marking a coordinate that no data variable's
#: CF ``coordinates`` attribute names, in formats without Dataset attributes to list it
COORDINATE_ROLE_KEY = "xarray_role"
#: the name a variable named ``None`` is stored under, and read back as ``None`` (xarray's netCDF backends'
#: ``NONE_VAR_NAME``): the formats hold names as text
NONE_VAR_NAME = "__values__"
#: ``.zt`` custom key of a zero-size placeholder tensor holding a string variable in metadata:
#: ``{"dims": [...], "shape": [...], "dtype": "<U3", "values": [flat list]}``
STRINGS_KEY = "xarray_strings"
#: per-variable key mapping attribute names to the type their value had (``"float32"``, ``"py:int"``), for
#: formats whose attribute values lose it (``.tet`` stores strings, CBOR has no float32 scalar for numpy)
ATTR_TYPES_KEY = "xarray_attr_types"
#: ``.tet`` attr marking a 0-d variable stored with one element (the format's rank is 1..8)
SCALAR_KEY = "xarray_scalar"
#: encoding key of an index coordinate read from ``.tet`` footer labels: the labels as spelled in the file
TETR_LABELS_ENCODING = "tetr_labels"
#: names that make a 1-D or 2-D ``.tgm`` object a coordinate when its metadata does not say
#: (case-insensitive, as in the reference backend); ``to_tensogram`` marks data variables named so
TGM_COORDINATE_NAMES = frozenset(
    {
        "lat",
        "latitude",
        "lon",
        "longitude",
        "x",
        "y",
        "time",
        "level",
        "pressure",
        "height",
        "depth",
        "frequency",
        "step",
    }
)

#: every name above (all upper case): the read and write sides import them from here
__all__ = sorted(n for n in dict(globals()) if n.isupper())
