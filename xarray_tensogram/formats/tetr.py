"""Tetration layout v1 (``.tet``, magic ``TETR``): reader and byte-exact writer.

Layout (spec ``tetr-v1.md``): a 32-byte superblock, a dataset directory of
variable-length records, one ``TIDX`` chunk index shared by every dataset
(104-byte entries), the tile payloads (raw or one zstd frame each, edge tiles
clipped), then optionally a metadata spill and a ``THST`` JSON footer holding
history rows and per-dataset ``dim_names``/``coords``/``attrs``.

Opening reads the superblock, directory, index and footer only. Every length is
checked against the file size before anything is allocated, so a hostile
header cannot make us allocate more than the file justifies. The reader follows
the reference's leniencies (unordered index, gaps, trailing bytes, legacy
history triples, spilled footer) and adds the strict checks the fixture
manifest expects (dataset ids, dtype codes, zero extents, tile sizes, duplicate
payload offsets, missing tiles, metadata limits). No xarray or dask here.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import struct
from functools import partial
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Mapping, Sequence

import numpy as np

from ..catalog import ArraySpec, chunk_counts, chunk_extent
from ..codecs import zstd
from ..errors import (
    CorruptFileError,
    LimitExceededError,
    MetadataError,
    TruncatedFileError,
    UnsupportedError,
    describe,
)
from ..io import ByteSource, SourceLike, atomic_write, open_source
from .base import FormatFile
from .inspect import CheckItem, Table, VerifyPlan, count, shape_text
from .registry import FormatSpec

__all__ = [
    "TetrFile",
    "TetrDataset",
    "TetrTileReader",
    "DatasetWrite",
    "open_tetr",
    "write_tetr",
    "encode_footer",
    "DTYPE_CODES",
    "LIMITS",
]

MAGIC = b"TETR"
INDEX_MAGIC = b"TIDX"
FOOTER_MAGIC = b"THST"
SUPERBLOCK = struct.Struct("<4sIIIQQ")
INDEX_HEADER = struct.Struct("<4sIQHHIQ")
FOOTER_TAIL = struct.Struct("<QI4s")
RECORD_HEADER = struct.Struct("<IIII")
MAX_NDIM = 8
FLAG_FOOTER = 1
#: largest zstd block: bounds what a stored zstd payload can decode to
_ZSTD_BLOCK = 131072
#: nesting bound for footer JSON (serde_json's default recursion limit in the reference)
MAX_JSON_DEPTH = 128

#: wire code -> (short name, little-endian numpy dtype)
DTYPE_CODES: dict[int, tuple[str, np.dtype]] = {
    1: ("f32", np.dtype("<f4")), 2: ("f64", np.dtype("<f8")), 3: ("i32", np.dtype("<i4")),
    4: ("i64", np.dtype("<i8")), 5: ("u8", np.dtype("u1")), 6: ("u16", np.dtype("<u2")),
    7: ("i16", np.dtype("<i2")), 8: ("u32", np.dtype("<u4")), 9: ("f16", np.dtype("<f2")),
    10: ("u64", np.dtype("<u8")),
}
_CODE_OF: dict[np.dtype, int] = {dt: code for code, (_, dt) in DTYPE_CODES.items()}
CODECS = {0: "raw", 1: "zstd"}
_CODEC_OF = {name: code for code, name in CODECS.items()}

#: ``MetadataLimitsV1::DEFAULT`` of the reference
LIMITS = {
    "inline_json": 65536, "spill": 16 * 1024 * 1024, "datasets": 256, "attrs": 64, "string": 1024,
    "dim_names": 8, "coord_axes": 8, "labels": 64, "history": 4096, "parents": 16, "params": 32,
}

#: one 104-byte chunk index entry
ENTRY = np.dtype([
    ("dataset_id", "<u8"), ("coords", "<u8", (8,)), ("offset", "<u8"), ("raw", "<u8"),
    ("stored", "<u8"), ("codec", "<u4"), ("reserved", "<u4"),
])
assert ENTRY.itemsize == 104

_HISTORY_KEYS = ("op", "source", "at", "parents", "params")


def _align8(n: int) -> int:
    return (n + 7) & ~7


# ==================================================================================================
# Catalog model
# ==================================================================================================
@dataclass
class TetrDataset:
    """One dataset: geometry from its directory record, metadata from the THST footer."""

    name: str
    dataset_id: int
    dtype_code: int
    dtype: np.dtype
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    #: "raw", "zstd" or "mixed" (the wire format allows a codec per tile)
    codec: str
    dim_names: list[str] | None = None
    #: axis key (a dim name or a decimal axis number) -> labels (the wire's ``{"labels": [...]}`` unwrapped)
    coords: dict[str, list[str]] | None = None
    attrs: dict[str, str] = field(default_factory=dict)
    #: this dataset's index entries (structured ``ENTRY`` rows, index order); ``table[grid coords]`` -> row
    entries: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    table: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grid(self) -> tuple[int, ...]:
        return chunk_counts(self.shape, self.chunk_shape)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def coord_labels(self, axis: int) -> list[str] | None:
        """Labels of ``axis``: keyed by its dim name when the footer has one, else by the axis number."""
        if not self.coords:
            return None
        if self.dim_names and axis < len(self.dim_names) and self.dim_names[axis] in self.coords:
            return self.coords[self.dim_names[axis]]
        return self.coords.get(str(axis))


# ==================================================================================================
# Footer JSON: decode, validate, encode
# ==================================================================================================
def _where_footer(name: str, offset: int) -> str:
    return describe(name, "THST footer", offset)


def _check_str(value: Any, what: str, prefix: str, *, limits: bool = True) -> str:
    """A JSON string that is valid UTF-8 and, with ``limits``, 1..1024 bytes long."""
    if not isinstance(value, str):
        raise MetadataError(f"{prefix}{what} must be a string, got {type(value).__name__}")
    try:
        n = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise MetadataError(f"{prefix}{what} is not valid Unicode (lone surrogate): {exc}") from exc
    if limits and not 1 <= n <= LIMITS["string"]:
        raise LimitExceededError(f"{prefix}{what} is {n} bytes of UTF-8, expected 1..{LIMITS['string']}")
    return value


def _check_count(items: list | dict | tuple, limit_key: str, what: str, prefix: str) -> None:
    if len(items) > LIMITS[limit_key]:
        raise LimitExceededError(f"{prefix}{what} has {len(items)} entries, the limit is {LIMITS[limit_key]}")


def _history_row(row: Any, i: int, prefix: str, *, limits: bool = False) -> dict[str, Any]:
    """One history row as a dict; legacy ``[op, source, at]`` triples are normalised.

    The reference enforces the per-row string and count limits only when writing
    (``limits=True``); reading accepts any strings.
    """
    p = f"{prefix}history row {i}: "
    lim = {"limits": limits}
    if isinstance(row, list):
        if len(row) != 3:
            raise MetadataError(f"{p}a legacy row must be [op, source, at], got {len(row)} items")
        row = dict(zip(("op", "source", "at"), row))
    if not isinstance(row, dict):
        raise MetadataError(f"{p}expected an object or a [op, source, at] array, got {type(row).__name__}")
    unknown = set(row) - set(_HISTORY_KEYS)
    if unknown:
        raise MetadataError(f"{p}unknown keys {sorted(unknown)} (expected {list(_HISTORY_KEYS)})")
    out: dict[str, Any] = {}
    for key in ("op", "source", "at"):
        if key not in row:
            raise MetadataError(f"{p}missing {key!r}")
        out[key] = _check_str(row[key], key, p, **lim)
    if row.get("parents") is not None:
        parents = row["parents"]
        if not isinstance(parents, list):
            raise MetadataError(f"{p}parents must be an array of strings")
        if limits:
            _check_count(parents, "parents", "parents", p)
        out["parents"] = [_check_str(v, "parent", p, **lim) for v in parents]
    if row.get("params") is not None:
        params = row["params"]
        if not isinstance(params, dict):
            raise MetadataError(f"{p}params must be an object of strings")
        if limits:
            _check_count(params, "params", "params", p)
        out["params"] = {_check_str(k, "param key", p, **lim): _check_str(v, f"param {k!r}", p, **lim)
                         for k, v in params.items()}
    return out


def _dataset_meta(name: str, meta: Any, prefix: str) -> dict[str, Any]:
    """Validate one ``metadata.datasets`` entry (unknown keys ignored, as the reference does)."""
    p = f"{prefix}metadata of dataset {name!r}: "
    if not isinstance(meta, dict):
        raise MetadataError(f"{p}expected an object, got {type(meta).__name__}")
    out: dict[str, Any] = {}
    attrs = meta.get("attrs")
    if attrs is not None:
        if not isinstance(attrs, dict):
            raise MetadataError(f"{p}attrs must be an object of strings")
        _check_count(attrs, "attrs", "attrs", p)
        out["attrs"] = {_check_str(k, "attr key", p): _check_str(v, f"attr {k!r}", p) for k, v in attrs.items()}
    dims = meta.get("dim_names")
    if dims is not None:
        if not isinstance(dims, list):
            raise MetadataError(f"{p}dim_names must be an array of strings")
        _check_count(dims, "dim_names", "dim_names", p)
        out["dim_names"] = [_check_str(d, "dim name", p) for d in dims]
    coords = meta.get("coords")
    if coords is not None:
        if not isinstance(coords, dict):
            raise MetadataError(f"{p}coords must be an object")
        _check_count(coords, "coord_axes", "coords", p)
        out["coords"] = {}
        for axis, spec in coords.items():
            _check_str(axis, "coord axis key", p)
            if not isinstance(spec, dict) or not isinstance(spec.get("labels"), list):
                raise MetadataError(f"{p}coords[{axis!r}] must be an object with a 'labels' array")
            _check_count(spec["labels"], "labels", f"coords[{axis!r}].labels", p)
            out["coords"][axis] = [_check_str(v, f"label of axis {axis!r}", p) for v in spec["labels"]]
    return out


def _metadata(meta: Any, prefix: str) -> tuple[dict[str, str] | None, dict[str, dict[str, Any]]]:
    """``(file metadata or None, {dataset name: validated metadata})`` from a metadata object."""
    if meta is None:
        return None, {}
    if not isinstance(meta, dict):
        raise MetadataError(f"{prefix}metadata must be an object, got {type(meta).__name__}")
    file_meta = meta.get("file")
    if file_meta is not None:
        if not isinstance(file_meta, dict):
            raise MetadataError(f"{prefix}metadata.file must be an object")
        file_meta = {k: _check_str(file_meta[k], f"file {k}", prefix)
                     for k in ("tool", "library_version", "created_at") if file_meta.get(k) is not None}
    datasets = meta.get("datasets") or {}
    if not isinstance(datasets, dict):
        raise MetadataError(f"{prefix}metadata.datasets must be an object")
    _check_count(datasets, "datasets", "metadata.datasets", prefix)
    return file_meta, {_check_str(k, "dataset key", prefix): _dataset_meta(k, v, prefix) for k, v in datasets.items()}


def _json_bytes(obj: Any) -> bytes:
    """Compact JSON exactly as serde_json writes it (non-ASCII kept, no spaces)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _parse_json(data: bytes, what: str, prefix: str) -> Any:
    """One JSON value, nested at most ``MAX_JSON_DEPTH`` deep (serde_json's recursion limit)."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise LimitExceededError(f"{prefix}{what} is nested too deeply (the limit is {MAX_JSON_DEPTH} levels)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MetadataError(f"{prefix}{what} is not valid UTF-8 JSON: {exc}") from exc
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise LimitExceededError(f"{prefix}{what} is nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return obj


def _wire_history_row(row: Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
    """A row in wire key order (op, source, at, parents, params; params sorted); validated."""
    checked = _history_row(list(row) if isinstance(row, tuple) else dict(row) if isinstance(row, Mapping) else row,
                           0, "history to write: ", limits=True)
    out = {k: checked[k] for k in ("op", "source", "at")}
    if checked.get("parents"):
        out["parents"] = checked["parents"]
    if checked.get("params"):
        out["params"] = dict(sorted(checked["params"].items(), key=lambda kv: kv[0].encode()))
    return out


def _sorted_map(m: Mapping[str, Any]) -> dict[str, Any]:
    return dict(sorted(m.items(), key=lambda kv: kv[0].encode("utf-8")))


def _wire_dataset_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Key order attrs, dim_names, coords; maps sorted by UTF-8 bytes (Rust BTreeMap)."""
    out: dict[str, Any] = {}
    if meta.get("attrs"):
        out["attrs"] = _sorted_map(meta["attrs"])
    if meta.get("dim_names") is not None:
        out["dim_names"] = list(meta["dim_names"])
    if meta.get("coords") is not None:
        out["coords"] = {k: {"labels": list(v)} for k, v in _sorted_map(meta["coords"]).items()}
    return out


