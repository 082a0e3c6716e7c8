"""Tensogram mapping rules (issue 11) and hypercube planning from independent keys (issue 18 point 1).

Every file is built with the reference encoder (``tensogram.encode``, 0.24.0) and values are compared
with the reference decoder. Where a test states what the reference backend (``tensogram-xarray``
0.24.0) gives, that result was obtained by running it (in its own environment: it claims the same
engine name, so it cannot live in the test venv) on the same layout.
"""

from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest
import xarray as xr

tensogram = pytest.importorskip("tensogram")

from xarray_tensogram import io as xt_io  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.assemble.tensogram import TensogramMappingWarning  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.assemble.tensogram.hypercube import cell_limit  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.backend import TensogramBackendEntrypoint  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.errors import HypercubeError, XarrayTensogramError  # noqa: E402 - after the pytest.importorskip above

ENGINE = TensogramBackendEntrypoint
DATA = os.path.join(os.path.dirname(__file__), "data")


def _desc(a, **kw):
    d = {"type": "ntensor", "shape": list(np.shape(a)), "dtype": np.asarray(a).dtype.name}
    d.update(kw)
    return d


def _encode(base, arrays, extra=None, descs=None, **kw):
    meta = {"base": base}
    if extra is not None:
        meta.update(extra)
    descs = descs or [{}] * len(arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference warns about metadata placed in descriptors
        return bytes(tensogram.encode(meta, [(_desc(a, **d), a) for a, d in zip(arrays, descs, strict=False)], **kw))


def _decoded(msg):
    return [np.asarray(a) for _d, a in tensogram.decode(msg).objects]


def _write(path, msgs):
    path.write_bytes(b"".join(msgs))
    return path


def _open(src, **kw):
    return xr.open_dataset(src, engine=ENGINE, **kw)


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# 1. keys given next to a descriptor
# ---------------------------------------------------------------------------------------------


def test_descriptor_params_are_object_metadata(tmp_path):
    """Names, mars keys, units in descriptor params behave as in base[i]; where both have a key, base wins."""
    rng = _rng(1)
    t, q = rng.random((3, 4)), rng.random((3, 4))
    lat, lon = np.linspace(10, 0, 3), np.linspace(0, 30, 4)
    in_params = _encode(
        [{}, {"name": "q_base"}, {}, {}],
        [t, q, lat, lon],
        descs=[
            {"name": "temperature", "units": "K", "mars": {"class": "od", "levtype": "sfc"}},
            {"name": "q_params", "units": "kg/kg"},
            {"name": "latitude"},
            {"name": "longitude"},
        ],
    )
    in_base = _encode(
        [
            {"name": "temperature", "units": "K", "mars": {"class": "od", "levtype": "sfc"}},
            {"name": "q_base", "units": "kg/kg"},
            {"name": "latitude"},
            {"name": "longitude"},
        ],
        [t, q, lat, lon],
    )
    ref = _decoded(in_params)
    with _open(in_params) as a, _open(in_base) as b:
        assert set(a.data_vars) == set(b.data_vars) == {"temperature", "q_base"}  # base wins for q's name
        for name in ("temperature", "q_base"):
            assert a[name].dims == b[name].dims == ("latitude", "longitude")
            assert a[name].attrs == b[name].attrs
        assert a["temperature"].attrs["units"] == "K" and a["temperature"].attrs["mars.class"] == "od"
        assert a["q_base"].attrs["units"] == "kg/kg"
        np.testing.assert_array_equal(a["temperature"].values, ref[0])
        np.testing.assert_array_equal(a["latitude"].values, ref[2])


def test_descriptor_params_file_matches_reference_backend(tmp_path):
    """A file whose names sit in descriptor params: tensogram-xarray 0.24.0 gives
    {'temperature': ('latitude', 'longitude'), 'latitude': ('latitude',), 'longitude': ('longitude',)}."""
    rng = _rng(2)
    t, lat, lon = rng.random((3, 4)), np.linspace(0, 1, 3), np.linspace(0, 1, 4)
    msg = _encode(
        [{}, {}, {}],
        [t, lat, lon],
        descs=[
            {"name": "temperature", "units": "K", "mars": {"param": "t"}},
            {"name": "latitude"},
            {"name": "longitude"},
        ],
    )
    with _open(msg) as ds:
        assert {k: v.dims for k, v in ds.variables.items()} == {
            "temperature": ("latitude", "longitude"),
            "latitude": ("latitude",),
            "longitude": ("longitude",),
        }
        assert list(ds.data_vars) == ["temperature"]


def test_descriptor_params_mars_keys_stack_messages(tmp_path):
    rng = _rng(3)
    msgs = [
        _encode([{}], [a], descs=[{"mars": {"param": "2t", "step": s}}])
        for s, a in ((s, rng.random((2, 3)).astype(np.float32)) for s in (0, 6, 12))
    ]
    with _open(_write(tmp_path / "p.tgm", msgs)) as ds:
        assert ds["2t"].dims == ("step", "dim_0", "dim_1")
        np.testing.assert_array_equal(ds["step"].values, np.array([0, 6, 12]) * np.timedelta64(1, "h"))
        for i, m in enumerate(msgs):
            np.testing.assert_array_equal(ds["2t"][i].values, _decoded(m)[0])


# ---------------------------------------------------------------------------------------------
# 2. variable_key names data variables only;  3. coordinate names
# ---------------------------------------------------------------------------------------------


def test_variable_key_names_data_only_and_falls_back(tmp_path):
    rng = _rng(4)
    a, b, lat = rng.random(5), rng.random(5), np.arange(5.0)
    msg = _encode([{"name": "a", "short": "aa"}, {"name": "b"}, {"name": "latitude", "short": "LAT"}], [a, b, lat])
    with _open(msg, variable_key="short") as ds:
        assert set(ds.data_vars) == {"aa", "b"}  # b has no 'short': default chain
        assert "latitude" in ds.coords and ds["aa"].dims == ("latitude",)
        np.testing.assert_array_equal(ds["aa"].values, _decoded(msg)[0])


def test_variable_key_nobody_has_warns_with_existing_keys(tmp_path):
    msg = _encode([{"name": "a", "mars": {"param": "x"}}], [np.arange(3.0)])
    with pytest.warns(TensogramMappingWarning, match=r"'nokey'.*mars\.param"), _open(msg, variable_key="nokey") as ds:
        assert list(ds.data_vars) == ["a"]


def test_coordinate_names_case_insensitive_and_kept_as_written(tmp_path):
    rng = _rng(5)
    f, lat, lev, freq = rng.random((3, 4)), np.arange(3.0), np.arange(4.0), np.arange(2.0)
    msg = _encode([{"name": "f"}, {"name": "LAT"}, {"name": "Level"}, {"name": "frequency"}], [f, lat, lev, freq])
    with _open(msg) as ds:
        assert list(ds.data_vars) == ["f"]
        assert ds["f"].dims == ("LAT", "Level")
        assert set(ds.coords) == {"LAT", "Level", "frequency"}


# ---------------------------------------------------------------------------------------------
# 4. never drop or replace a coordinate silently
# ---------------------------------------------------------------------------------------------


def test_unused_coordinate_stays_on_its_own_dimension(tmp_path):
    rng = _rng(6)
    f, depth = rng.random((3, 4)), np.array([5.0, 10.0, 20.0, 50.0, 100.0])
    msg = _encode([{"name": "f"}, {"name": "depth"}], [f, depth])
    with _open(msg) as ds:
        assert ds["depth"].dims == ("depth",)
        np.testing.assert_array_equal(ds["depth"].values, _decoded(msg)[1])


def test_axis_hinted_like_a_coordinate_of_another_size_is_renamed(tmp_path):
    """The file's hint is wrong: the axis is renamed as the reference backend names it, with a warning
    giving both sizes; the same names from the user's dim_names stay an error."""
    rng = _rng(7)
    f, lat = rng.random((3, 4)), np.arange(7.0)
    msg = _encode([{"name": "f", "dim_names": ["latitude", "x"]}, {"name": "latitude"}], [f, lat])
    with pytest.warns(TensogramMappingWarning, match=r"'f'.*size 3.*'latitude'.*size 7.*'obj_0_dim_0'"):
        ds = _open(msg)
    with ds:
        assert ds["f"].dims == ("obj_0_dim_0", "x")
        assert ds["latitude"].dims == ("latitude",)
        np.testing.assert_array_equal(ds["f"].values, _decoded(msg)[0])
    with pytest.raises(XarrayTensogramError, match=r"size 3.*'latitude'.*size 7"):
        _open(msg, dim_names={"f": ["latitude", "x"]})


def test_coordinate_differing_between_messages_is_an_error(tmp_path):
    rng = _rng(8)
    msgs = [
        _encode([{"name": "f", "mars": {"step": s}}, {"name": "latitude"}], [rng.random(3), lat])
        for s, lat in ((0, np.arange(3.0)), (6, np.arange(3.0) + 0.5))
    ]
    path = _write(tmp_path / "c.tgm", msgs)
    with pytest.raises(HypercubeError, match=r"coordinate 'latitude' differs.*message 0.*message 1"):
        _open(path)
    with _open(path, message_index=1) as ds:  # each message alone opens
        np.testing.assert_array_equal(ds["latitude"].values, _decoded(msgs[1])[1])


def test_same_coordinate_in_every_message_opens(tmp_path):
    rng = _rng(9)
    lat = np.arange(3.0)
    msgs = [
        _encode([{"name": "f", "mars": {"step": s}}, {"name": "latitude"}], [rng.random(3), lat], hash="xxh3")
        for s in (0, 6)
    ]
    with _open(_write(tmp_path / "c.tgm", msgs)) as ds:
        assert ds["f"].dims == ("step", "latitude")


# ---------------------------------------------------------------------------------------------
# 5. the dim_names kwarg;  6. _extra_.dim_names as a map
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dim_names, pattern",
    [
        (["a"], r"dim_names has 1 entry \['a'\], but variable 'f' has 2 axes per object"),
        ({"f": ["a", "b", "c"]}, r"dim_names for 'f' has 3 entries.*'f' has 2 axes"),
        ({"nope": ["a", "b"]}, r"nope.*which the file does not hold"),
        (["a", "a"], r"duplicate name \(variable 'f' has 2 axes"),
        (["a", ""], r"empty name \(variable 'f' has 2 axes"),
    ],
)
def test_dim_names_kwarg_errors(dim_names, pattern):
    msg = _encode([{"name": "f"}], [np.zeros((2, 3))])
    with pytest.raises(XarrayTensogramError, match=pattern):
        _open(msg, dim_names=dim_names)


