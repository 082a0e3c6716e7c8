"""Regenerate xarray_tensogram/samples/grib_pl.{grib2,tgm} (needs the test extra: eccodes, tensogram).

Temperature and specific humidity, 3 steps x 2 pressure levels on a small 6 x 8 regular_ll grid,
built from ecCodes' ``regular_ll_pl_grib2`` sample and converted the way ECMWF's GRIB converter
does (``merge_all``: one message, one object per GRIB message; see ``tests/grib_corpus.py``).
The README shows opening the .tgm next to the cfgrib call on the .grib2 it replaces.
"""

from __future__ import annotations

import pathlib
import sys

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


def main() -> None:
    grib = gc.grib_file("regular_ll_pl_grib2", [130, 133], [0, 6, 12], [850, 500], GRID)
    (OUT / "grib_pl.grib2").write_bytes(grib)
    (OUT / "grib_pl.tgm").write_bytes(gc.convert(grib, "merge_all"))
    print(f"wrote {OUT / 'grib_pl.grib2'} and {OUT / 'grib_pl.tgm'}")


if __name__ == "__main__":
    main()
