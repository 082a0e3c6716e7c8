"""CF times and indexes made by the data store for values in memory (``xarray_tensogram/decoding.py``).

The oracle is xarray's own CF decoder and default index creation: whatever the store decodes or indexes
itself must be exactly what xarray would have made (values, dtype, attrs, encoding, indexes), and
opening must not import Dask (checked in a fresh process, as a user's first open is).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest
import xarray as xr
from xarray import conventions

import xarray_tensogram as xt
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.decoding import decode_times_in_memory
from xarray_tensogram.raw_variables import RawVariable, xarray_variable


def memory_variable(dims: tuple[str, ...], values: Any, attrs: dict[str, Any]) -> xr.Variable:
    """The variable a backend makes of values in memory."""
    return xarray_variable(RawVariable(dims, np.asarray(values), attrs))


SAMPLES = ["era_pl.tgm", "forecast.tgm", "grib_pl.tgm", "sample.tet", "sample.zt"]
DEFAULT = {"decode_times": True, "decode_timedelta": None, "use_cftime": None}
DECODERS = [
    DEFAULT,
    {**DEFAULT, "decode_timedelta": True},
    {**DEFAULT, "decode_timedelta": False},
    {**DEFAULT, "decode_times": False},
    {**DEFAULT, "decode_times": xr.coders.CFDatetimeCoder(time_unit="s")},
    {**DEFAULT, "use_cftime": True},
]
DATETIME_UNITS = [
    "seconds since 1970-01-01T00:00:00",
    "hours since 1900-01-01 00:00:00.0",
    "days since 2000-01-01",
    "minutes since 1970-01-01 00:00",
    "milliseconds since 2020-02-29T12:00:00",
    "microseconds since 1970-01-01",
    "nanoseconds since 1970-01-01",
    "days since 0001-01-01",  # out of datetime64[ns]: xarray's (cftime) path
    "hours since 1970-01-01T00:00:00Z",  # a time zone: xarray's path
    "Hours since 1970-01-01",  # capitalised: xarray's path
    "days since 1582-10-15",
    "days since 1677-01-01",  # a reference date outside datetime64[ns]
    "days since 2020-13-01",  # not a date
    "hours since 2000-01-01T25:00",  # not a time
]
CALENDARS = [None, "standard", "gregorian", "proleptic_gregorian", "noleap", "360_day"]
DTYPES = ["int8", "int32", "int64", "uint8", "uint32", "float64"]
TIMEDELTA_UNITS = ["days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds"]
MARKERS = [None, "timedelta64[ns]", "timedelta64[us]", "timedelta64[ms]", "timedelta64[s]", "timedelta64[h]"]


def _decoded_by_xarray(var: xr.Variable, decoders: dict[str, Any]) -> tuple[Any, list[str]]:
    """The variable as xarray decodes it (values loaded), and the warnings it gave; or the error it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = conventions.decode_cf_variables({"t": var}, {}, **decoders)[0]["t"]
            out = out.load()
        except Exception as exc:  # the oracle's error: ours must raise the same
            return type(exc), []
    return out, sorted(str(w.message) for w in caught)


def _check(var: xr.Variable, decoders: dict[str, Any]) -> bool:
    """Ours (decoded here where plain, xarray otherwise) is xarray's result; True when ours decoded it here."""
    pre = decode_times_in_memory({"t": var}, decoders)["t"]
    expected, expected_warnings = _decoded_by_xarray(var, decoders)
    got, got_warnings = _decoded_by_xarray(pre, decoders)
    if isinstance(expected, type):
        assert got is expected
        return pre is not var
    assert isinstance(got, xr.Variable)
    xr.testing.assert_identical(got, expected)
    assert got.dtype == expected.dtype
    np.testing.assert_equal(got.encoding, expected.encoding)
    assert got_warnings == expected_warnings
    return pre is not var


@pytest.mark.parametrize("decoders", DECODERS, ids=range(len(DECODERS)))
def test_datetimes_decoded_as_xarray_decodes_them(decoders: dict[str, Any]) -> None:
    decoded_here = 0
    for units, calendar, dtype, shape in itertools.product(DATETIME_UNITS, CALENDARS, DTYPES, [(), (2, 2)]):
        values = np.arange(max(1, int(np.prod(shape))), dtype=dtype).reshape(shape) * np.asarray(3, dtype=dtype)
        attrs = {"units": units, "long_name": "time", **({"calendar": calendar} if calendar else {})}
        decoded_here += _check(memory_variable(tuple(f"d{i}" for i in range(len(shape))), values, attrs), decoders)
    # the plain cases are decoded here (so that the comparison above is not with xarray against itself)
    default_times = decoders["decode_times"] is True and decoders["use_cftime"] is None
    assert decoded_here > 0 if default_times else decoded_here == 0


