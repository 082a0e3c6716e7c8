"""Reading a box of a tiled dataset in one pass: each tile it touches lands straight in its part of the output.

A box is one step-1 slice per axis of the whole dataset (what a Dask task, a full load or a window asks
for). The box is planned once (which tiles, which part of each, where it goes), the index rows of all its
tiles are looked up in one numpy gather, and the bytes are fetched in runs of tiles that lie back to back
in the file: one memory-mapped view per run for a local file, one concurrent batch of ranges otherwise.
Each tile is then decoded straight into its slice of the output: raw tiles with one copy from the file's
pages (only the leading-axis rows the box needs), zstd tiles into the output when their slice is
contiguous, else into a per-thread scratch buffer and one copy. Nothing here allocates per tile.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...codecs.chain import Chain
from ...errors import CodecError, describe
from ...io import ByteSource
from ...io.local import scratch_buffer
from ...outer import plan_axis
from .model import TetrDataset, tile_chain

__all__ = ["read_box_into"]

#: a run of back-to-back tiles is fetched as one view or one range up to this many bytes
RUN_BYTES = 8 << 20
#: sources without a memory map fetch at most this many bytes of runs at once (concurrently when remote)
BATCH_BYTES = 64 << 20


#: what one tile along one axis contributes to a box: its index, where its values go in the output, which of
#: its elements (local to the clipped tile), and the clipped tile's extent along the axis
_AxisPart = tuple[int, slice, slice, int]


class _Tile(NamedTuple):
    """One tile of a box: where its bytes are and where its values go."""

    coords: tuple[int, ...]
    out: tuple[slice, ...]
    local: tuple[slice, ...]
    extent: tuple[int, ...]
    #: what decodes the tile (:func:`.model.tile_chain`)
    chain: Chain
    offset: int  # first byte to fetch (raw: the first needed row)
    length: int  # bytes to fetch


class _Run(NamedTuple):
    """Tiles whose fetched bytes lie back to back in the file."""

    offset: int
    length: int
    tiles: list[_Tile]


def _plan_tiles(
    parts: Sequence[list[_AxisPart]], entries: np.ndarray, table: np.ndarray, dtype: np.dtype
) -> list[_Tile]:
    """Every tile of the box in C order of the grid, with its byte range (raw tiles: only the rows needed)."""
    block = table[tuple(slice(p[0][0], p[-1][0] + 1) for p in parts)]
    rows = entries[block.reshape(-1)]
    offsets, stored, codecs = rows["offset"].tolist(), rows["stored"].tolist(), rows["codec"].tolist()
    tiles = []
    # each tile's chain, and the stored bytes of one leading-axis row where the chain stores values as they
    # are (0 otherwise): few distinct ones (edge extents, a codec or two), so worked out once each
    chains: dict[tuple[int, tuple[int, ...]], tuple[Chain, int]] = {}
    for k, combo in enumerate(itertools.product(*parts)):
        coords, out, local, extent = zip(*combo, strict=True)
        offset, length = offsets[k], stored[k]
        if (codecs[k], extent) not in chains:
            chain = tile_chain(codecs[k], dtype, math.prod(extent))
            row = math.prod(extent[1:])
            row_bytes = chain.stored_span(0, row, row * dtype.itemsize)[1] if chain.stored_is_encoded else 0
            chains[codecs[k], extent] = chain, row_bytes
        chain, row_bytes = chains[codecs[k], extent]
        if row_bytes:  # only the leading-axis rows the box needs
            offset += local[0].start * row_bytes
            length = (local[0].stop - local[0].start) * row_bytes
        tiles.append(_Tile(coords, out, local, extent, chain, offset, length))
    return tiles


def _runs(tiles: list[_Tile]) -> list[_Run]:
    """Group tiles (in box order) into runs of byte ranges that follow each other in the file."""
    runs: list[_Run] = []
    for t in tiles:
        if runs and (last := runs[-1]).offset + last.length == t.offset and last.length + t.length <= RUN_BYTES:
            last.tiles.append(t)
            runs[-1] = _Run(last.offset, last.length + t.length, last.tiles)
        else:
            runs.append(_Run(t.offset, t.length, [t]))
    return runs


def _fetched(source: ByteSource, runs: list[_Run], what: str) -> Iterator[tuple[_Run, Any]]:
    """Each run with its bytes: a view of the memory map (released once the run is decoded), else ranges read
    in batches (concurrently for remote sources)."""
    if not runs:
        return
    first = source.view(runs[0].offset, runs[0].length) if runs[0].length else None
    if first is not None:
        for run in runs:
            view = first if first is not None else source.view(run.offset, run.length)
            first = None
            try:
                yield run, view
            finally:
                del view
                source.release(run.offset, run.length)
        return
    batches: list[list[_Run]] = [[]]
    size = 0
    for run in runs:
        if batches[-1] and size + run.length > BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(run)
        size += run.length
    for batch in batches:
        yield from zip(batch, source.read_ranges([(r.offset, r.length) for r in batch], what=what), strict=True)


def read_box_into(source: ByteSource, ds: TetrDataset, box: tuple[slice, ...], out: np.ndarray) -> None:
    """Fill ``out`` (the box's shape, the dataset's dtype) with ``values[box]`` of dataset ``ds``, reading only
    the tiles (and for raw tiles only the rows) the box touches, each once."""
    dtype, name = ds.dtype, ds.name
    parts = [
        [
            (p.chunk_index, p.out_selection, p.read_region, min(c, n - p.chunk_index * c))
            for p in plan_axis(s, n, c).parts
        ]
        for s, c, n in zip(box, ds.chunk_shape, ds.shape, strict=True)
    ]
    if out.size == 0 or any(not p for p in parts):
        return
    tiles = _plan_tiles(parts, ds.entries, ds.table, dtype)
    for run, data in _fetched(source, _runs(tiles), f"tiles of {name!r}"):
        pos = 0
        for strip in _strips(run.tiles):
            t = strip[0]
            length = t.length * len(strip)
            if len(strip) > 1:
                _copy_strip(strip, data[pos : pos + length], dtype, out)
            else:
                _decode_tile(t, data[pos : pos + length], dtype, out, source.name, name)
            pos += length


def _whole(t: _Tile) -> bool:
    return all(s.stop - s.start == n for s, n in zip(t.local, t.extent, strict=True))


def _strips(tiles: list[_Tile]) -> Iterator[list[_Tile]]:
    """Split a run into strips: whole raw tiles of one extent, next to each other along the last axis
    (copied with one numpy call), and single tiles (everything else)."""

    def key(k: int) -> Any:  # tiles k, k+1, ... of a strip share it; any other tile has its own
        t = tiles[k]
        return (t.extent, t.coords[:-1], t.coords[-1] - k) if t.chain.stored_is_encoded and _whole(t) else k

    for _, strip in itertools.groupby(range(len(tiles)), key):
        yield [tiles[k] for k in strip]


def _copy_strip(strip: list[_Tile], payload: Any, dtype: np.dtype, out: np.ndarray) -> None:
    """Whole raw tiles side by side along the last axis: one copy from the file's bytes into place."""
    first, m = strip[0], len(strip)
    *lead, last = first.extent
    start = first.out[-1].start
    where = (*first.out[:-1], slice(start, start + m * last))
    dst = out[where]
    # split the last axis into (tile, column) and bring the tile axis to the front: (m, *extent)
    dst = np.moveaxis(dst.reshape((*lead, m, last)), -2, 0)
    np.copyto(dst, np.frombuffer(payload, dtype=dtype).reshape((m, *first.extent)))


def _decode_tile(t: _Tile, payload: Any, dtype: np.dtype, out: np.ndarray, path: str, name: str) -> None:
    """One tile into ``out[t.out]``: a copy for raw rows, a decode (into place or via scratch) for zstd."""
    dst = out[t.out]
    if t.chain.stored_is_encoded:
        rows = np.frombuffer(payload, dtype=dtype).reshape((t.local[0].stop - t.local[0].start, *t.extent[1:]))
        within = (slice(None), *t.local[1:])
        np.copyto(dst, rows[within])
        return
    try:
        if _whole(t) and dst.flags.c_contiguous:
            t.chain.decode_into(payload, dst)
            return
        tile = scratch_buffer(math.prod(t.extent) * dtype.itemsize, "decode").view(dtype).reshape(t.extent)
        t.chain.decode_into(payload, tile)
        np.copyto(dst, tile[t.local])
    except CodecError as exc:
        where = describe(path, f"dataset {name!r} tile {list(t.coords)}", t.offset)
        raise CodecError(f"{where}{exc}") from exc
