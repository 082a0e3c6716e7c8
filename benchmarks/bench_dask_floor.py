"""Where Dask's time goes: ours against a pure-Dask floor over the same payloads, on 2 threads.

For each zstd file of ``run_all.py`` (ERA ``.tgm``, 8192 x 8192 ``.tet`` in 256 x 256 tiles, ``.zt`` of
200 tensors), this prints, alternated in one process (medians and minimums):

- ``bare x2``: the bare decoder on 2 threads into fresh arrays of the variables' shapes (run_all's reference);
- ``floor``: pure Dask over the same payloads already in memory, with the chunk layout that ours gets
  (``da.from_delayed`` per chunk, each chunk decoded into a fresh array, then ``dask.compute``): what
  Dask itself costs (task scheduling, a fresh array per chunk, and the final concatenation or copy);
- ``floor no-final``: the same chunks computed as a list, without the final concatenation (so the
  concatenation's share is the difference);
- ``ours``: ``xr.open_dataset(..., chunks=...)`` then ``ds.load()``.

Each row gives wall-time medians and minimums and the process's CPU time (all threads; less sensitive
to other loads on the machine), each as "bare / this" (higher is better).

``--memory`` sets the memory state before every timed step. ``as-is`` is what ``run_all.py`` does. On a
VM with free page reporting (virtio-balloon), freed pages go back to the host after about 2 s and the
next touch is much dearer, so whichever step needs more fresh memory (Dask: chunks plus the assembled
result) pays more. ``warm`` touches and frees 3 x the decoded size first, so every step reuses pages the
host still backs. ``cold`` sleeps 4 s first, so every step pays the first-touch cost.

Run::

    PYTHONPATH=$PWD python benchmarks/bench_dask_floor.py [--repeat 7] [--only tgm,zt] [--memory warm]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_all as ra  # the runner's files, payloads and bare decoders

Parts = list[tuple[tuple[slice, ...], ra.Payload]]  # (where in the chunk, payload) for one Dask chunk


def chunk_payloads(
    payloads: Sequence[ra.Payload], var: str, shape: tuple[int, ...], chunks: tuple[tuple[int, ...], ...]
) -> dict[tuple[int, ...], Parts]:
    """Group one variable's payloads by the Dask chunk they fall in: {chunk index: [(local slot, payload)]}."""
    bounds = [np.cumsum((0, *c)) for c in chunks]
    out: dict[tuple[int, ...], Parts] = {}
    for p in payloads:
        if p.var != var:
            continue
        slot = tuple(p.slot) + (slice(None),) * (len(shape) - len(p.slot))
        start = []
        for s, n in zip(slot, shape, strict=True):
            if isinstance(s, int):
                start.append((s, s + 1))
            else:
                a, b, _ = s.indices(n)
                start.append((a, b))
        idx = tuple(int(np.searchsorted(b, a, side="right") - 1) for (a, _), b in zip(start, bounds, strict=True))
        local = tuple(slice(a - int(b[i]), e - int(b[i])) for (a, e), b, i in zip(start, bounds, idx, strict=True))
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
        chunks = v.chunks
        groups = chunk_payloads(payloads, name, v.shape, chunks)
        blocks = np.empty(tuple(len(c) for c in chunks), dtype=object)
        for idx in np.ndindex(*blocks.shape):
            cshape = tuple(c[i] for c, i in zip(chunks, idx, strict=True))
            d = dask.delayed(decode_chunk, pure=True)(cshape, v.dtype, groups.get(idx, []))
            blocks[idx] = da.from_delayed(d, cshape, v.dtype)
        arrays.append(da.block(blocks.tolist()))
    return arrays


MEMORY = "as-is"
WARM_BYTES = 0


def prepare_memory() -> None:
    """``warm``: touch then free enough memory that the step's fresh arrays reuse guest pages the host
    already backs; ``cold``: wait until freed pages have been reported back to the host (virtio-balloon
    free page reporting, about 2 s), so the step pays the host's first-touch faults for all its memory."""
    if MEMORY == "warm":
        np.ones(WARM_BYTES, np.uint8)
    elif MEMORY == "cold":
        time.sleep(4)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall time and this process's CPU time (all threads) of ``fn()``."""
    gc.collect()
    prepare_memory()
    c0, t0 = time.process_time(), time.perf_counter()
    r = fn()
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    del r
    return dt, dc


def measure(path: Path, fmt: str, payloads: Sequence[ra.Payload], chunks: Any, repeat: int) -> None:
    """Time the four steps alternately and print medians and minimums (wall) and CPU medians."""
    import dask
    import xarray as xr

    shapes = ra.var_shapes(path)
    probe = xr.open_dataset(path, engine="tensogram", chunks=chunks)
    floor = floor_arrays(payloads, probe)
    ntasks = max(len(v.data.to_delayed().ravel()) for v in probe.data_vars.values())

    def ours() -> tuple[float, float]:
        ds = xr.open_dataset(path, engine="tensogram", chunks=chunks)
        return timed(ds.load)

    steps: dict[str, Callable[[], tuple[float, float]]] = {
        "bare x2": lambda: timed(lambda: ra.bare_decode(payloads, shapes, threads=2)),
        "floor": lambda: timed(lambda: dask.compute(*floor)),
        "floor no-final": lambda: timed(lambda: dask.compute([a.to_delayed().ravel().tolist() for a in floor])),
        "ours": ours,
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in steps}
    with dask.config.set(scheduler="threads", num_workers=2):
        for f in steps.values():
            f()  # warm-up
        for _ in range(repeat):
            for k, f in steps.items():
                times[k].append(f())
    probe.close()
    wall = {k: [w for w, _ in v] for k, v in times.items()}
    cpu = {k: [c for _, c in v] for k, v in times.items()}
    bw, bc, bcpu = statistics.median(wall["bare x2"]), min(wall["bare x2"]), statistics.median(cpu["bare x2"])
    print(f"{fmt} chunks={chunks!r} ({ntasks} tasks/var, {len(probe.data_vars)} vars), memory {MEMORY}")
    for k in times:
        med, lo, c = statistics.median(wall[k]), min(wall[k]), statistics.median(cpu[k])
        print(
            f"  {k:15s} wall median {med * 1e3:7.1f} ms (bare/this {bw / med:4.2f})"
            f"  min {lo * 1e3:7.1f} ms (bare/this {bc / lo:4.2f})"
            f"  cpu median {c * 1e3:7.1f} ms (bare/this {bcpu / c:4.2f})",
            flush=True,
        )


def main() -> None:
    global MEMORY, WARM_BYTES
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="tgm,tet,zt")
    ap.add_argument("--chunks", default="{},auto")
    ap.add_argument("--memory", default="as-is", choices=("as-is", "warm", "cold"))
    args = ap.parse_args()
    MEMORY = args.memory
    sz = ra.Sizes()
    for fmt in args.only.split(","):
        path = ra.case_file(sz, fmt, "zstd")
        payloads = ra.case_payloads(path, fmt, "zstd")
        WARM_BYTES = 3 * sum(int(np.prod(s)) * d.itemsize for s, d in ra.var_shapes(path).values())
        for chunks in [{} if c == "{}" else c for c in args.chunks.split(",")]:
            measure(path, fmt, payloads, chunks, args.repeat)
        del payloads
        gc.collect()


if __name__ == "__main__":
    main()
