"""Retrying remote reads: which faults are worth another try, how long to wait, and when to give up.

Object stores and HTTP servers fail for a moment all the time (a 503 while a node restarts, a 429 when a client
is throttled, a connection reset, a body cut short); one such fault among the thousands of range requests of a
Dask computation must not end it. So every remote read is retried with bounded exponential backoff (the
``retries`` open option); a fault that persists, or that retrying cannot fix (a 403, a 404), becomes a
:class:`~xarray_tensogram.errors.RemoteReadError` naming the URL, the byte range, the cause and what to try.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import RemoteReadError, UnsupportedOptionError, first_line

__all__ = ["RetryPolicy", "Retrying", "transient"]

#: HTTP answers that say "try again": request timeout, throttling, and server-side failures
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How a remote read retries (the ``retries`` open option): ``retries`` more tries after the first, waiting
    ``backoff`` seconds before the first retry and twice as long before each next one (at most ``max_delay``,
    with jitter so that many Dask tasks do not retry in step), or what a ``Retry-After`` answer asks; a range
    still failing after ``timeout`` seconds in all gives up. ``retries=0`` turns retrying off."""

    retries: int = 4
    backoff: float = 0.2
    max_delay: float = 10.0
    timeout: float = 60.0

    @classmethod
    def of(cls, value: RetryPolicy | int | Mapping[str, float] | None) -> RetryPolicy:
        """The policy an open option's value asks for: ``None`` (the defaults), a number of retries, a mapping
        of some of the fields (``{"retries": 8, "timeout": 120}``) or a policy."""
        if isinstance(value, RetryPolicy):
            return value
        names = [f.name for f in fields(cls)]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, Mapping))):
            raise UnsupportedOptionError(
                f"retries={value!r}: give a number of retries (e.g. 4), or a mapping of "
                f"{', '.join(names)} (e.g. {{'retries': 8, 'timeout': 120}})"
            )
        given = {} if value is None else {"retries": value} if isinstance(value, int) else dict(value)
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise UnsupportedOptionError(f"retries: unknown key(s) {unknown}; the keys are {names}")
        bad = [k for k, v in given.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0]
        if bad:
            raise UnsupportedOptionError(f"retries: {bad} must be numbers >= 0 (given {given})")
        return replace(cls(), **{k: type(getattr(cls, k))(v) for k, v in given.items()})  # the fields' types


def _status(exc: BaseException) -> int | None:
    """The HTTP status an error carries (aiohttp's ``status``, gcsfs's and others' ``code``)."""
    values = (getattr(exc, attr, None) for attr in ("status", "code", "status_code"))
    return next((v for v in values if isinstance(v, int) and 100 <= v < 600), None)


def retry_after_seconds(text: str | None) -> float | None:
    """``Retry-After: 3`` or ``Retry-After: <HTTP date>`` as seconds from now (``None`` when absent or unreadable)."""
    if not text:
        return None
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


#: the network faults (a dropped or reset connection, a timeout, a body cut short: not the file's) of the HTTP
#: libraries underneath, by class name (none of them is imported here); ConnectionError and TimeoutError too
_NETWORK = {
    "ClientConnectionError",  # aiohttp: refused, reset, server disconnected, OS errors on the socket
    "ClientPayloadError",  # aiohttp: the body ended before its Content-Length
    "ServerTimeoutError",
    "IncompleteRead",  # http.client, urllib3
    "ProtocolError",  # urllib3
    "ReadTimeoutError",
    "EndpointConnectionError",  # botocore
}


@dataclass(frozen=True)
class Fault:
    """Why one try failed: whether another is worth it, the HTTP status if any, and a wait the server asked for."""

    transient: bool
    cause: str
    status: int | None = None
    retry_after: float | None = None
    #: the error itself, chained to the package error that reports it
    error: BaseException | None = None


def transient(exc: BaseException) -> Fault:
    """Classify an error raised by a remote read, looking through the chain of causes (fsspec wraps a
    failed ``HEAD`` into a ``FileNotFoundError`` caused by the server's 503)."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if (status := _status(seen)) is not None:
            cause = f"HTTP {status} ({first_line(seen)})"
            headers: Any = getattr(seen, "headers", None)  # a wait the server asks for, if the error carries it
            wait = retry_after_seconds(headers.get("Retry-After") if hasattr(headers, "get") else None)
            return Fault(status in RETRY_STATUSES or status >= 500, cause, status, wait, exc)
        if isinstance(seen, (ConnectionError, TimeoutError)) or any(t.__name__ in _NETWORK for t in type(seen).__mro__):
            return Fault(True, f"{type(seen).__name__}: {first_line(seen)}", error=exc)
        seen = seen.__cause__ or seen.__context__
    return Fault(False, f"{type(exc).__name__}: {first_line(exc)}", error=exc)


@dataclass
class Retrying:
    """The retry state of one byte range: counts tries, waits between them, raises when the policy is spent.
    ``url``, ``offset`` and ``length`` name the range in the error; ``counts`` (shared by a source) add up the
    retries and the bytes asked for again, for tests and benchmarks."""

    policy: RetryPolicy
    url: str
    offset: int | None = None
    length: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    tries: int = 0
    started: float = field(default_factory=time.monotonic)
    #: bytes still missing after the last try: a try that brought some counts as progress, not as a failure
    missing: int | None = None

    def wait(self, fault: Fault, missing: int) -> float:
        """Seconds to wait before asking again for the ``missing`` bytes, or raise :class:`RemoteReadError` (at once
        for a fault that retrying cannot fix). A try that brought bytes starts the tries and the backoff afresh (a
        slow server that sends part of each answer is not failing); ``timeout`` still bounds the whole range."""
        if self.missing is not None and missing < self.missing:
            self.tries = 0
        self.missing = missing
        self.tries += 1
        elapsed = time.monotonic() - self.started
        backoff = min(self.policy.max_delay, self.policy.backoff * 2.0 ** (self.tries - 1))
        # jitter: many tasks do not retry in step; a wait the server asks for is kept
        delay = max(backoff * (0.5 + random.random() / 2), fault.retry_after or 0.0)
        if not fault.transient or self.tries > self.policy.retries or elapsed + delay > self.policy.timeout:
            raise RemoteReadError(self._message(fault, elapsed, delay)) from fault.error
        self.counts.update(retries=1, bytes_refetched=missing)
        return delay

    def sleep(self, fault: Fault, missing: int) -> None:
        time.sleep(self.wait(fault, missing))

    def _message(self, fault: Fault, elapsed: float, delay: float) -> str:
        if self.offset is None:
            where = f"{self.url}: asking for the file's size"
        else:
            where = f"{self.url}: bytes {self.offset}-{self.offset + self.length - 1} ({self.length} bytes)"
        if not fault.transient:
            return f"{where}: the read failed: {fault.cause}; check the URL and the credentials (storage_options)"
        if self.tries > self.policy.retries:
            why = f"still failing after {self.tries} tries in {elapsed:.1f} s"
        else:
            why = (
                f"gave up after {self.tries} tries: the next wait ({delay:.1f} s) passes the "
                f"{self.policy.timeout:g} s limit"
            )
        return (
            f"{where}: {why}; last cause: {fault.cause}. The server or the network keeps failing: try again "
            f"later, or allow more with retries={{'retries': {max(self.policy.retries * 2, 8)}, "
            f"'timeout': {self.policy.timeout * 2:g}}}"
        )
