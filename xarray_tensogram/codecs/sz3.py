"""SZ3 streams of float64 values, decoded through pysz."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError
from .base import Buffer, Capabilities, Codec, Param, as_bytes
from .optional import require

__all__ = ["CODEC"]


class Sz3(Codec):
    """SZ3 streams of float64 values, read-only (no Python library writes streams the reference reads)."""

    name = "sz3"
    params = (
        Param("error_bound", float, doc="the error bound the stream was written with (informative)"),
        Param("error_bound_mode", str, doc="how the bound applies (informative)"),
    )
    capabilities = Capabilities(encode=False)
    max_ratio = 32768

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        if expected % 8:
            raise CodecError(f"{where}sz3 decodes float64 values but {expected} bytes are expected")
        sz = require("pysz", f"{where}sz3 decompression").sz
        view = as_bytes(payload)
        self.check_ratio(len(view), expected, where)  # a stream too short for the values: refused before allocating
        if expected == 0:
            return np.empty(0, dtype=np.float64)
        try:
            values, _cfg = sz.decompress(np.frombuffer(view, np.uint8), np.float64, (expected // 8,))
        except Exception as exc:
            raise CodecError(f"{where}sz3 stream is corrupt: {exc}") from exc
        return np.asarray(values)


CODEC = Sz3()
