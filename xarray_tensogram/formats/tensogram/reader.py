"""Tensogram v3 reader: scan messages, read their metadata and index, decode objects lazily.

Opening a file reads only preambles, postambles, metadata, index and hash
frames (and, for streaming messages without a footer index, the 16-byte
header of every frame while walking them). Descriptors are read on first use
and cached; an object's payload is read only when its values are asked for,
and for uncompressed pipelines only the byte range of the requested rows.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ...catalog import ArraySpec
from ...codecs import cbor
from ...codecs.checksums import xxh3_64
from ...errors import (
    CorruptMessageWarning,
    CorruptFileError,
    IntegrityError,
    LimitExceededError,
    MetadataError,
    MissingHashError,
    NotATensorFileError,
    TruncatedFileError,
    UnsupportedError,
    XarrayTensogramError,
    describe,
)
from ...io import ByteSource, SourceLike, open_source
from ..base import FormatFile
from . import pipeline
from .dtypes import DTYPES, numpy_dtype
from .framing import (
    DATA_FRAME,
    END_MAGIC,
    FLAG_CBOR_AFTER_PAYLOAD,
    FLAG_HASH_PRESENT,
    FRAME_END,
    FRAME_HEADER,
    FRAME_START,
    INDEX_TYPES,
    MAGIC,
    METADATA_TYPES,
    MIN_MESSAGE,
    POSTAMBLE,
    PREAMBLE,
    PRECEDER_FRAME,
    FrameHeader,
    Preamble,
    align8,
    parse_frame_header,
    parse_postamble,
    parse_preamble,
    phase_of,
)

__all__ = ["TensogramFile", "Message", "ObjectRef", "open_tensogram", "CorruptMessageWarning"]

#: metadata and index frames larger than this are refused (a safety limit, not a format rule)
MAX_METADATA_FRAME = 64 * 1024 * 1024
SCAN_BLOCK = 1 << 20


@dataclass
class ObjectRef:
    """Where one data object lives: its data frame (absolute offset, length) and any preceder entry."""

    frame_offset: int
    frame_length: int
    preceder: dict | None = None


@dataclass
class FrameLayout:
    """What a data frame's header, footer and descriptor say (read once, then cached)."""

    descriptor: dict
    region_start: int  # absolute offset of the payload region
    region_length: int
    hash_present: bool
    hash_value: int
    body_start: int
    body_length: int


def _where(msg_index: int, obj: int | None = None) -> str:
    return f"message {msg_index}" + (f", object {obj}" if obj is not None else "")


class _Window:
    """Serves small metadata reads from one larger block (few requests for remote sources)."""

    def __init__(self, source: ByteSource, lookahead: int) -> None:
        self.source = source
        self.lookahead = lookahead
        self.blocks: list[tuple[int, bytes]] = []  # the last two blocks read (header and postamble)

    def read(self, offset: int, length: int, what: str) -> bytes:
        end = offset + length
        for start, data in self.blocks:
            if start <= offset and end <= start + len(data):
                return data[offset - start : end - start]
        want = max(length, self.lookahead)
        want = min(want, self.source.size - offset) if offset < self.source.size else length
        if want < length:
            want = length
        block = self.source.read(offset, want, what=what)
        self.blocks = [(offset, block)] + self.blocks[:1]
        return block[:length]


