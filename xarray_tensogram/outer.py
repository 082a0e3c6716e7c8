"""OUTER indexing of an :class:`~xarray_tensogram.array_spec.ArraySpec`: the package's one indexer.

Each axis of a key takes an integer, a slice or an integer array. Only the chunks the key touches are read,
each reader asked only for the bounding region of its positions (so a raw payload can be read by byte range),
into one output array. Used by the lazy array and the format readers' region reads; imports no xarray/dask.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np

from .array_spec import ArraySpec, MissingChunk, read_chunk_into
from .errors import LimitExceededError

__all__ = ["AxisPlan", "ChunkSelection", "allocate", "plan_axis", "read_outer"]


class ChunkSelection(NamedTuple):
    """What one chunk along one axis contributes to an OUTER selection."""

    #: index of the chunk along the axis
    chunk_index: int
    #: where the values go in the output (a slice when the pattern is regular, else an integer array)
    out_selection: Any
    #: what to take from the block that was read (a slice or an integer array)
    local_selection: Any
    #: the bounding step-1 range to read inside the chunk
    read_region: slice


class AxisPlan(NamedTuple):
    """One axis of a key mapped onto the chunk grid."""

    parts: list[ChunkSelection]
    #: length of the output along this axis
    length: int
    #: True for an integer index (the axis is dropped from the result)
    squeeze: bool


def _plan_contiguous(start: int, stop: int, chunk: int) -> AxisPlan:
    """A step-1 slice, without materialising its positions."""
    if stop <= start:
        return AxisPlan([], 0, False)
    parts = []
    for c in range(start // chunk, (stop - 1) // chunk + 1):
        lo = max(start, c * chunk)
        hi = min(stop, (c + 1) * chunk)
        local = slice(lo - c * chunk, hi - c * chunk)
        parts.append(ChunkSelection(c, slice(lo - start, hi - start), slice(None), local))
    return AxisPlan(parts, stop - start, False)


def plan_axis(index: Any, size: int, chunk: int) -> AxisPlan:
    """Map one axis of an OUTER key onto chunks of ``chunk`` elements along an axis of ``size``."""
    if isinstance(index, slice):
        start, stop, step = index.indices(size)
        if step == 1:
            return _plan_contiguous(start, stop, chunk)
        positions, squeeze = np.arange(start, stop, step, dtype=np.int64), False
    elif isinstance(index, (int, np.integer)):  # negative positions count from the end
        k = int(index)
        positions, squeeze = np.array([k + size if k < 0 else k], dtype=np.int64), True
    else:
        positions = np.asarray(index, dtype=np.int64).reshape(-1)
        positions, squeeze = np.where(positions < 0, positions + size, positions), False
    n = positions.size
    if n == 0:
        return AxisPlan([], 0, squeeze)
    if positions.min() < 0 or positions.max() >= size:
        raise IndexError(f"index out of bounds for axis of size {size}")
    chunk_ids = positions // chunk
    parts = []
    order = np.argsort(chunk_ids, kind="stable")
    bounds = np.flatnonzero(np.diff(chunk_ids[order])) + 1
    for group in np.split(order, bounds):
        c = int(chunk_ids[group[0]])
        local = positions[group] - c * chunk
        lo, hi = int(local.min()), int(local.max()) + 1
        parts.append(ChunkSelection(c, group, local - lo, slice(lo, hi)))
    return AxisPlan(parts, n, squeeze)


def read_outer(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray:
    """Read an OUTER key (ints, slices, int arrays per axis) from ``spec``: a key of integers and step-1 slices
    by the reader's ``read_box_into(box, out) -> bool`` where it offers one (a whole Dask task in one pass),
    every other key, or one the reader declines, chunk by chunk."""
    key = tuple(key) + (slice(None),) * (len(spec.shape) - len(key))
    boxed = _read_box(spec, key)
    if boxed is not None:
        return boxed
    plans = [plan_axis(k, s, c) for k, s, c in zip(key, spec.shape, spec.chunk_shape, strict=True)]
    out_shape = tuple(p.length for p in plans)
    kept_shape = tuple(p.length for p in plans if not p.squeeze)
    direct = hasattr(spec.reader, "read_chunk_into")
    single = None if direct else _single_chunk_block(spec, plans, out_shape)
    if single is not None:
        # the key is exactly what one chunk read returns: hand over the reader's fresh array, no copy
        return single.reshape(kept_shape)
    out = allocate(out_shape, spec.dtype)
    for combo in itertools.product(*(p.parts for p in plans)):  # none when the selection is empty
        _chunk_into(spec, combo, out, direct)
    return out.reshape(kept_shape) if len(kept_shape) != len(out_shape) else out


def allocate(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An empty result array, or a :class:`LimitExceededError` naming the selection that cannot be held."""
    try:
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as exc:
        raise LimitExceededError(f"selection of shape {shape} ({dtype}) cannot be allocated: {exc}") from None


