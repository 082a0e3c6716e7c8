"""Tensogram's one table from its descriptor vocabulary to codec objects (spec §12-§15), and an object's chain.

A descriptor names a codec per stage (``encoding``, ``filter``, ``compression``) and per NaN/Inf mask
(``method``) by the codec's own name; its parameters sit under ``<name>_`` (``zstd_level``), simple_packing's
under ``sp_``. All else about codecs comes from the codec objects (:mod:`xarray_tensogram.codecs`); this module
adds only what the descriptor decides: szip's sample width and flags, the byte order of zfp/sz3 output, the
bit count in front of an rle/roaring bitmask object.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...codecs import bitmaps, blosc2, lz4, shuffle, simple_packing, sz3, szip, zfp, zstd
from ...codecs.base import PASSTHROUGH, Buffer, Codec, as_bytes, check_size
from ...codecs.chain import RAW, Chain, Stage, native_order
from ...errors import CodecError, MetadataError, UnsupportedError
from .dtypes import dtype_width, numpy_dtype

__all__ = [
    "BITMAP_OBJECTS",
    "MASK_METHODS",
    "STAGES",
    "chain_gives_values",
    "chain_of",
    "codec_params",
    "codecs_in_use",
    "descriptor_defaults",
    "descriptor_key",
    "float64_only",
    "sample_bits",
    "stage_codec",
    "szip_params",
]

Params = Mapping[str, Any]


def _by_name(*codecs: Codec) -> dict[str, Codec]:
    return {c.name: c for c in codecs}


#: THE table: descriptor stage -> {value -> codec object}
STAGES: dict[str, dict[str, Codec]] = {
    "encoding": _by_name(PASSTHROUGH, simple_packing.CODEC),
    "filter": _by_name(PASSTHROUGH, shuffle.CODEC),
    "compression": _by_name(
        PASSTHROUGH,
        zstd.CODEC,
        lz4.CODEC,
        szip.CODEC,
        blosc2.CODEC,
        zfp.CODEC,
        sz3.CODEC,
        bitmaps.RLE,
        bitmaps.ROARING,
    ),
}
#: a NaN/Inf mask's ``method`` -> the codec of its packed bitmap
MASK_METHODS: dict[str, Codec] = _by_name(
    PASSTHROUGH, bitmaps.RLE, bitmaps.ROARING, lz4.CODEC, zstd.CODEC, blosc2.CODEC
)
#: descriptor key prefixes that differ from ``<codec name>_``
_PREFIX = {simple_packing.CODEC.name: "sp_"}


def descriptor_key(codec: Codec, param: str) -> str:
    """The descriptor key of a codec parameter (``zstd_level``, ``sp_bits_per_value``)."""
    return _PREFIX.get(codec.name, codec.name + "_") + param


#: parameters the reference needs written out in the descriptor: a writer fills them from the codec's defaults
_WRITTEN_OUT: dict[Codec, tuple[str, ...]] = {
    simple_packing.CODEC: ("bits_per_value",),
    szip.CODEC: ("rsi", "block_size", "flags"),
    zfp.CODEC: ("mode", "rate", "precision", "tolerance"),
}


def codecs_in_use(desc: Params) -> dict[str, Codec]:
    """The codec each stage of the descriptor names (``none`` where it names none; unknown names left out)."""
    return {stage: c for stage, table in STAGES.items() if (c := table.get(desc.get(stage, PASSTHROUGH.name)))}


def descriptor_defaults(desc: Params) -> dict[str, Any]:
    """The descriptor keys a writer adds to ``desc``: its codecs' defaults for the parameters the reference
    needs written out (zfp: only its mode's parameter)."""
    out: dict[str, Any] = {}
    for stage, codec in codecs_in_use(desc).items():
        if names := _WRITTEN_OUT.get(codec):
            resolved = codec.resolve(codec_params(desc, codec), what=f"{stage} {codec.name}: ")
            out.update({descriptor_key(codec, n): resolved[n] for n in names if n in resolved})
    return out


#: codecs that take float64 values only (spec §12): a writer converts other dtypes and records the original
_FLOAT64_ONLY = frozenset({simple_packing.CODEC, zfp.CODEC, sz3.CODEC})


def float64_only(desc: Params) -> bool:
    return not _FLOAT64_ONLY.isdisjoint(codecs_in_use(desc).values())


def stage_codec(stage: str, value: Any, where: str = "") -> Codec:
    """The codec a descriptor's ``stage`` (or a mask's ``mask method``) names; an :class:`UnsupportedError`
    listing the valid ones otherwise."""
    table = MASK_METHODS if stage == "mask method" else STAGES[stage]
    found = table.get(value) if isinstance(value, str) else None
    if found is None:
        raise UnsupportedError(f"{where}unknown {stage} {value!r} (known: {', '.join(table)})")
    return found


def codec_params(desc: Params, codec: Codec, where: str = "", *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The codec's parameters in the descriptor, type-checked (``required`` ones must be there)."""
    out: dict[str, Any] = {}
    for p in codec.params:
        key = descriptor_key(codec, p.name)
        if key not in desc:
            if p.name in required:
                raise MetadataError(f"{where}descriptor parameter {key!r} is required for {codec.name}")
            continue
        value = desc[key]
        if p.kind in (int, float) and (
            isinstance(value, bool) or not isinstance(value, (int, float) if p.kind is float else int)
        ):
            wanted = "a number" if p.kind is float else "an integer"
            raise MetadataError(f"{where}descriptor parameter {key!r} must be {wanted}, got {value!r}")
        out[p.name] = value
    return out


def _packed(desc: Params) -> bool:
    return bool(desc.get("encoding") == simple_packing.CODEC.name)


def sample_bits(desc: Params) -> int:
    """The width in bits of the samples the compression stage gets (szip's bits_per_sample, spec §13.4; blosc2's
    typesize in bytes): a packed value, a shuffled byte, else an element."""
    if _packed(desc):
        return int(codec_params(desc, simple_packing.CODEC, required=("bits_per_value",))["bits_per_value"])
    return 8 if desc.get("filter") == shuffle.CODEC.name else dtype_width(str(desc["dtype"])) * 8


def szip_params(desc: Params, where: str = "") -> dict[str, Any]:
    """szip's parameters: the descriptor's, its sample width and libaec flags (spec §13.4: the descriptor's, plus
    MSB order after simple_packing and 3-byte samples for 17..24 bits) and interval offsets."""
    bits = sample_bits(desc)
    params = codec_params(desc, szip.CODEC, where, required=("block_size", "rsi", "flags"))
    flags = params["flags"] | (4 if _packed(desc) else 0) | (2 if 16 < bits <= 24 else 0)  # AEC_DATA_MSB, _3BYTE
    params.update(bits_per_sample=bits, flags=flags)
    return params


class _Float64Out(Codec):
    """zfp or sz3 as a descriptor decides them: native float64 output, or a refusal (see :func:`lossy_refusal`)
    where the coder was handed bytes that were not the values."""

    name = "float64 output"

    def __init__(self, inner: Codec, desc: Params) -> None:
        self.inner = inner
        #: why this stream cannot give back the values written (None: it can)
        self.refusal = lossy_refusal(desc, inner.name)

    def _refuse(self, where: str) -> None:
        if self.refusal:
            raise CodecError(f"{where}{self.refusal}")

    def check_ratio(self, payload_len: int, expected: int, where: str = "") -> None:
        self.inner.check_ratio(payload_len, expected, where)

    def decodes_range(self, params: Params, total: int) -> bool:
        return self.inner.decodes_range(params, total)

    def stored_span(self, lo: int, hi: int, total: int, stored: int, params: Params) -> tuple[int, int]:
        return self.inner.stored_span(lo, hi, total, stored, params)

    def merge_gap(self, params: Params) -> int:
        return self.inner.merge_gap(params)

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Params, where: str = ""
    ) -> Buffer:
        self._refuse(where)
        return self.inner.decode_range(piece, base, lo, hi, total, params, where)

    def decode(self, payload: Buffer, expected: int, params: Params, where: str = "") -> Buffer:
        self._refuse(where)
        self.inner.check_ratio(len(payload), expected, where)
        out = self.inner.decode(payload, expected, params, where)
        check_size(out, expected, self.inner.name, where)
        return out


def lossy_refusal(desc: Params, codec: str) -> str | None:
    """Why a zfp or sz3 stage cannot give back the values of ``desc`` (None: it can).

    Both code native-order doubles: the values' own only for float64 (complex128: its parts) in native order
    with no filter or packing before. Otherwise the lossy coder rounded bytes that were not the values, which
    turns into unrelated values: measured with the reference encoder and decoder, errors of 1e6 to 1e308 (or
    past the mode's tolerance), which the reference decoder returns as values or refuses.
    """
    native = "little" if np.little_endian else "big"
    if _packed(desc):
        problem = "after simple_packing, on the packed bit stream"
    elif desc.get("filter") == shuffle.CODEC.name:
        problem = "after the shuffle filter"
    elif desc.get("byte_order", "little") != native:
        problem = f"in {desc.get('byte_order')}-endian order"
    elif desc["dtype"] not in ("float64", "complex128"):
        problem = "as float64 bytes"
    else:
        return None
    return (
        f"{codec} coded the {desc['dtype']} values {problem}: its lossy rounding ran on bytes that were not the "
        "values, so what it decodes cannot be trusted (the reference decoder returns unrelated values or "
        f"refuses). Re-encode from the source with {codec} on float64 values in {native}-endian order, "
        "before any filter or packing"
    )


class _Bitmap(Codec):
    """rle/roaring compression of a bitmask object: a big-endian u32 bit count, then the bitmap."""

    name = "bitmap"

    def __init__(self, inner: Codec) -> None:
        self.inner = inner

    def encode(self, data: Buffer, params: Params) -> tuple[bytes, dict[str, Any]]:
        payload, recorded = self.inner.encode(data, params)
        return struct.pack(">I", 8 * len(as_bytes(data))) + payload, recorded

    def decode(self, payload: Buffer, expected: int, params: Params, where: str = "") -> Buffer:
        view = memoryview(payload.data if isinstance(payload, np.ndarray) else payload).cast("B")
        if len(view) < 4:
            raise CodecError(f"{where}{self.inner.name} payload lacks its 4-byte bit count")
        nbits = struct.unpack(">I", view[:4])[0]
        if nbits != 8 * expected:
            raise CodecError(f"{where}{self.inner.name} payload holds {nbits} bits, expected {8 * expected}")
        return bytes(self.inner.decode(view[4:], expected, {"bits": nbits}, where))


#: the rle/roaring codecs of the ``compression`` stage as Tensogram frames their streams
BITMAP_OBJECTS: dict[Codec, Codec] = {c: _Bitmap(c) for c in (bitmaps.RLE, bitmaps.ROARING)}


def _compression_stage(desc: Params, where: str) -> Stage:
    """The bytes->bytes stage of the descriptor's ``compression``, with what the descriptor decides for it."""
    codec = stage_codec("compression", desc["compression"], where)
    if codec is szip.CODEC:
        return Stage(codec, szip_params(desc, where))
    if codec is zfp.CODEC:
        required = ("mode", zfp.MODES.get(str(desc.get(descriptor_key(codec, "mode"))), "mode"))
        return Stage(_Float64Out(codec, desc), codec_params(desc, codec, where, required=required))
    if codec is sz3.CODEC:
        return Stage(_Float64Out(codec, desc), {})
    if codec in BITMAP_OBJECTS:
        return Stage(BITMAP_OBJECTS[codec])
    return Stage(codec, codec_params(desc, codec, where))


def _values_stage(desc: Params, where: str) -> tuple[Stage, int]:
    """The array->bytes stage of the descriptor's ``encoding`` and dtype, and the element count it decodes."""
    count = math.prod(desc["shape"])
    if desc["encoding"] == simple_packing.CODEC.name:
        params = {"decimal_scale_factor": 0, **codec_params(desc, simple_packing.CODEC, where)}
        return Stage(simple_packing.CODEC, params), count
    if desc["dtype"] == "bitmask":
        return Stage(RAW, {"dtype": np.dtype(np.uint8)}), (count + 7) // 8
    return Stage(RAW, {"dtype": native_order(numpy_dtype(desc["dtype"]), desc.get("byte_order", "little"))}), count


def chain_gives_values(desc: Params) -> bool:
    """Whether the chain's output is the object's values as they are: no NaN/Inf masks to restore (spec §15), no
    bitmask (its chain gives packed bytes). Only then does what the chain does for part of a payload hold."""
    return not desc.get("masks") and desc["dtype"] != "bitmask"


def chain_of(desc: Params, where: str = "") -> Chain:
    """The codec chain of a validated descriptor: its encoding, then its filter and compression stages."""
    values, count = _values_stage(desc, where)
    unshuffle = Stage(shuffle.CODEC, {"element_size": desc.get("shuffle_element_size")})
    shuffled = [unshuffle] if desc["filter"] == shuffle.CODEC.name else []
    return Chain(values, (*shuffled, _compression_stage(desc, where)), count)
