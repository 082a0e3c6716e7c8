"""Where each storage chunk of a raw variable lives, and which Zarr v3 codecs decode it.

Each format's chunk reader describes its own stored chunks (``byte_layout``, the
:class:`~xarray_tensogram.byte_layout.ByteRangeReader` protocol); the transforms of the lazy spec (stacks, casts,
transposes) describe theirs from their inner spec's. This module only turns that description into a
:class:`VirtualArray` with absolute chunk paths: it knows no format. Standard codecs (``bytes``, ``zstd``,
``numcodecs.shuffle``) are used where they express the stored bytes exactly, so readers without this package
can read those arrays; the package's own codecs (``codecs.py``) only where they cannot. Where no byte ranges
can express the chunks, the result is an :class:`~xarray_tensogram.byte_layout.Unreferenced` with the reason, and
the parser inlines the decoded values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..array_spec import ArraySpec
from ..byte_layout import ChunkRef, Unreferenced, byte_layout

__all__ = ["ChunkRef", "VirtualArray", "plan_chunks"]


@dataclass
class VirtualArray:
    """A Zarr array whose chunks are byte ranges of existing files (a ref's ``path`` None = the parsed file)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    chunk_shape: tuple[int, ...]
    codecs: list[dict[str, Any]]
    refs: list[ChunkRef] = field(default_factory=list)


def plan_chunks(spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | Unreferenced:
    """The virtual array of ``spec``, or why it has none; ``resolve(shard)`` gives a shard file's URL."""
    layout = byte_layout(spec)
    if isinstance(layout, Unreferenced):
        return layout
    refs = [ChunkRef(r.coords, r.offset, r.length, resolve(r.path) if r.path else None) for r in layout.refs]
    return VirtualArray(spec.shape, spec.dtype, layout.chunk_shape, list(layout.codecs), refs)