@pytest.mark.parametrize("hint", [["y", "y"], ["y", ""], ["y"]])
def test_malformed_object_hint_warns_and_opens(hint):
    a = np.arange(6.0).reshape(2, 3)
    msg = _encode([{"name": "f", "dim_names": hint}], [a])
    with pytest.warns(TensogramMappingWarning, match="dim_names"), _open(msg) as ds:
        assert ds["f"].dims == ("dim_0", "dim_1")
        np.testing.assert_array_equal(ds["f"].values, a)


def test_malformed_file_hint_warns_and_opens():
    msg = _encode([{"name": "f"}], [np.zeros((2, 3))], extra={"_extra_": {"dim_names": ["a", "a"]}})
    with pytest.warns(TensogramMappingWarning, match="dim_names"), _open(msg) as ds:
        assert ds["f"].dims == ("dim_0", "dim_1")


@pytest.mark.parametrize("hint", [{2: "y", 3: "x"}, {"2": "y", "3": "x"}])
def test_extra_dim_names_map_by_size(hint):
    msg = _encode(
        [{"name": "f"}, {"name": "g"}], [np.zeros((2, 3)), np.ones(3)], extra={"_extra_": {"dim_names": hint}}
    )
    with _open(msg) as ds:
        assert ds["f"].dims == ("y", "x") and ds["g"].dims == ("x",)


