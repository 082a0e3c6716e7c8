"""Atomic file writing: write under a temporary name, then rename into place."""

from __future__ import annotations

import os
from typing import BinaryIO

from ..errors import NoSuchDirectoryError


class atomic_write:
    """Write a file under a temporary name in the same directory, then rename it into place.

    On any exception the temporary file is removed and the destination is left
    untouched, so a failed write never leaves a half-written file under the
    final name. Usage::

        with atomic_write(path) as f:
            f.write(b"...")
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._tmp: str | None = None
        self._f: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        import tempfile

        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):  # say so for the target, not for the temporary file
            raise NoSuchDirectoryError(f"cannot write {self.path!r}: the directory {directory!r} does not exist")
        fd, self._tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(self.path) + "-", dir=directory)
        self._f = os.fdopen(fd, "wb")
        return self._f

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._f is not None and self._tmp is not None
        try:
            if exc_type is None:
                self._f.flush()
                os.fsync(self._f.fileno())
            self._f.close()
            if exc_type is None:
                os.replace(self._tmp, self.path)
                self._tmp = None
        finally:
            if self._tmp is not None and os.path.exists(self._tmp):
                os.unlink(self._tmp)
