"""The one lazy array of the package, shared by every format.

:class:`LazyChunkedArray` wraps an :class:`~xarray_tensogram.catalog.ArraySpec`.
It supports xarray's OUTER indexing: each axis takes an integer, a slice or an
integer array. The key is mapped onto the spec's chunk grid; only the chunks
the key touches are read, and each chunk reader is asked only for the bounding
region of the positions it must supply (so a raw payload can be read by byte
range). Results are written in place into one output array.

No lock: chunk readers are thread-safe, so Dask's threaded scheduler decodes
chunks in parallel, and the array pickles (its spec holds paths, not handles).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from xarray.backends import BackendArray
from xarray.core import indexing

from .catalog import ArraySpec, MissingChunk
from .errors import LimitExceededError

__all__ = ["LazyChunkedArray", "plan_axis"]


def plan_axis(index: Any, size: int, chunk: int) -> tuple[list[tuple[int, Any, Any, slice]], int | None, bool]:
    """Map one axis of an OUTER key onto chunks.

    Returns ``(parts, out_len, squeeze)`` where each part is
    ``(chunk_id, out_sel, local_sel, read_slice)``: ``read_slice`` is the bounding
    range to read inside the chunk, ``local_sel`` selects from what was read and
    ``out_sel`` places it in the output (slices when the pattern is regular, else
    integer arrays).
    """
    squeeze = False
    if isinstance(index, (int, np.integer)):
        k = int(index)
        if k < 0:
            k += size
        positions = np.array([k], dtype=np.int64)
        squeeze = True
    elif isinstance(index, slice):
        start, stop, step = index.indices(size)
        if step == 1:
            # fast path without materialising positions
            parts = []
            if stop <= start:
                return [], 0, False
            first_c, last_c = start // chunk, (stop - 1) // chunk
            for c in range(first_c, last_c + 1):
                lo = max(start, c * chunk)
                hi = min(stop, (c + 1) * chunk)
                parts.append((c, slice(lo - start, hi - start), slice(None), slice(lo - c * chunk, hi - c * chunk)))
            return parts, stop - start, False
        positions = np.arange(start, stop, step, dtype=np.int64)
    else:
        positions = np.asarray(index, dtype=np.int64).reshape(-1)
        positions = np.where(positions < 0, positions + size, positions)
    n = positions.size
    if n == 0:
        return [], 0, squeeze
    if positions.min() < 0 or positions.max() >= size:
        raise IndexError(f"index out of bounds for axis of size {size}")
    chunk_ids = positions // chunk
    parts = []
    order = np.argsort(chunk_ids, kind="stable")
    sorted_ids = chunk_ids[order]
    bounds = np.flatnonzero(np.diff(sorted_ids)) + 1
    for group in np.split(order, bounds):
        c = int(chunk_ids[group[0]])
        local = positions[group] - c * chunk
        lo, hi = int(local.min()), int(local.max()) + 1
        parts.append((c, group, local - lo, slice(lo, hi)))
    return parts, n, squeeze


class LazyChunkedArray(BackendArray):
    """Lazy, picklable, lock-free view of an :class:`ArraySpec` for xarray."""

    def __init__(self, spec: ArraySpec) -> None:
        self.spec = spec
        self.shape = spec.shape
        self.dtype = spec.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._getitem_outer
        )

    def _getitem_outer(self, key: tuple[Any, ...]) -> np.ndarray:
        return read_outer(self.spec, key)


def _fill_for(dtype: np.dtype, fill_value: Any) -> Any:
    if fill_value is not None:
        return fill_value
    if dtype.kind in "fc":
        return np.nan
    return 0


def read_outer(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray:
    """Read an OUTER key (ints, slices, int arrays per axis) from ``spec``."""
    key = tuple(key) + (slice(None),) * (len(spec.shape) - len(key))
    plans = [plan_axis(k, s, c) for k, s, c in zip(key, spec.shape, spec.chunk_shape)]
    out_shape = tuple(p[1] for p in plans)
    squeeze_axes = tuple(i for i, p in enumerate(plans) if p[2])
    single = _single_chunk_block(spec, plans, out_shape)
    if single is not None:
        # the key is exactly what one chunk read returns: hand over the reader's fresh array, no copy
        return single.reshape(tuple(n for i, n in enumerate(out_shape) if i not in squeeze_axes))
    try:
        out = np.empty(out_shape, dtype=spec.dtype)
    except (MemoryError, ValueError) as exc:
        raise LimitExceededError(
            f"selection of shape {out_shape} ({spec.dtype}) cannot be allocated: {exc}"
        ) from None
    if out.size:
        for combo in itertools.product(*(p[0] for p in plans)):
            coords = tuple(part[0] for part in combo)
            region = tuple(part[3] for part in combo)
            local = tuple(part[2] for part in combo)
            target = tuple(part[1] for part in combo)
            try:
                block = spec.reader.read_chunk(coords, region)
            except MissingChunk:
                out[_as_outer(target, out_shape)] = _fill_for(spec.dtype, spec.fill_value)
                continue
            out[_as_outer(target, out_shape)] = _take_outer(block, local)
    if squeeze_axes:
        out = out.reshape(tuple(n for i, n in enumerate(out_shape) if i not in squeeze_axes))
    return out


def _single_chunk_block(spec: ArraySpec, plans: list, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """The block of a key that maps onto one chunk region in order, when the reader's array can be used as is."""
    if not all(len(p[0]) == 1 for p in plans) or 0 in out_shape:
        return None
    parts = [p[0][0] for p in plans]
    if not all(isinstance(t, slice) and isinstance(loc, slice) and loc == slice(None) for _c, t, loc, _r in parts):
        return None
    coords = tuple(c for c, _t, _l, _r in parts)
    region = tuple(r for _c, _t, _l, r in parts)
    try:
        block = spec.reader.read_chunk(coords, region)
    except MissingChunk:
        return None
    if not isinstance(block, np.ndarray) or block.shape != out_shape or block.dtype != spec.dtype:
        return np.asarray(block, dtype=spec.dtype).reshape(out_shape).copy()
    if not block.flags.writeable or not block.flags.c_contiguous:
        return block.copy()
    return block


def _take_outer(block: np.ndarray, local: tuple[Any, ...]) -> np.ndarray:
    """Select orthogonally from ``block``: slices as views, integer arrays with ``take``."""
    if all(isinstance(s, slice) for s in local):
        return block if all(s == slice(None) for s in local) else block[local]
    for axis, sel in enumerate(local):
        if isinstance(sel, slice):
            if sel != slice(None):
                block = block[(slice(None),) * axis + (sel,)]
        else:
            block = np.take(block, sel, axis=axis)
    return block


def _as_outer(sel: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """An orthogonal numpy index for assignment: slices alone, else ``np.ix_`` of all axes."""
    if all(isinstance(s, slice) for s in sel):
        return sel
    return np.ix_(*[np.arange(n)[s] if isinstance(s, slice) else np.asarray(s) for s, n in zip(sel, shape)])
