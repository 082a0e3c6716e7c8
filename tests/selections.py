"""Random OUTER selections and their numpy reference, shared by the concurrency tests."""

from __future__ import annotations

import numpy as np


def random_selection(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    """One axis key per dimension: an integer, a slice or a sorted array of unique integers."""
    key = []
    for n in shape:
        kind = rng.integers(3)
        if kind == 0:
            key.append(int(rng.integers(n)))
        elif kind == 1:
            a = int(rng.integers(n))
            key.append(slice(a, int(rng.integers(a, n + 1)) or None))
        else:
            key.append(np.unique(rng.integers(0, n, size=rng.integers(1, 4))))
    return tuple(key)


def outer(values: np.ndarray, key: tuple) -> np.ndarray:
    """Apply an OUTER key with numpy, axis by axis (the oracle for the lazy array)."""
    for axis in reversed(range(len(key))):
        k = key[axis]
        values = np.take(values, k, axis=axis) if isinstance(k, np.ndarray) else values[(slice(None),) * axis + (k,)]
    return values
