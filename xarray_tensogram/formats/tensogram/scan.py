"""Tensogram message scanning: find messages, parse preambles, postambles, header/footer frames and indexes.

Opening a file reads only preambles, postambles, metadata, index and hash frames (and, for
streaming messages without a footer index, the 16-byte header of every frame while walking them).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ...codecs import cbor
from ...errors import (
    CorruptFileError,
    CorruptMessageWarning,
    MetadataError,
    NotATensorFileError,
    TruncatedFileError,
    UnsupportedError,
    XarrayTensogramError,
    describe,
)
from ...io import ByteSource
from .framing import (
    DATA_FRAME,
    END_MAGIC,
    FRAME_END,
    FRAME_HEADER,
    FRAME_RULES,
    FRAME_START,
    INDEX_TYPES,
    MAGIC,
    METADATA_TYPES,
    MIN_MESSAGE,
    POSTAMBLE,
    PREAMBLE,
    PRECEDER_FRAME,
    Preamble,
    parse_frame_header,
    parse_postamble,
    parse_preamble,
    unpack_frame_header,
)
from .metadata import check_metadata, normalise_metadata, with_preceders
from .objects import Message, ObjectRef, _where, is_local

#: set (by ``assemble.tensogram.collect.decoded_once``) while an open scans the messages it then assembles:
#: called with each message and its normalised metadata, so that an open decodes every message's CBOR once
SCANNED: ContextVar[Callable[[Message, dict[str, Any]], None] | None] = ContextVar("SCANNED", default=None)
#: metadata and index frames larger than this are refused (a safety limit, not a format rule)
MAX_METADATA_FRAME = 64 * 1024 * 1024
SCAN_BLOCK = 1 << 20
#: bytes read at once for metadata from a remote source
REMOTE_BLOCK = 65536
#: the frame types whose CBOR a scan decodes: metadata, index and preceder frames
_DECODED = METADATA_TYPES | INDEX_TYPES | {PRECEDER_FRAME}


def _handed_over(msg: Message, metadata: dict[str, Any], refs: list[ObjectRef]) -> Message:
    """``msg``, its normalised metadata handed to an open that assembles what it scans (see :data:`SCANNED`)."""
    visit = SCANNED.get()
    if visit is not None:
        visit(msg, with_preceders(normalise_metadata(metadata, len(refs)), refs))
    return msg


def _preceder_entry(value: Any) -> dict[str, Any]:
    """A preceder frame's one ``base`` entry, without ``_reserved_``."""
    base = value.get("base") if isinstance(value, dict) else None
    if not isinstance(base, list) or len(base) != 1 or not isinstance(base[0], dict):
        raise MetadataError("preceder metadata must hold exactly one base entry")
    return {k: v for k, v in base[0].items() if k != "_reserved_"}


class _Window:
    """Serves small metadata reads from the blocks read last (few requests for remote sources)."""

    def __init__(self, source: ByteSource, lookahead: int) -> None:
        self.source = source
        self.lookahead = lookahead
        #: (offset, bytes) of the blocks held: the pinned one (a postamble and what follows it, kept until the
        #: next pin) first, then the last two read
        self.held: list[tuple[int, bytes]] = [(0, b"")]

    def pin(self, offset: int, length: int, extra: int, what: str) -> bytes:
        """Read ``length`` bytes and up to ``extra`` more after them (as far as the file goes), keep them
        for later reads, and return the first ``length``."""
        want = max(length, min(max(length + extra, self.lookahead), self.source.size - offset))
        end = offset + min(length + extra, want)
        for block in self.held:
            if block[0] <= offset and end <= block[0] + len(block[1]):
                break
        else:
            block = (offset, self.source.read(offset, want, what=what))
        if block is not self.held[0]:
            self.held = [block, *self.held[:2]]  # this message's start is in the previous pin
        start, data = block
        return data[offset - start : offset - start + length]

    def read(self, offset: int, length: int, what: str) -> bytes:
        end = offset + length
        for start, data in self.held:
            if start <= offset and end <= start + len(data):
                return data[offset - start : end - start]
        want = max(length, min(self.lookahead, self.source.size - offset))
        data = self.source.read(offset, want, what=what)
        self.held = [self.held[0], (offset, data), *self.held[1:2]]
        return data[:length]


