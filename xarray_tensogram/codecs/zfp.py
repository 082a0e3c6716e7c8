"""zfp streams of float64 values (header-less, as the reference writes them), one fixed mode each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError, EncodeError, UnsupportedError
from .base import Buffer, Codec, Param
from .optional import require

__all__ = ["CODEC", "MODES", "compress", "decompress"]

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


class Zfp(Codec):
    """Header-less 1-d zfp streams of float64 values, in one fixed mode with its one parameter."""

    name = "zfp"
    params = (
        Param("mode", str, "fixed_precision", choices=tuple(MODES), doc="zfp's mode"),
        Param("rate", float, 16.0, bounds=(0.0, 64.0), doc="bits per value (fixed_rate)"),
        Param("precision", int, 32, bounds=(1, 64), doc="bit planes kept (fixed_precision)"),
        Param("tolerance", float, doc="absolute error bound (fixed_accuracy)"),
    )
    max_ratio = 512

    def resolve(self, given: Mapping[str, Any], *, what: str = "") -> dict[str, Any]:
        """Only the parameter of the chosen mode gets its default (the others stay unset)."""
        out = super().resolve(given, what=what)
        mode_param = MODES[out["mode"]]
        for p in ("rate", "precision", "tolerance"):
            if p != mode_param and p not in given:
                out.pop(p, None)
        if mode_param not in out:
            raise EncodeError(f"{what}zfp mode {out['mode']!r} needs its parameter {mode_param!r}")
        return out

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        if expected % 8:
            raise CodecError(f"{where}zfp decodes float64 values but {expected} bytes are expected")
        mode = params.get("mode")
        if mode not in MODES:
            raise UnsupportedError(f"{where}unknown zfp_mode {mode!r}")
        return decompress(_view(payload), expected // 8, str(mode), params[MODES[str(mode)]], where=where)

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        p = self.resolve(params)
        values = np.frombuffer(_view(data), dtype=np.float64)
        return compress(values, p["mode"], p[MODES[p["mode"]]]), {}


def _view(data: Buffer) -> bytes | memoryview:
    return data.data.cast("B") if isinstance(data, np.ndarray) else data


CODEC = Zfp()
