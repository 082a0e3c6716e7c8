"""Where each storage chunk of a raw variable lives, as absolute paths: this module knows no format.

Each format's chunk reader describes its own stored chunks and the Zarr v3 codecs that decode them
(``byte_layout``, the :class:`~xarray_tensogram.byte_layout.ByteRangeReader` protocol), and the transforms of
the lazy spec describe theirs from their inner spec's: standard codecs where they express the stored bytes
exactly (so readers without this package can read those arrays), the package's own (``codecs.py``) only where
they cannot. Chunks no byte ranges can express give an :class:`~xarray_tensogram.byte_layout.Unreferenced` with
the reason, and the parser inlines the decoded values.
"""

from __future__ import annotations

from dataclasses import replace

from ..array_spec import ArraySpec
from ..byte_layout import ByteLayout, Unreferenced, byte_layout

__all__ = ["plan_chunks"]


def plan_chunks(spec: ArraySpec, url: str) -> ByteLayout | Unreferenced:
    """The byte layout of ``spec`` read from the file at ``url``, a shard file's name made the URL beside it (a
    ref's ``path`` None: the file itself), or why it has none."""
    layout = byte_layout(spec)
    if isinstance(layout, Unreferenced):
        return layout
    base = url.rsplit("/", 1)[0]
    return replace(layout, refs=tuple(replace(r, path=f"{base}/{r.path}") if r.path else r for r in layout.refs))
