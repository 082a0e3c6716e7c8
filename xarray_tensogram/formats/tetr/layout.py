"""Tetration layout parsing: superblock, dataset directory, TIDX chunk index and footer.

Every length is checked against the file size before anything is allocated, so a hostile header cannot make us
allocate more than the file justifies.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import (
    CorruptFileError,
    LimitExceededError,
    MetadataError,
    TruncatedFileError,
    UnsupportedError,
    byte_text,
    describe,
)
from ...io import ByteSource
from .footer import _check_count, _history_row, _metadata, _parse_json
from .model import (
    CODEC_TABLE,
    CODECS,
    DTYPE_CODES,
    ENTRY,
    FLAG_FOOTER,
    FOOTER_MAGIC,
    FOOTER_TAIL,
    INDEX_HEADER,
    INDEX_MAGIC,
    LIMITS,
    MAX_NDIM,
    RECORD_HEADER,
    TetrDataset,
    _align8,
)


@dataclass
class _Footer:
    history: list[dict[str, Any]]
    file_metadata: dict[str, str] | None
    datasets: dict[str, dict[str, Any]]
    payload_end: int
    present: bool = False
    spill: tuple[int, int] | None = None


def _entry_at(src: ByteSource, index_at: int, k: int) -> str:
    """What messages name for entry ``k`` of the chunk index at ``index_at``."""
    return describe(src.name, f"chunk index entry {k}", index_at + 32 + 104 * k)


def _tiles_end(src: ByteSource, index_offset: int, index_length: int) -> int:
    """End of the last tile the chunk index names (its offset + stored length), or the index end: only to say
    how large a file missing its footer should be (the index is checked properly later)."""
    end = index_offset + index_length
    count = max(0, index_length - 32) // ENTRY.itemsize
    if count and end <= src.size:
        entries = np.frombuffer(src.read(index_offset + 32, count * ENTRY.itemsize, what="chunk index"), dtype=ENTRY)
        end = max(end, int((entries["offset"].astype(object) + entries["stored"].astype(object)).max()))
    return end


def _read_footer(src: ByteSource, flags: int, dataset_count: int, index_offset: int, index_length: int) -> _Footer:
    """Tail checks (always, like the reference), then JSON and spill when flag bit 0 is set."""
    size = src.size
    none = _Footer([], None, {}, size)
    tail = src.read(size - 16, 16, what="THST footer tail") if size >= 16 else b""
    if tail[-4:] != FOOTER_MAGIC:
        if flags & FLAG_FOOTER and dataset_count > 0:
            need = _tiles_end(src, index_offset, index_length) + 16
            raise TruncatedFileError(
                f"{describe(src.name, 'superblock', 12)}file truncated or its footer damaged: the history flag "
                f"promises a THST footer at the end, the last 4 bytes are {byte_text(tail[-4:])}, not "
                f"{byte_text(FOOTER_MAGIC)}; the tiles and the footer tail need more than {need - 1} bytes, "
                f"the file has {size}"
            )
        return none
    json_len, version, _ = FOOTER_TAIL.unpack(tail)
    start = size - 16 - json_len
    if version != 1:
        raise UnsupportedError(
            f"{describe(src.name, 'THST footer', size - 8)}history footer version {version}, expected 1"
        )
    if start < 0:
        where = describe(src.name, "THST footer", size - 16)
        raise CorruptFileError(f"{where}history_json_len {json_len} does not fit a {size}-byte file")
    if not flags & FLAG_FOOTER:
        return none
    prefix = describe(src.name, "THST footer", start)
    top = _parse_json(src.read(start, json_len, what="THST footer JSON"), "footer JSON", prefix)
    if not isinstance(top, dict):
        raise MetadataError(f"{prefix}footer JSON must be an object, got {type(top).__name__}")
    if "history" not in top or not isinstance(top["history"], list):
        raise MetadataError(f"{prefix}footer JSON needs a 'history' array")
    _check_count(top["history"], "history", "history", prefix)
    history = [_history_row(r, i, prefix) for i, r in enumerate(top["history"])]
    meta, spill = top.get("metadata"), None
    if top.get("metadata_ref") is not None:
        meta, spill = _spill(src, top["metadata_ref"], prefix)
        start -= spill[1]
        if start < 0:
            raise CorruptFileError(f"{prefix}metadata spill of {spill[1]} bytes does not fit before the footer")
    file_meta, datasets = _metadata(meta, prefix)
    return _Footer(history, file_meta, datasets, start, True, spill)


def _spill(src: ByteSource, ref: Any, prefix: str) -> tuple[Any, tuple[int, int]]:
    """The metadata JSON a footer's ``metadata_ref`` points at, and its span ``(offset, length)``."""
    if not (isinstance(ref, dict) and all(type(ref.get(k)) is int and ref[k] >= 0 for k in ("offset", "len"))):
        raise MetadataError(f"{prefix}metadata_ref must be {{'offset': u64, 'len': u64}}, got {ref!r}")
    off, n = ref["offset"], ref["len"]
    where = describe(src.name, "metadata spill", off)
    if off + n > src.size:
        raise CorruptFileError(f"{where}metadata_ref [{off}, {off + n}) is outside the {src.size}-byte file")
    if n > LIMITS["spill"]:
        raise LimitExceededError(f"{where}{n} bytes, the limit is {LIMITS['spill']}")
    return _parse_json(src.read(off, n, what="metadata spill"), "metadata spill", where), (off, n)


