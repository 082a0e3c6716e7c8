"""Files from ECMWF's GRIB converter open as cfgrib users expect (issue 18).

GRIB messages are built from ecCodes' own samples (regular_ll and reduced_gg; surface, height
and pressure levels; several steps and levels), converted the way ``tensogram-grib`` does
(``tests/grib_corpus.py``, encoded by the reference ``tensogram.encode``), and our Dataset is
compared with ``xr.open_dataset(grib, engine="cfgrib")`` on the same GRIB bytes: names, dims,
coordinate values, time/step/valid_time, level name and value, data values, units and long_name.
Unit tests of ``xarray_tensogram/grib.py`` use ecCodes itself as the oracle (``cfVarName``, ``latitudes``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

eccodes = pytest.importorskip("eccodes")
pytest.importorskip("cfgrib")
tensogram = pytest.importorskip("tensogram")

import grib_corpus as gc  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.backend import TensogramBackendEntrypoint  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.producers.grib_converter import cfgrib_rules as grib  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.producers.grib_converter import write_layout  # noqa: E402 - after the pytest.importorskip above

ENGINE = TensogramBackendEntrypoint

#: name -> (sample, params, steps, levels, geometry)
CASES: dict[str, tuple[str, list[int], list[int], list[int | None], dict[str, Any] | None]] = {
    "ll_pressure": ("regular_ll_pl_grib2", [130, 133], [0, 6, 12], [1000, 850, 500], None),
    "ll_height_dateline": ("regular_ll_sfc_grib2", [167], [0, 6], [None], gc.DATELINE_GLOBAL),
    "ll_surface_one_field": ("regular_ll_sfc_grib2", [172], [0], [None], gc.SOUTH_TO_NORTH),
    "gg_pressure": ("reduced_gg_pl_grib2", [130], [0, 6], [850, 500], None),
    "gg_surface": ("reduced_gg_sfc_grib2", [172], [0, 12], [None], None),
    "regular_gg_pressure": ("regular_gg_pl_grib2", [130], [0, 6], [850], None),
}


def _cfgrib(path: Path, **kw: Any) -> xr.Dataset:
    # float64 as the converter writes; no index file next to the GRIB
    return xr.open_dataset(
        path, engine="cfgrib", backend_kwargs={"indexpath": "", **kw}, values_dtype=np.dtype("float64")
    )


def _ours(path: Path, **kw: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine=ENGINE, **kw)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("grib")
    out = {}
    for name, (sample, params, steps, levels, geometry) in CASES.items():
        g = gc.grib_file(sample, params, steps, levels, geometry)
        for grouping in ("merge_all", "one_to_one"):
            out[name, grouping] = gc.write_pair(tmp, f"{name}_{grouping}", g, grouping)
    return out


# ---------------------------------------------------------------------------------------------
# unit tests of xarray_tensogram/grib.py, ecCodes as oracle
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("param_id", [167, 168, 165, 166, 228246, 228247, 207, 174096, 260242, 49, 130, 172, 228, 151])
def test_cfgrib_name_matches_eccodes_cfvarname(param_id: int) -> None:
    h = eccodes.codes_grib_new_from_samples("regular_ll_sfc_grib2")
    try:
        eccodes.codes_set(h, "paramId", param_id)
        short, cf_var = eccodes.codes_get(h, "shortName"), eccodes.codes_get(h, "cfVarName")
    finally:
        eccodes.codes_release(h)
    assert grib.cfgrib_name(short) == cf_var


def test_variable_name_never_numeric_param() -> None:
    assert grib.variable_name({"mars.param": 167, "grib_repro.shortName": "2t"}) == "t2m"
    assert grib.variable_name({"mars.param": 167, "grib.parameter.shortName": "2t"}) == "t2m"
    assert grib.variable_name({"mars.param": 999, "grib_repro.paramId": 999}) == "paramId_999"


@pytest.mark.parametrize("sample", ["reduced_gg_pl_grib2", "reduced_gg_pl_96_grib2", "reduced_gg_pl_320_grib2"])
def test_gaussian_latitudes_match_eccodes(sample: str) -> None:
    h = eccodes.codes_grib_new_from_samples(sample)
    try:
        n = eccodes.codes_get(h, "N")
        expected = np.unique(eccodes.codes_get_array(h, "distinctLatitudes"))[::-1]
    finally:
        eccodes.codes_release(h)
    got = grib.gaussian_latitudes(n)
    assert got.shape == (2 * n,)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)


def test_gaussian_latitudes_refuse_bad_n() -> None:
    with pytest.raises(ValueError):
        grib.gaussian_latitudes(0)


def test_attributes_round_trip_to_paths() -> None:
    flat = {
        "grib_repro.units": "K",
        "grib_repro.name": "Temperature",
        "grib_repro.Ni": 16,
        "grib.statistics.max": 3.5,
        "mars.class": "od",
    }
    attrs, paths = grib.cf_attributes(flat)
    assert attrs["units"] == "K" and attrs["long_name"] == "Temperature"
    assert attrs["GRIB_Ni"] == 16 and attrs["GRIB_statistics.max"] == 3.5 and attrs["mars.class"] == "od"
    assert write_layout.entry_paths(attrs, paths) == flat
    assert write_layout.entry_paths(attrs, None) == flat  # without the record: by name


def test_level_order_as_cfgrib() -> None:
    assert grib.level_order("isobaricInhPa", [500.0, 1000.0, 850.0]) == [1000.0, 850.0, 500.0]
    assert grib.level_order("heightAboveGround", [10.0, 2.0]) == [2.0, 10.0]


def test_regular_ll_from_corners_without_area() -> None:
    keys = {
        "mars.grid": "regular_ll",
        "grib_repro.latitudeOfFirstGridPointInDegrees": 30.0,
        "grib_repro.latitudeOfLastGridPointInDegrees": 50.0,
        "grib_repro.longitudeOfFirstGridPointInDegrees": 350.0,
        "grib_repro.longitudeOfLastGridPointInDegrees": 14.5,
        "grib_repro.iScansNegatively": 0,
    }
    coords = grib.grid_coordinates(keys, (5, 8))
    assert coords is not None and coords.dims == ["latitude", "longitude"]
    np.testing.assert_array_equal(coords.coords["latitude"][1], [30.0, 35.0, 40.0, 45.0, 50.0])
    np.testing.assert_array_equal(coords.coords["longitude"][1], [-10.0, -6.5, -3.0, 0.5, 4.0, 7.5, 11.0, 14.5])


# ---------------------------------------------------------------------------------------------
# the converted files against cfgrib on the same GRIB messages
# ---------------------------------------------------------------------------------------------


def _assert_like_cfgrib(ours: xr.Dataset, ref: xr.Dataset) -> None:
    assert set(ours.data_vars) == set(ref.data_vars)
    for name, ref_var in ref.data_vars.items():
        var = ours[name]
        assert var.dims == ref_var.dims, name
        assert var.attrs["units"] == ref_var.attrs["units"]
        assert var.attrs["long_name"] == ref_var.attrs["long_name"]
        assert var.dtype == np.float64
        np.testing.assert_array_equal(var.values, ref_var.values)
    for cname, ref_coord in ref.coords.items():
        assert cname in ours.coords, cname
        coord = ours.coords[cname]
        assert coord.dims == ref_coord.dims, cname
        assert coord.dtype == ref_coord.dtype, cname
        if coord.dtype.kind == "f":
            np.testing.assert_allclose(coord.values, ref_coord.values, rtol=0, atol=1e-9, err_msg=cname)
        else:
            np.testing.assert_array_equal(coord.values, ref_coord.values, err_msg=cname)
        for attr in ("units", "standard_name", "long_name"):
            if attr in ref_coord.attrs and cname not in ("time", "step", "valid_time"):  # those are CF-decoded
                assert coord.attrs.get(attr) == ref_coord.attrs[attr], (cname, attr)
    assert set(ours.coords) == set(ref.coords)


@pytest.mark.parametrize("grouping", ["merge_all", "one_to_one"])
@pytest.mark.parametrize("case", list(CASES))
def test_opens_like_cfgrib(corpus: dict, case: str, grouping: str) -> None:
    gpath, tpath = corpus[case, grouping]
    with _cfgrib(gpath) as ref, _ours(tpath) as ours:
        _assert_like_cfgrib(ours, ref)


@pytest.mark.parametrize("grouping", ["merge_all", "one_to_one"])
def test_several_dates_like_cfgrib(tmp_path: Path, grouping: str) -> None:
    """Two base times x two steps: ``time`` and ``step`` dims, ``valid_time(time, step)``, as in cfgrib."""
    g = b"".join(
        gc.grib_file("regular_ll_sfc_grib2", [167, 151], [0, 6], date=d, time=t)
        for d, t in ((20260404, 0), (20260404, 1200))
    )
    gpath, tpath = gc.write_pair(tmp_path, "dates", g, grouping)
    with _cfgrib(gpath) as ref, _ours(tpath) as ours:
        assert ref["t2m"].dims[:2] == ("time", "step")
        _assert_like_cfgrib(ours, ref)


@pytest.mark.parametrize("numbers", [[1, 2, 3], [4]])
def test_ensemble_members_like_cfgrib(tmp_path: Path, numbers: list[int]) -> None:
    """Ensemble members: a ``number`` dim (or a scalar coordinate for one member), cfgrib's attributes."""
    g = gc.grib_file("regular_ll_pl_grib2", [130], [0, 6], [850, 500], numbers=numbers)
    gpath, tpath = gc.write_pair(tmp_path, "ens", g, "one_to_one")
    with _cfgrib(gpath) as ref, _ours(tpath) as ours:
        assert ("number" in ref["t"].dims) == (len(numbers) > 1)
        _assert_like_cfgrib(ours, ref)


