"""A netCDF file against its conversions: ``xr.open_dataset`` of the ``.nc`` and of the ``.tgm``.

One run, same machine load: an ERA5-like netCDF-4 file (``t2m`` and ``sst`` packed int16, hourly
``time`` unlimited, a 0.5-degree European box; 744 hours by default) written with h5netcdf, and its
conversions by ``tensogram convert-netcdf`` in the three split modes (emulated by
``tests/netcdf_converter.py`` with the reference encoder, as the tests do: the converter is not in
the Python wheel). Both sides produce the same Dataset (checked before timing). Medians of
``--repeat`` runs after a warm-up, the original and the conversions timed alternately:

- open: ``xr.open_dataset`` then close (metadata; the index coordinates are read);
- load: ``ds.load()`` on a freshly opened Dataset (open excluded).

Run: ``python benchmarks/bench_netcdf.py [--hours 744] [--repeat 5]`` (test extra installed).

Measured on the shared 2-core development machine (load average about 3; wall-clock medians, ratios to
the ``.nc`` read by h5netcdf in the same run): the file and variable splits open in 0.11x and load in
0.5-0.8x of the original's time; the record split (744 messages) opens in about 8x (240 ms: it scans
744 messages and reads the 744 one-value ``time`` objects for the index) and loads in 1.4x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import netcdf_converter  # lives in tests/, found through the path insert above


def _write(path: Path, hours: int) -> None:
    rng = np.random.default_rng(0)
    lat, lon = np.arange(70.0, 35.0, -0.5), np.arange(-10.0, 30.0, 0.5)
    shape = (hours, lat.size, lon.size)
    ds = xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), 285 + 5 * rng.standard_normal(shape), {"units": "K"}),
            "sst": (("time", "latitude", "longitude"), 290 + rng.standard_normal(shape), {"units": "K"}),
        },
        coords={
            "time": ("time", np.arange(hours, dtype=np.int32), {"units": "hours since 2024-01-01"}),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
        },
        attrs={"Conventions": "CF-1.6"},
    )
    ds["sst"][:, :20, 40:] = np.nan
    packed = {"dtype": "int16", "_FillValue": np.int16(-32767)}
    encoding = {"t2m": {**packed, "scale_factor": 0.002, "add_offset": 285.0}, "sst": {**packed, "scale_factor": 0.001}}
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding, unlimited_dims=["time"])


def _median(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _open_close(path: Path, engine: str) -> Callable[[], object]:
    return lambda: xr.open_dataset(path, engine=engine).close()


def _load(path: Path, engine: str, repeat: int) -> float:
    times = []
    for _ in range(repeat + 1):
        ds = xr.open_dataset(path, engine=engine)
        t0 = time.perf_counter()
        ds.load()
        times.append(time.perf_counter() - t0)
        ds.close()
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=int, default=744)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        nc = Path(tmp) / "era5.nc"
        _write(nc, args.hours)
        ref = xr.open_dataset(nc, engine="h5netcdf").load()
        files = {}
        for split in ("file", "variable", "record"):
            files[split] = netcdf_converter.convert(nc, Path(tmp) / f"{split}.tgm", split_by=split)
            ours = xr.open_dataset(files[split], engine="tensogram").load()
            xr.testing.assert_allclose(ours, ref)  # the same Dataset (packed: float64 here, float64 there)
        print(f"{args.hours} hours x {ref.sizes['latitude']} x {ref.sizes['longitude']}, medians of {args.repeat}")
        print(f"{'file':10s} {'open ms':>9s} {'ratio':>6s} {'load ms':>9s} {'ratio':>6s}")
        base_open = _median(_open_close(nc, "h5netcdf"), args.repeat)
        base_load = _load(nc, "h5netcdf", args.repeat)
        print(f"{'.nc':10s} {base_open * 1e3:9.1f} {1:6.2f} {base_load * 1e3:9.1f} {1:6.2f}")
        for split, path in files.items():
            base_open = _median(_open_close(nc, "h5netcdf"), args.repeat)  # alternate: same machine load
            opened = _median(_open_close(path, "tensogram"), args.repeat)
            base_load = _load(nc, "h5netcdf", args.repeat)
            loaded = _load(path, "tensogram", args.repeat)
            print(
                f"{split + '.tgm':10s} {opened * 1e3:9.1f} {opened / base_open:6.2f} "
                f"{loaded * 1e3:9.1f} {loaded / base_load:6.2f}"
            )


if __name__ == "__main__":
    main()
