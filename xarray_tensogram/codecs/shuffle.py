"""Byte shuffle (HDF5/Blosc style): byte k of every element stored together, for better compression."""

from __future__ import annotations

import numpy as np

__all__ = ["shuffle", "unshuffle"]


def unshuffle(raw: np.ndarray, element_size: int) -> np.ndarray:
    """Undo :func:`shuffle` on a flat ``uint8`` array whose size is a multiple of ``element_size``."""
    if element_size == 1 or raw.size == 0:
        return raw
    return np.ascontiguousarray(raw.reshape(element_size, -1).T).reshape(-1)


def shuffle(raw: np.ndarray, element_size: int) -> np.ndarray:
    """Group byte k of every ``element_size``-byte element together (k = 0 .. element_size - 1)."""
    if element_size == 1 or raw.size == 0:
        return raw
    return np.ascontiguousarray(raw.reshape(-1, element_size).T).reshape(-1)
