"""Dask opens and loads against Zarr's on the same fields, and against the bare decoder.

The file: 32 fields of 721 x 1440 float32 (the ERA cube of ``run_all.py``, 8 steps x 4 parameters, zstd
level 3), written by the reference encoder as 8 ``.tgm`` messages of 4 objects, and the same values as a
Zarr v3 store with consolidated metadata, one zstd (level 3) chunk per field, written by ``to_zarr``.
Alternated in one process, medians of ``--repeat`` runs after a warm-up:

- ``open``: ``xr.open_dataset(p, engine="tensogram", chunks={})`` against ``xr.open_zarr(z, chunks={})``,
  closed again, with both packages imported and warm (an open in a running session);
- ``first open``: the same in a fresh process each time (``--fresh`` pairs), alternated, xarray and numpy
  imported before the clock starts, every module's bytecode cached; our engine is passed as its class (as
  xarray's built-in Zarr engine is found without loading every installed engine's entry point), so both
  sides count their own package's import, Dask's and the open;
- ``load, N threads``: ``ds.load()`` of the Dask-backed Dataset with Dask's threaded scheduler on N
  workers (open not timed), against Zarr's and against the bare decoder (``zstandard`` into one fresh
  array per variable on N threads, ``run_all.bare_decode``). Memory is warmed before every step
  (``run_all._warm``) and each step's minor page faults are counted (``getrusage``), so that a step
  paying for memory the host took back shows as such.

Run::

    PYTHONPATH=$PWD python benchmarks/bench_dask_zarr.py [--repeat 7] [--fresh 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_all as ra  # noqa: E402 - the runner's files, payloads, bare decoder and memory warm-up

STEPS = 8  # x 4 parameters = 32 fields


def files() -> tuple[Path, Path]:
    """The ``.tgm`` file and the Zarr store of the same values (written once into ``benchmarks/_data``)."""
    import xarray as xr

    tgm = ra.tgm_cube(ra.Sizes(steps=STEPS), "zstd")
    store = tgm.with_suffix(".zarr")
    if not store.exists():
        from zarr.codecs import ZstdCodec

        with xr.open_dataset(tgm, engine="tensogram") as ds:
            ds = ds.load().drop_encoding()
        encoding = {v: {"chunks": (1, *ds[v].shape[1:]), "compressors": [ZstdCodec(level=3)]} for v in ds.data_vars}
        tmp = store.with_name(store.name + ".tmp")
        ds.to_zarr(tmp, encoding=encoding, consolidated=True, zarr_format=3, mode="w")
        os.replace(tmp, store)
    return tgm, store


def open_ours(path: Path) -> Any:
    import xarray as xr

    return xr.open_dataset(path, engine="tensogram", chunks={})


def open_zarr(store: Path) -> Any:
    import warnings

    import xarray as xr

    with warnings.catch_warnings():  # zarr: consolidated metadata is not in the v3 specification yet
        warnings.simplefilter("ignore")
        return xr.open_zarr(store, chunks={})


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(fn: Callable[[], Any]) -> tuple[float, float, int]:
    """Wall time, process CPU time and minor page faults of ``fn()`` (memory warmed first)."""
    ra._warm()
    f0, c0, t0 = _faults(), time.process_time(), time.perf_counter()
    result = fn()
    dt, cpu, faults = time.perf_counter() - t0, time.process_time() - c0, _faults() - f0
    del result
    return dt, cpu, faults


def alternated(steps: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[tuple[float, float, int]]]:
    """Every step once to warm up, then ``repeat`` rounds, the order reversed every other round."""
    for fn in steps.values():
        fn()
    out: dict[str, list[tuple[float, float, int]]] = {k: [] for k in steps}
    names = list(steps)
    for r in range(repeat):
        for k in names if r % 2 == 0 else names[::-1]:
            out[k].append(timed(steps[k]))
    return out


def load(open_fn: Callable[[], Any], threads: int) -> Callable[[], Any]:
    import dask

    def step() -> Any:
        ds = open_fn()
        with dask.config.set(scheduler="threads", num_workers=threads):
            ds.load()
        return ds

    return step


_FIRST_OPEN = r"""
import json, sys, time
import numpy, xarray as xr
kind, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if kind == "ours":
    from xarray_tensogram.backend import TensogramBackendEntrypoint
    ds = xr.open_dataset(path, engine=TensogramBackendEntrypoint, chunks={})
