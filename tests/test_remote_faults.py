"""Remote reads against a loopback HTTP server that fails on purpose (``tests/servers.py``'s :class:`Faults`).

Each file (``.tgm``, ``.tet``, ``.zt``, about 1 MB, so that payload reads fall outside the blocks the
open caches) is served from 127.0.0.1 and read with and without Dask while the server answers 503,
429 or 500, resets the connection halfway through a body, or sends half the bytes asked for on every
n-th request. The values must equal those of the local file; a fault that persists must end in a
:class:`RemoteReadError` naming the URL and the range, and a file replaced after the open in a
:class:`FileChangedError`. Run with ``-s`` for the retries seen and the bytes asked for again.
"""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from servers import Faults, RangeHTTPServer, make_era

pytest.importorskip("fsspec")
aiohttp = pytest.importorskip("aiohttp")

from xarray_tensogram import FileChangedError, RemoteReadError, to_tetr, to_ztensor  # noqa: E402 - after the skips
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE  # noqa: E402 - after the skips
from xarray_tensogram.errors import UnsupportedOptionError  # noqa: E402 - after the skips
from xarray_tensogram.io import FsspecSource, RetryPolicy  # noqa: E402 - after the skips
from xarray_tensogram.io.retry import Fault, Retrying, retry_after_seconds, transient  # noqa: E402 - after the skips

pytestmark = pytest.mark.timeout(120)

FORMATS = ("tgm", "tet", "zt")
#: fast retries for the tests (the defaults wait 0.2 s, 0.4 s, ...)
FAST = {"retries": 8, "backoff": 0.001, "max_delay": 0.01, "timeout": 30}
#: what the runs saw, printed at the end (``-s``): per run, the faults served (each one retry), the bytes
#: they withheld (asked for again) and the bytes the faulted requests had asked for
FIGURES: dict[str, tuple[int, int, int]] = {}


@pytest.fixture(scope="module", autouse=True)
def _print_figures():
    yield
    for kind in ("503", "429", "reset", "short"):
        runs = [v for k, v in FIGURES.items() if k.split()[1] == kind]
        if runs:
            retries, again, asked = (sum(column) for column in zip(*runs, strict=True))
            print(
                f"\nfault runs {kind:>5}: {len(runs)} runs, {retries} retries, {again} bytes asked for again "
                f"(the faulted requests had asked for {asked})"
            )


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(7)
    data = {f"v{i}": (("y", "x"), rng.normal(size=(120, 160)).astype("f4")) for i in range(6)}
    return xr.Dataset(data, coords={"y": np.arange(120.0), "x": np.arange(160.0)})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("tensogram")
    folder = tmp_path_factory.mktemp("faults")
    out = {"tgm": folder / "f.tgm", "tet": folder / "f.tet", "zt": folder / "f.zt"}
    out["tgm"].write_bytes(make_era(73, 144, steps=6, compression="none"))
    to_tetr(_dataset(), out["tet"])
    to_ztensor(_dataset(), out["zt"])
    return out


@pytest.fixture(scope="module")
def expected(files: dict[str, Path]) -> dict[str, xr.Dataset]:
    return {fmt: xr.open_dataset(p, engine=ENGINE).load() for fmt, p in files.items()}


@pytest.fixture
def server(files: dict[str, Path]):
    with RangeHTTPServer({f"/f.{fmt}": p.read_bytes() for fmt, p in files.items()}) as srv:
        yield srv


def _open(url: str, chunks: dict[str, int] | None, **options: object) -> xr.Dataset:
    return xr.open_dataset(url, engine=ENGINE, chunks=chunks, retries=options.pop("retries", FAST), **options)


def _assert_same(got: xr.Dataset, want: xr.Dataset) -> None:
    assert sorted(got.variables) == sorted(want.variables)
    for name, var in want.variables.items():
        np.testing.assert_array_equal(got[name].values, var.values, err_msg=name)


