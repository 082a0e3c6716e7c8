"""Requests and bytes of remote reads, measured on real loopback servers.

Writes the ERA-like cube (24 messages x 2t, msl, 10u, 10v on a 721 x 1440 grid, plus
latitude/longitude, reference encoder), serves it from the Range HTTP server and from
moto's S3 server (``tests/servers.py``), and prints what each operation costs, counted
by the servers:

* opening the file with ``xr.open_dataset(url, engine="tensogram")``,
* reading one object (``ds["2t"][5]``),
* a point time series (``ds["2t"][:, i, j]``), first and second time,
* a reduction over all messages with ``chunks={}`` (Dask threads).

Usage: ``python benchmarks/remote_counts.py [--grid 721x1440] [--compression none,zstd] [--servers http,s3]``
(needs the test extra: tensogram, fsspec, aiohttp, s3fs, moto[server]).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import numpy as np  # noqa: E402 - after the sys.path insert above
import xarray as xr  # noqa: E402 - after the sys.path insert above

from servers import CountingMotoServer, RangeHTTPServer, make_era  # noqa: E402 - after the sys.path insert above
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE  # noqa: E402 - after the sys.path insert above

STEPS = 24


def measure(traffic, fn):
    traffic.reset()
    start = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - start
    snap = traffic.snapshot()
    traffic.reset()
    return out, snap, elapsed


def report(kind: str, comp: str, url: str, options: dict, traffic, size: int, local: Path, ny: int, nx: int) -> None:
    i, j = ny // 2, nx // 2
    ds, opened, t_open = measure(traffic, lambda: xr.open_dataset(url, engine=ENGINE, storage_options=options))
    with ds, xr.open_dataset(local, engine=ENGINE) as expected:
        field, one, t_one = measure(traffic, lambda: ds["2t"][5].values)
        series, first, t_first = measure(traffic, lambda: ds["2t"][:, i, j].values)
        _, again, t_again = measure(traffic, lambda: ds["2t"][:, i + 1, j].values)
        assert np.array_equal(field, expected["2t"][5].values)
        assert np.array_equal(series, expected["2t"][:, i, j].values)
    lazy = xr.open_dataset(url, engine=ENGINE, storage_options=options, chunks={})
    with lazy:
        traffic.reset()
        _, reduce_, t_reduce = measure(traffic, lambda: lazy["msl"].mean("step").compute(scheduler="threads"))

    def row(label: str, snap, seconds: float) -> str:
        return (
            f"  {label:<34} {snap.count:>5} requests ({snap.gets} GET, {snap.heads} HEAD) "
            f"{snap.nbytes:>12,} bytes  {100 * snap.nbytes / size:6.2f}% of file  {seconds * 1e3:8.1f} ms"
        )

    print(f"{kind.upper()} {comp}: {size:,} bytes, {STEPS} messages x 4 objects of {ny}x{nx} float32")
    print(row("open_dataset", opened, t_open))
    print(row("one object  ds['2t'][5]", one, t_one))
    print(row(f"point series ds['2t'][:, {i}, {j}]", first, t_first))
    print(row("  again (descriptors cached)", again, t_again))
    print(row("mean over step, chunks={} (threads)", reduce_, t_reduce))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="721x1440")
    parser.add_argument("--compression", default="none,zstd")
    parser.add_argument("--servers", default="http,s3")
    args = parser.parse_args()
    ny, nx = (int(v) for v in args.grid.split("x"))
    comps = args.compression.split(",")
    kinds = args.servers.split(",")
    workdir = Path(tempfile.mkdtemp(prefix="remote-counts-"))
    files = {}
    for comp in comps:
        path = workdir / f"era_{comp}.tgm"
        path.write_bytes(make_era(ny, nx, steps=STEPS, compression=comp))
        files[comp] = path
    if "http" in kinds:
        with RangeHTTPServer({"/" + p.name: p.read_bytes() for p in files.values()}) as server:
            for comp, path in files.items():
                report("http", comp, server.url(path.name), {}, server.traffic, path.stat().st_size, path, ny, nx)
    if "s3" in kinds:
        for k, v in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }.items():
            os.environ[k] = v
        import s3fs

        server = CountingMotoServer().start()
        try:
            options = {
                "anon": False,
                "key": "testing",
                "secret": "testing",
                "client_kwargs": {"endpoint_url": server.endpoint_url, "region_name": "eu-west-1"},
            }
            fs = s3fs.S3FileSystem(**options)
            fs.mkdir("bench")
            for path in files.values():
                fs.put_file(str(path), f"bench/{path.name}")
            for comp, path in files.items():
                report(
                    "s3", comp, f"s3://bench/{path.name}", options, server.traffic, path.stat().st_size, path, ny, nx
                )
        finally:
            server.stop()
    for path in files.values():
        path.unlink()
    workdir.rmdir()


if __name__ == "__main__":
    main()