def read_frame_layout(source: ByteSource, ref: ObjectRef, where: str, frame_bytes: bytes | None = None) -> FrameLayout:
    """Read a data frame's header and footer and parse its descriptor."""
    off, length = ref.frame_offset, ref.frame_length
    if length < 36:
        raise CorruptFileError(f"{describe(source.name, where, off)}data frame length {length} is below the minimum 36")
    if frame_bytes is None:
        # header and tail in one read when the frame is small, else two reads
        if length <= 8192:
            frame_bytes = source.read(off, length, what="data frame")
        else:
            head = source.read(off, FRAME_HEADER, what="data frame header")
            tail_len = min(length - FRAME_HEADER, 4096)
            tail = source.read(off + length - tail_len, tail_len, what="data frame footer")
            frame_bytes = None
    if frame_bytes is not None:
        head = bytes(frame_bytes[:FRAME_HEADER])
        tail_len = min(length - FRAME_HEADER, 4096)
        tail = bytes(frame_bytes[length - tail_len :])
    hdr = parse_frame_header(head)
    if hdr.marker != FRAME_START or hdr.frame_type != DATA_FRAME:
        raise CorruptFileError(
            f"{describe(source.name, where, off)}expected a data frame (FR, type 9), found {hdr.marker!r} type {hdr.frame_type}"
        )
    if hdr.length != length:
        raise CorruptFileError(
            f"{describe(source.name, where, off)}data frame header says {hdr.length} bytes, the index says {length}"
        )
    if tail[-4:] != FRAME_END:
        raise CorruptFileError(f"{describe(source.name, where, off + length - 4)}data frame does not end with ENDF")
    cbor_offset = int.from_bytes(tail[-20:-12], "big")
    hash_value = int.from_bytes(tail[-12:-4], "big")
    if not 16 <= cbor_offset <= length - 20:
        raise CorruptFileError(
            f"{describe(source.name, where, off + length - 20)}cbor_offset {cbor_offset} outside [16, {length - 20}]"
        )
    tail_start = length - tail_len  # frame-relative offset of tail[0]
    if hdr.flags & FLAG_CBOR_AFTER_PAYLOAD:
        desc_lo, desc_hi = cbor_offset, length - 20
        if frame_bytes is not None:
            desc_bytes = bytes(frame_bytes[desc_lo:desc_hi])
        elif desc_lo >= tail_start:
            desc_bytes = tail[desc_lo - tail_start : desc_hi - tail_start]
        else:
            desc_bytes = source.read(off + desc_lo, desc_hi - desc_lo, what="descriptor")
        descriptor = cbor.loads(desc_bytes, where=describe(source.name, where, off + desc_lo))
        region_start, region_length = off + 16, cbor_offset - 16
    else:
        body = bytes(frame_bytes[16 : length - 20]) if frame_bytes is not None else source.read(off + 16, length - 36, what="frame body")
        descriptor, used = cbor.loads_prefix(body, where=describe(source.name, where, off + 16))
        region_start, region_length = off + 16 + used, length - 36 - used
    descriptor = pipeline.validate_descriptor(descriptor, describe(source.name, where, off))
    return FrameLayout(
        descriptor=descriptor,
        region_start=region_start,
        region_length=region_length,
        hash_present=bool(hdr.flags & FLAG_HASH_PRESENT),
        hash_value=hash_value,
        body_start=off + 16,
        body_length=length - 36,
    )


