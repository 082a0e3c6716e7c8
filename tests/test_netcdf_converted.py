"""Files from ECMWF's netCDF converter open as ``xr.open_dataset`` of the original netCDF file (issue 25).

The converter is emulated by ``tests/netcdf_converter.py`` from ``specs/tensogram-from-netcdf.md``
(every rule cited), its bytes written by the reference encoder. The oracle is xarray itself opening
the original file with scipy (netCDF-3) or h5netcdf (netCDF-4): names, dims and their order,
coordinates, values, decoded times, variable and global attributes and the CF keys in ``.encoding``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from netcdf_converter import Pipeline, convert
from xarray_tensogram.errors import (
    EncodeError,
    GroupSelectionError,
    MetadataError,
    NotATensorFileError,
    TensogramMappingWarning,
)

ENGINES = {"nc3": "scipy", "nc4": "h5netcdf"}
#: every netCDF file a test opens is closed: a file manager collected open is an error here
pytestmark = [
    pytest.mark.filterwarnings("error:deallocating CachingFileManager:RuntimeWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def _warn_for_unclosed_files() -> Iterator[None]:
    """xarray's own test suite turns this on; on here too, whichever test files run with this one."""
    with xr.set_options(warn_for_unclosed_files=True):
        yield


#: the keys xarray's CF decoding moves from attributes into ``.encoding``
CF_ENCODING_KEYS = ("_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar", "coordinates")


def _dataset(kind: str, times: np.ndarray, calendar: str) -> xr.Dataset:
    """Packed, filled, masked by missing_value, a time with a calendar, string and numeric attributes, an
    unlimited dimension, a scalar, a ``coordinates`` attribute and a 1-D variable that is not a coordinate."""
    rng = np.random.default_rng(len(times))
    nt, ny, nx = len(times), 4, 5
    t2m = rng.standard_normal((nt, ny, nx)) * 10 + 280
    t2m[0, 1, 2] = np.nan
    sst = (rng.standard_normal((nt, ny, nx)) + 290).astype(np.float32)
    sst[-1, 0, :2] = -999.0
    count = np.arange(nt, dtype=np.int32)
    count[0] = -1
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t2m, {"units": "K", "long_name": "2 metre temperature"}),
            "sst": (
                ("time", "lat", "lon"),
                sst,
                {"units": "K", "standard_name": "sea_surface_temperature", "coordinates": "height"},
            ),
            "pressure": (("lat",), np.linspace(1000, 900, ny), {"units": "hPa"}),
            "height": ((), 2.0, {"units": "m", "positive": "up"}),
            "count": (
                ("time",),
                count,
                {"missing_value": np.int32(-1), "valid_range": np.array([0, 10], np.int32), "scale": np.float32(0.5)},
            ),
            "time": (("time",), times, {"units": "hours since 2000-01-01", "calendar": calendar, "axis": "T"}),
            "lat": (("lat",), np.linspace(-30, 30, ny, dtype=np.float32), {"units": "degrees_north"}),
            "lon": (("lon",), np.linspace(0, 40, nx), {"units": "degrees_east", "flags": np.int16(3)}),
        },
        attrs={"Conventions": "CF-1.8", "title": f"{kind} test", "version": np.int16(2), "scale": 1.5},
    )
    return ds


def _write(path: Path, kind: str, times: np.ndarray, calendar: str) -> Path:
    ds = _dataset(kind, times, calendar)
    enc = {
        "t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": np.int16(-32767)},
        "sst": {"_FillValue": np.float32(-999.0)},
        "time": {"dtype": "int32"},
    }
    ds.to_netcdf(path, engine=ENGINES[kind], encoding=enc, unlimited_dims=["time"])
    return path


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("nc")
    return {
        "nc3": _write(d / "a3.nc", "nc3", np.array([0, 6, 12]), "noleap"),
        "nc4": _write(d / "a4.nc", "nc4", np.array([0, 24, 48, 72]), "proleptic_gregorian"),
    }


