"""zstd with output bounded by the size the container promises.

The reference writers of all three formats emit frames without a content size,
so a one-shot ``decompress`` cannot size its output. We stream-decode into a
buffer of exactly the promised size and fail if the stream wants to produce
more: a payload claiming to expand to 100 GB never allocates it.
"""

from __future__ import annotations

import numpy as np
import zstandard

from ..errors import CodecError

__all__ = ["decompress", "compress"]

def decompress(payload: bytes | memoryview, expected_size: int, *, where: str = "") -> np.ndarray:
    """Decode one or more concatenated zstd frames into exactly ``expected_size`` bytes.

    Returns a writable ``uint8`` array. Raises :class:`CodecError` when the stream is
    corrupt, truncated, or decodes to a different size.
    """
    out = np.empty(expected_size, dtype=np.uint8)
    if expected_size == 0 and len(payload) == 0:
        return out
    dctx = zstandard.ZstdDecompressor()
    got = 0
    try:
        with dctx.stream_reader(payload, read_across_frames=True) as reader:
            view = memoryview(out)
            while got < expected_size:
                n = reader.readinto(view[got:])
                if n == 0:
                    break
                got += n
            extra = reader.read(1)
    except zstandard.ZstdError as exc:
        raise CodecError(f"{where}zstd stream is corrupt or truncated: {exc}") from exc
    if got != expected_size or extra:
        more = " or more" if extra else ""
        raise CodecError(
            f"{where}zstd stream decodes to {got + len(extra)}{more} bytes, expected exactly {expected_size}"
        )
    return out


def compress(data: bytes | memoryview, level: int = 3) -> bytes:
    """One streaming zstd frame without content size (what the reference writers emit)."""
    cobj = zstandard.ZstdCompressor(level=level).compressobj()
    return cobj.compress(data) + cobj.flush()
