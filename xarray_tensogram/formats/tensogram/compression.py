"""Tensogram compressors (spec §13): payload bytes -> exactly ``expected`` decoded bytes.

Each decoder is told the size the descriptor promises and never produces (or
allocates) more. Optional packages are imported on first use; when missing, the
error names the ``codecs`` extra.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Mapping

import numpy as np

from ...codecs import zstd
from ...codecs.registry import require
from ...errors import CodecError, MetadataError, UnsupportedError

__all__ = ["decompress", "compress", "DECODERS", "szip_sample_bits"]

Params = Mapping[str, Any]


def _check_size(data: bytes | np.ndarray, expected: int, codec: str, where: str) -> None:
    n = data.nbytes if isinstance(data, np.ndarray) else len(data)
    if n != expected:
        raise CodecError(f"{where}{codec} payload decodes to {n} bytes, expected {expected}")


def _param(desc: Params, key: str, kind: type, where: str) -> Any:
    """A required numeric descriptor parameter, type-checked (bool is not a number here)."""
    value = desc.get(key)
    ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
    if value is None or isinstance(value, bool) or not ok:
        raise MetadataError(f"{where}descriptor parameter {key!r} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
    return kind(value)


#: largest decoded/stored ratio each codec can reach on real data, generously; a descriptor promising
#: more is refused before anything is allocated (no 100 GB buffer for a 1 kB payload)
MAX_RATIO = {"szip": 16384, "zfp": 512, "sz3": 32768}


def _check_ratio(codec: str, payload_len: int, expected: int, where: str) -> None:
    limit = MAX_RATIO[codec] * max(payload_len, 1) + 4096
    if expected > limit:
        raise CodecError(
            f"{where}{codec} payload of {payload_len} bytes cannot decode to the {expected} bytes the descriptor "
            f"promises (more than {MAX_RATIO[codec]}:1)"
        )


def _none(payload: bytes, expected: int, params: Params, where: str) -> bytes:
    _check_size(payload, expected, "uncompressed", where)
    return payload


def _zstd(payload: bytes, expected: int, params: Params, where: str) -> np.ndarray:
    return zstd.decompress(payload, expected, where=where)


def _lz4(payload: bytes, expected: int, params: Params, where: str) -> bytes:
    lz4_block = require("lz4.block", f"{where}lz4 decompression")
    if len(payload) < 4:
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes has no 4-byte size prefix")
    declared = struct.unpack("<I", payload[:4])[0]
    if expected > 255 * len(payload) + 64:  # LZ4 cannot expand more than ~255:1
        raise CodecError(f"{where}lz4 payload of {len(payload)} bytes cannot decode to {expected} bytes")
    if declared != expected:
        raise CodecError(f"{where}lz4 payload declares {declared} decoded bytes, descriptor implies {expected}")
    try:
        out = lz4_block.decompress(bytes(payload[4:]), uncompressed_size=expected)
    except Exception as exc:  # lz4 raises LZ4BlockError (a RuntimeError)
        raise CodecError(f"{where}lz4 block is corrupt: {exc}") from exc
    _check_size(out, expected, "lz4", where)
    return out


def szip_sample_bits(desc: Params) -> int:
    """libaec bits_per_sample for a descriptor (spec §13.4)."""
    if desc.get("encoding") == "simple_packing":
        return _param(desc, "sp_bits_per_value", int, "")
    if desc.get("filter") == "shuffle":
        return 8
    from .dtypes import dtype_width

    return dtype_width(str(desc["dtype"])) * 8


def _szip_flags(desc: Params, bits: int) -> int:
    flags = desc.get("szip_flags", 0)
    flags = flags if isinstance(flags, int) and not isinstance(flags, bool) else 0
    if desc.get("encoding") == "simple_packing":
        flags |= 4  # AEC_DATA_MSB
    if 16 < bits <= 24:
        flags |= 2  # AEC_DATA_3BYTE
    return flags


def _szip(payload: bytes, expected: int, desc: Params, where: str) -> bytes:
    require("imagecodecs", f"{where}szip decompression")  # it bundles the libaec we call
    _check_ratio("szip", len(payload), expected, where)
    bits = szip_sample_bits(desc)
    for key in ("szip_block_size", "szip_rsi", "szip_flags"):
        _param(desc, key, int, where)
    flags = _szip_flags(desc, bits)
    block = int(desc["szip_block_size"])
    rsi = int(desc["szip_rsi"])
    if not (1 <= bits <= 32) or block <= 0 or not (1 <= rsi <= 4096):
        raise CodecError(f"{where}invalid szip parameters bits={bits} block_size={block} rsi={rsi}")
    # libaec's streaming decoder, stopped when the expected output is full, as the reference calls it
    from ...codecs.szip import szip_decode

    try:
        return szip_decode(payload, expected, bits, block, rsi, flags)
    except CodecError as exc:
        raise CodecError(f"{where}{exc}") from None


def _blosc2(payload: bytes, expected: int, params: Params, where: str) -> bytes:
    blosc2 = require("blosc2", f"{where}blosc2 decompression")
    try:
        sc = blosc2.schunk_from_cframe(bytes(payload), copy=True)
        if sc.nbytes != expected:
            raise CodecError(f"{where}blosc2 frame holds {sc.nbytes} bytes, expected {expected}")
        out = b"".join(sc.decompress_chunk(i) for i in range(sc.nchunks))
    except CodecError:
        raise
    except Exception as exc:
        raise CodecError(f"{where}blosc2 frame is corrupt: {exc}") from exc
    _check_size(out, expected, "blosc2", where)
    return out


def _zfp(payload: bytes, expected: int, desc: Params, where: str) -> bytes:
    zfpy = require("zfpy", f"{where}zfp decompression")
    packed = desc.get("encoding") == "simple_packing"
    if packed:
        # after simple_packing the reference still decodes prod(shape) doubles (reading zeros past a
        # shorter stream) and hands on all of them; later stages use the leading bytes
        shape = desc.get("shape") or []
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        _check_ratio("zfp", len(payload), 8 * n, where)
        payload = bytes(payload) + bytes(8 * n + 4096)  # zeros past the stream, never out of bounds
    else:
        _check_ratio("zfp", len(payload), expected, where)
        if expected % 8:
            raise CodecError(f"{where}zfp decodes float64 values but {expected} bytes are expected")
        n = expected // 8
    mode = desc.get("zfp_mode")
    kwargs: dict[str, Any]
    if mode == "fixed_rate":
        kwargs = {"rate": _param(desc, "zfp_rate", float, where)}
    elif mode == "fixed_precision":
        kwargs = {"precision": _param(desc, "zfp_precision", int, where)}
    elif mode == "fixed_accuracy":
        kwargs = {"tolerance": _param(desc, "zfp_tolerance", float, where)}
    else:
        raise UnsupportedError(f"{where}unknown zfp_mode {mode!r}")
    if n == 0:
        return b""
    try:
        arr = zfpy._decompress(bytes(payload), zfpy.type_double, [n], **kwargs)
    except Exception as exc:
        raise CodecError(f"{where}zfp stream is corrupt: {exc}") from exc
    out = _float64_in_declared_order(arr, desc)
    if packed:
        if len(out) < expected:
            raise CodecError(f"{where}zfp stream decodes to {len(out)} bytes, at least {expected} needed")
        return out
    _check_size(out, expected, "zfp", where)
    return out


def _float64_in_declared_order(values: np.ndarray, desc: Params) -> bytes:
    """zfp and sz3 decode to float64 values; like the reference, hand them on in the descriptor's byte order."""
    # after simple_packing the bytes are a bit stream with no byte order: the codec's native doubles go on as is
    declared = desc.get("byte_order", "little") if desc.get("encoding", "none") == "none" else (
        "little" if np.little_endian else "big")
    order = "<" if declared == "little" else ">"
    return np.ascontiguousarray(values, dtype=np.dtype("f8").newbyteorder(order)).tobytes()


