"""Virtual Zarr: ``.tgm``, ``.tet`` and ``.zt`` files as Zarr stores whose chunks are byte ranges of the files.

Needs the ``virtual`` extra. docs/virtual.md shows the workflow: parsers for VirtualiZarr, kerchunk references
(JSON or Parquet), Icechunk repositories.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "TensogramParser",
    "TetrParser",
    "VirtualMappingWarning",
    "ZTensorParser",
    "kerchunk_refs",
    "open_virtual_dataset",
    "parser_for",
    "write_refs",
]


def __getattr__(name: str) -> Any:
    # virtualizarr and zarr are optional: import them only when a parser or writer is used
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "refs" if name in ("write_refs", "kerchunk_refs", "open_virtual_dataset") else "parsers"
    return getattr(importlib.import_module(f".{module}", __name__), name)
