"""Hashes and checksums: xxh3-64 (Tensogram, zTensor v2), CRC-32C and SHA-256 (zTensor v0.1/v1)."""

from __future__ import annotations

import hashlib

import numpy as np
import xxhash

from .optional import available, require

__all__ = ["crc32c", "sha256_hex", "xxh3_64"]


def xxh3_64(data: bytes | memoryview) -> int:
    """XXH3-64 with seed 0, as an unsigned int."""
    return xxhash.xxh3_64_intdigest(data)


def sha256_hex(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def _crc32c_table() -> np.ndarray:
    poly = 0x82F63B78
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE: list[int] | None = None


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli). Uses ``google-crc32c`` (C) when installed, else a table in Python."""
    if available("google_crc32c"):
        return int(require("google_crc32c", "CRC-32C").value(bytes(data)))
    global _TABLE
    if _TABLE is None:
        _TABLE = [int(x) for x in _crc32c_table()]
    table = _TABLE
    crc = 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
