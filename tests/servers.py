"""Real servers on the loopback interface for the remote-read tests.

* :class:`RangeHTTPServer`: a small threaded HTTP server (``http.server``) that serves
  files from memory, honours ``Range: bytes=a-b`` (206 Partial Content), answers
  ``HEAD`` with the size, an ``ETag`` and a ``Last-Modified`` (both change when a file is
  replaced), and counts every request and every payload byte it sends. Its :class:`Faults`
  inject what real servers do now and then: a 503/429/500 or a connection reset on every
  n-th request, bodies shorter than asked, or one status for every request from now on.
* :class:`CountingMotoServer`: moto's S3-compatible server (``ThreadedMotoServer``)
  behind a WSGI middleware that counts requests and response bytes the same way.

Both bind ``127.0.0.1`` on a free port chosen by the kernel and are started and
stopped by the tests themselves.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CountingMotoServer", "Faults", "RangeHTTPServer", "Traffic"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Traffic:
    """What a server has sent: requests by method and payload bytes (thread-safe)."""

    requests: list[tuple[str, str, str, int]] = field(default_factory=list)  # (method, path, range, bytes)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, method: str, path: str, rng: str, nbytes: int) -> None:
        with self.lock:
            self.requests.append((method, path, rng, nbytes))

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()

    def snapshot(self) -> Traffic:
        with self.lock:
            return Traffic(list(self.requests))

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def gets(self) -> int:
        return sum(1 for r in self.requests if r[0] == "GET")

    @property
    def heads(self) -> int:
        return sum(1 for r in self.requests if r[0] == "HEAD")

    @property
    def nbytes(self) -> int:
        return sum(r[3] for r in self.requests)

    def summary(self) -> str:
        return f"{self.count} requests ({self.gets} GET, {self.heads} HEAD), {self.nbytes} bytes"


@dataclass
class Faults:
    """What a :class:`RangeHTTPServer` does wrong, and how often it did it (thread-safe).

    ``every``: every n-th request (``HEAD`` and ``GET``, counted together; 0: none) fails as ``kind``
    says: ``"503"``, ``"429"`` or ``"500"`` (with ``Retry-After: retry_after`` when given), ``"reset"``
    (a ``GET`` sends its headers and half its body, then the connection is reset; a ``HEAD`` is reset
    before any answer) or ``"short"`` (a ``GET`` answers a correct 206 for the first half of the range
    only). ``always``: every request from now on is answered with this status. ``injected`` counts the
    faults served, ``missing`` the payload bytes they withheld (what a client must ask for again) and
    ``asked`` the payload bytes the faulted requests asked for (what retrying whole ranges would cost).
    """

    every: int = 0
    kind: str = "503"
    retry_after: str | None = None
    always: int | None = None
    seen: int = 0
    injected: int = 0
    missing: int = 0
    asked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pick(self, method: str) -> str | None:
        """The fault for this request, if any (counted)."""
        with self.lock:
            self.seen += 1
            if self.always is not None:
                self.injected += 1
                return str(self.always)
            if not self.every or self.seen % self.every or (method == "HEAD" and self.kind == "short"):
                return None
            self.injected += 1
            return self.kind

    def withheld(self, nbytes: int, of: int) -> None:
        with self.lock:
            self.missing += nbytes
            self.asked += of


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as real object stores
    disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stalls)

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        pass

    def _lookup(self) -> bytes | None:
        path = self.path.split("?", 1)[0]
        return self.server.files.get(path)

    def do_HEAD(self) -> None:
        data = self._lookup()
        if data is None:
            self._not_found("HEAD")
            return
        if self._fault("HEAD", b"") is not None:
            return
        self.server.traffic.record("HEAD", self.path, "", 0)
        self.send_response(200)
        self._validators()
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()

    def do_GET(self) -> None:
        data = self._lookup()
        if data is None:
            self._not_found("GET")
            return
        size = len(data)
        rng = self.headers.get("Range", "")
        if rng and self.server.honour_ranges:
            m = _RANGE.match(rng.strip())
            start = end = None
            if m and (m.group(1) or m.group(2)):
                a, b = m.group(1), m.group(2)
                if a == "":  # suffix range: the last b bytes
                    n = min(int(b), size)
                    start, end = size - n, size - 1
                else:
                    start = int(a)
                    end = min(int(b), size - 1) if b else size - 1
            if start is None or start >= size or end < start:
                self.server.traffic.record("GET", self.path, rng, 0)
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = data[start : end + 1]
            fault = self._fault("GET", body)
            if fault == "short" and len(body) > 1:
                self.server.faults.withheld(len(body) - len(body) // 2, len(body))
                body, end = body[: len(body) // 2], start + len(body) // 2 - 1
            elif fault not in (None, "short"):
                return
            # record before anything is sent, so a client never sees a response that is not counted yet
            self.server.traffic.record("GET", self.path, rng, len(body))
            self.send_response(206)
            self._validators()
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            body = data
            if self._fault("GET", body) not in (None, "short"):
                return
            self.server.traffic.record("GET", self.path, rng, len(body))
            self.send_response(200)
            self._validators()
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        self.wfile.write(body)

    def _validators(self) -> None:
        etag, modified = self.server.stamps[self.path.split("?", 1)[0]]
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)

    def _fault(self, method: str, body: bytes) -> str | None:
        """Serve the fault this request gets, if any: ``None`` when it gets none; ``"short"`` is left to the caller."""
        fault = self.server.faults.pick(method)
        if fault is None or fault == "short":
            return fault
        self.server.traffic.record(method, self.path, self.headers.get("Range", ""), 0)
        size = len(body)
        if fault == "reset":
            self.server.faults.withheld(size - size // 2, size)
            if method == "GET" and size > 1:  # headers and half the body, then a reset
                self.send_response(206)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                self.wfile.write(body[: size // 2])
                self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return fault
        self.server.faults.withheld(size, size)
        self.send_response(int(fault))
        if self.server.faults.retry_after is not None:
            self.send_header("Retry-After", self.server.faults.retry_after)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return fault

    def _not_found(self, method: str) -> None:
        self.server.traffic.record(method, self.path, "", 0)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    files: dict[str, bytes]
    stamps: dict[str, tuple[str, str]]
    traffic: Traffic
    faults: Faults
    honour_ranges: bool

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a reset connection (a fault it served on purpose, or a client gone) is not news


def _stamp(data: bytes, version: int) -> tuple[str, str]:
    """``ETag`` and ``Last-Modified`` of one version of a file (a file replaced gets new ones)."""
    etag = '"' + hashlib.sha256(data).hexdigest()[:16] + f'-{version}"'
    return etag, email.utils.formatdate(1_700_000_000 + version, usegmt=True)


class RangeHTTPServer:
    """Serve ``{"/name": bytes}`` over HTTP on 127.0.0.1 with Range support; a context manager."""

    def __init__(self, files: dict[str, bytes] | None = None, *, honour_ranges: bool = True) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.files = {}
        self._server.stamps = {}
        self._server.traffic = Traffic()
        self._server.faults = Faults()
        for name, data in (files or {}).items():
            self.add(name, data)
        self._server.honour_ranges = honour_ranges
        self._thread: threading.Thread | None = None

    @property
    def traffic(self) -> Traffic:
        return self._server.traffic

    @property
    def faults(self) -> Faults:
        return self._server.faults

    @faults.setter
    def faults(self, faults: Faults) -> None:
        self._server.faults = faults

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name.lstrip('/')}"

    def add(self, name: str, data: bytes) -> str:
        """Serve ``data`` as ``name`` (replacing a file of that name: new ETag and Last-Modified); its URL."""
        key = "/" + name.lstrip("/")
        self._server.stamps[key] = _stamp(data, len(self._server.stamps) + 1)
        self._server.files[key] = bytes(data)
        return self.url(name)

    def start(self) -> RangeHTTPServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="range-http-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> RangeHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _CountingApp:
    """WSGI middleware: record method, path, Range header and response body bytes."""

    def __init__(self, app: Callable[..., Iterable[bytes]], traffic: Traffic) -> None:
        self.app = app
        self.traffic = traffic

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = list(self.app(environ, start_response))
        self.traffic.record(
            environ.get("REQUEST_METHOD", "?"),
            environ.get("PATH_INFO", ""),
            environ.get("HTTP_RANGE", ""),
            sum(len(b) for b in body),
        )
        return body


class CountingMotoServer:
    """moto's S3-compatible server on 127.0.0.1 (free port), counting the traffic it serves."""

    def __init__(self) -> None:
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer

        traffic = Traffic()
        self.traffic = traffic

        class _Threaded(ThreadedMotoServer):
            def _server_entry(self) -> None:  # same as moto's, with the counting middleware
                from moto.moto_server.werkzeug_app import (
                    DomainDispatcherApplication,
                    MotoRequestHandler,
                    create_backend_app,
                )
                from werkzeug.serving import make_server

                app = _CountingApp(DomainDispatcherApplication(create_backend_app), traffic)
                self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever(poll_interval=0.05)

        self._moto = _Threaded(ip_address="127.0.0.1", port=0, verbose=False)
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per request

    def start(self, timeout: float = 30.0) -> CountingMotoServer:
        self._moto.start()
        deadline = time.monotonic() + timeout
        while self._moto._server is None:  # pragma: no cover - start() waits for readiness already
            if time.monotonic() > deadline:
                raise TimeoutError("moto server did not start")
            time.sleep(0.01)
        return self

    @property
    def endpoint_url(self) -> str:
        host, port = self._moto.get_host_and_port()
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._moto.stop()