def encode_footer(history: Sequence[Any], metadata: Mapping[str, Any] | None, payload_end: int) -> bytes:
    """Spill (if any) + footer JSON + 16-byte tail, as ``write_footer_blob`` appends them at ``payload_end``.

    ``metadata`` is the wire-form object (``{"file": ..., "datasets": ...}``) or ``None``.
    Limits are checked first; metadata whose inline footer would exceed 64 KiB is spilled.
    """
    rows = [_wire_history_row(r) for r in history]
    _check_count(rows, "history", "history", "history to write: ")
    meta_obj: dict[str, Any] | None = None
    if metadata is not None:
        file_meta, datasets = _metadata(dict(metadata), "metadata to write: ")
        meta_obj = {}
        if file_meta is not None:
            meta_obj["file"] = file_meta
        if datasets:
            meta_obj["datasets"] = {k: _wire_dataset_meta(v) for k, v in _sorted_map(datasets).items()}
    inline: dict[str, Any] = {"history": rows}
    if meta_obj is not None:
        inline["metadata"] = meta_obj
    footer = _json_bytes(inline)
    spill = b""
    if len(footer) > LIMITS["inline_json"]:
        spill = _json_bytes(meta_obj)
        if len(spill) > LIMITS["spill"]:
            raise LimitExceededError(f"metadata to write: {len(spill)} bytes of JSON, the spill limit is {LIMITS['spill']}")
        footer = _json_bytes({"history": rows, "metadata_ref": {"offset": payload_end, "len": len(spill)}})
        if len(footer) > LIMITS["inline_json"]:
            raise LimitExceededError(f"history to write: footer JSON is {len(footer)} bytes, the limit is {LIMITS['inline_json']}")
    return spill + footer + FOOTER_TAIL.pack(len(footer), 1, FOOTER_MAGIC)


