"""Vectorised bit-field packing (simple_packing payloads, bitmaps). No Python loop per element."""

from __future__ import annotations

import numpy as np

__all__ = ["pack_fields", "unpack_fields"]


def unpack_fields(raw: np.ndarray, count: int, bits: int, bit_offset: int = 0) -> np.ndarray:
    """``count`` unsigned big-endian fields of ``bits`` bits each, MSB first, packed back to back from bit
    ``bit_offset`` of the ``uint8`` array ``raw`` (missing bytes at the end read as zeros), as uint64."""
    if count == 0 or bits == 0:
        return np.zeros(count, dtype=np.uint64)
    if bit_offset:  # the bytes shifted so that the first field starts at bit 0
        shift, need = bit_offset % 8, (bit_offset % 8 + count * bits + 7) // 8
        part = raw[bit_offset // 8 : bit_offset // 8 + need + 1]
        src = np.zeros(need + 1, dtype=np.uint8)
        src[: part.size] = part
        raw = (src[:-1] << shift) | (src[1:] >> (8 - shift)) if shift else src[:-1]
    if bits in (8, 16, 32, 64):
        width = bits // 8
        return raw[: count * width].view(f">u{width}").astype(np.uint64)
    if bits <= 57:
        return _unpack_periodic(raw, count, bits)
    # 58..63 bits: too wide for the periodic accumulators; a bit matrix, each row widened to 64 bits
    matrix = np.zeros((count, 64), dtype=np.uint8)
    matrix[:, 64 - bits :] = np.unpackbits(raw, count=count * bits).reshape(count, bits)
    return np.packbits(matrix, axis=1).view(">u8").reshape(-1).astype(np.uint64)


def _unpack_periodic(raw: np.ndarray, count: int, bits: int) -> np.ndarray:
    """Fields repeat their bit alignment every ``V = 8 / gcd(bits, 8)`` fields (``P`` bytes): loop over
    the at most 8 positions of a period, each vectorised over all periods."""
    import math

    V = 8 // math.gcd(bits, 8)
    P = V * bits // 8
    groups = -(-count // V)
    need = groups * P
    if raw.size < need:
        raw = np.concatenate([raw[:need], np.zeros(need - raw.size, dtype=np.uint8)])
    g = raw[:need].reshape(groups, P)
    wide = np.uint32 if bits <= 25 else np.uint64
    out = np.empty((groups, V), dtype=wide)
    mask = wide((1 << bits) - 1)
    for k in range(V):  # positions in a period, not elements
        start = k * bits
        b0, shift = start // 8, start % 8
        nbytes = (shift + bits + 7) // 8
        acc = g[:, b0].astype(wide)
        for i in range(1, nbytes):
            acc <<= wide(8)
            acc |= g[:, b0 + i]
        acc >>= wide(nbytes * 8 - shift - bits)
        acc &= mask
        out[:, k] = acc
    return out.reshape(-1)[:count].astype(np.uint64)


def pack_fields(values: np.ndarray, bits: int) -> bytes:
    """Inverse of :func:`unpack_fields` with ``bit_offset=0``: ``ceil(n*bits/8)`` bytes, zero-filled tail."""
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    n = values.size
    if n == 0 or bits == 0:
        return b""
    if bits % 8 == 0:
        width = bits // 8
        if width in (1, 2, 4, 8):
            return values.astype(f">u{width}").tobytes()
        return values.astype(">u8").view(np.uint8).reshape(n, 8)[:, 8 - width :].tobytes()  # the low bytes
    shifts = np.arange(bits - 1, -1, -1, dtype=np.uint64)  # a bit matrix: n x bits, MSB first, then packed
    return np.packbits(((values[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)).tobytes()
