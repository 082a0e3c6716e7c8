"""Where a Tetration dataset's tiles are stored, as Zarr v3 sees it (for the virtual Zarr parsers): one
chunk per tile.

When every tile is full and they share one codec, standard codecs (``bytes``, ``zstd``) read them. Else the
package's tile codec (:data:`TILE_CODEC_ID`) pads clipped edge tiles to the chunk shape: each special tile
gets a byte range of a length no other tile has, which is how the codec tells them apart.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from ...array_spec import ArraySpec, chunk_extent
from ...byte_layout import ByteLayout, ChunkRef, zarr_bytes_codec
from .model import TetrDataset, tile_chain

__all__ = ["TILE_CODEC_ID", "tiles_layout"]

#: the numcodecs/zarr id of the package's codec decoding clipped and mixed-codec tiles (``virtual/codecs.py``)
TILE_CODEC_ID = "xarray_tensogram.tet_tile"

#: a tile: grid coordinates, offset, stored bytes, raw bytes, codec (:data:`.model.CODEC_TABLE`), extent
_Tile = tuple[tuple[int, ...], int, int, int, int, tuple[int, ...]]


def _unique_ranges(
    tiles: list[_Tile], default: int, full: tuple[int, ...]
) -> tuple[list[ChunkRef], dict[str, list[Any]]]:
    """Byte ranges for every tile; special tiles (clipped, or of another codec than ``default``) get a range
    length no other tile has, and what the tile codec needs to decode them: ``[skip, stored, raw, codec,
    extent]``."""
    taken = {stored for (_c, _o, stored, _r, codec, extent) in tiles if extent == full and codec == default}
    refs, special = [], {}
    for coords, offset, stored, raw, codec, extent in tiles:
        if extent == full and codec == default:
            refs.append(ChunkRef(coords, offset, stored))
            continue
        skip = 0
        while stored + skip in taken or offset - skip < 0:
            skip += 1
        taken.add(stored + skip)
        refs.append(ChunkRef(coords, offset - skip, stored + skip))
        special[str(stored + skip)] = [skip, stored, raw, codec, list(extent)]
    return refs, special


def tiles_layout(spec: ArraySpec, ds: TetrDataset) -> ByteLayout:
    """Every tile of dataset ``ds`` as a chunk of ``spec`` (its lazy spec: same shape, dtype and tiles)."""
    full = spec.chunk_shape
    rows = ds.entries[ds.table.reshape(-1)]  # grid (C) order, as np.ndindex walks it
    columns = [rows[key].tolist() for key in ("offset", "stored", "raw", "codec")]
    tiles: list[_Tile] = [
        (c, offset, stored, raw, codec, chunk_extent(spec.shape, full, c))
        for c, offset, stored, raw, codec in zip(np.ndindex(*ds.table.shape), *columns, strict=True)
    ]
    full_codecs = Counter(t[4] for t in tiles if t[5] == full) or Counter(t[4] for t in tiles)
    default = full_codecs.most_common(1)[0][0] if full_codecs else 0
    standard = tile_chain(default, spec.dtype, math.prod(spec.chunk_shape)).zarr()
    if standard is not None and all(t[5] == full and t[4] == default for t in tiles):
        codecs = (zarr_bytes_codec(spec.dtype), *standard)
        return ByteLayout(spec.chunk_shape, codecs, tuple(ChunkRef(t[0], t[1], t[2]) for t in tiles))
    refs, special = _unique_ranges(tiles, default, full)
    config = {"dtype": spec.dtype.str, "chunk_shape": list(spec.chunk_shape), "codec": default, "special": special}
    codecs = (zarr_bytes_codec(spec.dtype), {"name": TILE_CODEC_ID, "configuration": config})
    return ByteLayout(spec.chunk_shape, codecs, tuple(refs))
