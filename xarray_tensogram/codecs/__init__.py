"""Codecs: compressors, filters, encodings, masks and hashes. Bytes in, bytes or arrays out; no I/O.

Core codecs (zstd, xxh3) use core dependencies. The others import their package
lazily through :func:`require`, so a missing package only matters when a payload
actually needs it, and the error then names the pip extra to install.
"""

from __future__ import annotations

from .registry import require

__all__ = ["require"]