def _chunk_into(spec: ArraySpec, combo: tuple[ChunkSelection, ...], out: np.ndarray, direct: bool) -> None:
    """Write what one chunk contributes to ``out``: decoded straight into it where the reader can, else read
    and copied; the fill value where the chunk is missing."""
    coords = tuple(part.chunk_index for part in combo)
    target = _as_outer(tuple(part.out_selection for part in combo), out.shape)
    region = tuple(part.read_region for part in combo)
    within = (*target, ...)
    try:
        if direct and _whole_region(combo) and read_chunk_into(spec.reader, coords, region, out[within]):
            return
        block = spec.reader.read_chunk(coords, region)
    except MissingChunk:
        out[target] = spec.fill_value if spec.fill_value is not None else (np.nan if spec.dtype.kind in "fc" else 0)
        return
    out[target] = _take_outer(block, tuple(part.local_selection for part in combo))


def _read_box(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray | None:
    """The box read of :func:`read_outer`, or None when the key or the reader does not allow it."""
    into = getattr(spec.reader, "read_box_into", None)
    if into is None:
        return None
    box = []
    for k, n in zip(key, spec.shape, strict=True):
        if isinstance(k, (int, np.integer)):
            i = int(k) + n if int(k) < 0 else int(k)
            if not 0 <= i < n:
                return None  # the chunk-by-chunk path raises the IndexError
            box.append(slice(i, i + 1))
        elif isinstance(k, slice) and k.step in (None, 1):
            start, stop, _ = k.indices(n)
            box.append(slice(start, max(start, stop)))
        else:
            return None
    try:
        out = np.empty(tuple(s.stop - s.start for s in box), dtype=spec.dtype)
    except (MemoryError, ValueError):
        return None  # the chunk-by-chunk path reports it as a LimitExceededError
    if not into(tuple(box), out):
        return None
    kept = tuple(n for n, k in zip(out.shape, key, strict=True) if not isinstance(k, (int, np.integer)))
    return out.reshape(kept)


def _whole_region(combo: tuple[ChunkSelection, ...]) -> bool:
    """The chunk region lands in the output as a block of slices, all of it (so it can be decoded in place)."""
    return all(
        isinstance(p.out_selection, slice) and isinstance(p.local_selection, slice) and p.local_selection == slice(None)
        for p in combo
    )


def _single_chunk_block(spec: ArraySpec, plans: list[AxisPlan], out_shape: tuple[int, ...]) -> np.ndarray | None:
    """The block of a key that maps onto one chunk region in order, when the reader's array can be used as is."""
    if not all(len(p.parts) == 1 for p in plans) or 0 in out_shape:
        return None
    parts = tuple(p.parts[0] for p in plans)
    if not _whole_region(parts):
        return None
    try:
        block = spec.reader.read_chunk(tuple(p.chunk_index for p in parts), tuple(p.read_region for p in parts))
    except MissingChunk:
        return None
    same = isinstance(block, np.ndarray) and block.shape == out_shape and block.dtype == spec.dtype
    if same and block.flags.writeable and block.flags.c_contiguous:
        return block
    own: np.ndarray = np.array(block, dtype=spec.dtype, order="C").reshape(out_shape)  # a fresh copy
    return own


def _take_outer(block: np.ndarray, local: tuple[Any, ...]) -> np.ndarray:
    """Select orthogonally from ``block``: slices as views, integer arrays with ``take``."""
    if all(isinstance(s, slice) for s in local):
        return block if all(s == slice(None) for s in local) else block[local]
    for axis, sel in enumerate(local):
        block = block[(slice(None),) * axis + (sel,)] if isinstance(sel, slice) else np.take(block, sel, axis=axis)
    return block


def _as_outer(sel: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """An orthogonal numpy index for assignment: slices alone, else ``np.ix_`` of all axes."""
    if all(isinstance(s, slice) for s in sel):
        return sel
    axes = [np.arange(n)[s] if isinstance(s, slice) else np.asarray(s) for s, n in zip(sel, shape, strict=True)]
    return np.ix_(*axes)