def _parse_records(
    src: ByteSource, count: int, index_off: int
) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...]]]:
    """The dataset directory: ``[(name, dtype code, shape, chunk_shape)]``; the chunk index follows it."""
    if src.size < 40:
        raise TruncatedFileError(
            f"{describe(src.name, 'dataset directory', 32)}file truncated: {count} datasets "
            f"declared need a directory from byte 32 to at least 40, the file has {src.size} bytes"
        )
    (blob_len,) = struct.unpack("<Q", src.read(32, 8, what="dataset_blob_len"))
    if 40 + blob_len > src.size:
        raise TruncatedFileError(
            f"{describe(src.name, 'dataset directory', 32)}file truncated: dataset_blob_len "
            f"{blob_len} needs at least {40 + blob_len} bytes, the file has {src.size}"
        )
    if count * 32 > blob_len:  # every record is at least 16 + 16 bytes: bound the loop before reading
        raise CorruptFileError(
            f"{describe(src.name, 'dataset directory', 32)}{count} records cannot fit in dataset_blob_len {blob_len}"
        )
    blob = src.read(40, blob_len, what="dataset directory")
    records = []
    pos = 0
    for i in range(count):
        where = describe(src.name, f"dataset record {i}", 40 + pos)
        if pos + 16 > blob_len:
            raise CorruptFileError(f"{where}record header runs past dataset_blob_len {blob_len}")
        name_len, code, ndim, _ = RECORD_HEADER.unpack_from(blob, pos)
        if not 1 <= ndim <= MAX_NDIM:
            raise CorruptFileError(f"{where}ndim {ndim}, expected 1..{MAX_NDIM}")
        if pos + 16 + name_len > blob_len:
            raise CorruptFileError(f"{where}name of {name_len} bytes runs past the directory")
        try:
            name = blob[pos + 16 : pos + 16 + name_len].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptFileError(f"{where}dataset name is not valid UTF-8 ({exc})") from exc
        dims_at = pos + _align8(16 + name_len)  # the name zero-padded to 8 bytes
        end = dims_at + 16 * ndim
        if end > blob_len:
            raise CorruptFileError(f"{where}shape and chunk_shape run past dataset_blob_len {blob_len}")
        dims = struct.unpack_from(f"<{2 * ndim}Q", blob, dims_at)
        records.append((name, code, tuple(dims[:ndim]), tuple(dims[ndim:])))
        pos = end
    if pos != blob_len:
        raise CorruptFileError(
            f"{describe(src.name, 'dataset directory', 32)}records use {pos} bytes but "
            f"dataset_blob_len declares {blob_len}"
        )
    if index_off != _align8(40 + blob_len):
        raise CorruptFileError(
            f"{describe(src.name, 'superblock', 16)}chunk_index_offset {index_off}, "
            f"expected {_align8(40 + blob_len)} (directory end rounded up to 8)"
        )
    return records


