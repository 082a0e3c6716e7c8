"""The one writer interface of ``to_tensogram``, ``to_tetr`` and ``to_ztensor`` (issue 23).

Oracles: xarray itself (``xr.open_mfdataset`` over per-step files must give the original Dataset
back; refusals follow ``to_netcdf``'s builtin classes) and the bytes of reference-written ``.tet``
files (an unchanged file writes back byte for byte).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram.errors import (
    InvalidNameError,
    NoSuchVariableError,
    UnsupportedError,
    XarrayTensogramError,
    ZTensorMappingWarning,
)

DATA = Path(__file__).parent / "data"
WRITERS = {"tgm": xt.to_tensogram, "tet": xt.to_tetr, "zt": xt.to_ztensor}


def _open(path: Path, **kw: object) -> xr.Dataset:
    ds = xr.open_dataset(path, engine="tensogram", **kw).load()
    ds.attrs.pop("tensogram_wire_version", None)  # the reader's provenance attribute
    return ds


def forecast() -> xr.Dataset:
    steps = pd.to_timedelta([0, 6, 12], unit="h")
    t0 = pd.Timestamp("2024-01-01")
    return xr.Dataset(
        {"t": (("step", "lat", "lon"), np.random.default_rng(0).random((3, 2, 4)).astype("f4"), {"units": "K"})},
        coords={
            "step": steps,
            "lat": ("lat", [10.0, 20.0], {"units": "degrees_north"}),
            "lon": np.arange(4.0),
            "time": t0,
            "valid_time": ("step", t0 + steps),
            "station": ("lat", ["north", "south"]),
        },
    )


@pytest.mark.parametrize(("ext", "kwargs"), [("tgm", {}), ("tgm", {"message_dims": ["step"]}), ("tet", {}), ("zt", {})])
def test_open_mfdataset_of_per_step_files_equals_the_original(tmp_path: Path, ext: str, kwargs: dict) -> None:
    ds = forecast()
    paths = []
    for i in range(ds.sizes["step"]):
        path = tmp_path / f"step{i}.{ext}"
        WRITERS[ext](ds.isel(step=[i]), path, **kwargs)  # a length-1 dim stays a dim
        paths.append(path)
        one = _open(path)
        assert one.sizes["step"] == 1
        xr.testing.assert_identical(one, ds.isel(step=[i]))
    with xr.open_mfdataset(paths, engine="tensogram") as combined:
        combined = combined.load()
    combined.attrs.pop("tensogram_wire_version", None)
    xr.testing.assert_identical(combined, ds)


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_every_coordinate_survives(tmp_path: Path, ext: str) -> None:
    ds = forecast()
    ds.coords["curvi"] = (("lat", "lon"), np.arange(8.0).reshape(2, 4), {"long_name": "2-D"})
    ds.coords["level"] = ("level", [500, 850])  # a dim no data variable uses
    ds.coords["lead"] = ("step", pd.to_timedelta([1, 2, 3], unit="D"))
    ds["x"] = ("lon", np.arange(4.0))  # a data variable named like a coordinate stays one
    WRITERS[ext](ds, tmp_path / f"c.{ext}")
    back = _open(tmp_path / f"c.{ext}")
    xr.testing.assert_identical(back, ds)


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_cf_encoding_as_to_netcdf(tmp_path: Path, ext: str) -> None:
    """Packing into a given dtype with scale/offset and _FillValue, as xarray's own encoder does it."""
    ds = xr.Dataset({"v": ("x", np.array([10.0, 10.1, np.nan, 22.8], "f4"))})
    enc = {"v": {"dtype": "i2", "scale_factor": np.float32(0.1), "add_offset": np.float32(10), "_FillValue": -1}}
    WRITERS[ext](ds, tmp_path / f"p.{ext}", encoding=enc)
    raw = _open(tmp_path / f"p.{ext}", decode_cf=False)
    np.testing.assert_array_equal(raw["v"].values, [0, 1, -1, 128])
    assert raw["v"].dtype == np.int16
    back = _open(tmp_path / f"p.{ext}")
    assert back["v"].dtype == np.float32  # the scale factor's dtype, as xarray decodes it
    np.testing.assert_allclose(back["v"].values, ds["v"].values, atol=0.05)


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_cf_references_written_once(tmp_path: Path, ext: str) -> None:
    ds = xr.Dataset(
        {"t": (("y", "x"), np.zeros((2, 3)), {"grid_mapping": "crs"}), "crs": ((), 0, {"grid_mapping_name": "x"})},
        coords={"lat": (("y", "x"), np.ones((2, 3))), "lon": (("y", "x"), np.ones((2, 3)))},
    )
    WRITERS[ext](ds, tmp_path / f"r.{ext}")
    with xr.open_dataset(tmp_path / f"r.{ext}", engine="tensogram", decode_coords=False) as raw:
        assert sorted(raw["t"].attrs["coordinates"].split()) == ["lat", "lon"]
    again = tmp_path / f"again.{ext}"
    WRITERS[ext](_open(tmp_path / f"r.{ext}"), again)  # "y z y z" would show here
    with xr.open_dataset(again, engine="tensogram", decode_coords=False) as raw:
        assert sorted(raw["t"].attrs["coordinates"].split()) == ["lat", "lon"]


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_refusals_name_the_variable_and_write_nothing(tmp_path: Path, ext: str) -> None:
    target = tmp_path / f"r.{ext}"
    write = WRITERS[ext]
    with pytest.raises(UnsupportedError, match=r"'c'.*complex128.*supported"):
        write(xr.Dataset({"c": ("x", np.ones(2, complex))}), target)
    multi = xr.Dataset(coords={"y": ("x", [1, 2]), "z": ("x", ["a", "b"])}).set_index(x=["y", "z"])
    with pytest.raises(NotImplementedError, match="MultiIndex"):
        write(multi, target)
    with pytest.raises(TypeError, match="Invalid name 0") as info:
        write(xr.Dataset({0: ("x", [1.0])}), target)
    assert isinstance(info.value, InvalidNameError)
    ok = xr.Dataset({"v": ("x", [1.0])})
    with pytest.raises(UnsupportedError, match=r"unexpected encoding parameters for variable 'v': \['zlib'\]"):
        write(ok, target, encoding={"v": {"zlib": True}})
    with pytest.raises(KeyError) as missing:
        write(ok, target, encoding={"w": {}})
    assert isinstance(missing.value, NoSuchVariableError)
    assert not target.exists()


