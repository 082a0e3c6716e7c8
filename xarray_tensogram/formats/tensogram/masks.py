"""NaN/Inf companion masks (Tensogram spec §15): blob bytes -> boolean mask of n elements."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...codecs import zstd
from ...codecs.registry import require
from ...errors import CodecError, UnsupportedError

__all__ = ["decode_mask", "rle_decode", "rle_encode", "roaring_decode", "MASK_METHODS"]

MASK_METHODS = ("none", "rle", "roaring", "lz4", "zstd", "blosc2")


def _unpack(packed: bytes | np.ndarray, n: int, where: str) -> np.ndarray:
    raw = np.frombuffer(packed, dtype=np.uint8) if not isinstance(packed, np.ndarray) else packed
    if raw.size < (n + 7) // 8:
        raise CodecError(f"{where}mask bitmap has {raw.size} bytes, {(n + 7) // 8} needed for {n} elements")
    return np.unpackbits(raw, count=n).astype(bool)


def rle_decode(blob: bytes | memoryview, n: int, where: str = "") -> np.ndarray:
    """Runs of alternating values: first byte = first value, then LEB128 run lengths summing to n."""
    out = np.zeros(n, dtype=bool)
    blob = bytes(blob)
    if n == 0:
        return out
    if not blob or blob[0] > 1:
        raise CodecError(f"{where}RLE mask must start with 0 or 1")
    value = bool(blob[0])
    pos, i = 0, 1
    while i < len(blob):
        run, shift = 0, 0
        while True:
            if i >= len(blob) or shift > 63:
                raise CodecError(f"{where}RLE mask has a truncated run length")
            b = blob[i]
            i += 1
            run |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if run < 1 or pos + run > n:
            raise CodecError(f"{where}RLE mask runs exceed {n} elements")
        if value:
            out[pos : pos + run] = True
        pos += run
        value = not value
    if pos != n:
        raise CodecError(f"{where}RLE mask runs sum to {pos}, expected {n}")
    return out


def rle_encode(bits: np.ndarray) -> bytes:
    bits = np.asarray(bits, dtype=bool).reshape(-1)
    if bits.size == 0:
        return b""
    change = np.flatnonzero(np.diff(bits.astype(np.int8))) + 1
    bounds = np.concatenate([[0], change, [bits.size]])
    out = bytearray([int(bits[0])])
    for run in np.diff(bounds):
        run = int(run)
        while True:
            b = run & 0x7F
            run >>= 7
            out.append(b | (0x80 if run else 0))
            if not run:
                break
    return bytes(out)


def roaring_decode(blob: bytes | memoryview, n: int, where: str = "") -> np.ndarray:
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


def decode_mask(method: str, blob: bytes | memoryview, n: int, params: Mapping[str, Any] | None = None,
                where: str = "") -> np.ndarray:
    """Decode one mask blob into a boolean array of ``n`` elements."""
    nbytes = (n + 7) // 8
    if method == "none":
        return _unpack(bytes(blob), n, where)
    if method == "rle":
        return rle_decode(blob, n, where)
    if method == "roaring":
        return roaring_decode(blob, n, where)
    if method == "zstd":
        return _unpack(zstd.decompress(blob, nbytes, where=where), n, where)
    if method == "lz4":
        from .compression import decompress

        return _unpack(decompress("lz4", blob, nbytes, {}, where), n, where)
    if method == "blosc2":
        from .compression import decompress

        return _unpack(decompress("blosc2", blob, nbytes, {}, where), n, where)
    raise UnsupportedError(f"{where}unknown mask method {method!r} (known: {', '.join(MASK_METHODS)})")