def _sz3(payload: bytes, expected: int, params: Params, where: str) -> bytes:
    sz = require("pysz", f"{where}sz3 decompression").sz
    _check_ratio("sz3", len(payload), expected, where)
    if expected % 8:
        raise CodecError(f"{where}sz3 decodes float64 values but {expected} bytes are expected")
    n = expected // 8
    if n == 0:
        return b""
    try:
        arr, _cfg = sz.decompress(np.frombuffer(payload, np.uint8), np.float64, (n,))
    except Exception as exc:
        raise CodecError(f"{where}sz3 stream is corrupt: {exc}") from exc
    out = _float64_in_declared_order(arr, params)
    _check_size(out, expected, "sz3", where)
    return out


def _bitmask_prefixed(kind: str) -> Callable[[bytes, int, Params, str], bytes]:
    def decode(payload: bytes, expected: int, params: Params, where: str) -> bytes:
        from .masks import rle_decode, roaring_decode

        if len(payload) < 4:
            raise CodecError(f"{where}{kind} payload lacks its 4-byte bit count")
        nbits = struct.unpack(">I", payload[:4])[0]
        if nbits != 8 * expected:
            raise CodecError(f"{where}{kind} payload holds {nbits} bits, expected {8 * expected}")
        bits = rle_decode(payload[4:], nbits, where) if kind == "rle" else roaring_decode(payload[4:], nbits, where)
        return np.packbits(bits).tobytes()

    return decode


DECODERS: dict[str, Callable[[bytes, int, Any, str], Any]] = {
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


def decompress(name: str, payload: bytes | memoryview, expected: int, desc: Params, where: str = "") -> bytes | np.ndarray:
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
        lz4_block = require("lz4.block", "lz4 compression")
        return lz4_block.compress(bytes(data), store_size=True)
    raise UnsupportedError(f"writing compression {name!r} is not supported")
