"""Byte sources: the only layer that touches files, memory or the network.

A :class:`ByteSource` answers ``read(offset, length)`` with exactly that many
bytes. Sources are safe to share between threads without a lock (local files use
``os.pread``), and they pickle as a *description* (path or URL plus options),
never as an open handle: a Dask worker process reopens the file itself.

Local files remember their size and modification time when opened; a payload
read after the file changed in place raises :class:`FileChangedError` instead of
returning bytes of the new file as if they were the old ones. A file replaced by
rename keeps serving the old inode's bytes through the open descriptor (still
consistent); a process that reopens the path (a Dask worker) then raises.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
import threading
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, Mapping, Sequence, Union

from .errors import (
    FileChangedError,
    IsADirectoryTensorError,
    MissingCodecError,
    NoSuchDirectoryError,
    StorageOptionsError,
    TruncatedFileError,
    XarrayTensogramError,
    describe,
)

__all__ = [
    "ByteSource",
    "LocalFileSource",
    "BytesSource",
    "FileObjectSource",
    "FsspecSource",
    "open_source",
    "is_remote_url",
    "SourceLike",
    "atomic_write",
]

SourceLike = Union[str, os.PathLike, bytes, bytearray, memoryview, BinaryIO, "ByteSource"]


class ByteSource(ABC):
    """Random-access, thread-safe, picklable bytes.

    ``bytes_read`` and ``read_calls`` count what this instance fetched; the
    benchmarks and tests use them to prove that an open reads metadata only.
    """

    name: str
    size: int

    def __init__(self) -> None:
        self.bytes_read = 0
        self.read_calls = 0

    @abstractmethod
    def _read(self, offset: int, length: int) -> bytes:
        """Return up to ``length`` bytes at ``offset`` (fewer only at end of file)."""

    def read(self, offset: int, length: int, *, what: str = "data") -> bytes:
        """Return exactly ``length`` bytes at ``offset`` or raise :class:`TruncatedFileError`."""
        if length < 0 or offset < 0 or offset + length > self.size:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{what} needs {length} bytes at this offset "
                f"but the file is {self.size} bytes long"
            )
        if length == 0:
            return b""
        data = self._read(offset, length)
        self.bytes_read += len(data)
        self.read_calls += 1
        if len(data) != length:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{what}: expected {length} bytes, got {len(data)}"
            )
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, what: str = "data") -> list[bytes]:
        """Read several ``(offset, length)`` ranges; remote sources fetch them concurrently."""
        return [self.read(o, n, what=what) for o, n in ranges]

    def read_array(self, offset: int, length: int, *, what: str = "data") -> "np.ndarray":
        """Like :meth:`read` but into a new writable ``uint8`` array (local files: no extra copy)."""
        import numpy as np

        return np.frombuffer(bytearray(self.read(offset, length, what=what)), dtype=np.uint8)

    def view(self, offset: int, length: int) -> memoryview | None:
        """A zero-copy read-only view of the bytes, or ``None`` when the source cannot map."""
        return None

    def close(self) -> None:
        """Release handles; the source reopens lazily if it is read again."""

    def check_unchanged(self) -> None:
        """Raise :class:`FileChangedError` if the underlying file changed since it was opened."""

    def __enter__(self) -> "ByteSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalFileSource(ByteSource):
    """A local file read with ``os.pread`` (no shared file position, hence no lock)."""

    def __init__(self, path: str | os.PathLike, *, _stamp: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.name = self.path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = -1
        self._mmap: mmap.mmap | None = None
        st = os.stat(self.path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryTensorError(f"{describe(self.path)}is a directory, not a Tensogram, Tetration or "
                                          f"zTensor file")
        stamp = (st.st_size, st.st_mtime_ns)
        if _stamp is not None and tuple(_stamp) != stamp:
            raise FileChangedError(
                f"{describe(self.path)}the file changed on disk since it was opened "
                f"(size/mtime {tuple(_stamp)} -> {stamp})"
            )
        self._stamp = stamp
        self.size = st.st_size

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen_local, (self.path, self._stamp))

    def _fileno(self) -> int:
        fd = self._fd
        if fd is not None and self._pid == os.getpid():
            return fd
        with self._lock:
            if self._fd is None or self._pid != os.getpid():
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                st = os.fstat(fd)
                if (st.st_size, st.st_mtime_ns) != self._stamp:
                    os.close(fd)
                    raise FileChangedError(
                        f"{describe(self.path)}the file changed on disk since it was opened "
                        f"(size {self._stamp[0]} -> {st.st_size})"
                    )
                self._fd, self._pid = fd, os.getpid()
            return self._fd  # type: ignore[return-value]

    def check_unchanged(self) -> None:
        st = os.fstat(self._fileno())
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise FileChangedError(
                f"{describe(self.path)}the file changed on disk since it was opened "
                f"(size {self._stamp[0]} -> {st.st_size}, mtime changed: {st.st_mtime_ns != self._stamp[1]})"
            )

    #: reads at least this long re-check size and mtime; shorter (metadata) reads rely on the
    #: caller's one check per operation, which keeps an open from costing a stat per frame
    CHECK_MIN = 1 << 16

    def _read(self, offset: int, length: int) -> bytes:
        fd = self._fileno()
        if length >= self.CHECK_MIN:
            self.check_unchanged()
        data = os.pread(fd, length, offset)
        if len(data) < length:  # pread may return short reads on some systems
            chunks = [data]
            got = len(data)
            while got < length:
                more = os.pread(fd, length - got, offset + got)
                if not more:
                    break
                chunks.append(more)
                got += len(more)
            data = b"".join(chunks)
        return data

    def read_array(self, offset: int, length: int, *, what: str = "data") -> "np.ndarray":
        import numpy as np

        if length < 0 or offset < 0 or offset + length > self.size:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{what} needs {length} bytes at this offset "
                f"but the file is {self.size} bytes long"
            )
        out = np.empty(length, dtype=np.uint8)
        if length == 0:
            return out
        fd = self._fileno()
        self.check_unchanged()
        got = 0
        view = memoryview(out)
        while got < length:
            n = os.preadv(fd, [view[got:]], offset + got)
            if n <= 0:
                raise TruncatedFileError(f"{describe(self.name, offset=offset)}{what}: expected {length} bytes, got {got}")
            got += n
        self.bytes_read += length
        self.read_calls += 1
        return out

    def view(self, offset: int, length: int) -> memoryview | None:
        if length == 0 or self.size == 0:
            return memoryview(b"")
        if offset < 0 or offset + length > self.size:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{length} bytes requested, file is {self.size} bytes"
            )
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
        return memoryview(mm)[offset : offset + length]

    def close(self) -> None:
        with self._lock:
            if self._mmap is not None:
                try:
                    self._mmap.close()
                except BufferError:  # views still exported: let GC release it
                    pass
                self._mmap = None
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
        except Exception:
            pass


def _reopen_local(path: str, stamp: tuple[int, int]) -> LocalFileSource:
    return LocalFileSource(path, _stamp=stamp)


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
    """A binary file object supplied by the caller.

    A file object has one shared position, so reads take a lock held by this
    source only (never a global one). It pickles by path when the object has a
    real ``name`` on disk; otherwise pickling raises a clear ``TypeError``.
    """

    def __init__(self, fileobj: BinaryIO) -> None:
        super().__init__()
        self._f = fileobj
        self._lock = threading.Lock()
        self.name = str(getattr(fileobj, "name", "<file object>"))
        with self._lock:
            pos = fileobj.tell()
            fileobj.seek(0, io.SEEK_END)
            self.size = fileobj.tell()
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


class FsspecSource(ByteSource):
    """A remote (or any fsspec) file, fetched with one range request per read.

    ``url`` may be any fsspec URL (``s3://``, ``gs://``, ``https://``, ``file://``, ``memory://``)
    or a chained URL (``simplecache::s3://...``); ``storage_options`` go to fsspec unchanged
    (for chained URLs, keyed by protocol as fsspec expects). Opening asks for the size once
    (one ``HEAD`` for HTTP and S3); every :meth:`read` is one ranged ``GET`` of exactly the
    bytes asked for, and :meth:`read_ranges` sends its ranges concurrently.

    The three formats keep their metadata at the ends of the file (Tensogram preamble and
    header frames, the Tetration superblock and directory, the zTensor tail and index, the
    Tetration footer), and their readers parse it with several small reads. So the source that
    opens the file fetches the first and the last ``END_BLOCK`` bytes in one request each the
    first time a small read falls there, and serves later reads inside them from memory: opening
    costs a few requests instead of one per field. Unpickled copies (Dask tasks) do not do this;
    they fetch exactly the bytes of the chunk they read.

    Holds only the URL, the options and the size: the fsspec filesystem is created lazily in
    each process (and again after a fork), so a pickled source, e.g. inside a Dask task, reopens
    the remote file in the worker without holding any connection across pickling.
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None, *, _size: int | None = None,
                 _fs: Any = None) -> None:
        super().__init__()
        self.url = url
        self.name = url
        self.storage_options = dict(storage_options or {})
        self._fs: Any = None
        self._path: str | None = None
        self._pid = -1
        self._lock = threading.Lock()
        #: cached (offset, bytes) blocks at the start and the end of the file (see the class doc)
        self._ends: list[tuple[int, bytes]] = []
        self._cache_ends = _size is None
        if _fs is not None:  # an fsspec filesystem the caller already has (see open_source)
            self._fs, self._path, self._pid = _fs, _fs._strip_protocol(url), os.getpid()
        if _size is not None:  # unpickled: the filesystem is created on the first read
            self.size = int(_size)
            return
        fs, path = self._filesystem()
        try:
            size = fs.size(path)
        except TypeError as exc:  # e.g. s3fs passes unknown options on to its session at the first request
            raise self._rejected(exc) from exc
        except FileNotFoundError as exc:
            reason = _short(exc)
            what = "cannot open the remote file" if "Connect" in reason or "Timeout" in reason else "no such remote file"
            raise FileNotFoundError(f"{url}: {what} ({reason})") from exc
        except PermissionError as exc:
            raise PermissionError(f"{url}: access denied ({_short(exc)})") from exc
        if size is None:
            raise XarrayTensogramError(
                f"{url}: the server does not report the file size (no Content-Length), so byte ranges "
                "cannot be planned; use a 'simplecache::' URL to download the file first"
            )
        self.size = int(size)

    def __repr__(self) -> str:
        return f"<FsspecSource {self.url!r} ({self.size} bytes)>"

    def _rejected(self, exc: BaseException) -> StorageOptionsError:
        """fsspec reports an option it does not know as a TypeError; say which options were given."""
        given = ", ".join(map(repr, self.storage_options)) or "none"
        return StorageOptionsError(f"{self.url}: fsspec rejected the storage_options (given: {given}): {_short(exc)}")

    def _filesystem(self) -> tuple[Any, str]:
        if self._fs is None or self._pid != os.getpid():
            with self._lock:
                if self._fs is None or self._pid != os.getpid():
                    try:
                        import fsspec
                    except ImportError as exc:  # pragma: no cover - depends on environment
                        raise MissingCodecError(
                            f"reading {self.url!r} needs fsspec: pip install 'xarray-tensogram[remote]'"
                        ) from exc
                    try:
                        fs, path = fsspec.core.url_to_fs(self.url, **self.storage_options)
                    except ImportError as exc:
                        raise MissingCodecError(
                            f"reading {self.url!r} needs an fsspec driver that is not installed ({exc}); "
                            "pip install 'xarray-tensogram[remote]' and the driver for this protocol (e.g. s3fs)"
                        ) from exc
                    except ValueError as exc:
                        raise XarrayTensogramError(f"{self.url}: fsspec cannot open this URL: {exc}") from exc
                    except TypeError as exc:  # a filesystem whose constructor does not take an option
                        raise self._rejected(exc) from exc
                    self._fs, self._path, self._pid = fs, path, os.getpid()
        return self._fs, self._path  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen_fsspec, (self.url, self.storage_options, self.size))

    #: size of the head and tail blocks cached by the opening source
    END_BLOCK = 64 * 1024
    #: reads up to this size near either end fetch the whole block (metadata-sized reads)
    SMALL_READ = 16 * 1024

    def _read(self, offset: int, length: int) -> bytes:
        for start, block in self._ends:
            if start <= offset and offset + length <= start + len(block):
                return block[offset - start : offset + length - start]
        if self._cache_ends and length <= self.SMALL_READ:
            head = min(self.size, self.END_BLOCK)
            tail = max(0, self.size - self.END_BLOCK)
            for lo, hi in ((0, head), (tail, self.size)):
                if lo <= offset and offset + length <= hi:
                    block = self._fetch(lo, hi - lo)
                    if len(block) == hi - lo:
                        with self._lock:
                            if all(start != lo for start, _ in self._ends):
                                self._ends = self._ends + [(lo, block)]
                    return block[offset - lo : offset + length - lo]
        return self._fetch(offset, length)

    def _fetch(self, offset: int, length: int) -> bytes:
        fs, path = self._filesystem()
        try:
            data = fs.cat_file(path, start=offset, end=offset + length)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url}: the remote file disappeared ({_short(exc)})") from exc
        if len(data) > length:
            raise XarrayTensogramError(
                f"{describe(self.name, offset=offset)}asked for {length} bytes, the server sent {len(data)}: "
                "it ignores HTTP Range requests; use a 'simplecache::' URL to download the file first"
            )
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, what: str = "data") -> list[bytes]:
        ranges = [(o, n) for o, n in ranges]
        if len(ranges) <= 1 or any(n == 0 for _o, n in ranges):
            return [self.read(o, n, what=what) for o, n in ranges]
        for o, n in ranges:
            if o < 0 or n < 0 or o + n > self.size:
                raise TruncatedFileError(
                    f"{describe(self.name, offset=o)}{what} needs {n} bytes but the file is {self.size} bytes long"
                )
        fs, path = self._filesystem()
        starts = [o for o, _ in ranges]
        ends = [o + n for o, n in ranges]
        out = fs.cat_ranges([path] * len(ranges), starts, ends, on_error="return")
        for (o, n), b in zip(ranges, out):
            if isinstance(b, BaseException):
                raise XarrayTensogramError(f"{describe(self.name, offset=o)}range request failed: {_short(b)}")
        self.bytes_read += sum(len(b) for b in out)
        self.read_calls += len(ranges)
        for (o, n), b in zip(ranges, out):
            if len(b) != n:
                raise TruncatedFileError(f"{describe(self.name, offset=o)}{what}: expected {n} bytes, got {len(b)}")
        return list(out)


