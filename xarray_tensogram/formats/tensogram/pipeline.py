"""Decode one Tensogram data object from its payload region and descriptor (spec §12-§15).

Order: split off mask blobs -> decompress -> unshuffle -> decode (simple_packing) -> byte order -> restore
NaN/Inf. What part of a payload a read needs, the object's codec chain says (:mod:`.compression`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...codecs.base import Buffer, Fetch
from ...codecs.chain import RAW, Chain
from ...errors import (
    CodecError,
    CorruptFileError,
    LimitExceededError,
    MetadataError,
    UnsupportedError,
)
from ...io import ByteSource, LocalFileSource
from ...io.local import scratch_buffer
from .._chunks import box_runs, compressed_payload, gather_runs
from . import masks as mask_codec
from .compression import STAGES, chain_gives_values, chain_of
from .dtypes import DTYPES

__all__ = [
    "decode_box",
    "decode_full",
    "decode_into",
    "decode_leading_rows",
    "decodes_into",
    "split_masks",
    "validate_descriptor",
]

MAX_RANK = 64
REQUIRED_KEYS = ("type", "shape", "strides", "dtype", "encoding", "filter", "compression")
MASK_KINDS = ("nan", "inf+", "inf-")


#: descriptor keys that describe the tensor and its encoding pipeline (everything else is user metadata)
STRUCTURAL_KEYS = frozenset({*REQUIRED_KEYS, "obj_type", "ndim", "byte_order", "masks", "hash"})
PIPELINE_PREFIXES = ("sp_", "szip_", "zstd_", "lz4_", "blosc2_", "zfp_", "sz3_", "shuffle_", "bitmask_")


def descriptor_params(desc: Mapping[str, Any]) -> dict[str, Any]:
    """The descriptor's free-form params: keys that are neither structural nor pipeline parameters."""
    others = desc.keys() - STRUCTURAL_KEYS  # usually empty: one set operation, no loop (run for every object)
    if not others:
        return {}
    return {k: desc[k] for k in desc if k in others and isinstance(k, str) and not k.startswith(PIPELINE_PREFIXES)}


#: descriptors (their exact CBOR bytes) known to hold no free-form params: objects of one shape, dtype and pipeline
#: share them, so an open decodes each once; bounded, shared by all files (the bytes alone decide the answer)
PLAIN_DESCRIPTORS: set[bytes] = set()
_PLAIN_DESCRIPTORS_MAX = 4096


def params_of(desc: Any, tail: bytes, raw: bytes | None = None) -> tuple[dict[str, Any], int]:
    """A descriptor's free-form params and its frame's hash; a descriptor without params is remembered."""
    params = descriptor_params(desc) if isinstance(desc, dict) else {}
    if not params and raw is not None:
        if len(PLAIN_DESCRIPTORS) >= _PLAIN_DESCRIPTORS_MAX:
            PLAIN_DESCRIPTORS.clear()
        PLAIN_DESCRIPTORS.add(raw)
    return params, int.from_bytes(tail[8:16], "big")


#: descriptor keys whose value must be one this decoder knows (UnsupportedError otherwise)
_KNOWN_VALUES = (("dtype", DTYPES), ("encoding", tuple(STAGES["encoding"])), ("filter", tuple(STAGES["filter"])))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


#: what simple_packing reads from the descriptor: key, default, test, message when the test fails
_SIMPLE_PACKING_KEYS: tuple[tuple[str, Any, Callable[[Any], bool], str], ...] = (
    ("sp_bits_per_value", None, lambda v: isinstance(v, int) and 0 <= v <= 64, "{key} {v!r} is not an int in 0..64"),
    ("sp_reference_value", None, _is_number, "simple_packing needs a numeric {key}"),
    ("sp_binary_scale_factor", None, _is_number, "simple_packing needs a numeric {key}"),
    ("sp_binary_scale_factor", None, lambda v: -321 < v < 321, "{key} {v} out of range"),  # |int(v)| <= 320
    ("sp_decimal_scale_factor", 0, lambda v: isinstance(v, int) and abs(v) <= 308, "{key} {v!r} out of range"),
)


