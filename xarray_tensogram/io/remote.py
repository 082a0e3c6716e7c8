"""Remote files through fsspec (HTTP, S3, ...): ranged reads, merged range requests, retries."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, cast

from ..errors import (
    MissingCodecError,
    StorageOptionsError,
    XarrayTensogramError,
    describe,
    first_line,
    install_hint,
)
from .base import ByteSource
from .http import Stamp, get_range, is_http
from .local import LocalFileSource
from .retry import Fault, Retrying, RetryPolicy, transient


class FsspecSource(ByteSource):
    """A file at any fsspec URL (``s3://``, ``https://``, ``simplecache::s3://...``; ``storage_options`` go to
    fsspec unchanged). The open asks for the size once (one ``HEAD``); every :meth:`read` is one ranged ``GET`` of
    exactly its bytes, :meth:`read_ranges` sends its ranges concurrently. The formats parse their metadata from
    the file's ends with small reads, so the opening source caches its first and last ``END_BLOCK`` bytes
    (unpickled copies, Dask tasks, fetch exactly their chunk's bytes). Ranges are retried per ``retries``, asking
    again only for the bytes still missing (:mod:`.retry`), and over HTTP(S) checked against the open
    (:mod:`.http`). The fsspec filesystem is made lazily in each process, so a pickle holds no connection."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        retries: RetryPolicy | int | Mapping[str, float] | None = None,
        _stamp: Stamp | None = None,
        _fs: Any = None,
    ) -> None:
        super().__init__()
        self.url = self.name = url
        self.storage_options = dict(storage_options or {})
        self.policy = RetryPolicy.of(retries)
        #: retries made and bytes asked for again by this instance (see :class:`~.retry.Retrying`)
        self.counts: Counter[str] = Counter(retries=0, bytes_refetched=0)
        self._fs: Any = _fs  # an fsspec filesystem the caller already has (see open_source), else made lazily
        self._path: str | None = None if _fs is None else _fs._strip_protocol(url)
        self._pid = -1 if _fs is None else os.getpid()
        self._lock = threading.Lock()
        #: cached (offset, bytes) blocks at the start and the end of the file (see the class doc)
        self._ends: list[tuple[int, bytes]] = []
        self._cache_ends = _stamp is None
        self.stamp = self._stat() if _stamp is None else _stamp
        self.size = self.stamp.size

    def _stat(self) -> Stamp:
        """Ask for the size (and the ETag and Last-Modified that later answers must still carry), retried."""
        fs, path = self._filesystem()
        retrying = Retrying(self.policy, self.url, counts=self.counts)
        while True:
            try:
                info = fs.info(path)
                break
            except Exception as exc:
                if not (fault := transient(exc)).transient:
                    raise self._open_error(exc) from exc
                retrying.sleep(fault, 0)
        size = info.get("size")
        if size is None:
            raise XarrayTensogramError(
                f"{self.url}: the server does not report the file size (no Content-Length), so byte ranges "
                "cannot be planned; use a 'simplecache::' URL to download the file first"
            )
        etag, modified = info.get("ETag"), info.get("Last-Modified")  # HTTP: the HEAD answer's headers
        return Stamp(int(size), str(etag) if etag else None, str(modified) if modified else None)

    def _open_error(self, exc: Exception) -> Exception:
        """What an open that failed for good raises: the package's error, or the builtin that names the URL."""
        if isinstance(exc, TypeError):  # e.g. s3fs passes unknown options on to its session at the first request
            return self._rejected(exc)
        if isinstance(exc, FileNotFoundError):
            if _refused_option(exc) is not None:  # fsspec's HTTP filesystem reports a refused option as missing
                return self._rejected(exc)
            reason = _short(exc)
            what = "cannot open the" if "Connect" in reason or "Timeout" in reason else "no such"
            return FileNotFoundError(f"{self.url}: {what} remote file ({reason})")
        if isinstance(exc, PermissionError):
            return PermissionError(f"{self.url}: access denied ({_short(exc)})")
        return exc

    def __repr__(self) -> str:
        return f"<FsspecSource {self.url!r} ({self.size} bytes)>"

    def _rejected(self, exc: BaseException) -> StorageOptionsError:
        """fsspec reports an option it does not know as a TypeError; name it when the error does."""
        given = ", ".join(map(repr, self.storage_options)) or "none"
        if (key := _refused_option(exc)) is not None:
            protocol = self.url.split("::")[-1].split("://")[0]
            fs = type(self._fs).__name__ if self._fs is not None else f"the {protocol!r} filesystem"
            return StorageOptionsError(
                f"{self.url}: fsspec rejected the storage_options {key!r}: {fs} does not accept it; "
                f"remove or correct it (given: {given})"
            )
        return StorageOptionsError(f"{self.url}: fsspec rejected the storage_options (given: {given}): {_short(exc)}")

    def _filesystem(self) -> tuple[Any, str]:
        if self._fs is None or self._pid != os.getpid():
            with self._lock:
                try:
                    import fsspec

                    if self._fs is None or self._pid != os.getpid():
                        fs, self._path = fsspec.core.url_to_fs(self.url, **self.storage_options)
                        self._fs, self._pid = fs, os.getpid()
                except ImportError as exc:  # fsspec itself, or the driver of this protocol
                    raise MissingCodecError(
                        f"reading {self.url!r} needs fsspec and the driver for this protocol (e.g. s3fs), one of "
                        f"which is not installed ({exc}); {install_hint('remote')}"
                    ) from exc
                except ValueError as exc:
                    raise XarrayTensogramError(f"{self.url}: fsspec cannot open this URL: {exc}") from exc
                except TypeError as exc:  # a filesystem whose constructor does not take an option
                    raise self._rejected(exc) from exc
        return self._fs, cast(str, self._path)  # set together with self._fs

    def __reduce__(self) -> tuple[Any, ...]:
        return (partial(FsspecSource, retries=self.policy, _stamp=self.stamp), (self.url, self.storage_options))

    #: size of the head and tail blocks cached by the opening source
    END_BLOCK = 64 * 1024
    #: reads up to this size near either end fetch the whole block (metadata-sized reads)
    SMALL_READ = 16 * 1024

    def _read(self, offset: int, length: int) -> bytes:
        for start, block in self._ends:
            if start <= offset and offset + length <= start + len(block):
                return block[offset - start : offset + length - start]
        if self._cache_ends and length <= self.SMALL_READ:
            for lo, hi in ((0, min(self.size, self.END_BLOCK)), (max(0, self.size - self.END_BLOCK), self.size)):
                if lo <= offset and offset + length <= hi:
                    block = self._fetch(lo, hi - lo)  # exactly these bytes, or an error
                    with self._lock:
                        if all(start != lo for start, _ in self._ends):
                            self._ends = [*self._ends, (lo, block)]
                    return block[offset - lo : offset + length - lo]
        return self._fetch(offset, length)

    def _fetch(self, offset: int, length: int) -> bytes:
        fs, path = self._filesystem()
        if is_http(fs):
            return self._get(fs, path, [(offset, length)])[0]
        retrying = Retrying(self.policy, self.url, offset, length, self.counts)
        body = bytearray()
        while True:  # other filesystems: fsspec's reads, retried; a short body is kept and the rest asked for
            start = offset + len(body)
            try:
                body += self._cat(fs, path, start, offset + length)
            except Exception as exc:
                if not (fault := transient(exc)).transient:
                    raise
            else:
                if len(body) == length:
                    return bytes(body)
                fault = Fault(True, f"short body: {len(body)} of {length} bytes arrived")
            retrying.sleep(fault, length - len(body))

    def _cat(self, fs: Any, path: str, start: int, end: int) -> bytes:
        try:
            data: bytes = fs.cat_file(path, start=start, end=end)
        except FileNotFoundError as exc:
            if transient(exc).transient:
                raise
            raise FileNotFoundError(f"{self.url}: the remote file disappeared ({_short(exc)})") from exc
        if len(data) > end - start:
            raise XarrayTensogramError(
                f"{describe(self.name, offset=start)}asked for {end - start} bytes, the server sent {len(data)}: "
                "it ignores HTTP Range requests; use a 'simplecache::' URL to download the file first"
            )
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, what: str = "data") -> list[bytes]:
        ranges = list(ranges)
        if len(ranges) <= 1 or any(n == 0 for _o, n in ranges):
            return [self.read(o, n, what=what) for o, n in ranges]
        for o, n in ranges:
            self.check_range(o, n, what)
        fs, path = self._filesystem()
        if is_http(fs):
            out = self._get(fs, path, ranges)
        else:
            starts = [o for o, _ in ranges]
            got = fs.cat_ranges([path] * len(ranges), starts, [o + n for o, n in ranges], on_error="return")
            # a range that failed or came back short is read again alone, with retries
            out = [
                b if isinstance(b, bytes) and len(b) == n else self._fetch(o, n)
                for (o, n), b in zip(ranges, got, strict=True)
            ]
        self.bytes_read += sum(len(b) for b in out)
        self.read_calls += len(ranges)
        return out

    #: ranges of one :meth:`read_ranges` in flight at once (as fsspec's own batches of coroutines)
    CONCURRENT = 128

    def _get(self, fs: Any, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """HTTP(S) ranges on fsspec's loop, :attr:`CONCURRENT` at once, each retried alone (:func:`.http.get_range`)."""
        from fsspec.asyn import sync

        async def gather() -> list[bytes]:
            slots = asyncio.Semaphore(self.CONCURRENT)

            async def one(offset: int, length: int) -> bytes:
                async with slots:
                    retrying = Retrying(self.policy, self.url, offset, length, self.counts)
                    return await get_range(fs, path, offset, length, self.stamp, retrying)

            return list(await asyncio.gather(*(one(o, n) for o, n in ranges)))

        return cast("list[bytes]", sync(fs.loop, gather))


def _short(exc: BaseException) -> str:
    """One line naming the error, and its cause when fsspec wrapped one (e.g. a refused connection)."""
    line = f"{type(exc).__name__}: {first_line(exc)}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        line += f"; caused by {type(cause).__name__}: {first_line(cause)}"
    return line


def _refused_option(exc: BaseException | None) -> str | None:
    """The keyword a ``TypeError`` in ``exc``'s cause chain refused (``unexpected keyword argument 'x'``)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, TypeError) and (match := re.search(r"unexpected keyword argument '([^']+)'", str(exc))):
            return match.group(1)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def is_remote_url(s: str) -> bool:
    """True for ``proto://...`` URLs other than plain local paths (fsspec chains included)."""
    return "://" in s or "::" in s


def _from_fsspec_object(obj: Any, retries: RetryPolicy | int | Mapping[str, float] | None = None) -> ByteSource | None:
    """A source for an fsspec ``OpenFile`` or an open fsspec file (``fs.open(path)``), else ``None``; rebuilt
    from the filesystem's URL and ``storage_options``, so it pickles by description like any other source."""
    fs, path = getattr(obj, "fs", None), getattr(obj, "path", None)
    if fs is None or not isinstance(path, str) or not hasattr(fs, "cat_file") or not hasattr(fs, "storage_options"):
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        return LocalFileSource(path)
    if hasattr(fs, "fs") or protocol in ("simplecache", "filecache", "blockcache", "cached"):
        return None  # a caching wrapper: cannot be described by one URL; read through the file object
    return FsspecSource(fs.unstrip_protocol(path), fs.storage_options, retries=retries, _fs=fs)
