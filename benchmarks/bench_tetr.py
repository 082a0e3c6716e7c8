"""Tetration .tet read speed: tiles through xarray + Dask against ``zstandard`` alone.

One run, same file, same warm page cache: a 4096x4096 float32 dataset (64 MiB) in
256x256 zstd tiles (256 tiles), written into a temporary directory and deleted
afterwards. Timings are medians of several repetitions after one warm-up.
Measured side by side:

- bytes read from the file for a 256x256 window inside one tile, and for one
  straddling four tiles (``ByteSource.bytes_read``);
- ``xr.open_dataset(path, engine="tensogram", chunks={})`` then ``.compute()`` with
  Dask's threaded scheduler on 1 and on 2 threads (``num_workers``);
- ``zstandard`` decompressing the same tile payloads, already in memory, on 1 and
  2 threads: the ceiling for our decode path.

Run: ``python benchmarks/bench_tetr.py [--size 4096] [--tile 256] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import xarray as xr
import zstandard

from xarray_tensogram.array import read_outer
from xarray_tensogram.formats.tetr import DatasetWrite, open_tetr, write_tetr
from xarray_tensogram.io import open_source


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each function after one warm-up each.

    Runs are interleaved (A, B, C, D, A, B, ...) so that a burst of load from other
    processes on the machine hits every variant alike instead of skewing one ratio.
    """
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for label, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def make_field(n: int) -> np.ndarray:
    """A smooth field plus a little noise: compresses like real model output (about 2-3x), not like zeros."""
    y, x = np.meshgrid(
        np.linspace(0, 8 * np.pi, n, dtype=np.float32), np.linspace(0, 6 * np.pi, n, dtype=np.float32), indexing="ij"
    )
    rng = np.random.default_rng(0)
    field = 280 + 15 * np.sin(y) * np.cos(x) + rng.normal(0, 0.05, size=(n, n)).astype(np.float32)
    return np.round(field, 2).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (other processes share these cores)")
    n, tile = args.size, args.tile
    values = make_field(n)
    mib = values.nbytes / 2**20

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.tet"
        t0 = time.perf_counter()
        write_tetr(path, [DatasetWrite("v", values, (tile, tile), "zstd", dim_names=["y", "x"])])
        write_s = time.perf_counter() - t0
        size = path.stat().st_size
        print(
            f"file: {n}x{n} float32 ({mib:.0f} MiB) in {tile}x{tile} zstd tiles -> {size / 2**20:.1f} MiB on disk "
            f"(ratio {values.nbytes / size:.2f}), written in {write_s:.2f} s"
        )

        # -- bytes read for windows -------------------------------------------------------------
        src = open_source(path)
        with open_tetr(src) as t:
            d = t.dataset("v")
            spec = t.array_spec("v")
            opened = src.bytes_read
            one = d.entries[d.table[1, 2]]
            before = src.bytes_read
            win = read_outer(spec, (slice(tile, 2 * tile), slice(2 * tile, 3 * tile)))
            inside = src.bytes_read - before
            assert np.array_equal(win, values[tile : 2 * tile, 2 * tile : 3 * tile])
            before = src.bytes_read
            read_outer(spec, (slice(tile // 2, tile // 2 + tile), slice(tile // 2, tile // 2 + tile)))
            straddle = src.bytes_read - before
            payloads = [bytes(src.read(int(e["offset"]), int(e["stored"]))) for e in d.entries]
            raw_lens = [int(e["raw"]) for e in d.entries]
        print(f"open (metadata only): {opened} bytes read")
        print(
            f"{tile}x{tile} window inside one tile: {inside} bytes read "
            f"(that tile's payload: {int(one['stored'])} bytes; file {size} bytes)"
        )
        print(f"{tile}x{tile} window straddling 4 tiles: {straddle} bytes read")

        # -- full loads ---------------------------------------------------------------------------
        def load(workers: int) -> Callable[[], object]:
            def run() -> object:
                with xr.open_dataset(path, engine="tensogram", chunks={}) as ds:
                    out = ds.v.compute(scheduler="threads", num_workers=workers)
                return out

            return run

        def zstd_alone(workers: int) -> Callable[[], object]:
            def one_tile(i: int) -> bytes:
                return zstandard.ZstdDecompressor().decompress(payloads[i], max_output_size=raw_lens[i])

            def run() -> object:
                if workers == 1:
                    return [one_tile(i) for i in range(len(payloads))]
                with ThreadPoolExecutor(workers) as pool:
                    return list(pool.map(one_tile, range(len(payloads))))

            return run

        with xr.open_dataset(path, engine="tensogram", chunks={}) as ds:
            chunks = ds.v.chunks
            assert np.array_equal(ds.v.values, values)
        print(f"chunks={{}} gives {len(chunks[0])}x{len(chunks[1])} Dask chunks of {chunks[0][0]}x{chunks[1][0]}")
        results = interleaved_medians(
            {
                "xarray chunks={} 1 thread": load(1),
                "xarray chunks={} 2 threads": load(2),
                "zstandard alone 1 thread": zstd_alone(1),
                "zstandard alone 2 threads": zstd_alone(2),
            },
            args.repeat,
        )
        print(f"\n{'full load (median of ' + str(args.repeat) + ')':<34} {'seconds':>8} {'MB/s':>8}")
        for label, s in results.items():
            print(f"{label:<34} {s:>8.3f} {values.nbytes / 1e6 / s:>8.0f}")
        x1, x2 = results["xarray chunks={} 1 thread"], results["xarray chunks={} 2 threads"]
        z1, z2 = results["zstandard alone 1 thread"], results["zstandard alone 2 threads"]
        print(f"\nspeed-up of 2 threads over 1 (xarray): {x1 / x2:.2f}x   (zstandard alone: {z1 / z2:.2f}x)")
        print(f"xarray throughput / zstandard alone: {z1 / x1:.2f} on 1 thread, {z2 / x2:.2f} on 2 threads")


if __name__ == "__main__":
    main()
