"""zfp streams of float64 values (header-less, as the reference writes them), one fixed mode each."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CodecError, UnsupportedError
from .registry import require

__all__ = ["MODES", "compress", "decompress"]

#: zfp mode -> the keyword python-zfpy takes for its parameter
MODES = {"fixed_rate": "rate", "fixed_precision": "precision", "fixed_accuracy": "tolerance"}


def decompress(payload: bytes | memoryview, n: int, mode: str, parameter: float, *, where: str = "") -> np.ndarray:
    """Decode ``n`` float64 values from a 1-d zfp stream compressed with ``mode`` and its ``parameter``."""
    zfpy = require("zfpy", f"{where}zfp decompression")
    try:
        key = MODES[mode]
    except KeyError:
        raise UnsupportedError(f"{where}unknown zfp_mode {mode!r}") from None
    if n == 0:
        return np.empty(0, dtype=np.float64)
    kwargs: dict[str, Any] = {key: parameter}
    try:
        arr: np.ndarray = zfpy._decompress(bytes(payload), zfpy.type_double, [n], **kwargs)
    except Exception as exc:
        raise CodecError(f"{where}zfp stream is corrupt: {exc}") from exc
    return arr


def compress(values: np.ndarray, mode: str, parameter: float) -> bytes:
    """A header-less 1-d zfp stream of float64 ``values`` (empty input gives empty bytes)."""
    zfpy = require("zfpy", "zfp compression")
    if values.size == 0:
        return b""
    out: bytes = zfpy.compress_numpy(values, write_header=False, **{MODES[mode]: parameter})
    return out
