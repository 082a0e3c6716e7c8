"""Writers keep what the user wrote (issue 13): forecast-shaped round trips, dtypes of lossy encodings,
the source pipeline in ``.encoding``, compressor defaults, permissions, byte-identical ``.tet`` rewrites
and ``bool`` variables.

Oracles: the reference ``tensogram`` decoder (values, descriptors, metadata keys), the reference
``ztensor`` reader, the reference-written ``.tet`` files with their SHA256SUMS, and numpy.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xarray_tensogram as xt
from xarray_tensogram.codecs.optional import available
from xarray_tensogram.errors import UnsupportedError

tensogram = pytest.importorskip("tensogram")

DATA = Path(__file__).parent / "data"
REFERENCE_TET = DATA / "tetr" / "reference"


def _open(path, **kw):
    return xr.open_dataset(path, engine="tensogram", **kw)


def _loaded(path, **kw):
    with _open(path, **kw) as ds:
        ds = ds.load()
    assert ds.attrs.pop("tensogram_wire_version", 3) == 3
    return ds


def forecast(seed: int = 0) -> xr.Dataset:
    """time x level x latitude x longitude, four dtypes, CF attrs on variables and coordinates, NaNs."""
    rng = np.random.default_rng(seed)
    shape = (2, 3, 4, 5)
    t = rng.normal(280, 5, shape).astype("float32")
    t[0, 1, 2, 3] = np.nan
    q = rng.random(shape)
    q[1, 0, 0, 0] = np.nan
    dims = ("time", "level", "latitude", "longitude")
    return xr.Dataset(
        {
            "t": (dims, t, {"units": "K", "long_name": "Temperature", "standard_name": "air_temperature"}),
            "q": (dims, q, {"units": "kg kg-1"}),
            "z": (dims, rng.integers(-300, 300, shape).astype("int16"), {"units": "m", "long_name": "height"}),
            "cl": (dims, rng.integers(0, 255, shape).astype("uint8"), {"units": "%"}),
        },
        coords={
            "time": (
                "time",
                pd.date_range("2024-01-01", periods=2, freq="12h").values.astype("M8[ns]"),
                {"long_name": "time"},
            ),
            "level": ("level", np.array([1000, 850, 500]), {"units": "hPa", "positive": "down"}),
            "latitude": ("latitude", np.linspace(60.0, 30.0, 4), {"units": "degrees_north"}),
            "longitude": ("longitude", np.linspace(-10.0, 20.0, 5), {"units": "degrees_east"}),
        },
        attrs={"title": "forecast", "institution": "here"},
    )


def _reference_messages(path):
    data = Path(path).read_bytes()
    return [tensogram.decode(data[o : o + n]) for o, n in tensogram.scan(data)]


def _check_reference_values(path, ds, message_dims):
    """Every message decodes with the reference; each object equals the Dataset's slice named by its keys."""
    msgs = _reference_messages(path)
    assert len(msgs) == int(np.prod([ds.sizes[d] for d in message_dims]))
    for msg in msgs:
        for entry, (_desc, values) in zip(msg.metadata.base, msg.objects, strict=True):
            name = entry["name"]
            if name not in ds.data_vars:
                continue
            sel = {}
            for d in message_dims:
                if d == "time" and "mars" in entry:
                    stamp = pd.Timestamp(f"{entry['mars']['date']}{entry['mars']['time']:04d}")
                    sel[d] = int(np.flatnonzero(ds.time.values == np.datetime64(stamp, "ns"))[0])
                else:
                    sel[d] = int(np.flatnonzero(ds[d].values == entry[d])[0])
            expected = ds[name].isel(sel).transpose(*entry["dim_names"]).values
            np.testing.assert_array_equal(values, expected)


