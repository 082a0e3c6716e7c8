"""Opening a GRIB-converter layout against a plain .tgm with the same number of objects.

Both files hold 24 steps x 6 pressure levels = 144 messages of one object (181 x 360 float64,
written with the reference encoder ``tensogram.encode``):

* ``grib``: base entries as ECMWF's converter writes them: ``mars`` (class, type, stream, expver,
  date, time, step, levtype, levelist, param, grid, area) plus ``grib_repro`` keys, a dozen of
  which vary together with step and level (``level``, ``topLevel``, ``stepRange``, ``endStep``,
  ``validityTime``, ...), as in ``../shared/specs/tensogram-from-grib.md``;
* ``plain``: base entries with only ``mars`` param, date, time, step and levelist;
* ``plain_heavy``: ``plain`` plus the same ``grib_repro`` keys under another name (``info``), all of
  them constant (no GRIB meaning, so they only become attributes): a plain file with the GRIB
  file's metadata volume, which shows how much of the difference is decoding more CBOR.

Before the independent-key planning, the ``grib`` file raised ``MemoryError`` (every varying key
became a dimension). Measured: median wall time of ``xr.open_dataset`` + close (metadata only),
after a warm-up, both files alternately.

    python benchmarks/bench_grib_layout.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import tensogram
import xarray as xr

from xarray_tensogram.backend import TensogramBackendEntrypoint

STEPS = range(0, 144, 6)
LEVELS = (1000, 925, 850, 700, 500, 300)
SHAPE = (181, 360)


def _repro(step: int, level: int) -> dict[str, object]:
    return {
        "shortName": "t",
        "name": "Temperature",
        "units": "K",
        "paramId": 130,
        "typeOfLevel": "isobaricInhPa",
        "level": level,
        "topLevel": level,
        "bottomLevel": level,
        "dataDate": 20260404,
        "dataTime": 0,
        "stepRange": str(step),
        "startStep": step,
        "endStep": step,
        "stepUnits": 1,
        "stepType": "instant",
        "validityDate": 20260404 + (step // 24),
        "validityTime": (step % 24) * 100,
        "gridType": "regular_ll",
        "Ni": SHAPE[1],
        "Nj": SHAPE[0],
        "latitudeOfFirstGridPointInDegrees": 90.0,
        "longitudeOfFirstGridPointInDegrees": 0.0,
        "latitudeOfLastGridPointInDegrees": -90.0,
        "longitudeOfLastGridPointInDegrees": 359.0,
        "iDirectionIncrementInDegrees": 1.0,
        "jDirectionIncrementInDegrees": 1.0,
        "iScansNegatively": 0,
        "jScansPositively": 0,
        "jPointsAreConsecutive": 0,
        "packingType": "grid_simple",
        "bitsPerValue": 16,
        "decimalScaleFactor": 0,
        "centre": "ecmf",
        "edition": 2,
        "discipline": 0,
        "tablesVersion": 32,
    }


def _write(path: str, grib: bool, heavy: bool = False) -> None:
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        for step in STEPS:
            for level in LEVELS:
                a = rng.normal(250.0, 20.0, SHAPE)
                mars: dict[str, object] = {"date": 20260404, "time": 0, "step": step, "levelist": level, "param": 130}
                entry: dict[str, object] = {"mars": mars}
                if grib:
                    mars.update(
                        {
                            "class": "od",
                            "type": "fc",
                            "stream": "oper",
                            "expver": "0001",
                            "domain": "g",
                            "levtype": "pl",
                            "grid": "regular_ll",
                            "area": [90.0, 0.0, -90.0, 359.0],
                        }
                    )
                    entry["grib_repro"] = _repro(step, level)
                elif heavy:
                    entry["info"] = _repro(0, 0)
                desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": "float64"}
                f.write(bytes(tensogram.encode({"base": [entry]}, [(desc, a)])))


def _open_time(path: str) -> float:
    t0 = time.perf_counter()
    ds = xr.open_dataset(path, engine=TensogramBackendEntrypoint)
    ds.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: os.path.join(tmp, f"{name}.tgm") for name in ("plain", "plain_heavy", "grib")}
        for name, path in paths.items():
            _write(path, grib=name == "grib", heavy=name == "plain_heavy")
        with xr.open_dataset(paths["grib"], engine=TensogramBackendEntrypoint) as ds:
            print("grib layout opens as:", {k: dict(v.sizes) for k, v in ds.data_vars.items()})
        for path in paths.values():
            _open_time(path)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.repeat):
            for name, path in paths.items():
                times[name].append(_open_time(path))
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"{'file':12} {'objects':>8} {'open (ms)':>10}")
        for name in paths:
            print(f"{name:12} {len(STEPS) * len(LEVELS):>8} {med[name] * 1e3:>10.1f}")
        print(f"ratio grib / plain: {med['grib'] / med['plain']:.2f}")
        print(f"ratio grib / plain_heavy (same metadata volume): {med['grib'] / med['plain_heavy']:.2f}")


if __name__ == "__main__":
    main()
