"""Every variable the virtual parsers do not reference carries a declared reason that docs/virtual.md lists
(issue 26): the bundled samples and files written by our three writers are referenced throughout, but for
coordinates the file holds no bytes of and variables whose stored form Zarr cannot express.

What is stored where comes from the files themselves (which variables are data, which dims a writer was
given in another order than its file's); the reasons are the parsers' own report, checked against the docs.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram.byte_layout import UNREFERENCED

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"

#: reasons a coordinate may be inlined for: it has no chunk of its own in the file
_NO_BYTES = {"coordinate", "no-storage"}


def _documented_reasons() -> list[str]:
    text = (ROOT / "docs" / "virtual.md").read_text()
    start, end = text.index("<!-- unreferenced-reasons:start -->"), text.index("<!-- unreferenced-reasons:end -->")
    return re.findall(r"^\s*- `([\w-]+)`:", text[start:end], re.M)


def test_the_docs_list_exactly_the_reasons_the_code_gives() -> None:
    documented = _documented_reasons()
    assert len(documented) == len(set(documented))
    assert set(documented) == set(UNREFERENCED)


def test_an_undeclared_reason_is_refused() -> None:
    from xarray_tensogram.byte_layout import Unreferenced

    with pytest.raises(ValueError, match="UNREFERENCED"):
        Unreferenced("because")


def test_the_spec_kept_for_the_parsers_does_not_reach_the_user() -> None:
    spec_key = "xarray_tensogram_spec"  # where earlier releases kept a raw variable's spec
    for name in ("forecast.tgm", "sample.tet", "sample.zt"):
        with xr.open_dataset(xt.sample_path(name), engine="tensogram") as ds:
            assert all(spec_key not in v.encoding for v in ds.variables.values())
            assert any("preferred_chunks" in v.encoding for v in ds.variables.values())


# -- the parsers' report, on real files -----------------------------------------------------------------
_needs_virtual = pytest.mark.skipif(
    importlib.util.find_spec("virtualizarr") is None, reason="the virtual parsers need the 'virtual' extra"
)
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification"),
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
    pytest.mark.filterwarnings("ignore:.*future.infer_string"),
]


def _store(path: Path) -> Any:
    from xarray_tensogram.virtual.parsers import parser_for
    from xarray_tensogram.virtual.refs import local_registry

    return parser_for(path)(path.resolve().as_uri(), local_registry())


def _check(path: Path, inlined_data: dict[str, str] | None = None) -> None:
    """Each variable is referenced or inlined with a declared reason; data variables are referenced but for
    ``inlined_data`` (name -> the reason expected from how the file stores it)."""
    store = _store(path)
    reasons = store.inline_reasons
    vds = store.to_virtual_dataset()
    referenced = {str(n) for n, v in vds.variables.items() if type(v.data).__name__ == "ManifestArray"}
    assert set(reasons) == set(store.inline_variables)
    assert not referenced & set(reasons)
    with xr.open_dataset(path, engine="tensogram") as ds:
        assert set(map(str, ds.variables)) == referenced | set(reasons), path.name
        assert set(reasons.values()) <= set(UNREFERENCED)
        data = {str(n): reasons[str(n)] for n in ds.data_vars if str(n) in reasons}
        assert data == (inlined_data or {}), path.name
        for name in ds.coords:
            assert reasons.get(str(name), "coordinate") in _NO_BYTES, (path.name, name)
            if ds[name].dims == (name,):
                assert reasons[str(name)] == "coordinate"


@_needs_virtual
@pytest.mark.parametrize("name", ["era_pl.tgm", "forecast.tgm", "grib_pl.tgm", "sample.tet", "sample.zt"])
def test_bundled_samples(name: str) -> None:
    _check(Path(xt.sample_path(name)))


def _forecast() -> xr.Dataset:
    rng = np.random.default_rng(3)
    return xr.Dataset(
        {
            "t": (("time", "level", "y", "x"), rng.normal(280, 5, (2, 3, 4, 5)).astype("f4"), {"units": "K"}),
            "q": (("y", "x", "level"), rng.integers(0, 900, (4, 5, 3)).astype("i2")),
            "u": (("time", "y", "x"), rng.normal(0, 9, (2, 4, 5))),
        },
        coords={
            "time": np.array(["2024-01-01T00", "2024-01-01T12"], dtype="M8[ns]"),
            "level": [1000, 500, 850],
            "y": np.arange(4.0),
            "x": np.arange(5.0),
            "lat": (("y", "x"), rng.normal(45, 1, (4, 5))),
        },
    )


@_needs_virtual
@pytest.mark.parametrize(
    ("case", "select", "encoding"),
    [
        ("plain", {}, {}),
        ("packed", {}, {"t": {"encoding": "simple_packing", "bits_per_value": 16}, "u": {"compression": "lz4"}}),
        ("one-time", {"time": [1]}, {"t": {"compression": "zstd"}}),
    ],
)
def test_files_written_by_to_tensogram(
    case: str, select: dict[str, list[int]], encoding: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / f"{case}.tgm"
    xt.to_tensogram(_forecast().isel(select), path, message_dims=["time", "level"], encoding=encoding)
    # q was given as (y, x, level); the file stacks its messages first: reading it back is a transpose
    _check(path, {"q": "transposed"})


@_needs_virtual
def test_files_written_by_to_tetr_and_to_ztensor(tmp_path: Path) -> None:
    ds = _forecast().drop_vars("time")
    xt.to_tetr(ds, tmp_path / "w.tet", chunks={"y": 3, "x": 2}, compression="zstd")
    _check(tmp_path / "w.tet")
    xt.to_ztensor(ds.drop_vars(["level", "y", "x"]), tmp_path / "w.zt", compression="zstd")
    _check(tmp_path / "w.zt")


@_needs_virtual
def test_a_sparse_tensor_is_inlined_for_its_layout() -> None:
    path = DATA / "ztensor" / "v1" / "sparse.zt"
    reasons = _store(path).inline_reasons
    with xr.open_dataset(path, engine="tensogram") as ds:
        assert set(map(str, ds.data_vars)) <= set(reasons)
    assert set(reasons.values()) == {"layout"}
