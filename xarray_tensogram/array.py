"""The one lazy array of the package, shared by every format: :class:`LazyChunkedArray` serves xarray's OUTER
indexing of an :class:`~xarray_tensogram.array_spec.ArraySpec` through :func:`~xarray_tensogram.outer.read_outer`.

No lock: chunk readers are thread-safe, so Dask's threaded scheduler decodes chunks in parallel, and the
array pickles (its spec holds paths, not handles). ``await ds.load_async()`` reads runs of neighbouring
chunks in asyncio's default thread pool: decoding releases the GIL and fsspec fetches remote ranges on its
own loop, so the threads overlap both.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

import numpy as np
from xarray.backends import BackendArray
from xarray.core import indexing

from .array_spec import ArraySpec
from .outer import ChunkSelection, allocate, plan_axis, read_outer

__all__ = ["LazyChunkedArray", "plan_axis", "read_outer"]


class LazyChunkedArray(BackendArray):
    """Lazy, picklable, lock-free view of an :class:`ArraySpec` for xarray."""

    def __init__(self, spec: ArraySpec) -> None:
        self.spec = spec
        self.shape = spec.shape
        self.dtype = spec.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        if type(key) is indexing.BasicIndexer:
            # integers and slices (a Dask task's chunk, a full ``.load()``): OUTER indexing with them is basic
            # indexing, so the key goes to the indexer as is, without xarray's decomposition and its adapters
            return read_outer(self.spec, key.tuple)
        values: np.ndarray = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, functools.partial(read_outer, self.spec)
        )
        return values

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """``self[key]`` for xarray's ``load_async``: the same values, the chunk reads run concurrently."""
        if type(key) is indexing.BasicIndexer:
            return await _read_concurrently(self.spec, key.tuple)
        values: np.ndarray = await indexing.async_explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, functools.partial(_read_concurrently, self.spec)
        )
        return values


#: parts a selection is split into at most: the workers of asyncio's default thread pool (as Python sizes it)
PARTS = min(32, (os.cpu_count() or 1) + 4)


async def _read_concurrently(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray:
    """:func:`read_outer` of ``key`` in up to :data:`PARTS` threads: the chunks along the outermost axis that
    spans several are shared out in runs of neighbours, each run read as one box across the other axes and
    written into its place of the result as soon as it is read; a key within one chunk is one read."""
    key = tuple(key) + (slice(None),) * (len(spec.shape) - len(key))
    plans = [plan_axis(k, n, c) for k, n, c in zip(key, spec.shape, spec.chunk_shape, strict=True)]
    axis = next((i for i, p in enumerate(plans) if len(p.parts) > 1), None)
    if axis is None:
        return await asyncio.to_thread(read_outer, spec, key)
    out = allocate(tuple(p.length for p in plans if not p.squeeze), spec.dtype)
    at = axis - sum(p.squeeze for p in plans[:axis])  # the axis in the result, after the integer-indexed ones

    def read_run(index: Any, target: Any) -> None:  # runs fill disjoint places of ``out``
        out[(slice(None),) * at + (target,)] = read_outer(spec, (*key[:axis], index, *key[axis + 1 :]))

    runs = _runs(plans[axis].parts, spec.chunk_shape[axis])
    await asyncio.gather(*(asyncio.to_thread(read_run, index, target) for index, target in runs))
    return out


def _runs(parts: list[ChunkSelection], chunk: int) -> list[tuple[Any, Any]]:
    """``parts`` (one per chunk along an axis) shared out in up to :data:`PARTS` runs of neighbours: per run,
    the positions of the whole array it selects and where they go in the result (slices for step-1 runs)."""
    size = -(-len(parts) // PARTS)
    out: list[tuple[Any, Any]] = []
    for i in range(0, len(parts), size):
        run = parts[i : i + size]
        if all(isinstance(p.local_selection, slice) for p in run):  # step-1: neighbouring chunks are contiguous
            first, last = run[0], run[-1]
            lo = first.chunk_index * chunk + first.read_region.start
            hi = last.chunk_index * chunk + last.read_region.stop
            out.append((slice(lo, hi), slice(first.out_selection.start, last.out_selection.stop)))
            continue
        positions = [p.chunk_index * chunk + p.read_region.start + np.asarray(p.local_selection) for p in run]
        out.append((np.concatenate(positions), np.concatenate([np.asarray(p.out_selection) for p in run])))
    return out