@dataclass
class ObjectReader:
    """Picklable, thread-safe reader of one object; the lazy array's chunk reader for Tensogram.

    The chunk grid of an object is its row bands (``rows_per_chunk`` rows along the
    leading axis, the full extent elsewhere); ``rows_per_chunk = shape[0]`` means
    one chunk per object.
    """

    source: ByteSource
    ref: ObjectRef
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    rows_per_chunk: int = 0
    verify_hash: bool = False
    _layout: FrameLayout | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_layout"] = None
        return state

    def layout(self) -> FrameLayout:
        lay = self._layout
        if lay is None:
            lay = read_frame_layout(self.source, self.ref, self.where)
            self._check_geometry(lay.descriptor)
            self._layout = lay
        return lay

    def _check_geometry(self, desc: Mapping[str, Any]) -> None:
        shape = tuple(desc["shape"])
        if desc["dtype"] == "bitmask":
            shape = ((math.prod(shape) + 7) // 8,)
        if shape != self.shape or numpy_dtype(desc["dtype"]) != self.dtype and desc["encoding"] != "simple_packing":
            raise MetadataError(
                f"{describe(self.source.name, self.where)}descriptor says shape {list(desc['shape'])} dtype "
                f"{desc['dtype']}, the metadata promised {list(self.shape)} {self.dtype}"
            )

    def _fetch(self, offset: int, length: int, what: str) -> np.ndarray:
        """Bytes as a uint8 array: a read-only view of the memory map for local files (decoders copy out of
        it, so compressed payloads are never copied twice), else a fresh buffer."""
        view = self.source.view(offset, length)
        if view is not None:
            return np.frombuffer(view, dtype=np.uint8)
        return self.source.read_array(offset, length, what=what)

    def read_verified_frame(self) -> np.ndarray:
        """Read the whole data frame and check its xxh3 before anything in it is trusted."""
        off, length = self.ref.frame_offset, self.ref.frame_length
        w = describe(self.source.name, self.where, off)
        if length < 36:
            raise CorruptFileError(f"{w}data frame length {length} is below the minimum 36")
        frame = self._fetch(off, length, "data frame")
        flags = int.from_bytes(bytes(frame[6:8]), "big")
        if not flags & FLAG_HASH_PRESENT:
            raise MissingHashError(f"{w}verify_hash requested but the data frame carries no hash")
        expected = int.from_bytes(bytes(frame[length - 12 : length - 4]), "big")
        actual = xxh3_64(memoryview(frame)[16 : length - 20])
        if actual != expected:
            raise IntegrityError(f"{w}xxh3 mismatch: frame says {expected:016x}, body hashes to {actual:016x}")
        return frame

    def read(self, rows: slice | None = None) -> np.ndarray:
        """The object's values, or only rows ``rows`` of its leading axis."""
        try:
            return self._read(rows)
        except MemoryError:
            raise LimitExceededError(
                f"{describe(self.source.name, self.where, self.ref.frame_offset)}decoding shape {list(self.shape)} "
                f"({self.dtype}) needs more memory than is available"
            ) from None

    def _read(self, rows: slice | None = None) -> np.ndarray:
        self.source.check_unchanged()
        partial = rows is not None and bool(self.shape) and rows.indices(self.shape[0])[:2] != (0, self.shape[0])
        if self.verify_hash or (self._layout is None and not partial and self.ref.frame_length <= (64 << 20)):
            # first touch (or verification): one read of the whole frame gives descriptor and payload together
            if self.verify_hash:
                frame = self.read_verified_frame()
            else:
                frame = self._fetch(self.ref.frame_offset, self.ref.frame_length, "data frame")
            lay = read_frame_layout(self.source, self.ref, self.where, frame_bytes=frame)
            self._check_geometry(lay.descriptor)
            self._layout = lay
            lo = lay.region_start - self.ref.frame_offset
            region = frame[lo : lo + lay.region_length]
            out = pipeline.decode_full(region, lay.descriptor, describe(self.source.name, self.where))
            return out if rows is None else out[rows]
        lay = self.layout()
        desc = lay.descriptor
        where = describe(self.source.name, self.where)
        if rows is not None and pipeline.supports_row_ranges(desc):
            start, stop, step = rows.indices(desc["shape"][0])
            if step == 1 and stop > start:
                payload_len, found = pipeline.split_masks(lay.region_length, desc, where)
                expected = pipeline.encoded_length(desc)
                if payload_len != expected:
                    raise CorruptFileError(f"{where}uncompressed payload is {payload_len} bytes, descriptor implies {expected}")
                lo, hi, bit_offset = pipeline.row_byte_range(desc, start, stop)
                ranges = [(lay.region_start + lo, hi - lo)]
                ranges += [(lay.region_start + o, n) for (o, n, _m, _p) in found.values()]
                parts = self.source.read_ranges(ranges, what="payload rows")
                masks = None
                if found:
                    count = pipeline.element_count(desc)
                    masks = {}
                    for (kind, (_o, _n, method, params)), blob in zip(found.items(), parts[1:]):
                        from ...codecs.masks import decode_mask

                        masks[kind] = decode_mask(method, blob, count, params, where=f"{where}mask {kind!r}: ")
                return pipeline.decode_rows(parts[0], desc, start, stop, bit_offset, masks, where)
        region = self._fetch(lay.region_start, lay.region_length, "payload")
        if rows is not None and pipeline.supports_leading_prefix(desc):
            start, stop, step = rows.indices(desc["shape"][0])
            if step == 1 and stop > start:
                # decompress only up to the last requested row (the stream's tail is not checked)
                from ...codecs.zstd import decompress_prefix

                hi = pipeline.row_byte_range(desc, 0, stop)[1]
                prefix = decompress_prefix(region, hi, pipeline.encoded_length(desc), where=where)
                return pipeline.decode_rows(prefix, desc, 0, stop, 0, None, where)[start:]
        out = pipeline.decode_full(region, desc, where)
        return out if rows is None else out[rows]

    def read_chunk(self, coords: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        if not self.shape:
            return self.read()
        band = self.rows_per_chunk or self.shape[0] or 1
        base = coords[0] * band
        rows = slice(base + region[0].start, base + region[0].stop)
        if rows.start == 0 and rows.stop == self.shape[0]:
            block = self.read()
        else:
            block = self.read(rows)
        rest = region[1:]
        if any(r != slice(0, n) for r, n in zip(rest, self.shape[1:])):
            block = block[(slice(None),) + rest]
        return block


class Message:
    """One Tensogram message: metadata, object locations and lazy access to descriptors and values."""

    def __init__(self, source: ByteSource, index: int, offset: int, length: int, preamble: Preamble,
                 metadata: dict, objects: list[ObjectRef]) -> None:
        self.source = source
        self.index = index
        self.offset = offset
        self.length = length
        self.preamble = preamble
        self._metadata = metadata
        self.objects = objects
        self._readers: list[ObjectReader | None] = [None] * len(objects)

    def __repr__(self) -> str:
        return f"<tensogram Message {self.index} at {self.offset} ({self.length} bytes, {len(self.objects)} objects)>"

    @property
    def metadata(self) -> dict:
        """Global metadata (``version``, ``base``, ``_extra_``, ``_reserved_``) after preceder merge."""
        return self._metadata

    @property
    def base(self) -> list[dict]:
        return self._metadata["base"]

    def __len__(self) -> int:
        return len(self.objects)

    def _reader(self, j: int) -> ObjectReader:
        if not 0 <= j < len(self.objects):
            raise IndexError(f"message {self.index} has {len(self.objects)} objects, no object {j}")
        r = self._readers[j]
        if r is None:
            shape, dtype = self.object_geometry(j)
            r = ObjectReader(self.source, self.objects[j], _where(self.index, j), shape, dtype)
            self._readers[j] = r
        return r

    def object_geometry(self, j: int) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of object ``j`` as decoded, from ``_reserved_.tensor`` when the encoder wrote it."""
        tensor = (self.base[j].get("_reserved_") or {}).get("tensor") if j < len(self.base) else None
        if isinstance(tensor, dict) and isinstance(tensor.get("shape"), list) and tensor.get("dtype") in DTYPES:
            desc = {"shape": tensor["shape"], "dtype": tensor["dtype"]}
            if all(isinstance(s, int) and s >= 0 for s in desc["shape"]) and len(desc["shape"]) <= pipeline.MAX_RANK:
                return self._geometry_of(desc)
        return self._geometry_of(self.descriptor(j))

    @staticmethod
    def _geometry_of(desc: Mapping[str, Any]) -> tuple[tuple[int, ...], np.dtype]:
        shape = tuple(int(s) for s in desc["shape"])
        if desc["dtype"] == "bitmask":
            return ((math.prod(shape) + 7) // 8,), np.dtype(np.uint8)
        if desc.get("encoding") == "simple_packing":
            return shape, np.dtype(np.float64)
        return shape, numpy_dtype(desc["dtype"])

    def descriptor(self, j: int) -> dict:
        """Descriptor of object ``j`` (read from its data frame on first use)."""
        if not 0 <= j < len(self.objects):
            raise IndexError(f"message {self.index} has {len(self.objects)} objects, no object {j}")
        r = self._readers[j]
        if r is not None:
            return r.layout().descriptor
        lay = read_frame_layout(self.source, self.objects[j], _where(self.index, j))
        return lay.descriptor

    @property
    def descriptors(self) -> list[dict]:
        """All descriptors (reads each data frame's footer and descriptor once)."""
        return [self.descriptor(j) for j in range(len(self.objects))]

    def read_object(self, j: int, *, verify_hash: bool = False, rows: slice | None = None) -> np.ndarray:
        """Decode object ``j``: shape from its descriptor, native byte order, NaN/Inf restored.

        ``rows`` selects a leading-axis range; for uncompressed, unfiltered objects only those
        bytes are read. With ``verify_hash=True`` the whole frame body is read and its xxh3
        checked first, even for a row range.
        """
        r = self._reader(j)
        if verify_hash:
            r = ObjectReader(r.source, r.ref, r.where, r.shape, r.dtype, verify_hash=True)
        return r.read(rows)

    def array_spec(self, j: int, *, verify_hash: bool = False, rows_per_chunk: int = 0) -> ArraySpec:
        """Lazy description of object ``j`` for the shared lazy array."""
        shape, dtype = self.object_geometry(j)
        reader = ObjectReader(self.source, self.objects[j], _where(self.index, j), shape, dtype,
                              rows_per_chunk=rows_per_chunk, verify_hash=verify_hash)
        if shape:
            chunks = ((rows_per_chunk or shape[0] or 1),) + shape[1:]
        else:
            chunks = ()
        return ArraySpec(shape, dtype, chunks, reader)


class TensogramFile(FormatFile[Message]):
    """A scanned Tensogram file: ``len(f)`` messages, ``f[i]``, iteration, context manager."""

    item_kind = "message"

    def __init__(self, source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None) -> None:
        self.source = open_source(source, storage_options)
        self.name = self.source.name
        self.strict = strict
        self.skipped: list[tuple[int, int, str]] = []  # (start, end, reason) of damaged ranges
        lookahead = 0 if type(self.source).__name__ in ("LocalFileSource", "BytesSource") else 65536
        self._window = _Window(self.source, lookahead)
        try:
            self.messages = self._scan()
        except BaseException:
            self.source.close()
            raise
        finally:
            self._window = None  # type: ignore[assignment]

    # -- container protocol (FormatFile): messages have no names, only positions --------------
    def _items(self) -> list[Message]:
        return self.messages

    def _item_name(self, item: Message) -> str | None:
        return None

    def __repr__(self) -> str:
        return f"<TensogramFile {self.name!r}: {len(self.messages)} messages>"

    # -- scanning -----------------------------------------------------------------------------
    def _read(self, offset: int, length: int, what: str) -> bytes:
        return self._window.read(offset, length, what)

    def _find_magic(self, start: int) -> int:
        """Offset of the next ``TENSOGRM`` at or after ``start``, or -1."""
        pos = start
        size = self.source.size
        while pos + len(MAGIC) <= size:
            n = min(SCAN_BLOCK, size - pos)
            block = self.source.read(pos, n, what="scan")
            k = block.find(MAGIC)
            if k >= 0:
                return pos + k
            if pos + n >= size:
                break
            pos += n - len(MAGIC) + 1
        return -1

    def _scan(self) -> list[Message]:
        """Split the file into messages (spec §6), skipping bytes between them.

        Bytes before or between messages that are not a message are skipped silently,
        as the reference scanner does; a message that starts with the magic but cannot
        be parsed is reported with a :class:`CorruptMessageWarning` (or raised with
        ``strict=True``) and scanning resumes at the next magic. Bytes after the last
        message are reported the same way: they are what an interrupted write or a
        cut copy leaves (a partial magic, a partial message), so data loss is never silent.
        """
        messages: list[Message] = []
        pos = 0
        self.source.check_unchanged()
        size = self.source.size
        if size == 0:
            raise NotATensorFileError(
                f"{describe(self.name, offset=0)}the file is empty (0 bytes), a Tensogram message needs {MIN_MESSAGE}"
            )
        if size < MIN_MESSAGE:
            head = self._read(0, min(size, len(MAGIC)), "magic")
            cls = TruncatedFileError if MAGIC.startswith(head) or head == MAGIC else NotATensorFileError
            raise cls(
                f"{describe(self.name, offset=0)}file truncated: a Tensogram message needs at least {MIN_MESSAGE} "
                f"bytes, this file has {size}"
                if cls is TruncatedFileError else
                f"{describe(self.name, offset=0)}no Tensogram message found (magic TENSOGRM missing) in {size} bytes"
            )
        while pos < size:
            if pos + len(MAGIC) > size or self._read(pos, len(MAGIC), "magic") != MAGIC:
                nxt = self._find_magic(pos)
                if nxt < 0:
                    if messages or self.skipped:
                        self._trailing(pos, size)
                    break
                pos = nxt
                continue
            try:
                if pos + MIN_MESSAGE > size:
                    raise TruncatedFileError(
                        f"{describe(self.name, _where(len(messages)), pos)}message truncated: a message needs at "
                        f"least {MIN_MESSAGE} bytes, the file ends {size - pos} bytes after its start"
                    )
                msg, end = self._parse_message(pos, len(messages))
            except XarrayTensogramError as exc:
                if self.strict:
                    raise
                nxt = self._find_magic(pos + 1)
                end = nxt if nxt >= 0 else size
                self._report(pos, end, str(exc))
                pos = end
                continue
            messages.append(msg)
            pos = end
        if not messages:
            if self.skipped:
                raise CorruptFileError(f"{describe(self.name)}no readable Tensogram message: {self.skipped[0][2]}")
            raise NotATensorFileError(f"{describe(self.name, offset=0)}no Tensogram message found (magic TENSOGRM missing)")
        return messages

    def _report(self, start: int, end: int, reason: str, what: str = "damaged message") -> None:
        self.skipped.append((start, end, reason))
        warnings.warn(f"{self.name}: skipped {what} at bytes {start}..{end}: {reason}", CorruptMessageWarning, stacklevel=4)

    def _trailing(self, start: int, size: int) -> None:
        """Report bytes ``start..size`` after the last message, which hold no message magic.

        A prefix of the magic means the file was cut inside the next message's preamble
        (:class:`TruncatedFileError`); anything else is trailing junk (:class:`CorruptFileError`).
        """
        n = size - start
        head = self._read(start, min(n, len(MAGIC)), "trailing bytes")
        where = describe(self.name, offset=start)
        if n < len(MAGIC) and MAGIC.startswith(head):
            exc: CorruptFileError = TruncatedFileError(
                f"{where}file truncated inside a message preamble: {n} bytes of the magic TENSOGRM are left, "
                f"a message needs at least {MIN_MESSAGE} bytes (bytes {start}..{size})"
            )
        else:
            exc = CorruptFileError(f"{where}{n} bytes after the last message are not a Tensogram message (bytes {start}..{size})")
        if self.strict:
            raise exc
        self._report(start, size, str(exc), what="trailing bytes")

    def _parse_message(self, pos: int, index: int) -> tuple[Message, int]:
        where = _where(index)
        size = self.source.size
        pre = parse_preamble(self._read(pos, PREAMBLE, "preamble"))
        if pre.version != 3:
            raise UnsupportedError(f"{describe(self.name, where, pos + 8)}wire version {pre.version}, only 3 is supported")
        total = pre.total_length
        if total:
            if total >= MIN_MESSAGE and pos + total > size:
                raise TruncatedFileError(
                    f"{describe(self.name, where, pos + 16)}message truncated: its preamble declares {total} bytes, "
                    f"the file ends {size - pos} bytes after its start"
                )
            if total < MIN_MESSAGE:
                raise CorruptFileError(
                    f"{describe(self.name, where, pos + 16)}total_length {total} is impossible here "
                    f"(minimum {MIN_MESSAGE}, {size - pos} bytes left in the file)"
                )
            post = self._read(pos + total - POSTAMBLE, POSTAMBLE, "postamble")
            first_footer, mirrored, end_magic = parse_postamble(post)
            if end_magic != END_MAGIC:
                raise CorruptFileError(f"{describe(self.name, where, pos + total - 8)}end magic 39277777 missing")
            if mirrored not in (0, total):
                raise CorruptFileError(
                    f"{describe(self.name, where, pos + total - 16)}postamble total_length {mirrored} != preamble {total}"
                )
            return self._walk_frames(pos, index, pre, pos + total - POSTAMBLE, first_footer)
        return self._walk_frames(pos, index, pre, None, None)

    def _walk_frames(self, pos: int, index: int, pre: Preamble, body_end: int | None,
                     first_footer: int | None) -> tuple[Message, int]:
        """Walk header frames; use an index to jump over data frames, else walk them too."""
        where = _where(index)
        size = self.source.size
        limit = body_end if body_end is not None else size - POSTAMBLE
        cur = pos + PREAMBLE
        phase = 0
        metadata: Any = None
        index_map: dict | None = None
        data: list[ObjectRef] = []
        pending_preceder: dict | None = None
        jumped = False  # data frames taken from the index rather than walked
        while True:
            # step over padding to the next FR (the reference steps byte by byte)
            if cur + FRAME_HEADER > limit:
                break
            hdr_bytes = self._read(cur, FRAME_HEADER, "frame header")
            if hdr_bytes[:2] != FRAME_START:
                nxt = cur + 1
                if body_end is None:
                    break  # streaming without a length: the postamble follows the frames
                cur = nxt
                continue
            hdr = parse_frame_header(hdr_bytes)
            ph = phase_of(hdr.frame_type)
            if ph < 0 or hdr.frame_type == 4:
                raise CorruptFileError(f"{describe(self.name, where, cur)}unknown frame type {hdr.frame_type}")
            if hdr.length < hdr.min_length or cur + hdr.length > limit:
                raise CorruptFileError(
                    f"{describe(self.name, where, cur + 8)}frame length {hdr.length} runs past the message end "
                    f"or is below the minimum {hdr.min_length}"
                )
            if ph < phase:
                raise CorruptFileError(
                    f"{describe(self.name, where, cur)}frame type {hdr.frame_type} appears after a later-phase frame"
                )
            if pending_preceder is not None and hdr.frame_type != DATA_FRAME:
                raise CorruptFileError(f"{describe(self.name, where, cur)}preceder metadata not followed by a data frame")
            phase = ph
            if hdr.frame_type == DATA_FRAME:
                if index_map is not None and body_end is not None and pending_preceder is None:
                    # the index gives every data frame: jump to the footer instead of walking payloads
                    data = self._objects_from_index(pos, index_map, where, limit)
                    data = self._find_preceders(pos, data, cur, where)
                    jumped = True
                    if first_footer is not None and first_footer != body_end - pos:
                        cur = pos + first_footer
                        phase = 2
                        continue
                    break
                tail = self._read(cur + hdr.length - 4, 4, "frame end")
                if tail != FRAME_END:
                    raise CorruptFileError(f"{describe(self.name, where, cur + hdr.length - 4)}data frame does not end with ENDF")
                data.append(ObjectRef(cur, hdr.length, pending_preceder))
                pending_preceder = None
                cur = pos + align8(cur + hdr.length - pos)
                continue
            if hdr.length > MAX_METADATA_FRAME:
                raise CorruptFileError(
                    f"{describe(self.name, where, cur + 8)}metadata frame of {hdr.length} bytes exceeds the {MAX_METADATA_FRAME}-byte limit"
                )
            frame = self._read(cur, hdr.length, "frame")
            if frame[-4:] != FRAME_END:
                raise CorruptFileError(f"{describe(self.name, where, cur + hdr.length - 4)}frame does not end with ENDF")
            body = frame[FRAME_HEADER : hdr.length - 12]
            fwhere = describe(self.name, where, cur + FRAME_HEADER)
            if hdr.frame_type in METADATA_TYPES:
                metadata = cbor.loads(body, where=fwhere)
                if not isinstance(metadata, dict):
                    raise MetadataError(f"{fwhere}metadata is a {type(metadata).__name__}, expected a map")
            elif hdr.frame_type in INDEX_TYPES:
                index_map = cbor.loads(body, where=fwhere)
            elif hdr.frame_type == PRECEDER_FRAME:
                pre_meta = cbor.loads(body, where=fwhere)
                base = pre_meta.get("base") if isinstance(pre_meta, dict) else None
                if not isinstance(base, list) or len(base) != 1 or not isinstance(base[0], dict):
                    raise MetadataError(f"{fwhere}preceder metadata must hold exactly one base entry")
                pending_preceder = {k: v for k, v in base[0].items() if k != "_reserved_"}
            cur = pos + align8(cur + hdr.length - pos)
        if pending_preceder is not None:
            raise CorruptFileError(f"{describe(self.name, where, cur)}dangling preceder metadata at the end of the body")
        if body_end is None:
            # streaming message of unknown length: the postamble must follow the last frame
            post = self._read(cur, POSTAMBLE, "postamble")
            first_footer, mirrored, end_magic = parse_postamble(post)
            if end_magic != END_MAGIC:
                raise CorruptFileError(f"{describe(self.name, where, cur)}expected a postamble (end magic 39277777)")
            end = cur + POSTAMBLE
        else:
            end = body_end + POSTAMBLE
        if metadata is None:
            raise MetadataError(f"{describe(self.name, where, pos)}message has no metadata frame")
        if index_map is not None and not data:
            data = self._objects_from_index(pos, index_map, where, end - POSTAMBLE)
        elif index_map is not None and not jumped:
            self._check_index_matches(index_map, data, pos, where)
        meta = self._normalise_metadata(metadata, len(data), describe(self.name, where, pos))
        for j, ref in enumerate(data):
            if ref.preceder:
                meta["base"][j].update(ref.preceder)
        return Message(self.source, index, pos, end - pos, pre, meta, data), end

    def _objects_from_index(self, pos: int, index_map: Any, where: str, limit: int) -> list[ObjectRef]:
        w = describe(self.name, where)
        if not isinstance(index_map, dict):
            raise MetadataError(f"{w}index frame is not a map")
        offsets, lengths = index_map.get("offsets"), index_map.get("lengths")
        if not isinstance(offsets, list) or not isinstance(lengths, list) or len(offsets) != len(lengths):
            raise MetadataError(f"{w}index offsets/lengths are missing or of different lengths")
        refs = []
        for j, (o, n) in enumerate(zip(offsets, lengths)):
            if not isinstance(o, int) or not isinstance(n, int) or o < PREAMBLE or n < 36 or pos + o + n > limit:
                raise CorruptFileError(
                    f"{describe(self.name, _where(int(where.split()[-1]) if where.split()[-1].isdigit() else 0, j), pos)}"
                    f"index entry offset {o!r} length {n!r} lies outside the message body"
                )
            refs.append(ObjectRef(pos + o, n))
        return refs

    def _check_index_matches(self, index_map: Any, data: list[ObjectRef], pos: int, where: str) -> None:
        refs = self._objects_from_index(pos, index_map, where, self.source.size)
        if [(r.frame_offset, r.frame_length) for r in refs] != [(r.frame_offset, r.frame_length) for r in data]:
            warnings.warn(
                f"{self.name}: {where}: the index frame disagrees with the data frames found by walking; using the frames",
                CorruptMessageWarning, stacklevel=5,
            )

    def _find_preceders(self, pos: int, refs: list[ObjectRef], first_data: int, where: str) -> list[ObjectRef]:
        """Preceder frames sit in gaps before indexed data frames; read them (rare)."""
        expected = first_data
        for ref in refs:
            if ref.frame_offset > expected:
                gap = self.source.read(expected, ref.frame_offset - expected, what="gap before data frame")
                k = gap.find(FRAME_START)
                while k >= 0 and k + FRAME_HEADER <= len(gap):
                    hdr = parse_frame_header(gap[k : k + FRAME_HEADER])
                    if hdr.frame_type == PRECEDER_FRAME and k + hdr.length <= len(gap):
                        body = gap[k + FRAME_HEADER : k + hdr.length - 12]
                        pre_meta = cbor.loads(body, where=describe(self.name, where, expected + k))
                        base = pre_meta.get("base") if isinstance(pre_meta, dict) else None
                        if not isinstance(base, list) or len(base) != 1 or not isinstance(base[0], dict):
                            raise MetadataError(f"{describe(self.name, where, expected + k)}preceder must hold one base entry")
                        ref.preceder = {k2: v for k2, v in base[0].items() if k2 != "_reserved_"}
                        break
                    k = gap.find(FRAME_START, k + 1)
            expected = pos + align8(ref.frame_offset + ref.frame_length - pos)
        return refs

    @staticmethod
    def _normalise_metadata(meta: dict, n_objects: int, w: str) -> dict:
        """Apply the reference decoder's metadata rules (spec §8.1) and add ``version``."""
        out: dict[str, Any] = {}
        extra = meta.get("_extra_", {})
        if extra is None:
            extra = {}
        if not isinstance(extra, dict):
            raise MetadataError(f"{w}_extra_ is not a map")
        extra = dict(extra)
        for key, value in meta.items():
            if not isinstance(key, str):
                raise MetadataError(f"{w}top-level metadata key {key!r} is not text")
            if key in ("base", "_extra_", "_reserved_"):
                continue
            if key in extra:
                raise MetadataError(f"{w}ambiguous metadata: key {key!r} is both top-level and in _extra_")
            extra[key] = value
        base = meta.get("base", [])
        if base is None:
            base = []
        if not isinstance(base, list) or not all(isinstance(b, dict) for b in base):
            raise MetadataError(f"{w}'base' is not a list of maps")
        if len(base) > n_objects:
            raise MetadataError(f"{w}'base' has {len(base)} entries for {n_objects} objects")
        base = [dict(b) for b in base] + [{} for _ in range(n_objects - len(base))]
        reserved = meta.get("_reserved_", {})
        out["version"] = 3
        out["base"] = base
        out["_extra_"] = extra
        out["_reserved_"] = reserved if isinstance(reserved, dict) else {}
        return out


def open_tensogram(source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None) -> TensogramFile:
    """Open a Tensogram file (path, PathLike, URL, bytes or binary file object).

    Damaged messages are skipped with a :class:`CorruptMessageWarning` naming the byte
    range, and the messages after them are kept; ``strict=True`` raises instead.
    """
    return TensogramFile(source, strict=strict, storage_options=storage_options)