def validate_descriptor(desc: Any, where: str) -> dict[str, Any]:
    """The descriptor, once the keys the decoder needs are checked."""
    if not isinstance(desc, dict):
        raise MetadataError(f"{where}descriptor is a {type(desc).__name__}, expected a CBOR map")
    missing = [key for key in REQUIRED_KEYS if key not in desc]
    if missing:
        raise MetadataError(f"{where}descriptor lacks the required key {missing[0]!r}")
    shape = desc["shape"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise MetadataError(f"{where}descriptor shape {shape!r} is not a list of non-negative integers")
    if len(shape) > MAX_RANK:
        raise LimitExceededError(f"{where}rank {len(shape)} exceeds the limit of {MAX_RANK}")
    if math.prod(shape) >= 2**64:
        raise MetadataError(f"{where}shape {shape} has an element count that overflows u64")
    for key, known in _KNOWN_VALUES:
        if desc[key] not in known:
            raise UnsupportedError(f"{where}unknown {key} {desc[key]!r}")
    if not isinstance(desc["compression"], str):
        raise MetadataError(f"{where}compression {desc['compression']!r} is not text")
    checks = _SIMPLE_PACKING_KEYS if desc["encoding"] == "simple_packing" else ()
    for key, default, ok, message in checks:
        if not ok(desc.get(key, default)):
            raise MetadataError(where + message.format(key=key, v=desc.get(key, default)))
    if desc.get("byte_order", "little") not in ("little", "big"):
        raise MetadataError(f"{where}byte_order {desc['byte_order']!r} is neither 'little' nor 'big'")
    return desc


def split_masks(
    region_len: int, desc: Mapping[str, Any], where: str
) -> tuple[int, dict[str, tuple[int, int, str, Any]]]:
    """Return (payload length, {kind: (offset, length, method, params)}) from the ``masks`` map."""
    masks = desc.get("masks")
    if masks is None:
        return region_len, {}
    if not isinstance(masks, dict):
        raise MetadataError(f"{where}descriptor 'masks' is not a map")
    found: dict[str, tuple[int, int, str, Any]] = {}
    for kind, entry in masks.items():
        if kind not in MASK_KINDS:
            raise MetadataError(f"{where}unknown mask kind {kind!r}")
        if not isinstance(entry, dict):
            raise MetadataError(f"{where}mask {kind!r} entry is not a map")
        off, length, method = entry.get("offset"), entry.get("length"), entry.get("method")
        if not isinstance(off, int) or not isinstance(length, int) or off < 0 or length < 0:
            raise MetadataError(f"{where}mask {kind!r} has invalid offset/length {off!r}/{length!r}")
        if off + length > region_len:
            raise CorruptFileError(
                f"{where}mask {kind!r} spans bytes {off}..{off + length} of a {region_len}-byte payload region"
            )
        if method not in mask_codec.MASK_METHODS:
            raise UnsupportedError(f"{where}unknown mask method {method!r}")
        found[kind] = (off, length, method, entry.get("params"))
    payload_len = min((v[0] for v in found.values()), default=region_len)
    return payload_len, found


_PATTERNS = {
    # dtype: (unsigned view, nan, +inf, -inf)
    "float16": ("u2", 0x7E00, 0x7C00, 0xFC00),
    "bfloat16": ("u2", 0x7FC0, 0x7F80, 0xFF80),
    "float32": ("u4", 0x7FC00000, 0x7F800000, 0xFF800000),
    "float64": ("u8", 0x7FF8000000000000, 0x7FF0000000000000, 0xFFF0000000000000),
    "complex64": ("u4", 0x7FC00000, 0x7F800000, 0xFF800000),
    "complex128": ("u8", 0x7FF8000000000000, 0x7FF0000000000000, 0xFFF0000000000000),
}


def restore_masks(values: np.ndarray, dtype_name: str, masks: dict[str, np.ndarray], where: str) -> None:
    """Overwrite masked elements with the canonical NaN/+Inf/-Inf bit patterns, in place."""
    if dtype_name not in _PATTERNS and values.dtype != np.float64:
        raise MetadataError(f"{where}NaN/Inf masks on dtype {dtype_name!r}, which cannot hold them")
    unsigned, *patterns = _PATTERNS.get(dtype_name, _PATTERNS["float64"])
    parts = 2 if dtype_name.startswith("complex") else 1
    bits = values.reshape(-1).view(np.dtype(unsigned).newbyteorder("=")).reshape(-1, parts)
    for kind, pattern in zip(MASK_KINDS, patterns, strict=True):
        if (m := masks.get(kind)) is not None:
            bits[m, :] = pattern


def _decode_masks(
    blobs: Sequence[Buffer], found: dict[str, tuple[int, int, str, Any]], count: int, where: str
) -> dict[str, np.ndarray]:
    """The NaN/Inf masks of ``found`` as booleans over ``count`` elements, from their blobs (in its order)."""
    return {
        kind: mask_codec.decode_mask(
            method, blob.data if isinstance(blob, np.ndarray) else blob, count, params, where=f"{where}mask {kind!r}: "
        )
        for (kind, (_o, _n, method, params)), blob in zip(found.items(), blobs, strict=True)
    }


def _check_stored(chain: Chain, length: int, where: str) -> None:
    """A payload no bytes->bytes stage changes holds exactly the bytes the descriptor implies."""
    if chain.stored_is_encoded and length != chain.encoded_nbytes:
        raise CodecError(f"{where}uncompressed payload is {length} bytes, descriptor implies {chain.encoded_nbytes}")


def decode_full(region: bytes | memoryview | np.ndarray, desc: Mapping[str, Any], where: str = "") -> np.ndarray:
    """Decode a whole object from its payload region (payload + mask blobs)."""
    payload_len, found = split_masks(len(region), desc, where)
    view = region.data if isinstance(region, np.ndarray) else memoryview(region)  # zero-copy, either way
    chain = chain_of(desc, where)
    _check_stored(chain, payload_len, where)
    values = chain.decode(view[:payload_len], where)
    if found:
        blobs = [view[o : o + n] for o, n, _m, _p in found.values()]
        restore_masks(values, desc["dtype"], _decode_masks(blobs, found, math.prod(desc["shape"]), where), where)
    return values if desc["dtype"] == "bitmask" else values.reshape(desc["shape"])


def decode_leading_rows(
    region: np.ndarray, desc: Mapping[str, Any], start: int, stop: int, where: str = ""
) -> np.ndarray | None:
    """Rows ``start:stop`` decoded from the stream up to the last of them (its tail is not checked), where a
    bytes->bytes stage decodes a prefix (:attr:`.Chain.prefix_stage`); None otherwise."""
    chain = chain_of(desc, where)
    stage = chain.prefix_stage
    if stage is None or not chain_gives_values(desc) or not desc["shape"]:
        return None
    values, count = chain.values, stop * math.prod(desc["shape"][1:])
    hi = values.codec.element_span(0, count, values.params)[1]
    prefix = stage.codec.decode_prefix(region.data, hi, chain.encoded_nbytes, stage.params, where)
    rows: np.ndarray = values.codec.decode_values(prefix, count, values.params).reshape((stop, *desc["shape"][1:]))
    return rows[start:]


def decodes_into(desc: Mapping[str, Any], dtype: np.dtype) -> bool:
    """Whether :func:`decode_into` can decode this object straight into an array of ``dtype``: no NaN/Inf
    masks, no cast (:meth:`.Chain.decodes_into`); others go through :func:`decode_full` and a copy."""
    return chain_gives_values(desc) and chain_of(desc).decodes_into(dtype)


def decode_into(
    source: ByteSource, offset: int, length: int, desc: Mapping[str, Any], out: np.ndarray, where: str = ""
) -> None:
    """Decode the payload region ``[offset, offset + length)`` of ``source`` into ``out`` (descriptors that
    :func:`decodes_into` accepts). Uncompressed values are read with one ``preadv`` into ``out``; zstd and lz4
    decode into a contiguous ``out`` directly, others to bytes copied once. Compressed bytes viewed from a
    memory map are released afterwards, so the file's pages do not stay resident in this process."""
    chain = chain_of(desc, where)
    _check_stored(chain, length, where)
    if chain.stored_is_encoded and chain.values.codec is RAW:
        source.read_into(offset, out, what="payload")
        return
    if chain.stored_is_encoded and isinstance(source, LocalFileSource) and out.flags.c_contiguous:
        _unpack_streamed(source, offset, chain, out.reshape(-1))
        return
    payload, mapped = compressed_payload(source, offset, length, chain.compressors[-1].codec)
    try:
        chain.decode_into(payload, out, where)
    finally:
        del payload
        if mapped:
            source.release(offset, length)


#: boxes of more rows than this are decoded whole
MAX_RUNS = 4096


def decode_box(
    desc: Mapping[str, Any],
    box: tuple[slice, ...],
    region_len: int,
    fetch: Fetch,
    fraction: float,
    where: str,
    chain: Chain,
    remote: bool,
) -> np.ndarray | None:
    """A box of the object (step-1 slices) decoded from the stored bytes of its element runs (and mask blobs)
    alone, when the chain allows partial decode and the runs hold less than ``fraction`` of the object; None
    otherwise. ``fetch`` reads spans ``(offset, length)`` of the payload region. ``remote``: a compressor
    that keeps its index in its stream (blosc2) reads the index, then the blocks, not the whole stream."""
    if desc["dtype"] == "bitmask":
        return None
    shape = desc["shape"]
    runs = box_runs(shape, box, chain.merge_gap(), MAX_RUNS) if chain.partial else None
    if runs is None or sum(b - a for a, b in runs) >= fraction * chain.count:
        return None
    payload_len, found = split_masks(region_len, desc, where)
    _check_stored(chain, payload_len, where)
    for stage in chain.compressors:  # a payload that cannot hold what the descriptor claims is refused first
        stage.codec.check_ratio(payload_len, chain.encoded_nbytes, where)
    mask_spans = [(o, n) for (o, n, _m, _p) in found.values()]
    values = chain.read_ranges(fetch, runs, payload_len, where) if remote else None
    if values is None:
        spans = [chain.stored_span(a, b, payload_len) for a, b in runs]
        parts = fetch([(lo, hi - lo) for lo, hi in spans] + mask_spans)
        values = [
            chain.decode_range(p, lo, a, b, where) for p, (lo, _hi), (a, b) in zip(parts, spans, runs, strict=False)
        ]
        parts = parts[len(spans) :]
    else:
        parts = fetch(mask_spans) if found else []
    if found:
        masks = _decode_masks(parts, found, math.prod(desc["shape"]), where)
        for (a, b), part in zip(runs, values, strict=True):
            restore_masks(part, desc["dtype"], {k: m[a:b] for k, m in masks.items()}, where)
    return gather_runs(shape, box, runs, values)


#: packed bytes read per block by :func:`_unpack_streamed`: few Python calls per object, still cache-resident
STREAM_BLOCK = 1 << 20


def _unpack_streamed(source: LocalFileSource, offset: int, chain: Chain, flat: np.ndarray) -> None:
    """Unpack an uncompressed simple_packing payload of a local file into ``flat``, block by block: each is read
    with ``preadv`` into a per-thread buffer and unpacked while in cache, so the packed bytes cross memory once
    (a memory map would fault every page in, a whole-payload read write it all out and read it back). Blocks
    hold a multiple of 8 values, so each starts on a byte boundary whatever the width."""
    codec, params = chain.values.codec, chain.values.params
    count = flat.size
    per = max(8, STREAM_BLOCK * count // max(chain.encoded_nbytes, 1) // 8 * 8)  # values per block
    for first in range(0, count, per):
        last = min(count, first + per)
        lo, hi, _bit = codec.element_span(first, last, params)
        buf = scratch_buffer(hi - lo)
        if hi > lo:
            source.read_into(offset + lo, buf, what="payload")
        codec.decode_values_into(buf, flat[first:last], params)
