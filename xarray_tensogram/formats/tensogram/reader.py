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

    Opening scans the message framing and reads metadata only; object payloads are read when
    :meth:`read_object` asks for them. Damaged messages are skipped with a
    ``CorruptMessageWarning`` naming the byte range, and the messages after them are kept.

    Parameters
    ----------
    source : str, os.PathLike, bytes or binary file object
        A local path, an fsspec URL (``s3://``, ``https://``, ``simplecache::...``), the bytes
        of a file, or an open binary file object.
    strict : bool, default False
        Raise on a damaged message instead of skipping it with a warning.
    storage_options : mapping, optional
        Passed to fsspec when ``source`` is a URL.

    Returns
    -------
    TensogramFile
        A context manager and a sequence of messages (``len(f)``, ``f[i]``, iteration).

    Raises
    ------
    CorruptFileError
        If ``strict=True`` and a message is damaged, or if nothing in the file is a message.

    Examples
    --------
    >>> import xarray_tensogram as xt
    >>> with xt.open_tensogram(xt.sample_path("forecast.tgm")) as f:
    ...     print(len(f), f[0].read_object(0).shape)
    4 (19, 36)
    """
    return TensogramFile(source, strict=strict, storage_options=storage_options)
