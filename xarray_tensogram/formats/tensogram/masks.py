"""NaN/Inf companion masks (Tensogram spec §15): mask method and blob bytes -> boolean mask of n elements.

The bitmap codecs themselves (packed bits, RLE, roaring, and the byte compressors
applied to packed bits) are format-free and live in :mod:`xarray_tensogram.codecs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...codecs import bitmaps, blosc2, lz4, zstd
from ...errors import UnsupportedError

__all__ = ["MASK_METHODS", "decode_mask"]

MASK_METHODS = ("none", "rle", "roaring", "lz4", "zstd", "blosc2")


def decode_mask(
    method: str, blob: bytes | memoryview, n: int, params: Mapping[str, Any] | None = None, where: str = ""
) -> np.ndarray:
    """Decode one mask blob into a boolean array of ``n`` elements."""
    nbytes = (n + 7) // 8
    if method == "none":
        return bitmaps.unpack(bytes(blob), n, where)
    if method == "rle":
        return bitmaps.rle_decode(blob, n, where)
    if method == "roaring":
        return bitmaps.roaring_decode(blob, n, where)
    if method == "zstd":
        return bitmaps.unpack(zstd.decompress(blob, nbytes, where=where), n, where)
    if method == "lz4":
        return bitmaps.unpack(lz4.decompress(blob, nbytes, where=where), n, where)
    if method == "blosc2":
        return bitmaps.unpack(blosc2.decompress(blob, nbytes, where=where), n, where)
    raise UnsupportedError(f"{where}unknown mask method {method!r} (known: {', '.join(MASK_METHODS)})")
