"""Remote reads through fsspec against real servers on 127.0.0.1.

Two servers are started (and stopped) by this module, each on a free port:

* an HTTP server that honours ``Range`` requests (``tests/servers.py``), and
* moto's S3-compatible server, reached through s3fs with dummy credentials and an
  explicit ``endpoint_url`` (the AWS environment variables are set to dummies too, so
  nothing can reach a real AWS endpoint).

Both count every request and every byte they send, and the tests assert how many an
open, a one-object read and a point time series take (run ``pytest -s`` to see them).
"""

from __future__ import annotations

import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from servers import CountingMotoServer, RangeHTTPServer, make_era

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

from xarray_tensogram import open_tensogram  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.io import FsspecSource, LocalFileSource, open_source  # noqa: E402 - after the pytest.importorskip above

pytestmark = pytest.mark.timeout(120)

SAMPLES = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples"
STEPS = 24
NY, NX = 73, 144
BUCKET = "tensogram-test"


def _sample_names() -> list[str]:
    names = []
    for p in sorted(SAMPLES.iterdir()):
        ext = p.suffix
        if ext == ".tet":
            try:
                import xarray_tensogram.assemble.tetr
                import xarray_tensogram.formats.tetr  # noqa: F401 - only: is the format importable here
            except ImportError:
                continue
        if ext in (".tgm", ".tet", ".zt"):
            names.append(p.name)
    return names


SAMPLE_NAMES = _sample_names()


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def era_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The 24 x 4 ERA-like cube (73 x 144 grid), uncompressed and zstd, written by the reference encoder."""
    pytest.importorskip("tensogram")
    folder = tmp_path_factory.mktemp("era")
    out = {}
    for comp in ("none", "zstd"):
        path = folder / f"era_{comp}.tgm"
        path.write_bytes(make_era(NY, NX, steps=STEPS, compression=comp))
        out[comp] = path
    return out


@pytest.fixture(scope="session")
def remote_files(era_files: dict[str, Path]) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in era_files.values()}
    for name in SAMPLE_NAMES:
        files[name] = (SAMPLES / name).read_bytes()
    return files


@pytest.fixture(scope="session")
def http(remote_files: dict[str, bytes]):
    server = RangeHTTPServer({"/" + k: v for k, v in remote_files.items()}).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3(remote_files: dict[str, bytes]):
    """moto's S3 server with the files in a bucket; yields (server, storage_options)."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.moto_server.threaded_moto_server")
    saved = {k: os.environ.get(k) for k in _AWS_ENV}
    server = CountingMotoServer().start()
    os.environ.update(_AWS_ENV)
    os.environ["AWS_ENDPOINT_URL"] = server.endpoint_url  # even a misconfigured client stays local
    options = {
        "anon": False,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": server.endpoint_url, "region_name": "eu-west-1"},
        "config_kwargs": {"connect_timeout": 5, "read_timeout": 30, "retries": {"max_attempts": 1}},
    }
    try:
        import s3fs

        fs = s3fs.S3FileSystem(**options)
        fs.mkdir(BUCKET)
        for name, data in remote_files.items():
            fs.pipe_file(f"{BUCKET}/{name}", data)
        yield server, options
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_ENDPOINT_URL": "",
}


def _local(path: Path, **kw) -> xr.Dataset:
    return xr.open_dataset(path, engine=ENGINE, **kw)


def _where(kind: str, name: str, http, s3) -> tuple[str, dict, object]:
    """(url, storage_options, traffic) for a file on the HTTP or the S3 server."""
    if kind == "http":
        return http.url(name), {}, http.traffic
    server, options = s3
    return f"s3://{BUCKET}/{name}", options, server.traffic


# -- values --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["http", "s3"])
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_bundled_samples_equal_local(kind, name, http, s3):
    """Every bundled sample (all formats present) reads the same over HTTP and S3 as from disk."""
    url, options, _ = _where(kind, name, http, s3)
    with _local(SAMPLES / name) as expected, xr.open_dataset(url, engine=ENGINE, storage_options=options) as ds:
        assert isinstance(ds.encoding.get("source", url), str)
        assert not any(v._in_memory for k, v in ds.data_vars.items())  # lazy until loaded
        xr.testing.assert_identical(ds.load(), expected.load())


@pytest.mark.parametrize("kind", ["http", "s3"])
@pytest.mark.parametrize("comp", ["none", "zstd"])
def test_era_equal_local(kind, comp, http, s3, era_files):
    url, options, _ = _where(kind, era_files[comp].name, http, s3)
    with _local(era_files[comp]) as expected, xr.open_dataset(url, engine=ENGINE, storage_options=options) as ds:
        assert ds["2t"].shape == (STEPS, NY, NX)
        xr.testing.assert_identical(ds.load(), expected.load())


# -- requests and bytes ----------------------------------------------------------------------------
def _measure(traffic, fn):
    traffic.reset()
    out = fn()
    snap = traffic.snapshot()
    traffic.reset()
    return out, snap


