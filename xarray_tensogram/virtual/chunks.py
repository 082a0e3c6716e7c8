"""Where each storage chunk of a raw variable lives, and which Zarr v3 codecs decode it.

Each format's chunk reader describes its own stored chunks (``byte_layout``, the
:class:`~xarray_tensogram.byte_layout.ByteRangeReader` protocol); the transforms of the lazy spec (stacks, casts,
transposes) describe theirs from their inner spec's. This module only gives that description absolute
chunk paths: it knows no format. Standard codecs (``bytes``, ``zstd``,
``numcodecs.shuffle``) are used where they express the stored bytes exactly, so readers without this package
can read those arrays; the package's own codecs (``codecs.py``) only where they cannot. Where no byte ranges
can express the chunks, the result is an :class:`~xarray_tensogram.byte_layout.Unreferenced` with the reason, and
the parser inlines the decoded values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..array_spec import ArraySpec
from ..byte_layout import ByteLayout, ChunkRef, Unreferenced, byte_layout

__all__ = ["plan_chunks"]


def plan_chunks(spec: ArraySpec, resolve: Callable[[str | None], str]) -> ByteLayout | Unreferenced:
    """The byte layout of ``spec`` with each shard file's name made its URL (``resolve(shard)``; a ref's
    ``path`` None = the parsed file), or why it has none."""
    layout = byte_layout(spec)
    if isinstance(layout, Unreferenced):
        return layout
    refs = tuple(ChunkRef(r.coords, r.offset, r.length, resolve(r.path) if r.path else None) for r in layout.refs)
    return replace(layout, refs=refs)