class MessageScanner:
    """Splits a byte source into messages (spec §6), once per open; damaged byte ranges go to :attr:`skipped`."""

    def __init__(self, source: ByteSource, *, strict: bool = False) -> None:
        self.source = source
        self.name = source.name
        self.strict = strict
        self.skipped: list[tuple[int, int, str]] = []  # (start, end, reason) of damaged ranges
        self._warnings: list[str] = []  # said once the scan ends, only if it found a message (else the error says it)
        # remote: a request per block; local: exactly what is asked for (an open reads no payload byte)
        local = is_local(source)
        self._window = _Window(source, 0 if local else REMOTE_BLOCK)
        # local: the window only serves a message's first bytes (read with the previous postamble)
        self._read: Callable[..., bytes] = source.read if local else self._window.read

    def _find_magic(self, pos: int) -> int:
        """Offset of the next ``TENSOGRM`` at or after ``pos``, or -1."""
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

    def scan(self) -> list[Message]:
        """Split the file into messages (spec §6). Bytes before or between messages that are not one are skipped
        silently, as the reference scanner does; a message that starts with the magic but cannot be parsed is
        reported with a :class:`CorruptMessageWarning` (raised with ``strict=True``) and scanning resumes at the
        next magic. Bytes after the last message are reported the same way: they are what an interrupted write
        or a cut copy leaves, so data loss is never silent."""
        messages: list[Message] = []
        first_error: XarrayTensogramError | None = None  # why the first skipped message was unreadable
        pos = 0
        self.source.check_unchanged()
        size = self.source.size
        if size < MIN_MESSAGE:
            raise self._too_small(size)
        while pos < size:
            # the magic, the preamble and the first frame header in one read
            head = (
                self._window.read(pos, min(size - pos, PREAMBLE + FRAME_HEADER), "magic")
                if pos + len(MAGIC) <= size
                else b""
            )
            if head[: len(MAGIC)] != MAGIC:
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
                msg, end = self._parse_message(pos, len(messages), head)
            except XarrayTensogramError as exc:
                if self.strict:
                    raise
                first_error = first_error or exc
                nxt = self._find_magic(pos + 1)
                end = nxt if nxt >= 0 else size
                self._report(pos, end, str(exc))
                pos = end
                continue
            messages.append(msg)
            pos = end
        if not messages:
            raise self._no_message(first_error)
        for text in self._warnings:
            warnings.warn(text, CorruptMessageWarning, stacklevel=3)
        self._warnings.clear()
        return messages

    def _too_small(self, size: int) -> XarrayTensogramError:
        """Why a file smaller than one message holds none: empty, cut short, or no Tensogram file at all."""
        where = describe(self.name, offset=0)
        if size == 0:
            return NotATensorFileError(f"{where}the file is empty (0 bytes), a Tensogram message needs {MIN_MESSAGE}")
        head = self._read(0, min(size, len(MAGIC)), what="magic")
        if MAGIC.startswith(head):
            return TruncatedFileError(
                f"{where}file truncated: a Tensogram message needs at least {MIN_MESSAGE} bytes, this file has {size}"
            )
        return NotATensorFileError(f"{where}no Tensogram message found (magic TENSOGRM missing) in {size} bytes")

    def _no_message(self, first_error: XarrayTensogramError | None) -> XarrayTensogramError:
        """Why a scan found no readable message (each skipped range's reason names the file, message and byte)."""
        if not self.skipped:
            return NotATensorFileError(
                f"{describe(self.name, offset=0)}no Tensogram message found (magic TENSOGRM missing)"
            )
        if isinstance(first_error, TruncatedFileError):
            return TruncatedFileError(
                f"{first_error} (no complete Tensogram message in the file: it was cut short; "
                "copy or download it again)"
            )
        return CorruptFileError(f"{self.skipped[0][2]} (no readable Tensogram message in the file)")

    def _report(self, start: int, end: int, reason: str, what: str = "damaged message") -> None:
        self.skipped.append((start, end, reason))
        self._warnings.append(f"{self.name}: skipped {what} at bytes {start}..{end}: {reason}")

    def _trailing(self, start: int, size: int) -> None:
        """Report bytes ``start..size`` after the last message: a prefix of the magic means the file was cut
        inside the next preamble (:class:`TruncatedFileError`), anything else is junk (:class:`CorruptFileError`)."""
        n = size - start
        head = self._window.read(start, min(n, len(MAGIC)), "trailing bytes")
        where = describe(self.name, offset=start)
        if n < len(MAGIC) and MAGIC.startswith(head):
            exc: CorruptFileError = TruncatedFileError(
                f"{where}file truncated inside a message preamble: {n} bytes of the magic TENSOGRM are left, "
                f"a message needs at least {MIN_MESSAGE} bytes (bytes {start}..{size})"
            )
        else:
            exc = CorruptFileError(
                f"{where}{n} bytes after the last message are not a Tensogram message (bytes {start}..{size})"
            )
        if self.strict:
            raise exc
        self._report(start, size, str(exc), what="trailing bytes")

    def parse_at(self, offset: int, index: int) -> Message:
        """The message at ``offset`` (found by an earlier scan), numbered ``index``: how the metadata cache
        rebuilds the messages a read touches without scanning the file."""
        self.source.check_unchanged()
        return self._parse_message(offset, index)[0]

    def _at(self, index: int, offset: int) -> str:
        """The place an error names: this file, message ``index``, byte ``offset``."""
        return describe(self.name, _where(index), offset)

    def _parse_message(self, pos: int, index: int, head: bytes | None = None) -> tuple[Message, int]:
        """The message at ``pos`` and the offset just past it; ``head``: its first bytes when already read."""
        size = self.source.size
        if head is None:
            head = self._read(pos, PREAMBLE, what="preamble")
        pre = parse_preamble(head)
        if pre.version != 3:
            raise UnsupportedError(f"{self._at(index, pos + 8)}wire version {pre.version}, only 3 is supported")
        total = pre.total_length
        if not total:
            return self._walk_frames(pos, index, pre, head, None, 0)
        if total >= MIN_MESSAGE and pos + total > size:
            raise TruncatedFileError(
                f"{self._at(index, pos + 16)}message truncated: its preamble declares {total} "
                f"bytes, the file ends {size - pos} bytes after its start"
            )
        if total < MIN_MESSAGE:
            raise CorruptFileError(
                f"{self._at(index, pos + 16)}total_length {total} is impossible here "
                f"(minimum {MIN_MESSAGE}, {size - pos} bytes left in the file)"
            )
        # with the postamble, the next message's magic, preamble and first frame header: one read fewer
        post = self._window.pin(pos + total - POSTAMBLE, POSTAMBLE, PREAMBLE + FRAME_HEADER, "postamble")
        first_footer, mirrored, end_magic = parse_postamble(post)
        if end_magic != END_MAGIC:
            raise CorruptFileError(f"{self._at(index, pos + total - 8)}end magic 39277777 missing")
        if mirrored not in (0, total):
            raise CorruptFileError(
                f"{self._at(index, pos + total - 16)}postamble total_length {mirrored} != preamble {total}"
            )
        return self._walk_frames(pos, index, pre, head, pos + total - POSTAMBLE, pos + first_footer)

    def _walk_frames(
        self, pos: int, index: int, pre: Preamble, head: bytes, body_end: int | None, footer: int
    ) -> tuple[Message, int]:
        """Walk header frames; use an index to jump over data frames (to ``footer``, where the first footer frame
        starts, in a message of known length), else walk them too. A frame header is parsed from the bytes read
        last (``buf``, from offset ``base``) when they hold it: each header frame is read with the next header."""
        limit = body_end if body_end is not None else self.source.size - POSTAMBLE
        cur, buf, base = pos + PREAMBLE, head, pos
        phase = 0
        metadata: Any = None
        metadata_cbor = b""
        index_map: Any = None
        data: list[ObjectRef] = []
        pending_preceder: dict[str, Any] | None = None
        jumped = False  # data frames taken from the index rather than walked
        while cur + FRAME_HEADER <= limit:
            at = cur - base
            if at < 0 or at + FRAME_HEADER > len(buf):
                buf, base, at = self._read(cur, FRAME_HEADER, what="frame header"), cur, 0
            marker, kind, _version, _flags, length = unpack_frame_header(buf, at)
            if marker != FRAME_START:  # step over padding to the next FR (the reference steps byte by byte)
                if body_end is None:
                    break  # streaming without a length: the postamble follows the frames
                cur += 1
                continue
            phase = self._check_frame(cur, kind, length, phase, limit, pending_preceder is not None, index)
            nxt = pos + ((cur + length - pos + 7) & ~7)  # align8 relative to the message start
            if kind != DATA_FRAME:
                value, body, buf = self._read_header_frame(cur, kind, length, nxt, limit, index)
                base = cur
                if kind in METADATA_TYPES:
                    metadata, metadata_cbor = value, body
                elif kind in INDEX_TYPES:
                    index_map = value
                pending_preceder = value if kind == PRECEDER_FRAME else None
            elif index_map is not None and body_end is not None and pending_preceder is None:
                # the index gives every data frame: jump to the footer instead of walking payloads
                data = self._objects_from_index(pos, index_map, index, limit)
                data, jumped = self._find_preceders(pos, data, cur, index), True
                if footer >= limit:
                    break
                cur, phase = footer, 2
                continue
            else:
                if self._read(cur + length - 4, 4, what="frame end") != FRAME_END:
                    raise CorruptFileError(f"{self._at(index, cur + length - 4)}data frame does not end with ENDF")
                data.append(ObjectRef(cur, length, pending_preceder))
                pending_preceder = None
            cur = nxt
        if pending_preceder is not None:
            raise CorruptFileError(f"{self._at(index, cur)}dangling preceder metadata at the end of the body")
        end = self._message_end(cur, body_end, index)
        if metadata is None:
            raise MetadataError(f"{self._at(index, pos)}message has no metadata frame")
        data = self._data_frames(index_map, data, jumped, pos, index, end)
        try:  # checked here, so that a message with bad metadata is skipped as damaged
            check_metadata(metadata, len(data))  # preceders are merged into maps, which cannot fail
        except MetadataError as exc:  # the place is only formatted when there is an error to report
            raise type(exc)(f"{self._at(index, pos)}{exc}") from None
        # the message keeps the CBOR bytes, not the decoded maps (see Message.decoded_metadata)
        msg = Message(self.source, index, pos, end - pos, pre, data, metadata_cbor)
        return _handed_over(msg, metadata, data), end

    def _check_frame(
        self, cur: int, kind: int, length: int, phase: int, limit: int, preceder_pending: bool, index: int
    ) -> int:
        """Check a frame header against its place in the message; return the frame's phase."""
        ph, minimum = FRAME_RULES.get(kind, (-1, 0))
        if ph < 0:
            raise CorruptFileError(f"{self._at(index, cur)}unknown frame type {kind}")
        if length < minimum or cur + length > limit:
            raise CorruptFileError(
                f"{self._at(index, cur + 8)}frame length {length} runs past the message end "
                f"or is below the minimum {minimum}"
            )
        if ph < phase:
            raise CorruptFileError(f"{self._at(index, cur)}frame type {kind} appears after a later-phase frame")
        if preceder_pending and kind != DATA_FRAME:
            raise CorruptFileError(f"{self._at(index, cur)}preceder metadata not followed by a data frame")
        return ph

    def _read_header_frame(
        self, cur: int, kind: int, length: int, nxt: int, limit: int, index: int
    ) -> tuple[Any, bytes, bytes]:
        """A header frame's CBOR, decoded (a preceder: its base entry) and as bytes (a hash frame: None, b""), and
        the bytes read: with the next frame's header (at ``nxt``) where it lies before ``limit``, for the walk."""
        if length > MAX_METADATA_FRAME:
            raise CorruptFileError(
                f"{self._at(index, cur + 8)}metadata frame of {length} bytes exceeds "
                f"the {MAX_METADATA_FRAME}-byte limit"
            )
        frame = self._read(cur, nxt + FRAME_HEADER - cur if nxt + FRAME_HEADER <= limit else length, what="frame")
        if frame[length - 4 : length] != FRAME_END:
            raise CorruptFileError(f"{self._at(index, cur + length - 4)}frame does not end with ENDF")
        if kind not in _DECODED:
            return None, b"", frame
        body = frame[FRAME_HEADER : length - 12]
        try:
            value = cbor.loads(body)  # an index's entries: type-checked by _objects_from_index as it uses them
            if kind in METADATA_TYPES and not isinstance(value, dict):
                raise MetadataError(f"metadata is a {type(value).__name__}, expected a map")
            if kind == PRECEDER_FRAME:
                return _preceder_entry(value), body, frame
        except MetadataError as exc:  # the place is only formatted when there is an error to report
            raise type(exc)(f"{self._at(index, cur + FRAME_HEADER)}{exc}") from None
        return value, body, frame

    def _message_end(self, cur: int, body_end: int | None, index: int) -> int:
        """Offset just past the message: after its postamble (found after the last frame when streaming)."""
        if body_end is not None:
            return body_end + POSTAMBLE
        # streaming message of unknown length: the postamble must follow the last frame
        post = self._read(cur, POSTAMBLE, what="postamble")
        _first_footer, _mirrored, end_magic = parse_postamble(post)
        if end_magic != END_MAGIC:
            raise CorruptFileError(f"{self._at(index, cur)}expected a postamble (end magic 39277777)")
        return cur + POSTAMBLE

    def _objects_from_index(self, pos: int, index_map: Any, index: int, limit: int) -> list[ObjectRef]:
        if not isinstance(index_map, dict):
            raise MetadataError(f"{describe(self.name, _where(index))}index frame is not a map")
        offsets, lengths = index_map.get("offsets"), index_map.get("lengths")
        if not isinstance(offsets, list) or not isinstance(lengths, list) or len(offsets) != len(lengths):
            raise MetadataError(
                f"{describe(self.name, _where(index))}index offsets/lengths are missing or of different lengths"
            )
        refs: list[ObjectRef] = []
        room = limit - pos  # the body's end, relative to the message
        for o, n in zip(offsets, lengths, strict=True):
            if not (isinstance(o, int) and isinstance(n, int) and o >= PREAMBLE and n >= 36 and o + n <= room):
                raise CorruptFileError(
                    f"{describe(self.name, _where(index, len(refs)), pos)}"
                    f"index entry offset {o!r} length {n!r} lies outside the message body"
                )
            refs.append(ObjectRef(pos + o, n))
        return refs

    def _data_frames(
        self, index_map: Any, data: list[ObjectRef], jumped: bool, pos: int, index: int, end: int
    ) -> list[ObjectRef]:
        """The message's data frames: the index's where none were walked, else those walked (or taken from the
        index while walking: ``jumped``), with a warning where a walked body and its index disagree."""
        if index_map is None:
            return data
        if not data:
            return self._objects_from_index(pos, index_map, index, end - POSTAMBLE)
        if jumped:
            return data
        refs = self._objects_from_index(pos, index_map, index, self.source.size)
        if [(r.frame_offset, r.frame_length) for r in refs] != [(r.frame_offset, r.frame_length) for r in data]:
            warnings.warn(
                f"{self.name}: {_where(index)}: the index frame disagrees with the data frames found by walking; "
                "using the frames",
                CorruptMessageWarning,
                stacklevel=5,
            )
        return data

    def _find_preceders(self, pos: int, refs: list[ObjectRef], first_data: int, index: int) -> list[ObjectRef]:
        """Preceder frames sit in gaps before indexed data frames; read them (rare)."""
        expected = first_data
        for ref in refs:
            if ref.frame_offset > expected:
                gap = self.source.read(expected, ref.frame_offset - expected, what="gap before data frame")
                k = gap.find(FRAME_START)
                while k >= 0 and k + FRAME_HEADER <= len(gap):
                    hdr = parse_frame_header(gap, k)
                    if hdr.frame_type == PRECEDER_FRAME and k + hdr.length <= len(gap):
                        at = self._at(index, expected + k)
                        try:
                            ref.preceder = _preceder_entry(cbor.loads(gap[k + FRAME_HEADER : k + hdr.length - 12]))
                        except MetadataError as exc:
                            raise type(exc)(f"{at}{exc}") from None
                        break
                    k = gap.find(FRAME_START, k + 1)
            expected = pos + ((ref.frame_offset + ref.frame_length - pos + 7) & ~7)  # align8, inline: once per object
        return refs