def _reference(path: Path, drop: Sequence[str] = (), **kw: Any) -> xr.Dataset:
    """The original netCDF file as xarray opens it, less ``drop``, loaded and closed (no handle left to the GC)."""
    with xr.open_dataset(path, engine=ENGINES["nc3" if path.read_bytes()[:3] == b"CDF" else "nc4"], **kw) as ds:
        return ds.drop_vars([v for v in drop if v in ds.variables]).load()


def _open(path: Path, **kw: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine="tensogram", **kw)


def _same_attr(ours: Any, ref: Any) -> bool:
    if isinstance(ref, (np.ndarray, np.generic)):
        same_type = np.asarray(ours).dtype.str[1:] == ref.dtype.str[1:]  # scipy gives big-endian attributes
        return bool(same_type and np.array_equal(ours, ref, equal_nan=ref.dtype.kind == "f"))
    if isinstance(ref, float) and np.isnan(ref):
        return isinstance(ours, float) and np.isnan(ours)
    return bool(type(ours) is type(ref) and ours == ref)


def _assert_attrs(ours: dict[str, Any], ref: dict[str, Any], what: str) -> None:
    assert list(ours) == list(ref) or set(ours) == set(ref), f"{what}: {sorted(ours)} != {sorted(ref)}"
    for k, v in ref.items():
        assert _same_attr(ours[k], v), f"{what} {k!r}: {ours[k]!r} != {v!r}"


def assert_like_netcdf(
    ours: xr.Dataset, ref: xr.Dataset, *, packed_as_float64: bool = True, same_order: bool = True
) -> None:
    """What a user compares: names, dims and order, coordinates, values, times, attributes, CF encoding.
    ``same_order``: also the order of the variables and of the Dataset's dims (one file: the file's order)."""
    assert set(ours.data_vars) == set(ref.data_vars)
    assert set(ours.coords) == set(ref.coords)
    assert set(ours.indexes) == set(ref.indexes)
    assert dict(ours.sizes) == dict(ref.sizes)
    if same_order:
        assert list(ours.sizes) == list(ref.sizes) and list(ours.variables) == list(ref.variables)
    for name, ref_var in ref.variables.items():
        var = ours.variables[name]
        assert var.dims == ref_var.dims, name
        if ref_var.dtype.kind in "fc" and var.dtype == np.float64 and ref_var.dtype == np.float32:
            assert packed_as_float64, name  # unpacked to float64 by the converter: accepted
            np.testing.assert_allclose(var.values, ref_var.values, rtol=1e-6, equal_nan=True, err_msg=name)
        elif ref_var.dtype.kind in "fc":
            assert var.dtype == ref_var.dtype, name
            np.testing.assert_allclose(var.values, ref_var.values, rtol=1e-12, equal_nan=True, err_msg=name)
        else:
            assert var.dtype == ref_var.dtype, name
            np.testing.assert_array_equal(var.values, ref_var.values, err_msg=name)
        _assert_attrs(dict(var.attrs), dict(ref_var.attrs), f"variable {name!r}")
        for key in CF_ENCODING_KEYS:
            if key in ref_var.encoding and key in var.encoding:
                assert _same_attr(var.encoding[key], ref_var.encoding[key]), f"{name} encoding {key}"
            elif key in ref_var.encoding and key not in ("scale_factor", "add_offset", "_FillValue", "missing_value"):
                raise AssertionError(f"{name}: encoding {key!r} missing")
    _assert_attrs(dict(ours.attrs), dict(ref.attrs), "Dataset")