# ---------------------------------------------------------------------------------------------
# 1. forecast-shaped round trips
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message_dims",
    [[], ["time"], ["level"], ["time", "level"], ["level", "time"], ["latitude"], ["longitude", "time"]],
    ids=lambda v: "-".join(v) or "none",
)
def test_forecast_round_trips(tmp_path, message_dims):
    ds = forecast()
    path = tmp_path / "fc.tgm"
    xt.to_tensogram(ds, path, message_dims=message_dims)
    xr.testing.assert_identical(_loaded(path), ds)
    _check_reference_values(path, ds, message_dims)


def test_datetime_message_dim_is_mars_date_time_for_the_reference(tmp_path):
    ds = forecast()
    xt.to_tensogram(ds, tmp_path / "fc.tgm", message_dims=["time"])
    keys = [dict(m.metadata.base[0]["mars"]) for m in _reference_messages(tmp_path / "fc.tgm")]
    assert keys == [{"date": 20240101, "time": 0}, {"date": 20240101, "time": 1200}]


def test_datetime_message_dim_without_mars_fit_is_cf_encoded(tmp_path):
    """A datetime dim not called time (or with seconds) is a CF-encoded number the reference reads as such."""
    times = np.array(["2024-01-01T00:00:00", "2024-01-01T00:00:30", "2024-01-02T06:00:00"], dtype="M8[ns]")
    ds = xr.Dataset(
        {"v": (("valid", "x"), np.arange(6.0).reshape(3, 2), {"units": "1"})},
        coords={
            "valid": ("valid", times, {"long_name": "valid time"}),
            "lead": ("valid", np.array([0, 30, 108000], "m8[s]").astype("m8[ns]")),
        },
    )
    xt.to_tensogram(ds, tmp_path / "v.tgm", message_dims=["valid"])
    xr.testing.assert_identical(_loaded(tmp_path / "v.tgm"), ds)
    values = [m.metadata.base[0]["valid"] for m in _reference_messages(tmp_path / "v.tgm")]
    units = xr.conventions.encode_cf_variable(ds["valid"].variable).attrs["units"]
    decoded = xr.coding.times.decode_cf_datetime(np.asarray(values), units)
    np.testing.assert_array_equal(decoded, times)


def test_step_message_dim_is_mars_step(tmp_path):
    steps = np.array([0, 6, 12], "m8[h]").astype("m8[ns]")
    ds = xr.Dataset({"tp": (("step", "x"), np.arange(6.0).reshape(3, 2))}, coords={"step": steps})
    xt.to_tensogram(ds, tmp_path / "s.tgm", message_dims=["step"])
    assert [m.metadata.base[0]["mars"]["step"] for m in _reference_messages(tmp_path / "s.tgm")] == [0, 6, 12]
    xr.testing.assert_identical(_loaded(tmp_path / "s.tgm"), ds)


def test_chunks_are_whole_messages(tmp_path):
    import dask

    ds = forecast()
    xt.to_tensogram(ds, tmp_path / "fc.tgm", message_dims=["level", "time"])
    with dask.config.set({"array.chunk-size": "128MiB"}), _open(tmp_path / "fc.tgm", chunks={}) as back:
        assert back["t"].chunks == ((1, 1), (1, 1, 1), (4,), (5,))  # one object (one message) per chunk
        xr.testing.assert_identical(back.load().drop_attrs(deep=False), ds.drop_attrs(deep=False))


def test_single_valued_message_dim_round_trips(tmp_path):
    ds = forecast().isel(time=[1], level=[0])
    xt.to_tensogram(ds, tmp_path / "one.tgm", message_dims=["time", "level"])
    assert len(_reference_messages(tmp_path / "one.tgm")) == 1
    xr.testing.assert_identical(_loaded(tmp_path / "one.tgm"), ds)


_DIMS = ["time", "step", "level", "member"]
_SIZES = {"time": 2, "step": 2, "level": 3, "member": 2, "y": 3, "x": 4}


