"""szip (CCSDS 121.0) through the libaec bundled in imagecodecs, called with ctypes.

The Tensogram reference records ``szip_block_offsets`` (the bit offset of each reference sample interval) next
to the payload; imagecodecs' Python API neither gives them when encoding nor seeks to them when decoding, so
this module calls libaec itself (``aec_encode_get_offsets``, ``aec_buffer_seek``).
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import CodecError, EncodeError, MissingCodecError
from .base import Buffer, Capabilities, Codec, Param, as_bytes
from .optional import require

__all__ = ["CODEC"]

AEC_OK = 0
AEC_FLUSH = 1
#: libaec flag bits this module reasons about (libaec.h)
AEC_RESTRICTED = 16
AEC_PAD_RSI = 32


class _AecStream(ctypes.Structure):
    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_size_t),
        ("total_in", ctypes.c_size_t),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_size_t),
        ("total_out", ctypes.c_size_t),
        ("bits_per_sample", ctypes.c_uint),
        ("block_size", ctypes.c_uint),
        ("rsi", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("state", ctypes.c_void_p),
    ]


@lru_cache(maxsize=1)
def _libaec() -> ctypes.CDLL:
    imagecodecs = require("imagecodecs", "szip encoding")
    here = os.path.dirname(imagecodecs.__file__ or "")  # None only for a namespace package: nothing found then
    candidates = glob.glob(os.path.join(os.path.dirname(here), "imagecodecs.libs", "libaec*.so*")) + glob.glob(
        os.path.join(here, "*aec*.dll")
    )
    if not candidates:
        raise MissingCodecError("szip encoding needs the libaec library bundled with imagecodecs, which was not found")
    lib = ctypes.CDLL(candidates[0])
    strm, size, sizes = ctypes.POINTER(_AecStream), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)
    for name, args in (
        *((n, [strm]) for n in ("aec_encode_init", "aec_encode_enable_offsets", "aec_encode_end")),
        *((n, [strm]) for n in ("aec_decode_init", "aec_decode_end")),
        *((n, [strm, ctypes.c_int]) for n in ("aec_encode", "aec_decode")),
        ("aec_encode_count_offsets", [strm, sizes]),
        ("aec_encode_get_offsets", [strm, sizes, size]),
        ("aec_buffer_seek", [strm, size]),
    ):
        getattr(lib, name).argtypes, getattr(lib, name).restype = args, ctypes.c_int
    return lib


def _stream(
    lib: ctypes.CDLL, init: str, src: Any, n_in: int, dst: Any, n_out: int, p: Mapping[str, int], where: str = ""
) -> Any:
    """A libaec stream from ``n_in`` bytes at ``src`` to ``n_out`` at ``dst``, set up by ``aec_{init}_init``."""
    strm = _AecStream(next_in=src, avail_in=n_in, next_out=dst, avail_out=n_out, **p)
    if getattr(lib, f"aec_{init}_init")(ctypes.byref(strm)) != AEC_OK:
        given = " ".join(f"{k}={v}" for k, v in p.items())
        raise CodecError(f"{where}libaec refused parameters {given}")
    return strm


def _run_decoder(
    src: np.ndarray, want: int, p: Mapping[str, int], where: str, seek: int = 0
) -> tuple[np.ndarray, int, int]:
    """libaec's streaming decoder over ``src`` (``seek`` bits skipped) into a fresh array of ``want`` bytes,
    stopping once it is full (padding after the last sample is no error, as in the reference): the array, the
    bytes it wrote and libaec's return code. No copy of the input or the output."""
    lib = _libaec()
    dst = np.empty(max(want, 1), dtype=np.uint8)
    strm = _stream(lib, "decode", src.ctypes.data if src.size else None, src.size, dst.ctypes.data, want, p, where)
    try:
        if seek and lib.aec_buffer_seek(ctypes.byref(strm), seek) != AEC_OK:
            raise CodecError(f"{where}szip stream ends before bit {seek}")
        code = lib.aec_decode(ctypes.byref(strm), AEC_FLUSH)
        return dst[:want], int(strm.total_out), int(code)
    finally:
        lib.aec_decode_end(ctypes.byref(strm))


def sample_bytes(bits_per_sample: int, flags: int) -> int:
    """Bytes libaec gives each decoded sample (3 only with AEC_DATA_3BYTE)."""
    if bits_per_sample > 16:
        return 3 if bits_per_sample <= 24 and flags & 2 else 4
    return 2 if bits_per_sample > 8 else 1


