"""Dask loads against the bare decoder, 1 and 2 threads, with figures a busy machine does not blur.

The files are ``bench_scaling.py``'s zstd files of about ``--mib`` MiB decoded each: ``.tgm`` objects of
721 x 1440 float32 (64 at the default 256 MiB, 24 at 96), ``.tet`` of 8192 x 8192 in 256 x 256 tiles (5120
x 5120 at 96: one Dask chunk with ``"auto"``), ``.zt`` tensors of 1024 x 1024 float32 (64, or 24 at 96).
For each format and thread count, alternated in one process (the
order reversed every other round, one warm-up each, memory warmed before every step), medians of
``--repeat`` runs:

- ``bare``: ``zstandard`` decoding the payloads, already in memory, into fresh arrays of the variables'
  shapes on N threads (``run_all.bare_decode``);
- ``floor``: pure Dask over the same in-memory payloads in our chunk layout (``da.from_delayed`` per
  chunk, each decoded into a fresh array, then ``dask.compute``): what Dask itself costs;
- ``ours``: ``xr.open_dataset(p, engine="tensogram", chunks=...)`` (not timed), then ``ds.load()``.

Each gives the wall time, the process's CPU time (all threads) and its minor page faults (``getrusage``).
On a machine shared with other jobs the wall ratios move; the CPU ratios and the fault counts do not.

Then, per format, one load on one Dask thread taken apart by thread CPU time (``time.thread_time``, which
other jobs do not inflate), per task: the decoder (our zstd stream loop), reading the payload (``preadv``),
our reader's Python around them, Dask's and xarray's own Python, and Dask's final copy of the chunks into
the result; the page faults taken in the tasks and in that copy; and the share of the load during which
the GIL was free (a pure-Python spinner's CPU time during the load, against the same during a sleep).
The ``.tgm`` row is repeated on a file of a quarter as many objects: per-task figures must not grow.

Run (about 3 minutes on 2 quiet cores; ``--mib 96 --repeat 5``: about 1 minute)::

    PYTHONPATH=$PWD python benchmarks/bench_dask_floor.py [--mib 256] [--repeat 9] [--only tgm,tet,zt]
        [--chunks {},auto] [--memory warm|as-is|cold] [--malloc glibc|keep]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scaling as bs  # noqa: E402 - the files
import run_all as ra  # noqa: E402 - payloads, bare decoder, memory warm-up

#: the chunking each format's target is measured with (``.tet``: one task per tile is Dask-bound)
TARGET_CHUNKS = {"tgm": "{}", "tet": "auto", "zt": "{}"}
Run = tuple[float, float, int]  # wall s, CPU s, minor faults
Parts = list[tuple[tuple[slice, ...], ra.Payload]]  # (where in the chunk, payload) for one Dask chunk
MEMORY = "warm"


def _faults(who: int = resource.RUSAGE_SELF) -> int:
    return resource.getrusage(who).ru_minflt


def prepare_memory() -> None:
    """``warm`` (run_all's): touch and free 3 x the decoded size, so every step reuses pages the host still
    backs; ``cold``: wait until freed pages went back to the host (virtio-balloon free page reporting, about
    2 s), so every step pays first-touch faults for all its memory; ``as-is``: nothing."""
    if MEMORY == "warm":
        ra._warm()
    elif MEMORY == "cold":
        time.sleep(4)


def timed(fn: Callable[[], object]) -> Run:
    gc.collect()
    prepare_memory()
    f0, c0, t0 = _faults(), time.process_time(), time.perf_counter()
    result = fn()
    run = time.perf_counter() - t0, time.process_time() - c0, _faults() - f0
    del result
    return run


def alternated(steps: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[Run]]:
    """One warm-up each, then ``repeat`` rounds, the order reversed every other round."""
    for fn in steps.values():
        fn()
    out: dict[str, list[Run]] = {k: [] for k in steps}
    names = list(steps)
    for r in range(repeat):
        for k in names if r % 2 == 0 else names[::-1]:
            out[k].append(timed(steps[k]))
    return out


# ================================================================================================
# the pure-Dask floor
# ================================================================================================
def chunk_payloads(
    payloads: Sequence[ra.Payload], var: str, shape: tuple[int, ...], chunks: tuple[tuple[int, ...], ...]
) -> dict[tuple[int, ...], Parts]:
    """One variable's payloads grouped by the Dask chunk they fall in: {chunk index: [(local slot, payload)]}."""
    bounds = [np.cumsum((0, *c)) for c in chunks]
    out: dict[tuple[int, ...], Parts] = {}
    for p in payloads:
        if p.var != var:
            continue
        slot = tuple(p.slot) + (slice(None),) * (len(shape) - len(p.slot))
        spans = [(s, s + 1) if isinstance(s, int) else s.indices(n)[:2] for s, n in zip(slot, shape, strict=True)]
        idx = tuple(int(np.searchsorted(b, a, side="right") - 1) for (a, _), b in zip(spans, bounds, strict=True))
        local = tuple(slice(a - int(b[i]), e - int(b[i])) for (a, e), b, i in zip(spans, bounds, idx, strict=True))
        out.setdefault(idx, []).append((local, p))
    return out


def decode_chunk(shape: tuple[int, ...], dtype: np.dtype, parts: Parts) -> np.ndarray:
    """A fresh array of the chunk's shape with its payloads decoded into place (what one of our tasks does)."""
    out = np.empty(shape, dtype)
    for local, p in parts:
        dst = out[local]
        ra._decode_into(dst.reshape(p.shape) if dst.shape != p.shape else dst, p)
    return out


def floor_arrays(payloads: Sequence[ra.Payload], ds: Any) -> list[Any]:
    """One Dask array per variable, chunked as ``ds`` is, each chunk decoded from memory by one task."""
    import dask
    import dask.array as da

    arrays = []
    for name, v in ds.data_vars.items():
        groups = chunk_payloads(payloads, name, v.shape, v.chunks)
        blocks = np.empty(tuple(len(c) for c in v.chunks), dtype=object)
        for idx in np.ndindex(*blocks.shape):
            shape = tuple(c[i] for c, i in zip(v.chunks, idx, strict=True))
            task = dask.delayed(decode_chunk, pure=True)(shape, v.dtype, groups.get(idx, []))
            blocks[idx] = da.from_delayed(task, shape, v.dtype)
        arrays.append(da.block(blocks.tolist()))
    return arrays


# ================================================================================================
# loads side by side
# ================================================================================================
def chunks_arg(text: str) -> Any:
    return {} if text == "{}" else text


def steps(path: Path, chunks: str, payloads: Any, shapes: Any, floor: list[Any], n: int) -> dict[str, Any]:
    """The three loads on ``n`` threads: the bare decoder, the pure-Dask floor, ours."""
    import dask
    import xarray as xr

    def ours() -> object:
        ds = xr.open_dataset(path, engine="tensogram", chunks=chunks_arg(chunks))
        with dask.config.set(scheduler="threads", num_workers=n):
            return ds.load()

    def pure() -> object:
        with dask.config.set(scheduler="threads", num_workers=n):
            return dask.compute(*floor)

    return {"bare": lambda: ra.bare_decode(payloads, shapes, threads=n), "floor": pure, "ours": ours}


def compare(path: Path, fmt: str, chunks: str, threads: Sequence[int], repeat: int) -> list[dict[str, Any]]:
    """Medians of bare, floor and ours on each thread count; one row per thread count."""
    import xarray as xr

    payloads = ra.case_payloads(path, fmt, "zstd")
    shapes = ra.var_shapes(path)
    ra.check_same(path, payloads, shapes)
    ra._set_warm(3 * sum(int(np.prod(s)) * d.itemsize for s, d in shapes.values()))
    with xr.open_dataset(path, engine="tensogram", chunks=chunks_arg(chunks)) as probe:
        floor = floor_arrays(payloads, probe)
        tasks = sum(len(v.data.to_delayed().ravel()) for v in probe.data_vars.values())
    rows: list[dict[str, Any]] = []
    for n in threads:
        runs = alternated(steps(path, chunks, payloads, shapes, floor, n), repeat)
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
        bare, walls = med["bare"][0], [r[0] for r in runs["ours"]]
        rows.append(
            {
                "format": fmt, "chunks": chunks, "tasks": tasks, "threads": n,
                "bare_ms": 1e3 * bare, "floor_ms": 1e3 * med["floor"][0], "ours_ms": 1e3 * med["ours"][0],
                "ratio": bare / med["ours"][0], "worst": bare / max(walls), "best": bare / min(walls),
                "floor_ratio": bare / med["floor"][0], "cpu_ratio": med["bare"][1] / med["ours"][1],
                "faults": {k: int(v[2]) for k, v in med.items()},
                "fault_range": (min(r[2] for r in runs["ours"]), max(r[2] for r in runs["ours"])),
            }
        )  # fmt: skip
        r: dict[str, Any] = rows[-1]
        print(
            f"  {fmt} {chunks} ({tasks} tasks) {n} thread(s): bare {r['bare_ms']:.0f} ms, floor {r['floor_ms']:.0f},"
            f" ours {r['ours_ms']:.0f}; bare/ours {r['ratio']:.2f} (runs {r['worst']:.2f}-{r['best']:.2f}), CPU"
            f" {r['cpu_ratio']:.2f}; minor faults bare {r['faults']['bare']}, floor {r['faults']['floor']},"
            f" ours {r['faults']['ours']} (runs {r['fault_range'][0]}-{r['fault_range'][1]})",
            flush=True,
        )
    ra._set_warm(0)
    return rows


# ================================================================================================
# one load taken apart by thread CPU time
# ================================================================================================
class _Clock:
    """Thread CPU seconds and this thread's minor faults spent inside the wrapped calls (outermost only)."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.faults = 0
        self._lock = threading.Lock()
        self._depth = threading.local()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        c0, f0 = time.thread_time(), _faults(resource.RUSAGE_THREAD)
        try:
            yield
        finally:
            self._depth.n = depth
            if depth == 0:
                dc, df = time.thread_time() - c0, _faults(resource.RUSAGE_THREAD) - f0
                with self._lock:
                    self.cpu += dc
                    self.faults += df


@contextmanager
def clocked(owner: Any, name: str, clock: _Clock) -> Iterator[None]:
    """``owner.name`` (a function or method) timed by ``clock`` meanwhile."""
    real = getattr(owner, name)

    def wrapper(*args: Any, **kw: Any) -> Any:
        with clock():
            return real(*args, **kw)

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, real)


def _spin(stop: threading.Event, out: list[float]) -> None:
    """A pure-Python loop: it runs only while no other thread of the process holds the GIL."""
    n = 0
    while not stop.is_set():
        n += 1
    out.append(time.thread_time())


def spinner_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    """(the spinner's CPU seconds, wall seconds) while ``fn()`` runs in this thread."""
    stop, out = threading.Event(), list[float]()
    t = threading.Thread(target=_spin, args=(stop, out))
    t.start()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    stop.set()
    t.join()
    return out[0], dt


def gil_free(fn: Callable[[], object]) -> float:
    """Share of ``fn()``'s wall time during which a spinner thread got the GIL, against the spinner's share
    of a sleep as long (other jobs on the machine lower both alike)."""
    busy, dt = spinner_cpu(fn)
    idle, _ = spinner_cpu(lambda: time.sleep(dt))
    return busy / idle if idle else float("nan")


def breakdown(path: Path, fmt: str, chunks: str, repeat: int) -> dict[str, Any]:
    """Per task, on one Dask thread: medians over ``repeat`` loads of CPU microseconds and faults."""
    import dask
    import dask.array.core as dac
    import xarray as xr

    from xarray_tensogram.array import LazyChunkedArray
    from xarray_tensogram.codecs import zstd
    from xarray_tensogram.io.local import LocalFileSource

    def load() -> object:
        ds = xr.open_dataset(path, engine="tensogram", chunks=chunks_arg(chunks))
        with dask.config.set(scheduler="threads", num_workers=1):
            return ds.load()

    load()
    samples: list[dict[str, float]] = []
    for _ in range(repeat):
        clocks = {k: _Clock() for k in ("reader", "decoder", "read", "final")}
        with ExitStack() as stack:
            stack.enter_context(clocked(LazyChunkedArray, "__getitem__", clocks["reader"]))
            stack.enter_context(clocked(zstd, "_fill", clocks["decoder"]))
            stack.enter_context(clocked(LocalFileSource, "read_into", clocks["read"]))
            stack.enter_context(clocked(dac, "finalize", clocks["final"]))
            gc.collect()
            ra._warm()
            f0, c0 = _faults(), time.process_time()
            load()
            total, faults = time.process_time() - c0, _faults() - f0
        c = {k: v.cpu for k, v in clocks.items()}
        samples.append(
            {
                "decoder": c["decoder"], "read": c["read"], "final": c["final"],
                "reader_python": c["reader"] - c["decoder"] - c["read"],
                "dask_python": total - c["reader"] - c["final"],
                "task_faults": clocks["reader"].faults, "final_faults": clocks["final"].faults, "faults": faults,
            }
        )  # fmt: skip
    with xr.open_dataset(path, engine="tensogram", chunks=chunks_arg(chunks)) as ds:
        tasks = sum(len(v.data.to_delayed().ravel()) for v in ds.data_vars.values())
    med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    row: dict[str, Any] = {"format": fmt, "chunks": chunks, "tasks": tasks, "gil_free": gil_free(load)}
    row.update({f"{k}_us": 1e6 * v / tasks for k, v in med.items() if not k.endswith("faults")})
    row.update({k: int(v) for k, v in med.items() if k.endswith("faults")})
    print(
        f"  {fmt} {chunks} ({tasks} tasks), per task: decoder {row['decoder_us']:.0f} us, read"
        f" {row['read_us']:.0f}, our Python {row['reader_python_us']:.0f}, Dask+xarray Python"
        f" {row['dask_python_us']:.0f}, final copy {row['final_us']:.0f}; faults in tasks {row['task_faults']},"
        f" in the final copy {row['final_faults']}, in all {row['faults']}; GIL free {100 * row['gil_free']:.0f} %",
        flush=True,
    )
    return row


def _header(*names: str) -> None:
    print("\n| " + " | ".join(names) + " |\n" + "|---" * len(names) + "|")


def print_tables(rows: Sequence[dict[str, Any]], parts: Sequence[dict[str, Any]]) -> None:
    _header("format", "chunks", "tasks", "threads", "bare", "floor", "ours", "bare/ours", "runs", "floor", "CPU",
            "faults bare/ours")  # fmt: skip
    for r in rows:
        f = r["faults"]
        print(
            f"| .{r['format']} | {r['chunks']} | {r['tasks']} | {r['threads']} | {r['bare_ms']:.0f} ms |"
            f" {r['floor_ms']:.0f} ms | {r['ours_ms']:.0f} ms | {r['ratio']:.2f} | {r['worst']:.2f}-{r['best']:.2f} |"
            f" {r['floor_ratio']:.2f} | {r['cpu_ratio']:.2f} | {f['bare']} / {f['ours']} |"
        )
    _header("format", "chunks", "tasks", "decoder", "read", "our Python", "Dask+xarray", "final copy",
            "faults tasks/copy", "GIL free")  # fmt: skip
    for p in parts:
        print(
            f"| .{p['format']} | {p['chunks']} | {p['tasks']} | {p['decoder_us']:.0f} µs | {p['read_us']:.0f} µs |"
            f" {p['reader_python_us']:.0f} µs | {p['dask_python_us']:.0f} µs | {p['final_us']:.0f} µs |"
            f" {p['task_faults']} / {p['final_faults']} | {100 * p['gil_free']:.0f} % |"
        )


#: glibc keeps freed memory for reuse: no allocation is a fresh ``mmap`` and nothing freed is trimmed
KEEP = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(2 << 30)}
KEEP_HELP = (
    "keep: run with glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ at 1 and 2 GiB, so that freed "
    "chunks are reused rather than given back (with Dask's worker threads, the faults of one load otherwise "
    "vary about tenfold from run to run); it made the .tet load dearer, see docs/performance.md"
)


def main(argv: Sequence[str] | None = None) -> None:
    global MEMORY
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--only", default="tgm,tet,zt")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--chunks", default="", help="'{}' or 'auto' for every format (default: each one's target)")
    ap.add_argument("--memory", default="warm", choices=("warm", "as-is", "cold"))
    ap.add_argument("--malloc", default="glibc", choices=("glibc", "keep"), help=KEEP_HELP)
    args = ap.parse_args(argv)
    if args.malloc == "keep" and KEEP.items() - os.environ.items():  # glibc reads them at start: run again
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **KEEP})
    MEMORY = args.memory
    files = bs.files(args.mib)
    threads = [int(t) for t in args.threads.split(",")]
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; memory {MEMORY}, malloc {args.malloc};"
        f" medians of {args.repeat}"
    )
    rows, parts = [], []
    for fmt in args.only.split(","):
        chunks = args.chunks or TARGET_CHUNKS[fmt]
        rows += compare(files[fmt], fmt, chunks, threads, args.repeat)
        parts.append(breakdown(files[fmt], fmt, chunks, args.repeat))
        if fmt == "tgm":  # a quarter of the objects: the per-task figures do not grow with their number
            steps = ra.var_shapes(files[fmt])["2t"][0][0]
            fewer = ra.tgm_cube(ra.Sizes(steps=max(2, steps // 4)), "zstd")
            parts.append(breakdown(fewer, fmt, chunks, args.repeat))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    print_tables(rows, parts)


if __name__ == "__main__":
    main()
