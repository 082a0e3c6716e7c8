"""Regenerate xarray_tensogram/samples/forecast.tgm with the reference encoder (needs the test extra).

A small ERA-like forecast: 4 steps x (2t, msl) on a 19x36 global grid, plus
latitude/longitude coordinate objects, zstd-compressed with xxh3 hashes.
"""

from __future__ import annotations

import pathlib

import numpy as np
import tensogram

OUT = pathlib.Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples" / "forecast.tgm"


def main() -> None:
    lat = np.linspace(90.0, -90.0, 19)
    lon = np.arange(0.0, 360.0, 10.0)
    lon2, lat2 = np.meshgrid(lon, lat)
    messages = []
    for step in (0, 6, 12, 18):
        t2m = (288.0 - 30.0 * np.abs(np.sin(np.radians(lat2))) + 3.0 * np.cos(np.radians(lon2 - 15 * step))).astype(
            "f4"
        )
        msl = (101325.0 + 800.0 * np.sin(np.radians(2 * lat2)) * np.cos(np.radians(lon2 + 10 * step))).astype("f4")
        objects, base = [], []
        for param, field, units, long_name in (
            ("2t", t2m, "K", "2 metre temperature"),
            ("msl", msl, "Pa", "Mean sea level pressure"),
        ):
            objects.append(
                ({"type": "ntensor", "shape": list(field.shape), "dtype": "float32", "compression": "zstd"}, field)
            )
            base.append(
                {
                    "mars": {"class": "ea", "param": param, "date": 20240101, "time": 0, "step": step},
                    "dim_names": ["latitude", "longitude"],
                    "cf": {"units": units, "long_name": long_name},
                }
            )
        objects.append(({"type": "ntensor", "shape": [lat.size], "dtype": "float64"}, lat))
        base.append({"name": "latitude", "cf": {"units": "degrees_north", "standard_name": "latitude"}})
        objects.append(({"type": "ntensor", "shape": [lon.size], "dtype": "float64"}, lon))
        base.append({"name": "longitude", "cf": {"units": "degrees_east", "standard_name": "longitude"}})
        messages.append(
            tensogram.encode({"base": base, "_extra_": {"title": "xarray-tensogram sample forecast"}}, objects)
        )
    OUT.write_bytes(b"".join(messages))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
