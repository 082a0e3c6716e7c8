"""Regenerate ``xarray_tensogram/samples/era_pl.tgm`` with the reference encoder (needs the test extra).

An ERA-like pressure-level forecast small enough to ship (under 64 KiB): temperature ``t`` and
geopotential ``z`` at 1000, 850 and 500 hPa, steps 0, 6, 12 and 18 h from 2024-01-01 00 UTC, on a
5-degree global grid (37 x 72). One message per step holding one object per (param, level), plus
the latitude/longitude coordinate objects; simple_packing (12 bits) + zstd, xxh3 hashes.

It exercises the hypercube mapping: ``xr.open_dataset`` gives ``t`` and ``z`` with dims
``(step, level, latitude, longitude)``, ``time``/``step``/``valid_time`` from MARS date/time/step
and ``level`` (in hPa: ``mars.levtype`` is ``pl``) from ``mars.levelist``. The fields are analytic,
not real data, but change from step to step as a forecast does: a zonal temperature profile with a
travelling wave, a diurnal cycle strongest near the surface and a slow warming, and a geopotential
consistent with them (so area means differ between steps, as in the README's first example).

    python tools/make_sample_era.py
"""

from __future__ import annotations

import pathlib

import numpy as np
import tensogram

OUT = pathlib.Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples" / "era_pl.tgm"
LEVELS = (1000, 850, 500)
STEPS = (0, 6, 12, 18)
#: (param, units, long name)
PARAMS = (("t", "K", "Temperature"), ("z", "m**2 s**-2", "Geopotential"))


def fields(step: int, level: int, lat2: np.ndarray, lon2: np.ndarray) -> dict[str, np.ndarray]:
    """Smooth analytic t and z for one step and level (float64, shape of ``lat2``)."""
    coslat = np.cos(np.radians(lat2))
    wave = np.cos(np.radians(3 * lon2 - 15 * step)) * coslat**2
    surface_t = 250.0 + 50.0 * coslat**2
    near_surface = (level - 500) / 500  # 1 at 1000 hPa, 0 at 500 hPa
    diurnal = 1.5 * near_surface * np.sin(2 * np.pi * (step - 3) / 24)  # warmest in the afternoon
    warming = 0.3 * step / 6  # K per 6 hours
    t = surface_t - 6.5e-3 * (1000 - level) * 8.0 + 4.0 * wave + diurnal + warming
    height = 7400.0 * np.log(1000.0 / level) * (1 + (diurnal + warming) / 250.0) + 120.0 * wave  # metres
    return {"t": t, "z": 9.80665 * height}


def main() -> None:
    lat = np.linspace(90.0, -90.0, 37)
    lon = np.arange(0.0, 360.0, 5.0)
    lon2, lat2 = np.meshgrid(lon, lat)
    messages = []
    for step in STEPS:
        objects, base = [], []
        for level in LEVELS:
            values = fields(step, level, lat2, lon2)
            for param, units, long_name in PARAMS:
                field = values[param]
                desc = {
                    "type": "ntensor",
                    "shape": list(field.shape),
                    "dtype": "float64",
                    "encoding": "simple_packing",
                    "sp_bits_per_value": 12,
                    "compression": "zstd",
                }
                objects.append((desc, field))
                base.append(
                    {
                        "mars": {
                            "class": "ea",
                            "stream": "oper",
                            "type": "fc",
                            "levtype": "pl",
                            "param": param,
                            "date": 20240101,
                            "time": 0,
                            "step": step,
                            "levelist": level,
                        },
                        "dim_names": ["latitude", "longitude"],
                        "cf": {"units": units, "long_name": long_name},
                    }
                )
        objects.append(({"type": "ntensor", "shape": [lat.size], "dtype": "float64"}, lat))
        base.append({"name": "latitude", "cf": {"units": "degrees_north", "standard_name": "latitude"}})
        objects.append(({"type": "ntensor", "shape": [lon.size], "dtype": "float64"}, lon))
        base.append({"name": "longitude", "cf": {"units": "degrees_east", "standard_name": "longitude"}})
        extra = {"title": "xarray-tensogram ERA-like pressure-level sample (analytic fields)"}
        messages.append(tensogram.encode({"base": base, "_extra_": extra}, objects))
    OUT.write_bytes(b"".join(messages))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
