"""Files written by the real producers open as their users expect (issue 24).

``tests/data/producers/`` holds files written by ``tensogram-anemoi`` 0.24.0 (anemoi-inference's
output plugin, driven as its runner drives an output) and by ``tensogram-earthkit`` 0.24.0
(earthkit-data's encoder, from a GRIB file kept beside it); ``tools/make_producer_files.py`` wrote
them and ``manifest.json`` says with what. The oracles: the reference ``tensogram`` decoder for
every value and grid point, the producer's own metadata for names, steps and levels, and cfgrib
(ecCodes) on the GRIB source for units and names.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

tensogram = pytest.importorskip("tensogram")

from xarray_tensogram.errors import TensogramMappingWarning  # noqa: E402 - after the importorskip above

DATA = Path(__file__).parent / "data" / "producers"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
ANEMOI = MANIFEST["anemoi"]
SURFACE = ANEMOI["surface"]
PRESSURE = ANEMOI["pressure"]
LEVELS = ANEMOI["levels_hPa"]
STEPS = ANEMOI["steps_hours"]


def _open(name: str, **kw: Any) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensogramMappingWarning)  # no duplicate-grid (or any mapping) warning
        return xr.open_dataset(DATA / name, engine="tensogram", **kw)


def _decoded(name: str) -> list[tuple[list[dict[str, Any]], list[np.ndarray]]]:
    """(base entries, arrays) of every message, by the reference decoder."""
    data = (DATA / name).read_bytes()
    out = []
    for offset, length in tensogram.scan(data):
        msg = tensogram.decode(data[offset : offset + length])
        out.append((list(msg.metadata.base), [np.asarray(arr) for _desc, arr in msg.objects]))
    return out


def _by_variable(name: str) -> dict[tuple[str, int], np.ndarray]:
    """``{(anemoi variable, step): values}`` from the reference decoder."""
    out = {}
    for base, arrays in _decoded(name):
        for entry, arr in zip(base, arrays, strict=True):
            if "mars" in entry:
                out[entry["anemoi"]["variable"], entry["mars"]["step"]] = arr
    return out


def test_manifest_records_the_real_producers() -> None:
    assert ANEMOI["versions"]["tensogram-anemoi"] == "0.24.0"
    assert ANEMOI["versions"]["anemoi-inference"].split(".")[:2] < ["0", "11"]
    assert MANIFEST["earthkit"]["versions"]["tensogram-earthkit"] == "0.24.0"
    for producer in ("anemoi", "earthkit"):
        for fname, info in MANIFEST[producer]["files"].items():
            assert (DATA / fname).stat().st_size == info["bytes"], fname


@pytest.mark.parametrize("fname", ["anemoi_flat.tgm", "anemoi_packed.tgm"])
def test_anemoi_flat_layout(fname: str) -> None:
    ds = _open(fname)
    assert "message" not in ds.dims
    assert set(ds.data_vars) == set(SURFACE) | set(PRESSURE)
    for v in SURFACE:
        assert ds[v].dims == ("step", "values"), v
    for v in PRESSURE:
        assert ds[v].dims == ("step", "level", "values"), v
    assert ds["level"].values.tolist() == LEVELS
    assert ds["level"].attrs["units"] == "hPa"
    # the grid: coordinates on the values dim, equal to the producer's grid objects
    base, arrays = _decoded(fname)[0]
    assert [e["anemoi"]["variable"] for e in base[:2]] == ["latitude", "longitude"]
    assert ds["latitude"].dims == ("values",) and ds["longitude"].dims == ("values",)
    assert "latitude" in ds.coords and "longitude" in ds.coords
    np.testing.assert_array_equal(ds["latitude"].values, arrays[0])
    np.testing.assert_array_equal(ds["longitude"].values, arrays[1])
    assert ds["latitude"].attrs["units"] == "degrees_north"
    # every value, against the reference decoder
    ref = _by_variable(fname)
    for v in SURFACE:
        for i, step in enumerate(STEPS):
            np.testing.assert_array_equal(ds[v].isel(step=i).values, ref[v, step])
    for v in PRESSURE:
        for i, step in enumerate(STEPS):
            for j, level in enumerate(LEVELS):
                np.testing.assert_array_equal(ds[v].isel(step=i, level=j).values, ref[f"{v}_{level}", step])


def test_anemoi_time_step_valid_time() -> None:
    ds = _open("anemoi_flat.tgm")
    start = np.datetime64(ANEMOI["reference_date"])
    assert ds["time"].values == start
    np.testing.assert_array_equal(ds["step"].values, np.array(STEPS, dtype="timedelta64[h]"))
    np.testing.assert_array_equal(ds["valid_time"].values, start + np.array(STEPS, dtype="timedelta64[h]"))


def test_anemoi_stacked_layout_has_a_level_coordinate() -> None:
    ds = _open("anemoi_stacked.tgm")
    assert "message" not in ds.dims
    for v in PRESSURE:
        assert ds[v].dims == ("step", "values", "level"), v
    for v in SURFACE:
        assert ds[v].dims == ("step", "values"), v
    assert ds["level"].values.tolist() == LEVELS
    assert ds["level"].attrs["standard_name"] == "air_pressure"
    flat = _open("anemoi_flat.tgm")
    for v in PRESSURE:  # the same fields as the flat file (written from the same states)
        xr.testing.assert_equal(ds[v].transpose(*flat[v].dims).reset_coords(drop=True), flat[v].reset_coords(drop=True))
    stacked = {
        (e["name"], e["mars"]["step"]): (e, a)
        for base, arrays in _decoded("anemoi_stacked.tgm")
        for e, a in zip(base, arrays, strict=True)
        if "mars" in e
    }
    entry, arr = stacked["t", STEPS[-1]]
    assert entry["mars"]["levelist"] == LEVELS
    np.testing.assert_array_equal(ds["t"].isel(step=-1).values, arr)


def test_anemoi_per_level_names_with_variable_key() -> None:
    ds = _open("anemoi_flat.tgm", variable_key="name")
    per_level = {f"{p}_{level}" for p in PRESSURE for level in LEVELS}
    assert set(ds.data_vars) == set(SURFACE) | per_level
    assert ds["t_850"].dims == ("step", "values")
    ref = _by_variable("anemoi_flat.tgm")
    np.testing.assert_array_equal(ds["t_850"].isel(step=1).values, ref["t_850", STEPS[1]])
    assert ds["t_850"].attrs["units"] == "K"


def test_anemoi_units_and_names_from_the_parameter_table() -> None:
    eccodes = pytest.importorskip("eccodes")
    ds = _open("anemoi_flat.tgm")
    for v in [*SURFACE, *PRESSURE]:
        gid = eccodes.codes_grib_new_from_samples("GRIB2")
        try:
            eccodes.codes_set(gid, "shortName", v)
            expected = {k: eccodes.codes_get(gid, k) for k in ("units", "name", "cfName")}
        finally:
            eccodes.codes_release(gid)
        assert ds[v].attrs["units"] == expected["units"], v
        assert ds[v].attrs["long_name"] == expected["name"], v
        assert ds[v].attrs["standard_name"] == expected["cfName"], v


def _cfgrib(**kw: Any) -> xr.Dataset:
    pytest.importorskip("cfgrib")
    return xr.open_dataset(
        DATA / "earthkit_source.grib2",
        engine="cfgrib",
        backend_kwargs={"indexpath": "", **kw},
        values_dtype=np.dtype("float64"),
    )


@pytest.mark.parametrize("var", MANIFEST["earthkit"]["surface"] + MANIFEST["earthkit"]["pressure"])
def test_earthkit_encoder_file_gets_units_and_names(var: str) -> None:
    """Units, long and standard names as cfgrib gives them for the GRIB fields earthkit-data encoded."""
    ds = _open("earthkit.tgm")
    assert (
        ds[var].dims[:2] == ("step", "level") if var in MANIFEST["earthkit"]["pressure"] else ds[var].dims[0] == "step"
    )
    with _cfgrib(filter_by_keys={"shortName": var}) as ref:
        (name,) = ref.data_vars
        for attr in ("units", "long_name", "standard_name"):
            assert ds[var].attrs[attr] == ref[name].attrs[attr], (var, attr)
        ours = ds[var]
        if "level" in ours.dims:
            assert ours["level"].values.tolist() == sorted(ref["isobaricInhPa"].values.tolist())
            ours = ours.sel(level=ref["isobaricInhPa"].values.astype(int))
            ours = ours.rename(level="isobaricInhPa")
        values = ours.values.reshape(ref[name].shape)
        np.testing.assert_array_equal(values, ref[name].values)
        np.testing.assert_array_equal(ds["step"].values, ref["step"].values)