@st.composite
def _datasets(draw):
    """Random subsets/orders of dims, dtypes, NaNs and datetime/timedelta coordinates along message dims."""
    outer = draw(st.lists(st.sampled_from(_DIMS), min_size=1, max_size=3, unique=True))
    order = draw(st.permutations([*outer, "y", "x"]))
    coords = {"y": ("y", [10.0, 20.0, 30.0], {"units": "degrees_north"}), "x": ("x", np.arange(4) * 2.5)}
    time_kind = draw(st.sampled_from(["mars", "seconds"]))
    for d in outer:
        n = _SIZES[d]
        if d == "time":
            start = np.datetime64("2024-03-01T00:00:00" if time_kind == "mars" else "2024-03-01T00:00:07", "ns")
            coords[d] = (d, start + np.arange(n) * np.timedelta64(6, "h"), {"long_name": "initial time"})
        elif d == "step":
            unit = draw(st.sampled_from(["h", "m"]))
            coords[d] = (d, (np.arange(n)[::-1] * np.timedelta64(90, unit)).astype("m8[ns]"))
        elif d == "level":
            coords[d] = (d, draw(st.permutations([1000, 850, 500])), {"units": "hPa"})
    variables = {}
    for i, dtype in enumerate(
        draw(st.lists(st.sampled_from(["float32", "float64", "int16", "uint8"]), min_size=1, max_size=3))
    ):
        shape = tuple(_SIZES[d] for d in order)
        values = (np.arange(np.prod(shape)).reshape(shape) % 200).astype(dtype)
        if dtype.startswith("float") and draw(st.booleans()):
            values.reshape(-1)[draw(st.integers(0, values.size - 1))] = np.nan
        variables[f"v{i}"] = (order, values, {"units": "K", "long_name": f"variable {i}"})
    message_dims = draw(st.permutations(outer))
    return xr.Dataset(variables, coords=coords, attrs={"title": "random"}), list(message_dims)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=_datasets())
def test_random_forecast_layouts_round_trip(tmp_path_factory, case):
    ds, message_dims = case
    path = tmp_path_factory.mktemp("rt") / "r.tgm"
    xt.to_tensogram(ds, path, message_dims=message_dims)
    xr.testing.assert_identical(_loaded(path), ds)
    msgs = _reference_messages(path)
    assert len(msgs) == int(np.prod([ds.sizes[d] for d in message_dims]))
    first = {e["name"]: values for e, (_d, values) in zip(msgs[0].metadata.base, msgs[0].objects, strict=True)}
    for name in ds.data_vars:  # message 0 holds index 0 of every message dim, in the object's own dim order
        inner = [d for d in ds[name].dims if d not in message_dims]
        expected = ds[name].isel(dict.fromkeys(message_dims, 0)).transpose(*inner).values
        np.testing.assert_array_equal(first[name], expected)


# ---------------------------------------------------------------------------------------------
# 2. lossy encodings keep the dtype
# ---------------------------------------------------------------------------------------------

LOSSY = [
    pytest.param({"encoding": "simple_packing", "bits_per_value": 16}, id="simple_packing"),
    pytest.param(
        {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 24.0},
        id="zfp",
        marks=pytest.mark.skipif(not available("zfpy"), reason="zfpy not installed"),
    ),
]


@pytest.mark.parametrize("enc", LOSSY)
def test_lossy_float32_reads_back_float32(tmp_path, enc):
    ds = forecast()[["t"]].fillna(270.0)
    path = tmp_path / "lossy.tgm"
    xt.to_tensogram(ds, path, message_dims=["time"], encoding={"t": enc})
    back = _loaded(path)
    assert back["t"].dtype == np.float32
    msgs = _reference_messages(path)
    for i, msg in enumerate(msgs):
        desc, values = msg.objects[0]
        assert desc.dtype == "float64" and msg.metadata.base[0]["xarray_dtype"] == "float32"
        np.testing.assert_array_equal(back["t"].isel(time=i).values, values.astype(np.float32))
    assert float(abs(back["t"] - ds["t"]).max()) < 0.01


