"""Tensogram compressors (spec §13): descriptor-driven dispatch onto the format-free codecs.

Each decoder is told the size the descriptor promises and never produces (or
allocates) more. This module reads the descriptor's parameters (szip sample
width and flags, zfp mode, byte order after zfp/sz3, the bit count before an
rle/roaring bitmap) and hands plain values to :mod:`xarray_tensogram.codecs`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...codecs import bitmaps, blosc2, lz4, sz3, szip, zfp, zstd
from ...codecs.limits import check_ratio, check_size
from ...errors import CodecError, MetadataError, UnsupportedError
from .dtypes import dtype_width

__all__ = ["DECODERS", "compress", "decompress", "szip_flags", "szip_sample_bits"]

Params = Mapping[str, Any]
#: what the decoders take (a slice of a mapped file stays a memoryview) and give back ("none" passes it through)
Payload = bytes | memoryview
Decoded = bytes | memoryview | np.ndarray
Decoder = Callable[[Payload, int, Params, str], Decoded]


def _param(desc: Params, key: str, kind: type, where: str) -> Any:
    """A required numeric descriptor parameter, type-checked (bool is not a number here)."""
    value = desc.get(key)
    ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
    if value is None or isinstance(value, bool) or not ok:
        wanted = "a number" if kind is float else "an integer"
        raise MetadataError(f"{where}descriptor parameter {key!r} must be {wanted}, got {value!r}")
    return kind(value)


def _none(payload: Payload, expected: int, params: Params, where: str) -> Payload:
    check_size(payload, expected, "uncompressed", where)
    return payload


def _zstd(payload: Payload, expected: int, params: Params, where: str) -> np.ndarray:
    return zstd.decompress(payload, expected, where=where)


def _lz4(payload: Payload, expected: int, params: Params, where: str) -> bytes:
    return lz4.decompress(payload, expected, where=where)


def _blosc2(payload: Payload, expected: int, params: Params, where: str) -> bytes:
    return blosc2.decompress(payload, expected, where=where)


def szip_sample_bits(desc: Params) -> int:
    """libaec bits_per_sample for a descriptor (spec §13.4)."""
    if desc.get("encoding") == "simple_packing":
        return int(_param(desc, "sp_bits_per_value", int, ""))
    if desc.get("filter") == "shuffle":
        return 8
    return dtype_width(str(desc["dtype"])) * 8


def szip_flags(desc: Params, bits: int) -> int:
    """libaec flags: the descriptor's, plus MSB order after simple_packing and 3-byte samples for 17..24 bits."""
    flags = desc.get("szip_flags", 0)
    flags = flags if isinstance(flags, int) and not isinstance(flags, bool) else 0
    if desc.get("encoding") == "simple_packing":
        flags |= 4  # AEC_DATA_MSB
    if 16 < bits <= 24:
        flags |= 2  # AEC_DATA_3BYTE
    return flags


def _szip(payload: Payload, expected: int, desc: Params, where: str) -> bytes:
    check_ratio("szip", len(payload), expected, where)
    bits = szip_sample_bits(desc)
    for key in ("szip_block_size", "szip_rsi", "szip_flags"):
        _param(desc, key, int, where)
    # libaec's streaming decoder, stopped when the expected output is full, as the reference calls it
    return szip.decode(
        payload,
        expected,
        bits,
        int(desc["szip_block_size"]),
        int(desc["szip_rsi"]),
        szip_flags(desc, bits),
        where=where,
    )


def _zfp_parameter(desc: Params, where: str) -> tuple[str, float]:
    mode = desc.get("zfp_mode")
    if mode == "fixed_rate":
        return mode, _param(desc, "zfp_rate", float, where)
    if mode == "fixed_precision":
        return mode, _param(desc, "zfp_precision", int, where)
    if mode == "fixed_accuracy":
        return mode, _param(desc, "zfp_tolerance", float, where)
    raise UnsupportedError(f"{where}unknown zfp_mode {mode!r}")