def test_levels_as_cfgrib(corpus: dict) -> None:
    with _ours(corpus["ll_pressure", "merge_all"][1]) as ds:
        assert ds["isobaricInhPa"].values.tolist() == [1000.0, 850.0, 500.0]
        assert ds["isobaricInhPa"].attrs["units"] == "hPa"
        assert "level" not in ds.dims and "levelist" not in ds.dims
    with _ours(corpus["ll_height_dateline", "merge_all"][1]) as ds:
        assert ds["heightAboveGround"].ndim == 0 and float(ds["heightAboveGround"]) == 2.0
        assert ds["heightAboveGround"].attrs["units"] == "m"
    with _ours(corpus["gg_surface", "merge_all"][1]) as ds:
        assert ds["surface"].ndim == 0 and float(ds["surface"]) == 0.0


def test_no_grib_repro_dimension_and_few_attributes(corpus: dict) -> None:
    """Only the independent keys stack: 3 steps x 3 levels give 2 stacked dims, no holes."""
    with _ours(corpus["ll_pressure", "one_to_one"][1]) as ds:
        assert ds["t"].dims == ("step", "isobaricInhPa", "latitude", "longitude")
        assert "tensogram_missing_objects" not in ds["t"].attrs
        assert not any(k.startswith("grib_repro") for k in ds["t"].attrs)
        # keys that vary with step and level are not attributes
        assert "GRIB_level" not in ds["t"].attrs and "GRIB_stepRange" not in ds["t"].attrs


