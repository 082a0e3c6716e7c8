"""zstd with output bounded by the size the container promises.

The reference writers of all three formats emit frames without a content size, so a one-shot ``decompress``
cannot size its output: we stream-decode into a buffer of exactly the promised size and fail if the stream
wants to produce more (a payload claiming to expand to 100 GB never allocates it).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import zstandard

from ..errors import CodecError
from .base import Buffer, Capabilities, Codec, Param, as_bytes, out_bytes

__all__ = [
    "BLOCK_MAX",
    "CODEC",
    "compress",
    "decompress",
    "decompress_capped",
    "decompress_into",
    "fits_output_bound",
    "frames_bound",
    "max_output",
]

_FRAME_MAGIC = 0xFD2FB528
#: largest zstd block (the format's limit on what one block decodes to)
BLOCK_MAX = 128 * 1024
#: smallest stored block that can decode to BLOCK_MAX bytes (a 3-byte header and one RLE byte)
_MIN_BLOCK_BYTES = 4


def max_output(stored_length: int) -> int:
    """The most ``stored_length`` bytes of zstd can decode to, known before reading them (every format checks
    a declared decoded size against it before allocating; :func:`frames_bound` refines it from the bytes)."""
    return (stored_length // _MIN_BLOCK_BYTES + 1) * BLOCK_MAX


def fits_output_bound(decoded: Any, stored: Any) -> Any:
    """``decoded <= max_output(stored)``, element-wise for ``uint64`` arrays (or integers) without overflowing."""
    decoded, block = np.asarray(decoded, dtype=np.uint64), np.uint64(BLOCK_MAX)
    blocks, quarter = decoded // block, np.asarray(stored, dtype=np.uint64) // np.uint64(_MIN_BLOCK_BYTES)
    return (blocks <= quarter) | ((blocks == quarter + np.uint64(1)) & (decoded % block == 0))


def frames_bound(payload: bytes | memoryview, *, where: str = "") -> int:
    """The most concatenated zstd frames can decode to, from their frame and block headers: a descriptor that
    promises more is refused before anything is allocated. :class:`CodecError` for a truncated or malformed
    structure (python-zstandard's streaming reader silently accepts a frame whose last block never comes)."""
    buf = memoryview(payload).cast("B")
    if not buf:
        raise CodecError(f"{where}empty zstd stream")
    pos = bound = 0
    while pos < len(buf):
        magic = _header(buf, pos, 4, "frame magic", where)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame: a size, then that many bytes
            pos += 8 + _header(buf, pos + 4, 4, "skippable frame size", where)
        elif magic == _FRAME_MAGIC:
            pos, blocks = _frame(buf, pos + 4, where)
            bound += blocks
        else:
            raise CodecError(f"{where}byte {pos}: not a zstd frame (magic {magic:08x})")
    if pos > len(buf):
        raise CodecError(f"{where}zstd stream runs past the end of the payload (truncated stream)")
    return bound


def _frame(buf: memoryview, pos: int, where: str) -> tuple[int, int]:
    """The end of the frame whose header starts at ``pos``, and the most its blocks decode to."""
    fhd = _header(buf, pos, 1, "frame header", where)
    if fhd & 0x08:
        raise CodecError(f"{where}zstd frame header has the reserved bit set")
    single = (fhd >> 5) & 1
    pos += 2 - single + (0, 1, 2, 4)[fhd & 3] + (single, 2, 4, 8)[fhd >> 6]
    bound = last = 0
    while not last:
        bh = _header(buf, pos, 3, "block header", where)
        last, btype, bsize = bh & 1, (bh >> 1) & 3, bh >> 3
        if btype == 3 or (btype == 2 and bsize > BLOCK_MAX):
            raise CodecError(f"{where}zstd block at byte {pos} is of reserved type or over the format's 128 KiB")
        pos += 3 + (1 if btype == 1 else bsize)  # an RLE block stores one byte
        bound += BLOCK_MAX if btype == 2 else bsize
    return pos + 4 * ((fhd >> 2) & 1), bound  # the optional 4-byte checksum


def _header(buf: memoryview, pos: int, width: int, what: str, where: str) -> int:
    """The little-endian integer of ``width`` bytes at ``pos``; CodecError when the stream ends first."""
    if pos + width > len(buf):
        raise CodecError(f"{where}zstd stream truncated at byte {pos} ({what} expected)")
    return int.from_bytes(buf[pos : pos + width], "little")


#: a thread keeps its decompressor only while the frames it decodes need at most this much window
_KEEP_WINDOW = 8 << 20
_THREAD = threading.local()


def _decompressor(payload: bytes | memoryview) -> zstandard.ZstdDecompressor:
    """This thread's decompressor (they are not thread-safe), reused from one chunk to the next: a fresh one
    allocates its context and window buffers, about 10 µs per 256 KiB tile. Not kept after a frame whose window
    passes ``_KEEP_WINDOW`` (no thread holds a large buffer for good); made again when
    ``zstandard.ZstdDecompressor`` was replaced (the benchmarks time its calls that way)."""
    cls = zstandard.ZstdDecompressor
    kept = getattr(_THREAD, "decompressor", None)
    if kept is None or type(kept) is not cls:
        _THREAD.decompressor = kept = cls()
    try:
        window = zstandard.get_frame_parameters(payload).window_size
    except zstandard.ZstdError:
        window = _KEEP_WINDOW + 1  # not a frame header: the decoder reports it
    if window > _KEEP_WINDOW:
        _THREAD.decompressor = None
    return kept


def _fill(payload: bytes | memoryview, out: np.ndarray, where: str, *, exact: bool) -> int:
    """Stream-decode into ``out`` until it is full; with ``exact``, the stream must end there (else refused)."""
    got, extra = 0, b""
    try:
        with _decompressor(payload).stream_reader(payload, read_across_frames=True) as reader:
            view = out.data  # the array's own buffer: readinto fills it in place
            while got < out.size:
                n = reader.readinto(view[got:])
                if n == 0:
                    break
                got += n
            if exact and got == out.size:
                extra = reader.read(1)
    except zstandard.ZstdError as exc:
        raise CodecError(f"{where}zstd stream is corrupt or truncated: {exc}") from exc
    if exact and (got != out.size or extra):
        more = " or more" if extra else ""
        raise CodecError(f"{where}zstd stream decodes to {got + len(extra)}{more} bytes, expected exactly {out.size}")
    return got


def decompress(
    payload: bytes | memoryview, expected_size: int, *, where: str = "", prefix: int | None = None
) -> np.ndarray:
    """Concatenated zstd frames decoded into exactly ``expected_size`` bytes, a writable ``uint8`` array (only the
    first ``prefix`` of them, when given: the rest of the stream is then not checked). :class:`CodecError` when
    the stream is corrupt, truncated, decodes to another size, or cannot hold that size (checked first, so
    100 GB promised by a kilobyte are never allocated)."""
    if expected_size < 0:
        raise CodecError(f"{where}negative decoded size {expected_size}")
    _check_bound(payload, expected_size, where)
    out = np.empty(expected_size if prefix is None else prefix, dtype=np.uint8)
    got = _fill(payload, out, where, exact=prefix is None)
    if got != out.size:
        raise CodecError(f"{where}zstd stream ends after {got} bytes, {prefix} needed")
    return out


def decompress_into(payload: bytes | memoryview, out: np.ndarray, *, where: str = "") -> None:
    """:func:`decompress` straight into ``out`` (C-contiguous, any dtype), which the stream must fill exactly."""
    flat = out_bytes(out)
    _check_bound(payload, flat.size, where)
    _fill(payload, flat, where, exact=True)


def _check_bound(payload: bytes | memoryview, expected_size: int, where: str) -> None:
    bound = frames_bound(payload, where=where)
    if expected_size > bound:
        raise CodecError(f"{where}zstd stream can decode to at most {bound} bytes, but {expected_size} are expected")


def decompress_capped(payload: bytes | memoryview, cap: int, *, where: str = "") -> np.ndarray:
    """Decode a stream whose decoded size nobody declares, refusing to produce more than ``cap`` bytes."""
    chunks, total = [], 0
    try:
        with _decompressor(payload).stream_reader(payload, read_across_frames=True) as reader:
            for block in iter(lambda: reader.read(1 << 20), b""):
                total += len(block)
                if total > cap:
                    raise CodecError(f"{where}zstd stream decodes to more than the {cap} bytes the tensor can hold")
                chunks.append(block)
    except zstandard.ZstdError as exc:
        raise CodecError(f"{where}zstd stream is corrupt or truncated: {exc}") from exc
    return np.frombuffer(b"".join(chunks), dtype=np.uint8)


def compress(data: bytes | memoryview, level: int = 3) -> bytes:
    """One streaming zstd frame without content size (what the reference writers emit)."""
    cobj = zstandard.ZstdCompressor(level=level).compressobj()
    return cobj.compress(data) + cobj.flush()


class Zstd(Codec):
    """zstd frames (without content size, as the reference writers emit them)."""

    name = "zstd"
    params = (Param("level", int, 3, bounds=(-131072, 22), doc="compression level"),)
    # payloads reach it through a per-thread buffer rather than the memory map (see formats._chunks.READ_MAX)
    capabilities = Capabilities(decode_into=True, prefix_decode=True, mapped_input=False)

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return decompress(as_bytes(payload), expected, where=where)

    def decode_into(self, payload: Buffer, out: np.ndarray, params: Mapping[str, Any], where: str = "") -> None:
        decompress_into(as_bytes(payload), out, where=where)

    def decode_prefix(
        self, payload: Buffer, prefix: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        """Leading rows of a compressed object; as in the reference's range decode, the rest is not checked."""
        return decompress(as_bytes(payload), total, where=where, prefix=prefix)

    def max_output(self, stored: int) -> int | None:
        return max_output(stored)

    def fits_output(self, decoded: np.ndarray, stored: np.ndarray) -> np.ndarray:
        return np.asarray(fits_output_bound(decoded, stored))

    def decode_capped(self, payload: Buffer, cap: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return decompress_capped(as_bytes(payload), cap, where=where)

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        return compress(as_bytes(data), int(params.get("level", 3))), {}

    def zarr(self, params: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        return [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}]


CODEC = Zstd()
