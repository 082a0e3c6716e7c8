"""Codecs: compressors, filters, encodings, bitmaps, hashes and CBOR.

Bytes and plain parameters in, bytes or arrays out; no I/O and no format knowledge
(nothing here imports ``formats/``: descriptor-driven dispatch lives with its format).

Core codecs (zstd, xxh3) use core dependencies. The others import their package
lazily through :func:`require`, so a missing package only matters when a payload
actually needs it, and the error then names the pip extra to install.
"""

from __future__ import annotations

from .optional import require

__all__ = ["require"]
