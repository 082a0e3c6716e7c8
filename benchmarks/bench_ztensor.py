"""zTensor v0.1 read speed: xarray-tensogram against the reference reader ``ztensor==0.1.4``.

One run, same file, same warm page cache: a v0.1 file with 200 float32 tensors
(~400 MB, written into a temporary directory and deleted afterwards). Timings
are medians of several repetitions after one warm-up. Measured:

- open: metadata only (reference ``Reader`` + listing names/shapes, vs ``open_ztensor``
  and ``xr.open_dataset``);
- one tensor on an open file: the reference's zero-copy view plus a copy, vs ours (mmap
  view plus a copy, and ``ds[name].values`` through the lazy array); also including open;
- everything: every tensor copied out, and ``ds.load()``.

Run: ``python benchmarks/bench_ztensor.py [--tensors 200] [--mb 400] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

from xarray_tensogram.formats.ztensor import open_ztensor, write_ztensor_v01


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median of ``repeat`` runs after a warm-up; millisecond-scale calls get 10x more runs (less noise)."""
    t0 = time.perf_counter()
    fn()  # warm-up
    if time.perf_counter() - t0 < 0.01:
        repeat *= 10
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def make_file(path: Path, n: int, total_mb: int) -> list[str]:
    per = total_mb * 1_000_000 // n // 4
    cols = 500
    rows = max(1, per // cols)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((rows, cols)).astype(np.float32)
    names = [f"layer.{i:03d}.weight" for i in range(n)]
    write_ztensor_v01(path, ((name, base + np.float32(i)) for i, name in enumerate(names)))
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=200)
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import ztensor as ref

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.zt"
        names = make_file(path, args.tensors, args.mb)
        size = path.stat().st_size
        print(
            f"file: {args.tensors} float32 tensors, {size / 1e6:.1f} MB; "
            f"medians of {args.repeat} runs (x10 for ms-scale calls) after a warm-up\n"
        )
        mid = names[len(names) // 2]
        spath = str(path)

        def ref_open() -> None:
            ref.Reader(spath)  # parses the whole index in Rust

        def ref_open_list() -> None:
            with ref.Reader(spath) as r:
                [(m.name, m.shape, m.dtype_str) for m in r]

        def our_open() -> None:
            with open_ztensor(spath) as z:
                [(t.name, t.shape, t.dtype) for t in z.tensors]

        def xr_open() -> None:
            xr.open_dataset(spath, engine="tensogram").close()

        ref_reader = ref.Reader(spath)
        our_file = open_ztensor(spath)
        ds_holder = xr.open_dataset(spath, engine="tensogram")

        def ref_one() -> None:
            np.array(ref_reader.read_tensor(mid), copy=True)

        def our_one() -> None:
            np.array(our_file.read(mid), copy=True)

        def xr_one() -> None:
            _ = ds_holder[mid].values

        def ref_one_cold() -> None:
            with ref.Reader(spath) as r:
                np.array(r.read_tensor(mid), copy=True)

        def our_one_cold() -> None:
            with open_ztensor(spath) as z:
                np.array(z.read(mid), copy=True)

        def ref_all() -> None:
            with ref.Reader(spath) as r:
                [np.array(r.read_tensor(n), copy=True) for n in names]

        def our_all() -> None:
            with open_ztensor(spath) as z:
                [np.array(z.read(t.index), copy=True) for t in z.tensors]

        def xr_all() -> None:
            with xr.open_dataset(spath, engine="tensogram") as ds:
                ds.load()

        rows = [
            (
                "open (metadata only)",
                ref_open,
                [("open_ztensor + list tensors", our_open, 2.0), ("xr.open_dataset", xr_open, None)],
            ),
            ("open + list (ref via FFI)", ref_open_list, [("open_ztensor + list tensors", our_open, None)]),
            (
                "one tensor, file open",
                ref_one,
                [("read (mmap view) + copy", our_one, 1.5), ("xarray ds[v].values", xr_one, 1.5)],
            ),
            ("one tensor incl. open", ref_one_cold, [("open_ztensor + read + copy", our_one_cold, None)]),
            (
                "all tensors (copied)",
                ref_all,
                [("open_ztensor + read + copy", our_all, 1.5), ("xr.open_dataset + load()", xr_all, 1.5)],
            ),
        ]
        print(f"{'measure':<28} {'reference':>11} {'ours':>11} {'ratio':>7}  {'target':<12} how")
        for label, ref_fn, ours in rows:
            t_ref = median_time(ref_fn, args.repeat)
            for how, fn, target in ours:
                t = median_time(fn, args.repeat)
                ratio = t / t_ref
                verdict = "" if target is None else ("ok" if ratio <= target else "MISSED") + f" <={target}x"
                print(f"{label:<28} {t_ref * 1e3:9.2f}ms {t * 1e3:9.2f}ms {ratio:6.2f}x  {verdict:<12} {how}")
        our_file.close()
        ds_holder.close()
        gb = size / 1e9
        t_all = median_time(our_all, args.repeat)
        print(f"\nthroughput, all tensors copied: {gb / t_all:.2f} GB/s (ours)")


if __name__ == "__main__":
    main()