def test_explicit_hint_beats_coordinate_size():
    msg = _encode(
        [{"name": "f", "dim_names": ["row", "col"]}, {"name": "latitude"}], [np.zeros((3, 4)), np.arange(3.0)]
    )
    with _open(msg) as ds:
        assert ds["f"].dims == ("row", "col")
        assert ds["latitude"].dims == ("latitude",)  # kept, on its own dimension


# ---------------------------------------------------------------------------------------------
# 7. different shapes open as one Dataset
# ---------------------------------------------------------------------------------------------


def test_issue_66_layout_matches_reference_backend():
    """refl (time, y, x) next to count (time): tensogram-xarray 0.24.0 gives
    {'refl': ('time', 'y', 'x'), 'count': ('time',)} with no coordinates."""
    rng = _rng(10)
    refl, count = rng.random((4, 5, 6)).astype(np.float32), np.arange(4, dtype=np.int32)
    msg = _encode(
        [{"name": "refl", "dim_names": ["time", "y", "x"]}, {"name": "count", "dim_names": ["time"]}], [refl, count]
    )
    ref = _decoded(msg)
    with _open(msg) as ds:
        assert {k: v.dims for k, v in ds.variables.items()} == {"refl": ("time", "y", "x"), "count": ("time",)}
        np.testing.assert_array_equal(ds["refl"].values, ref[0])
        np.testing.assert_array_equal(ds["count"].values, ref[1])


