"""Regenerate ``xarray_tensogram/samples/sample.zt`` with our v0.1 writer.

A few KB: a 2-m temperature field on a small lat/lon grid, its coordinates and a
wind-speed field, each with ``dim_names`` and units as custom keys.
Run: ``python tools/make_sample_zt.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xarray_tensogram.formats.ztensor import write_ztensor_v01

OUT = Path(__file__).resolve().parent.parent / "xarray_tensogram" / "samples" / "sample.zt"


def main() -> None:
    lat = np.linspace(60.0, 30.0, 16, dtype=np.float32)
    lon = np.linspace(-10.0, 30.0, 24, dtype=np.float32)
    yy, xx = np.meshgrid(np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    t2m = (288.0 - 30.0 * np.sin(yy) ** 2 + 3.0 * np.cos(3 * xx)).astype(np.float32)
    wind = (5.0 + 4.0 * np.sin(2 * xx) * np.cos(yy)).astype(np.float32)
    write_ztensor_v01(
        OUT,
        [
            ("latitude", lat, {"dim_names": ["latitude"], "units": "degrees_north"}),
            ("longitude", lon, {"dim_names": ["longitude"], "units": "degrees_east"}),
            ("t2m", t2m, {"dim_names": ["latitude", "longitude"], "units": "K", "long_name": "2 metre temperature"}),
            (
                "wind.speed",
                wind,
                {"dim_names": ["latitude", "longitude"], "units": "m s-1", "long_name": "10 metre wind speed"},
            ),
        ],
        compression=None,
        checksum="crc32c",
    )
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