# ==================================================================================================
# Parsing
# ==================================================================================================
@dataclass
class _Footer:
    history: list[dict[str, Any]]
    file_metadata: dict[str, str] | None
    datasets: dict[str, dict[str, Any]]
    payload_end: int
    present: bool = False
    spill: tuple[int, int] | None = None


def _tiles_end(src: ByteSource, index_offset: int, index_length: int) -> int:
    """End of the last tile the chunk index names (its offset + stored length), or the index end.

    Used only to say how large a file missing its footer should be; the index is checked properly later.
    """
    end = index_offset + index_length
    count = max(0, index_length - 32) // ENTRY.itemsize
    if count and end <= src.size:
        entries = np.frombuffer(src.read(index_offset + 32, count * ENTRY.itemsize, what="chunk index"), dtype=ENTRY)
        end = max(end, int((entries["offset"].astype(object) + entries["stored"].astype(object)).max()))
    return end


def _read_footer(src: ByteSource, flags: int, dataset_count: int, index_offset: int = 0,
                 index_length: int = 0) -> _Footer:
    """Tail checks (always, like the reference), then JSON and spill when flag bit 0 is set."""
    size = src.size
    none = _Footer([], None, {}, size)
    tail = src.read(size - 16, 16, what="THST footer tail") if size >= 16 else b""
    if tail[-4:] != FOOTER_MAGIC:
        if flags & FLAG_FOOTER and dataset_count > 0:
            need = _tiles_end(src, index_offset, index_length) + 16
            raise TruncatedFileError(
                f"{describe(src.name, 'superblock', 12)}file truncated or its footer damaged: the history flag "
                f"promises a THST footer at the end, the last 4 bytes are {tail[-4:]!r}; the tiles and the footer "
                f"tail need more than {need - 1} bytes, the file has {size}"
            )
        return none
    json_len, version, _ = FOOTER_TAIL.unpack(tail)
    start = size - 16 - json_len
    if version != 1:
        raise UnsupportedError(f"{_where_footer(src.name, size - 8)}history footer version {version}, expected 1")
    if start < 0:
        raise CorruptFileError(f"{_where_footer(src.name, size - 16)}history_json_len {json_len} does not fit "
                               f"a {size}-byte file")
    if not flags & FLAG_FOOTER:
        return none
    prefix = _where_footer(src.name, start)
    top = _parse_json(src.read(start, json_len, what="THST footer JSON"), "footer JSON", prefix)
    if not isinstance(top, dict):
        raise MetadataError(f"{prefix}footer JSON must be an object, got {type(top).__name__}")
    if "history" not in top or not isinstance(top["history"], list):
        raise MetadataError(f"{prefix}footer JSON needs a 'history' array")
    _check_count(top["history"], "history", "history", prefix)
    history = [_history_row(r, i, prefix) for i, r in enumerate(top["history"])]
    meta, spill = top.get("metadata"), None
    ref = top.get("metadata_ref")
    if ref is not None:
        if not (isinstance(ref, dict) and all(isinstance(ref.get(k), int) and not isinstance(ref.get(k), bool)
                                              and ref[k] >= 0 for k in ("offset", "len"))):
            raise MetadataError(f"{prefix}metadata_ref must be {{'offset': u64, 'len': u64}}, got {ref!r}")
        off, n = ref["offset"], ref["len"]
        if off + n > size:
            raise CorruptFileError(f"{describe(src.name, 'metadata spill', off)}metadata_ref [{off}, {off + n}) is "
                                   f"outside the {size}-byte file")
        if n > LIMITS["spill"]:
            raise LimitExceededError(f"{describe(src.name, 'metadata spill', off)}{n} bytes, the limit is {LIMITS['spill']}")
        meta = _parse_json(src.read(off, n, what="metadata spill"), "metadata spill",
                           describe(src.name, "metadata spill", off))
        spill = (off, n)
        start -= n
        if start < 0:
            raise CorruptFileError(f"{prefix}metadata spill of {n} bytes does not fit before the footer")
    file_meta, datasets = _metadata(meta, prefix)
    return _Footer(history, file_meta, datasets, start, True, spill)


