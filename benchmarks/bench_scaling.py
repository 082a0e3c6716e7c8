"""Dask scaling against the bare decoder, 1 to all cores, and how long each task holds the GIL.

For each zstd file (level 3), alternated in one process, medians of ``--repeat`` runs after a warm-up,
memory touched before each run (``run_all._warm``):

- ``ours {}``: ``xr.open_dataset(p, engine="tensogram", chunks={})`` then ``ds.load()`` with Dask's
  threaded scheduler on N workers (the open is not timed);
- ``ours auto``: the same with ``chunks="auto"`` (Dask's ``array.chunk-size``, 128 MiB unless set);
- ``bare``: ``zstandard`` decompressing the same payloads, already in memory, into fresh arrays of the
  variables' shapes in a thread pool of N (``run_all.bare_decode``);
- ``load``: ``ds.load()`` without Dask (one thread), for reference.

N runs over 1, 2, 4, ... up to the machine's cores (``--threads`` picks others). The process's CPU time of
each step is recorded too: on one thread it is the step's work without the waits that other jobs on a
shared machine add to the wall time, and its ratios are printed beside the wall-clock ones. The files:

- ``.tgm``: ``--objects`` objects of 721 x 1440 float32 (4 per message, the ERA cube of ``run_all``);
- ``.tet``: one ``--tet-side``\\ :sup:`2` float32 variable in 256 x 256 tiles;
- ``.zt``: ``--objects`` tensors of 1024 x 1024 float32.

The issue's sizes (512 MiB per file, for a 16-core machine) are ``--mib 512``; the default, ``--mib 64``,
runs in about two minutes on 2 cores. Storage units stay the same size (4 MiB objects and tensors,
256 KiB tiles); only their number changes.

GIL: each format is also loaded with ``chunks={}`` on one thread while every call into
``zstandard``'s decompressor is timed (it releases the GIL), every ``preadv`` of a payload into a buffer
(it releases the GIL too) and every read through our lazy array. Per task, what is left of the task's
time is Python holding the GIL (and copies, allocation), split into our reader's part (lazy array minus
decoder and reads) and Dask's (scheduling, and apart from it its
final copy of every chunk into the result, ``dask.array.core.finalize``, which runs after the last task);
``share`` is the held time over the decoder's. Only the held part and the final copy are serialised, so
they bound the speed-up on many threads at about ``(1 + share) / share`` (21 at 5 %). The bare decoder
writes into its result directly and has no final copy; it is measured the same way.

Run::

    python benchmarks/bench_scaling.py                       # --mib 64, all cores, JSON to benchmarks/_data/
    python benchmarks/bench_scaling.py --mib 512 --repeat 3  # the issue's sizes
    python benchmarks/bench_scaling.py --only tgm --threads 1,2 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_all as ra  # noqa: E402 - the runner's files, payloads, bare decoder and memory warm-up

MIB = 1 << 20
TGM_OBJECT = 721 * 1440 * 4
ZT_SIDE = 1024


# ================================================================================================
# files
# ================================================================================================
def files(mib: int, tet_tile: int = 256) -> dict[str, Path]:
    """The three zstd files of about ``mib`` MiB decoded each (units of 4 MiB, tiles of 256 KiB)."""
    objects = max(8, round(mib * MIB / TGM_OBJECT / 4) * 4)  # >= 2 messages: a step dimension
    side = max(tet_tile, round(math.sqrt(mib * MIB / 4) / tet_tile) * tet_tile)
    return {
        "tgm": ra.tgm_cube(ra.Sizes(steps=objects // 4), "zstd"),
        "tet": ra.tet_file(ra.Sizes(tet_side=side, tet_tile=tet_tile), "zstd"),
        "zt": zt_square(max(1, round(mib * MIB / (ZT_SIDE * ZT_SIDE * 4)))),
    }


def zt_square(n: int) -> Path:
    """``n`` tensors of 1024 x 1024 float32, zstd (the issue's ``.zt``)."""
    from xarray_tensogram.formats.ztensor import write_ztensor_v01

    def write(tmp: Path) -> None:
        tensors = ((f"layer.{i:03d}.weight", ra.smooth_field(ZT_SIDE, ZT_SIDE, i)) for i in range(n))
        write_ztensor_v01(tmp, tensors, compression="zstd")

    return ra._atomic(ra.DATA / f"square_{n}x{ZT_SIDE}_zstd.zt", write)


# ================================================================================================
# timing
# ================================================================================================
def dask_load(threads: int) -> Callable[[Any], object]:
    def load(ds: Any) -> object:
        import dask

        with dask.config.set(scheduler="threads", num_workers=threads):
            return ds.load()

    return load


def measure_file(path: Path, fmt: str, thread_counts: Sequence[int], repeat: int) -> list[dict[str, Any]]:
    """One row per thread count: medians of ours (``{}``, ``"auto"``), the bare decoder and, at 1, ``load``."""
    payloads = ra.case_payloads(path, fmt, "zstd")
    shapes = ra.var_shapes(path)
    ra.check_same(path, payloads, shapes)
    decoded = sum(int(np.prod(s)) * d.itemsize for s, d in shapes.values())
    ra._set_warm(3 * decoded)
    tasks = {c: count_tasks(path, c) for c in ("{}", "auto")}
    rows = []
    try:
        for n in thread_counts:
            steps: dict[str, tuple[Callable[[Any], object], Callable[[], Any] | None]] = {
                "ours {}": (dask_load(n), lambda: ra.open_xr(path, chunks={})),
                "ours auto": (dask_load(n), lambda: ra.open_xr(path, chunks="auto")),
                "bare": (lambda _, n=n: ra.bare_decode(payloads, shapes, threads=n), None),  # type: ignore[misc]
            }
            if n == 1:
                steps["load"] = (lambda ds: ds.load(), lambda: ra.open_xr(path))
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in steps}
            for step in steps.values():
                ra._once(*step)  # warm-up
            for _ in range(repeat):
                for k, step in steps.items():  # alternated: A, B, C, A, B, C, ...
                    times[k].append(ra._once_with_cpu(*step))
            med = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
            cpu = {f"{k} cpu": statistics.median(t[1] for t in v) for k, v in times.items()}
            row = {"format": fmt, "threads": n, "decoded_mib": decoded / MIB, "tasks": tasks, **med, **cpu}
            rows.append(row)
            print(
                f"  {fmt} {n:3d} threads: ours {{}} {med['ours {}']:.3f} s, auto {med['ours auto']:.3f} s, "
                f"bare {med['bare']:.3f} s  ({{}}: {med['bare'] / med['ours {}']:.2f}, "
                f"auto: {med['bare'] / med['ours auto']:.2f} of bare; CPU time: "
                f"{cpu['bare cpu'] / cpu['ours {} cpu']:.2f}, {cpu['bare cpu'] / cpu['ours auto cpu']:.2f})",
                flush=True,
            )
    finally:
        ra._set_warm(0)
    return rows


