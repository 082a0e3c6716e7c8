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


@pytest.mark.parametrize("calendar", ["noleap", "360_day"])
def test_cftime_message_dim_round_trips(calendar: str, tmp_path: Path) -> None:
    """A cftime dim that splits .tgm messages: one message per date, the dates back as written."""
    ds = _calendar_dataset(calendar)
    path = tmp_path / "split.tgm"
    xt.to_tensogram(ds, path, message_dims=["time"])
    xr.testing.assert_identical(_open(path, **CFTIME), ds)
    second = _open(path, message_index=3, **CFTIME)
    np.testing.assert_array_equal(second["t"].values.squeeze(), ds["t"].values[3])
