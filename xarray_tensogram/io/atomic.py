"""Atomic file writing: write under a temporary name, then rename into place."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

from ..errors import IsADirectoryTensorError, NoSuchDirectoryError
from .lock import temp_prefix, write_lock


def _umask() -> int:
    """The process umask, read without changing it where the OS tells it (Linux), else set and restored."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _creation_mode(path: str) -> int:
    """The permissions ``open(path, "w")`` would leave: an existing file's own, else 0666 minus the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def check_target(path: str | os.PathLike[str]) -> None:
    """Refuse a target no file can be written to, naming it: a writer calls this before it encodes
    anything (and :class:`atomic_write` again), so the error names the user's path, not a temporary file."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NoSuchDirectoryError(f"cannot write {path!r}: the directory {directory!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryTensorError(f"cannot write {path!r}: it is a directory; give the path of a file in it")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Write a file under a temporary name in the same directory, then rename it into place (``with
    atomic_write(path) as f: f.write(...)``). On any exception the temporary file is removed and the destination
    is left untouched. The write holds the target's write lock (:mod:`.lock`), whose taking also removes the
    temporary files of killed writers of this target."""
    path = os.fspath(path)
    check_target(path)  # say so for the target, not for the temporary file
    with write_lock(path):
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), dir=os.path.dirname(os.path.abspath(path)))
        try:
            os.fchmod(fd, _creation_mode(path))  # mkstemp makes 0600; open(path, "w") would not
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
