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
    with pytest.raises(DimensionNameError, match=r"w\.tgm.*'a'.*2 entries for 3 axes"):
        xr.open_dataset(path, engine="tensogram", dim_names=["x", "y"])
    with pytest.raises(DimensionNameError, match=r"w\.tgm.*'a'.*1 entry for 3 axes"):
        xr.open_dataset(path, engine="tensogram", dim_names={"a": ["x"]})