def _zfp(payload: Payload, expected: int, desc: Params, where: str) -> bytes:
    packed = desc.get("encoding") == "simple_packing"
    if packed:
        # after simple_packing the reference still decodes prod(shape) doubles (reading zeros past a
        # shorter stream) and hands on all of them; later stages use the leading bytes
        shape = desc.get("shape") or []
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        check_ratio("zfp", len(payload), 8 * n, where)
        payload = bytes(payload) + bytes(8 * n + 4096)  # zeros past the stream, never out of bounds
    else:
        check_ratio("zfp", len(payload), expected, where)
        if expected % 8:
            raise CodecError(f"{where}zfp decodes float64 values but {expected} bytes are expected")
        n = expected // 8
    mode, parameter = _zfp_parameter(desc, where)
    out = _float64_in_declared_order(zfp.decompress(payload, n, mode, parameter, where=where), desc)
    if packed:
        if len(out) < expected:
            raise CodecError(f"{where}zfp stream decodes to {len(out)} bytes, at least {expected} needed")
        return out
    check_size(out, expected, "zfp", where)
    return out


def _float64_in_declared_order(values: np.ndarray, desc: Params) -> bytes:
    """zfp and sz3 decode to float64 values; like the reference, hand them on in the descriptor's byte order."""
    # after simple_packing the bytes are a bit stream with no byte order: the codec's native doubles go on as is
    declared = (
        desc.get("byte_order", "little")
        if desc.get("encoding", "none") == "none"
        else ("little" if np.little_endian else "big")
    )
    dtype = np.dtype("<f8") if declared == "little" else np.dtype(">f8")
    return np.ascontiguousarray(values, dtype=dtype).tobytes()


def _sz3(payload: Payload, expected: int, params: Params, where: str) -> bytes:
    check_ratio("sz3", len(payload), expected, where)
    if expected % 8:
        raise CodecError(f"{where}sz3 decodes float64 values but {expected} bytes are expected")
    out = _float64_in_declared_order(sz3.decompress(payload, expected // 8, where=where), params)
    check_size(out, expected, "sz3", where)
    return out


def _bitmask_prefixed(kind: str) -> Decoder:
    """rle/roaring compression of a bitmask object: a big-endian u32 bit count, then the bitmap."""

    def decode(payload: Payload, expected: int, params: Params, where: str) -> bytes:
        if len(payload) < 4:
            raise CodecError(f"{where}{kind} payload lacks its 4-byte bit count")
        nbits = struct.unpack(">I", payload[:4])[0]
        if nbits != 8 * expected:
            raise CodecError(f"{where}{kind} payload holds {nbits} bits, expected {8 * expected}")
        if kind == "rle":
            bits = bitmaps.rle_decode(payload[4:], nbits, where)
        else:
            bits = bitmaps.roaring_decode(payload[4:], nbits, where)
        return np.packbits(bits).tobytes()

    return decode


DECODERS: dict[str, Decoder] = {
    "none": _none,
    "zstd": _zstd,
    "lz4": _lz4,
    "szip": _szip,
    "blosc2": _blosc2,
    "zfp": _zfp,
    "sz3": _sz3,
    "rle": _bitmask_prefixed("rle"),
    "roaring": _bitmask_prefixed("roaring"),
}


def decompress(name: str, payload: Payload, expected: int, desc: Params, where: str = "") -> Decoded:
    """Decode ``payload`` with compressor ``name`` into exactly ``expected`` bytes."""
    try:
        decoder = DECODERS[name]
    except KeyError:
        raise UnsupportedError(f"{where}unknown compression {name!r} (known: {', '.join(DECODERS)})") from None
    return decoder(payload, expected, desc, where)


def compress(name: str, data: bytes, desc: Params) -> bytes:
    """Encode for the writer (only the codecs whose bytes we can reproduce or that decode)."""
    if name == "none":
        return bytes(data)
    if name == "zstd":
        return zstd.compress(data, int(desc.get("zstd_level", 3)))
    if name == "lz4":
        return lz4.compress(data)
    raise UnsupportedError(f"writing compression {name!r} is not supported")
