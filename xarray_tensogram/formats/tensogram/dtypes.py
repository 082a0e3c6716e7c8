"""Tensogram dtype names (spec §11) and their numpy equivalents."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError

__all__ = ["DTYPES", "dtype_width", "numpy_dtype"]

#: name -> the numpy dtype the reference decoder returns (bitmask: its packed bytes)
DTYPES: dict[str, str] = {
    "float16": "f2",
    "bfloat16": "u2",  # the reference returns raw bit patterns as uint16
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "int64": "i8",
    "uint64": "u8",
    "bitmask": "u1",
}


def numpy_dtype(name: str, where: str = "") -> np.dtype:
    """The native-order numpy dtype the reference decoder returns for ``name``."""
    try:
        return np.dtype(DTYPES[name])
    except (KeyError, TypeError):
        raise UnsupportedError(f"{where}unknown dtype {name!r} (known: {', '.join(DTYPES)})") from None


def dtype_width(name: str, where: str = "") -> int:
    """Bytes per element (0 for bitmask, which packs 8 elements per byte)."""
    return 0 if name == "bitmask" else numpy_dtype(name, where).itemsize
