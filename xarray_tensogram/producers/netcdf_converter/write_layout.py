"""A Dataset opened from a netCDF conversion, written back in the converter's layout.

The reader's :class:`~xarray_tensogram.layout_record.LayoutRecord` holds ``netcdf`` for each variable of a
converted file (the ``_file`` dim registry, and whether the conversion had ``--cf``). :func:`netcdf_objects`
writes such a Dataset as the converter's file split does (``specs/tensogram-from-netcdf.md``): one object per
variable, CF-encoded as ``to_netcdf`` encodes it, its ``netcdf`` map holding the attributes and the
converter's own keys, so that the reference's ``to-netcdf`` export and this reader take it as converted.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ...errors import EncodeError
from ...layout_record import LayoutRecord
from ..interface import WrittenObject
from .objects import file_dims
from .vocabulary import NETCDF_ATTR_TYPES, NETCDF_CF_ATTRIBUTES, NETCDF_KEY

__all__ = ["attribute_types", "is_netcdf_layout", "netcdf_objects"]

_DTYPE_TAGS = {np.dtype(name): tag for tag, name in NETCDF_ATTR_TYPES.items()}


def is_netcdf_layout(ds: xr.Dataset) -> bool:
    """Whether ``ds`` was opened from a netCDF conversion (a variable carries the reader's record of it)."""
    return any(LayoutRecord.of(v.encoding, n).netcdf is not None for n, v in ds.variables.items())


def attribute_types(attrs: Mapping[Hashable, Any]) -> dict[str, str]:
    """The ``_attr_types`` tags of attributes: ``string`` for text, the netCDF type of numpy numbers, and
    ``double``/``int64`` for Python floats/ints (what the converter's widening would have given)."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, str) or (isinstance(v, (list, tuple)) and v and all(isinstance(s, str) for s in v)):
            out[str(k)] = "string"
            continue
        tag = _DTYPE_TAGS.get(np.asarray(v).dtype) if isinstance(v, (np.generic, np.ndarray)) else None
        if tag is None and isinstance(v, (int, float)) and not isinstance(v, bool):
            tag = "double" if isinstance(v, float) else "int64"
        if tag is not None:
            out[str(k)] = tag
    return out


def _registry(ds: xr.Dataset) -> list[dict[str, Any]]:
    """The ``_file`` dimension registry: the one read, lengths as the Dataset has them now, new dims appended."""
    records = (LayoutRecord.of(v.encoding, n).netcdf for n, v in ds.variables.items())
    recorded: Mapping[str, Any] = next(
        (r["file"] for r in records if r is not None and isinstance(r.get("file"), Mapping)), {}
    )
    out = [
        {
            "name": d["name"],
            "len": int(ds.sizes.get(d["name"], d.get("len")) or 0),
            "unlimited": bool(d.get("unlimited")),
        }
        for d in file_dims(recorded)
    ]
    unlimited = set(ds.encoding.get("unlimited_dims") or ())
    named = {d["name"] for d in out}
    out += [{"name": str(n), "len": int(s), "unlimited": n in unlimited} for n, s in ds.sizes.items() if n not in named]
    return out


def netcdf_objects(ds: xr.Dataset, plain: Callable[[Any], Any]) -> list[WrittenObject]:
    """Every variable of ``ds`` (coordinates included, in the Dataset's order) as a converter object; ``plain``
    turns numpy values into what CBOR holds. Raises :class:`EncodeError` naming a variable of text values before
    anything is written: the converter's layout holds numbers only (it skips char and string variables)."""
    # as to_netcdf does: non-index coordinates into ``coordinates`` attributes, then xarray's CF encoder
    variables, global_attrs = xr.conventions.cf_encoder(*xr.conventions.encode_dataset_coordinates(ds))
    file_map = {"dims": _registry(ds)}
    out = []
    for name, var in variables.items():
        values = np.asarray(var.values)
        if values.dtype.kind not in "biufc":
            raise EncodeError(
                f"variable {name!r} holds {values.dtype} values, which the netCDF converter's layout cannot hold "
                f"(numbers only); drop it (ds.drop_vars({name!r})) before writing"
            )
        attrs = {str(k): plain(v) for k, v in var.attrs.items()}
        netcdf: dict[str, Any] = {**attrs, "_dims": [str(d) for d in var.dims], "_file": file_map}
        if attrs:
            netcdf["_attr_types"] = attribute_types(var.attrs)
        if global_attrs:
            netcdf["_global"] = {str(k): plain(v) for k, v in global_attrs.items()}
            netcdf["_global_types"] = attribute_types(global_attrs)
        entry: dict[str, Any] = {"name": str(name), NETCDF_KEY: netcdf}
        recorded = LayoutRecord.of(ds.variables[name].encoding, name).netcdf
        cf = {k: attrs[k] for k in NETCDF_CF_ATTRIBUTES if k in attrs}
        if recorded is not None and recorded.get("cf") and cf:
            entry["cf"] = cf
        out.append(WrittenObject(str(name), entry, values, ds.variables[name].encoding))
    return out
