"""Tetration byte-exact writer: directory, chunk index, tile payloads and footer, written atomically."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ...array_spec import chunk_counts
from ...conventions import TETR_FILE_KEYS
from ...errors import (
    LimitExceededError,
    UnsupportedError,
)
from ...io import atomic_write
from .footer import encode_footer
from .model import (
    _CODE_OF,
    _CODEC_OF,
    CODEC_OBJECTS,
    DTYPE_CODES,
    ENTRY,
    FLAG_FOOTER,
    INDEX_HEADER,
    INDEX_MAGIC,
    LIMITS,
    MAGIC,
    MAX_NDIM,
    RECORD_HEADER,
    SUPERBLOCK,
    _align8,
)


@dataclass
class DatasetWrite:
    """One dataset to write: values plus the footer metadata that goes with them."""

    name: str
    data: np.ndarray
    #: tile shape (default: the whole array as one tile)
    chunk_shape: Sequence[int] | None = None
    #: a name of the format's codec table (``CODECS``: raw or zstd); every tile of the dataset uses it
    codec: str = "raw"
    dim_names: Sequence[str] | None = None
    #: axis key (dim name or decimal axis number) -> labels (strings)
    coords: Mapping[str, Sequence[str]] | None = None
    attrs: Mapping[str, str] | None = None
    #: the codec's parameters for this dataset (zstd ``level``); those not given come from the file-wide ones
    codec_params: Mapping[str, Any] | None = None

    def wire_dtype(self) -> tuple[int, Any]:
        """(dtype code, little-endian C-order array); bool is stored as u8 0/1 as the reference importers do. A
        lazy array (``shape``, ``dtype`` and slicing, e.g. Dask) is not loaded: each tile is computed when written."""
        lazy = not isinstance(self.data, np.ndarray) and all(
            hasattr(self.data, a) for a in ("shape", "dtype", "__getitem__")
        )
        data = self.data if lazy else np.asarray(self.data)
        le = (np.dtype("u1") if data.dtype.kind == "b" else np.dtype(data.dtype)).newbyteorder("<")
        code = _CODE_OF.get(le)
        if code is None:
            raise UnsupportedError(
                f"dataset {self.name!r}: dtype {data.dtype} has no .tet code; supported: "
                + ", ".join(n for n, _ in DTYPE_CODES.values())
            )
        return code, (_LazyTiles(data, le) if lazy else np.ascontiguousarray(data, dtype=le))

    def metadata(self) -> dict[str, Any]:
        """Its footer metadata in wire form (empty: none)."""
        coords = None if self.coords is None else {str(k): {"labels": list(v)} for k, v in self.coords.items()}
        dims = None if self.dim_names is None else list(self.dim_names)
        meta = {"attrs": dict(self.attrs or {}) or None, "dim_names": dims, "coords": coords}
        return {k: v for k, v in meta.items() if v is not None}


class _LazyTiles:
    """A lazy array seen through slicing only: each slice is computed and cast when asked for."""

    def __init__(self, data: Any, dtype: np.dtype) -> None:
        self.data, self.dtype = data, dtype
        self.shape = tuple(int(n) for n in data.shape)
        self.ndim = len(self.shape)

    def __getitem__(self, box: tuple[slice, ...]) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(self.data[box]), dtype=self.dtype)


def _record(name: str, code: int, shape: Sequence[int], chunk_shape: Sequence[int]) -> bytes:
    """One directory record: header and name, zero-padded to 8 bytes, then shape and chunk_shape."""
    raw = name.encode("utf-8")
    head = RECORD_HEADER.pack(len(raw), code, len(shape), 0) + raw
    return head.ljust(_align8(len(head)), b"\0") + struct.pack(f"<{2 * len(shape)}Q", *shape, *chunk_shape)


def _check_dataset(d: DatasetWrite, data: np.ndarray) -> tuple[int, ...]:
    if not d.name or len(d.name.encode("utf-8")) > LIMITS["string"]:
        raise LimitExceededError(f"dataset name {d.name!r} must be 1..{LIMITS['string']} bytes of UTF-8")
    if not 1 <= data.ndim <= MAX_NDIM:
        raise LimitExceededError(f"dataset {d.name!r}: rank {data.ndim}, .tet supports 1..{MAX_NDIM}")
    if 0 in data.shape:
        raise ValueError(f"dataset {d.name!r}: empty axes cannot be stored (shape {data.shape})")
    chunk = tuple(int(c) for c in (d.chunk_shape if d.chunk_shape is not None else data.shape))
    if len(chunk) != data.ndim or min(chunk) < 1:
        raise ValueError(f"dataset {d.name!r}: chunk_shape {list(chunk)} must be {data.ndim} positive extents")
    if d.codec not in _CODEC_OF:
        raise UnsupportedError(f"dataset {d.name!r}: codec {d.codec!r}, expected one of {', '.join(_CODEC_OF)}")
    CODEC_OBJECTS[d.codec].resolve(d.codec_params or {}, what=f"dataset {d.name!r}: ")  # before a byte is written
    return chunk


def write_tetr(
    target: str | os.PathLike[str] | BinaryIO,
    arrays: Mapping[str, Any] | Sequence[DatasetWrite],
    *,
    history: Sequence[Any] = (),
    file_metadata: Mapping[str, str] | None = None,
    footer: bool | None = None,
    execution: tuple[int, int] = (0, 0),
) -> None:
    """Write a ``.tet`` file byte for byte as the reference writer does (spec §8, footer §5.5).

    ``arrays`` is a mapping name -> array (raw, one tile) or a sequence of :class:`DatasetWrite`. ``history`` rows
    are dicts (``op``, ``source``, ``at``, optional ``parents``/``params``) or ``(op, source, at)`` triples. A
    footer is written when there is history or metadata (``file_metadata``, or a dataset's
    ``dim_names``/``coords``/``attrs``); ``footer=True`` forces one with a ``metadata`` object even when it is
    empty, ``footer=False`` omits it. ``execution`` is the TIDX hint ``(memory_budget_percent_bps,
    memory_budget_bytes)``. Each :class:`DatasetWrite` may give its codec's parameters (``codec_params``: the zstd
    level, 3 by default): the format records no level, so each dataset may have its own (spec §4.5).
    Paths are written atomically; file objects in place. The index precedes the payloads, so zstd tiles are
    compressed (and held, compressed) before anything is written; raw tiles are cut from the array while writing.
    """
    if isinstance(arrays, Mapping):
        arrays = [v if isinstance(v, DatasetWrite) else DatasetWrite(str(k), v) for k, v in arrays.items()]
    writes = list(arrays)
    unknown = set(file_metadata or {}) - set(TETR_FILE_KEYS)
    if unknown:
        raise ValueError(f"file_metadata keys {sorted(unknown)} are not part of the format {TETR_FILE_KEYS}")
    names = [d.name for d in writes]
    if len(set(names)) != len(names):
        raise ValueError(f"dataset names must be unique (footer metadata is keyed by name): {names}")
    prepared = [(d, code, data, _check_dataset(d, data)) for d in writes for code, data in [d.wire_dtype()]]
    blob = b"".join(_record(d.name, code, data.shape, chunk) for d, code, data, chunk in prepared)
    n = sum(math.prod(chunk_counts(data.shape, chunk)) for _, _, data, chunk in prepared)
    index_off = _align8(40 + len(blob))
    cursor = index_off + 32 + 104 * n
    entries, stored, cursor = _index_entries(prepared, cursor)
    tail = _footer(writes, history, file_metadata, footer, cursor if writes else 32)
    flags = FLAG_FOOTER if tail else 0
    if not writes:
        _emit(target, [SUPERBLOCK.pack(MAGIC, 1, 0, flags, 32, 0), tail])
        return
    head = (
        SUPERBLOCK.pack(MAGIC, 1, len(writes), flags, index_off, 32 + 104 * n)
        + struct.pack("<Q", len(blob))
        + blob.ljust(index_off - 40, b"\0")
        + INDEX_HEADER.pack(INDEX_MAGIC, 1, n, execution[0], 0, execution[1], 0)
        + entries.tobytes()
    )
    payloads = (np.ascontiguousarray(p[0][p[1]]).tobytes() if isinstance(p, tuple) else p for p in stored)
    _emit(target, itertools.chain([head], payloads, [tail]))


def _index_entries(
    prepared: Sequence[tuple[DatasetWrite, int, np.ndarray, tuple[int, ...]]], cursor: int
) -> tuple[np.ndarray, list[bytes | tuple[np.ndarray, tuple[slice, ...]]], int]:
    """The index entries (payloads laid out from ``cursor``), each tile's compressed payload or, for a raw tile,
    its array and box (cut from the array again while writing), and the offset after the last payload."""
    rows, stored = [], []
    for i, (d, _code, data, chunk) in enumerate(prepared):
        codec, encoder, params = _CODEC_OF[d.codec], CODEC_OBJECTS[d.codec], d.codec_params or {}
        for coords in itertools.product(*map(range, chunk_counts(data.shape, chunk))):  # last axis fastest
            box = tuple(slice(k * c, min(k * c + c, n)) for k, c, n in zip(coords, chunk, data.shape, strict=True))
            raw_len = math.prod(s.stop - s.start for s in box) * data.dtype.itemsize
            payload = encoder.encode(np.ascontiguousarray(data[box]).data, params)[0] if codec else None
            size = len(payload) if payload is not None else raw_len
            rows.append((i, coords + (0,) * (8 - len(coords)), cursor, raw_len, size, codec, 0))
            stored.append(payload if payload is not None else (data, box))
            cursor += size
    return np.array(rows, dtype=ENTRY), stored, cursor


def _footer(
    writes: list[DatasetWrite],
    history: Sequence[Any],
    file_metadata: Mapping[str, str] | None,
    footer: bool | None,
    end: int,
) -> bytes:
    """The footer to append at ``end``: none (empty) unless there is history or metadata, or ``footer=True``."""
    datasets = {d.name: m for d in writes if (m := d.metadata())}
    metadata: dict[str, Any] = {"file": dict(file_metadata)} if file_metadata is not None else {}
    if datasets:
        metadata["datasets"] = datasets
    if footer or (footer is None and (history or metadata)):  # footer=True: a metadata object even when empty
        return encode_footer(history, metadata if metadata or footer else None, end)
    return b""


def _emit(target: str | os.PathLike[str] | BinaryIO, parts: Iterable[bytes]) -> None:
    """Paths atomically, file objects in place."""
    with contextlib.nullcontext(target) if hasattr(target, "write") else atomic_write(target) as f:
        for p in parts:
            f.write(p)