@pytest.mark.parametrize("cf", [False, True], ids=["netcdf", "cf"])
@pytest.mark.parametrize("split", ["file", "variable", "record"])
@pytest.mark.parametrize("kind", ["nc3", "nc4"])
def test_opens_as_the_original(originals: dict[str, Path], tmp_path: Path, kind: str, split: str, cf: bool) -> None:
    tgm = convert(originals[kind], tmp_path / "out.tgm", split_by=split, cf=cf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no duplicate-object or mapping warning
        ours = _open(tgm)
    ref = _reference(originals[kind])
    assert_like_netcdf(ours, ref)
    assert ours.encoding["unlimited_dims"] == {"time"}
    assert np.isnan(ours.sst.values[-1, 0, :2]).all() and np.isnan(ours.t2m.values[0, 1, 2])
    assert np.isnan(ours["count"].values[0])  # missing_value masked, as xarray does
    assert "height" in ours.coords and "pressure" in ours.data_vars  # by the coordinates attribute, not by name


@pytest.mark.parametrize("split", ["file", "variable", "record"])
def test_a_compression_pipeline_changes_nothing(originals: dict[str, Path], tmp_path: Path, split: str) -> None:
    tgm = convert(originals["nc4"], tmp_path / "out.tgm", split_by=split, pipeline=Pipeline("shuffle", "zstd"))
    ours = _open(tgm)
    assert_like_netcdf(ours, _reference(originals["nc4"]))
    assert ours.sst.encoding["tensogram_compression"] == "zstd"
    lazy = _open(tgm, chunks={})  # Dask: whole objects (records grouped), equal values
    assert lazy.sst.chunks is not None
    assert_like_netcdf(lazy.compute(), _reference(originals["nc4"]))


def test_the_three_splits_give_the_same_dataset(originals: dict[str, Path], tmp_path: Path) -> None:
    opened = {
        s: _open(convert(originals["nc3"], tmp_path / f"{s}.tgm", split_by=s)).load() for s in ("file", "variable")
    }
    xr.testing.assert_identical(opened["file"], opened["variable"])
    record = _open(convert(originals["nc3"], tmp_path / "record.tgm", split_by="record")).load()
    # the record split keeps packed variables packed (native int16 + scale_factor): xarray unpacks them
    xr.testing.assert_allclose(record, opened["file"])
    assert record.t2m.encoding["dtype"] == np.int16 and opened["file"].t2m.dtype == np.float64


@pytest.mark.parametrize(
    "kw",
    [
        {"decode_times": False},
        {"decode_times": xr.coders.CFDatetimeCoder(use_cftime=True)},
        {"decode_coords": False},
        {"mask_and_scale": False},
        {"decode_times": {"time": False}},
        {"drop_variables": ["sst"]},
        {"decode_coords": "all"},
        {"mask_and_scale": {"t2m": False}},
    ],
    ids=["no-times", "cftime", "no-coords", "no-mask-and-scale", "times-per-variable", "drop", "all-coords", "per-var"],
)
def test_decode_options_act_as_on_the_original(originals: dict[str, Path], tmp_path: Path, kw: dict) -> None:
    """The record split keeps raw values and every CF attribute, so it meets every decode option as the original."""
    tgm = convert(originals["nc4"], tmp_path / "out.tgm", split_by="record")
    ours, ref = _open(tgm, **kw), _reference(originals["nc4"], **kw)
    assert_like_netcdf(ours, ref, packed_as_float64=False)
    if isinstance(kw.get("decode_times"), xr.coders.CFDatetimeCoder):
        assert ours.time.dtype == object and ours.time.values[0].calendar == "proleptic_gregorian"


def test_times_with_a_calendar_decode(originals: dict[str, Path], tmp_path: Path) -> None:
    ours = _open(convert(originals["nc3"], tmp_path / "out.tgm", split_by="record"))
    assert [str(t) for t in ours.time.values] == ["2000-01-01 00:00:00", "2000-01-01 06:00:00", "2000-01-01 12:00:00"]
    assert ours.time.values[0].calendar == "noleap"
    assert ours.time.encoding["units"] == "hours since 2000-01-01" and ours.time.encoding["calendar"] == "noleap"


def _nc_with_char_label(path: Path) -> Path:
    ds = xr.Dataset(
        {"v": (("station",), np.arange(2.0), {"coordinates": "name"})},
        coords={"name": ("station", np.array(["ab", "cd"]))},
    )
    ds.to_netcdf(path, engine="scipy")
    return path


def test_a_skipped_char_variable_named_in_coordinates_is_a_warning(tmp_path: Path) -> None:
    nc = _nc_with_char_label(tmp_path / "c.nc")
    with pytest.warns(UserWarning, match="skipping variable 'name'"):
        tgm = convert(nc, tmp_path / "c.tgm")
    with pytest.warns(TensogramMappingWarning, match=r"lists coordinates \['name'\].*char and string"):
        ours = _open(tgm)
    assert list(ours.data_vars) == ["v"] and "name" not in ours.variables


def _series(tmp_path: Path, name: str, times: list[int], **kw: Any) -> Path:
    return _write(tmp_path / name, "nc4", np.array(times), kw.get("calendar", "proleptic_gregorian"))


@pytest.mark.parametrize("split", ["file", "record"])
def test_concatenated_conversions_open_as_open_mfdataset(tmp_path: Path, split: str) -> None:
    a = _series(tmp_path, "a.nc", [0, 24, 48])
    b = _series(tmp_path, "b.nc", [72, 96, 120])
    # the same values in both files for the static variables (pressure, height, lat, lon): one copy each
    tgm = convert([a, b], tmp_path / "ab.tgm", split_by=split)
    ours = _open(tgm)
    with xr.open_mfdataset(
        [a, b], engine="h5netcdf", combine="by_coords", data_vars="minimal", coords="minimal", compat="override"
    ) as ref:
        assert_like_netcdf(ours, ref.load())
    assert ours.sizes["time"] == 6


def test_conversions_of_different_variables_merge(tmp_path: Path) -> None:
    a = _series(tmp_path, "a.nc", [0, 24])
    _reference(a)[["sst"]].to_netcdf(tmp_path / "s.nc", engine="h5netcdf")
    _reference(a)[["t2m"]].to_netcdf(tmp_path / "t.nc", engine="h5netcdf")
    tgm = convert([tmp_path / "s.nc", tmp_path / "t.nc"], tmp_path / "st.tgm")
    ours = _open(tgm)
    with xr.open_mfdataset(
        [tmp_path / "s.nc", tmp_path / "t.nc"],
        engine="h5netcdf",
        combine="by_coords",
        compat="no_conflicts",
        join="outer",
    ) as ref:
        # xr.merge appends the second file's variables after all of the first's; ours is decoded as one file
        assert_like_netcdf(ours, ref.load(), same_order=False)


def test_conversions_that_cannot_share_a_dataset_are_groups(tmp_path: Path) -> None:
    a = _series(tmp_path, "a.nc", [0, 24])
    other = _reference(a).isel(lat=slice(0, 2))
    other.to_netcdf(tmp_path / "b.nc", engine="h5netcdf")
    tgm = convert([a, tmp_path / "b.nc"], tmp_path / "ab.tgm")
    with pytest.raises(GroupSelectionError, match="input_0, input_1"):
        _open(tgm)
    groups = xr.open_groups(tgm, engine="tensogram")
    assert_like_netcdf(groups["/input_0"], _reference(a))
    assert groups["/input_1"].sizes["lat"] == 2


def test_write_back_keeps_the_converter_layout(originals: dict[str, Path], tmp_path: Path) -> None:
    import tensogram

    ours = _open(convert(originals["nc4"], tmp_path / "in.tgm", split_by="record", cf=True))
    out = tmp_path / "back.tgm"
    ours.tensogram.to_tgm(out)
    (meta,) = [m.metadata for m in tensogram.TensogramFile.open(str(out))]
    base = {e["name"]: e for e in meta.base}
    assert list(base) == list(ours.variables)
    t2m = base["t2m"]["netcdf"]
    assert t2m["_dims"] == ["time", "lat", "lon"] and t2m["scale_factor"] == 0.01 and t2m["_FillValue"] == -32767
    assert t2m["_attr_types"]["_FillValue"] == "short" and base["t2m"]["cf"]["units"] == "K"
    assert t2m["_file"]["dims"][0] == {"name": "time", "len": 4, "unlimited": True}
    assert t2m["_global"]["title"] == "nc4 test" and t2m["_global_types"]["version"] == "short"
    assert base["time"]["netcdf"]["units"] == "hours since 2000-01-01"
    assert base["t2m"]["_reserved_"]["tensor"]["dtype"] == "int16"  # packed again, as to_netcdf would
    assert_like_netcdf(_open(out), _reference(originals["nc4"]), packed_as_float64=False)


def test_write_back_refuses_text_before_writing(originals: dict[str, Path], tmp_path: Path) -> None:
    ours = _open(convert(originals["nc4"], tmp_path / "in.tgm")).assign_coords(label=("lat", list("abcd")))
    out = tmp_path / "back.tgm"
    with pytest.raises(EncodeError, match="'label'"):
        ours.tensogram.to_tgm(out)
    assert not out.exists()


def test_open_options_apply(originals: dict[str, Path], tmp_path: Path) -> None:
    tgm = convert(originals["nc4"], tmp_path / "out.tgm", split_by="variable")
    only = _open(tgm, filter_by_keys={"name": "sst"})
    assert list(only.data_vars) == ["sst"] and {"time", "lat", "lon", "height"} <= set(only.coords)
    renamed = _open(tgm, dim_names={"pressure": ["y"]})
    assert renamed.pressure.dims == ("y",)
    assert list(_open(tgm, drop_variables=["t2m", "count"]).data_vars) == ["sst", "pressure"]


# -- the converter's own test files (tests/data/netcdf_converter/README.md) ---------------------------------
CONVERTER_FILES = Path(__file__).parent / "data" / "netcdf_converter"
#: files with an unlimited dimension: the only ones the record split accepts (converter.rs:591-594)
WITH_RECORDS = {"complex_types_unlimited", "record_multi_dtype", "record_with_char", "unlimited_time"}
CASES = [
    (p.stem, split)
    for p in sorted(CONVERTER_FILES.glob("*.nc"))
    if p.stem != "empty_unlimited"
    for split in ("file", "variable", "record")
    if split != "record" or p.stem in WITH_RECORDS
]


@pytest.mark.parametrize(("stem", "split"), CASES)
def test_the_converters_own_files_open_as_the_originals(tmp_path: Path, stem: str, split: str) -> None:
    nc = CONVERTER_FILES / f"{stem}.nc"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        tgm = convert(nc, tmp_path / "out.tgm", split_by=split, cf=split == "variable")
    skipped = [str(w.message).split("'")[1] for w in said if "skipping variable" in str(w.message)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _open(tgm)
    # a string scale_factor: xarray cannot unpack the original at all (compared raw below)
    ref = _reference(nc, drop=[*skipped, "string_scale"])
    if stem == "attr_type_variants":
        # a string scale_factor: the converter keeps the raw values as float64 (spec "Packed variables"),
        # where xarray cannot unpack the original at all
        raw = _reference(nc, mask_and_scale=False)["string_scale"]
        np.testing.assert_array_equal(ours["string_scale"].values, raw.values.astype(np.float64))
        ours = ours.drop_vars("string_scale")
    assert_like_netcdf(ours, ref)


def test_a_record_split_of_no_records_is_an_empty_file(tmp_path: Path) -> None:
    """Zero records give zero messages and the CLI an empty file (converter.rs:596-598): nothing to open."""
    tgm = convert(CONVERTER_FILES / "empty_unlimited.nc", tmp_path / "out.tgm", split_by="record")
    with pytest.raises(NotATensorFileError, match="empty"):
        _open(tgm)
    assert_like_netcdf(
        _open(convert(CONVERTER_FILES / "empty_unlimited.nc", tmp_path / "f.tgm")),
        _reference(CONVERTER_FILES / "empty_unlimited.nc"),
    )


def test_a_file_mixing_converted_and_other_objects_says_so(originals: dict[str, Path], tmp_path: Path) -> None:
    import tensogram

    tgm = convert(originals["nc4"], tmp_path / "out.tgm")
    plain = tensogram.encode(
        {"base": [{"name": "x"}]}, [({"type": "ntensor", "shape": [2], "dtype": "float32"}, np.ones(2, "f4"))]
    )
    tgm.write_bytes(tgm.read_bytes() + plain)
    with pytest.warns(TensogramMappingWarning, match="8 objects follow the netcdf producer's layout and 1 do"):
        ds = xr.open_groups(tgm, engine="tensogram")
    assert any("x" in g.variables for g in ds.values())
    # each kind alone opens as it should
    assert_like_netcdf(_open(tgm, message_index=0), _reference(originals["nc4"]))


def test_filter_by_keys_compares_netcdf_attributes_as_text(originals: dict[str, Path], tmp_path: Path) -> None:
    """NC_STRING attributes are arrays of one string in the file; a filter names them as text."""
    tgm = convert(originals["nc4"], tmp_path / "out.tgm", split_by="record")
    ds = _open(tgm, filter_by_keys={"netcdf.standard_name": "sea_surface_temperature"})
    assert list(ds.data_vars) == ["sst"] and ds.sizes["time"] == 4


def _cds_style(path: Path) -> Path:
    """A netCDF-4 file as the new CDS delivers ERA5: int64 ``valid_time`` in seconds, scalar ``number``, a string
    ``expver`` label (which the converter skips), GRIB_* attributes, NaN fills, ``coordinates`` attributes."""
    rng = np.random.default_rng(7)
    times = np.array([1704067200 + 3600 * i for i in range(3)], dtype=np.int64)
    ds = xr.Dataset(
        {
            "t2m": (
                ("valid_time", "latitude", "longitude"),
                np.where(rng.random((3, 4, 6)) < 0.1, np.nan, 280 + rng.random((3, 4, 6))).astype(np.float32),
                {"GRIB_paramId": np.int64(167), "GRIB_units": "K", "units": "K", "long_name": "2 metre temperature"},
            ),
        },
        coords={
            "number": ((), np.int64(0), {"long_name": "ensemble member numerical id", "units": "1"}),
            "valid_time": (
                ("valid_time",),
                times,
                {"units": "seconds since 1970-01-01", "calendar": "proleptic_gregorian", "standard_name": "time"},
            ),
            "latitude": (("latitude",), np.linspace(60, 45, 4), {"units": "degrees_north"}),
            "longitude": (("longitude",), np.linspace(0, 12.5, 6), {"units": "degrees_east"}),
            "expver": (("valid_time",), np.array(["0001"] * 3, dtype=object)),
        },
        attrs={"GRIB_centre": "ecmf", "Conventions": "CF-1.7", "institution": "European Centre"},
    )
    ds.to_netcdf(path, engine="h5netcdf")
    return path


@pytest.mark.parametrize("split", ["file", "variable"])
def test_a_cds_style_netcdf4_file(tmp_path: Path, split: str) -> None:
    nc = _cds_style(tmp_path / "cds.nc")
    with pytest.warns(UserWarning, match="skipping variable 'expver'"):
        tgm = convert(nc, tmp_path / "cds.tgm", split_by=split, cf=True)
    with pytest.warns(TensogramMappingWarning, match=r"'t2m' lists coordinates \['expver'\]"):
        ours = _open(tgm)
    assert_like_netcdf(ours, _reference(nc).drop_vars("expver"))
    assert ours["valid_time"].dtype == "datetime64[ns]" and ours["number"].ndim == 0


@pytest.mark.parametrize("split", ["file", "variable", "record"])
def test_the_era5_like_sample_in_every_split(tmp_path: Path, split: str) -> None:
    from importlib.resources import files

    nc = Path(str(files("xarray_tensogram") / "samples" / "netcdf" / "era5_sfc.nc"))
    assert_like_netcdf(_open(convert(nc, tmp_path / "out.tgm", split_by=split)), _reference(nc))


def _converted_like(tmp_path: Path, objects: list[tuple[dict, np.ndarray]]) -> Path:
    """A hand-made file in the converter's layout (``tensogram.encode``), one message per object."""
    import tensogram

    blobs = [
        tensogram.encode({"base": [entry]}, [({"type": "ntensor", "shape": list(v.shape), "dtype": v.dtype.name}, v)])
        for entry, v in objects
    ]
    path = tmp_path / "hand.tgm"
    path.write_bytes(b"".join(blobs))
    return path


def test_damaged_netcdf_maps_are_errors_naming_the_object(tmp_path: Path) -> None:
    file_map = {"dims": [{"name": "time", "len": 2, "unlimited": True}, {"name": "x", "len": 3, "unlimited": False}]}
    wrong_rank = {"name": "v", "netcdf": {"_dims": ["x", "y"], "_file": file_map}}
    with pytest.raises(MetadataError, match=r"object 0 \('v'\): netcdf._dims \['x', 'y'\] names 2 dimensions"):
        _open(_converted_like(tmp_path, [(wrong_rank, np.zeros(3))]))
    records = [
        ({"name": "r", "netcdf": {"_dims": ["x"], "_file": file_map, "record_index": 0}}, np.zeros(3)),
        ({"name": "r", "netcdf": {"_dims": ["x"], "_file": file_map, "record_index": 1}}, np.zeros(3, "f4")),
    ]
    with pytest.raises(MetadataError, match="records of shape"):
        _open(_converted_like(tmp_path, records))


def test_time_deltas_decode_as_xarray_decodes_the_netcdf(tmp_path: Path) -> None:
    """Units like ``hours`` stay numbers by default, as xarray's netCDF readers leave them;
    ``decode_timedelta=True`` decodes both alike."""
    nc = tmp_path / "lead.nc"
    lead = {"units": "hours", "long_name": "lead time"}
    xr.Dataset({"lead": ("t", np.array([0, 6, 12], "i4"), lead)}, coords={"t": ("t", [1, 2, 3])}).to_netcdf(
        nc, engine="h5netcdf"
    )
    tgm = convert(nc, tmp_path / "lead.tgm")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        default, reference = _open(tgm), _reference(nc)
    assert default["lead"].dtype.kind in "iu"
    assert_like_netcdf(default, reference)
    decoded = _open(tgm, decode_timedelta=True)
    assert decoded["lead"].dtype.kind == "m"
    assert_like_netcdf(decoded, _reference(nc, decode_timedelta=True))


def test_variable_key_names_variables_or_says_it_matched_nothing(originals: dict[str, Path], tmp_path: Path) -> None:
    tgm = convert(originals["nc4"], tmp_path / "out.tgm")
    assert "2 metre temperature" in _open(tgm, variable_key="netcdf.long_name").data_vars
    with pytest.warns(TensogramMappingWarning, match="variable_key='nope': no object has this key"):
        assert "t2m" in _open(tgm, variable_key="nope").data_vars


def test_an_open_without_chunks_imports_no_dask(tmp_path: Path) -> None:
    """As for every file: values in memory go through indexing adapters, so Dask stays unimported."""
    import subprocess
    import sys

    code = (
        "import sys, xarray as xr\n"
        "from importlib.resources import files\n"
        "p = str(files('xarray_tensogram') / 'samples' / 'netcdf' / 'era5_sfc.tgm')\n"
        "xr.open_dataset(p, engine='tensogram').load()\n"
        "print('dask.array' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dropping_every_variable_gives_an_empty_dataset(originals: dict[str, Path], tmp_path: Path) -> None:
    tgm = convert(originals["nc3"], tmp_path / "out.tgm")
    ref = _reference(originals["nc3"])
    assert len(_open(tgm, drop_variables=list(ref.variables)).variables) == 0


def test_a_damaged_dimension_registry_entry_is_named_in_a_warning(tmp_path: Path) -> None:
    """``_file.dims`` only adds lengths and unlimited flags to the dims each object names: an entry without a
    text name is left out, with a warning that shows it (never silently), and the values still read."""
    file_map = {"dims": [{"name": "x", "len": 3, "unlimited": False}, {"len": 7}, "time"]}
    entry = {"name": "v", "netcdf": {"_dims": ["x"], "_file": file_map}}
    values = np.arange(3.0)
    with pytest.warns(
        TensogramMappingWarning, match=r"_file.dims: 2 entries without a text name ignored \(\{'len': 7\}, 'time'\)"
    ):
        ds = _open(_converted_like(tmp_path, [(entry, values)]))
    np.testing.assert_array_equal(ds["v"].values, values)
    assert ds["v"].dims == ("x",)
