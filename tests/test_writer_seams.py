"""Writer seams: what used to change silently between a Dataset and the file written from it.

cftime dates of non-standard calendars in the three writers (compared with the original Dataset and
with xarray's own CF encoder, which ``to_netcdf`` uses), and the grid coordinates of every ``.tgm``
message (compared with the original Dataset, message by message, and with the reference decoder).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt

pytest.importorskip("cftime")

WRITERS = {"tgm": xt.to_tensogram, "tet": xt.to_tetr, "zt": xt.to_ztensor}
CFTIME = {"decode_times": xr.coders.CFDatetimeCoder(use_cftime=True)}


def _open(path: Path, **kw: Any) -> xr.Dataset:
    with xr.open_dataset(path, engine="tensogram", **kw) as ds:
        ds = ds.load()
    ds.attrs.pop("tensogram_wire_version", None)
    return ds


def _calendar_dataset(calendar: str) -> xr.Dataset:
    """A cftime index coordinate crossing 29 February / day 30 (where calendars differ) and a cftime data variable."""
    times = xr.date_range("2000-02-27", periods=5, freq="D", calendar=calendar, use_cftime=True)
    rng = np.random.default_rng(0)
    return xr.Dataset(
        {
            "t": (("time", "x"), rng.random((5, 3)), {"units": "K"}),
            "issued": (("time",), times.values[::-1]),
        },
        coords={"time": times, "x": [10, 20, 30]},
    )


@pytest.mark.parametrize("calendar", ["noleap", "360_day", "julian"])
@pytest.mark.parametrize("fmt", list(WRITERS))
def test_cftime_dates_are_written_as_cf_numbers_with_their_calendar(fmt: str, calendar: str, tmp_path: Path) -> None:
    """As ``to_netcdf`` writes them: numbers with units and the calendar, made by xarray's encoder; read back
    as the same cftime dates, with no warning on the way."""
    ds = _calendar_dataset(calendar)
    path = tmp_path / f"c.{fmt}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WRITERS[fmt](ds, path)
    xr.testing.assert_identical(_open(path, **CFTIME), ds)
    raw = _open(path, decode_times=False)
    for name in ("time", "issued"):
        expected = xr.conventions.encode_cf_variable(ds[name].variable, name=name)
        assert raw[name].attrs["calendar"] == calendar and raw[name].attrs["units"] == expected.attrs["units"]
        np.testing.assert_array_equal(raw[name].values, expected.values)
    # xarray decodes non-standard calendars to cftime by itself, without being asked
    assert _open(path)["time"].values[3] == ds["time"].values[3]


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_dask_held_cftime_dates_are_encoded_without_a_warning(fmt: str, tmp_path: Path) -> None:
    """Dask-held cftime dates are not an object array of unknown type (``to_netcdf`` does not warn either)."""
    pytest.importorskip("dask")
    ds = _calendar_dataset("noleap")
    path = tmp_path / f"d.{fmt}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WRITERS[fmt](ds.chunk(2), path)
    xr.testing.assert_identical(_open(path, **CFTIME), ds)


@pytest.mark.parametrize("calendar", ["noleap", "360_day"])
def test_cftime_message_dim_round_trips(calendar: str, tmp_path: Path) -> None:
    """A cftime dim that splits .tgm messages: one message per date, the dates back as written."""
    ds = _calendar_dataset(calendar)
    path = tmp_path / "split.tgm"
    xt.to_tensogram(ds, path, message_dims=["time"])
    xr.testing.assert_identical(_open(path, **CFTIME), ds)
    second = _open(path, message_index=3, **CFTIME)
    np.testing.assert_array_equal(second["t"].values.squeeze(), ds["t"].values[3])


# -- the grid of every .tgm message ------------------------------------------------------------------
tensogram = pytest.importorskip("tensogram")


def _forecast(curvilinear: bool = False) -> xr.Dataset:
    """time x level x a grid (1-D latitude/longitude, or 2-D ones over y/x as on a rotated grid)."""
    rng = np.random.default_rng(1)
    times = np.array(["2024-01-01T00", "2024-01-01T06", "2024-01-01T12"], dtype="M8[ns]")
    coords: dict[str, Any] = {"time": times, "level": [500, 850]}
    if curvilinear:
        dims = ("time", "level", "y", "x")
        lat, lon = np.meshgrid(np.linspace(40, 60, 4), np.linspace(-10, 10, 5), indexing="ij")
        coords.update(latitude=(("y", "x"), lat, {"units": "degrees_north"}), longitude=(("y", "x"), lon))
    else:
        dims = ("time", "level", "latitude", "longitude")
        coords.update(latitude=("latitude", np.linspace(60, 40, 4), {"units": "degrees_north"}))
        coords.update(longitude=("longitude", np.linspace(-10, 10, 5)))
    return xr.Dataset({"t": (dims, rng.random((3, 2, 4, 5)), {"units": "K"})}, coords=coords)


def _object_names(path: Path) -> list[list[Any]]:
    """The names of each message's objects, as the reference decoder reads them."""
    data = path.read_bytes()
    return [[e.get("name") for e in tensogram.decode(data[o : o + n]).metadata.base] for o, n in tensogram.scan(data)]