def test_netcdf_still_works(corpus: dict, tmp_path: Path) -> None:
    pytest.importorskip("h5netcdf")
    with _ours(corpus["gg_pressure", "merge_all"][1]) as ds:
        ds.to_netcdf(tmp_path / "out.nc", engine="h5netcdf")
        with xr.open_dataset(tmp_path / "out.nc", engine="h5netcdf") as back:
            xr.testing.assert_allclose(back.load(), ds.load())


def test_preserve_all_keys_same_dims(tmp_path: Path) -> None:
    g = gc.grib_file("regular_ll_pl_grib2", [130], [0, 6], [1000, 850])
    gpath, plain = gc.write_pair(tmp_path, "plain", g)
    _, full = gc.write_pair(tmp_path, "full", g, preserve_all_keys=True)
    with _ours(plain) as a, _ours(full) as b, _cfgrib(gpath) as ref:
        _assert_like_cfgrib(b, ref)
        assert a["t"].dims == b["t"].dims
        assert b["t"].attrs["GRIB_parameter.shortName"] == "t"
        # statistics differ per message: not attributes of the variable
        assert "GRIB_statistics.max" not in b["t"].attrs and "GRIB_statistics.avg" not in b["t"].attrs


# ---------------------------------------------------------------------------------------------
# point 6: both layouts, one Dataset; several converted files concatenated
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_layouts_give_the_same_dataset(corpus: dict, case: str) -> None:
    with _ours(corpus[case, "merge_all"][1]) as a, _ours(corpus[case, "one_to_one"][1]) as b:
        xr.testing.assert_identical(a.load(), b.load())