def test_lossy_int16_reads_back_rounded_int16(tmp_path):
    ds = forecast()[["z"]]
    xt.to_tensogram(ds, tmp_path / "z.tgm", encoding={"z": {"encoding": "simple_packing", "bits_per_value": 12}})
    back = _loaded(tmp_path / "z.tgm")
    ref = _reference_messages(tmp_path / "z.tgm")[0].objects[0][1]
    assert back["z"].dtype == np.int16
    np.testing.assert_array_equal(back["z"].values, np.rint(ref).astype(np.int16))


# ---------------------------------------------------------------------------------------------
# 3. .encoding carries the source pipeline; writers use it
# ---------------------------------------------------------------------------------------------


def _reference_file(path, desc_extra, values):
    meta = {"base": [{"name": "t", "dim_names": ["y", "x"]}]}
    desc = {"type": "ntensor", "shape": list(values.shape), "dtype": values.dtype.name, **desc_extra}
    path.write_bytes(bytes(tensogram.encode(meta, [(desc, values)])))


PIPELINES = [
    pytest.param({"compression": "zstd", "zstd_level": 9}, id="zstd-9"),
    pytest.param(
        {"filter": "shuffle", "shuffle_element_size": 4, "compression": "lz4"},
        id="shuffle-lz4",
        marks=pytest.mark.skipif(not available("lz4.block"), reason="lz4 not installed"),
    ),
    pytest.param(
        {
            "encoding": "simple_packing",
            "sp_bits_per_value": 12,
            "compression": "szip",
            "szip_rsi": 64,
            "szip_block_size": 8,
            "szip_flags": 8,
        },
        id="sp-szip",
        marks=pytest.mark.skipif(not available("imagecodecs"), reason="imagecodecs not installed"),
    ),
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_open_then_write_keeps_the_pipeline(tmp_path, pipeline):
    rng = np.random.default_rng(1)
    values = (np.cumsum(rng.normal(size=(40, 50)), axis=1) + 280).astype(
        "float64" if "encoding" in pipeline else "float32"
    )
    _reference_file(tmp_path / "src.tgm", pipeline, values)
    with _open(tmp_path / "src.tgm") as ds:
        enc = ds["t"].encoding
        assert enc["tensogram_compression"] == pipeline["compression"]
        assert enc["tensogram_filter"] == pipeline.get("filter", "none")
        assert enc["tensogram_encoding"] == pipeline.get("encoding", "none")
        assert {k: enc[k] for k in pipeline if "_" in k} == {k: v for k, v in pipeline.items() if "_" in k}
        xt.to_tensogram(ds, tmp_path / "out.tgm")
        xt.to_tensogram(ds, tmp_path / "plain.tgm", encoding={"t": {"compression": "none"}})
    src, out = (_reference_messages(tmp_path / p)[0].objects[0] for p in ("src.tgm", "out.tgm"))
    for key, value in pipeline.items():
        assert (getattr(out[0], key) if key in ("encoding", "filter", "compression") else out[0].params[key]) == value
    np.testing.assert_array_equal(out[1], src[1])
    plain = _reference_messages(tmp_path / "plain.tgm")[0].objects[0][0]
    assert (plain.encoding, plain.filter, plain.compression) == ("none", "none", "none")
    assert os.path.getsize(tmp_path / "out.tgm") < os.path.getsize(tmp_path / "plain.tgm")


def test_netcdf_compression_in_encoding_is_not_ours(tmp_path):
    """A foreign encoding (netCDF's compression: gzip) is ignored, not an error."""
    ds = forecast()[["t"]]
    ds["t"].encoding = {"compression": "gzip", "compression_opts": 4}
    xt.to_tensogram(ds, tmp_path / "g.tgm")
    assert _reference_messages(tmp_path / "g.tgm")[0].objects[0][0].compression == "none"


def test_tetr_open_then_write_keeps_codec_and_tiles(tmp_path):
    src = DATA / "tetr" / "zstd_2x3.tet"
    with _open(src) as ds:
        assert ds["a"].encoding["tetr_codec"] == "zstd"
        xt.to_tetr(ds, tmp_path / "z.tet")
        xt.to_tetr(ds, tmp_path / "raw.tet", compression="raw")
    assert (tmp_path / "z.tet").read_bytes() == src.read_bytes()
    with _open(tmp_path / "raw.tet") as raw:
        assert raw["a"].encoding["tetr_codec"] == "raw"


def test_ztensor_open_then_write_keeps_compression_and_checksum(tmp_path):
    ztensor = pytest.importorskip("ztensor")
    ds = forecast()[["t", "z"]].drop_vars("time")
    xt.to_ztensor(ds, str(tmp_path / "a.zt"), compression="zstd", checksum="crc32c")
    with _open(tmp_path / "a.zt") as back:
        assert back["t"].encoding["ztensor_encoding"] == "zstd"
        assert back["t"].encoding["ztensor_checksum"] == "crc32c"
        xt.to_ztensor(back, str(tmp_path / "b.zt"))
        xt.to_ztensor(back, str(tmp_path / "c.zt"), compression="raw", checksum="none")
    with _open(tmp_path / "b.zt") as again:
        assert again["t"].encoding["ztensor_encoding"] == "zstd"
        assert again["t"].encoding["ztensor_checksum"] == "crc32c"
    with _open(tmp_path / "c.zt") as plain:
        assert plain["t"].encoding["ztensor_encoding"] == "raw" and plain["t"].encoding["ztensor_checksum"] is None
    reader = ztensor.Reader(str(tmp_path / "b.zt"))
    np.testing.assert_array_equal(reader.read_tensor("t", to="numpy"), ds["t"].values)


# ---------------------------------------------------------------------------------------------
# 4. compressor defaults and errors that list the valid values
# ---------------------------------------------------------------------------------------------

DEFAULTS = [
    pytest.param(
        {"compression": "szip"},
        {"szip_rsi": 128, "szip_block_size": 16, "szip_flags": 8},
        id="szip",
        marks=pytest.mark.skipif(not available("imagecodecs"), reason="imagecodecs not installed"),
    ),
    pytest.param(
        {"compression": "zfp"},
        {"zfp_mode": "fixed_precision", "zfp_precision": 32},
        id="zfp",
        marks=pytest.mark.skipif(not available("zfpy"), reason="zfpy not installed"),
    ),
    pytest.param(
        {"compression": "zfp", "zfp_mode": "fixed_rate"},
        {"zfp_rate": 16.0},
        id="zfp-rate",
        marks=pytest.mark.skipif(not available("zfpy"), reason="zfpy not installed"),
    ),
    pytest.param(
        {"compression": "blosc2"},
        {},
        id="blosc2",
        marks=pytest.mark.skipif(not available("blosc2"), reason="blosc2 not installed"),
    ),
    pytest.param(
        {"compression": "lz4"},
        {},
        id="lz4",
        marks=pytest.mark.skipif(not available("lz4.block"), reason="lz4 not installed"),
    ),
    pytest.param({"encoding": "simple_packing"}, {"sp_bits_per_value": 16}, id="simple_packing"),
]


@pytest.mark.parametrize("enc, params", DEFAULTS)
def test_compressors_have_defaults_the_reference_reads(tmp_path, enc, params):
    ds = forecast()[["t"]].fillna(270.0)
    xt.to_tensogram(ds, tmp_path / "d.tgm", encoding={"t": enc})
    msgs = _reference_messages(tmp_path / "d.tgm")
    desc, values = msgs[0].objects[0]
    assert {k: desc.params[k] for k in params} == params
    lossy = enc.get("compression") == "zfp" or "encoding" in enc
    np.testing.assert_allclose(values, ds["t"].values.astype(np.float64), rtol=1e-3 if lossy else 0)
    np.testing.assert_array_equal(_loaded(tmp_path / "d.tgm")["t"].values, values.astype(np.float32))


@pytest.mark.parametrize(
    "enc, listed",
    [
        ({"compression": "gzip"}, "none, zstd, lz4, szip, blosc2, zfp, rle, roaring"),
        ({"compression": "sz3"}, "can be read but not written"),
        ({"encoding": "grib"}, "none, simple_packing"),
        ({"filter": "bitshuffle"}, "none, shuffle"),
        ({"compression": "blosc2", "blosc2_codec": "brotli"}, "blosclz, lz4, lz4hc, zlib, zstd"),
        ({"compression": "zfp", "zfp_mode": "lossless"}, "fixed_rate, fixed_precision, fixed_accuracy"),
    ],
    ids=["gzip", "sz3", "encoding", "filter", "blosc2-codec", "zfp-mode"],
)
def test_unknown_values_list_the_valid_ones(tmp_path, enc, listed):
    with pytest.raises(UnsupportedError, match=r"valid values|can be read") as info:
        xt.to_tensogram(forecast()[["t"]], tmp_path / "x.tgm", encoding={"t": enc})
    assert listed in str(info.value)
    assert "sz3" not in str(info.value) or enc.get("compression") == "sz3"
    assert not (tmp_path / "x.tgm").exists()


# ---------------------------------------------------------------------------------------------
# 5. permissions and atomicity
# ---------------------------------------------------------------------------------------------


def _write_all(tmp_path, tag):
    ds = forecast()[["t"]].drop_vars("time")
    ds.attrs = {}  # .tet has no place for them (a warning says so)
    paths = [tmp_path / f"{tag}.tgm", tmp_path / f"{tag}.tet", tmp_path / f"{tag}.zt"]
    xt.to_tensogram(ds, paths[0])
    xt.to_tetr(ds, paths[1])
    xt.to_ztensor(ds, str(paths[2]))
    return paths


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_get_the_permissions_open_would_give(tmp_path, umask):
    old = os.umask(umask)
    try:
        with open(tmp_path / "plain.txt", "w") as f:
            f.write("x")
        expected = stat.S_IMODE(os.stat(tmp_path / "plain.txt").st_mode)
        paths = _write_all(tmp_path, "new")
    finally:
        os.umask(old)
    assert expected == 0o666 & ~umask
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in paths] == [expected] * 3
    assert sorted(os.listdir(tmp_path)) == sorted(["plain.txt", *(p.name for p in paths)])  # no temporary left


