"""Ranged HTTP(S) reads that keep what arrived, retry what did not, and notice a file that changed.

fsspec's ``cat_file`` loses the half of a range that arrived before a connection reset, and hides the headers
that say whether the file is still the one opened. So HTTP(S) ranges are read here, on fsspec's own aiohttp
session and event loop (its client options and credentials apply): the body is streamed into a buffer, a fault
asks again for exactly the bytes still missing, and every answer's ``ETag``, ``Last-Modified`` and
``Content-Range`` total are compared with what the open saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FileChangedError, RemoteReadError, XarrayTensogramError
from .retry import Fault, Retrying, transient

__all__ = ["Stamp", "get_range", "is_http"]

#: how much of a body is taken off the socket at a time
_PIECE = 1 << 16


@dataclass(frozen=True)
class Stamp:
    """What identifies the version of a remote file that was opened: its size, ETag and Last-Modified."""

    size: int
    etag: str | None = None
    modified: str | None = None

    def changes(self, headers: Mapping[str, str]) -> list[str]:
        """What an answer's headers say changed since the open (empty when nothing did, or nothing is known)."""
        total = (headers.get("Content-Range") or "").rpartition("/")[2]
        seen = [
            ("ETag", self.etag, headers.get("ETag")),
            ("Last-Modified", self.modified, headers.get("Last-Modified")),
            ("size", str(self.size), str(int(total)) if total.isdigit() else None),
        ]
        return [f"{what} {was} -> {now}" for what, was, now in seen if was and now and now != was]


def changed(url: str, *what: str) -> FileChangedError:
    """The error for a remote file that is no longer the one that was opened."""
    return FileChangedError(
        f"{url}: the remote file changed since it was opened ({'; '.join(what)}); its bytes would mix two versions. "
        "Open it again to read the new version"
    )


def is_http(fs: Any) -> bool:
    """fsspec's HTTP filesystem (not a caching wrapper around one): its ranges are read by :func:`get_range`, on
    the filesystem's event loop (``fsspec.asyn.sync``)."""
    return hasattr(fs, "set_session") and hasattr(fs, "encode_url") and not hasattr(fs, "fs")


async def get_range(fs: Any, url: str, offset: int, length: int, stamp: Stamp, retrying: Retrying) -> bytes:
    """Exactly ``length`` bytes at ``offset`` of ``url``, retried per ``retrying``; never a body of another length."""
    session = await fs.set_session()
    body = bytearray()
    while True:
        try:
            await _get_into(session, fs, url, offset + len(body), length - len(body), stamp, body)
        except (XarrayTensogramError, FileNotFoundError):  # a changed file too: none is worth another try
            raise
        except Exception as exc:  # classified: transient faults are retried, the others reported at once
            fault = transient(exc)
        else:
            if len(body) == length:
                return bytes(body)
            fault = Fault(True, f"short body: {len(body)} of {length} bytes arrived")
        await asyncio.sleep(retrying.wait(fault, length - len(body)))


async def _get_into(session: Any, fs: Any, url: str, start: int, n: int, stamp: Stamp, body: bytearray) -> None:
    """One ``GET`` of bytes ``start`` to ``start + n - 1``, appended to ``body`` as they arrive (kept if it fails)."""
    kw = dict(fs.kwargs)
    headers = {**(kw.pop("headers", None) or {}), "Range": f"bytes={start}-{start + n - 1}"}
    async with session.get(fs.encode_url(url), headers=headers, **kw) as r:
        if r.status == 404:
            raise FileNotFoundError(f"{url}: the remote file disappeared (HTTP 404)")
        if r.status in (412, 416):  # a condition that held at the open fails, or the range lies past the end now
            raise changed(url, f"HTTP {r.status} for bytes {start}-{start + n - 1}")
        r.raise_for_status()
        moved = stamp.changes(r.headers)
        if moved:
            raise changed(url, *moved)
        if r.status != 206 and not (start == 0 and n == stamp.size):
            raise XarrayTensogramError(
                f"{url}: asked for bytes {start}-{start + n - 1}, the server sent the whole file (HTTP {r.status}): "
                "it ignores HTTP Range requests; use a 'simplecache::' URL to download the file first"
            )
        first = (r.headers.get("Content-Range") or "").removeprefix("bytes ").partition("-")[0]
        if first.isdigit() and int(first) != start:
            raise RemoteReadError(f"{url}: asked for bytes from {start}, the server sent bytes from {first}")
        async for piece in r.content.iter_chunked(_PIECE):
            if len(piece) > n:
                raise RemoteReadError(f"{url}: asked for {n} bytes at {start}, the server sent more")
            body += piece
            n -= len(piece)
