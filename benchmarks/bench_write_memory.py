"""Peak memory of writing a Dask-backed Dataset larger than the budget.

A float32 cube of ``--gib`` GiB (default 2: 64 x 2048 x 4096) is built with the writers themselves from a
Dask array, in a temporary directory: ``in.tgm`` (one message per ``time``) and ``in.tet`` (one tile per
``time`` index). Then, for each format, a child process opens the file with ``chunks={}`` and writes it
again (``.tgm`` -> ``.tgm``, ``.tet`` -> ``.tet``, and ``.tgm`` -> ``.tet``); its peak RSS comes from
the child's own resource usage (``ru_maxrss``, KiB on Linux), measured by the parent after the
child exits (``os.wait4``), next to the RSS of a child that only opens the file (the baseline).
The budget is 512 MiB; the output compares the values of the copy with the source, sampled.

Run: ``python benchmarks/bench_write_memory.py [--gib 2] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_MIB = 512

CHILD = r"""
import sys, xarray as xr, xarray_tensogram as xt
src, dst, action = sys.argv[1:4]
ds = xr.open_dataset(src, engine="tensogram", chunks={})
if action == "write":
    (xt.to_tensogram if dst.endswith(".tgm") else xt.to_tetr)(ds.drop_attrs(deep=False), dst)
"""


def build_inputs(folder: Path, gib: float) -> None:
    """The input files, written by our writers from a lazily computed Dask array (one chunk per time)."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    import xarray_tensogram as xt

    ny, nx = 2048, 4096
    nt = max(1, round(gib * 2**30 / (ny * nx * 4)))
    values = da.random.default_rng(0).random((nt, ny, nx), chunks=(1, ny, nx), dtype=np.float32)
    times = np.datetime64("2024-01-01T00:00", "ns") + np.arange(nt) * np.timedelta64(1, "h")
    ds = xr.Dataset({"t": (("time", "y", "x"), values, {"units": "K"})}, coords={"time": times})
    xt.to_tensogram(ds, folder / "in.tgm", message_dims=["time"])
    xt.to_tetr(ds.drop_vars("time"), folder / "in.tet", chunks={"time": 1})


def check_copy(src: Path, dst: Path) -> bool:
    """The first, middle and last fields of the copy equal the source's."""
    import numpy as np
    import xarray as xr

    with xr.open_dataset(src, engine="tensogram") as a, xr.open_dataset(dst, engine="tensogram") as b:
        n = a["t"].shape[0]
        return all(np.array_equal(a["t"][i].values, b["t"][i].values) for i in sorted({0, n // 2, n - 1}))


def in_child(*argv: str) -> tuple[float, float, int]:
    """Run ``argv`` in a fresh interpreter: (its own peak RSS in MiB from ``os.wait4``, seconds, exit code).

    The parent stays small (it imports neither numpy nor xarray): a forked child's peak RSS
    includes the parent's at the time of the fork.
    """
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - t0, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--keep", type=Path, default=None, help="build the files here and keep them")
    parser.add_argument("--step", nargs="+", default=None, help=argparse.SUPPRESS)  # child entry points
    args = parser.parse_args()
    if args.step:
        kind, *paths = args.step
        if kind == "build":
            build_inputs(Path(paths[0]), args.gib)
        else:
            sys.exit(0 if check_copy(Path(paths[0]), Path(paths[1])) else 1)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        me = str(Path(__file__).resolve())
        _rss, seconds, _ = in_child(me, "--gib", str(args.gib), "--step", "build", str(folder))
        tgm, tet = folder / "in.tgm", folder / "in.tet"
        print(
            f"built {tgm.stat().st_size / 2**30:.2f} GiB .tgm and {tet.stat().st_size / 2**30:.2f} GiB .tet "
            f"(float32) in {seconds:.0f} s"
        )
        base, _, _ = in_child("-c", CHILD, str(tgm), str(folder / "unused"), "open")
        print(f"{'case':<16}{'peak RSS MiB':>14}{'seconds':>10}{'budget':>9}  values")
        print(f"{'open only':<16}{base:>14.0f}{'':>10}{BUDGET_MIB:>9}")
        for src, dst in ((tgm, folder / "out.tgm"), (tet, folder / "out.tet"), (tgm, folder / "out2.tet")):
            rss, seconds, code = in_child("-c", CHILD, str(src), str(dst), "write")
            same = code == 0 and in_child(me, "--step", "check", str(src), str(dst))[2] == 0
            print(
                f"{src.suffix + ' -> ' + dst.suffix:<16}{rss:>14.0f}{seconds:>10.1f}{BUDGET_MIB:>9}  "
                f"{'equal' if same else 'DIFFERENT'}{'' if rss < BUDGET_MIB else '  OVER BUDGET'}"
            )
            if dst.exists():
                dst.unlink()


if __name__ == "__main__":
    main()
