"""Tensogram v3 reader: the open file. Scanning lives in :mod:`.scan`, object reading in :mod:`.objects`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import CorruptMessageWarning
from ...io import SourceLike
from ..base import FormatFile
from .objects import Message, ObjectRef, read_frame_layout
from .scan import MessageScanner

__all__ = ["CorruptMessageWarning", "Message", "ObjectRef", "TensogramFile", "open_tensogram", "read_frame_layout"]


class TensogramFile(FormatFile[Message]):
    """A scanned Tensogram file: ``len(f)`` messages, ``f[i]``, iteration, context manager."""

    item_kind = "message"

    def __init__(
        self, source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        self.strict = strict
        super().__init__(source, storage_options=storage_options)

    def _parse(self) -> None:
        scanner = MessageScanner(self.source, strict=self.strict)
        self.skipped: list[tuple[int, int, str]] = scanner.skipped  # (start, end, reason) of damaged ranges
        self.messages = scanner.scan()

    def _items(self) -> list[Message]:  # messages have no names, only positions
        return self.messages

    def __repr__(self) -> str:
        return f"<TensogramFile {self.name!r}: {len(self.messages)} messages>"


def open_tensogram(
    source: SourceLike, *, strict: bool = False, storage_options: Mapping[str, Any] | None = None
) -> TensogramFile:
    """Open a Tensogram file without xarray: messages, metadata and objects as numpy arrays.

    ``source`` is a local path, an fsspec URL (``s3://``, ``https://``, ``simplecache::...``, with
    ``storage_options`` for fsspec), the bytes of a file or an open binary file object. Opening scans the
    message framing and reads metadata only; payloads are read when :meth:`read_object` asks for them. A damaged
    message is skipped with a ``CorruptMessageWarning`` naming its byte range and the messages after it are kept
    (``strict=True``: a ``CorruptFileError`` instead, as for a file with no message at all).

    >>> import xarray_tensogram as xt
    >>> with xt.open_tensogram(xt.sample_path("forecast.tgm")) as f:
    ...     print(len(f), f[0].read_object(0).shape)
    4 (19, 36)
    """
    return TensogramFile(source, strict=strict, storage_options=storage_options)