def _check_record(
    src: ByteSource, i: int, name: str, code: int, shape: tuple[int, ...], chunk_shape: tuple[int, ...]
) -> np.dtype:
    """Strict checks the reference leaves to verify: dtype code and non-zero extents."""
    where = describe(src.name, f"dataset {i} ({name!r})")
    if code not in DTYPE_CODES:
        raise UnsupportedError(
            f"{where}dtype code {code}, expected 1..10 ({', '.join(f'{c}={n}' for c, (n, _) in DTYPE_CODES.items())})"
        )
    if 0 in shape or 0 in chunk_shape:
        raise CorruptFileError(f"{where}zero extent in shape {list(shape)} or chunk_shape {list(chunk_shape)}")
    if any(s >= 2**63 for s in shape) or math.prod(shape) * DTYPE_CODES[code][1].itemsize >= 2**63:
        raise LimitExceededError(f"{where}shape {list(shape)} is too large to address")
    return DTYPE_CODES[code][1]


def _read_index(src: ByteSource, offset: int, length: int, payload_end: int) -> tuple[np.ndarray, dict[str, int]]:
    """The entries and the header's execution hints, after the TIDX header checks and the per-entry checks
    (reference order)."""
    where = describe(src.name, "chunk index", offset)
    if length < 32:
        raise CorruptFileError(f"{where}chunk_index_length {length} is shorter than the 32-byte TIDX header")
    magic, version, count, bps, _r, budget, _r2 = INDEX_HEADER.unpack(src.read(offset, 32, what="TIDX header"))
    if magic != INDEX_MAGIC:
        raise CorruptFileError(f"{where}index magic {byte_text(magic)}, expected {byte_text(INDEX_MAGIC)}")
    if version != 1:
        raise UnsupportedError(f"{where}index version {version}, expected 1")
    if 32 + 104 * count != length:  # length already fits the file: the allocation below is justified
        raise CorruptFileError(f"{where}entry_count {count} needs {32 + 104 * count} bytes, the region has {length}")
    entries = src.read_array(offset + 32, 104 * count, what="chunk index entries").view(ENTRY)
    codec_ok = np.isin(entries["codec"], list(CODECS))
    # a codec that stores values as they are stores raw_byte_len bytes; any other cannot decode to more than its
    # output bound (e.g. zstd: one 128 KiB block per 4 stored bytes), checked before allocating
    raw_ok, bound_ok = np.ones(count, dtype=bool), np.ones(count, dtype=bool)
    for code, (_name, codec) in CODEC_TABLE.items():
        mine = entries["codec"] == code
        if codec.capabilities.byte_ranges:
            raw_ok[mine] = entries["raw"][mine] == entries["stored"][mine]
        else:
            bound_ok[mine] = codec.fits_output(entries["raw"][mine], entries["stored"][mine])
    span_ok = (entries["offset"] <= np.uint64(payload_end)) & (
        entries["stored"] <= np.uint64(payload_end) - np.minimum(entries["offset"], np.uint64(payload_end))
    )
    bad = np.flatnonzero(~(codec_ok & raw_ok & span_ok & bound_ok))
    if bad.size:
        k = int(bad[0])
        _, _, off, raw, stored, code, _ = entries[k].item()
        at = _entry_at(src, offset, k)
        if not codec_ok[k]:
            known = " or ".join(f"{c} ({n})" for c, n in CODECS.items())
            raise UnsupportedError(f"{at}codec {code}, expected {known}")
        name, codec = CODEC_TABLE[code]
        if not raw_ok[k]:
            raise CorruptFileError(f"{at}{name} codec with raw_byte_len {raw} != stored_byte_len {stored}")
        if span_ok[k]:
            raise LimitExceededError(
                f"{at}raw_byte_len {raw} cannot come from {stored} bytes of {name} (at most "
                f"{codec.max_output(stored)} bytes)"
            )
        raise CorruptFileError(
            f"{at}payload [{off}, {off + stored}) is outside the payload region, which ends at byte {payload_end}"
        )
    return entries, {"memory_budget_percent_bps": bps, "memory_budget_bytes": budget}