def test_unnamed_clashing_axes_get_distinct_names_only_where_they_clash():
    rng = _rng(11)
    msg = _encode(
        [{"name": "a"}, {"name": "b"}, {"name": "latitude"}], [rng.random((4, 5)), rng.random((3, 5)), np.arange(5.0)]
    )
    with _open(msg) as ds:
        # as the reference backend names them (tensogram-xarray 0.24.0 gives exactly these)
        assert ds["a"].dims == ("obj_0_dim_0", "latitude")
        assert ds["b"].dims == ("obj_1_dim_0", "latitude")
        assert list(ds.coords) == ["latitude"]


def test_one_name_two_shapes_is_a_real_conflict():
    msgs = [
        _encode([{"name": "a", "mars": {"step": 0}}], [np.zeros((2, 3))]),
        _encode([{"name": "a", "mars": {"step": 6}}], [np.zeros((4, 3))]),
    ]
    with pytest.raises(XarrayTensogramError, match=r"grid_2x3.*grid_4x3"):
        _open(b"".join(msgs))


# ---------------------------------------------------------------------------------------------
# 8. message_index, merge_objects, range_threshold
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def steps_file(tmp_path_factory):
    rng = _rng(12)
    msgs = [_encode([{"name": "f", "mars": {"step": s}}], [rng.random((400, 8))]) for s in range(5)]
    return _write(tmp_path_factory.mktemp("steps") / "steps.tgm", msgs), msgs


@pytest.mark.parametrize("index, expected", [(2, [2]), (-1, [4]), ([0, 3], [0, 3]), (slice(1, 4), [1, 2, 3])])
def test_message_index(steps_file, index, expected):
    path, msgs = steps_file
    with _open(path, message_index=index) as ds:
        if len(expected) == 1:
            assert "step" not in ds["f"].dims and int(ds["step"].values / np.timedelta64(1, "h")) == expected[0]
            np.testing.assert_array_equal(ds["f"].values, _decoded(msgs[expected[0]])[0])
        else:
            np.testing.assert_array_equal(ds["step"].values, np.array(expected) * np.timedelta64(1, "h"))
            for i, m in enumerate(expected):
                np.testing.assert_array_equal(ds["f"][i].values, _decoded(msgs[m])[0])


def test_message_index_out_of_range(steps_file):
    with pytest.raises(XarrayTensogramError, match=r"message_index 5.*5 messages"):
        _open(steps_file[0], message_index=5)


def test_merge_objects_false_opens_one_message(steps_file):
    path, msgs = steps_file
    with _open(path, merge_objects=False) as ds:
        np.testing.assert_array_equal(ds["f"].values, _decoded(msgs[0])[0])
    with _open(path, merge_objects=False, message_index=3) as ds:
        np.testing.assert_array_equal(ds["f"].values, _decoded(msgs[3])[0])
    with pytest.raises(XarrayTensogramError, match="one message"):
        _open(path, merge_objects=False, message_index=[1, 2])


class _Spy:
    def __init__(self, monkeypatch):
        self.ranges = []
        for meth in ("_read", "read_array", "view"):
            orig = getattr(xt_io.LocalFileSource, meth)

            def wrapper(self_, offset, length, *a, _orig=orig, **k):
                self.ranges.append((offset, length))
                return _orig(self_, offset, length, *a, **k)

            monkeypatch.setattr(xt_io.LocalFileSource, meth, wrapper)


