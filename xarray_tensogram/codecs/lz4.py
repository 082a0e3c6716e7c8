"""LZ4 blocks with a 4-byte little-endian size prefix (python-lz4's ``store_size=True`` form)."""

from __future__ import annotations

import struct

from ..errors import CodecError
from .limits import check_size
from .registry import require

__all__ = ["compress", "decompress"]


def decompress(payload: bytes | memoryview, expected: int, *, where: str = "") -> bytes:
    """Decode one size-prefixed block into exactly ``expected`` bytes (refused before allocating if impossible)."""
    lz4_block = require("lz4.block", f"{where}lz4 decompression")
    if len(payload) < 4:
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes has no 4-byte size prefix")
    declared = struct.unpack("<I", payload[:4])[0]
    if expected > 255 * len(payload) + 64:  # LZ4 cannot expand more than ~255:1
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes cannot decode to {expected} bytes")
    if declared != expected:
        raise CodecError(f"{where}lz4 payload declares {declared} decoded bytes, descriptor implies {expected}")
    try:
        out: bytes = lz4_block.decompress(bytes(payload[4:]), uncompressed_size=expected)
    except Exception as exc:  # lz4 raises LZ4BlockError (a RuntimeError)
        raise CodecError(f"{where}lz4 block is corrupt: {exc}") from exc
    check_size(out, expected, "lz4", where)
    return out


def compress(data: bytes | memoryview) -> bytes:
    """One size-prefixed block, as the reference writers emit it."""
    out: bytes = require("lz4.block", "lz4 compression").compress(bytes(data), store_size=True)
    return out
