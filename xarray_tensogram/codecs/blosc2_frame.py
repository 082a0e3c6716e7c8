"""Reading part of a blosc2 cframe over a network: only the bytes that a decoded byte range needs.

A cframe's chunk offsets sit in an offsets chunk near its end, each chunk's block offsets (``bstarts``) right
after its 32-byte header (c-blosc2's README_CFRAME_FORMAT and README_CHUNK_FORMAT), so the reads depend on
each other: the frame header, the offsets chunk and trailer, the headers of the chunks holding the range, their
blocks. The pieces are laid into a zero buffer of the frame's size, from which blosc2 itself decodes the range.
A chunk whose layout this module does not know (a dictionary, stored raw, other flags) is fetched whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..errors import CodecError
from .base import Fetch

__all__ = ["sparse_frame"]

#: bytes fetched first: the fixed header fields and, usually, the whole header with its metalayers
HEAD = 512
#: a chunk's header (its extended form, which every blosc2 frame chunk has)
CHUNK_HEADER = 32
#: bytes fetched per chunk header: the header and up to 1024 block offsets
CHUNK_PROBE = CHUNK_HEADER + 4 * 1024
_MAGIC = b"b2frame\x00"


def _be(data: np.ndarray, at: int, n: int) -> int:
    return int.from_bytes(data[at : at + n].tobytes(), "big")


class _Frame:
    """The frame's pieces fetched so far, over a zero buffer of its stored size."""

    def __init__(self, fetch: Fetch, stored: int, where: str) -> None:
        self.fetch, self.stored, self.where = fetch, stored, where
        self.buf = np.zeros(stored, dtype=np.uint8)  # pages never written are never touched

    def get(self, spans: list[tuple[int, int]]) -> None:
        """Fetch ``spans`` (clipped to the frame) into the buffer."""
        spans = [(a, min(b, self.stored) - a) for a, b in sorted(set(spans)) if a < min(b, self.stored)]
        for (a, n), part in zip(spans, self.fetch(spans), strict=True):
            self.buf[a : a + n] = np.frombuffer(part, dtype=np.uint8, count=n)

    def header(self) -> tuple[int, int, int] | None:
        """Fetch the frame header: its size, the chunk section's size and the chunks' decoded size (None:
        chunks of variable size, or not a contiguous frame)."""
        self.get([(0, HEAD)])
        head = self.buf
        if self.stored < 0x3E or bytes(head[2:10]) != _MAGIC:
            raise self.fail("no b2frame header")
        header_size, frame_size, cbytes = _be(head, 0x0B, 4), _be(head, 0x10, 8), _be(head, 0x27, 8)
        if frame_size != self.stored or not 0x3E <= header_size <= header_size + cbytes < self.stored:
            raise self.fail(f"header says {frame_size} bytes, {header_size}-byte header, {cbytes} in chunks")
        chunksize = _be(head, 0x3A, 4)
        if head[0x19] & 0x40 or head[0x1A] & 0x0F or chunksize <= 0:
            return None
        if header_size > HEAD:
            self.get([(HEAD, header_size)])
        return header_size, cbytes, chunksize

    def fail(self, what: str) -> CodecError:
        return CodecError(f"{self.where}blosc2 frame is corrupt: {what}")


def sparse_frame(
    fetch: Fetch,
    ranges: Sequence[tuple[int, int]],
    total: int,
    stored: int,
    decompress: Callable[[bytes], bytes],
    where: str = "",
) -> np.ndarray | None:
    """The frame's bytes as far as decoding the decoded byte ``ranges`` (of ``total``) needs them, fetched
    through ``fetch``, with zeros elsewhere; None when the frame's chunks are not of one fixed size.
    ``decompress`` decodes one blosc2 chunk (the offsets chunk)."""
    f = _Frame(fetch, stored, where)
    layout = f.header()
    if layout is None:
        return None
    header_size, cbytes, chunksize = layout
    f.get([(header_size + cbytes, stored)])  # the offsets chunk and the trailer
    try:
        offsets = np.frombuffer(decompress(f.buf[header_size + cbytes :].tobytes()), dtype="<i8")
    except Exception as exc:
        raise f.fail(f"its offsets chunk does not decode ({exc})") from exc
    if len(offsets) != -(-total // chunksize):
        return None
    wanted = sorted({0} | {i for lo, hi in ranges if hi > lo for i in range(lo // chunksize, -(-hi // chunksize))})
    wanted = wanted if len(offsets) else []
    starts = {i: header_size + int(offsets[i]) for i in wanted if offsets[i] >= 0}  # < 0: a run of one value
    if any(not header_size <= s < header_size + cbytes for s in starts.values()):
        raise f.fail("a chunk offset lies outside its chunk section")
    f.get([(s, s + CHUNK_PROBE) for s in starts.values()])
    f.get([span for i, s in starts.items() for span in _block_spans(f, s, i * chunksize, ranges)])
    return f.buf


def _block_spans(f: _Frame, start: int, first: int, ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Frame spans of the blocks of the chunk at ``start`` (decoded bytes from ``first`` on) that ``ranges``
    reach: the whole chunk where its layout is not plain blocks of compressed streams."""
    h = f.buf[start : start + CHUNK_HEADER]
    nbytes, blocksize, cbytes = (int(v) for v in h[4:16].view("<u4"))
    if start + cbytes > f.stored or cbytes < CHUNK_HEADER:
        raise f.fail(f"a chunk of {cbytes} bytes at {start} passes the frame's end")
    if h[31] & 0x70:  # a chunk of one repeated value: its header is all there is
        return []
    nblocks = -(-nbytes // blocksize) if blocksize > 0 else 0
    table = CHUNK_HEADER + 4 * nblocks
    if h[2] & 0x02 or h[31] & 0x0F or not nblocks or table > cbytes:  # stored raw, a dictionary, other flags
        return [(start, start + cbytes)]
    if table > CHUNK_PROBE:
        f.get([(start + CHUNK_PROBE, start + table)])
    bstarts = np.frombuffer(f.buf[start + CHUNK_HEADER : start + table].tobytes(), dtype="<i4").astype(np.int64)
    if bstarts.min() < table or bstarts.max() >= cbytes:
        raise f.fail(f"a block offset of the chunk at {start} lies outside it")
    ends = np.sort(np.append(bstarts, cbytes))
    spans = []
    for lo, hi in ranges:
        a, b = max(lo - first, 0), min(hi - first, nbytes)
        for j in range(a // blocksize, -(-b // blocksize)) if b > a else ():
            s = int(bstarts[j])
            spans.append((start + s, start + int(ends[np.searchsorted(ends, s, side="right")])))
    return spans
