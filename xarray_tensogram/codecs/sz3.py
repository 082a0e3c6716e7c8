"""SZ3 streams of float64 values, decoded through pysz."""

from __future__ import annotations

import numpy as np

from ..errors import CodecError
from .limits import check_ratio
from .registry import require

__all__ = ["decompress"]


def decompress(payload: bytes | memoryview, n: int, *, where: str = "") -> np.ndarray:
    """Decode ``n`` float64 values; a stream too short to hold them is refused before allocating."""
    sz = require("pysz", f"{where}sz3 decompression").sz
    check_ratio("sz3", len(payload), 8 * n, where)
    if n == 0:
        return np.empty(0, dtype=np.float64)
    try:
        arr, _cfg = sz.decompress(np.frombuffer(payload, np.uint8), np.float64, (n,))
    except Exception as exc:
        raise CodecError(f"{where}sz3 stream is corrupt: {exc}") from exc
    out: np.ndarray = arr
    return out
