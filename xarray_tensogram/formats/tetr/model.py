"""Tetration layout v1: wire constants, dtype and codec codes, and the dataset model."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...array_spec import chunk_counts
from ...codecs import zstd
from ...codecs.base import PASSTHROUGH, Codec
from ...codecs.chain import RAW, Chain, Stage

MAGIC = b"TETR"
INDEX_MAGIC = b"TIDX"
FOOTER_MAGIC = b"THST"
SUPERBLOCK = struct.Struct("<4sIIIQQ")
INDEX_HEADER = struct.Struct("<4sIQHHIQ")
FOOTER_TAIL = struct.Struct("<QI4s")
RECORD_HEADER = struct.Struct("<IIII")
MAX_NDIM = 8
FLAG_FOOTER = 1
#: nesting bound for footer JSON (serde_json's default recursion limit in the reference)
MAX_JSON_DEPTH = 128

#: wire code -> (short name, little-endian numpy dtype)
DTYPE_CODES: dict[int, tuple[str, np.dtype]] = {
    1: ("f32", np.dtype("<f4")),
    2: ("f64", np.dtype("<f8")),
    3: ("i32", np.dtype("<i4")),
    4: ("i64", np.dtype("<i8")),
    5: ("u8", np.dtype("u1")),
    6: ("u16", np.dtype("<u2")),
    7: ("i16", np.dtype("<i2")),
    8: ("u32", np.dtype("<u4")),
    9: ("f16", np.dtype("<f2")),
    10: ("u64", np.dtype("<u8")),
}
_CODE_OF: dict[np.dtype, int] = {dt: code for code, (_, dt) in DTYPE_CODES.items()}
#: THE table: a chunk index entry's ``codec`` (spec §4.5) -> (its name, the codec object that encodes/decodes it)
CODEC_TABLE: dict[int, tuple[str, Codec]] = {0: ("raw", PASSTHROUGH), 1: ("zstd", zstd.CODEC)}
CODECS = {code: name for code, (name, _) in CODEC_TABLE.items()}
_CODEC_OF = {name: code for code, name in CODECS.items()}
#: a codec's name in the file vocabulary -> the codec object
CODEC_OBJECTS: dict[str, Codec] = dict(CODEC_TABLE.values())


@lru_cache(maxsize=4096)
def tile_chain(code: int, dtype: np.dtype, count: int) -> Chain:
    """The chain every read path asks about a tile of ``count`` elements of ``dtype`` stored with ``code``:
    the values as they are (little-endian) through the entry's codec (none for raw tiles); the layout checks
    refuse unknown codes first."""
    return Chain(Stage(RAW, {"dtype": dtype}), (Stage(CODEC_TABLE[int(code)][1]),), count)


#: ``MetadataLimitsV1::DEFAULT`` of the reference
LIMITS = {
    "inline_json": 65536,
    "spill": 16 * 1024 * 1024,
    "datasets": 256,
    "attrs": 64,
    "string": 1024,
    "dim_names": 8,
    "coord_axes": 8,
    "labels": 64,
    "history": 4096,
    "parents": 16,
    "params": 32,
}

#: one 104-byte chunk index entry
ENTRY = np.dtype(
    [
        ("dataset_id", "<u8"),
        ("coords", "<u8", (8,)),
        ("offset", "<u8"),
        ("raw", "<u8"),
        ("stored", "<u8"),
        ("codec", "<u4"),
        ("reserved", "<u4"),
    ]
)
assert ENTRY.itemsize == 104

_HISTORY_KEYS = ("op", "source", "at", "parents", "params")
#: CF attributes whose footer strings a reader turns back into numbers: of the data's dtype, and float64
CF_IN_DATA_DTYPE = ("_FillValue", "missing_value", "valid_min", "valid_max")
CF_FLOAT64 = ("scale_factor", "add_offset")


def _align8(n: int) -> int:
    return (n + 7) & ~7


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
    #: (both filled in by :func:`.layout._attach_tiles` when the file is opened)
    entries: np.ndarray = field(default_factory=lambda: np.zeros(0, ENTRY), repr=False)
    table: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

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
