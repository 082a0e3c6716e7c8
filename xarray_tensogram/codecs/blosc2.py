"""Blosc2 contiguous frames (cframes): decoded whole, checked against the size the container promises."""

from __future__ import annotations

from ..errors import CodecError
from .limits import check_size
from .registry import require

__all__ = ["compress", "decompress"]

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
