"""The virtual parsers reference the bytes of every variable whose codecs Zarr can express (issue 26), the
bundled samples and files written by our writers included: a leading length-1 message dim, a dtype cast
after decoding (float32 or int16 written through simple_packing), messages written in another order and
dims written in another order are transforms of the storage spec, not wrappers that hide it.

The oracle is the backend's own reading (checked against the reference implementations elsewhere); the
reader on the other side is kerchunk's xarray engine, which knows nothing of this package but its codecs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt

pytest.importorskip("virtualizarr")
pytest.importorskip("kerchunk")

from test_virtual import assert_same, open_refs, parse
from xarray_tensogram.virtual import TensogramParser, TetrParser, ZTensorParser, write_refs

PARSERS = {".tgm": TensogramParser, ".tet": TetrParser, ".zt": ZTensorParser}

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification"),
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
    pytest.mark.filterwarnings("ignore:.*future.infer_string"),
]


def _referenced(vds: xr.Dataset) -> set[str]:
    return {str(n) for n, v in vds.variables.items() if type(v.data).__name__ == "ManifestArray"}


def _check(path: Path, tmp_path: Path, inlined: frozenset[str] = frozenset()) -> None:
    """Every data variable but ``inlined`` is referenced, and kerchunk reads back what the backend reads."""
    vds, left_out = parse(path, PARSERS[path.suffix]())
    assert not left_out
    with xr.open_dataset(path, engine="tensogram") as expected:
        assert not inlined & _referenced(vds)
        missing = set(map(str, expected.data_vars)) - _referenced(vds) - inlined
        assert not missing, f"{path.name}: inlined instead of referenced: {sorted(missing)}"
        out = tmp_path / (path.stem + ".json")
        write_refs(vds, out)
        assert_same(open_refs(str(out)), expected)


@pytest.mark.parametrize("name", ["era_pl.tgm", "forecast.tgm", "grib_pl.tgm", "sample.tet", "sample.zt"])
def test_bundled_samples_are_referenced(name: str, tmp_path: Path) -> None:
    _check(Path(xt.sample_path(name)), tmp_path)


def _forecast() -> xr.Dataset:
    rng = np.random.default_rng(7)
    return xr.Dataset(
        {
            "t": (("time", "level", "y", "x"), rng.normal(280, 5, (2, 3, 4, 5)).astype("f4"), {"units": "K"}),
            "q": (("y", "x", "level"), rng.integers(0, 900, (4, 5, 3)).astype("i2"), {"units": "1"}),
            "n": (("time", "level", "y", "x"), rng.integers(-900, 900, (2, 3, 4, 5)).astype("i2")),
        },
        coords={
            "time": np.array(["2024-01-01T00", "2024-01-01T12"], dtype="M8[ns]"),
            "level": [1000, 500, 850],  # not sorted: the reader sorts, the written order is restored
            "y": np.arange(4.0),
            "x": np.arange(5.0),
        },
    )


@pytest.mark.parametrize(
    ("case", "select", "encoding"),
    [
        ("plain", {}, {}),
        # float32 and int16 through float64-only simple_packing: a cast after decoding
        (
            "packed",
            {},
            {
                "t": {"encoding": "simple_packing", "bits_per_value": 16},
                "q": {"encoding": "simple_packing"},
                "n": {"encoding": "simple_packing", "bits_per_value": 12},
            },
        ),
        # a message dim of length 1: a leading axis the reader does not make by itself
        ("one-time", {"time": [1]}, {"t": {"compression": "zstd"}}),
        ("one-time-packed", {"time": [0]}, {"t": {"encoding": "simple_packing"}}),
    ],
)
def test_files_written_by_to_tensogram_are_referenced(
    case: str, select: dict[str, list[int]], encoding: dict[str, dict[str, object]], tmp_path: Path
) -> None:
    path = tmp_path / f"{case}.tgm"
    xt.to_tensogram(_forecast().isel(select), path, message_dims=["time", "level"], encoding=encoding)
    with xr.open_dataset(path, engine="tensogram") as back:
        assert back["q"].dims == ("y", "x", "level") and back["t"].dtype == np.float32  # the transforms at work
        assert back["n"].dtype == np.int16
    # q's dims were written in another order than the stacked-first one the file holds: Zarr v2 (kerchunk)
    # has no transpose codec, so it is inlined (docs/virtual.md)
    _check(path, tmp_path, inlined=frozenset({"q"}))


def test_files_written_by_to_tetr_and_to_ztensor_are_referenced(tmp_path: Path) -> None:
    ds = _forecast().drop_vars("time")
    xt.to_tetr(ds, tmp_path / "w.tet", chunks={"y": 2, "x": 3}, compression="zstd")
    _check(tmp_path / "w.tet", tmp_path)
    xt.to_ztensor(ds.drop_vars(["level", "y", "x"]), tmp_path / "w.zt", compression="zstd")
    _check(tmp_path / "w.zt", tmp_path)