def _rsi_bytes(params: Mapping[str, Any]) -> int:
    """Decoded bytes per reference sample interval."""
    per = int(params["rsi"]) * int(params["block_size"])
    return per * sample_bytes(int(params["bits_per_sample"]), int(params["flags"]))


def _bit_offset(offsets: list[Any], i: int, where: str = "") -> int:
    """Recorded offset ``i``, checked (the list is not checked as a whole: a point reads one or two)."""
    offset = offsets[i]
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise CodecError(f"{where}szip_block_offsets[{i}] is {offset!r}, not a bit offset")
    return offset


def stream_flags(params: Mapping[str, Any], total: int, where: str = "") -> int:
    """The libaec flags that decode the stream: ``flags`` without ``AEC_PAD_RSI`` where the recorded interval
    offsets show it unpadded. The reference encoder records PAD_RSI (32) but writes every interval unpadded, and
    decoding with the flag misreads every interval after the first. A padded stream starts each interval on a
    byte, so one recorded offset that is not a multiple of 8 proves it unpadded; when all are, both readings
    agree. Without a full list of offsets nothing tells them apart: a stream of several intervals is refused.
    """
    flags, rsi_bytes = int(params["flags"]), _rsi_bytes(params)
    intervals = -(-total // rsi_bytes) if rsi_bytes > 0 else 0
    if not flags & AEC_PAD_RSI or intervals <= 1:
        return flags  # no interval boundary: the padding changes nothing
    offsets = params.get("block_offsets")
    if isinstance(offsets, list):
        if any(_bit_offset(offsets, i, where) % 8 for i in range(len(offsets))):
            return flags & ~AEC_PAD_RSI
        if len(offsets) == intervals:
            return flags
    raise CodecError(
        f"{where}szip stream with flag PAD_RSI (32) and {intervals} intervals has no full szip_block_offsets "
        f"list ({intervals} expected): writers disagree on whether such streams are padded (the reference "
        "encoder writes them unpadded), so its values cannot be told; re-encode it without flag 32"
    )


#: stored bytes read past the start of the next interval (libaec fills its bit accumulator ahead)
_LOOKAHEAD = 16


def _libaec_params(params: Mapping[str, Any], flags: int) -> dict[str, int]:
    return {k: int(params[k]) for k in ("bits_per_sample", "block_size", "rsi")} | {"flags": flags}


class Szip(Codec):
    """CCSDS 121.0 (libaec) streams; the encoder records the bit offset of each reference sample interval."""

    name = "szip"
    params = (
        Param("rsi", int, 128, bounds=(1, 4096), doc="blocks per reference sample interval"),
        Param("block_size", int, 16, choices=(8, 16, 32, 64), doc="samples per block"),
        Param("flags", int, 8, bounds=(0, 255), doc="libaec flags"),
        Param("bits_per_sample", int, bounds=(1, 32), doc="sample width", derived=True),
        Param("block_offsets", list, doc="bit offset of each RSI", recorded=True, derived=True),
    )
    max_ratio = 16384
    capabilities = Capabilities(partial_decode=True)

    def decodes_range(self, params: Mapping[str, Any], total: int) -> bool:
        """Only streams with one recorded bit offset per interval (``block_offsets``) decode in part, and not
        restricted coding (``AEC_RESTRICTED``), whose intervals the recorded offsets do not locate."""
        offsets = params.get("block_offsets")  # each is checked when a range starts from it
        return (
            isinstance(offsets, list)
            and all(isinstance(params.get(k), int) for k in ("rsi", "block_size", "bits_per_sample", "flags"))
            and 1 <= int(params["bits_per_sample"]) <= 32
            and int(params["rsi"]) * int(params["block_size"]) > 0
            and not int(params["flags"]) & AEC_RESTRICTED
            and total > 0
            and len(offsets) == -(-total // _rsi_bytes(params))
        )

    def stored_span(self, lo: int, hi: int, total: int, stored: int, params: Mapping[str, Any]) -> tuple[int, int]:
        rsi_bytes, offsets = _rsi_bytes(params), params["block_offsets"]
        first, last = lo // rsi_bytes, max(lo, hi - 1) // rsi_bytes
        start = min(_bit_offset(offsets, min(first, len(offsets) - 1)) // 8, stored)
        stop = _bit_offset(offsets, last + 1) // 8 + _LOOKAHEAD if last + 1 < len(offsets) else stored
        return start, min(stop, stored)

    def merge_gap(self, params: Mapping[str, Any]) -> int:
        """One interval: a restart decodes from its interval's start, and initialises libaec again."""
        return _rsi_bytes(params)

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        """Decoded bytes ``[lo, hi)`` from the intervals that hold them: libaec's decoder started at the first
        interval's recorded bit offset (``aec_buffer_seek``, as ``aec_decode_range`` does) and stopped once
        byte ``hi`` is out."""
        require("imagecodecs", f"{where}szip decompression")
        rsi_bytes, offsets = _rsi_bytes(params), params["block_offsets"]
        first = lo // rsi_bytes
        if first >= len(offsets):
            raise CodecError(f"{where}szip byte {lo} lies past the {len(offsets)} recorded intervals")
        offset = _bit_offset(offsets, first, where)
        p = _libaec_params(params, stream_flags(params, total, where))
        width = sample_bytes(p["bits_per_sample"], p["flags"])
        start_out = first * rsi_bytes
        want = min(total, hi) - start_out
        want += -want % width
        src = np.frombuffer(as_bytes(piece), dtype=np.uint8)
        skip = offset // 8 - base
        if skip < 0 or skip > src.size:
            raise CodecError(f"{where}szip stored bytes from {base} do not hold interval {first}")
        dst, got, code = _run_decoder(src[skip:], want, p, where, offset % 8)
        if got < hi - start_out:
            raise CodecError(
                f"{where}szip intervals from {first} decode to {got} bytes (libaec code {code}), "
                f"expected {hi - start_out}"
            )
        return dst[lo - start_out : hi - start_out]

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        """Exactly ``expected`` bytes, parameters in libaec's ranges, no more output than the payload can hold."""
        require("imagecodecs", f"{where}szip decompression")  # it bundles the libaec we call
        p = _libaec_params(params, stream_flags(params, expected, where))
        view = as_bytes(payload)
        self.check_ratio(len(view), expected, where)
        if not (1 <= p["bits_per_sample"] <= 32) or p["block_size"] <= 0 or not (1 <= p["rsi"] <= 4096):
            given = f"bits={p['bits_per_sample']} block_size={p['block_size']} rsi={p['rsi']}"
            raise CodecError(f"{where}invalid szip parameters {given}")
        out, got, code = _run_decoder(np.frombuffer(view, dtype=np.uint8), expected, p, where)
        if got != expected:
            raise CodecError(f"{where}szip stream decodes to {got} bytes (libaec code {code}), expected {expected}")
        return out

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """The stream and the RSI bit offsets (truncated as the reference does)."""
        resolved = self.resolve(params)
        p = _libaec_params(resolved, int(resolved["flags"]))
        width = sample_bytes(p["bits_per_sample"], p["flags"])
        raw = np.frombuffer(as_bytes(data), dtype=np.uint8)
        if raw.size % width:  # a partial last sample: the reference refuses it, and could not decode it
            raise EncodeError(f"szip: a payload of {raw.size} bytes is not a whole number of {width}-byte samples")
        if not raw.size:
            return b"", {"block_offsets": []}  # the reference writes an empty payload for an empty object
        lib = _libaec()
        dst = np.empty(raw.size + raw.size // 2 + 1024 + p["block_size"] * p["rsi"] * 8, dtype=np.uint8)
        strm = _stream(lib, "encode", raw.ctypes.data, raw.size, dst.ctypes.data, dst.size, p)
        try:
            if lib.aec_encode_enable_offsets(ctypes.byref(strm)) != AEC_OK:
                raise CodecError("libaec could not record RSI offsets")
            if lib.aec_encode(ctypes.byref(strm), AEC_FLUSH) != AEC_OK:
                raise CodecError("libaec encoding failed")
            count = ctypes.c_size_t(0)
            lib.aec_encode_count_offsets(ctypes.byref(strm), ctypes.byref(count))
            offsets = (ctypes.c_size_t * max(1, count.value))()
            if count.value:
                lib.aec_encode_get_offsets(ctypes.byref(strm), offsets, count.value)
            payload = dst[: strm.total_out].tobytes()
        finally:
            lib.aec_encode_end(ctypes.byref(strm))
        n_rsi = -(-(raw.size // width) // (p["rsi"] * p["block_size"]))
        return payload, {"block_offsets": [int(offsets[i]) for i in range(min(n_rsi, count.value))]}


CODEC = Szip()
