"""Writing v0.1 (``ZTEN0001``) files the way ``ztensor`` 0.1.4 does.

For raw tensors without custom fields the bytes are identical to the reference writer's: 64-byte aligned blobs
with zero padding from offset 8, a definite CBOR array of *indefinite* maps (keys in the writer's order), shortest
integer heads, ``data_endianness: "little"`` on multi-byte raw tensors, and the index length as u64 LE. zstd and
checksums follow the Rust writer (spec 1.6, 1.8). Custom fields come after the standard keys, in bytewise order.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...codecs import cbor
from ...codecs.base import PASSTHROUGH
from ...io import atomic_write
from .compression import ENCODINGS, RAW, V01_ENCODINGS
from .containers import MAGIC_V01, V01_KEYS
from .decode import DIGESTS
from .model import LONG_DTYPE_NAMES

__all__ = ["v01_dtype_name", "write_ztensor_v01"]

TensorItem = tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]


def v01_dtype_name(dtype: np.dtype) -> str:
    """The v0.1 dtype string for a numpy dtype (bfloat16 through ml_dtypes), or TypeError."""
    dtype = np.dtype(dtype)
    name: str = dtype.name
    if name not in LONG_DTYPE_NAMES or (dtype.kind not in "fiub" and name != "bfloat16"):
        raise TypeError(
            f"dtype {dtype} cannot be stored in a v0.1 zTensor file (13 dtypes: {', '.join(LONG_DTYPE_NAMES)})"
        )
    return name


def _entry(fields: Sequence[tuple[str, Any]]) -> bytes:
    """One index entry: an indefinite-length map, as the reference writer's serde flatten emits."""
    return b"\xbf" + b"".join(cbor.dumps(key) + cbor.dumps(value, canonical=True) for key, value in fields) + b"\xff"


def _items(tensors: Mapping[str, Any] | Iterable[TensorItem]) -> list[tuple[str, Any, Mapping[str, Any]]]:
    pairs = tensors.items() if isinstance(tensors, Mapping) else tensors
    out: list[tuple[str, Any, Mapping[str, Any]]] = []
    for name, value, *rest in pairs:
        custom = rest[0] if rest else {}
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        bad = V01_KEYS.intersection(custom)  # the standard keys of an index entry
        if bad:
            raise ValueError(f"tensor {name!r}: custom field(s) {sorted(bad)} clash with standard v0.1 keys")
        out.append((name, value, dict(custom)))
    return out


def _stored_bytes(arr: np.ndarray) -> memoryview:
    """Little-endian C-order bytes of ``arr`` (bool as 0/1 bytes), without a copy when already so."""
    kind = arr.dtype.kind
    stored = np.dtype(np.uint8) if kind == "b" else arr.dtype.newbyteorder("<") if kind in "fiu" else arr.dtype
    return np.ascontiguousarray(arr, dtype=stored).reshape(-1).view(np.uint8).data


def write_ztensor_v01(
    path: str | os.PathLike[str],
    tensors: Mapping[str, Any] | Iterable[TensorItem],
    *,
    compression: str | None = None,
    checksum: str | None = None,
    per_tensor: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Write a v0.1 file atomically.

    ``tensors`` is a mapping name -> array, or an iterable of ``(name, array)`` or ``(name, array, custom_fields)``
    (duplicates allowed, as in the format). ``compression``: None (raw) or ``"zstd"``; ``checksum``: None,
    ``"crc32c"`` or ``"sha256"`` (the 0.1.4 reader verifies crc32c and skips sha256). 0-d arrays keep shape ``[]``
    (a true scalar), unlike the 0.1.4 Python writer's ``[1]``. ``per_tensor`` overrides ``compression``/``checksum``
    for the tensors it names, and gives their codec's ``params`` (zstd ``level``, 3 by default; v0.1 records no
    level, so each tensor may have its own).
    """
    default: dict[str, Any] = {"compression": compression, "checksum": checksum, "params": {}}
    per = {name: {**default, **opts} for name, opts in (per_tensor or {}).items()}
    for opts in (default, *per.values()):
        _check_options(opts)
    items = _items(tensors)
    with atomic_write(path) as f:
        f.write(MAGIC_V01)
        entries = [_write_tensor(f, n, np.asarray(value), custom, per.get(n, default)) for n, value, custom in items]
        index = cbor.head(4, len(entries)) + b"".join(entries)
        f.write(index)
        f.write(struct.pack("<Q", len(index)))


#: what a v0.1 tensor's ``encoding`` may name when writing (raw is ``compression=None``)
_COMPRESSED = {n: c for n, c in ENCODINGS.items() if n in V01_ENCODINGS and c is not PASSTHROUGH}


def _check_options(opts: Mapping[str, Any]) -> None:
    """``compression``, ``checksum`` and ``params`` of the whole file or of one tensor."""
    compression = opts["compression"]
    if compression is not None and compression not in _COMPRESSED:
        raise ValueError(f"compression must be None or one of {', '.join(map(repr, _COMPRESSED))}, got {compression!r}")
    if opts["checksum"] not in (None, "crc32c", "sha256"):
        raise ValueError(f"checksum must be None, 'crc32c' or 'sha256', got {opts['checksum']!r}")
    if compression is not None:
        _COMPRESSED[compression].resolve(opts["params"], what="compression: ")


def _write_tensor(f: Any, name: str, arr: np.ndarray, custom: Mapping[str, Any], opts: Mapping[str, Any]) -> bytes:
    """Write one blob with ``opts`` (:func:`_check_options`), aligned to 64 bytes; returns its index entry."""
    compression, checksum = opts["compression"], opts["checksum"]
    dtype_name = v01_dtype_name(arr.dtype)
    data = _stored_bytes(arr)
    blob: bytes | memoryview = _COMPRESSED[compression].encode(data, opts["params"])[0] if compression else data
    pos = f.tell()
    offset = (pos + 63) // 64 * 64
    f.write(bytes(offset - pos))
    f.write(blob)
    fields: list[tuple[str, Any]] = [
        ("name", name),
        ("offset", offset),
        ("size", len(blob)),
        ("dtype", dtype_name),
        ("layout", "dense"),
        ("shape", [int(s) for s in arr.shape]),
        ("encoding", compression or RAW),
    ]
    if not compression and arr.dtype.itemsize > 1:
        fields.append(("data_endianness", "little"))
    if checksum is not None:
        fields.append(("checksum", f"{checksum}:{DIGESTS[checksum][0](blob)}"))
    fields.extend(sorted(custom.items(), key=lambda kv: kv[0].encode()))
    return _entry(fields)
