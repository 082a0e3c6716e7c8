"""Tensogram v3 writer (spec §20 buffered, §20.1 streaming), byte-compatible with the reference encoder.

With the same arrays, metadata, options and ``_reserved_`` time and uuid, the bytes equal ``tensogram.encode``
/ ``StreamingEncoder`` output for the codecs whose libraries are deterministic (none, zstd, szip, zfp,
simple_packing, shuffle).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import struct
import uuid as uuidlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import xxhash

from ..._version import __version__
from ...codecs.cbor import dumps_canonical
from ...codecs.checksums import xxh3_64
from ...errors import EncodeError, UnsupportedError
from ...io import atomic_write
from ...io.lock import note_committed_size, write_lock
from .encode import ObjectInput, encode_object
from .framing import (
    DATA_FRAME,
    END_MAGIC,
    FOOTER_HASH,
    FOOTER_INDEX,
    FOOTER_METADATA,
    HEADER_HASH,
    HEADER_INDEX,
    HEADER_METADATA,
    MAGIC,
    align8,
)
from .masks import DEFAULT_MASK_METHOD

__all__ = [
    "REFERENCE_ENCODER",
    "EncodedMessage",
    "ObjectInput",
    "encode_message",
    "encode_message_parts",
    "write_messages",
]

Chunk = bytes | bytearray | memoryview


class _DataFrame(NamedTuple):
    """One data frame as the pieces that follow each other in the file (nothing concatenated)."""

    parts: list[Chunk]
    length: int
    hash: int


class EncodedMessage(NamedTuple):
    """A message as a list of byte chunks in file order: write them one after the other (:func:`write_messages`
    does), so a 400 MB message is never assembled in memory; ``b"".join(m.parts)`` gives its bytes."""

    parts: list[Chunk]
    length: int

    def tobytes(self) -> bytes:
        return b"".join(self.parts)


REFERENCE_ENCODER = {"name": "tensogram", "version": "0.24.0"}
#: provenance written by default (pass ``reserved={"encoder": REFERENCE_ENCODER, ...}`` to mimic the reference)
OUR_ENCODER = {"name": "xarray-tensogram", "version": __version__}


def _normalise_value(v: Any) -> Any:
    """Metadata values as the reference binding stores them: numpy scalars as Python values,
    integers outside i64 as floats (spec §7)."""
    if isinstance(v, dict):
        return {_normalise_value(k): _normalise_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_normalise_value(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
        return float(v)
    return v


def _frame(frame_type: int, body: bytes, hashing: bool) -> bytes:
    flags = 0x2 if hashing else 0
    h = xxh3_64(body) if hashing else 0
    return b"FR" + struct.pack(">HHHQ", frame_type, 1, flags, 28 + len(body)) + body + struct.pack(">Q", h) + b"ENDF"


def _reserved(reserved: Mapping[str, Any] | None) -> dict[str, Any]:
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    defaults = {"time": now, "uuid": str(uuidlib.uuid4()), "encoder": dict(OUR_ENCODER)}
    return {key: (reserved or {}).get(key, value) for key, value in defaults.items()}  # other keys are not written


def _split_metadata(metadata: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    meta = _normalise_value(dict(metadata))
    base = [dict(b) for b in meta.pop("base", []) or []]
    extra = dict(meta.pop("_extra_", meta.pop("extra", {})) or {})
    if "_reserved_" in meta:
        raise EncodeError("'_reserved_' is written by the encoder; pass reserved= instead")
    if any("_reserved_" in b for b in base):
        raise EncodeError("'_reserved_' at the top of a base entry is written by the encoder")
    return base, {**meta, **extra}  # the CBOR is canonical: key order does not matter


def encode_message(
    metadata: Mapping[str, Any],
    objects: Sequence[ObjectInput | tuple[Any, ...]],
    *,
    hash: str | None = "xxh3",
    layout: str = "buffered",
    backfill: bool = False,
    reserved: Mapping[str, Any] | None = None,
    allow_nan: bool = False,
    allow_inf: bool = False,
    nan_mask_method: str = DEFAULT_MASK_METHOD,
    pos_inf_mask_method: str = DEFAULT_MASK_METHOD,
    neg_inf_mask_method: str = DEFAULT_MASK_METHOD,
    small_mask_threshold_bytes: int = 128,
    aggregate_hash: str | None = None,
    threads: int = 0,
) -> bytes:
    """Encode one message. ``objects`` are :class:`ObjectInput` or ``(descriptor, data)`` pairs.

    The keywords are those of the reference ``tensogram.encode``. ``threads`` is accepted for
    compatibility and ignored: output always equals the reference's ``threads=0`` bytes.
    """
    return encode_message_parts(**locals()).tobytes()


def encode_message_parts(
    metadata: Mapping[str, Any],
    objects: Sequence[ObjectInput | tuple[Any, ...]],
    *,
    hash: str | None = "xxh3",
    layout: str = "buffered",
    backfill: bool = False,
    reserved: Mapping[str, Any] | None = None,
    allow_nan: bool = False,
    allow_inf: bool = False,
    nan_mask_method: str = DEFAULT_MASK_METHOD,
    pos_inf_mask_method: str = DEFAULT_MASK_METHOD,
    neg_inf_mask_method: str = DEFAULT_MASK_METHOD,
    small_mask_threshold_bytes: int = 128,
    aggregate_hash: str | None = None,
    threads: int = 0,
) -> EncodedMessage:
    """:func:`encode_message` as an :class:`EncodedMessage`: the frames as chunks to stream to a file."""
    if hash not in ("xxh3", None):
        raise UnsupportedError(f"hash {hash!r}: only 'xxh3' or None")
    hashing = hash == "xxh3"
    objs = [o if isinstance(o, ObjectInput) else ObjectInput(o[1], dict(o[0])) for o in objects]
    base, extra = _split_metadata(metadata)
    if len(base) > len(objs) and layout == "buffered":
        raise EncodeError(f"metadata has {len(base)} base entries for {len(objs)} objects")
    methods = {"nan": nan_mask_method, "inf+": pos_inf_mask_method, "inf-": neg_inf_mask_method}
    encoded = [
        encode_object(
            o,
            allow_nan=allow_nan,
            allow_inf=allow_inf,
            mask_methods=methods,
            small_mask_threshold=small_mask_threshold_bytes,
        )
        for o in objs
    ]
    data_frames = [_data_frame(region, dumps_canonical(desc), hashing) for desc, region in encoded]
    tensors = [{k: desc[k] for k in ("ndim", "dtype", "shape", "strides")} for desc, _region in encoded]
    full_base = [{**(base[i] if i < len(base) else {}), "_reserved_": {"tensor": t}} for i, t in enumerate(tensors)]
    full_meta: dict[str, Any] = {"base": full_base} if objs else {}
    if extra:
        full_meta["_extra_"] = extra
    full_meta["_reserved_"] = _reserved(reserved)
    if layout == "buffered":
        return _assemble_buffered(full_meta, data_frames, hashing, aggregate_hash or "header")
    if layout == "streaming":
        header_meta = {k: v for k, v in (("base", base), ("_extra_", extra)) if v}
        return _assemble_streaming(header_meta, full_meta, data_frames, hashing, aggregate_hash or "footer", backfill)
    raise UnsupportedError(f"layout {layout!r}: use 'buffered' or 'streaming'")


def _data_frame(region: Chunk, cbor: bytes, hashing: bool) -> _DataFrame:
    """A data frame (payload first, CBOR descriptor after it) as header, payload, descriptor and footer pieces."""
    h = 0
    if hashing:
        hasher = xxhash.xxh3_64(region)
        hasher.update(cbor)
        h = hasher.intdigest()
    flags = 0x1 | (0x2 if hashing else 0)
    length = 16 + len(region) + len(cbor) + 20
    header = b"FR" + struct.pack(">HHHQ", DATA_FRAME, 1, flags, length)
    footer = struct.pack(">QQ", 16 + len(region), h) + b"ENDF"
    return _DataFrame([header, region, cbor, footer], length, h)


def _padding(length: int) -> bytes:
    return b"\0" * (align8(length) - length)


def _offsets(data_frames: list[_DataFrame], start: int) -> list[int]:
    """The file offsets of the data frames, each padded, from ``start``, then the offset after them."""
    return list(itertools.accumulate((align8(df.length) for df in data_frames), initial=start))


def _hash_map(data_frames: list[_DataFrame]) -> bytes:
    return dumps_canonical({"hashes": [f"{f.hash:016x}" for f in data_frames], "algorithm": "xxh3"})


def _message(
    head: Sequence[bytes], data_frames: list[_DataFrame], tail: Sequence[bytes], flags: int, *, total: bool = True
) -> EncodedMessage:
    """A message of header frames, data frames and footer frames, each padded, between its preamble and
    postamble; ``total=False`` leaves its total length 0 (a streamed message that is not backfilled)."""
    start = bytearray(24) + b"".join(f + _padding(len(f)) for f in head)
    body = [part for df in data_frames for part in (*df.parts, _padding(df.length))]
    first_footer = _offsets(data_frames, len(start))[-1]
    end = bytearray(b"".join(f + _padding(len(f)) for f in tail))
    length = first_footer + len(end) + 24
    end += struct.pack(">QQ", first_footer, length if total else 0) + END_MAGIC
    start[0:24] = MAGIC + struct.pack(">HHIQ", 3, flags, 0, length if total else 0)
    return EncodedMessage([start, *body, end], length)


def _assemble_buffered(
    meta: dict[str, Any], data_frames: list[_DataFrame], hashing: bool, policy: str
) -> EncodedMessage:
    policy = "header" if policy == "auto" else policy
    header_hash = bool(hashing and data_frames) and policy in ("header", "both")
    footer_hash = bool(hashing and data_frames) and policy in ("footer", "both")
    meta_frame = _frame(HEADER_METADATA, dumps_canonical(meta), hashing)
    hash_frame = _frame(HEADER_HASH, _hash_map(data_frames), hashing) if header_hash else b""
    index_frame = b""
    if data_frames:  # the index holds the data frames' offsets, which its own length moves: iterate to a fixed point
        lengths, offsets = [f.length for f in data_frames], [0] * len(data_frames)
        for _ in range(4):
            new = _frame(HEADER_INDEX, dumps_canonical({"lengths": lengths, "offsets": offsets}), hashing)
            if new == index_frame:
                break
            index_frame = new
            head = 24 + sum(align8(len(f)) for f in (meta_frame, index_frame, hash_frame))
            offsets = _offsets(data_frames, head)[:-1]
    tail = [_frame(FOOTER_HASH, _hash_map(data_frames), hashing)] if footer_hash else []
    flags = 0x1 | 0x4 * bool(data_frames) | 0x10 * header_hash | 0x20 * footer_hash | 0x80 * hashing
    return _message([f for f in (meta_frame, index_frame, hash_frame) if f], data_frames, tail, flags)


def _assemble_streaming(
    header_meta: dict[str, Any],
    full_meta: dict[str, Any],
    data_frames: list[_DataFrame],
    hashing: bool,
    policy: str,
    backfill: bool,
) -> EncodedMessage:
    if policy in ("header", "both"):
        raise UnsupportedError("streaming messages hold hashes in the footer only")
    policy = "footer" if policy == "auto" else policy
    header = _frame(HEADER_METADATA, dumps_canonical(header_meta), hashing)
    tail = [_frame(FOOTER_METADATA, dumps_canonical(full_meta), hashing)]
    if hashing and policy != "none" and data_frames:
        tail.append(_frame(FOOTER_HASH, _hash_map(data_frames), hashing))
    offsets = _offsets(data_frames, 24 + align8(len(header)))[:-1]
    index = {"lengths": [f.length for f in data_frames], "offsets": offsets}
    tail.append(_frame(FOOTER_INDEX, dumps_canonical(index), hashing))
    flags = 0x01 | 0x02 | 0x08 | 0x40 | 0x80 * hashing | 0x20 * (hashing and policy != "none")
    return _message([header], data_frames, tail, flags, total=backfill)


def _write_message(f: Any, m: bytes | EncodedMessage) -> int:
    """Write one message (bytes, or an :class:`EncodedMessage` chunk by chunk); return its length."""
    m = m if isinstance(m, EncodedMessage) else EncodedMessage([m], len(m))
    f.writelines(m.parts)
    return m.length


def write_messages(path: str | os.PathLike[str], messages: Iterable[bytes | EncodedMessage], *, mode: str = "w") -> int:
    """Write messages (bytes, or :class:`EncodedMessage` streamed frame by frame) to ``path``; return the bytes
    written. ``"w"`` writes a temporary file and renames it into place; ``"a"`` appends, and truncates the file
    back to its old size if anything fails, so a reader never sees half a message."""
    if mode == "w":
        with atomic_write(path) as f:
            return sum(_write_message(f, m) for m in messages)
    if mode != "a":
        raise ValueError(f"mode must be 'w' or 'a', got {mode!r}")
    with write_lock(path):
        existed = os.path.exists(path)  # a file this call creates is removed again if the append fails
        with open(path, "ab") as f:
            start = f.tell()
            note_committed_size(path, start)  # readers opening meanwhile read the file as it was
            try:
                total = sum(_write_message(f, m) for m in messages)
                f.flush()
                os.fsync(f.fileno())
            except BaseException:
                f.truncate(start)
                f.close()
                if not existed:
                    os.unlink(path)
                raise
    return total
