"""Tetration reading: the per-dataset tile reader and the open file (:class:`TetrFile`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...array_spec import ArraySpec, chunk_extent, full_region
from ...byte_layout import ByteLayout
from ...errors import (
    CorruptFileError,
    LimitExceededError,
    TruncatedFileError,
    UnsupportedError,
    byte_text,
    describe,
)
from ...io import ByteSource, SourceLike
from ...outer import read_outer
from ..base import FormatFile
from .boxes import read_box_into
from .layout import (
    _attach_tiles,
    _check_entries,
    _check_record,
    _parse_records,
    _read_footer,
    _read_index,
)
from .model import MAGIC, SUPERBLOCK, TetrDataset
from .zarr_layout import tiles_layout


@dataclass(frozen=True, eq=False)
class TetrTileReader:
    """The :class:`~xarray_tensogram.array_spec.ChunkReader` of one dataset (its geometry and index rows):
    thread-safe and picklable (the byte source pickles as a path). Raw tiles are read by byte range (only the
    leading-axis rows a region needs); zstd tiles are decoded with output bounded by ``raw_byte_len``."""

    source: ByteSource
    dataset: TetrDataset

    def byte_layout(self, spec: ArraySpec) -> ByteLayout:
        """One Zarr chunk per tile (:mod:`.zarr_layout`)."""
        return tiles_layout(spec, self.dataset)

    def read_chunk(self, coords: tuple[int, ...], region: tuple[slice, ...] | None = None) -> np.ndarray:
        """``region`` (step-1 slices local to the clipped tile; None: all of it) of the tile at ``coords``."""
        box = self._tile_box(coords, region)
        out = np.empty(tuple(s.stop - s.start for s in box), self.dataset.dtype)
        read_box_into(self.source, self.dataset, box, out)
        return out

    def read_chunk_into(self, coords: tuple[int, ...], region: tuple[slice, ...], out: np.ndarray) -> bool:
        """``region`` of the tile at ``coords`` straight into ``out`` (a view of the final array, usually not
        contiguous), as a box of one tile (:meth:`read_box_into`)."""
        return self.read_box_into(self._tile_box(coords, region), out)

    def _tile_box(self, coords: tuple[int, ...], region: tuple[slice, ...] | None) -> tuple[slice, ...]:
        """``region`` of the tile at ``coords`` (IndexError outside the grid) as slices of the whole dataset."""
        coords, d = tuple(int(c) for c in coords), self.dataset
        if len(coords) != d.ndim or any(not 0 <= c < n for c, n in zip(coords, d.table.shape, strict=True)):
            raise IndexError(f"tile {list(coords)} is outside the grid {list(d.table.shape)} of {d.name!r}")
        region = region or full_region(chunk_extent(d.shape, d.chunk_shape, coords))
        return tuple(
            slice(c * t + s.start, c * t + max(s.start, s.stop))
            for c, t, s in zip(coords, d.chunk_shape, region, strict=True)
        )

    def read_box_into(self, box: tuple[slice, ...], out: np.ndarray) -> bool:
        """Fill ``out`` with ``values[box]`` (step-1 slices of the whole dataset) in one pass over the tiles the
        box touches, each decoded straight into its part of ``out`` (see :mod:`.boxes`). Returns True: a box
        of any shape is served, so a Dask task of many tiles is one call."""
        box = tuple(slice(*s.indices(n)[:2]) for s, n in zip(box, self.dataset.shape, strict=True))
        if out.dtype != self.dataset.dtype or out.shape != tuple(max(s.stop - s.start, 0) for s in box):
            return False
        read_box_into(self.source, self.dataset, box, out)
        return True


class TetrFile(FormatFile[TetrDataset]):
    """An open ``.tet`` file: ``.datasets``, ``.history``, ``.metadata``, reads by tile or hyperslab.

    Opening reads the superblock, the directory, the chunk index and the footer; no payload byte is read before
    values are asked for. Use it as a context manager or call :meth:`close`.
    """

    item_kind = "dataset"

    def _parse(self) -> None:
        try:
            self._read_layout()
        except MemoryError as exc:
            raise LimitExceededError(f"{describe(self.name)}index too large to hold in memory") from exc

    def _read_layout(self) -> None:
        src = self.source
        if src.size < 32:
            raise TruncatedFileError(
                f"{describe(src.name, 'superblock', 0)}file truncated: a .tet file needs at "
                f"least a 32-byte superblock, this one has {src.size} bytes"
            )
        magic, version, count, flags, index_off, index_len = SUPERBLOCK.unpack(src.read(0, 32, what="superblock"))
        if magic != MAGIC:
            raise CorruptFileError(
                f"{describe(src.name, 'superblock', 0)}magic {byte_text(magic)}, expected {byte_text(MAGIC)}"
            )
        if version != 1:
            raise UnsupportedError(f"{describe(src.name, 'superblock', 4)}layout_version {version}, expected 1")
        if index_off + index_len > src.size:
            raise TruncatedFileError(
                f"{describe(src.name, 'superblock', 16)}file truncated: the chunk index "
                f"[{index_off}, {index_off + index_len}) needs at least {index_off + index_len} "
                f"bytes, the file has {src.size}"
            )
        self.layout_version, self.flags = version, flags
        self.index_offset, self.index_length = index_off, index_len
        self.execution = {"memory_budget_percent_bps": 0, "memory_budget_bytes": 0}
        self.datasets: list[TetrDataset] = []
        records = _parse_records(src, count, index_off) if count else []
        footer = _read_footer(src, flags, count, index_off, index_len)
        self.payload_end = footer.payload_end
        #: history rows, oldest first, legacy triples normalised to {op, source, at}
        self.history: list[dict[str, Any]] = footer.history
        #: file-level metadata (``tool``, ``library_version``, ``created_at``); empty when absent
        self.metadata: dict[str, str] = dict(footer.file_metadata or {})
        #: a THST footer was found and parsed (flag bit 0 set and a valid tail)
        self.footer_present = footer.present
        self.metadata_spill = footer.spill
        if not count:
            return
        entries, self.execution = _read_index(src, index_off, index_len, footer.payload_end)
        dtypes = [_check_record(src, i, *rec) for i, rec in enumerate(records)]
        _check_entries(src, entries, count, index_off)
        ids = entries["dataset_id"].astype(np.int64)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(count + 1))
        metas = dict(footer.datasets)
        for i, ((name, code, shape, chunk_shape), dtype) in enumerate(zip(records, dtypes, strict=True)):
            meta = metas.pop(name, {})  # metadata is keyed by name: the first record of a name takes it
            ds = TetrDataset(name, i, code, dtype, shape, chunk_shape, "raw", **meta)  # attrs, dim_names, coords
            _attach_tiles(src, ds, entries, order[bounds[i] : bounds[i + 1]], index_off)
            self.datasets.append(ds)

    def _items(self) -> list[TetrDataset]:
        return self.datasets

    def dataset(self, key: str | int) -> TetrDataset:
        """Dataset by position, or by name (the first record carrying it, like the reference)."""
        return self[key]

    def tile_reader(self, key: str | int) -> TetrTileReader:
        return TetrTileReader(self.source, self.dataset(key))

    def array_spec(self, key: str | int) -> ArraySpec:
        """Lazy description for the shared lazy array: one chunk per tile (edge tiles clipped)."""
        d = self.dataset(key)
        return ArraySpec(d.shape, d.dtype, d.chunk_shape, TetrTileReader(self.source, d))

    def read_chunk(self, key: str | int, chunk_coords: Sequence[int]) -> np.ndarray:
        """The tile at grid ``chunk_coords`` at its clipped extent."""
        return self.tile_reader(key).read_chunk(tuple(chunk_coords))

    def read_region(self, key: str | int, selection: Sequence[slice | int] | slice | int = ()) -> np.ndarray:
        """A hyperslab (ints and slices per axis, like numpy basic indexing) reading only the tiles it touches.

        Ints and step-1 slices are read in one pass over the tiles (:meth:`TetrTileReader.read_box_into`);
        slices with a step go through the lazy array's own indexer (:func:`~xarray_tensogram.outer.read_outer`),
        which reads the bounding range of each touched tile and keeps every step-th element.
        """
        d = self.dataset(key)
        sel = tuple(selection) if isinstance(selection, (tuple, list)) else (selection,)
        if len(sel) > d.ndim:
            raise IndexError(f"{len(sel)} indices for the {d.ndim}-d dataset {d.name!r}")
        for axis, (s, n) in enumerate(zip(sel, d.shape, strict=False)):  # sel may name fewer axes
            if not isinstance(s, slice) and not -n <= int(s) < n:
                raise IndexError(f"index {s} out of bounds for axis {axis} of size {n}")
        return read_outer(self.array_spec(key), sel)

    def read(self, key: str | int) -> np.ndarray:
        """The whole dataset as a C-order numpy array (in the file's little-endian dtype)."""
        return read_outer(self.array_spec(key), ())

    def __repr__(self) -> str:
        return f"<TetrFile {self.name!r}: layout v{self.layout_version}, {len(self.datasets)} datasets>"


def open_tetr(source: SourceLike, *, storage_options: Mapping[str, Any] | None = None) -> TetrFile:
    """Open a Tetration layout v1 file without xarray: datasets, tiles, history and metadata.

    Opening reads the directory, index and footer only; tiles are read on demand.

    Parameters
    ----------
    source : str, os.PathLike, bytes, binary file object or ByteSource
        A local path, an fsspec URL, the bytes of a file, or an open binary file object.
    storage_options : mapping, optional
        Passed to fsspec when ``source`` is a URL.

    Returns
    -------
    TetrFile
        A context manager with ``datasets``, ``history``, ``metadata`` and
        ``read(name)``, ``read_chunk(name, tile_index)``, ``read_region(name, selection)``.

    Raises
    ------
    CorruptFileError
        If the magic, directory, index or footer is damaged.

    Examples
    --------
    >>> import xarray_tensogram as xt
    >>> with xt.open_tetr(xt.sample_path("sample.tet")) as f:
    ...     d = f.datasets[0]
    ...     print(d.name, d.shape, d.chunk_shape)
    t2m (4, 6, 8) (2, 4, 5)
    """
    return TetrFile(source, storage_options=storage_options)
