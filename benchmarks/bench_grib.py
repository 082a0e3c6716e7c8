"""Opening a GRIB-converted file costs about what a plain ``.tgm`` with the same objects costs.

Run from the repository root (needs the test extra: ``eccodes``, ``cfgrib``, ``tensogram``)::

    python benchmarks/bench_grib.py [--steps 24] [--levels 6] [--params 2] [--repeat 7]

Files, built in a temporary directory:

- ``grib``: ``params x steps x levels`` GRIB2 messages from ecCodes' ``regular_ll_pl_grib2``
  sample (31 x 16 grid), converted as ``tensogram-grib`` does (``tests/grib_corpus.py``: every
  object carries ``mars`` and the ~50 ``grib_repro`` keys, many of which vary with step and
  level), in both layouts: ``merge_all`` (one message) and ``one_to_one`` (one message per field);
- ``plain``: the same number of objects of the same shape with only the independent MARS keys
  (``param, date, time, step, levelist``), in the same two layouts.

Measured: ``xr.open_dataset`` (index + Dataset build, metadata only) then close, median of
``--repeat`` runs after a warm-up; plain and GRIB-converted timed alternately so both see the
same machine load. For information, cfgrib's open of the GRIB file itself (no index file).
The grid is small on purpose: opening reads metadata only, so the object count is what matters.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tensogram
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import grib_corpus as gc
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.formats.tensogram.reader import open_tensogram

PARAMS = (130, 133, 135, 157)


def _plain(params: list[int], steps: list[int], levels: list[int], layout: str) -> bytes:
    """The same objects with only the MARS keys a hand-written cube would carry."""
    base: list[dict[str, Any]] = []
    objects = []
    for p in params:
        for s in steps:
            for lev in levels:
                values = gc.field_values(31 * 16, p + s / 10 + lev / 1000).reshape(31, 16)
                base.append({"mars": {"param": p, "date": 20260404, "time": 0, "step": s, "levelist": lev}})
                objects.append(({"type": "ntensor", "shape": [31, 16], "dtype": "float64"}, values))
    if layout == "merge_all":
        return bytes(tensogram.encode({"base": base}, objects))
    return b"".join(bytes(tensogram.encode({"base": [b]}, [o])) for b, o in zip(base, objects, strict=True))


def _time_open(path: Path, engine: Any, **kw: Any) -> float:
    t0 = time.perf_counter()
    ds = xr.open_dataset(path, engine=engine, **kw)
    ds.close()
    return time.perf_counter() - t0


def _time_index(path: Path) -> float:
    """Only the reader: frames walked and CBOR metadata decoded, no Dataset."""
    t0 = time.perf_counter()
    with open_tensogram(str(path)):
        pass
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--levels", type=int, default=6)
    ap.add_argument("--params", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    params = list(PARAMS[: args.params])
    steps = [3 * i for i in range(args.steps)]
    levels = [1000, 925, 850, 700, 500, 300, 250, 200, 100, 50][: args.levels]
    n = len(params) * len(steps) * len(levels)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        grib_bytes = gc.grib_file("regular_ll_pl_grib2", params, steps, levels)
        (tmp / "in.grib2").write_bytes(grib_bytes)
        files = {}
        for layout in ("merge_all", "one_to_one"):
            files["grib", layout] = tmp / f"grib_{layout}.tgm"
            files["grib", layout].write_bytes(gc.convert(grib_bytes, layout))
            files["plain", layout] = tmp / f"plain_{layout}.tgm"
            files["plain", layout].write_bytes(_plain(params, steps, levels, layout))
        engine = TensogramBackendEntrypoint
        with xr.open_dataset(files["grib", "merge_all"], engine=engine) as ds:
            shape = dict(ds.sizes)
            assert ds[next(iter(ds.data_vars))].attrs.get("tensogram_missing_objects") is None, "holes in the cube"
        print(f"{n} objects ({len(params)} params x {len(steps)} steps x {len(levels)} levels), Dataset sizes {shape}")
        print(
            f"{'layout':<12}{'plain .tgm [ms]':>17}{'GRIB-converted [ms]':>21}{'ratio':>8}"
            f"{'metadata parse plain/GRIB [ms]':>34}{'metadata bytes plain/GRIB':>28}"
        )
        for layout in ("merge_all", "one_to_one"):
            plain_path, grib_path = files["plain", layout], files["grib", layout]
            _time_open(plain_path, engine)
            _time_open(grib_path, engine)
            plain_t, grib_t = [], []
            for _ in range(args.repeat):
                plain_t.append(_time_open(plain_path, engine))
                grib_t.append(_time_open(grib_path, engine))
            p, g = statistics.median(plain_t) * 1e3, statistics.median(grib_t) * 1e3
            ip = statistics.median(_time_index(plain_path) for _ in range(args.repeat)) * 1e3
            ig = statistics.median(_time_index(grib_path) for _ in range(args.repeat)) * 1e3
            # payload is the same (n float64 fields): the size difference is metadata
            extra = grib_path.stat().st_size - plain_path.stat().st_size
            sizes = f"+{extra / 1e3:.0f} kB"
            print(f"{layout:<12}{p:>17.1f}{g:>21.1f}{g / p:>8.2f}{f'{ip:.1f} / {ig:.1f}':>34}{sizes:>28}")
        cf = [
            _time_open(tmp / "in.grib2", "cfgrib", backend_kwargs={"indexpath": ""})
            for _ in range(max(1, args.repeat // 2))
        ]
        print(f"for information, cfgrib on the GRIB file: {statistics.median(cf) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
