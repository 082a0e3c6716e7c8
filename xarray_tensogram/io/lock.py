"""Advisory locks that make the writers of one file take turns, and let readers skip an append in progress.

``to_tetr``/``to_ztensor(mode="a")`` read, extend and replace the file; ``to_tensogram(mode="a")`` checks it,
then appends in place. So every writer holds :func:`write_lock` from before it reads the file until its commit.

The lock is ``flock`` on a sidecar ``.<name>.lock``, not on the target: a target replaced by rename would leave
the lock on the old inode, and a new one has nothing to lock. The releasing writer removes the sidecar; one that
finds its lock file unlinked under it starts over, so the lock stays exclusive. A thread lock per file also
serialises the threads of one process (``flock`` emulated with POSIX locks, e.g. on NFS, is per process).

Readers take no lock. A ``.tgm`` appender notes the size before its append in the sidecar, and
:func:`stat_committed` gives readers that size while the lock is held. An appender killed halfway leaves its
note: readers see the partial message (the scanner skips it with a warning), and the next writer cuts it off
(only if the file is the same inode and still longer). ``.tet`` and ``.zt`` are replaced by rename: readers see
the old file or the new one.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import warnings
from collections.abc import Iterator

from ..errors import WriteLockTimeoutError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: threads of one process are still serialised
    fcntl = None  # type: ignore[assignment]  # the module or nothing

__all__ = [
    "lock_path",
    "note_committed_size",
    "remove_stale_temporaries",
    "stat_committed",
    "temp_prefix",
    "write_lock",
]

#: seconds a writer waits for another writer of the same file (``$XARRAY_TENSOGRAM_LOCK_TIMEOUT`` overrides)
LOCK_TIMEOUT = 600.0

_THREAD_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()
_HELD = threading.local()


def lock_path(path: str | os.PathLike[str]) -> str:
    """The sidecar lock file of ``path``: ``.<name>.lock`` in the same directory."""
    full = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.dirname(full), f".{os.path.basename(full)}.lock")


def temp_prefix(path: str | os.PathLike[str]) -> str:
    """How temporary files of ``path`` are named (``tempfile.mkstemp`` adds 8 of ``[a-z0-9_]``): here, so that the
    writer that takes the lock can remove those of a writer that was killed (:func:`remove_stale_temporaries`)."""
    return ".tmp-" + os.path.basename(os.fspath(path)) + "-"


_RANDOM = re.compile(r"[a-z0-9_]{8}")


def remove_stale_temporaries(path: str | os.PathLike[str]) -> None:
    """Remove the temporary files a killed writer of ``path`` left next to it (only for the holder of its write
    lock: no other writer of it runs then, so every temporary file of this target is a dead writer's)."""
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    prefix = temp_prefix(path)
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith(prefix) and _RANDOM.fullmatch(name[len(prefix) :]):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


@contextlib.contextmanager
def write_lock(path: str | os.PathLike[str], timeout: float | None = None) -> Iterator[None]:
    """Hold the write lock of ``path`` (re-entrant within a thread); :class:`WriteLockTimeoutError` naming the
    file after ``timeout`` seconds (default :data:`LOCK_TIMEOUT`) of waiting for another writer. A ``with`` block
    inside the writer (a decorator would add a frame, and the writers' warnings name their caller's line)."""
    held: dict[str, int | None] = _HELD.__dict__.setdefault("fds", {})  # this thread's locks: their descriptors
    sidecar = lock_path(path) if isinstance(path, (str, os.PathLike)) else None
    if sidecar is None or sidecar in held:  # not a file path (the writer says what it accepts), or held already
        yield
        return
    if timeout is None:
        with contextlib.suppress(ValueError):  # an unreadable value: the default
            timeout = float(os.environ.get("XARRAY_TENSOGRAM_LOCK_TIMEOUT") or LOCK_TIMEOUT)
    wait = LOCK_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + wait
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(sidecar, threading.Lock())
    if not thread_lock.acquire(timeout=max(wait, 0.0)):
        raise _timed_out(path, sidecar, wait)
    held[sidecar] = None
    try:
        fd = held[sidecar] = _acquire(path, sidecar, deadline, wait)
        try:
            yield
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.unlink(sidecar)  # while still locked: the next writer re-creates it (see _acquire)
                os.close(fd)
    finally:
        held.pop(sidecar, None)
        thread_lock.release()


def _timed_out(path: str | os.PathLike[str], sidecar: str, wait: float) -> WriteLockTimeoutError:
    return WriteLockTimeoutError(
        f"{os.fspath(path)!r}: another writer has held this file's lock ({sidecar}) for more than {wait:g} s; "
        "the lock is released when that writer finishes or dies. Wait for it, or set "
        "XARRAY_TENSOGRAM_LOCK_TIMEOUT (seconds) to wait longer"
    )


def _acquire(path: str | os.PathLike[str], sidecar: str, deadline: float, wait: float) -> int | None:
    """The locked sidecar's descriptor, or ``None`` where no lock can be taken (said in a warning)."""
    if fcntl is None or not os.path.isdir(os.path.dirname(sidecar)):
        return None  # no flock here; a missing directory is the writer's own error to report
    pause = 0.001
    while True:
        try:
            fd, created = _open_sidecar(sidecar)
        except FileNotFoundError:
            if not os.path.isdir(os.path.dirname(sidecar)):
                return None  # the directory went away: the writer reports that itself
            continue  # removed between our two tries to open it: try again
        except OSError as exc:  # a read-only directory: the writer may still append to a writable file
            _unlocked(path, f"cannot create {sidecar} ({exc.strerror})")
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() > deadline:
                raise _timed_out(path, sidecar, wait) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            continue
        except OSError as exc:  # e.g. ENOLCK on a network filesystem without a lock manager
            os.close(fd)
            _unlocked(path, f"the filesystem refuses locks ({exc.strerror})")
            return None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(sidecar))
        except FileNotFoundError:
            same = False
        if same:
            if not created:  # a lock file that was there already: perhaps a writer died holding it
                _recover(path, fd)
                remove_stale_temporaries(path)
            return fd
        os.close(fd)  # the previous holder removed it after we opened it: lock the new one


