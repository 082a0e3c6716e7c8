"""Zarr v3 metadata for the variables of an opened file: attributes, fill values, names, ``zarr.json`` documents.

Shared by the two Zarr views: the virtual parsers (chunks are byte ranges of the file) and
:class:`~xarray_tensogram.zarr_store.TensogramStore` (decoded chunks). Both start from the raw Dataset of
``open_raw_groups``, so xarray's Zarr backend CF-decodes as ``open_dataset`` does. zarr is imported lazily.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from .byte_layout import zarr_bytes_codec
from .errors import ZarrMappingWarning

__all__ = [
    "array_document",
    "byte_slice",
    "default_fill",
    "group_document",
    "inline_values",
    "json_attr",
    "little_endian_bytes",
    "nested_attrs",
    "zarr_attrs",
    "zarr_dtype",
    "zarr_names",
]


def json_attr(value: Any) -> Any:
    """An attribute value as JSON holds it (numpy arrays as lists, numpy scalars as Python ones)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [json_attr(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_attr(v) for k, v in value.items()}
    return value


def zarr_attrs(var: xr.Variable) -> tuple[dict[str, Any], Any]:
    """JSON attributes for the Zarr array, and its fill value (``_FillValue`` if the variable has one)."""
    from xarray.backends.zarr import FillValueCoder

    attrs = {k: json_attr(v) for k, v in var.attrs.items() if k != "_FillValue"}
    fill = var.attrs.get("_FillValue")
    if fill is not None:
        attrs["_FillValue"] = FillValueCoder.encode(fill, var.dtype)
    return attrs, fill


def default_fill(dtype: np.dtype, fill: Any) -> Any:
    """The Zarr fill value: the variable's own, else NaN for floats, else None (Zarr's default for the type)."""
    return fill if fill is not None else np.nan if dtype.kind == "f" else None


def inline_values(var: xr.Variable) -> np.ndarray:
    """The values of a variable served from memory (object strings as fixed-width text, as Zarr holds them)."""
    values = np.asarray(var.values)
    return values.astype(str) if values.dtype.kind == "O" else values


def byte_slice(data: bytes, byte_range: Any) -> bytes:
    """The bytes of ``data`` that a zarr ``ByteRequest`` (or None) asks for (Python slicing: a range past the
    end is cut)."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if byte_range is None:
        return data
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return data[max(0, len(data) - byte_range.suffix) :]
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}: pass a zarr.abc.store ByteRequest or None")


def little_endian_bytes(values: np.ndarray, dtype: np.dtype | None = None) -> bytes:
    """``values`` (in ``dtype`` when given) in C order as little-endian bytes: what Zarr's ``bytes`` codec reads."""
    dtype = values.dtype if dtype is None else dtype
    return np.ascontiguousarray(values, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype).tobytes()


def nested_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys (``mars.class``, as the backend flattens metadata maps for netCDF) nested again as JSON maps.

    A dotted key stays flat where nesting would collide with another key that is one of its prefixes (``mars``
    or ``mars.x`` next to ``mars.x.class``) or where a part is empty (``a..b``): nothing is dropped or overwritten.
    """
    keys = set(attrs)
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        parts = key.split(".")
        if len(parts) == 1 or "" in parts or any(".".join(parts[:i]) in keys for i in range(1, len(parts))):
            out[key] = value
            continue
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def zarr_names(names: Sequence[str], where: str) -> dict[str, str]:
    """``{old: new}`` for the names Zarr cannot hold (containing "/", for instance), each with a warning naming
    it; a new name that is taken gets a numbered suffix."""
    taken = set(names)
    renamed: dict[str, str] = {}
    for name in names:
        fixed = name.replace("/", "_")  # a Zarr node name: no "/", no leading "__", not empty, "." or ".."
        fixed = "_" + fixed.lstrip("_") if fixed.startswith("__") else fixed
        fixed += "_" if fixed in ("", ".", "..") else ""
        if fixed == name:
            continue
        candidate, n = fixed, 0
        while candidate in taken:
            n += 1
            candidate = f"{fixed}_{n}"
        taken.add(candidate)
        renamed[name] = candidate
        warnings.warn(
            f"{where}: {name!r} is not a valid Zarr name; it is {candidate!r} in the Zarr store "
            f"(open the file with engine='tensogram' for the original name)",
            ZarrMappingWarning,
            stacklevel=5,
        )
    return renamed


#: how small float types that Zarr v3 has no data type for are widened (exactly: every value is a float32)
_WIDENED = ("bfloat16", "float8", "float6", "float4")


def zarr_dtype(dtype: np.dtype, where: str) -> np.dtype | None:
    """The dtype the Zarr store serves ``dtype`` in: itself where Zarr has one, float32 for ml_dtypes' small
    floats (exact), else None (the variable is left out); a warning says which."""
    from zarr.core.dtype import parse_data_type

    with contextlib.suppress(ValueError, TypeError):
        parse_data_type(dtype, zarr_format=3)
        return dtype
    widened = dtype.name.startswith(_WIDENED)
    fate = "served as float32, which holds every value exactly" if widened else "left out of the Zarr store"
    warnings.warn(
        f"{where}: Zarr has no data type for {dtype.name}; it is {fate} (open the file with engine='tensogram' "
        f"for the stored dtype)",
        ZarrMappingWarning,
        stacklevel=5,
    )
    return np.dtype("float32") if widened else None


def group_document(attrs: Mapping[str, Any]) -> bytes:
    """The ``zarr.json`` of a group with ``attrs``."""
    doc = {"zarr_format": 3, "node_type": "group", "attributes": json_attr(dict(attrs))}
    return json.dumps(doc, indent=2, allow_nan=True).encode()


def array_document(
    shape: Sequence[int],
    dtype: np.dtype,
    chunk_shape: Sequence[int],
    fill: Any,
    attrs: Mapping[str, Any],
    dims: Sequence[str],
) -> bytes:
    """The ``zarr.json`` of an array whose chunks are its values in little-endian C order (``bytes`` codec),
    under Zarr's default chunk keys (``c/0/1``). zarr's own metadata class writes it, so the data type and
    fill value are spelled as zarr reads them."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.dtype import parse_data_type
    from zarr.core.metadata.v3 import ArrayV3Metadata

    zdtype = parse_data_type(dtype, zarr_format=3)
    meta = ArrayV3Metadata(
        shape=tuple(shape),
        data_type=zdtype,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
        chunk_key_encoding={"name": "default", "configuration": {"separator": "/"}},
        fill_value=zdtype.default_scalar() if fill is None else fill,
        codecs=[zarr_bytes_codec(dtype)],
        attributes=json_attr(dict(attrs)),
        dimension_names=[str(d) for d in dims],
    )
    data: bytes = meta.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes()
    return data
