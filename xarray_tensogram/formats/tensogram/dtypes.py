"""Tensogram dtype names (spec §11) and their numpy equivalents."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError

__all__ = ["DTYPES", "dtype_width", "numpy_dtype"]

#: name -> (numpy dtype as the reference decoder returns it, bytes per element, byte-swap unit)
DTYPES: dict[str, tuple[str, int, int]] = {
    "float16": ("f2", 2, 2),
    "bfloat16": ("u2", 2, 2),  # the reference returns raw bit patterns as uint16
    "float32": ("f4", 4, 4),
    "float64": ("f8", 8, 8),
    "complex64": ("c8", 8, 4),
    "complex128": ("c16", 16, 8),
    "int8": ("i1", 1, 1),
    "uint8": ("u1", 1, 1),
    "int16": ("i2", 2, 2),
    "uint16": ("u2", 2, 2),
    "int32": ("i4", 4, 4),
    "uint32": ("u4", 4, 4),
    "int64": ("i8", 8, 8),
    "uint64": ("u8", 8, 8),
    "bitmask": ("u1", 0, 1),
}


def _lookup(name: str, where: str = "") -> tuple[str, int, int]:
    try:
        return DTYPES[name]
    except (KeyError, TypeError):
        raise UnsupportedError(f"{where}unknown dtype {name!r} (known: {', '.join(DTYPES)})") from None


def dtype_width(name: str, where: str = "") -> int:
    """Bytes per element (0 for bitmask, which packs 8 elements per byte)."""
    return _lookup(name, where)[1]


def numpy_dtype(name: str, where: str = "") -> np.dtype:
    """The native-order numpy dtype the reference decoder returns for ``name``."""
    return np.dtype(_lookup(name, where)[0])