def _short(exc: BaseException) -> str:
    """One line naming the error, and its cause when fsspec wrapped one (e.g. a refused connection)."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        more = str(cause).strip().splitlines()
        line += f"; caused by {type(cause).__name__}: {more[0] if more else ''}"
    return line


def _reopen_fsspec(url: str, options: Mapping[str, Any], size: int) -> FsspecSource:
    return FsspecSource(url, options, _size=size)


def is_remote_url(s: str) -> bool:
    """True for ``proto://...`` URLs other than plain local paths (fsspec chains included)."""
    return "://" in s or "::" in s


def _from_fsspec_object(obj: Any) -> ByteSource | None:
    """A source for an fsspec ``OpenFile`` or an open fsspec file (``fs.open(path)``), else ``None``.

    It is rebuilt from the filesystem's URL and ``storage_options``, so it pickles by
    description like any other remote source.
    """
    fs, path = getattr(obj, "fs", None), getattr(obj, "path", None)
    if fs is None or not isinstance(path, str) or not hasattr(fs, "cat_file") or not hasattr(fs, "storage_options"):
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        return LocalFileSource(path)
    if hasattr(fs, "fs") or protocol in ("simplecache", "filecache", "blockcache", "cached"):
        return None  # a caching wrapper: cannot be described by one URL; read through the file object
    return FsspecSource(fs.unstrip_protocol(path), fs.storage_options, _fs=fs)


def open_source(source: SourceLike, storage_options: Mapping[str, Any] | None = None) -> ByteSource:
    """Turn a path, URL, PathLike, bytes-like or binary file object into a :class:`ByteSource`.

    URLs (``s3://``, ``https://``, ``gs://``, ``file://``, chained ``simplecache::...``) are read
    through fsspec with ``storage_options``; fsspec ``OpenFile`` objects and open fsspec files
    are read by URL too, so they pickle.
    """
    if isinstance(source, ByteSource):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BytesSource(source)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, bytes):
        source = os.fsdecode(source)
    if isinstance(source, str):
        if is_remote_url(source):
            if source.startswith("file://") and not storage_options and "::" not in source:
                return LocalFileSource(source[len("file://") :])
            return FsspecSource(source, storage_options)
        return LocalFileSource(source)
    remote = _from_fsspec_object(source)
    if remote is not None:
        return remote
    if hasattr(source, "read") and hasattr(source, "seek"):
        return FileObjectSource(source)  # type: ignore[arg-type]
    raise TypeError(f"cannot read from {type(source).__name__}: pass a path, URL, bytes or a binary file object")


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