def _open_sidecar(sidecar: str) -> tuple[int, bool]:
    """Open the lock file, creating it if needed; and whether this call created it (then no writer died with it)."""
    try:
        return os.open(sidecar, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        return os.open(sidecar, os.O_RDWR), False


def _note(fd: int) -> tuple[int, int] | None:
    """The ``(inode, size)`` an appender noted in its lock file (see :func:`note_committed_size`), if any."""
    parts = os.pread(fd, 64, 0).split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _recover(path: str | os.PathLike[str], fd: int) -> None:
    """A note in a lock file nobody held: an appender died halfway (killed, power lost). Cut the file it appended
    to (the same inode, still longer) back to the size it noted, so the next append follows the last complete
    message rather than a partial one, and clear the note."""
    note = _note(fd)
    if note is None:
        return
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(path)
        if st.st_ino == note[0] and st.st_size > note[1]:
            os.truncate(path, note[1])
    os.ftruncate(fd, 0)


def _unlocked(path: str | os.PathLike[str], why: str) -> None:
    warnings.warn(
        f"{os.fspath(path)!r}: writing without a lock: {why}; writers running at the same time are not serialised",
        UserWarning,
        stacklevel=5,
    )


def note_committed_size(path: str | os.PathLike[str], size: int) -> None:
    """Before an in-place append: tell readers (:func:`stat_committed`) where the complete file ends. Only under
    :func:`write_lock` (written through the locked descriptor: closing another one would drop a POSIX lock); the
    sidecar is removed with the lock, so the note lasts no longer than the append."""
    fd = _HELD.__dict__.get("fds", {}).get(lock_path(path))
    if fd is not None:
        os.pwrite(fd, f"{os.stat(path).st_ino} {size}\n".encode("ascii"), 0)


def _append_note(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The ``(inode, size)`` noted by an append in progress, or ``None``. A note in a lock file nobody holds is
    from an appender that died: readers do not trust it (the file may have been replaced since)."""
    if fcntl is None:
        return None
    sidecar = lock_path(path)
    if not os.path.exists(sidecar):
        return None  # no writer (and no lock file opened: readers open only the file they read)
    try:
        fd = os.open(sidecar, os.O_RDONLY)
    except OSError:
        return None  # its writer just released it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # a writer holds it: its note, if it has begun to append
        return _note(fd)
    finally:
        os.close(fd)  # (and the shared lock with it, when it was taken)
    return None


def stat_committed(path: str | os.PathLike[str]) -> tuple[os.stat_result, int]:
    """``os.stat(path)`` and how much of the file a reader should read: all of it, or the size it had before an
    append still in progress. The note is read between two ``stat`` calls that must agree, so an append that
    began or ended meanwhile is seen; a file that keeps changing is read as its last ``stat`` says."""
    for _ in range(50):
        before = os.stat(path)
        note = _append_note(path)
        after = os.stat(path)
        if (before.st_ino, before.st_size, before.st_mtime_ns) == (after.st_ino, after.st_size, after.st_mtime_ns):
            committed = note[1] if note is not None and note[0] == after.st_ino else after.st_size
            return after, min(after.st_size, committed)
        time.sleep(0.001)
    return after, after.st_size
