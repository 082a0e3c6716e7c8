"""The one lazy array of the package, shared by every format.

:class:`LazyChunkedArray` wraps an :class:`~xarray_tensogram.array_spec.ArraySpec`.
It supports xarray's OUTER indexing through :func:`~xarray_tensogram.outer.read_outer`
(the package's one indexer, one layer down so that format readers use it too):
only the chunks a key touches are read, and each chunk reader is asked only for
the bounding region of the positions it must supply.

No lock: chunk readers are thread-safe, so Dask's threaded scheduler decodes
chunks in parallel, and the array pickles (its spec holds paths, not handles).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xarray.backends import BackendArray
from xarray.core import indexing

from .array_spec import ArraySpec
from .outer import plan_axis, read_outer

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
