"""Tensogram v3 reader: scan messages, read their metadata and index, decode objects lazily.

Opening a file reads only preambles, postambles, metadata, index and hash
frames (and, for streaming messages without a footer index, the 16-byte
header of every frame while walking them). Descriptors are read on first use
and cached; an object's payload is read only when its values are asked for,
and for uncompressed pipelines only the byte range of the requested rows.

Scanning lives in :mod:`.scan`, object reading in :mod:`.objects`; this module is the open file.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...errors import CorruptMessageWarning
from ...io import SourceLike, open_source
from ..base import FormatFile
from .objects import Message, ObjectRef, read_frame_layout
from .scan import MessageScanner

__all__ = ["TensogramFile", "Message", "ObjectRef", "open_tensogram", "CorruptMessageWarning", "read_frame_layout"]


class TensogramFile(FormatFile[Message]):
    """A scanned Tensogram file: ``len(f)`` messages, ``f[i]``, iteration, context manager."""

    item_kind = "message"

    def __init__(self, source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None) -> None:
        self.source = open_source(source, storage_options)
        self.name = self.source.name
        self.strict = strict
        scanner = MessageScanner(self.source, strict=strict)
        self.skipped: list[tuple[int, int, str]] = scanner.skipped  # (start, end, reason) of damaged ranges
        try:
            self.messages = scanner.scan()
        except BaseException:
            self.source.close()
            raise

    # -- container protocol (FormatFile): messages have no names, only positions --------------
    def _items(self) -> list[Message]:
        return self.messages

    def _item_name(self, item: Message) -> str | None:
        return None

    def __repr__(self) -> str:
        return f"<TensogramFile {self.name!r}: {len(self.messages)} messages>"


def open_tensogram(source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None) -> TensogramFile:
    """Open a Tensogram file (path, PathLike, URL, bytes or binary file object).

    Damaged messages are skipped with a :class:`CorruptMessageWarning` naming the byte
    range, and the messages after them are kept; ``strict=True`` raises instead.
    """
    return TensogramFile(source, strict=strict, storage_options=storage_options)
