"""Write small ``.tgm`` files with the real producers, for tests/data/producers/.

Two producers, each in an environment of its own (their dependencies conflict: anemoi-inference
0.10 wants earthkit-data < 1, tensogram-earthkit wants earthkit-data >= 1.0.2):

``anemoi``   -- ``tensogram-anemoi`` 0.24.0 (PyPI) with ``anemoi-inference<0.11`` and torch 2.13.0 (CPU)::

    python -m venv ../venv-anemoi         # any directory outside the checkout
    ../venv-anemoi/bin/pip install torch==2.13.0
    ../venv-anemoi/bin/pip install tensogram==0.24.0 tensogram-anemoi==0.24.0 "anemoi-inference<0.11"
    ../venv-anemoi/bin/python tools/make_producer_files.py anemoi

  The plugin is created through anemoi-inference's own output registry (its entry point) and
  driven as ``anemoi.inference.runners.default`` drives an output: ``open(initial_state)``,
  ``write_initial_state(initial_state)``, ``write_state(state)`` per step, ``close()``. The context
  is a stand-in, as in the plugin's own tests, but its typed variables are anemoi-transform's
  ``Variable.from_dict`` built from checkpoint-style ``mars`` entries (``levelist`` for pressure
  levels), as a checkpoint gives them. Three files: flat, ``stack_pressure_levels=True``, and
  ``simple_packing`` (16 bits).

``earthkit`` -- ``tensogram-earthkit`` from the tensogram repository's 0.24.0 tag (not on PyPI)::

    git clone https://github.com/ecmwf/tensogram ../tensogram
    mkdir -p ../src && git -C ../tensogram archive 0.24.0 python/tensogram-earthkit | tar -x -C ../src
    python -m venv ../venv-earthkit
    ../venv-earthkit/bin/pip install tensogram==0.24.0 ../src/python/tensogram-earthkit
    ../venv-earthkit/bin/python tools/make_producer_files.py earthkit

  A small GRIB file is built with ecCodes from its own samples (kept beside the output as the
  oracle), read with ``earthkit.data.from_source("file", ...)`` and written with
  ``fieldlist.to_target("file", path, encoder="tensogram")``.

Each run updates ``tests/data/producers/manifest.json`` (versions, parameters, what was written).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "producers"
MANIFEST = OUT / "manifest.json"

#: anemoi: an octahedral reduced Gaussian grid O<N> (AIFS runs on O96/N320; O12 keeps files small)
OCTAHEDRAL_N = 12
REFERENCE_DATE = dt.datetime(2024, 1, 1, 0)
STEPS_H = [0, 6, 12]
SURFACE = {"2t": 167, "msl": 151, "10u": 165, "10v": 166}
PRESSURE = {"t": 130, "z": 129, "q": 133}
LEVELS = [500, 850, 1000]

#: earthkit: a 10-degree global regular_ll grid, two steps
EK_STEPS = [0, 6]
EK_SURFACE = ["2t", "msl"]
EK_PRESSURE = ["t", "q"]
EK_LEVELS = [500, 850]


def octahedral_grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Latitudes and longitudes of the O<n> grid: 20 + 4i points on the i-th Gaussian row from each pole."""
    x, _w = np.polynomial.legendre.leggauss(2 * n)
    lats = np.degrees(np.arcsin(x))[::-1]  # north to south
    counts = [20 + 4 * i for i in range(n)]
    counts = counts + counts[::-1]
    lat = np.repeat(lats, counts)
    lon = np.concatenate([np.arange(c) * 360.0 / c for c in counts])
    return lat, lon


def field(lat: np.ndarray, lon: np.ndarray, seed: float, base: float, amplitude: float) -> np.ndarray:
    """A smooth, distinct field per variable, level and step."""
    return base + amplitude * np.cos(np.radians(lat)) * np.sin(np.radians(lon) * 2 + seed)


def anemoi_variables() -> dict[str, Any]:
    from anemoi.transform.variables import Variable

    typed = {name: Variable.from_dict(name, {"mars": {"param": name, "levtype": "sfc"}}) for name in SURFACE}
    for param in PRESSURE:
        for level in LEVELS:
            name = f"{param}_{level}"
            typed[name] = Variable.from_dict(name, {"mars": {"param": param, "levtype": "pl", "levelist": level}})
    return typed


def anemoi_state(step_h: int, lat: np.ndarray, lon: np.ndarray, names: list[str]) -> dict[str, Any]:
    fields = {}
    for k, name in enumerate(names):
        base = {"2t": 280.0, "msl": 101000.0, "10u": 0.0, "10v": 0.0, "t": 250.0, "z": 50000.0, "q": 0.005}
        amplitude = {"2t": 20.0, "msl": 2000.0, "10u": 8.0, "10v": 6.0, "t": 15.0, "z": 3000.0, "q": 0.004}
        param = name.split("_")[0]
        fields[name] = field(lat, lon, k + step_h / 6.0, base[param], amplitude[param]).astype(np.float32)
    return {
        "date": REFERENCE_DATE + dt.timedelta(hours=step_h),
        "step": dt.timedelta(hours=step_h),
        "latitudes": lat,
        "longitudes": lon,
        "fields": fields,
    }


