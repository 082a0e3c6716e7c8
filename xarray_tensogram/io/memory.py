"""In-memory bytes and open binary file objects as byte sources."""

from __future__ import annotations

import io
import os
import threading
from typing import Any, BinaryIO

from .base import ByteSource
from .local import LocalFileSource


class BytesSource(ByteSource):
    """Bytes already in memory (pickles with its content)."""

    def __init__(self, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> None:
        super().__init__()
        self._data = bytes(data)
        self.name = name
        self.size = len(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (BytesSource, (self._data, self.name))

    def _read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]

    def view(self, offset: int, length: int) -> memoryview | None:
        self.bytes_read += length
        self.read_calls += 1
        return memoryview(self._data)[offset : offset + length]


class FileObjectSource(ByteSource):
    """A binary file object supplied by the caller. Its one shared position makes reads take a lock held by this
    source only (never a global one). It pickles by path when the object has a real ``name`` on disk; otherwise
    pickling raises a clear ``TypeError``."""

    def __init__(self, fileobj: BinaryIO) -> None:
        super().__init__()
        self._f = fileobj
        self._lock = threading.Lock()
        self.name = str(getattr(fileobj, "name", "<file object>"))
        pos = fileobj.tell()
        self.size = fileobj.seek(0, io.SEEK_END)
        fileobj.seek(pos)

    def __reduce__(self) -> tuple[Any, ...]:
        name = getattr(self._f, "name", None)
        if isinstance(name, (str, bytes, os.PathLike)) and os.path.isfile(name):
            return (LocalFileSource, (os.fsdecode(name),))
        raise TypeError(
            "a Dataset opened from an in-memory file object cannot be pickled; "
            "open it from a path or URL, or pass bytes"
        )

    def _read(self, offset: int, length: int) -> bytes:
        with self._lock:
            self._f.seek(offset)
            return self._f.read(length)