def test_concatenated_conversions_keep_every_parameter(tmp_path: Path) -> None:
    """2 m temperature, 10 m wind, land-sea mask and pressure levels in one file: all variables present.

    cfgrib (without filter_by_keys) drops some of them; each of ours equals cfgrib's opened with a filter.
    """
    parts = {
        "t2m": gc.grib_file("regular_ll_sfc_grib2", [167], [0, 6]),
        "u10": gc.grib_file("regular_ll_sfc_grib2", [165], [0, 6]),
        "lsm": gc.grib_file("regular_ll_sfc_grib2", [172], [0, 6]),
        "t": gc.grib_file("regular_ll_pl_grib2", [130, 133], [0, 6], [1000, 850]),
    }
    tgm = tmp_path / "all.tgm"
    layouts = ["merge_all", "one_to_one"] * 2
    tgm.write_bytes(b"".join(gc.convert(g, grouping) for g, grouping in zip(parts.values(), layouts, strict=True)))
    gpath = tmp_path / "all.grib2"
    gpath.write_bytes(b"".join(parts.values()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _cfgrib(gpath) as everything:
            dropped = {"t2m", "u10", "lsm", "t", "q"} - set(everything.data_vars)
    assert dropped, "cfgrib used to drop variables of this file; the comparison below is the point"
    with _ours(tgm) as ds:
        assert set(ds.data_vars) == {"t2m", "u10", "lsm", "t", "q"}
        for name, filt in (
            ("t2m", {"shortName": "2t"}),
            ("u10", {"shortName": "10u"}),
            ("lsm", {"shortName": "lsm"}),
            ("t", {"shortName": "t"}),
            ("q", {"shortName": "q"}),
        ):
            with _cfgrib(gpath, filter_by_keys=filt) as ref:
                level = ref[name].attrs["GRIB_typeOfLevel"]
                ours = ds[name]
                np.testing.assert_array_equal(ours.transpose(*ref[name].dims).values, ref[name].values)
                assert ours.attrs["units"] == ref[name].attrs["units"]
                if level in ref[name].dims:
                    np.testing.assert_array_equal(ds[level].values, ref[level].values)
                else:  # one level: not a dim; the variable's attributes say it (cfgrib: a scalar coordinate)
                    assert level not in ours.dims
                    assert ours.attrs["GRIB_level"] == float(ref[level])
                    assert ours.attrs["GRIB_typeOfLevel"] == level
        # 2 m and 10 m differ between variables: no shared heightAboveGround coordinate, no invented cells
        assert "heightAboveGround" not in ds.variables
        assert "tensogram_missing_objects" not in ds["t2m"].attrs


def _concatenation(tmp_path: Path, parts: list[tuple[int, list[int]]], steps: list[int]) -> tuple[Path, Path]:
    """Converted files of one parameter each, concatenated (as ``cat a.tgm b.tgm``), and their GRIB."""
    gribs = [gc.grib_file("regular_ll_pl_grib2", [param], steps, levels) for param, levels in parts]
    tgm, gpath = tmp_path / "cat.tgm", tmp_path / "cat.grib2"
    tgm.write_bytes(b"".join(gc.convert(g, "merge_all") for g in gribs))
    gpath.write_bytes(b"".join(gribs))
    return gpath, tgm


def test_concatenated_levels_keep_each_variable_at_its_shape(tmp_path: Path) -> None:
    """q at 150 hPa and t at 600 hPa: no invented level, no NaN; each variable says its level (issue 24)."""
    gpath, tgm = _concatenation(tmp_path, [(133, [150]), (130, [600])], [0, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _cfgrib(gpath) as everything:
            assert "t" not in everything.data_vars  # cfgrib's own Dataset of this file drops t
    with _ours(tgm) as ds:
        assert "isobaricInhPa" not in ds.variables  # differs between the variables: not a coordinate
        for name, level in (("q", 150.0), ("t", 600.0)):
            with _cfgrib(gpath, filter_by_keys={"shortName": name}) as ref:
                assert ds[name].dims == ref[name].dims == ("step", "latitude", "longitude")
                np.testing.assert_array_equal(ds[name].values, ref[name].values)
                assert float(ref["isobaricInhPa"]) == level
                assert ds[name].attrs["GRIB_level"] == level
                assert ds[name].attrs["GRIB_typeOfLevel"] == "isobaricInhPa"
                assert ds[name].attrs["units"] == ref[name].attrs["units"]


def test_concatenated_shared_level_stays_a_scalar_coordinate(tmp_path: Path) -> None:
    gpath, tgm = _concatenation(tmp_path, [(133, [500]), (130, [500])], [0])
    with _ours(tgm) as ds, _cfgrib(gpath) as ref:
        _assert_like_cfgrib(ds, ref)
        assert ds["isobaricInhPa"].dims == () and float(ds["isobaricInhPa"]) == 500.0


def test_concatenated_stacks_only_variables_with_several_levels(tmp_path: Path) -> None:
    gpath, tgm = _concatenation(tmp_path, [(133, [150]), (130, [850, 600])], [0])
    with _ours(tgm) as ds:
        with _cfgrib(gpath, filter_by_keys={"shortName": "t"}) as ref:
            assert ds["t"].dims == ref["t"].dims
            np.testing.assert_array_equal(ds["isobaricInhPa"].values, ref["isobaricInhPa"].values)
            np.testing.assert_array_equal(ds["t"].values, ref["t"].values)
        with _cfgrib(gpath, filter_by_keys={"shortName": "q"}) as ref:
            assert "isobaricInhPa" not in ds["q"].dims
            np.testing.assert_array_equal(ds["q"].values, ref["q"].values)
            assert ds["q"].attrs["GRIB_level"] == float(ref["isobaricInhPa"])


# ---------------------------------------------------------------------------------------------
# point 7: writing keeps the mars/grib_repro metadata
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["ll_pressure", "gg_surface", "ll_height_dateline"])
def test_written_file_keeps_converter_metadata(corpus: dict, case: str, tmp_path: Path) -> None:
    from xarray_tensogram import to_tensogram

    _, tpath = corpus[case, "merge_all"]
    out = tmp_path / "rewritten.tgm"
    with _ours(tpath) as ds:
        to_tensogram(ds, out)
        with _ours(out) as back:
            xr.testing.assert_identical(back.load(), ds.load())
    original, rewritten = _decoded(tpath), _decoded(out)
    assert rewritten.keys() == original.keys()
    for key, (entry, values) in original.items():
        new_entry, new_values = rewritten[key]
        assert new_entry["mars"] == entry["mars"], key
        assert new_entry["grib_repro"] == entry["grib_repro"], key
        np.testing.assert_array_equal(new_values, values)


def _decoded(path: Path) -> dict[tuple, tuple[dict, np.ndarray]]:
    """(base entry, values) per data object with the reference decoder, keyed by param/step/level."""
    out = {}
    data = path.read_bytes()
    for offset, length in tensogram.scan(data):
        msg = tensogram.decode(data[offset : offset + length])
        for entry, (_desc, values) in zip(msg.metadata.base, msg.objects, strict=False):
            if "grib_repro" not in entry:
                continue
            mars = entry["mars"]
            out[mars["param"], mars["step"], mars.get("levelist"), entry["grib_repro"].get("level")] = (entry, values)
    return out


# ---------------------------------------------------------------------------------------------
# the bundled sample and the README example
# ---------------------------------------------------------------------------------------------

SAMPLES = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples"


def test_bundled_sample_opens_like_cfgrib() -> None:
    with _cfgrib(SAMPLES / "grib_pl.grib2") as ref, _ours(SAMPLES / "grib_pl.tgm") as ours:
        _assert_like_cfgrib(ours, ref)


def test_docs_grib_example_runs() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "mapping.md").read_text()
    block = text.split("<!-- grib-example -->", 1)[1].split("<!-- /grib-example -->", 1)[0]
    code = block.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/mapping.md:grib-example", "exec"), {})


def test_written_concatenation_keeps_metadata_and_holes(tmp_path: Path) -> None:
    """2 m and 10 m fields each keep their level in their attributes; writing puts it back per object."""
    from xarray_tensogram import to_tensogram

    g = gc.grib_file("regular_ll_sfc_grib2", [167, 165], [0, 6])
    g += gc.grib_file("regular_ll_pl_grib2", [130], [0], [500])
    _, tpath = gc.write_pair(tmp_path, "mixed", g, "one_to_one")
    out = tmp_path / "rewritten.tgm"
    with _ours(tpath) as ds:
        assert ds["t2m"].dims == ("step", "latitude", "longitude")
        assert ds["t2m"].attrs["GRIB_level"] == 2 and ds["u10"].attrs["GRIB_level"] == 10
        to_tensogram(ds, out)
        with _ours(out) as back:
            xr.testing.assert_identical(back.load(), ds.load())
    original, rewritten = _decoded(tpath), _decoded(out)
    assert rewritten.keys() == original.keys()
    for key, (entry, values) in original.items():
        assert rewritten[key][0]["mars"] == entry["mars"], key
        assert rewritten[key][0]["grib_repro"] == entry["grib_repro"], key
        np.testing.assert_array_equal(rewritten[key][1], values)


@pytest.mark.parametrize(
    "bad",
    [
        {"grib_repro.N": 10**7},  # an N beyond any grid: no Newton iteration over ten million roots
        {"grib_repro.N": 0},
        {"grib_repro.N": 2.5},
        {"grib_repro.pl": [4, 4, -8, 8]},
        {"grib_repro.pl": [4, 4, 4]},  # does not add up to the object's size
        {"grib_repro.pl": "4,4,4,4"},
        {"grib_repro.N": 1},  # more rows than 2N
    ],
)
def test_malformed_reduced_grid_gives_no_coordinates(bad: dict[str, Any]) -> None:
    keys = {"mars.grid": "reduced_gg", "grib_repro.N": 2, "grib_repro.pl": [4, 4, 4, 4], **bad}
    coords = grib.grid_coordinates(keys, (16,))
    assert coords is not None and coords.dims == ["values"] and coords.coords == {}


def test_well_formed_reduced_grid_as_control() -> None:
    keys = {"mars.grid": "reduced_gg", "grib_repro.N": 2, "grib_repro.pl": [4, 4, 4, 4]}
    coords = grib.grid_coordinates(keys, (16,))
    assert coords is not None and set(coords.coords) == {"latitude", "longitude"}
    np.testing.assert_allclose(coords.coords["longitude"][1][:4], [0.0, 90.0, 180.0, 270.0])


def test_malformed_grib_metadata_still_opens(tmp_path: Path) -> None:
    """Odd grib_repro values (wrong area length, text level, N out of range) open with generic dims, no error."""
    values = np.arange(12.0).reshape(3, 4)
    base = [
        {
            "mars": {"param": 130, "step": 0, "grid": "regular_ll", "area": [1, 2, 3]},
            "grib_repro": {"shortName": "t", "typeOfLevel": 5, "level": "x", "units": "K", "name": "Temperature"},
        }
    ]
    path = tmp_path / "odd.tgm"
    path.write_bytes(
        bytes(tensogram.encode({"base": base}, [({"type": "ntensor", "shape": [3, 4], "dtype": "float64"}, values)]))
    )
    with _ours(path) as ds:
        assert list(ds.data_vars) == ["t"]
        assert ds["t"].attrs["units"] == "K"
        np.testing.assert_array_equal(ds["t"].values, values)


def test_cfgrib_style_filter_by_keys(tmp_path: Path) -> None:
    """``filter_by_keys`` with cfgrib's undotted GRIB keys selects what cfgrib selects."""
    g = gc.grib_file("regular_ll_sfc_grib2", [167, 172], [0, 6]) + gc.grib_file(
        "regular_ll_pl_grib2", [130], [0, 6], [1000, 850]
    )
    gpath, tpath = gc.write_pair(tmp_path, "mixed", g)
    for filt in (
        {"typeOfLevel": "isobaricInhPa"},
        {"shortName": "2t"},
        {"typeOfLevel": "surface"},
        {"typeOfLevel": "isobaricInhPa", "level": 850},
    ):
        with _cfgrib(gpath, filter_by_keys=filt) as ref, _ours(tpath, filter_by_keys=filt) as ours:
            _assert_like_cfgrib(ours, ref)


def test_rotated_grid_gets_cfgrib_dims(tmp_path: Path) -> None:
    """Projected grids: cfgrib's ``(y, x)`` dims and the same values (2-D latitude/longitude need ecCodes)."""
    g = gc.grib_file("rotated_ll_sfc_grib2", [167], [0, 6])
    gpath, tpath = gc.write_pair(tmp_path, "rotated", g)
    with _cfgrib(gpath) as ref, _ours(tpath) as ours:
        assert ours["t2m"].dims == ref["t2m"].dims == ("step", "y", "x")
        np.testing.assert_array_equal(ours["t2m"].values, ref["t2m"].values)