def _attach_tiles(src: ByteSource, ds: TetrDataset, entries: np.ndarray, rows: np.ndarray, index_at: int) -> None:
    """Build the tile -> entry table of one dataset (first match wins) with the strict tile checks."""
    where = describe(src.name, f"dataset {ds.dataset_id} ({ds.name!r})")
    grid = ds.grid
    ntiles = math.prod(grid)
    mine = entries[rows]
    coords = mine["coords"][:, : ds.ndim]
    if ntiles > len(rows):  # checked before allocating a table of grid size
        raise CorruptFileError(f"{where}{len(rows)} index entries for a grid of {ntiles} tiles {list(grid)}")
    outside = np.flatnonzero((coords >= np.asarray(grid, dtype=np.uint64)).any(axis=1))
    if outside.size:
        k = int(rows[outside[0]])
        raise CorruptFileError(
            f"{_entry_at(src, index_at, k)}grid coordinates {coords[outside[0]].tolist()} outside the grid {list(grid)}"
        )
    # each tile's clipped size in bytes; a chunk extent may exceed the shape (one clipped tile on that axis), even
    # up to 2**64-1
    chunk = np.asarray([min(c, s) for c, s in zip(ds.chunk_shape, ds.shape, strict=True)], dtype=np.int64)
    extent = np.minimum(chunk, np.asarray(ds.shape, dtype=np.int64) - coords.astype(np.int64) * chunk)
    expected = np.prod(extent, axis=1, dtype=np.int64) * ds.dtype.itemsize
    wrong = np.flatnonzero(mine["raw"].astype(np.int64) != expected)
    if wrong.size:
        j = int(wrong[0])
        k = int(rows[j])
        raise CorruptFileError(
            f"{_entry_at(src, index_at, k)}tile {coords[j].tolist()} of {ds.name!r} has raw_byte_len "
            f"{int(mine['raw'][j])}, the clipped tile is {int(expected[j])} bytes"
        )
    linear = np.ravel_multi_index(tuple(coords.astype(np.int64).T), grid) if ntiles else np.zeros(0, np.int64)
    present, first = np.unique(linear, return_index=True)
    if present.size != ntiles:
        missing = np.setdiff1d(np.arange(ntiles), present)[0]
        raise CorruptFileError(
            f"{where}no index entry for tile {list(np.unravel_index(missing, grid))} of the grid {list(grid)}"
        )
    table = np.empty(ntiles, dtype=np.int64)
    table[present] = first
    ds.entries = np.ascontiguousarray(mine)
    ds.table = table.reshape(grid)
    codecs = set(np.unique(mine["codec"]).tolist())
    ds.codec = CODECS[codecs.pop()] if len(codecs) == 1 else "mixed"


def _check_entries(src: ByteSource, entries: np.ndarray, count: int, index_at: int) -> None:
    """Strict checks from ``tet verify``: dataset ids in range, no two tiles at one payload offset."""
    bad = np.flatnonzero(entries["dataset_id"] >= np.uint64(count))
    if bad.size:
        k = int(bad[0])
        raise CorruptFileError(
            f"{_entry_at(src, index_at, k)}dataset_id {int(entries['dataset_id'][k])} >= dataset_count {count}"
        )
    offsets = entries["offset"]
    order = np.argsort(offsets, kind="stable")
    dup = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
    if dup.size:
        k = int(order[dup[0] + 1])
        raise CorruptFileError(
            f"{_entry_at(src, index_at, k)}payload_offset {int(offsets[k])} is shared with entry {int(order[dup[0]])}"
        )
