"""Vectorised bit-field packing (simple_packing payloads, bitmaps). No Python loop per element."""

from __future__ import annotations

import numpy as np

__all__ = ["pack_fields", "unpack_fields"]


def _gather_u64(buf: np.ndarray, byte_index: np.ndarray) -> np.ndarray:
    """Big-endian u64 words starting at each ``byte_index`` (buf must be padded by 8 bytes)."""
    windows = np.lib.stride_tricks.as_strided(buf, shape=(buf.size - 7, 8), strides=(1, 1))
    words: np.ndarray = windows[byte_index].view(">u8").reshape(-1).astype(np.uint64)
    return words


def unpack_fields(payload: bytes | memoryview | np.ndarray, count: int, bits: int, bit_offset: int = 0) -> np.ndarray:
    """Read ``count`` unsigned big-endian fields of ``bits`` bits each, MSB first, packed back to back.

    ``bit_offset`` is where the first field starts in ``payload``. Returns uint64.
    """
    if count == 0 or bits == 0:
        return np.zeros(count, dtype=np.uint64)
    raw = np.frombuffer(payload, dtype=np.uint8) if not isinstance(payload, np.ndarray) else payload.view(np.uint8)
    if bit_offset == 0 and bits in (8, 16, 32, 64):
        width = bits // 8
        return raw[: count * width].view(f">u{width}").astype(np.uint64)
    if bit_offset == 0 and bits <= 57:
        return _unpack_periodic(raw, count, bits)
    buf = np.concatenate([raw, np.zeros(16, dtype=np.uint8)])
    starts = bit_offset + np.arange(count, dtype=np.int64) * bits
    byte_index = starts >> 3
    shift = (starts & 7).astype(np.uint64)
    hi = _gather_u64(buf, byte_index)
    if bits <= 57:
        head: np.ndarray = (hi << shift) >> np.uint64(64 - bits)
        return head
    lo = _gather_u64(buf, byte_index + 8)
    # combine: the 64-bit window starting at bit `shift`
    with np.errstate(over="ignore"):
        nonzero = shift != 0
        window: np.ndarray = hi.copy()
        window[nonzero] = (hi[nonzero] << shift[nonzero]) | (lo[nonzero] >> (np.uint64(64) - shift[nonzero]))
    if bits == 64:
        return window
    shifted: np.ndarray = window >> np.uint64(64 - bits)
    return shifted


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
    nbytes = (n * bits + 7) // 8
    if bits % 8 == 0:
        width = bits // 8
        if width in (1, 2, 4, 8):
            return values.astype(f">u{width}").tobytes()
        out = np.empty((n, width), dtype=np.uint8)
        for k in range(width):
            out[:, width - 1 - k] = ((values >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8)
        return out.tobytes()
    # bit matrix: n x bits, MSB first, then pack
    shifts = np.arange(bits - 1, -1, -1, dtype=np.uint64)
    bitmat = ((values[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)
    packed = np.packbits(bitmat.reshape(-1))
    return packed[:nbytes].tobytes()
