"""Regenerate xarray_tensogram/samples/grib_pl.{grib2,tgm} (needs the test extra: eccodes, tensogram).

Temperature and specific humidity, 3 steps x 2 pressure levels on a small 6 x 8 regular_ll grid,
built from ecCodes' ``regular_ll_pl_grib2`` sample and converted the way ECMWF's GRIB converter
does (``merge_all``: one message, one object per GRIB message; see ``tests/grib_corpus.py``).
The values look like weather (analytic, not real data): ``t`` in K, colder poleward and aloft,
``q`` in kg/kg, moister toward the tropics and near the surface, both changing from step to step.
The mapping page shows opening the .tgm next to the cfgrib call on the .grib2 it replaces.
"""

from __future__ import annotations

import pathlib
import sys

import eccodes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import grib_corpus as gc  # noqa: E402  (lives in tests/, after the path insert)

OUT = ROOT / "xarray_tensogram" / "samples"
GRID = {
    "Ni": 8,
    "Nj": 6,
    "latitudeOfFirstGridPointInDegrees": 60.0,
    "latitudeOfLastGridPointInDegrees": 10.0,
    "longitudeOfFirstGridPointInDegrees": 0.0,
    "longitudeOfLastGridPointInDegrees": 28.0,
    "iDirectionIncrementInDegrees": 4.0,
    "jDirectionIncrementInDegrees": 10.0,
}


PARAMS = (130, 133)  # t (K), q (kg/kg)
STEPS = (0, 6, 12)
LEVELS = (850, 500)


def weather(param: int, step: int, level: int) -> np.ndarray:
    """Plausible values on the grid (rows north to south, as the grid is scanned)."""
    lat = np.linspace(GRID["latitudeOfFirstGridPointInDegrees"], GRID["latitudeOfLastGridPointInDegrees"], GRID["Nj"])
    lon = GRID["longitudeOfFirstGridPointInDegrees"] + GRID["iDirectionIncrementInDegrees"] * np.arange(GRID["Ni"])
    lon2, lat2 = np.meshgrid(lon, lat)
    wave = np.cos(np.radians(8 * lon2 - 20 * step)) * np.cos(np.radians(lat2))
    if param == 130:  # temperature: 250-295 K at 850 hPa, 25 K colder at 500 hPa, warming 0.5 K per 6 h
        return 295.0 - 0.6 * (lat2 - 10.0) - (25.0 if level == 500 else 0.0) + 2.0 * wave + 0.5 * step / 6
    # specific humidity: about 14 g/kg in the tropics at 850 hPa, a fifth of that at 500 hPa
    q = 0.014 * np.exp(-(lat2 - 10.0) / 25.0) * (0.2 if level == 500 else 1.0)
    return q * (1.0 + 0.15 * wave) * (1.0 + 0.03 * step / 6)


def with_values(message: bytes, values: np.ndarray) -> bytes:
    h = eccodes.codes_new_from_message(message)
    try:
        eccodes.codes_set_values(h, values.ravel())
        return bytes(eccodes.codes_get_message(h))
    finally:
        eccodes.codes_release(h)


def main() -> None:
    grib = b"".join(  # in MARS order (param, step, level), as gc.grib_file orders them
        with_values(
            gc.grib_message("regular_ll_pl_grib2", param=p, step=s, level=lev, geometry=GRID), weather(p, s, lev)
        )
        for p in PARAMS
        for s in STEPS
        for lev in LEVELS
    )
    (OUT / "grib_pl.grib2").write_bytes(grib)
    (OUT / "grib_pl.tgm").write_bytes(gc.convert(grib, "merge_all"))
    print(f"wrote {OUT / 'grib_pl.grib2'} and {OUT / 'grib_pl.tgm'}")


if __name__ == "__main__":
    main()