def write_anemoi() -> dict[str, Any]:
    from anemoi.inference.outputs import create_output

    lat, lon = octahedral_grid(OCTAHEDRAL_N)
    typed = anemoi_variables()
    names = list(typed)
    context = SimpleNamespace(  # the stand-in the plugin's own tests use; typed variables as a checkpoint has them
        checkpoint=SimpleNamespace(typed_variables=typed),
        reference_date=REFERENCE_DATE,
        write_initial_state=True,
        output_frequency=None,
        typed_variables={},
    )
    configs = {
        "anemoi_flat.tgm": {},
        "anemoi_stacked.tgm": {"stack_pressure_levels": True},
        "anemoi_packed.tgm": {"encoding": "simple_packing", "bits": 16},
    }
    written = {}
    for fname, options in configs.items():
        path = OUT / fname
        output = create_output(context, {"tensogram": {"path": str(path), **options}})
        initial = anemoi_state(0, lat, lon, names)
        output.open(initial)
        output.write_initial_state(initial)  # step 0, as the runner writes it
        for step_h in STEPS_H[1:]:
            output.write_state(anemoi_state(step_h, lat, lon, names))
        output.close()
        plugin = next(c for c in type(output).__mro__ if c.__module__.startswith("tensogram_anemoi"))
        written[fname] = {"options": options, "plugin_class": f"{plugin.__module__}.{plugin.__qualname__}"}
    return {
        "producer": "tensogram-anemoi TensogramOutput via anemoi.inference.outputs.create_output",
        "versions": {p: md.version(p) for p in ("tensogram", "tensogram-anemoi", "anemoi-inference", "torch")},
        "grid": f"O{OCTAHEDRAL_N} ({lat.size} points), latitudes from numpy's Gauss-Legendre roots",
        "reference_date": REFERENCE_DATE.isoformat(),
        "steps_hours": STEPS_H,
        "surface": list(SURFACE),
        "pressure": list(PRESSURE),
        "levels_hPa": LEVELS,
        "values": "float32: base + amplitude * cos(lat) * sin(2 lon + seed), seed = variable index + step/6",
        "files": written,
    }


def write_earthkit() -> dict[str, Any]:
    import earthkit.data as ekd
    import eccodes

    grib_path = OUT / "earthkit_source.grib2"
    messages = []
    for step in EK_STEPS:
        for short in EK_SURFACE:
            messages.append(_grib_message("regular_ll_sfc_grib2", short, step, None))
        for short in EK_PRESSURE:
            for level in EK_LEVELS:
                messages.append(_grib_message("regular_ll_pl_grib2", short, step, level))
    grib_path.write_bytes(b"".join(messages))
    fieldlist = ekd.from_source("file", str(grib_path))
    path = OUT / "earthkit.tgm"
    fieldlist.to_target("file", str(path), encoder="tensogram")
    return {
        "producer": "tensogram-earthkit encoder: fieldlist.to_target('file', path, encoder='tensogram')",
        "versions": {
            **{p: md.version(p) for p in ("tensogram", "tensogram-earthkit", "earthkit-data")},
            "ecCodes": eccodes.codes_get_api_version(),
        },
        "source": f"{grib_path.name}: ecCodes samples regular_ll_sfc_grib2 / regular_ll_pl_grib2, 10-degree grid",
        "steps_hours": EK_STEPS,
        "surface": EK_SURFACE,
        "pressure": EK_PRESSURE,
        "levels_hPa": EK_LEVELS,
        "files": {"earthkit.tgm": {"fields": len(messages)}, grib_path.name: {"fields": len(messages)}},
    }


def _grib_message(sample: str, short_name: str, step: int, level: int | None) -> bytes:
    import eccodes

    gid = eccodes.codes_grib_new_from_samples(sample)
    try:
        for key, value in (
            ("Ni", 36),
            ("Nj", 19),
            ("latitudeOfFirstGridPointInDegrees", 90.0),
            ("longitudeOfFirstGridPointInDegrees", 0.0),
            ("latitudeOfLastGridPointInDegrees", -90.0),
            ("longitudeOfLastGridPointInDegrees", 350.0),
            ("iDirectionIncrementInDegrees", 10.0),
            ("jDirectionIncrementInDegrees", 10.0),
            ("dataDate", int(REFERENCE_DATE.strftime("%Y%m%d"))),
            ("dataTime", 0),
            ("shortName", short_name),
            ("step", step),
        ):
            eccodes.codes_set(gid, key, value)
        if level is not None:
            eccodes.codes_set(gid, "level", level)
        lat, lon = np.meshgrid(np.linspace(90, -90, 19), np.arange(36) * 10.0, indexing="ij")
        base = {"2t": 280.0, "msl": 101000.0, "t": 250.0, "q": 0.005}[short_name]
        amplitude = {"2t": 20.0, "msl": 2000.0, "t": 15.0, "q": 0.004}[short_name]
        seed = step / 6.0 + (level or 0) / 100.0
        eccodes.codes_set_values(gid, field(lat, lon, seed, base, amplitude).ravel())
        return bytes(eccodes.codes_get_message(gid))
    finally:
        eccodes.codes_release(gid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("producer", choices=["anemoi", "earthkit"])
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    manifest[args.producer] = write_anemoi() if args.producer == "anemoi" else write_earthkit()
    manifest[args.producer]["python"] = sys.version.split()[0]
    manifest[args.producer]["written"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    for name in manifest[args.producer]["files"]:
        manifest[args.producer]["files"][name]["bytes"] = (OUT / name).stat().st_size
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(json.dumps(manifest[args.producer], indent=1))


if __name__ == "__main__":
    main()