@pytest.mark.parametrize(
    "threshold, rows, partial", [(0.5, 40, True), (0.5, 300, False), (0, 40, False), (1, 300, True)]
)
def test_range_threshold_drives_partial_reads(steps_file, monkeypatch, threshold, rows, partial):
    """400-row raw objects (25.6 kB frames): a read of fewer than threshold * 400 rows reads only those
    rows (plus frame metadata); otherwise the whole payload is read once."""
    path, msgs = steps_file
    spy = _Spy(monkeypatch)
    with _open(path, range_threshold=threshold) as ds:
        spy.ranges.clear()
        got = ds["f"][2, :rows].values
        np.testing.assert_array_equal(got, _decoded(msgs[2])[0][:rows])
        largest = max(n for _o, n in spy.ranges)
        whole = 400 * 8 * 8
        assert (largest < whole) is partial, (largest, whole)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half"])
def test_range_threshold_out_of_range(steps_file, bad):
    with pytest.raises(XarrayTensogramError, match="range_threshold"):
        _open(steps_file[0], range_threshold=bad)


# ---------------------------------------------------------------------------------------------
# 9. identical objects;  global metadata keys
# ---------------------------------------------------------------------------------------------


def test_duplicate_objects_warn_and_stack_along_message(tmp_path):
    rng = _rng(13)
    msgs = [_encode([{"name": "f", "mars": {"step": 0}}], [rng.random(3)]) for _ in range(2)]
    path = _write(tmp_path / "dup.tgm", msgs)
    with pytest.warns(TensogramMappingWarning, match="duplicate objects.*'f'.*message 0.*message 1"), _open(path) as ds:
        assert ds["f"].dims == ("message", "dim_0")
        np.testing.assert_array_equal(ds["message"].values, [0, 1])
        for i, m in enumerate(msgs):
            np.testing.assert_array_equal(ds["f"].sel(message=i).values, _decoded(m)[0])
    with pytest.raises(HypercubeError, match="duplicate objects"):
        _open(path, strict=True)


def test_messages_differing_in_a_global_key_stack_along_it(tmp_path):
    rng = _rng(14)
    msgs = [
        _encode([{"name": "f"}], [rng.random(3)], extra={"version": 3, "run": r, "centre": "ecmf"}) for r in (7, 3, 5)
    ]
    with _open(_write(tmp_path / "run.tgm", msgs)) as ds:
        assert ds["f"].dims == ("run", "dim_0")
        np.testing.assert_array_equal(ds["run"].values, [3, 5, 7])
        for m, r in zip(msgs, (7, 3, 5), strict=False):
            np.testing.assert_array_equal(ds["f"].sel(run=r).values, _decoded(m)[0])
        assert ds.attrs["centre"] == "ecmf" and "run" not in ds.attrs
        assert not any("reserved" in d for d in ds.dims)  # _reserved_ (uuid, time) differs per message


# ---------------------------------------------------------------------------------------------
# 10. filters and options that cannot apply
# ---------------------------------------------------------------------------------------------


def test_filter_matching_nothing_lists_values(steps_file):
    with pytest.raises(XarrayTensogramError, match=r"'mars.step'=99.*0, 1, 2, 3, 4"):
        _open(steps_file[0], filter_by_keys={"mars.step": 99})
    with pytest.raises(XarrayTensogramError, match="no object has this key"):
        _open(steps_file[0], filter_by_keys={"mars.nothing": 1})


@pytest.mark.parametrize(
    "option",
    [
        {"message_index": 0},
        {"merge_objects": False},
        {"range_threshold": 0.2},
        {"variable_key": "name"},
        {"filter_by_keys": {"a": 1}},
    ],
)
@pytest.mark.parametrize("sample", ["tetr/sample.tet", "ztensor/v2/*.zt"])
def test_tensogram_options_on_other_formats_are_errors(option, sample):
    path = sorted(glob.glob(os.path.join(DATA, sample)))[0]
    with pytest.raises(ValueError, match=next(iter(option))):
        _open(path, **option)


