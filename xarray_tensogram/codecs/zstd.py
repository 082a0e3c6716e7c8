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

#: the output buffer starts at this multiple of the payload size (or 256 KiB) and doubles as output arrives
_START_RATIO = 8
_START_MIN = 256 << 10


def decompress(payload: bytes | memoryview, expected_size: int, *, where: str = "") -> np.ndarray:
    """Decode one or more concatenated zstd frames into exactly ``expected_size`` bytes.

    Returns a writable ``uint8`` array. Raises :class:`CodecError` when the stream is
    corrupt, truncated, or decodes to a different size. Memory follows what the
    stream really produces: a header promising 100 GB allocates nothing like it
    unless the stream actually expands that far.
    """
    if expected_size < 0:
        raise CodecError(f"{where}negative decoded size {expected_size}")
    capacity = min(expected_size, max(_START_MIN, _START_RATIO * len(payload)))
    out = np.empty(capacity, dtype=np.uint8)
    got = 0
    extra = b""
    try:
        with zstandard.ZstdDecompressor().stream_reader(payload, read_across_frames=True) as reader:
            while got < expected_size:
                if got == capacity:
                    capacity = min(expected_size, capacity * 2)
                    grown = np.empty(capacity, dtype=np.uint8)
                    grown[:got] = out[:got]
                    out = grown
                n = reader.readinto(memoryview(out)[got:capacity])
                if n == 0:
                    break
                got += n
            if got == expected_size:
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
