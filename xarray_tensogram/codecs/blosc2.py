"""Blosc2 contiguous frames (cframes): decoded whole, checked against the size the container promises."""

from __future__ import annotations

from ..errors import CodecError
from .limits import check_size
from .registry import require

__all__ = ["decompress"]


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