def _parse_records(src: ByteSource, count: int) -> tuple[list[tuple[str, int, tuple[int, ...], tuple[int, ...]]], int]:
    """The dataset directory: ``[(name, dtype code, shape, chunk_shape)]`` and the blob end offset."""
    if src.size < 40:
        raise TruncatedFileError(f"{describe(src.name, 'dataset directory', 32)}file truncated: {count} datasets "
                                 f"declared need a directory from byte 32 to at least 40, the file has {src.size} bytes")
    (blob_len,) = struct.unpack("<Q", src.read(32, 8, what="dataset_blob_len"))
    if 40 + blob_len > src.size:
        raise TruncatedFileError(f"{describe(src.name, 'dataset directory', 32)}file truncated: dataset_blob_len "
                                 f"{blob_len} needs at least {40 + blob_len} bytes, the file has {src.size}")
    if count * 32 > blob_len:  # every record is at least 16 + 16 bytes: bound the loop before reading
        raise CorruptFileError(f"{describe(src.name, 'dataset directory', 32)}{count} records cannot fit in "
                               f"dataset_blob_len {blob_len}")
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
            name = blob[pos + 16: pos + 16 + name_len].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptFileError(f"{where}dataset name is not valid UTF-8 ({exc})") from exc
        dims_at = pos + 16 + name_len + (8 - (16 + name_len) % 8) % 8
        end = dims_at + 16 * ndim
        if end > blob_len:
            raise CorruptFileError(f"{where}shape and chunk_shape run past dataset_blob_len {blob_len}")
        dims = struct.unpack_from(f"<{2 * ndim}Q", blob, dims_at)
        records.append((name, code, tuple(dims[:ndim]), tuple(dims[ndim:])))
        pos = end
    if pos != blob_len:
        raise CorruptFileError(f"{describe(src.name, 'dataset directory', 32)}records use {pos} bytes but "
                               f"dataset_blob_len declares {blob_len}")
    return records, 40 + blob_len


def _check_record(src: ByteSource, i: int, name: str, code: int, shape: tuple[int, ...],
                  chunk_shape: tuple[int, ...]) -> np.dtype:
    """Strict checks the reference leaves to verify: dtype code and non-zero extents."""
    where = describe(src.name, f"dataset {i} ({name!r})")
    if code not in DTYPE_CODES:
        raise UnsupportedError(f"{where}dtype code {code}, expected 1..10 "
                               f"({', '.join(f'{c}={n}' for c, (n, _) in DTYPE_CODES.items())})")
    if 0 in shape or 0 in chunk_shape:
        raise CorruptFileError(f"{where}zero extent in shape {list(shape)} or chunk_shape {list(chunk_shape)}")
    if any(s >= 2**63 for s in shape) or math.prod(shape) * DTYPE_CODES[code][1].itemsize >= 2**63:
        raise LimitExceededError(f"{where}shape {list(shape)} is too large to address")
    return DTYPE_CODES[code][1]


def _read_index(src: ByteSource, offset: int, length: int, payload_end: int) -> tuple[np.ndarray, dict[str, int]]:
    """TIDX header checks, then the entries with their per-entry checks (reference order).

    Returns the entries and the header's execution hints.
    """
    where = describe(src.name, "chunk index", offset)
    if length < 32:
        raise CorruptFileError(f"{where}chunk_index_length {length} is shorter than the 32-byte TIDX header")
    magic, version, count, bps, _r, budget, _r2 = INDEX_HEADER.unpack(src.read(offset, 32, what="TIDX header"))
    if magic != INDEX_MAGIC:
        raise CorruptFileError(f"{where}index magic {magic!r}, expected {INDEX_MAGIC!r}")
    if version != 1:
        raise UnsupportedError(f"{where}index version {version}, expected 1")
    if 32 + 104 * count != length:  # length already fits the file: the allocation below is justified
        raise CorruptFileError(f"{where}entry_count {count} needs {32 + 104 * count} bytes, the region has {length}")
    entries = src.read_array(offset + 32, 104 * count, what="chunk index entries").view(ENTRY)
    codec_ok = np.isin(entries["codec"], list(CODECS))
    raw_ok = (entries["codec"] != 0) | (entries["raw"] == entries["stored"])
    # zstd cannot expand more than one 128 KiB block per 4 stored bytes: bound raw_byte_len before allocating
    # (raw <= (stored // 4 + 1) * block, written without u64 overflow)
    blocks, quarter = entries["raw"] // np.uint64(_ZSTD_BLOCK), entries["stored"] // np.uint64(4)
    zstd_ok = (entries["codec"] != 1) | (blocks <= quarter) | (
        (blocks == quarter + np.uint64(1)) & (entries["raw"] % np.uint64(_ZSTD_BLOCK) == 0))
    span_ok = (entries["offset"] <= np.uint64(payload_end)) & (entries["stored"] <= np.uint64(payload_end) - np.minimum(
        entries["offset"], np.uint64(payload_end)))
    bad = np.flatnonzero(~(codec_ok & raw_ok & span_ok & zstd_ok))
    if bad.size:
        k = int(bad[0])
        e = entries[k]
        at = describe(src.name, f"chunk index entry {k}", offset + 32 + 104 * k)
        if not codec_ok[k]:
            raise UnsupportedError(f"{at}codec {int(e['codec'])}, expected 0 (raw) or 1 (zstd)")
        if not raw_ok[k]:
            raise CorruptFileError(f"{at}raw codec with raw_byte_len {int(e['raw'])} != stored_byte_len {int(e['stored'])}")
        if span_ok[k]:
            raise LimitExceededError(f"{at}raw_byte_len {int(e['raw'])} cannot come from {int(e['stored'])} bytes of "
                                     f"zstd (at most one {_ZSTD_BLOCK}-byte block per 4 stored bytes)")
        raise CorruptFileError(f"{at}payload [{int(e['offset'])}, {int(e['offset']) + int(e['stored'])}) is outside "
                               f"the payload region, which ends at byte {payload_end}")
    return entries, {"memory_budget_percent_bps": bps, "memory_budget_bytes": budget}


