"""Byte shuffle (HDF5/Blosc style): byte k of every element stored together, for better compression."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError, EncodeError, MetadataError
from .base import Buffer, Codec, Param, as_bytes

__all__ = ["CODEC", "shuffle", "unshuffle"]


def unshuffle(raw: np.ndarray, element_size: int) -> np.ndarray:
    """Undo :func:`shuffle` on a flat ``uint8`` array whose size is a multiple of ``element_size``."""
    if element_size == 1 or raw.size == 0:
        return raw
    return np.ascontiguousarray(raw.reshape(element_size, -1).T).reshape(-1)


def shuffle(raw: np.ndarray, element_size: int) -> np.ndarray:
    """Byte k of every ``element_size``-byte element stored together: :func:`unshuffle`'s transpose, other shape."""
    return raw if element_size == 1 else unshuffle(raw, raw.size // element_size)


class Shuffle(Codec):
    """The byte shuffle as a filter: ``element_size`` bytes per element (worked out by the format)."""

    name = "shuffle"
    params = (Param("element_size", int, bounds=(1, 2**31), doc="bytes per element"),)

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        raw = np.frombuffer(as_bytes(payload), np.uint8)
        size = params.get("element_size")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise MetadataError(f"{where}shuffle_element_size {size!r} must be a positive integer")
        if raw.size % size:
            raise CodecError(f"{where}shuffled payload of {raw.size} bytes is not a multiple of {size}")
        return unshuffle(raw, size)

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        raw = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
        size = int(params.get("element_size", 1))
        if size <= 0 or raw.size % size:
            raise EncodeError(f"shuffle_element_size {size!r} does not divide the {raw.size}-byte payload")
        return shuffle(raw, size).tobytes(), {}

    def zarr(self, params: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        size = params.get("element_size")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            return None
        return [{"name": "numcodecs.shuffle", "configuration": {"elementsize": size}}]


CODEC = Shuffle()