@pytest.mark.parametrize("kind", ["http", "s3"])
@pytest.mark.parametrize("comp", ["none", "zstd"])
def test_era_request_counts(kind, comp, http, s3, era_files):
    """Open = metadata only in a few requests; one object = one request; a point series = a few per message."""
    path = era_files[comp]
    size = path.stat().st_size
    url, options, traffic = _where(kind, path.name, http, s3)
    ds, opened = _measure(traffic, lambda: xr.open_dataset(url, engine=ENGINE, storage_options=options))
    with ds, _local(path) as expected:
        # opening: one size request (HEAD), about two small GETs per message, the 2 coordinate objects
        assert opened.heads <= 1
        assert opened.gets <= 2 * STEPS + 4, opened.requests
        # bytes: the reader's 64 KiB metadata window per message, the source's head and tail blocks,
        # the coordinate objects
        assert opened.nbytes <= STEPS * (65536 + 64) + 2 * 65536 + 4096, opened.summary()
        assert not any(r[2] in ("", "bytes=0-") and r[0] == "GET" for r in opened.requests), "a whole-file GET"

        field, one = _measure(traffic, lambda: ds["2t"][5].values)
        np.testing.assert_array_equal(field, expected["2t"][5].values)
        assert one.count == 1 and one.gets == 1, one.requests  # one object = one range request
        with open_tensogram(path) as f:  # exactly the bytes of that object's data frame
            assert one.nbytes == f[5].objects[0].frame_length

        i, j = 40, 100
        series, first = _measure(traffic, lambda: ds["msl"][:, i, j].values)
        np.testing.assert_array_equal(series, expected["msl"][:, i, j].values)
        assert first.gets <= 3 * STEPS, first.requests
        series2, again = _measure(traffic, lambda: ds["msl"][:, i + 1, j].values)
        np.testing.assert_array_equal(series2, expected["msl"][:, i + 1, j].values)
        # descriptors cached: at most one request per message (the first message may sit in the
        # cached head block of the file)
        assert STEPS - 2 <= again.gets <= STEPS, again.requests
        if comp == "none":  # uncompressed: only the row holding the point is fetched
            assert again.nbytes <= STEPS * NX * 4 and all(r[3] <= NX * 4 for r in again.requests)
        print(
            f"\n[{kind} {comp}] file {size} bytes, {STEPS} messages x 4 objects of {NY}x{NX} float32\n"
            f"  open:              {opened.summary()}\n"
            f"  one object:        {one.summary()}\n"
            f"  point series:      {first.summary()} (first), {again.summary()} (descriptors cached)"
        )


@pytest.mark.parametrize("kind", ["http", "s3"])
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_bundled_samples_request_counts(kind, name, http, s3):
    """Small files: opening is the size request plus one GET of the head (here: the whole file)."""
    url, options, traffic = _where(kind, name, http, s3)
    size = (SAMPLES / name).stat().st_size
    ds, opened = _measure(traffic, lambda: xr.open_dataset(url, engine=ENGINE, storage_options=options, chunks={}))
    with ds:
        assert opened.heads == 1 and opened.gets <= 3, opened.requests
        assert opened.nbytes <= size + 65536
        var = next(iter(ds.data_vars))
        block = ds[var].data.blocks[(0,) * ds[var].ndim]
        stacked = ds[var].encoding.get("tensogram_message_keys", {})  # the dims stacked from messages
        objects = math.prod(n for d, n in zip(ds[var].dims, block.shape, strict=True) if d in stacked)
        shipped = pickle.loads(pickle.dumps(block))  # what a worker process receives
        _, chunk = _measure(traffic, lambda: shipped.compute(scheduler="synchronous"))
        # a worker: one range request per object of the chunk (chunks={}: one object per chunk)
        assert 1 <= chunk.gets <= objects and chunk.heads == 0, chunk.requests
        assert chunk.nbytes < size
    print(f"\n[{kind} {name}] {size} bytes: open {opened.summary()}; one chunk in a worker {chunk.summary()}")


def test_large_file_open_reads_metadata_only(http, era_files):
    """Head and tail blocks are cached by the opening source only; nothing else is fetched twice."""
    path = era_files["none"]
    src = open_source(http.url(path.name))
    assert src.read(0, 8) == b"TENSOGRM"
    http.traffic.reset()
    assert src.read(100, 16) == path.read_bytes()[100:116]  # inside the cached head block
    assert http.traffic.count == 0
    clone = pickle.loads(pickle.dumps(src))
    assert clone.read(100, 16) == path.read_bytes()[100:116]
    assert http.traffic.snapshot().requests[-1][3] == 16  # a Dask task fetches exactly its bytes