def count_tasks(path: Path, chunks: str) -> int:
    with ra.open_xr(path, chunks={} if chunks == "{}" else chunks) as ds:
        return sum(len(v.data.to_delayed().ravel()) for v in ds.data_vars.values())


# ================================================================================================
# GIL: time inside the decoder against the rest of each task
# ================================================================================================
class _Clock:
    def __init__(self) -> None:
        self.inside = 0.0
        self.calls = 0
        self.lock = threading.Lock()

    def add(self, dt: float) -> None:
        with self.lock:
            self.inside += dt
            self.calls += 1


class _TimedReader:
    """A ``stream_reader`` whose reads are timed (they run without the GIL)."""

    def __init__(self, reader: Any, clock: _Clock) -> None:
        self._reader = reader
        self._clock = clock

    def __enter__(self) -> _TimedReader:
        self._reader.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._reader.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def readinto(self, b: Any) -> int:
        t0 = time.perf_counter()
        n: int = self._reader.readinto(b)
        self._clock.add(time.perf_counter() - t0)
        return n

    def read(self, *args: Any) -> bytes:
        t0 = time.perf_counter()
        out: bytes = self._reader.read(*args)
        self._clock.add(time.perf_counter() - t0)
        return out


@contextmanager
def timed_backend(clock: _Clock) -> Iterator[None]:
    """Every read through the package's lazy array (what one Dask task asks of us) is timed meanwhile."""
    from xarray_tensogram.array import LazyChunkedArray

    real = LazyChunkedArray.__getitem__

    def timed(self: Any, key: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(self, key)
        finally:
            clock.add(time.perf_counter() - t0)

    LazyChunkedArray.__getitem__ = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        LazyChunkedArray.__getitem__ = real  # type: ignore[method-assign]


@contextmanager
def timed_reads(clock: _Clock) -> Iterator[None]:
    """Every ``preadv`` of payload bytes from a local file into a buffer (``LocalFileSource.read_into``) timed
    meanwhile: the copy out of the page cache that the bare decoder, holding its payloads, does not make
    (``os.preadv`` releases the GIL). Payloads decoded from the memory map pay their page faults in the decoder."""
    from xarray_tensogram.io.local import LocalFileSource

    real = LocalFileSource.read_into

    def timed(self: Any, offset: int, out: Any, *, what: str = "data") -> None:
        t0 = time.perf_counter()
        try:
            real(self, offset, out, what=what)
        finally:
            clock.add(time.perf_counter() - t0)

    LocalFileSource.read_into = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        LocalFileSource.read_into = real  # type: ignore[method-assign]


@contextmanager
def timed_dask_finalize(clock: _Clock) -> Iterator[None]:
    """Dask's last step of a compute, timed meanwhile: the copy of every chunk into the result (one
    ``concatenate3`` per array, or ``.copy()`` of a single chunk), serial, after all tasks have run."""
    import dask.array.core as dac

    real = dac.finalize

    def timed(results: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(results)
        finally:
            clock.add(time.perf_counter() - t0)

    dac.finalize = timed
    try:
        yield
    finally:
        dac.finalize = real


@contextmanager
def timed_zstandard(clock: _Clock) -> Iterator[None]:
    """Every ``zstandard.ZstdDecompressor()`` made meanwhile times its decompress and stream reads."""
    import zstandard

    real = zstandard.ZstdDecompressor

    class Timed:
        def __init__(self, *args: Any, **kw: Any) -> None:
            self._d = real(*args, **kw)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._d, name)

        def decompress(self, *args: Any, **kw: Any) -> bytes:
            t0 = time.perf_counter()
            out: bytes = self._d.decompress(*args, **kw)
            clock.add(time.perf_counter() - t0)
            return out

        def stream_reader(self, *args: Any, **kw: Any) -> _TimedReader:
            return _TimedReader(self._d.stream_reader(*args, **kw), clock)

    zstandard.ZstdDecompressor = Timed  # type: ignore[misc,assignment]  # a timing stand-in, restored below
    try:
        yield
    finally:
        zstandard.ZstdDecompressor = real


def gil_share(path: Path, fmt: str, repeat: int) -> dict[str, Any]:
    """Per task, on one thread: total, inside the decoder, and the rest (held with the GIL), ours and bare."""
    payloads = ra.case_payloads(path, fmt, "zstd")
    shapes = ra.var_shapes(path)
    tasks = count_tasks(path, "{}")
    out: dict[str, Any] = {"format": fmt, "tasks": tasks}
    sides: dict[str, tuple[Callable[[Any], object], Callable[[], Any] | None]] = {
        "ours": (dask_load(1), lambda: ra.open_xr(path, chunks={})),
        "bare": (lambda _: ra.bare_decode(payloads, shapes, threads=1), None),
    }
    runs: dict[str, list[tuple[float, float, float, int, float, float]]] = {k: [] for k in sides}
    for _ in range(repeat):
        for k, (fn, setup) in sides.items():
            clock, ours, final, reads = _Clock(), _Clock(), _Clock(), _Clock()
            arg = setup() if setup else None
            gc.collect()
            ra._warm()
            with timed_zstandard(clock), timed_backend(ours), timed_dask_finalize(final), timed_reads(reads):
                t0 = time.perf_counter()
                fn(arg)
                total = time.perf_counter() - t0
            runs[k].append((total, ours.inside, clock.inside, clock.calls, final.inside, reads.inside))
    for k, rs in runs.items():
        n = tasks if k == "ours" else len(payloads)
        out[k] = _gil_row(rs, n)
    o, b = out["ours"], out["bare"]
    print(
        f"  {fmt} GIL per task ({tasks} tasks): ours {o['per_task_ms']:.2f} ms = decoder {o['decoder_ms']:.2f} + "
        f"rest {o['gil_ms']:.2f} ms ({100 * o['share']:.1f} %: our reader {o['reader_python_ms']:.2f} of which "
        f"reading the payload {o['read_ms']:.2f}, Dask "
        f"{o['dask_ms']:.2f} of which its final copy {o['dask_copy_ms']:.2f}); bare held {b['gil_ms']:.2f} ms "
        f"({100 * b['share']:.1f} %)",
        flush=True,
    )
    return out


def _gil_row(rs: Sequence[tuple[float, float, float, int, float, float]], n: int) -> dict[str, Any]:
    """Medians of (total, in our lazy array, in the decoder, decoder calls, in Dask's final copy, in payload
    reads) per task."""
    total = statistics.median(r[0] for r in rs)
    reader = statistics.median(r[1] for r in rs)
    inside = statistics.median(r[2] for r in rs)
    final = statistics.median(r[4] for r in rs)
    read = statistics.median(r[5] for r in rs)
    return {
        "per_task_ms": 1e3 * total / n,
        "decoder_ms": 1e3 * inside / n,
        "gil_ms": 1e3 * (total - inside) / n,
        # ours: the part of the held time spent in our reader, the rest is Dask's (scheduling, assembly)
        "reader_python_ms": 1e3 * (reader - inside) / n if reader else 0.0,
        # of it, reading the compressed payload into a buffer (preadv, without the GIL)
        "read_ms": 1e3 * read / n,
        # of it, what holds the GIL: our Python around the chunk
        "reader_held_ms": 1e3 * (reader - inside - read) / n if reader else 0.0,
        "dask_ms": 1e3 * (total - reader) / n if reader else 0.0,
        # Dask's copy of the chunks into the result (serial, after the tasks; numpy releases the GIL in it)
        "dask_copy_ms": 1e3 * final / n,
        "share": (total - inside) / inside if inside else float("nan"),
        "share_without_copy": (total - inside - final) / inside if inside else float("nan"),
        "decoder_calls": rs[0][3],
    }


# ================================================================================================
def thread_counts(text: str | None) -> list[int]:
    if text:
        return [int(t) for t in text.split(",")]
    cores = os.cpu_count() or 1
    out = [1]
    while out[-1] * 2 <= cores:
        out.append(out[-1] * 2)
    if out[-1] != cores:
        out.append(cores)
    return out


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    print(
        "\n| file | threads | ours {} | ours auto | bare | {} / bare | auto / bare | ds.load() (no Dask) "
        "| CPU time: {} / bare, auto / bare |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        load = f"{r['load']:.3f} s" if "load" in r else ""
        print(
            f"| .{r['format']} | {r['threads']} | {r['ours {}']:.3f} s | {r['ours auto']:.3f} s | {r['bare']:.3f} s "
            f"| {r['bare'] / r['ours {}']:.2f} | {r['bare'] / r['ours auto']:.2f} | {load} "
            f"| {r['bare cpu'] / r['ours {} cpu']:.2f}, {r['bare cpu'] / r['ours auto cpu']:.2f} |"
        )
    by_fmt: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_fmt.setdefault(r["format"], []).append(r)
    print("\n| file | speed-up 1 -> N: ours {} | ours auto | bare |")
    print("|---|---|---|---|")
    for fmt, rs in by_fmt.items():
        a, b = rs[0], rs[-1]
        print(
            f"| .{fmt} (1 -> {b['threads']}) | {a['ours {}'] / b['ours {}']:.1f}x | "
            f"{a['ours auto'] / b['ours auto']:.1f}x | {a['bare'] / b['bare']:.1f}x |"
        )


def run(mib: int, formats: Sequence[str], counts: Sequence[int], repeat: int) -> dict[str, Any]:
    paths = files(mib)
    rows: list[dict[str, Any]] = []
    gil: list[dict[str, Any]] = []
    for fmt in formats:
        rows += measure_file(paths[fmt], fmt, counts, repeat)
        gil.append(gil_share(paths[fmt], fmt, max(1, repeat)))
        gc.collect()
    return {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "mib": mib,
        "repeat": repeat,
        "files": {k: str(v) for k, v in paths.items() if k in formats},
        "rows": rows,
        "gil": gil,
    }


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64, help="decoded MiB per file (the issue: 512)")
    ap.add_argument("--threads", default=None, help="thread counts, e.g. 1,2,4 (default: 1, 2, 4, ... all cores)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per step (median)")
    ap.add_argument("--only", default="tgm,tet,zt")
    ap.add_argument("--json", default=None, help="where to write the results (default benchmarks/_data/)")
    args = ap.parse_args(argv)
    counts = thread_counts(args.threads)
    load0 = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} CPUs, load {load0:.1f}; {args.mib} MiB per file; threads {counts}; medians of {args.repeat}"
    )
    result = run(args.mib, args.only.split(","), counts, args.repeat)
    print_table(result["rows"])
    out = Path(args.json) if args.json else ra.DATA / f"scaling_{args.mib}mib.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nload {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end; JSON: {out}")


if __name__ == "__main__":
    main()
