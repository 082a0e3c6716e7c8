"""zfp streams of float64 values (header-less, as the reference writes them), one fixed mode each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError, EncodeError, UnsupportedError
from .base import Buffer, Capabilities, Codec, Param, as_bytes
from .optional import require

__all__ = ["CODEC", "MODES"]

#: zfp mode -> the keyword python-zfpy takes for its parameter
MODES = {"fixed_rate": "rate", "fixed_precision": "precision", "fixed_accuracy": "tolerance"}


def _decompress(stream: bytes, count: int, where: str, **mode: float) -> np.ndarray:
    """``count`` float64 values of a header-less 1-d zfp stream written in ``mode`` (python-zfpy's keyword)."""
    zfpy = require("zfpy", f"{where}zfp decompression")
    try:
        values: np.ndarray = zfpy._decompress(stream, zfpy.type_double, [count], **mode)
    except Exception as exc:
        raise CodecError(f"{where}zfp stream is corrupt: {exc}") from exc
    return values


def block_bits(rate: float) -> int:
    """Bits of each 4-value block of a 1-d fixed-rate stream of doubles (zfp's ``zfp_stream_set_rate``, unaligned)."""
    return max(int(np.floor(4 * float(rate) + 0.5)), 12)


def _shifted(stream: np.ndarray, shift: int, nbytes: int) -> bytes:
    """``nbytes`` of a zfp bit stream (bits taken least significant first) starting ``shift`` bits into
    ``stream``, padded with zero words so the decoder never reads past the buffer."""
    head = np.zeros(nbytes + 1, dtype=np.uint8)
    take = stream[: nbytes + 1]
    head[: take.size] = take
    head = ((head[:-1] >> shift) | (head[1:] << (8 - shift))).astype(np.uint8) if shift else head[:-1]
    return head.tobytes() + bytes(-nbytes % 8 + 16)


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
    capabilities = Capabilities(partial_decode=True)

    def decodes_range(self, params: Mapping[str, Any], total: int) -> bool:
        """Fixed-rate streams only: every block then takes the same number of bits."""
        rate = params.get("rate")
        return params.get("mode") == "fixed_rate" and isinstance(rate, (int, float)) and not isinstance(rate, bool)

    def stored_span(self, lo: int, hi: int, total: int, stored: int, params: Mapping[str, Any]) -> tuple[int, int]:
        bits = block_bits(params["rate"])
        first, last = lo // 32, max(lo, hi - 1) // 32
        return min(first * bits // 8, stored), min(((last + 1) * bits + 7) // 8 + 1, stored)

    def merge_gap(self, params: Mapping[str, Any]) -> int:
        """Eight 4-value blocks: a fixed-rate restart costs a call, and zfp decodes each value slowly."""
        return 8 * 32

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        """Doubles of the 4-value blocks holding bytes ``[lo, hi)``, decoded from those blocks' bits alone."""
        bits = block_bits(params["rate"])
        first, last = lo // 32, max(lo, hi - 1) // 32
        count = min((last + 1) * 4, total // 8) - first * 4
        src = np.frombuffer(as_bytes(piece), dtype=np.uint8)[first * bits // 8 - base :]
        stream = _shifted(src, first * bits % 8, ((last + 1 - first) * bits + 7) // 8)
        values = _decompress(stream, count, where, rate=float(params["rate"]))
        return values.view(np.uint8)[lo - first * 32 : hi - first * 32]

    def resolve(self, given: Mapping[str, Any], *, what: str = "") -> dict[str, Any]:
        """Only the parameter of the chosen mode gets its default (the others stay unset)."""
        out = super().resolve(given, what=what)
        mode_param = MODES[out["mode"]]
        for p in set(MODES.values()) - {mode_param} - set(given):
            out.pop(p, None)
        if mode_param not in out:
            raise EncodeError(f"{what}zfp mode {out['mode']!r} needs its parameter {mode_param!r}")
        return out

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        if expected % 8:
            raise CodecError(f"{where}zfp decodes float64 values but {expected} bytes are expected")
        key = MODES.get(str(params.get("mode")))
        if key is None:
            raise UnsupportedError(f"{where}unknown zfp_mode {params.get('mode')!r}")
        require("zfpy", f"{where}zfp decompression")
        if expected == 0:
            return np.empty(0, dtype=np.float64)
        return _decompress(bytes(as_bytes(payload)), expected // 8, where, **{key: params[key]})

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """A header-less 1-d zfp stream of the float64 values (empty input gives empty bytes)."""
        p = self.resolve(params)
        zfpy = require("zfpy", "zfp compression")
        values = np.frombuffer(as_bytes(data), dtype=np.float64)
        if values.size == 0:
            return b"", {}
        key = MODES[p["mode"]]
        return zfpy.compress_numpy(values, write_header=False, **{key: p[key]}), {}


CODEC = Zfp()
