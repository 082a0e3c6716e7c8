"""Regenerate xarray_tensogram/samples/netcdf/era5_sfc.{nc,tgm} (needs the test extra: scipy, tensogram).

An ERA5-like netCDF-3 file as the CDS used to deliver them (packed int16 ``t2m`` and ``sst`` with
``scale_factor``/``add_offset``/``_FillValue``/``missing_value``, ``sst`` missing over land, an unlimited
``time`` in hours since 1900 with a calendar, CF global attributes), and its conversion by ECMWF's
``tensogram convert-netcdf --split-by record``, emulated as ``tests/netcdf_converter.py`` does (the
converter is not in the Python wheel). docs/mapping.md opens the .tgm next to the .nc it came from.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import xarray as xr

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import netcdf_converter  # noqa: E402  (lives in tests/, after the path insert)

OUT = ROOT / "xarray_tensogram" / "samples" / "netcdf"


def era5_like() -> xr.Dataset:
    rng = np.random.default_rng(2024)
    lat = np.arange(60.0, 39.0, -5.0, dtype=np.float32)
    lon = np.arange(0.0, 40.0, 5.0, dtype=np.float32)
    hours = np.arange(4, dtype=np.int32) * 6 + 1091856  # 2024-07-23, 00 to 18 UTC
    t2m = 290 + 8 * rng.standard_normal((4, lat.size, lon.size))
    sst = 288 + 3 * rng.standard_normal((4, lat.size, lon.size))
    sst[:, :2, 4:] = np.nan  # land
    return xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), t2m, {"units": "K", "long_name": "2 metre temperature"}),
            "sst": (("time", "latitude", "longitude"), sst, {"units": "K", "long_name": "Sea surface temperature"}),
        },
        coords={
            "longitude": ("longitude", lon, {"units": "degrees_east", "long_name": "longitude"}),
            "latitude": ("latitude", lat, {"units": "degrees_north", "long_name": "latitude"}),
            "time": ("time", hours, {"units": "hours since 1900-01-01 00:00:00.0", "calendar": "gregorian"}),
        },
        attrs={"Conventions": "CF-1.6", "history": "ERA5-like sample for xarray-tensogram"},
    )


def main() -> None:
    packed = {"dtype": "int16", "_FillValue": np.int16(-32767), "missing_value": np.int16(-32767)}
    encoding = {
        "t2m": {**packed, "scale_factor": 0.0005, "add_offset": 290.0},
        "sst": {**packed, "scale_factor": 0.0002, "add_offset": 288.0},
        "time": {"dtype": "int32"},
    }
    nc = OUT / "era5_sfc.nc"
    era5_like().to_netcdf(nc, engine="scipy", encoding=encoding, unlimited_dims=["time"])
    netcdf_converter.convert(nc, OUT / "era5_sfc.tgm", split_by="record")
    print(f"wrote {nc} and {OUT / 'era5_sfc.tgm'}")


if __name__ == "__main__":
    main()