def _tile_bytes(ds: TetrDataset, coords: np.ndarray) -> np.ndarray:
    """Clipped tile size in bytes for each row of grid coordinates."""
    shape = np.asarray(ds.shape, dtype=np.int64)
    # a chunk extent may exceed the shape (one clipped tile on that axis), even up to 2**64-1
    chunk = np.asarray([min(c, s) for c, s in zip(ds.chunk_shape, ds.shape)], dtype=np.int64)
    start = coords.astype(np.int64) * chunk
    extent = np.minimum(chunk, shape - start)
    return np.prod(extent, axis=1, dtype=np.int64) * ds.dtype.itemsize


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
        raise CorruptFileError(f"{describe(src.name, f'chunk index entry {k}', index_at + 32 + 104 * k)}grid "
                               f"coordinates {coords[outside[0]].tolist()} outside the grid {list(grid)}")
    expected = _tile_bytes(ds, coords)
    wrong = np.flatnonzero(mine["raw"].astype(np.int64) != expected)
    if wrong.size:
        j = int(wrong[0])
        k = int(rows[j])
        raise CorruptFileError(f"{describe(src.name, f'chunk index entry {k}', index_at + 32 + 104 * k)}tile "
                               f"{coords[j].tolist()} of {ds.name!r} has raw_byte_len {int(mine['raw'][j])}, "
                               f"the clipped tile is {int(expected[j])} bytes")
    linear = np.ravel_multi_index(tuple(coords.astype(np.int64).T), grid) if ntiles else np.zeros(0, np.int64)
    present, first = np.unique(linear, return_index=True)
    if present.size != ntiles:
        missing = np.setdiff1d(np.arange(ntiles), present)[0]
        raise CorruptFileError(f"{where}no index entry for tile {list(np.unravel_index(missing, grid))} "
                               f"of the grid {list(grid)}")
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
        raise CorruptFileError(f"{describe(src.name, f'chunk index entry {k}', index_at + 32 + 104 * k)}dataset_id "
                               f"{int(entries['dataset_id'][k])} >= dataset_count {count}")
    offsets = entries["offset"]
    order = np.argsort(offsets, kind="stable")
    dup = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
    if dup.size:
        k = int(order[dup[0] + 1])
        raise CorruptFileError(f"{describe(src.name, f'chunk index entry {k}', index_at + 32 + 104 * k)}payload_offset "
                               f"{int(offsets[k])} is shared with entry {int(order[dup[0]])}")


# ==================================================================================================
# Reading tiles
# ==================================================================================================
@dataclass(frozen=True, eq=False)
class TetrTileReader:
    """The :class:`~xarray_tensogram.catalog.ChunkReader` of one dataset: thread-safe and picklable.

    Holds the byte source (pickled as a path) and the dataset's index rows only.
    Raw tiles are read by byte range (a region of leading-axis rows reads only
    those rows); zstd tiles are decoded with output bounded by ``raw_byte_len``.
    """

    source: ByteSource
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    entries: np.ndarray
    table: np.ndarray

    def _entry(self, coords: tuple[int, ...]) -> np.void:
        if len(coords) != len(self.shape) or any(not 0 <= c < n for c, n in zip(coords, self.table.shape)):
            raise IndexError(f"tile {list(coords)} is outside the grid {list(self.table.shape)} of {self.name!r}")
        return self.entries[int(self.table[tuple(coords)])]

    def read_chunk(self, coords: tuple[int, ...], region: tuple[slice, ...] | None = None) -> np.ndarray:
        """``region`` (step-1 slices local to the clipped tile) of the tile at ``coords``."""
        coords = tuple(int(c) for c in coords)
        e = self._entry(coords)
        extent = chunk_extent(self.shape, self.chunk_shape, coords)
        region = tuple(slice(*s.indices(n)[:2]) for s, n in zip(region, extent)) if region else \
            tuple(slice(0, n) for n in extent)
        where = describe(self.source.name, f"dataset {self.name!r} tile {list(coords)}", int(e["offset"]))
        if int(e["codec"]) == 0:
            return self._read_raw_rows(e, extent, region, where)
        payload = self._stored(e)
        flat = zstd.decompress(payload, int(e["raw"]), where=where)
        return flat.view(self.dtype).reshape(extent)[region]

    def _stored(self, e: np.void) -> bytes | memoryview:
        off, n = int(e["offset"]), int(e["stored"])
        view = self.source.view(off, n)
        return view if view is not None else self.source.read(off, n, what=f"tile payload of {self.name!r}")

    def _read_raw_rows(self, e: np.void, extent: tuple[int, ...], region: tuple[slice, ...], where: str) -> np.ndarray:
        """Only the bytes of the leading-axis rows the region needs."""
        row_bytes = math.prod(extent[1:]) * self.dtype.itemsize
        lo, hi = region[0].start, max(region[0].start, region[0].stop)
        if hi == lo:
            return np.empty(tuple(s.stop - s.start for s in region), dtype=self.dtype)
        raw = self.source.read_array(int(e["offset"]) + lo * row_bytes, (hi - lo) * row_bytes,
                                     what=f"{where}raw tile rows")
        block = raw.view(self.dtype).reshape((hi - lo,) + tuple(extent[1:]))
        return block[(slice(None),) + region[1:]]