@pytest.mark.parametrize("chunks", [None, {}], ids=["numpy", "dask"])
@pytest.mark.parametrize("kind", ["503", "429", "reset", "short"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_transient_faults_are_retried_and_values_equal_the_local_file(server, expected, fmt, kind, chunks):
    server.faults = Faults(every=3, kind=kind, retry_after="0" if kind == "429" else None)
    ds = _open(server.url(f"f.{fmt}"), chunks)
    _assert_same(ds.load(), expected[fmt])
    assert server.faults.injected > 0, "the server injected no fault: the test would prove nothing"
    FIGURES[f"{fmt} {kind} {'dask' if chunks is not None else 'numpy'}"] = (
        server.faults.injected,
        server.faults.missing,
        server.faults.asked,
    )


def test_a_retry_asks_for_exactly_the_bytes_still_missing(server, files):
    size = files["tgm"].stat().st_size
    src = FsspecSource(server.url("f.tgm"), retries=FAST)
    server.traffic.reset()
    server.faults = Faults(every=1, kind="short")  # every answer carries half of what was asked
    offset, length = size // 3, 200_000
    data = src.read(offset, length)
    assert data == files["tgm"].read_bytes()[offset : offset + length]
    ranges = [r[2] for r in server.traffic.requests]
    # each request starts where the bytes received so far end, and goes to the same last byte
    starts = [int(r.removeprefix("bytes=").partition("-")[0]) for r in ranges]
    ends = {int(r.partition("-")[2]) for r in ranges}
    assert ends == {offset + length - 1}
    assert starts[0] == offset and all(b > a for a, b in itertools.pairwise(starts))
    assert server.traffic.nbytes == length  # nothing arrived twice
    assert src.counts["retries"] == len(ranges) - 1


def test_a_connection_reset_keeps_the_bytes_that_arrived(server, files):
    size = files["zt"].stat().st_size
    src = FsspecSource(server.url("f.zt"), retries=FAST)
    server.traffic.reset()
    server.faults = Faults(every=2, kind="reset", seen=1)  # the first request is reset halfway through its body
    data = src.read(1000, size - 2000)
    assert data == files["zt"].read_bytes()[1000 : size - 1000]
    assert src.counts["retries"] == 1
    # the second request starts past the bytes that arrived before the reset
    starts = [int(r[2].removeprefix("bytes=").partition("-")[0]) for r in server.traffic.requests]
    assert starts[0] == 1000 and starts[1] > 1000, starts
    assert src.counts["bytes_refetched"] == size - 1000 - starts[1]


@pytest.mark.parametrize("chunks", [None, {}], ids=["numpy", "dask"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_server_failing_for_good_after_the_open_raises_remote_read_error(server, fmt, chunks):
    url = server.url(f"f.{fmt}")
    ds = _open(url, chunks, retries={"retries": 2, "backoff": 0.001})
    server.faults = Faults(always=500)
    with pytest.raises(RemoteReadError) as info:
        ds.load()
    text = str(info.value)
    assert url in text and "bytes " in text and "HTTP 500" in text and "3 tries" in text
    assert "retries=" in text  # what to try
    assert isinstance(info.value, OSError)
    # one range: the first try and two retries, then the error (Dask reads several chunks at once)
    assert server.faults.injected == 3 if chunks is None else server.faults.injected >= 3


def test_an_answer_retrying_cannot_fix_is_reported_at_once(server):
    ds = _open(server.url("f.zt"), None)
    server.faults = Faults(always=403)
    with pytest.raises(RemoteReadError, match=r"HTTP 403.*check the URL"):
        ds.load()
    assert server.faults.injected == 1


def test_the_open_itself_is_retried(server, expected):
    server.faults = Faults(every=2, kind="503")
    ds = _open(server.url("f.tet"), None)
    _assert_same(ds.load(), expected["tet"])
    assert server.faults.injected > 0


def test_retries_zero_gives_up_at_the_first_fault(server):
    ds = _open(server.url("f.tgm"), None, retries=0)
    server.faults = Faults(every=1, kind="503")
    with pytest.raises(RemoteReadError, match="1 tries"):
        ds.load()


def _replaced(data: bytes, how: str = "same-size") -> bytes:
    if how == "grown":
        return data + b"\0" * 100
    if how == "shrunk":
        return data[: len(data) // 3]
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


@pytest.mark.parametrize("how", ["same-size", "grown", "shrunk"])
@pytest.mark.parametrize("chunks", [None, {}], ids=["numpy", "dask"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_replaced_after_the_open_raises_file_changed(server, files, fmt, chunks, how):
    url = server.url(f"f.{fmt}")
    ds = _open(url, chunks)
    server.add(f"f.{fmt}", _replaced(files[fmt].read_bytes(), how))
    with pytest.raises(FileChangedError, match=url.replace(".", r"\.")):
        ds.load()


def test_a_pickled_source_still_knows_the_file_it_opened(server, files):
    src = FsspecSource(server.url("f.tgm"), retries=FAST)
    copy = pickle.loads(pickle.dumps(src))
    assert copy.policy == src.policy and copy.stamp == src.stamp
    server.add("f.tgm", _replaced(files["tgm"].read_bytes()))
    with pytest.raises(FileChangedError, match="ETag"):
        copy.read(500_000, 1000)


# -- the policy and the classification, without a server ----------------------------------------------------------
def test_retry_after_is_honoured_and_bounded():
    policy = RetryPolicy(retries=3, backoff=0.01, max_delay=0.02, timeout=5)
    retrying = Retrying(policy, "http://127.0.0.1:1/f", 0, 10)
    assert retrying.wait(Fault(True, "HTTP 429", 429, 2.5), 10) >= 2.5  # the server's wait, not the backoff's
    with pytest.raises(RemoteReadError, match="passes the 5 s limit"):
        retrying.wait(Fault(True, "HTTP 429", 429, 60.0), 10)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    assert retry_after_seconds("soon") is None


def test_backoff_doubles_up_to_max_delay_and_the_tries_are_bounded():
    retrying = Retrying(RetryPolicy(retries=5, backoff=1.0, max_delay=4.0, timeout=1000), "u", 0, 1)
    delays = [retrying.wait(Fault(True, "reset"), 1) for _ in range(5)]
    for delay, bound in zip(delays, [1, 2, 4, 4, 4], strict=True):
        assert bound / 2 <= delay <= bound  # jittered in [bound/2, bound]
    with pytest.raises(RemoteReadError, match="still failing after 6 tries"):
        retrying.wait(Fault(True, "reset"), 1)


def test_faults_are_classified_through_the_chain_of_causes():
    request = aiohttp.RequestInfo(url=__import__("yarl").URL("http://127.0.0.1/x"), method="GET", headers={})
    busy = aiohttp.ClientResponseError(request, (), status=503, message="busy", headers={"Retry-After": "3"})
    try:
        raise FileNotFoundError("http://127.0.0.1/x") from busy
    except FileNotFoundError as wrapped:
        fault = transient(wrapped)
    assert fault.transient and fault.status == 503 and fault.retry_after == 3.0
    assert transient(ConnectionResetError("reset")).transient
    assert transient(aiohttp.ClientPayloadError("cut")).transient
    assert not transient(aiohttp.ClientResponseError(request, (), status=404)).transient
    assert not transient(ValueError("bad")).transient


@pytest.mark.parametrize("bad", ["4", True, {"retry": 3}, {"timeout": -1}])
def test_a_bad_retries_option_is_refused(bad, files):
    with pytest.raises(UnsupportedOptionError, match="retries"):
        RetryPolicy.of(bad)
    with pytest.raises(UnsupportedOptionError, match="retries"):  # for a local file too
        xr.open_dataset(files["zt"], engine=ENGINE, retries=bad)


# -- virtual references over plain http:// --------------------------------------------------------------------------
def _virtual(url: str) -> xr.Dataset:
    pytest.importorskip("virtualizarr")
    pytest.importorskip("obstore")
    from xarray_tensogram.virtual.parsers import parser_for
    from xarray_tensogram.virtual.refs import registry_for

    store = parser_for(url)(url, registry_for([url]))
    return xr.open_zarr(store, consolidated=False, zarr_format=3, chunks=None)


@pytest.mark.parametrize("fmt", FORMATS)
def test_virtual_references_over_plain_http_read_their_chunks_through_faults(server, expected, fmt):
    ds = _virtual(server.url(f"f.{fmt}"))
    server.faults = Faults(every=3, kind="503")  # obstore's own retries see these
    got = ds.load()
    assert server.faults.injected > 0
    assert sorted(got.data_vars) == sorted(expected[fmt].data_vars)
    for name in got.data_vars:
        np.testing.assert_array_equal(got[name].values, expected[fmt][name].values, err_msg=name)


@pytest.mark.parametrize("fmt", FORMATS)
def test_virtual_references_to_a_file_replaced_on_the_server_raise_file_changed(server, files, fmt):
    url = server.url(f"f.{fmt}")
    ds = _virtual(url)
    server.add(f"f.{fmt}", _replaced(files[fmt].read_bytes()))
    with pytest.raises(FileChangedError, match=url.replace(".", r"\.")):
        ds.load()