def test_rewriting_keeps_an_existing_files_mode(tmp_path):
    paths = _write_all(tmp_path, "f")
    for p in paths:
        os.chmod(p, 0o640)
    _write_all(tmp_path, "f")
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in paths] == [0o640] * 3


# ---------------------------------------------------------------------------------------------
# 6. to_tetr reproduces unchanged files; chunks forms
# ---------------------------------------------------------------------------------------------


def _reference_sums():
    lines = (REFERENCE_TET / "SHA256SUMS").read_text().split("\n")
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


@pytest.mark.parametrize(
    "name", ["sample.tet", "large.tet", "multichunk_u8.tet", "multichunk_u32.tet", "multichunk_f16.tet"]
)
def test_to_tetr_writes_reference_files_back_byte_for_byte(tmp_path, name):
    src = REFERENCE_TET / name
    assert hashlib.sha256(src.read_bytes()).hexdigest() == _reference_sums()[name]
    with _open(src) as ds:
        xt.to_tetr(ds, tmp_path / name)
    assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == _reference_sums()[name]


def test_plan_tet_is_not_openable_so_it_is_not_rewritten():
    """The sixth reference file has a corrupt footer on purpose: opening it is refused, nothing to write back."""
    with pytest.raises(xt.MetadataError):
        _open(REFERENCE_TET / "plan.tet")