# ==================================================================================================
# The open file
# ==================================================================================================
class TetrFile(FormatFile[TetrDataset]):
    """An open ``.tet`` file: ``.datasets``, ``.history``, ``.metadata``, reads by tile or hyperslab.

    Opening reads the superblock, the directory, the chunk index and the footer;
    no payload byte is read before values are asked for. Use it as a context
    manager or call :meth:`close`.
    """

    item_kind = "dataset"

    def __init__(self, source: SourceLike, *, storage_options: Mapping[str, Any] | None = None) -> None:
        self.source: ByteSource = open_source(source, storage_options)
        self.name = self.source.name
        try:
            self._parse()
        except MemoryError as exc:
            self.source.close()
            raise LimitExceededError(f"{describe(self.name)}index too large to hold in memory") from exc
        except BaseException:
            self.source.close()
            raise

    def _parse(self) -> None:
        src = self.source
        if src.size < 32:
            raise TruncatedFileError(f"{describe(src.name, 'superblock', 0)}file truncated: a .tet file needs at "
                                     f"least a 32-byte superblock, this one has {src.size} bytes")
        magic, version, count, flags, index_off, index_len = SUPERBLOCK.unpack(src.read(0, 32, what="superblock"))
        if magic != MAGIC:
            raise CorruptFileError(f"{describe(src.name, 'superblock', 0)}magic {magic!r}, expected {MAGIC!r}")
        if version != 1:
            raise UnsupportedError(f"{describe(src.name, 'superblock', 4)}layout_version {version}, expected 1")
        if index_off + index_len > src.size:
            raise TruncatedFileError(f"{describe(src.name, 'superblock', 16)}file truncated: the chunk index "
                                     f"[{index_off}, {index_off + index_len}) needs at least {index_off + index_len} "
                                     f"bytes, the file has {src.size}")
        self.layout_version, self.flags = version, flags
        self.index_offset, self.index_length = index_off, index_len
        self.execution = {"memory_budget_percent_bps": 0, "memory_budget_bytes": 0}
        self.datasets: list[TetrDataset] = []
        self._records = []
        if count:
            self._records, blob_end = _parse_records(src, count)
            if index_off != _align8(blob_end):
                raise CorruptFileError(f"{describe(src.name, 'superblock', 16)}chunk_index_offset {index_off}, "
                                       f"expected {_align8(blob_end)} (directory end rounded up to 8)")
        footer = _read_footer(src, flags, count, index_off, index_len)
        self.payload_end = footer.payload_end
        #: history rows, oldest first, legacy triples normalised to {op, source, at}
        self.history: list[dict[str, Any]] = footer.history
        #: file-level metadata (``tool``, ``library_version``, ``created_at``); empty when absent
        self.metadata: dict[str, str] = dict(footer.file_metadata or {})
        #: a THST footer was found and parsed (flag bit 0 set and a valid tail)
        self.footer_present = footer.present
        self.metadata_spill = footer.spill
        if count:
            self._build(footer)

    def _build(self, footer: _Footer) -> None:
        src = self.source
        entries, self.execution = _read_index(src, self.index_offset, self.index_length, footer.payload_end)
        dtypes = [_check_record(src, i, *rec) for i, rec in enumerate(self._records)]
        _check_entries(src, entries, len(self._records), self.index_offset)
        ids = entries["dataset_id"].astype(np.int64)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(len(self._records) + 1))
        seen: set[str] = set()
        for i, ((name, code, shape, chunk_shape), dtype) in enumerate(zip(self._records, dtypes)):
            meta = footer.datasets.get(name, {}) if name not in seen else {}  # metadata is keyed by name: first wins
            seen.add(name)
            ds = TetrDataset(name, i, code, dtype, shape, chunk_shape, "raw", meta.get("dim_names"),
                             meta.get("coords"), dict(meta.get("attrs", {})))
            _attach_tiles(src, ds, entries, order[bounds[i]:bounds[i + 1]], self.index_offset)
            self.datasets.append(ds)

    # -- lookup (FormatFile: len, iteration, f[i], f["name"], names) ----------------------------
    def _items(self) -> list[TetrDataset]:
        return self.datasets

    def dataset(self, key: str | int) -> TetrDataset:
        """Dataset by position, or by name (the first record carrying it, like the reference)."""
        return self[key]

    # -- reading ----------------------------------------------------------------------------------
    def tile_reader(self, key: str | int) -> TetrTileReader:
        d = self.dataset(key)
        return TetrTileReader(self.source, d.name, d.dtype, d.shape, d.chunk_shape, d.entries, d.table)

    def array_spec(self, key: str | int) -> ArraySpec:
        """Lazy description for the shared lazy array: one chunk per tile (edge tiles clipped)."""
        d = self.dataset(key)
        return ArraySpec(d.shape, d.dtype, d.chunk_shape, self.tile_reader(key),
                         hints={"format": "tetr", "codec": d.codec})

    def read_chunk(self, key: str | int, chunk_coords: Sequence[int]) -> np.ndarray:
        """The tile at grid ``chunk_coords`` at its clipped extent."""
        return self.tile_reader(key).read_chunk(tuple(chunk_coords))

    def read_region(self, key: str | int, selection: Sequence[slice | int] | slice | int = ()) -> np.ndarray:
        """A hyperslab (ints and slices per axis, like numpy basic indexing) reading only the tiles it touches.

        Slices with a step read the bounding range of each touched tile and keep every step-th element.
        """
        d = self.dataset(key)
        sel = tuple(selection) if isinstance(selection, (tuple, list)) else (selection,)
        if len(sel) > d.ndim:
            raise IndexError(f"{len(sel)} indices for the {d.ndim}-d dataset {d.name!r}")
        sel = sel + (slice(None),) * (d.ndim - len(sel))
        bounds, post, squeeze = [], [], []
        for axis, (s, n) in enumerate(zip(sel, d.shape)):
            if isinstance(s, slice):
                start, stop, step = s.indices(n)
                idx = range(start, stop, step)
                lo, hi = (min(idx[0], idx[-1]), max(idx[0], idx[-1]) + 1) if len(idx) else (0, 0)
                bounds.append((lo, hi))
                # the box spans exactly idx[0]..idx[-1], so stepping from idx[0] ends inside it either way
                post.append(slice(idx[0] - lo, None, step) if len(idx) else slice(0, 0))
            else:
                k = int(s) + (n if int(s) < 0 else 0)
                if not 0 <= k < n:
                    raise IndexError(f"index {s} out of bounds for axis {axis} of size {n}")
                bounds.append((k, k + 1))
                post.append(slice(None))
                squeeze.append(axis)
        out = self._read_box(d, bounds)[tuple(post)]
        return out.reshape(tuple(n for a, n in enumerate(out.shape) if a not in squeeze))

    def _read_box(self, d: TetrDataset, bounds: list[tuple[int, int]]) -> np.ndarray:
        """The step-1 box ``[lo, hi)`` per axis, filled tile by tile."""
        out = np.empty(tuple(hi - lo for lo, hi in bounds), dtype=d.dtype)
        if out.size == 0:
            return out
        reader = self.tile_reader(d.dataset_id)
        ranges = [range(lo // c, (hi - 1) // c + 1) for (lo, hi), c in zip(bounds, d.chunk_shape)]
        for coords in itertools.product(*ranges):
            local, target = [], []
            for (lo, hi), c, k in zip(bounds, d.chunk_shape, coords):
                a, b = max(lo, k * c), min(hi, (k + 1) * c)
                local.append(slice(a - k * c, b - k * c))
                target.append(slice(a - lo, b - lo))
            out[tuple(target)] = reader.read_chunk(coords, tuple(local))
        return out

    def read(self, key: str | int) -> np.ndarray:
        """The whole dataset as a C-order numpy array (native byte order)."""
        d = self.dataset(key)
        return self._read_box(d, [(0, n) for n in d.shape])

    def __repr__(self) -> str:
        return f"<TetrFile {self.name!r}: layout v{self.layout_version}, {len(self.datasets)} datasets>"


def open_tetr(source: SourceLike, *, storage_options: Mapping[str, Any] | None = None) -> TetrFile:
    """Open a Tetration layout v1 file (path, URL, bytes, file object or :class:`ByteSource`)."""
    return TetrFile(source, storage_options=storage_options)


# ==================================================================================================
# Writing
# ==================================================================================================
@dataclass
class DatasetWrite:
    """One dataset to write: values plus the footer metadata that goes with them."""

    name: str
    data: np.ndarray
    #: tile shape (default: the whole array as one tile)
    chunk_shape: Sequence[int] | None = None
    #: "raw" or "zstd"
    codec: str = "raw"
    dim_names: Sequence[str] | None = None
    #: axis key (dim name or decimal axis number) -> labels (strings)
    coords: Mapping[str, Sequence[str]] | None = None
    attrs: Mapping[str, str] | None = None

    def wire_dtype(self) -> tuple[int, np.ndarray]:
        """(dtype code, little-endian C-order array); bool is stored as u8 0/1 as the reference importers do."""
        data = np.asarray(self.data)
        if data.dtype.kind == "b":
            data = data.astype("u1")
        le = data.dtype.newbyteorder("<") if data.dtype.byteorder not in ("|", "<") else data.dtype
        code = _CODE_OF.get(np.dtype(le))
        if code is None:
            raise UnsupportedError(f"dataset {self.name!r}: dtype {data.dtype} has no .tet code; supported: "
                                   + ", ".join(n for n, _ in DTYPE_CODES.values()))
        return code, np.ascontiguousarray(data, dtype=le)

    def metadata(self) -> dict[str, Any] | None:
        meta: dict[str, Any] = {}
        if self.attrs:
            meta["attrs"] = dict(self.attrs)
        if self.dim_names is not None:
            meta["dim_names"] = list(self.dim_names)
        if self.coords is not None:
            meta["coords"] = {str(k): {"labels": list(v)} for k, v in self.coords.items()}
        return meta or None


def _record(name: str, code: int, shape: Sequence[int], chunk_shape: Sequence[int]) -> bytes:
    raw = name.encode("utf-8")
    pad = (8 - (16 + len(raw)) % 8) % 8
    return (RECORD_HEADER.pack(len(raw), code, len(shape), 0) + raw + b"\0" * pad
            + struct.pack(f"<{2 * len(shape)}Q", *shape, *chunk_shape))


def _tiles(data: np.ndarray, chunk_shape: Sequence[int]) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """Tiles in the reference order: row-major over the grid, last axis fastest; edge tiles clipped."""
    for coords in itertools.product(*(range(n) for n in chunk_counts(data.shape, chunk_shape))):
        box = tuple(slice(k * c, (k + 1) * c) for k, c in zip(coords, chunk_shape))
        yield coords, np.ascontiguousarray(data[box])


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
        raise UnsupportedError(f"dataset {d.name!r}: codec {d.codec!r}, expected 'raw' or 'zstd'")
    return chunk


def _as_writes(arrays: Mapping[str, Any] | Sequence[DatasetWrite]) -> list[DatasetWrite]:
    if isinstance(arrays, Mapping):
        return [v if isinstance(v, DatasetWrite) else DatasetWrite(str(k), v) for k, v in arrays.items()]
    return list(arrays)


def write_tetr(target: str | os.PathLike | BinaryIO, arrays: Mapping[str, Any] | Sequence[DatasetWrite], *,
               history: Sequence[Any] = (), file_metadata: Mapping[str, str] | None = None,
               footer: bool | None = None, execution: tuple[int, int] = (0, 0), zstd_level: int = 3) -> None:
    """Write a ``.tet`` file byte for byte as the reference writer does (spec §8, footer §5.5).

    ``arrays`` is a mapping name -> array (raw, one tile) or a sequence of :class:`DatasetWrite`.
    ``history`` rows are dicts (``op``, ``source``, ``at``, optional ``parents``/``params``) or
    ``(op, source, at)`` triples. A footer is written when there is history or metadata
    (``file_metadata``, or a dataset's ``dim_names``/``coords``/``attrs``); ``footer=True`` forces
    one with a ``metadata`` object even when it is empty, ``footer=False`` omits it.
    ``execution`` is the TIDX hint ``(memory_budget_percent_bps, memory_budget_bytes)``.
    Paths are written atomically; file objects are written in place. The index precedes the
    payloads, so zstd tiles are compressed (and held, compressed) before anything is written;
    raw tiles are cut from the array again while writing.
    """
    writes = _as_writes(arrays)
    unknown = set(file_metadata or {}) - {"tool", "library_version", "created_at"}
    if unknown:
        raise ValueError(f"file_metadata keys {sorted(unknown)} are not part of the format "
                         "(tool, library_version, created_at)")
    names = [d.name for d in writes]
    if len(set(names)) != len(names):
        raise ValueError(f"dataset names must be unique (footer metadata is keyed by name): {names}")
    prepared = []
    for d in writes:
        code, data = d.wire_dtype()
        prepared.append((d, code, data, _check_dataset(d, data)))
    blob = b"".join(_record(d.name, code, data.shape, chunk) for d, code, data, chunk in prepared)
    n = sum(math.prod(chunk_counts(data.shape, chunk)) for _, _, data, chunk in prepared)
    index_off = _align8(40 + len(blob))
    cursor = index_off + 32 + 104 * n
    entries = np.zeros(n, dtype=ENTRY)
    stored: list[bytes | None] = []
    k = 0
    for i, (d, code, data, chunk) in enumerate(prepared):
        codec = _CODEC_OF[d.codec]
        for coords, tile in _tiles(data, chunk):
            raw_len = tile.nbytes
            payload = zstd.compress(tile.data, level=zstd_level) if codec else None
            size = len(payload) if payload is not None else raw_len
            entries[k] = (i, tuple(coords) + (0,) * (8 - len(coords)), cursor, raw_len, size, codec, 0)
            stored.append(payload)
            cursor += size
            k += 1
    meta_datasets = {d.name: m for d, *_ in prepared if (m := d.metadata()) is not None}
    has_meta = footer is True or file_metadata is not None or bool(meta_datasets)
    metadata = None
    if has_meta:
        metadata = {}
        if file_metadata is not None:
            metadata["file"] = dict(file_metadata)
        if meta_datasets:
            metadata["datasets"] = meta_datasets
    tail = b""
    if footer is not False and (history or metadata is not None):
        tail = encode_footer(history, metadata, cursor if writes else 32)
    flags = FLAG_FOOTER if tail else 0
    if not writes:
        head = SUPERBLOCK.pack(MAGIC, 1, 0, flags, 32, 0)
        _emit(target, [head, tail])
        return
    head = (SUPERBLOCK.pack(MAGIC, 1, len(writes), flags, index_off, 32 + 104 * n)
            + struct.pack("<Q", len(blob)) + blob + b"\0" * (index_off - 40 - len(blob))
            + INDEX_HEADER.pack(INDEX_MAGIC, 1, n, execution[0], 0, execution[1], 0) + entries.tobytes())

    def payloads() -> Iterator[bytes]:
        it = iter(stored)
        for _, _, data, chunk in prepared:
            for _, tile in _tiles(data, chunk):
                payload = next(it)
                yield payload if payload is not None else tile.tobytes()

    _emit(target, itertools.chain([head], payloads(), [tail]))


def _emit(target: str | os.PathLike | BinaryIO, parts: Any) -> None:
    if hasattr(target, "write"):
        for p in parts:
            target.write(p)  # type: ignore[union-attr]
        return
    with atomic_write(target) as f:  # type: ignore[arg-type]
        for p in parts:
            f.write(p)


# ==================================================================================================
# Inspection (info, ls, verify) and the format record
# ==================================================================================================
def _info(f: TetrFile) -> list[str]:
    tiles = sum(int(d.entries.shape[0]) if d.entries is not None else 0 for d in f.datasets)
    return [f"format:   Tetration layout v{f.layout_version}",
            f"content:  {count(len(f.datasets), 'dataset')}, {count(tiles, 'tile')}, "
            f"footer {'present' if f.footer_present else 'absent'}"]


def _ls(f: TetrFile, tiles: bool = False) -> list[Table]:
    """One row per dataset (tile grid, codec, dims); with ``tiles``, one row per tile too."""
    rows: list[list[Any]] = []
    for d in f.datasets:
        n = int(d.entries.shape[0]) if d.entries is not None else 0
        rows.append([d.dataset_id, d.name, str(d.dtype.newbyteorder("=")), shape_text(d.shape),
                     shape_text(d.chunk_shape), shape_text(d.grid), n, d.codec, ",".join(d.dim_names or []) or "-"])
    tables = [Table(["id", "dataset", "dtype", "shape", "tile", "grid", "tiles", "codec", "dims"], rows, right=(0, 6),
                    summary=f"{count(len(f.datasets), 'dataset')}, Tetration layout v{f.layout_version}")]
    if tiles:
        tile_rows: list[list[Any]] = []
        for d in f.datasets:
            for coords in np.ndindex(*d.grid):
                e = d.entries[int(d.table[coords])]
                tile_rows.append([d.name, ",".join(map(str, coords)), int(e["offset"]), int(e["stored"]),
                                  int(e["raw"]), CODECS.get(int(e["codec"]), str(int(e["codec"])))])
        tables.append(Table(["dataset", "tile", "offset", "stored", "raw", "codec"], tile_rows, right=(2, 3, 4)))
    return tables


def _decode_tile(reader: TetrTileReader, coords: tuple[int, ...]) -> bool:
    reader.read_chunk(coords)
    return False  # decoded; there is no checksum to verify


def _verify(f: TetrFile) -> VerifyPlan:
    """Every tile decoded: layout v1 stores no checksums, so decoding is the whole check."""
    readers = {d.dataset_id: f.tile_reader(d.dataset_id) for d in f.datasets}

    items: list[CheckItem] = [(f"dataset {d.name!r} tile {list(coords)}",
                               partial(_decode_tile, readers[d.dataset_id], tuple(coords)))
                              for d in f.datasets for coords in np.ndindex(*d.grid)]
    return VerifyPlan(items=items,
                      total_bytes=sum(int(d.entries["stored"].sum()) for d in f.datasets if d.entries is not None),
                      summary=f"{count(len(f.datasets), 'dataset')}, {count(len(items), 'tile')}",
                      unit="tile", checksums=False)


FORMAT = FormatSpec(
    name="tetr",
    title="Tetration layout",
    magics=(MAGIC,),
    extensions=(".tet",),
    open=open_tetr,
    options=frozenset({"dim_names", "strict"}),
    reader_options=frozenset(),
    info=_info,
    ls=_ls,
    verify=_verify,
)
