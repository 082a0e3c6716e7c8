"""Blosc2 contiguous frames (cframes): decoded whole, checked against the size the container promises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError
from .base import Buffer, Capabilities, Codec, Param, check_size
from .optional import require

__all__ = ["CODEC", "INNER_CODECS", "compress", "decompress"]

#: largest chunk appended to a super-chunk at once (blosc2 chunks are limited to 2 GiB)
MAX_CHUNK = 256 * 1024 * 1024


def decompress(payload: bytes | memoryview, expected: int, *, where: str = "") -> bytes:
    """Decode a cframe into exactly ``expected`` bytes; the frame's own size is checked before its chunks."""
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
    check_size(out, expected, "blosc2", where)
    return out


def compress(
    data: bytes | memoryview, *, codec: str = "lz4", clevel: int = 5, typesize: int = 1, bitshuffle: bool = False
) -> bytes:
    """One single-threaded cframe, in chunks of at most :data:`MAX_CHUNK` bytes (whole elements).

    ``bitshuffle`` replaces blosc2's default byte shuffle with a bit shuffle (as bitmaps want).
    """
    blosc2 = require("blosc2", "blosc2 compression")
    extra = {}
    if bitshuffle:
        extra["filters"] = [blosc2.Filter.BITSHUFFLE] + [blosc2.Filter.NOFILTER] * 5
    cparams = blosc2.CParams(
        codec=getattr(blosc2.Codec, codec.upper()),
        clevel=clevel,
        typesize=typesize,
        nthreads=1,
        splitmode=blosc2.SplitMode.FORWARD_COMPAT_SPLIT,
        **extra,
    )
    chunk = MAX_CHUNK - MAX_CHUNK % typesize
    sc = blosc2.SChunk(chunksize=min(max(len(data), 1), chunk), cparams=cparams)
    for start in range(0, len(data), chunk):
        sc.append_data(data[start : start + chunk])
    return bytes(sc.to_cframe())


#: the compressors inside a blosc2 frame (blosc2's own vocabulary, not codecs of this package)
INNER_CODECS = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")


def decompress_span(payload: bytes | memoryview, lo: int, hi: int, total: int, *, where: str = "") -> bytes:
    """Decoded bytes ``[lo, hi)`` of a cframe of ``total`` bytes: blosc2 decodes only the blocks of the chunks
    holding them (a range reaching into a last, partial element is cut from the whole frame)."""
    blosc2 = require("blosc2", f"{where}blosc2 decompression")
    try:
        sc = blosc2.schunk_from_cframe(payload, copy=False)
        if sc.nbytes != total:
            raise CodecError(f"{where}blosc2 frame holds {sc.nbytes} bytes, expected {total}")
        size = sc.typesize
        if -(-hi // size) * size > total:
            return decompress(payload, total, where=where)[lo:hi]
        data = bytes(sc.get_slice(lo // size, -(-hi // size)))
    except CodecError:
        raise
    except Exception as exc:
        raise CodecError(f"{where}blosc2 frame is corrupt: {exc}") from exc
    return data[lo % size : lo % size + hi - lo]


class Blosc2(Codec):
    """Blosc2 contiguous frames; a byte range decodes from the blocks that hold it."""

    name = "blosc2"
    capabilities = Capabilities(partial_decode=True)
    params = (
        Param("codec", str, "lz4", choices=INNER_CODECS, doc="the compressor inside the frame"),
        Param("clevel", int, 5, bounds=(0, 9), doc="compression level"),
        Param("typesize", int, bounds=(1, 255), doc="element size for the shuffle", derived=True),
        Param("bitshuffle", bool, False, doc="bit shuffle instead of byte shuffle", derived=True),
    )

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return decompress(_view(payload), expected, where=where)

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        if base:  # stored_span is the whole frame: its chunk offsets sit in its trailer
            raise CodecError(f"{where}blosc2 decodes a range from its whole frame, got bytes from {base} on")
        return decompress_span(_view(piece), lo, hi, total, where=where)

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        p = self.resolve(params)
        out = compress(
            _view(data),
            codec=p["codec"],
            clevel=p["clevel"],
            typesize=p.get("typesize", 1),
            bitshuffle=p["bitshuffle"],
        )
        return out, {}


def _view(data: Buffer) -> bytes | memoryview:
    return data.data.cast("B") if isinstance(data, np.ndarray) else data


CODEC = Blosc2()