def make_era(ny: int = 73, nx: int = 144, *, steps: int = 24, compression: str = "none", seed: int = 0) -> bytes:
    """The ERA-like cube with the reference encoder: ``steps`` messages x (2t, msl, 10u, 10v) + lat/lon.

    ``compression`` is ``"none"``, ``"zstd"`` or ``"packed"`` (simple_packing 16 bits + zstd).
    """
    import numpy as np
    import tensogram

    lat = np.linspace(90.0, -90.0, ny)
    lon = np.linspace(0.0, 360.0, nx, endpoint=False)
    lon2, lat2 = np.meshgrid(lon, lat)
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((ny, nx)).astype("f4")
    messages = []
    for s in range(steps):
        step = 6 * s
        fields = {
            "2t": 288.0 - 30.0 * np.abs(np.sin(np.radians(lat2))) + 3.0 * np.cos(np.radians(lon2 - 15 * step)) + noise,
            "msl": 101325.0 + 800.0 * np.sin(np.radians(2 * lat2)) * np.cos(np.radians(lon2 + 10 * step)),
            "10u": 10.0 * np.cos(np.radians(lat2)) * np.sin(np.radians(lon2 + step)) + noise,
            "10v": 5.0 * np.sin(np.radians(3 * lat2)) + np.cos(np.radians(lon2 - step)),
        }
        objects, base = [], []
        for param, field_ in fields.items():
            desc: dict[str, Any] = {"type": "ntensor", "shape": [ny, nx], "dtype": "float32"}
            values = np.ascontiguousarray(field_, dtype="f4")
            if compression == "zstd":
                desc["compression"] = "zstd"
            elif compression == "packed":
                values = values.astype("f8")
                desc.update(dtype="float64", compression="zstd")
                desc.update(tensogram.compute_packing_params(values.ravel(), 16, 0))
                desc["encoding"] = "simple_packing"
            objects.append((desc, values))
            base.append(
                {
                    "mars": {"class": "ea", "param": param, "date": 20240101, "time": 0, "step": step},
                    "dim_names": ["latitude", "longitude"],
                }
            )
        objects.append(({"type": "ntensor", "shape": [ny], "dtype": "float64"}, lat))
        base.append({"name": "latitude", "cf": {"units": "degrees_north"}})
        objects.append(({"type": "ntensor", "shape": [nx], "dtype": "float64"}, lon))
        base.append({"name": "longitude", "cf": {"units": "degrees_east"}})
        messages.append(tensogram.encode({"base": base, "_extra_": {"title": "ERA-like test cube"}}, objects))
    return b"".join(messages)