else:
    import warnings
    warnings.simplefilter("ignore")
    ds = xr.open_zarr(path, chunks={})
print(json.dumps(time.perf_counter() - t0))
"""


def first_opens(tgm: Path, store: Path, pairs: int) -> dict[str, list[float]]:
    """Fresh-process opens, alternated, after one untimed run of each that leaves every module's bytecode
    cached (``PYTHONDONTWRITEBYTECODE`` is dropped: an installed package has its bytecode, so compiling our
    sources on every start would be measured against an installed Zarr that does not)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out: dict[str, list[float]] = {"ours": [], "zarr": []}
    for r in range(-1, pairs):
        for kind in ("ours", "zarr") if r % 2 == 0 else ("zarr", "ours"):
            path = tgm if kind == "ours" else store
            done = subprocess.run(
                [sys.executable, "-c", _FIRST_OPEN, kind, str(path)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            if r >= 0:
                out[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--fresh", type=int, default=5, help="first-open pairs (fresh processes)")
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    tgm, store = files()
    import xarray as xr

    with open_ours(tgm) as a, open_zarr(store) as b:  # the same values on both sides
        for v in a.data_vars:
            np.testing.assert_array_equal(a[v].values, b[v].values)
    shapes = ra.var_shapes(tgm)
    payloads = ra.tgm_payloads(tgm, "zstd")
    decoded = sum(int(np.prod(s)) * d.itemsize for s, d in shapes.values())
    load0 = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load0:.1f}; {decoded / 2**20:.0f} MiB decoded; medians")
    rows: list[tuple[str, str, str, str]] = []

    opens = alternated({"ours": lambda: open_ours(tgm).close(), "zarr": lambda: open_zarr(store).close()}, args.repeat)
    rows.append(("open, chunks={} (warm)", *_cells(opens, "ms")))
    first = first_opens(tgm, store, args.fresh)
    ours, zarr = statistics.median(first["ours"]), statistics.median(first["zarr"])
    rows.append(("first open, fresh process", f"{ours * 1e3:.0f} ms", f"{zarr * 1e3:.0f} ms", f"{zarr / ours:.2f}"))
    ra._set_warm(3 * decoded)
    for n in (int(t) for t in args.threads.split(",")):
        bare = partial(ra.bare_decode, payloads, shapes, n)
        runs = alternated(
            {"ours": load(partial(open_ours, tgm), n), "zarr": load(partial(open_zarr, store), n), "bare": bare},
            args.repeat,
        )
        rows.append((f"load, {n} thread{'s' if n > 1 else ''}", *_cells(runs, "ms")))
        b = statistics.median(t for t, _c, _f in runs["bare"])
        ours_t = [t for t, _c, _f in runs["ours"]]
        faults = {k: statistics.median(f for _t, _c, f in v) for k, v in runs.items()}
        print(
            f"  {n} threads: bare {b * 1e3:.0f} ms, bare/ours {b / statistics.median(ours_t):.2f} (runs from "
            f"{b / max(ours_t):.2f} to {b / min(ours_t):.2f}), minor page faults ours {faults['ours']:.0f}, "
            f"zarr {faults['zarr']:.0f}, bare {faults['bare']:.0f}",
            flush=True,
        )
    ra._set_warm(0)
    print(f"\nload average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"{'':30s} {'ours':>14s} {'zarr':>14s} {'zarr/ours':>10s}")
    for name, a_, b_, r in rows:
        print(f"{name:30s} {a_:>14s} {b_:>14s} {r:>10s}")
    del xr


def _cells(runs: dict[str, list[tuple[float, float, int]]], unit: str) -> tuple[str, str, str]:
    ours = statistics.median(t for t, _c, _f in runs["ours"])
    zarr = statistics.median(t for t, _c, _f in runs["zarr"])
    scale = 1e3 if unit == "ms" else 1.0
    return f"{ours * scale:.1f} {unit}", f"{zarr * scale:.1f} {unit}", f"{zarr / ours:.2f}"


if __name__ == "__main__":
    main()
