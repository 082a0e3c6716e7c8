"""Tetration layout v1 (``.tet``, magic ``TETR``): reader and byte-exact writer. No xarray or dask here.

Layout (spec ``tetr-v1.md``): a 32-byte superblock, a dataset directory of variable-length records, one ``TIDX``
chunk index shared by every dataset (104-byte entries), the tile payloads (raw or one zstd frame each, edge tiles
clipped), then optionally a metadata spill and a ``THST`` JSON footer (history rows, per-dataset metadata).

Opening reads the superblock, directory, index and footer only (:mod:`.layout`). The reader follows the
reference's leniencies (unordered index, gaps, trailing bytes, legacy history triples, spilled footer) and adds
the strict checks the fixture manifest expects (dataset ids, dtype codes, zero extents, tile sizes, duplicate
payload offsets, missing tiles, metadata limits).
"""

from __future__ import annotations

from .footer import encode_footer
from .model import CODECS, DTYPE_CODES, LIMITS, TetrDataset
from .reader import TetrFile, TetrTileReader, open_tetr
from .record import FORMAT
from .writer import DatasetWrite, write_tetr

__all__ = [
    "CODECS",
    "DTYPE_CODES",
    "FORMAT",
    "LIMITS",
    "DatasetWrite",
    "TetrDataset",
    "TetrFile",
    "TetrTileReader",
    "encode_footer",
    "open_tetr",
    "write_tetr",
]
