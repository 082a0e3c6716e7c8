"""Hashes and checksums: xxh3-64 (Tensogram, zTensor v2), CRC-32C and SHA-256 (zTensor v0.1/v1)."""

from __future__ import annotations

import hashlib
from functools import cache

import xxhash

from .optional import available, require

__all__ = ["crc32c", "sha256_hex", "xxh3_64"]


def xxh3_64(data: bytes | memoryview) -> int:
    """XXH3-64 with seed 0, as an unsigned int."""
    return xxhash.xxh3_64_intdigest(data)


def sha256_hex(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def _crc32c_table() -> list[int]:
    """The CRC-32C byte table (reflected polynomial 0x82F63B78)."""
    table = []
    for c in range(256):
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli). Uses ``google-crc32c`` (C) when installed, else a table in Python."""
    if available("google_crc32c"):
        return int(require("google_crc32c", "CRC-32C").value(bytes(data)))
    table, crc = _crc32c_table(), 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
