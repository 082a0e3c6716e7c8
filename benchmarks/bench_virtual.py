"""Virtual Zarr: opening 100 files as one dataset, references against ``open_mfdataset``.

    python benchmarks/bench_virtual.py [--files 100] [--repeat 5] [--ny 181 --nx 360]

Files: ``--files`` single-step Tensogram files (2t, msl, 10u, 10v float32 + zstd, plus latitude and
longitude objects), written by the reference encoder (``tensogram``) into a temporary directory.

Measured side by side in one run (medians, the two ways timed alternately so both see the same load):

- ``open_mfdataset``: ``xr.open_mfdataset(files, engine=tensogram, combine="nested", concat_dim="step")``,
  what a user does without references (every file is opened and its metadata read each time);
- ``refs json`` / ``refs parquet``: ``xr.open_dataset(refs, engine="kerchunk")`` on kerchunk references
  written once by ``xarray-tensogram refs``;
- ``point series``: ``ds["2t"][:, ny//2, nx//2].values`` after each open (all steps, one point);
- the one-time cost of building the references (parsing every file) is printed too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from servers import make_era
from xarray_tensogram import open_tensogram
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE
from xarray_tensogram.virtual.refs import combine_virtual, write_refs

warnings.filterwarnings("ignore")


def make_files(folder: Path, count: int, ny: int, nx: int) -> list[Path]:
    whole = make_era(ny, nx, steps=count, compression="zstd")
    src = folder / "whole.tgm"
    src.write_bytes(whole)
    files = []
    with open_tensogram(src) as f:
        for i, msg in enumerate(f):
            p = folder / f"step_{i:03d}.tgm"
            p.write_bytes(whole[msg.offset : msg.offset + msg.length])
            files.append(p)
    src.unlink()
    return files


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ny", type=int, default=181)
    ap.add_argument("--nx", type=int, default=360)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = make_files(folder, args.files, args.ny, args.nx)
        t0 = time.perf_counter()
        vds = combine_virtual(files, concat_dim="step")
        build = time.perf_counter() - t0
        json_refs, parquet_refs = folder / "refs.json", folder / "refs.parquet"
        write_refs(vds, json_refs)
        write_refs(vds, parquet_refs)

        def mf() -> xr.Dataset:
            return xr.open_mfdataset(
                files,
                engine=ENGINE,
                combine="nested",
                concat_dim="step",
                data_vars="all",
                coords="different",
                compat="equals",
                combine_attrs="override",
            )

        def refs(path: Path) -> Callable[[], xr.Dataset]:
            return lambda: xr.open_dataset(str(path), engine="kerchunk", decode_timedelta=True, chunks={})

        ways = {"open_mfdataset": mf, "refs json": refs(json_refs), "refs parquet": refs(parquet_refs)}
        y, x = args.ny // 2, args.nx // 2
        series = {name: np.asarray(fn()["2t"][:, y, x].values) for name, fn in ways.items()}  # warm-up + check
        for name, values in series.items():
            np.testing.assert_array_equal(values, series["open_mfdataset"], err_msg=name)
        opens: dict[str, list[float]] = {n: [] for n in ways}
        points: dict[str, list[float]] = {n: [] for n in ways}
        for _ in range(args.repeat):
            for name, fn in ways.items():
                holder: dict[str, xr.Dataset] = {}
                opens[name].append(timed(lambda fn=fn, holder=holder: holder.setdefault("ds", fn())))
                points[name].append(timed(lambda holder=holder: holder["ds"]["2t"][:, y, x].values))
                holder["ds"].close()
        base_open = statistics.median(opens["open_mfdataset"])
        base_point = statistics.median(points["open_mfdataset"])
        print(f"{args.files} files of {args.ny}x{args.nx} (4 fields, zstd); medians of {args.repeat}")
        print(f"building the references once (parse every file): {build:.2f} s")
        print(f"{'':16} {'open':>9} {'speed-up':>9} {'point series':>13} {'speed-up':>9}")
        for name in ways:
            o, p = statistics.median(opens[name]), statistics.median(points[name])
            print(f"{name:16} {o * 1e3:7.1f}ms {base_open / o:8.1f}x {p * 1e3:11.1f}ms {base_point / p:8.1f}x")


if __name__ == "__main__":
    main()