@pytest.mark.parametrize("chunks, tiles", [(2, (2, 2, 2)), ((1, 3, 2), (1, 3, 2)), ({"x": 3}, (2, 3, 4))])
def test_to_tetr_chunks_forms(tmp_path, chunks, tiles):
    values = np.arange(24, dtype="float32").reshape(2, 3, 4)
    ds = xr.Dataset({"v": (("t", "x", "y"), values)})
    xt.to_tetr(ds, tmp_path / "c.tet", chunks=chunks)
    f = xt.open_tetr(tmp_path / "c.tet")
    assert tuple(f.datasets[0].chunk_shape) == tiles
    np.testing.assert_array_equal(f.read("v"), values)


def test_to_tetr_chunks_tuple_of_wrong_length_names_the_variable(tmp_path):
    ds = xr.Dataset({"v": (("x", "y"), np.zeros((2, 2)))})
    with pytest.raises(ValueError, match=r"'v'.*one size per axis"):
        xt.to_tetr(ds, tmp_path / "c.tet", chunks=(2, 2, 2))


# ---------------------------------------------------------------------------------------------
# 8. bool variables, the same in the three writers
# ---------------------------------------------------------------------------------------------


def test_bool_variables_write_and_read_back_bool(tmp_path):
    mask = np.array([[True, False, True], [False, False, True]])
    ds = xr.Dataset({"lsm": (("y", "x"), mask, {"long_name": "land"})}, coords={"y": [1.0, 2.0], "x": [0, 1, 2]})
    xt.to_tensogram(ds, tmp_path / "b.tgm")
    xt.to_tetr(ds, tmp_path / "b.tet")
    xt.to_ztensor(ds, str(tmp_path / "b.zt"))
    for suffix in ("tgm", "tet", "zt"):
        back = _loaded(tmp_path / f"b.{suffix}")
        assert back["lsm"].dtype == bool, suffix
        xr.testing.assert_identical(back, ds)
    msg = _reference_messages(tmp_path / "b.tgm")[0]
    desc, values = next((d, v) for e, (d, v) in zip(msg.metadata.base, msg.objects, strict=True) if e["name"] == "lsm")
    assert desc.dtype == "uint8"
    np.testing.assert_array_equal(values, mask.astype(np.uint8))
    ztensor = pytest.importorskip("ztensor")
    np.testing.assert_array_equal(ztensor.Reader(str(tmp_path / "b.zt")).read_tensor("lsm", to="numpy"), mask)


