"""Boolean bitmaps: packed bits, run lengths (LEB128 runs of alternating values) and roaring bitmaps."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError
from .base import Buffer, Codec, Param, as_bytes
from .optional import require

__all__ = ["RLE", "ROARING", "rle_decode", "rle_encode", "roaring_decode", "roaring_encode", "unpack"]


def unpack(packed: bytes | memoryview | np.ndarray, n: int, where: str = "") -> np.ndarray:
    """The first ``n`` bits of an MSB-first packed bitmap, as booleans."""
    raw = np.frombuffer(packed, dtype=np.uint8) if not isinstance(packed, np.ndarray) else packed
    if raw.size < (n + 7) // 8:
        raise CodecError(f"{where}mask bitmap has {raw.size} bytes, {(n + 7) // 8} needed for {n} elements")
    return np.unpackbits(raw, count=n).astype(bool)


def _leb128(blob: bytes, i: int, where: str) -> tuple[int, int]:
    """One unsigned LEB128 value starting at ``blob[i]``: (value, index after it)."""
    run, shift = 0, 0
    while True:
        if i >= len(blob) or shift > 63:
            raise CodecError(f"{where}RLE mask has a truncated run length")
        b = blob[i]
        i += 1
        run |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return run, i


def rle_decode(blob: bytes | memoryview, n: int, where: str = "") -> np.ndarray:
    """Runs of alternating values: first byte = first value, then LEB128 run lengths summing to n."""
    data = bytes(blob)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if not data or data[0] > 1:
        raise CodecError(f"{where}RLE mask must start with 0 or 1")
    runs, pos, i = [], 0, 1
    while i < len(data):
        run, i = _leb128(data, i, where)
        pos += run
        if run < 1 or pos > n:  # checked before anything is allocated
            raise CodecError(f"{where}RLE mask runs exceed {n} elements")
        runs.append(run)
    if pos != n:
        raise CodecError(f"{where}RLE mask runs sum to {pos}, expected {n}")
    return np.repeat((np.arange(len(runs)) + data[0]) % 2 == 1, runs)


def rle_encode(bits: np.ndarray) -> bytes:
    """The inverse of :func:`rle_decode` (empty input gives empty bytes)."""
    bits = np.asarray(bits, dtype=bool).reshape(-1)
    if bits.size == 0:
        return b""
    change = np.flatnonzero(np.diff(bits.astype(np.int8))) + 1
    bounds = np.concatenate([[0], change, [bits.size]])
    out = bytearray([int(bits[0])])
    for run in np.diff(bounds).tolist():
        while run > 0x7F:  # LEB128: seven bits a byte, the high bit set on all but the last
            out.append(run & 0x7F | 0x80)
            run >>= 7
        out.append(run)
    return bytes(out)


def roaring_decode(blob: bytes | memoryview, n: int, where: str = "") -> np.ndarray:
    """A serialised roaring bitmap of set positions -> ``n`` booleans (positions >= n are refused)."""
    pyroaring = require("pyroaring", f"{where}roaring mask decoding")
    try:
        bm = pyroaring.BitMap.deserialize(bytes(blob))
    except Exception as exc:
        raise CodecError(f"{where}roaring bitmap is corrupt: {exc}") from exc
    if len(bm) and bm.max() >= n:
        raise CodecError(f"{where}roaring bitmap sets bit {bm.max()} beyond {n} elements")
    out = np.zeros(n, dtype=bool)
    if len(bm):
        out[np.asarray(bm.to_array(), dtype=np.int64)] = True
    return out


def roaring_encode(bits: np.ndarray) -> bytes:
    """The set positions of ``bits`` as a run-optimised serialised roaring bitmap."""
    pyroaring = require("pyroaring", "roaring encoding")
    bm = pyroaring.BitMap(np.flatnonzero(bits).tolist())
    bm.run_optimize()
    return bytes(bm.serialize())


class _Bitmap(Codec):
    """A bitmap codec over packed bits: ``decode`` gives ``expected`` packed bytes holding ``bits`` bits
    (default: all of them), ``encode`` takes packed bytes and the same ``bits``."""

    params = (Param("bits", int, bounds=(0, 2**63), doc="number of bits", derived=True),)
    #: (stored bytes, bit count, where) -> booleans, and back
    decode_bits: ClassVar[Callable[[bytes | memoryview, int, str], np.ndarray]]
    encode_bits: ClassVar[Callable[[np.ndarray], bytes]]

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        n = int(params.get("bits", 8 * expected))
        if (n + 7) // 8 != expected:
            raise CodecError(f"{where}{self.name} bitmap of {n} bits cannot fill {expected} bytes")
        return np.packbits(type(self).decode_bits(as_bytes(payload), n, where))

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        raw = np.frombuffer(as_bytes(data), dtype=np.uint8)
        n = int(params.get("bits", 8 * raw.size))
        return type(self).encode_bits(np.unpackbits(raw, count=n).astype(bool)), {}


class Rle(_Bitmap):
    """Run lengths of alternating values (LEB128), starting with a run of zeros."""

    name = "rle"
    decode_bits, encode_bits = rle_decode, rle_encode


class Roaring(_Bitmap):
    """A serialised roaring bitmap of the set positions (needs ``pyroaring``)."""

    name = "roaring"
    decode_bits, encode_bits = roaring_decode, roaring_encode


RLE = Rle()
ROARING = Roaring()