@pytest.mark.parametrize("decoders", DECODERS, ids=range(len(DECODERS)))
def test_timedeltas_decoded_as_xarray_decodes_them(decoders: dict[str, Any]) -> None:
    decoded_here = 0
    for units, marker, dtype in itertools.product(TIMEDELTA_UNITS, MARKERS, DTYPES):
        attrs = {"units": units, "standard_name": "forecast_period", **({"dtype": marker} if marker else {})}
        decoded_here += _check(memory_variable(("step",), np.arange(4, dtype=dtype) * 6, attrs), decoders)
    if decoders.get("decode_timedelta") is False or decoders.get("decode_times") is False:
        assert decoded_here == 0
    elif isinstance(decoders["decode_times"], bool) and decoders["use_cftime"] is None:
        assert decoded_here > 0


def test_left_to_xarray() -> None:
    """Masks, overflow and lazy-looking cases are not decoded here (xarray's result stands)."""
    t = np.array([0, 3600], dtype=np.int64)
    cases = [
        memory_variable(("t",), t, {"units": "seconds since 1970-01-01", "_FillValue": -1}),
        memory_variable(("t",), t, {"units": "seconds since 1970-01-01", "scale_factor": 2}),
        memory_variable(("t",), np.array([0, 2**62]), {"units": "days since 1970-01-01"}),
        memory_variable(("t",), t.astype(np.float32), {"units": "hours", "dtype": "timedelta64[ns]"}),
        memory_variable(("t",), np.array([], dtype=np.int64), {"units": "seconds since 1970-01-01"}),
    ]
    for var in cases:
        assert decode_times_in_memory({"t": var}, DEFAULT)["t"] is var
        _check(var, DEFAULT)


@pytest.mark.parametrize("name", SAMPLES)
def test_open_is_xarray_decoding_of_the_encoded_open(name: str) -> None:
    """``xr.decode_cf`` of the ``decode_times=False`` open is the default open, encoding and indexes included."""
    path = xt.sample_path(name)
    with (
        xr.open_dataset(path, engine="tensogram") as ours,
        xr.open_dataset(path, engine="tensogram", decode_times=False) as encoded,
    ):
        expected = xr.decode_cf(encoded)
        xr.testing.assert_identical(ours, expected)
        for k, var in expected.variables.items():
            assert ours[k].dtype == var.dtype, k
            np.testing.assert_equal(ours[k].encoding, var.encoding, err_msg=str(k))  # NaN fill values equal
        assert set(ours.xindexes) == set(expected.xindexes)
        for k in ours.xindexes:
            assert ours.xindexes[k].equals(expected.xindexes[k]), k
            assert type(ours.xindexes[k]) is type(expected.xindexes[k])


@pytest.mark.parametrize("name", SAMPLES)
def test_indexes_are_those_xarray_makes(name: str) -> None:
    """The store's indexes equal those xarray makes itself when the Dataset has none (``create_default_indexes``
    applied to a copy without them)."""
    path = xt.sample_path(name)
    with xr.open_dataset(path, engine=TensogramBackendEntrypoint) as ours:
        bare = ours.drop_indexes(list(ours.xindexes))
        rebuilt = bare.assign_coords(xr.Coordinates({k: bare[k].variable for k in ours.xindexes}))
        xr.testing.assert_identical(ours, rebuilt)
        assert {k: v.index.dtype for k, v in ours.xindexes.items()} == {
            k: v.index.dtype for k, v in rebuilt.xindexes.items()
        }


_NO_DASK = """
import sys
import xarray as xr, xarray_tensogram as xt
for name in sys.argv[1:]:
    xr.open_dataset(xt.sample_path(name), engine="tensogram").close()
    xr.open_dataset(xt.sample_path(name), engine="tensogram", chunks=None).load().close()
print(sorted(m for m in sys.modules if m == "dask" or m.startswith("dask.")))
"""


def test_opening_never_imports_dask() -> None:
    """In a fresh process (a user's first open): opening and loading every sample leaves Dask out."""
    pytest.importorskip("dask")
    done = subprocess.run(
        [sys.executable, "-c", _NO_DASK, *SAMPLES], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_chunks_still_give_dask() -> None:
    with xr.open_dataset(xt.sample_path("era_pl.tgm"), engine="tensogram", chunks={}) as ds:
        assert all(v.chunks is not None for v in ds.data_vars.values())
        assert ds.valid_time.chunks is not None  # a decoded coordinate in memory is chunked as xarray chunks it


def test_create_default_indexes_false_keeps_the_store_indexes() -> None:
    """xarray does not pass ``create_default_indexes`` to backends: the store's indexes stay (docs/performance.md
    says so) and ``drop_indexes`` removes them. If xarray ever passes the flag, this test says to honour it."""
    path = xt.sample_path("era_pl.tgm")
    with xr.open_dataset(path, engine="tensogram", create_default_indexes=False) as ds:
        assert set(ds.xindexes) == {"step", "level", "latitude", "longitude"}
        bare = ds.drop_indexes(list(ds.xindexes))
        assert not bare.xindexes
        assert bare["step"].dtype == np.dtype("m8[ns]") and bare.sizes == ds.sizes