def test_message_dims_product_order(tmp_path):
    """Every combination of two message dims is one message (the reference counts them)."""
    ds = forecast()
    xt.to_tensogram(ds, tmp_path / "p.tgm", message_dims=["time", "level"])
    keys = [
        (m.metadata.base[0]["mars"]["time"], m.metadata.base[0]["level"])
        for m in _reference_messages(tmp_path / "p.tgm")
    ]
    assert keys == list(itertools.product([0, 1200], [1000, 850, 500]))


# ---------------------------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------------------------


def test_docs_forecast_example_runs_as_written(tmp_path, monkeypatch):
    """The first code block of the writing page, executed verbatim in an empty folder."""
    if not available("imagecodecs"):
        pytest.skip("the example uses szip (imagecodecs)")
    readme = (Path(__file__).parent.parent / "docs" / "writing.md").read_text()
    section = readme[readme.index("## Tensogram (`.tgm`)") :]
    code = section[section.index("```python") + len("```python") :]
    code = code[: code.index("```")]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/writing.md", "exec"), {})
    assert len(_reference_messages(tmp_path / "forecast.tgm")) == 6
    assert len(_reference_messages(tmp_path / "run.tgm")) == 2


def test_static_field_next_to_message_dims_round_trips(tmp_path):
    """A 2-D land-sea mask next to 4-D fields: written once (first message), read back as one Dataset."""
    ds = forecast()
    lsm = (np.arange(20).reshape(4, 5) % 2).astype("uint8")
    ds["lsm"] = (("latitude", "longitude"), lsm, {"long_name": "land-sea mask"})
    xt.to_tensogram(ds, tmp_path / "fc.tgm", message_dims=["time", "level"])
    xr.testing.assert_identical(_loaded(tmp_path / "fc.tgm"), ds)
    first = _reference_messages(tmp_path / "fc.tgm")[0]
    mask = next(v for e, (_d, v) in zip(first.metadata.base, first.objects, strict=True) if e["name"] == "lsm")
    np.testing.assert_array_equal(mask, lsm)