# ---------------------------------------------------------------------------------------------
# issue 18 point 1: dimensions from independent keys only
# ---------------------------------------------------------------------------------------------


def _grib_like(steps, levels, shape=(3, 4), seed=15):
    """One message per (step, level) as the GRIB converter writes them: mars keys plus grib_repro keys
    that vary together with step and level."""
    rng = _rng(seed)
    msgs = []
    for s in steps:
        for lev in levels:
            repro = {
                "shortName": "t",
                "level": lev,
                "topLevel": lev,
                "bottomLevel": lev,
                "stepRange": str(s),
                "endStep": s,
                "startStep": s,
                "validityTime": (s * 100) % 2400,
                "units": "K",
            }
            mars = {
                "class": "od",
                "date": 20260404,
                "time": 0,
                "step": s,
                "levtype": "pl",
                "levelist": lev,
                "param": 130,
            }
            msgs.append(_encode([{"mars": mars, "grib_repro": repro}], [rng.random(shape)]))
    return msgs


def test_grib_repro_keys_never_become_dimensions(tmp_path):
    steps, levels = (0, 6, 12), (500, 850)
    msgs = _grib_like(steps, levels)
    with _open(_write(tmp_path / "g.tgm", msgs)) as ds:
        # GRIB-derived objects are named as cfgrib names them (issue 18 point 3): shortName 't'
        assert ds["t"].dims == ("step", "level", "dim_0", "dim_1")
        assert "tensogram_missing_objects" not in ds["t"].attrs
        np.testing.assert_array_equal(ds["level"].values, [500, 850])
        assert not any(str(d).startswith("grib") for d in ds.dims)
        assert ds["t"].attrs["units"] == "K"  # constant grib_repro key: an attribute
        for i, m in enumerate(msgs):
            s, lev = steps[i // 2], levels[i % 2]
            np.testing.assert_array_equal(ds["t"].sel(step=np.timedelta64(s, "h"), level=lev).values, _decoded(m)[0])


def test_dependent_keys_in_any_file_are_coordinates_not_dims(tmp_path):
    rng = _rng(16)
    msgs = [
        _encode([{"name": "f", "height": h, "label": f"h{h}", "pressure_hpa": p}], [rng.random(2)])
        for h, p in ((10, 1000.0), (100, 990.0), (1000, 900.0))
    ]
    with _open(_write(tmp_path / "dep.tgm", msgs)) as ds:
        assert ds["f"].dims == ("height", "dim_0")
        assert ds["label"].dims == ("height",) and list(ds["label"].values) == ["h10", "h100", "h1000"]
        np.testing.assert_array_equal(ds["pressure_hpa"].values, [1000.0, 990.0, 900.0])


def test_24_steps_by_6_levels_opens(tmp_path):
    msgs = _grib_like(range(0, 144, 6), (1000, 925, 850, 700, 500, 300), shape=(2, 2))
    with _open(_write(tmp_path / "big.tgm", msgs)) as ds:
        assert ds["t"].shape == (24, 6, 2, 2)
        np.testing.assert_array_equal(
            ds["t"].sel(step=np.timedelta64(138, "h"), level=300).values, _decoded(msgs[-1])[0]
        )


def test_plan_far_larger_than_the_objects_is_refused(tmp_path):
    """200 objects on a staircase of two keys: a (100 x 200) cube would be 99 % holes."""
    n = 200
    base = [{"name": "f", "a": i // 2, "b": i} for i in range(n)]
    msg = _encode(base, [np.full(1, i, dtype=np.float32) for i in range(n)])
    assert 100 * n > cell_limit(n)
    with pytest.raises(HypercubeError, match=r"\ba\b.*100 values.*\bb\b.*200 values"):
        _open(msg)


def test_docs_mapping_example_runs(tmp_path, monkeypatch):
    """The mapping page's mixed-shape example runs as written (only this package, no reference encoder)."""
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "docs", "mapping.md"), encoding="utf-8") as f:
        readme = f.read()
    block = readme.split("A small file with objects of different shapes", 1)[1].split("```python\n", 1)[1]
    code = block.split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/mapping.md", "exec"), {"__name__": "readme"})
