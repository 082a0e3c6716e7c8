"""Format dispatch: the registry records, the one file-class protocol, and the backend's store pattern.

Oracles: the fixture manifests (names, magics, tile shapes written by the reference
tools) and the reference ``tensogram`` scanner (message count).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dask
import numpy as np
import pytest
import tensogram
import xarray as xr

from xarray_tensogram.backend import TensogramBackendEntrypoint, TensogramDataStore
from xarray_tensogram.errors import GroupSelectionError, UnsupportedOptionError
from xarray_tensogram.formats import registry
from xarray_tensogram.io import open_source

ENGINE = TensogramBackendEntrypoint
DATA = Path(__file__).parent / "data"
SAMPLE = Path(__file__).parent.parent / "xarray_tensogram" / "samples" / "forecast.tgm"
TET = DATA / "tetr" / "all_dtypes.tet"
ZT = DATA / "ztensor" / "v2" / "canonical_basic.zt"
TET_MANIFEST = {e["file"]: e for e in json.loads((DATA / "tetr" / "MANIFEST.json").read_text())["files"]}
ZT_MANIFEST = {e["path"]: e for e in json.loads((DATA / "ztensor" / "MANIFEST.json").read_text())["files"]}


# -- the registry --------------------------------------------------------------------------------------
def test_every_fixture_is_sniffed_by_its_magic_not_its_name(tmp_path: Path) -> None:
    expected = {SAMPLE: "tensogram", TET: "tetr", ZT: "ztensor"}
    for path, name in expected.items():
        renamed = tmp_path / f"{name}.bin"  # no known extension: only the magic can decide
        shutil.copyfile(path, renamed)
        with open_source(renamed) as src:
            spec = registry.sniff(src)
        assert spec is not None and spec.name == name
        assert path.read_bytes().startswith(spec.magics) and path.suffix in spec.extensions
    for entry in ZT_MANIFEST.values():  # every zTensor generation's magic, as the manifest records it
        text = entry["magic"]
        magic = bytes.fromhex(text) if " " in text else text.encode("ascii")
        assert registry.from_bytes(magic + b"rest") is registry.get("ztensor"), text


def test_registry_names_and_fallback() -> None:
    assert list(registry.formats()) == ["tensogram", "tetr", "ztensor"]
    assert registry.default().name == "tensogram"
    assert registry.from_extension("x/y.ZT").name == "ztensor"  # type: ignore[union-attr]  # None only for unknown extensions
    assert registry.from_extension("mesh.nc") is None and registry.from_extension(42) is None
    with pytest.raises(KeyError, match="unknown format 'grib'"):
        registry.get("grib")


# -- one protocol for the three file classes ---------------------------------------------------------
def test_file_classes_share_one_protocol() -> None:
    tet_names = [d["name"] for d in TET_MANIFEST["all_dtypes.tet"]["datasets"]]
    zt_names = [t["name"] for t in ZT_MANIFEST["v2/canonical_basic.zt"]["tensors"]]
    n_messages = len(tensogram.scan(SAMPLE.read_bytes()))
    cases = [(SAMPLE, n_messages, []), (TET, len(tet_names), tet_names), (ZT, len(zt_names), zt_names)]
    for path, n, names in cases:
        spec = registry.sniff(open_source(path))
        assert spec is not None
        with registry.open_file(spec, path) as f:
            assert len(f) == n and len(list(f)) == n and f.names == names
            assert f[0] is next(iter(f)) and f[-1] is list(f)[-1] and f[np.int64(0)] is f[0]
            for name in names:
                assert f[name].name == name
            with pytest.raises(KeyError, match=r"no .* named 'nope'"):
                f["nope"]
            with pytest.raises(IndexError):
                f[n]
            with pytest.raises(TypeError):
                f[True]
            assert f[1:] == list(f)[1:]  # slices, as the message list of a Tensogram file always allowed


# -- options that do not apply ------------------------------------------------------------------------
@pytest.mark.parametrize("path", [TET, ZT], ids=["tet", "zt"])
@pytest.mark.parametrize("option", [{"filter_by_keys": {"mars.param": "2t"}}, {"variable_key": "name"}])
def test_tensogram_only_options_raise_on_other_formats(path: Path, option: dict) -> None:
    (key,) = option
    with pytest.raises(UnsupportedOptionError, match=key) as info:
        xr.open_dataset(path, engine=ENGINE, **option)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnsupportedOptionError, match=key):
        xr.open_datatree(path, engine=ENGINE, **option)


def test_verify_hash_applies_to_ztensor_but_not_tetr() -> None:
    with pytest.raises(UnsupportedOptionError, match="verify_hash"):
        xr.open_dataset(TET, engine=ENGINE, verify_hash=True)
    with xr.open_dataset(ZT, engine=ENGINE, verify_hash=True) as ds:
        assert "a_f32" in ds
    # defaults and options every format honours stay accepted
    with xr.open_dataset(TET, engine=ENGINE, verify_hash=False, strict=True, filter_by_keys=None) as ds:
        assert set(ds.data_vars) == {TET_MANIFEST["all_dtypes.tet"]["datasets"][i]["name"] for i in range(10)}


@pytest.mark.parametrize("opener", [xr.open_dataset, xr.open_groups, xr.open_datatree])
def test_misspelt_keyword_raises(opener: object) -> None:
    with pytest.raises(TypeError, match="variabel_key"):
        opener(SAMPLE, engine=ENGINE, variabel_key="name")  # type: ignore[operator]  # the misspelt keyword is the test


# -- xarray's store pattern --------------------------------------------------------------------------
def test_preferred_chunks_come_through_xarray_decoding() -> None:
    entry = TET_MANIFEST["all_dtypes.tet"]
    for limit in ("1B", "128MiB"):  # the preferred chunk is one tile, whatever Dask's chunk size
        with dask.config.set({"array.chunk-size": limit}), xr.open_dataset(TET, engine=ENGINE) as ds:
            for d in entry["datasets"]:
                var = ds[d["name"]]
                expected = tuple(min(c, n) for c, n in zip(d["chunk_shape"], d["shape"], strict=True))
                assert tuple(var.encoding["preferred_chunks"][dim] for dim in var.dims) == expected
                assert var.encoding["tetr_chunk_shape"] == tuple(d["chunk_shape"])
        with xr.open_dataset(TET, engine=ENGINE, chunks={}) as ds:
            for d in entry["datasets"]:
                expected = tuple(min(c, n) for c, n in zip(d["chunk_shape"], d["shape"], strict=True))
                assert ds[d["name"]].data.chunksize == expected


def test_store_is_an_xarray_data_store() -> None:
    from xarray.backends.common import AbstractDataStore

    assert issubclass(TensogramDataStore, AbstractDataStore)


class _CloseSpy:
    """Counts the closes of every file the backend opens (wrapping the registry's open)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.closes: list[int] = []
        real = registry.open_file

        def spy(*args: object, **kwargs: object) -> object:
            f = real(*args, **kwargs)  # type: ignore[arg-type]  # passes on whatever the caller gave
            slot = len(self.closes)
            self.closes.append(0)
            inner = f.close

            def close() -> None:
                self.closes[slot] += 1
                inner()

            f.close = close  # type: ignore[method-assign]  # the spy wraps the instance's close
            return f

        monkeypatch.setattr(registry, "open_file", spy)


def _hetero(tmp_path: Path) -> Path:
    """Two messages on different grids whose axes are explicitly named alike (``y`` of sizes 3 and 2), a
    real conflict, so the file holds two groups (written by the reference encoder)."""
    msgs = []
    for ny, nx in ((3, 4), (2, 5)):
        a = np.arange(ny * nx, dtype=np.float32).reshape(ny, nx)
        desc = {
            "type": "ntensor",
            "shape": [ny, nx],
            "dtype": "float32",
            "byte_order": "little",
            "encoding": "none",
            "filter": "none",
            "compression": "none",
        }
        msgs.append(
            bytes(tensogram.encode({"version": 3, "base": [{"name": f"v{ny}", "dim_names": ["y", "x"]}]}, [(desc, a)]))
        )
    path = tmp_path / "two_grids.tgm"
    path.write_bytes(b"".join(msgs))
    return path


def test_tree_close_closes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _CloseSpy(monkeypatch)
    path = _hetero(tmp_path)
    with pytest.raises(GroupSelectionError):
        xr.open_dataset(path, engine=ENGINE)
    assert spy.closes == [1]  # a failed open closes what it opened
    tree = xr.open_datatree(path, engine=ENGINE)
    assert len(tree.children) == 2 and spy.closes[1] == 0
    values = {name: node.to_dataset()[name].values for node in tree.children.values() for name in node.data_vars}
    np.testing.assert_array_equal(values["v3"], np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(values["v2"], np.arange(10, dtype=np.float32).reshape(2, 5))
    tree.close()
    assert spy.closes[1] == 1


def test_open_groups_file_closes_with_the_last_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _CloseSpy(monkeypatch)
    groups = xr.open_groups(_hetero(tmp_path), engine=ENGINE)
    assert len(groups) == 3  # the root and two grids
    first, *rest = groups.values()
    first.close()
    first.close()  # closing twice does not count twice
    assert spy.closes == [0]
    for ds in rest:
        ds.close()
    assert spy.closes == [1]


def test_open_dataset_close_closes_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _CloseSpy(monkeypatch)
    for path in (SAMPLE, TET, ZT):
        ds = xr.open_dataset(path, engine=ENGINE)
        assert spy.closes[-1] == 0
        ds.close()
        assert spy.closes[-1] == 1


def test_group_option_of_open_groups_keeps_one_group(tmp_path: Path) -> None:
    path = _hetero(tmp_path)
    with xr.open_dataset(path, engine=ENGINE, group="grid_2x5") as one:
        expected = one.load()
    groups = xr.open_groups(path, engine=ENGINE, group="grid_2x5")
    try:
        assert list(groups) == ["/"]
        xr.testing.assert_identical(groups["/"].load(), expected)
    finally:
        for ds in groups.values():
            ds.close()