@pytest.mark.parametrize("curvilinear", [False, True], ids=["regular", "curvilinear"])
def test_every_message_carries_its_grid(curvilinear: bool, tmp_path: Path) -> None:
    """Each message opened alone has the grid of the original; the whole file reads back identical, with one
    latitude and one longitude (the repeated objects are one coordinate, without a warning)."""
    ds = _forecast(curvilinear)
    path = tmp_path / "f.tgm"
    xt.to_tensogram(ds, path, message_dims=["time", "level"])
    names = _object_names(path)
    assert len(names) == 6 and all({"latitude", "longitude"} <= set(n) for n in names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.testing.assert_identical(_open(path), ds)
        for i in range(len(names)):
            alone = _open(path, message_index=i)
            for name in ("latitude", "longitude"):
                xr.testing.assert_identical(alone[name].variable, ds[name].variable)
            np.testing.assert_array_equal(alone["t"].values.squeeze(), ds["t"].values[i // 2, i % 2])


def test_a_copy_without_the_first_message_has_its_grid(tmp_path: Path) -> None:
    """A filtered copy (or a partial download) of the later messages still opens on its grid."""
    ds = _forecast()
    path = tmp_path / "f.tgm"
    xt.to_tensogram(ds, path, message_dims=["time"])
    data = path.read_bytes()
    spans = tensogram.scan(data)
    tail = tmp_path / "tail.tgm"
    tail.write_bytes(b"".join(data[o : o + n] for o, n in spans[1:]))
    back = _open(tail)
    xr.testing.assert_identical(back["latitude"].variable, ds["latitude"].variable)
    np.testing.assert_array_equal(back["t"].values, ds["t"].values[1:])


def test_appended_messages_carry_the_grid(tmp_path: Path) -> None:
    """A model writing one time at a time: each appended message has the grid too."""
    ds = _forecast()
    path = tmp_path / "run.tgm"
    for i in range(3):
        xt.to_tensogram(ds.isel(time=[i]), path, message_dims=["time"], mode="w" if i == 0 else "a")
    assert all({"latitude", "longitude"} <= set(n) for n in _object_names(path))
    xr.testing.assert_equal(_open(path), ds)
    xr.testing.assert_identical(_open(path, message_index=2)["longitude"], ds["longitude"])


def test_grid_false_writes_the_grid_once(tmp_path: Path) -> None:
    """``grid=False`` trades the later messages' grid for size: only the first message has it."""
    ds = _forecast()
    xt.to_tensogram(ds, tmp_path / "every.tgm", message_dims=["time", "level"])
    size = xt.to_tensogram(ds, tmp_path / "once.tgm", message_dims=["time", "level"], grid=False)
    names = _object_names(tmp_path / "once.tgm")
    assert {"latitude", "longitude"} <= set(names[0]) and not any({"latitude", "longitude"} & set(n) for n in names[1:])
    assert size < (tmp_path / "every.tgm").stat().st_size
    xr.testing.assert_identical(_open(tmp_path / "once.tgm"), ds)
    assert "latitude" not in _open(tmp_path / "once.tgm", message_index=1).coords