# -- Dask: threads and processes reopen the remote file themselves ---------------------------------
@pytest.fixture(scope="module")
def process_pool():
    """Two spawned worker processes shared by the Dask tests (started once: spawning costs seconds)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("kind", ["http", "s3"])
def test_dask_threads_and_processes(kind, http, s3, era_files, process_pool):
    path = era_files["zstd"]
    url, options, traffic = _where(kind, path.name, http, s3)
    with _local(path) as expected, xr.open_dataset(url, engine=ENGINE, storage_options=options, chunks={}) as ds:
        assert ds["2t"].chunks == ((1,) * STEPS, (NY,), (NX,))  # one object per chunk
        want = expected["2t"].mean("step").values
        traffic.reset()
        got = ds["2t"].mean("step").compute(scheduler="threads", num_workers=4).values
        np.testing.assert_allclose(got, want, rtol=1e-6)
        # one range request per object (message 0 may be served from the head block cached at open)
        assert STEPS - 1 <= traffic.snapshot().gets <= STEPS
        traffic.reset()
        got = ds["10u"].max().compute(scheduler="processes", pool=process_pool).values
        np.testing.assert_array_equal(got, expected["10u"].max().values)
        snap = traffic.snapshot()
        assert snap.gets == STEPS, snap.requests  # worker processes fetched every chunk themselves
        assert snap.heads == 0  # the pickled source carries the size: no HEAD per task


def test_pickled_source_holds_no_connection(http):
    src = open_source(http.url("era_zstd.tgm"))
    assert isinstance(src, FsspecSource)
    src.read(0, 8)
    state = pickle.dumps(src)
    assert len(state) < 1024
    clone = pickle.loads(state)
    assert clone._fs is None and clone.size == src.size and clone.url == src.url
    assert clone.read(0, 8) == b"TENSOGRM"


def test_pickled_dataset_reads_in_a_fresh_reader(http, era_files):
    path = era_files["none"]
    with xr.open_dataset(http.url(path.name), engine=ENGINE) as ds, _local(path) as expected:
        clone = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(clone["10v"][3, :5].values, expected["10v"][3, :5].values)


# -- URL forms -------------------------------------------------------------------------------------
def test_chained_simplecache_url(http, tmp_path):
    name = "forecast.tgm"
    cache = tmp_path / "cache"
    url = "simplecache::" + http.url(name)
    options = {"simplecache": {"cache_storage": str(cache)}}
    with xr.open_dataset(url, engine=ENGINE, storage_options=options) as ds, _local(SAMPLES / name) as expected:
        xr.testing.assert_identical(ds.load(), expected.load())
    assert any(cache.iterdir())  # fsspec downloaded the file into our cache


def test_file_urls(tmp_path):
    path = SAMPLES / "forecast.tgm"
    url = path.as_uri()
    assert isinstance(open_source(url), LocalFileSource)
    src = open_source(url, {"auto_mkdir": False})  # options given: read through fsspec's local filesystem
    assert isinstance(src, FsspecSource)
    with _local(path) as expected:
        for opts in (None, {"auto_mkdir": False}):
            with xr.open_dataset(url, engine=ENGINE, storage_options=opts) as ds:
                xr.testing.assert_identical(ds.load(), expected.load())


def test_fsspec_file_objects(http):
    """An fsspec OpenFile or open file is read by URL (ranged), and still pickles."""
    url = http.url("forecast.tgm")
    with _local(SAMPLES / "forecast.tgm") as expected:
        fs, path = fsspec.core.url_to_fs(url)
        with fs.open(path, "rb") as f:
            src = open_source(f)
            assert isinstance(src, FsspecSource) and src.url == url  # read by URL, not through the handle
            with xr.open_dataset(f, engine=ENGINE) as ds:
                clone = pickle.loads(pickle.dumps(ds))
                xr.testing.assert_identical(clone.load(), expected.load())


def test_storage_options_reach_fsspec(http):
    """HTTP headers from storage_options are sent with every range request."""
    seen = []
    original = http._server.RequestHandlerClass.do_GET

    def spy(handler):
        seen.append(handler.headers.get("X-Tensogram-Test"))
        original(handler)

    http._server.RequestHandlerClass.do_GET = spy
    try:
        with xr.open_dataset(
            http.url("forecast.tgm"), engine=ENGINE, storage_options={"headers": {"X-Tensogram-Test": "yes"}}
        ) as ds:
            _ = ds["2t"][0].values
    finally:
        http._server.RequestHandlerClass.do_GET = original
    assert seen and set(seen) == {"yes"}


def test_s3_client_talks_to_loopback_only(s3):
    import s3fs

    server, options = s3
    fs = s3fs.S3FileSystem(**options)
    fs.connect()
    assert fs.s3.meta.endpoint_url == server.endpoint_url
    assert server.endpoint_url.startswith("http://127.0.0.1:")


# -- errors ----------------------------------------------------------------------------------------
def test_missing_remote_file_is_one_clear_error(http, s3):
    with pytest.raises(FileNotFoundError, match="no such remote file"):
        xr.open_dataset(http.url("nope.tgm"), engine=ENGINE)
    _server, options = s3
    with pytest.raises(FileNotFoundError, match="no such remote file"):
        xr.open_dataset(f"s3://{BUCKET}/nope.tgm", engine=ENGINE, storage_options=options)


def test_server_ignoring_ranges_is_reported(era_files):
    data = era_files["zstd"].read_bytes()
    with (
        RangeHTTPServer({"/f.tgm": data}, honour_ranges=False) as server,
        pytest.raises(ValueError, match="ignores HTTP Range"),
    ):
        xr.open_dataset(server.url("f.tgm"), engine=ENGINE)