def test_tetr_refuses_what_it_cannot_hold(tmp_path: Path) -> None:
    target = tmp_path / "r.tet"
    with pytest.raises(UnsupportedError, match=r"'i': dtype int8 .* supported dtypes: f32"):
        xt.to_tetr(xr.Dataset({"i": ("x", np.ones(2, "i1"))}), target)
    with pytest.raises(UnsupportedError, match=r"'s': dtype <U1 \(strings\)"):
        xt.to_tetr(xr.Dataset({"s": ("x", ["a", "b"])}), target)
    with pytest.raises(UnsupportedError, match=r"'e': shape \(0,\) has an empty axis"):
        xt.to_tetr(xr.Dataset({"e": ("x", np.ones(0))}), target)
    assert not target.exists()


def test_ztensor_warns_naming_every_dropped_dataset_attribute(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": ("x", [1.0])}, attrs={"title": "t", "institution": "i"})
    with pytest.warns(ZTensorMappingWarning, match=r"\['title', 'institution'\]"):
        xt.to_ztensor(ds, tmp_path / "a.zt")


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_append_refuses_clashes_before_writing_a_byte(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"a.{ext}"
    write = WRITERS[ext]
    size = write(xr.Dataset({"a": ("x", np.arange(3.0))}), path)
    assert size == path.stat().st_size  # every writer returns the size written
    before = path.read_bytes()
    if ext != "tgm":  # .tgm appends messages: the same variable again gains objects (a message dim)
        with pytest.raises(XarrayTensogramError, match="already has it"):
            write(xr.Dataset({"a": ("x", np.arange(3.0) + 5)}), path, mode="a")
        write(xr.Dataset({"a": ("x", np.arange(3.0))}), path, mode="a")  # unchanged (a shared coordinate): kept once
        assert path.read_bytes() == before
    with pytest.raises(XarrayTensogramError, match="'x' has size 4, the file's has size 3"):
        write(xr.Dataset({"b": ("x", np.arange(4.0))}), path, mode="a")
    assert path.read_bytes() == before
    write(xr.Dataset({"b": ("x", np.arange(3.0) + 1)}), path, mode="a")
    xr.testing.assert_identical(_open(path), xr.Dataset({"a": ("x", np.arange(3.0)), "b": ("x", np.arange(3.0) + 1)}))
    with pytest.raises(XarrayTensogramError, match="mode"):
        write(xr.Dataset({"c": ("x", np.arange(3.0))}), path, mode="r+")


@pytest.mark.parametrize("name", ["sample.tet", "footer_metadata.tet"])
def test_unchanged_tet_writes_back_byte_for_byte(tmp_path: Path, name: str) -> None:
    source = DATA / "tetr" / name
    with xr.open_dataset(source, engine="tensogram") as ds:
        xt.to_tetr(ds, tmp_path / name)
    assert (tmp_path / name).read_bytes() == source.read_bytes()


def test_tet_datetime_labels_open_as_datetime64(tmp_path: Path) -> None:
    path = next(p for p in xt.sample_paths() if p.endswith(".tet"))
    with xr.open_dataset(path, engine="tensogram") as ds:
        assert ds["time"].dtype == np.dtype("datetime64[ns]")
        assert ds["time"].encoding["tetr_labels"][0] == "2024-01-01T00:00"  # the spelling, kept for writing
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            xt.to_tetr(ds, tmp_path / "s.tet")
    assert (tmp_path / "s.tet").read_bytes() == Path(path).read_bytes()


def test_simple_packing_keeps_nan_positions_in_the_bitmask(tmp_path: Path) -> None:
    """Parameters from the finite values; the reference decoder (the oracle) sees the NaNs where they were."""
    tensogram = pytest.importorskip("tensogram")
    values = np.linspace(250.0, 300.0, 24).reshape(4, 6)
    values[1, 2] = values[3, 5] = np.nan
    ds = xr.Dataset({"t": (("y", "x"), values)})
    path = tmp_path / "p.tgm"
    xt.to_tensogram(ds, path, encoding={"t": {"encoding": "simple_packing", "bits_per_value": 16}})
    (_, decoded), *_ = tensogram.decode(path.read_bytes()).objects
    np.testing.assert_array_equal(np.isnan(decoded), np.isnan(values))
    np.testing.assert_allclose(decoded, values, atol=50 / 2**15, equal_nan=True)
    back = _open(path)
    assert back["t"].encoding["tensogram_encoding"] == "simple_packing"
    np.testing.assert_allclose(back["t"].values, values, atol=50 / 2**15, equal_nan=True)
    xt.to_tensogram(back, tmp_path / "again.tgm")  # .tgm -> .tgm of a packed variable with NaNs
    np.testing.assert_allclose(_open(tmp_path / "again.tgm")["t"].values, values, atol=50 / 2**14, equal_nan=True)
