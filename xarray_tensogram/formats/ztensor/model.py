"""What a zTensor file holds, whatever its generation: tensors made of stored parts.

A :class:`TensorInfo` has a name, a logical shape and dtype, a layout and one or more :class:`Part` (a stored
blob: offset, length, storage dtype, encoding, digest). v0.1 tensors and dense v1/v2 objects have one part
(``data``); sparse tensors have several (``values``, ``indices``, ``indptr`` or ``coords``). The container parsers
(:mod:`.containers`) only translate their metadata into this model; :mod:`.decode` reads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...codecs.optional import available, require
from ...errors import LimitExceededError, MetadataError, UnsupportedError, describe
from .compression import stores_values
from .fields import is_uint

__all__ = [
    "LONG_DTYPE_NAMES",
    "STORAGE_DTYPES",
    "Part",
    "TensorInfo",
    "check_shape",
    "logical_dtype",
]

#: short storage names (v1.1+, v2) -> little-endian numpy storage dtype
STORAGE_DTYPES: dict[str, np.dtype] = {
    "f64": np.dtype("<f8"),
    "f32": np.dtype("<f4"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "i64": np.dtype("<i8"),
    "i32": np.dtype("<i4"),
    "i16": np.dtype("<i2"),
    "i8": np.dtype("i1"),
    "u64": np.dtype("<u8"),
    "u32": np.dtype("<u4"),
    "u16": np.dtype("<u2"),
    "u8": np.dtype("u1"),
    "bool": np.dtype("u1"),
}

#: long names (v0.1 and the v1 "1.0" dialect) -> short names: numpy's names, bfloat16 aside
LONG_DTYPE_NAMES: dict[str, str] = {
    ("bfloat16" if short == "bf16" else "bool" if short == "bool" else dt.name): short
    for short, dt in STORAGE_DTYPES.items()
}

#: logical float8 types -> ml_dtypes names
_FLOAT8 = {f"f8_{t}": f"float8_{t}" for t in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz")} | {"f8_e8m0": "float8_e8m0fnu"}
_COMPLEX: dict[str, tuple[str, np.dtype]] = {
    "complex64": ("f32", np.dtype("<c8")),
    "complex128": ("f64", np.dtype("<c16")),
}

MAX_RANK = 64
MAX_DEPTH = 64  #: nesting bound for free-form metadata (v2 manifests: 32)


def logical_dtype(short: str, ltype: str | None) -> tuple[np.dtype, int, dict[str, str]]:
    """``(dtype users get, storage elements per element, attrs)`` for storage ``short`` with optional logical
    ``ltype``; ``attrs`` records what a fallback hides (bfloat16 or float8 seen as raw integers when ``ml_dtypes``
    is missing). :class:`UnsupportedError` for types we do not decode."""
    if (short == "bool" and ltype in (None, "bool")) or (short, ltype) == ("u8", "bool"):
        return np.dtype(bool), 1, {}
    if ltype is None and short != "bf16":
        return STORAGE_DTYPES[short], 1, {}
    if ltype in _COMPLEX and short == _COMPLEX[ltype][0]:
        return _COMPLEX[ltype][1], 2, {}
    if ltype is None:  # bf16
        ml, raw = "bfloat16", {"ztensor_dtype": "bfloat16", "ztensor_note": "raw bfloat16 words (install ml-dtypes)"}
    elif ltype in _FLOAT8 and short == "u8":
        ml, raw = _FLOAT8[ltype], {"ztensor_type": ltype, "ztensor_note": "raw float8 bytes (install ml-dtypes)"}
    else:
        raise UnsupportedError(f"logical type {ltype!r} over storage dtype {short!r} is not supported")
    if available("ml_dtypes"):
        return np.dtype(getattr(require("ml_dtypes", ltype or ml), ml)), 1, {}
    return STORAGE_DTYPES[short], 1, raw


_PLAIN = (dict, list, str, bytes, int, float, bool, type(None))
_END = object()
#: map key types allowed in metadata, as (type, negative int: CBOR major type 1)
_KEY_KINDS = frozenset({(str, False), (bytes, False), (int, False), (int, True), (bool, False)})


def check_free_values(obj: Any, where: str, max_depth: int = MAX_DEPTH) -> bool:
    """Free-form metadata holds only plain CBOR values, nested at most ``max_depth`` deep (the parsers check the
    standard keys themselves: fast opens of large indexes). Returns whether some map mixes key kinds (e.g. text
    and integers): only then does RFC 8949's bytewise key order differ from cbor2's canonical order."""
    # one iterator per open container: memory follows the depth, not the number of items
    stack: list[Any] = [iter((obj,))]
    mixed = False
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if not isinstance(item, _PLAIN):
            raise MetadataError(f"{where}CBOR value of type {type(item).__name__} is not allowed in metadata")
        if type(item) is dict:
            kinds = {(type(k), type(k) is int and k < 0) for k in item}
            if not kinds <= _KEY_KINDS:
                bad = next(k for k in item if (type(k), False) not in _KEY_KINDS)
                raise MetadataError(f"{where}map key of type {type(bad).__name__} is not allowed in metadata")
            mixed = mixed or len(kinds) > 1
            children: Any = iter(item.values())
        elif type(item) is list:
            children = iter(item)
        else:
            continue
        if len(stack) > max_depth and item:  # its children would sit deeper than max_depth
            raise LimitExceededError(f"{where}metadata nested deeper than {max_depth} levels")
        stack.append(children)
    return mixed


def check_shape(shape: Any, where: str) -> tuple[int, ...]:
    """A shape must be a list of non-negative ints of rank <= 64."""
    if not isinstance(shape, (list, tuple)) or not all(map(is_uint, shape)):
        raise MetadataError(f"{where}shape must be an array of unsigned integers, got {shape!r}")
    if len(shape) > MAX_RANK:
        raise LimitExceededError(f"{where}rank {len(shape)} exceeds the limit of {MAX_RANK}")
    return tuple(shape)


@dataclass(slots=True)
class Part:
    """One stored blob of a tensor (read-only by convention: not frozen, because frozen
    dataclasses cost ~5 us each to build and files can hold thousands of tensors)."""

    offset: int
    length: int  #: stored bytes (compressed size for zstd)
    dtype: str  #: short storage dtype name
    encoding: str = "raw"  #: "raw", "zstd" or "zt.zstd-seekable/1"
    decoded_length: int | None = None  #: decoded bytes when known from metadata
    digest: str | None = None  #: "crc32c:0x..", "sha256:..", "xxh3:.."
    digest_of_decoded: bool = False  #: v2 digests cover decoded bytes, v0.1/v1 stored bytes
    big_endian: bool = False  #: v0.1 ``data_endianness: "big"`` (raw only)
    shard: str | None = None  #: v2: name of another file holding the blob
    ltype: str | None = None  #: logical type on this part (v1.2 / v2)

    @property
    def storage(self) -> np.dtype:
        return STORAGE_DTYPES[self.dtype]


@dataclass(slots=True)
class TensorInfo:
    """Metadata of one tensor (v0.1 entry, v1 object or v2 object); read-only by convention."""

    index: int
    name: str
    dtype: str  #: as spelled in the file
    shape: tuple[int, ...]
    layout: str  #: "dense", "sparsecoo", "sparse_csr", "zt.sparse_csr/1", ...
    encoding: str  #: of the main part
    checksum: str | None  #: checksum/digest of the main part
    attrs: Mapping[str, Any]  #: v0.1 custom keys, v1/v2 attributes
    parts: Mapping[str, Part]
    #: why the tensor cannot be read (an :class:`UnsupportedError` at read time), else None
    problem: str | None = None
    data_endianness: str | None = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """The dtype :meth:`ZTensorFile.read` returns, or None when the tensor is unreadable."""
        return None if self.problem is not None else logical_dtype(self.main_part.dtype, self.main_part.ltype)[0]

    @property
    def dtype_attrs(self) -> dict[str, str]:
        """Attributes describing a dtype fallback (e.g. bfloat16 as uint16)."""
        return {} if self.problem is not None else logical_dtype(self.main_part.dtype, self.main_part.ltype)[2]

    @property
    def main_part(self) -> Part:
        return self.parts.get("data") or self.parts.get("values") or next(iter(self.parts.values()))

    @property
    def is_dense(self) -> bool:
        """Readable, and its C-order elements in one part."""
        return self.problem is None and self.layout == "dense" and len(self.parts) == 1

    @property
    def is_dense_raw(self) -> bool:
        """One raw little-endian blob holding the C-order elements: byte ranges can be read directly."""
        return self.is_dense and stores_values(self.main_part.encoding) and not self.main_part.big_endian

    def where(self, source_name: str | None, offset: int | None = None) -> str:
        return describe(source_name, f"tensor {self.index} {self.name!r}", offset)
