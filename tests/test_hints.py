"""Files whose own dim_names hints are wrong still open (issue 24), as the reference backend opens them.

The expected names are what ``tensogram-xarray`` 0.24.0 (the reference backend) gives for the same
files: a hinted axis that clashes is renamed ``obj_<object>_dim_<axis>`` with a warning, and so are
generated names that clash. The user's own ``dim_names`` stays an error.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

tensogram = pytest.importorskip("tensogram")

from xarray_tensogram.errors import (  # noqa: E402 - after the importorskip above
    DimensionNameError,
    GroupSelectionError,
    TensogramMappingWarning,
)


def _write(path: Path, entries: list[dict[str, Any]], arrays: list[np.ndarray]) -> Path:
    objs = [({"type": "ntensor", "shape": list(a.shape), "dtype": str(a.dtype)}, a) for a in arrays]
    path.write_bytes(tensogram.encode({"base": entries}, objs))
    return path


def test_hinted_axes_clashing_with_each_other_are_renamed(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.random((3, 4)), rng.random((3, 4))
    path = _write(
        tmp_path / "h.tgm", [{"name": "a", "dim_names": ["x", "y"]}, {"name": "b", "dim_names": ["y", "x"]}], [a, b]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(path, engine="tensogram")
    texts = sorted(str(w.message) for w in caught if issubclass(w.category, TensogramMappingWarning))
    assert len(texts) == 2 and "h.tgm" in texts[0]
    assert "sizes 3 or 4 'x'" in texts[0] and "sizes 3 or 4 'y'" in texts[1]
    with ds:
        assert ds["a"].dims == ("obj_0_dim_0", "obj_0_dim_1")
        assert ds["b"].dims == ("obj_1_dim_0", "obj_1_dim_1")
        np.testing.assert_array_equal(ds["b"].values, b)
    with pytest.raises(GroupSelectionError, match=r"'x' \(\[3, 4\]\)"):
        xr.open_dataset(path, engine="tensogram", dim_names={"a": ["x", "y"], "b": ["y", "x"]})


def test_clashing_generated_names_follow_the_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.random((4, 5)), rng.random((3, 5)), rng.random((4, 5))]
    path = _write(tmp_path / "g.tgm", [{"name": "a"}, {"name": "b"}, {"name": "c"}], arrays)
    with xr.open_dataset(path, engine="tensogram") as ds:
        # tensogram-xarray 0.24.0 on this file: a (obj_0_dim_0, dim_1), b (obj_1_dim_0, dim_1), c (obj_2_dim_0, dim_1)
        assert {v: ds[v].dims for v in ds.data_vars} == {
            "a": ("obj_0_dim_0", "dim_1"),
            "b": ("obj_1_dim_0", "dim_1"),
            "c": ("obj_2_dim_0", "dim_1"),
        }
        for v, arr in zip("abc", arrays, strict=True):
            np.testing.assert_array_equal(ds[v].values, arr)


def test_wrong_length_dim_names_counts_and_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "w.tgm", [{"name": "a"}], [np.zeros((2, 3, 4))])
    with pytest.raises(DimensionNameError, match=r"w\.tgm.*2 entries.*'a' has 3 axes"):
        xr.open_dataset(path, engine="tensogram", dim_names=["x", "y"])
    with pytest.raises(DimensionNameError, match=r"w\.tgm.*1 entry.*'a' has 3 axes"):
        xr.open_dataset(path, engine="tensogram", dim_names={"a": ["x"]})


def test_object_local_names_of_different_messages_do_not_clash(tmp_path: Path) -> None:
    """Object 0 of two messages, two sizes: the second name gets a suffix instead of a size conflict."""
    rng = np.random.default_rng(3)
    a, b = rng.random((6, 2)), rng.random((8, 2))
    enc = [({"type": "ntensor", "shape": list(x.shape), "dtype": "float64"}, x) for x in (a, b)]
    path = tmp_path / "m.tgm"
    path.write_bytes(
        tensogram.encode({"base": [{"name": "a"}]}, [enc[0]]) + tensogram.encode({"base": [{"name": "b"}]}, [enc[1]])
    )
    with xr.open_dataset(path, engine="tensogram") as ds:
        assert ds["a"].dims[0] == "obj_0_dim_0" and ds["b"].dims[0] == "obj_0_dim_0_1"
        np.testing.assert_array_equal(ds["b"].values, b)


# -- one hint-conflict rule in every path (the reference backend's TestHintedNameConflict and
#    TestMergePathDimResolution, checked with warnings where it checks log records) ----------------------
PATHS = [
    pytest.param(lambda p: xr.open_dataset(p, engine="tensogram"), id="merge"),
    pytest.param(lambda p: xr.open_dataset(p, engine="tensogram", merge_objects=False), id="one-message"),
    pytest.param(lambda p: xr.open_datatree(p, engine="tensogram").to_dataset(), id="datatree"),
    pytest.param(lambda p: xr.open_datatree(p, engine="tensogram", merge_objects=False).to_dataset(), id="tree-one"),
    pytest.param(lambda p: xr.open_groups(p, engine="tensogram")["/"], id="groups"),
]


def _opened(open_: Any, path: Path) -> tuple[xr.Dataset, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = open_(path)
    return ds, [str(w.message) for w in caught if issubclass(w.category, TensogramMappingWarning)]


@pytest.mark.parametrize("merge_objects", [True, False])
def test_hinted_names_that_only_disagree_among_themselves_are_groups(tmp_path: Path, merge_objects: bool) -> None:
    """Two objects hinted ``time`` at sizes 4 and 7, no coordinate: two grids, each keeping the file's
    names (the reference backend renames both instead; a deliberate difference: nothing says which size
    is wrong, so neither name is dropped)."""
    a, b = np.arange(4.0), np.arange(7.0)
    path = _write(
        tmp_path / "t.tgm", [{"name": "a", "dim_names": ["time"]}, {"name": "b", "dim_names": ["time"]}], [a, b]
    )
    with pytest.raises(GroupSelectionError, match="grid_4, grid_7"):
        xr.open_dataset(path, engine="tensogram", merge_objects=merge_objects)
    tree, said = _opened(lambda p: xr.open_datatree(p, engine="tensogram", merge_objects=merge_objects), path)
    with tree:
        assert tree["grid_4"]["a"].dims == ("time",) and tree["grid_7"]["b"].dims == ("time",)
        np.testing.assert_array_equal(tree["grid_7"]["b"].values, b)
    assert not said


@pytest.mark.parametrize("open_", PATHS)
def test_a_hint_clashing_with_a_coordinate_renames_only_that_axis(tmp_path: Path, open_: Any) -> None:
    lat, legit, wrong = np.linspace(-90, 90, 5), np.arange(35.0).reshape(5, 7), np.ones(7)
    entries = [{"name": "latitude"}, {"name": "legit"}, {"name": "wrong", "dim_names": ["latitude"]}]
    ds, said = _opened(open_, _write(tmp_path / "c.tgm", entries, [lat, legit, wrong]))
    with ds:
        assert ds["legit"].dims[0] == "latitude" and ds["wrong"].dims == ("obj_2_dim_0",)
        assert ds["latitude"].shape == (5,)
        np.testing.assert_array_equal(ds["legit"].sel(latitude=lat[2]).values, legit[2])
    assert len(said) == 1 and "'wrong' axis 0 (size 7)" in said[0]
    assert "conflicts with coord 'latitude' of size 5" in said[0]


@pytest.mark.parametrize("where", ["entry", "extra"])
def test_hints_that_differ_between_messages_are_ignored_with_a_warning(tmp_path: Path, where: str) -> None:
    """Message 0 says (x, y), message 1 (p, q): the file contradicts itself, so neither is used."""
    arrays = [np.ones((3, 4)), np.full((3, 4), 2.0)]
    parts = []
    for names, arr in zip([["x", "y"], ["p", "q"]], arrays, strict=True):
        entry = {"name": "temp", "step": len(parts)}
        meta = (
            {"base": [{**entry, "dim_names": names}]}
            if where == "entry"
            else {"base": [entry], "_extra_": {"dim_names": names}}
        )
        parts.append(tensogram.encode(meta, [({"type": "ntensor", "shape": [3, 4], "dtype": "float64"}, arr)]))
    path = tmp_path / "m.tgm"
    path.write_bytes(b"".join(parts))
    ds, said = _opened(PATHS[0].values[0], path)
    with ds:
        assert ds["temp"].dims == ("step", "dim_0", "dim_1")
        np.testing.assert_array_equal(ds["temp"].values, np.stack(arrays))
    what = "per-object dim_names of 'temp'" if where == "entry" else "_extra_.dim_names"
    assert len(said) == 1 and f"inconsistent {what} between messages" in said[0] and "['p', 'q']" in said[0]
