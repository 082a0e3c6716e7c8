"""Local files: ``os.pread`` without a lock, a memory map for zero-copy views, and change detection."""

from __future__ import annotations

import collections
import contextlib
import mmap
import os
import stat
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import (
    FileChangedError,
    IsADirectoryTensorError,
    TruncatedFileError,
    describe,
)
from .base import ByteSource
from .lock import stat_committed

#: mapped bytes of recent views a local file source keeps resident (older ones are released)
RESIDENT_VIEW_BYTES = 64 << 20


class LocalFileSource(ByteSource):
    """A local file read with ``os.pread`` (no shared file position, hence no lock)."""

    def __init__(self, path: str | os.PathLike[str], *, _stamp: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.name = self.path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = -1
        self._mmap: mmap.mmap | None = None
        self._views: collections.deque[tuple[int, int]] = collections.deque()
        self._view_bytes = 0
        st, size = stat_committed(self.path)  # an append in progress is not read (see .lock)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryTensorError(f"{describe(self.path)}is a directory; give the path of a file in it")
        self._stamp = (st.st_size, st.st_mtime_ns) if _stamp is None else _stamp
        self._check(st)  # (a source unpickled in another process: the file must be the one opened)
        self.size = size

    def __reduce__(self) -> tuple[Any, ...]:
        return (partial(LocalFileSource, _stamp=self._stamp), (self.path,))

    def _fileno(self) -> int:
        fd = self._fd
        if fd is not None and self._pid == os.getpid():
            return fd
        with self._lock:
            if self._fd is None or self._pid != os.getpid():
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                try:
                    self._check(os.fstat(fd))
                except FileChangedError:
                    os.close(fd)
                    raise
                self._fd, self._pid = fd, os.getpid()
            return self._fd

    def _check(self, st: os.stat_result) -> None:
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise FileChangedError(
                f"{describe(self.path)}the file changed on disk since it was opened "
                f"(size {self._stamp[0]} -> {st.st_size}, mtime changed: {st.st_mtime_ns != self._stamp[1]})"
            )

    def check_unchanged(self) -> None:
        self._check(os.fstat(self._fileno()))

    #: reads at least this long re-check size and mtime; shorter (metadata) reads rely on the
    #: caller's one check per operation, which keeps an open from costing a stat per frame
    CHECK_MIN = 1 << 16

    def _read(self, offset: int, length: int) -> bytes:
        fd = self._fileno()
        if length >= self.CHECK_MIN:
            self.check_unchanged()
        data = os.pread(fd, length, offset)
        while len(data) < length:  # pread may return short reads on some systems
            more = os.pread(fd, length - len(data), offset + len(data))
            if not more:
                break
            data += more
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, what: str = "data") -> list[bytes]:
        """Small ranges (metadata: an open reads the footer and descriptor of every object this way) copied out
        of a memory map made for this call, where a slice costs a tenth of a ``pread``; batches with a range of
        :attr:`CHECK_MIN` bytes or more read by :meth:`_read`, which re-checks the file for long reads. The map is
        closed before returning, so its pages do not stay in the process's RSS. It maps the file as it is now: a
        range past a cut-short end comes back short and is reported (our writers never cut a file below the size
        a reader opened, see ``io.lock``); a file another program truncates meanwhile faults, as a view would."""
        check = self.check_range
        for offset, length in ranges:
            check(offset, length, what)
        if not ranges or self.size == 0:  # (an empty file cannot be mapped; its only range is empty)
            return [b"" for _ in ranges]
        mm = None
        if max(length for _offset, length in ranges) < self.CHECK_MIN:
            with contextlib.suppress(OSError, ValueError):  # a file system that cannot map files: pread
                mm = mmap.mmap(self._fileno(), 0, access=mmap.ACCESS_READ)
        if mm is None:
            out = [self._read(offset, length) for offset, length in ranges]
        else:
            with mm:
                out = [mm[offset : offset + length] for offset, length in ranges]
        got = sum(map(len, out))
        if got != sum(length for _offset, length in ranges):
            offset, length, cut = next((o, n, len(b)) for (o, n), b in zip(ranges, out, strict=True) if len(b) != n)
            raise TruncatedFileError(f"{describe(self.name, offset=offset)}{what}: expected {length} bytes, got {cut}")
        self.bytes_read += got
        self.read_calls += len(out)
        return out

    def read_into(self, offset: int, out: np.ndarray, *, what: str = "data") -> None:
        """``preadv`` straight into ``out`` when it is contiguous; otherwise (a tile inside a larger array)
        into a per-thread scratch buffer, then one copy into place."""
        length = out.nbytes
        self.check_range(offset, length, what)
        if length == 0:
            return
        fd = self._fileno()
        self.check_unchanged()
        contiguous = out.flags.c_contiguous
        buf = out.reshape(-1).view(np.uint8) if contiguous else scratch_buffer(length)
        view = buf.data  # the buffer's own bytes: preadv fills them in place
        got = 0
        while got < length:
            n = os.preadv(fd, [view[got:]], offset + got)
            if n <= 0:
                raise TruncatedFileError(
                    f"{describe(self.name, offset=offset)}{what}: expected {length} bytes, got {got}"
                )
            got += n
        if not contiguous:
            np.copyto(out, buf.view(out.dtype).reshape(out.shape))
        self.bytes_read += length
        self.read_calls += 1

    def release(self, offset: int, length: int) -> None:
        if self._mmap is not None and length > 0:
            _dont_need(self._mmap, offset, min(self.size, offset + length))

    def view(self, offset: int, length: int) -> memoryview | None:
        if length == 0 or self.size == 0:
            return memoryview(b"")
        self.check_range(offset, length, "a view")
        fd = self._fileno()
        self.check_unchanged()
        mm = self._mmap
        if mm is None:
            with self._lock:
                if self._mmap is None:
                    self._mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                mm = self._mmap
        self.bytes_read += length
        self.read_calls += 1
        self._keep_resident(mm, offset, length)
        return memoryview(mm)[offset : offset + length]

    def _keep_resident(self, mm: mmap.mmap, offset: int, length: int) -> None:
        """Let the kernel drop the mapped pages of views older than the last ``RESIDENT_VIEW_BYTES``: mapped pages
        count in the process RSS until unmapped, so a file larger than memory would otherwise stay resident.
        Dropped pages stay in the page cache and fault back in if an old view is still read."""
        with self._lock:
            self._views.append((offset, length))
            self._view_bytes += length
            while self._view_bytes > RESIDENT_VIEW_BYTES and len(self._views) > 1:
                old_offset, old_length = self._views.popleft()
                self._view_bytes -= old_length
                _dont_need(mm, old_offset, old_offset + old_length)

    def close(self) -> None:
        with self._lock:
            if self._mmap is not None:
                with contextlib.suppress(BufferError):  # views still exported: let GC release it
                    self._mmap.close()
                self._mmap = None
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()


def _dont_need(mm: mmap.mmap, start: int, end: int) -> None:
    """Give the mapped pages of bytes ``[start, end)`` back to the kernel (they stay in the page cache)."""
    start -= start % mmap.PAGESIZE
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no madvise here, or the map closed
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)


_SCRATCH = threading.local()
#: scratch buffers above this size are not kept between reads
_SCRATCH_KEEP = 16 << 20


def scratch_buffer(length: int, slot: str = "read") -> np.ndarray:
    """A per-thread reusable byte buffer of ``length`` bytes, valid until the thread's next call for ``slot``
    (``"read"``: tiles read, then copied into place; ``"decode"``: what a decoder fills while a read may use the
    other): no allocation or page faults per chunk, and the bytes stay in the CPU cache."""
    buf: np.ndarray | None = getattr(_SCRATCH, slot, None)
    if buf is None or buf.size < length:
        buf = np.empty(length, dtype=np.uint8)
        if length <= _SCRATCH_KEEP:
            setattr(_SCRATCH, slot, buf)
    return buf[:length]
