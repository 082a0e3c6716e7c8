"""The one lazy array of the package, shared by every format.

:class:`LazyChunkedArray` wraps an :class:`~xarray_tensogram.catalog.ArraySpec`.
It supports xarray's OUTER indexing through :func:`~xarray_tensogram.outer.read_outer`
(the package's one indexer, one layer down so that format readers use it too):
only the chunks a key touches are read, and each chunk reader is asked only for
the bounding region of the positions it must supply.

No lock: chunk readers are thread-safe, so Dask's threaded scheduler decodes
chunks in parallel, and the array pickles (its spec holds paths, not handles).

``await ds.load_async()`` reads through :meth:`LazyChunkedArray.async_getitem`: a selection is split along
its outermost axis that spans several chunks, and each part is read by the same synchronous indexer in
asyncio's thread pool, so the parts of every variable of one load are read at once. Decoding releases the
GIL, and a remote file's byte ranges are fetched by fsspec's own event loop, so the threads overlap both.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from xarray.backends import BackendArray
from xarray.core import indexing

from .catalog import ArraySpec
from .errors import LimitExceededError
from .outer import ChunkSelection, plan_axis, read_outer

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
            key, self.shape, indexing.IndexingSupport.OUTER, self._getitem_outer
        )
        return values

    def _getitem_outer(self, key: tuple[Any, ...]) -> np.ndarray:
        return read_outer(self.spec, key)

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """``self[key]`` for xarray's ``load_async``: the same values, the chunk reads run concurrently."""
        if type(key) is indexing.BasicIndexer:
            return await _read_concurrently(self.spec, key.tuple)
        values: np.ndarray = await indexing.async_explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._async_getitem_outer
        )
        return values

    async def _async_getitem_outer(self, key: tuple[Any, ...]) -> np.ndarray:
        return await _read_concurrently(self.spec, key)


async def _read_concurrently(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray:
    """:func:`read_outer` of ``key``, one thread per chunk along the outermost axis that spans several chunks
    (each part still read as one box across the other axes, and written into its place of the result as soon
    as it is read); a key within one chunk is one read."""
    key = tuple(key) + (slice(None),) * (len(spec.shape) - len(key))
    plans = [plan_axis(k, n, c) for k, n, c in zip(key, spec.shape, spec.chunk_shape, strict=True)]
    axis = next((i for i, p in enumerate(plans) if len(p.parts) > 1), None)
    if axis is None:
        return await asyncio.to_thread(read_outer, spec, key)
    shape = tuple(p.length for p in plans if not p.squeeze)
    try:
        out = np.empty(shape, dtype=spec.dtype)
    except (MemoryError, ValueError) as exc:
        raise LimitExceededError(f"selection of shape {shape} ({spec.dtype}) cannot be allocated: {exc}") from None
    at = axis - sum(p.squeeze for p in plans[:axis])  # the axis in the result, after the integer-indexed ones

    def read_part(part: ChunkSelection) -> None:  # parts fill disjoint places of ``out``
        part_key = (*key[:axis], _global_index(part, spec.chunk_shape[axis]), *key[axis + 1 :])
        out[(slice(None),) * at + (part.out_selection,)] = read_outer(spec, part_key)

    await asyncio.gather(*(asyncio.to_thread(read_part, part) for part in plans[axis].parts))
    return out


def _global_index(part: ChunkSelection, chunk: int) -> slice | np.ndarray:
    """The positions of the whole array that one chunk's part of an axis selects, in output order."""
    start = part.chunk_index * chunk + part.read_region.start
    if isinstance(part.local_selection, slice):  # a step-1 run: the whole read region
        return slice(start, part.chunk_index * chunk + part.read_region.stop)
    positions: np.ndarray = start + np.asarray(part.local_selection)
    return positions
