"""LZ4 blocks with a 4-byte little-endian size prefix (python-lz4's ``store_size=True`` form)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError
from .base import Buffer, Capabilities, Codec, as_bytes, check_size, out_bytes
from .optional import available, require

__all__ = ["CODEC", "decompress", "decompress_into"]


def _check_prefix(payload: bytes | memoryview, expected: int, where: str) -> None:
    """The 4-byte size prefix must declare ``expected`` bytes, and the block must be able to hold them."""
    if len(payload) < 4:
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes has no 4-byte size prefix")
    declared = struct.unpack("<I", payload[:4])[0]
    if expected > 255 * len(payload) + 64:  # LZ4 cannot expand more than ~255:1
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes cannot decode to {expected} bytes")
    if declared != expected:
        raise CodecError(f"{where}lz4 payload declares {declared} decoded bytes, descriptor implies {expected}")


def decompress(payload: bytes | memoryview, expected: int, *, where: str = "") -> bytes:
    """Decode one size-prefixed block into exactly ``expected`` bytes (refused before allocating if impossible)."""
    lz4_block = require("lz4.block", f"{where}lz4 decompression")
    _check_prefix(payload, expected, where)
    try:
        # the block is read in place (a slice of a memoryview is no copy)
        out: bytes = lz4_block.decompress(memoryview(payload)[4:], uncompressed_size=expected)
    except Exception as exc:  # lz4 raises LZ4BlockError (a RuntimeError)
        raise CodecError(f"{where}lz4 block is corrupt: {exc}") from exc
    check_size(out, expected, "lz4", where)
    return out


def decompress_into(payload: bytes | memoryview, out: np.ndarray, *, where: str = "") -> None:
    """Decode one size-prefixed block into ``out`` (writable, C-contiguous), which it must fill exactly: straight
    into it with ``cramjam`` installed (an accelerator only: python-lz4, which the codec requires, can only
    return new bytes, a temporary the size of the decoded data to allocate, fault in and copy)."""
    flat = out_bytes(out)
    require("lz4.block", f"{where}lz4 decompression")
    if flat.size == 0 or not available("cramjam"):
        flat[...] = np.frombuffer(decompress(payload, flat.size, where=where), dtype=np.uint8)
        return
    _check_prefix(payload, flat.size, where)
    cramjam = require("cramjam", f"{where}lz4 decompression")
    try:
        got = cramjam.lz4.decompress_block_into(memoryview(payload)[4:], flat)
    except Exception as exc:  # cramjam raises DecompressionError (an Exception)
        raise CodecError(f"{where}lz4 block is corrupt: {exc}") from exc
    check_size(flat[:got], flat.size, "lz4", where)


class Lz4(Codec):
    """Size-prefixed LZ4 blocks. Zarr's lz4 codec frames blocks differently, so Zarr cannot read these."""

    name = "lz4"
    capabilities = Capabilities(decode_into=True, mapped_input=False)
    max_ratio = 255

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return decompress(as_bytes(payload), expected, where=where)

    def decode_into(self, payload: Buffer, out: np.ndarray, params: Mapping[str, Any], where: str = "") -> None:
        decompress_into(as_bytes(payload), out, where=where)

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """One size-prefixed block, as the reference writers emit it."""
        return require("lz4.block", "lz4 compression").compress(bytes(as_bytes(data)), store_size=True), {}


CODEC = Lz4()
