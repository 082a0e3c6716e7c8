"""Byte sources: the only layer that touches files, memory or the network.

A :class:`ByteSource` answers ``read(offset, length)`` with exactly that many bytes. Sources are safe to share
between threads without a lock (local files use ``os.pread``), and pickle as a *description* (path or URL plus
options), never as an open handle: a Dask worker process reopens the file itself.

Local files remember their size and modification time when opened: a payload read after the file changed in
place raises :class:`FileChangedError` rather than mixing two versions. A file replaced by rename keeps serving
the old inode's bytes through the open descriptor; a process that reopens the path (a Dask worker) then raises.
Remote files retry transient faults (:mod:`.retry`) and check each HTTP answer against the open (:mod:`.http`);
writers serialise on an advisory lock (:mod:`.lock`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .atomic import atomic_write, check_target
from .base import ByteSource, RangeColumns, SourceLike
from .local import LocalFileSource
from .memory import BytesSource, FileObjectSource
from .remote import FsspecSource, _from_fsspec_object, is_remote_url
from .retry import RetryPolicy

__all__ = [
    "ByteSource",
    "BytesSource",
    "FileObjectSource",
    "FsspecSource",
    "LocalFileSource",
    "RangeColumns",
    "RetryPolicy",
    "SourceLike",
    "atomic_write",
    "check_target",
    "is_remote_url",
    "open_source",
]


def open_source(
    source: SourceLike,
    storage_options: Mapping[str, Any] | None = None,
    *,
    retries: RetryPolicy | int | Mapping[str, float] | None = None,
) -> ByteSource:
    """Turn a path, URL, PathLike, bytes-like or binary file object into a :class:`ByteSource`. URLs (chained
    ``simplecache::...`` too) are read through fsspec with ``storage_options``, retrying transient faults as
    ``retries`` says (:class:`~.retry.RetryPolicy`); fsspec ``OpenFile`` objects and open fsspec files are read by
    URL too, so they pickle."""
    policy = RetryPolicy.of(retries)  # checked for every source, so that a bad value is refused for local files too
    if isinstance(source, ByteSource):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BytesSource(source)
    if isinstance(source, os.PathLike):
        source = os.fsdecode(source)
    if isinstance(source, str):
        if is_remote_url(source):
            if source.startswith("file://") and not storage_options and "::" not in source:
                return LocalFileSource(source[len("file://") :])
            return FsspecSource(source, storage_options, retries=policy)
        return LocalFileSource(source)
    remote = _from_fsspec_object(source, policy)
    if remote is not None:
        return remote
    if hasattr(source, "read") and hasattr(source, "seek"):
        return FileObjectSource(source)
    raise TypeError(f"cannot read from {type(source).__name__}: pass a path, URL, bytes or a binary file object")
