"""Blosc2 contiguous frames (cframes): decoded whole, checked against the size the container promises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import CodecError
from .base import Buffer, Capabilities, Codec, Fetch, Param, as_bytes, out_bytes
from .blosc2_frame import sparse_frame
from .optional import require

__all__ = ["CODEC", "INNER_CODECS", "MAX_CHUNK"]

#: largest chunk appended to a super-chunk at once (blosc2 chunks are limited to 2 GiB)
MAX_CHUNK = 256 * 1024 * 1024
#: the compressors inside a blosc2 frame (blosc2's own vocabulary, not codecs of this package)
INNER_CODECS = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")


def _frame(payload: bytes | memoryview, expected: int, where: str) -> Any:
    """The super-chunk over the frame's bytes (not copied), refused unless it holds ``expected`` bytes."""
    blosc2 = require("blosc2", f"{where}blosc2 decompression")
    try:
        sc = blosc2.schunk_from_cframe(payload, copy=False)
    except Exception as exc:
        raise CodecError(f"{where}blosc2 frame is corrupt: {exc}") from exc
    if sc.nbytes != expected:
        raise CodecError(f"{where}blosc2 frame holds {sc.nbytes} bytes, expected {expected}")
    return sc


def _fill(payload: bytes | memoryview, expected: int, where: str, out: memoryview | None = None) -> memoryview:
    """The frame's ``expected`` bytes, each chunk decompressed in place into ``out`` (else a new buffer, made
    once the frame's own size is checked) from the frame's own bytes: no copy of the frame, none of the
    output; the chunks must fill it exactly."""
    sc = _frame(payload, expected, where)
    blosc2 = require("blosc2", f"{where}blosc2 decompression")
    out = memoryview(bytearray(expected)) if out is None else out
    done = 0
    try:
        for i in range(sc.nchunks):
            size = blosc2.get_cbuffer_sizes(sc.get_lazychunk(i))[0]  # from the chunk's 32-byte header
            if done + size > expected:
                raise CodecError(f"{where}blosc2 frame chunks hold more than the {expected} bytes it promises")
            if size:  # blosc2 writes exactly the size the header gives, or fails
                sc.decompress_chunk(i, out[done : done + size])
            done += size
    except CodecError:
        raise
    except Exception as exc:
        raise CodecError(f"{where}blosc2 frame is corrupt: {exc}") from exc
    if done != expected:
        raise CodecError(f"{where}blosc2 payload decodes to {done} bytes, expected {expected}")
    return out


def _span(payload: bytes | memoryview, lo: int, hi: int, total: int, *, whole: bool, where: str) -> bytes:
    """Decoded bytes ``[lo, hi)`` of a cframe of ``total`` bytes: blosc2 decodes only the blocks of the chunks
    holding them (a range reaching into a last, partial element is cut from the whole frame, or refused
    without ``whole``: the frame holds only the blocks of the range)."""
    sc = _frame(payload, total, where)
    size = sc.typesize
    if -(-hi // size) * size > total:
        if not whole:
            raise CodecError(f"{where}blosc2 frame of {total} bytes does not hold whole {size}-byte items")
        return bytes(_fill(payload, total, where)[lo:hi])
    try:
        data = bytes(sc.get_slice(lo // size, -(-hi // size)))
    except Exception as exc:
        raise CodecError(f"{where}blosc2 frame is corrupt: {exc}") from exc
    return data[lo % size : lo % size + hi - lo]


class Blosc2(Codec):
    """Blosc2 contiguous frames; a byte range decodes from the blocks that hold it."""

    name = "blosc2"
    capabilities = Capabilities(partial_decode=True, decode_into=True)
    params = (
        Param("codec", str, "lz4", choices=INNER_CODECS, doc="the compressor inside the frame"),
        Param("clevel", int, 5, bounds=(0, 9), doc="compression level"),
        Param("typesize", int, bounds=(1, 255), doc="element size for the shuffle", derived=True),
        Param("bitshuffle", bool, False, doc="bit shuffle instead of byte shuffle", derived=True),
    )

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return _fill(as_bytes(payload), expected, where)

    def decode_into(self, payload: Buffer, out: np.ndarray, params: Mapping[str, Any], where: str = "") -> None:
        _fill(as_bytes(payload), out.nbytes, where, out_bytes(out).data)

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        if base:  # stored_span is the whole frame: its chunk offsets sit in its trailer
            raise CodecError(f"{where}blosc2 decodes a range from its whole frame, got bytes from {base} on")
        return _span(as_bytes(piece), lo, hi, total, whole=True, where=where)

    def read_ranges(
        self,
        fetch: Fetch,
        ranges: Sequence[tuple[int, int]],
        total: int,
        stored: int,
        params: Mapping[str, Any],
        where: str = "",
    ) -> list[Buffer] | None:
        blosc2 = require("blosc2", f"{where}blosc2 decompression")
        frame = sparse_frame(fetch, ranges, total, stored, blosc2.decompress, where)  # index first, then blocks
        if frame is None:
            return None
        return [_span(frame.data, lo, hi, total, whole=False, where=where) for lo, hi in ranges]

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """One single-threaded cframe, in chunks of at most :data:`MAX_CHUNK` bytes (whole elements);
        ``bitshuffle`` replaces blosc2's default byte shuffle with a bit shuffle (as bitmaps want)."""
        p, raw = self.resolve(params), as_bytes(data)
        blosc2 = require("blosc2", "blosc2 compression")
        typesize = p.get("typesize", 1)
        extra = {"filters": [blosc2.Filter.BITSHUFFLE] + [blosc2.Filter.NOFILTER] * 5} if p["bitshuffle"] else {}
        cparams = blosc2.CParams(
            codec=getattr(blosc2.Codec, p["codec"].upper()),
            clevel=p["clevel"],
            typesize=typesize,
            nthreads=1,
            splitmode=blosc2.SplitMode.FORWARD_COMPAT_SPLIT,
            **extra,
        )
        chunk = MAX_CHUNK - MAX_CHUNK % typesize
        sc = blosc2.SChunk(chunksize=min(max(len(raw), 1), chunk), cparams=cparams)
        for start in range(0, len(raw), chunk):
            sc.append_data(raw[start : start + chunk])
        return bytes(sc.to_cframe()), {}


CODEC = Blosc2()
