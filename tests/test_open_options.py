"""The open options as a user meets them: typos, options of another format, ``dim_names``, and the
data store behind ``open_dataset`` (coordinate roles kept, no process-wide switches, one open)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram import errors
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.cli import main
from xarray_tensogram.io import local

TGM, TET, ZT = (xt.sample_path(n) for n in ("era_pl.tgm", "sample.tet", "sample.zt"))


def test_a_misspelt_option_names_the_file_and_the_closest_option() -> None:
    with pytest.raises(errors.UnknownOptionError) as info:
        xr.open_dataset(TGM, engine="tensogram", filter_by_key={"mars.levelist": 500})
    text = str(info.value)
    assert TGM in text and "'filter_by_key' (did you mean 'filter_by_keys'?)" in text
    assert isinstance(info.value, TypeError)  # what Python would have raised, for callers that catch it


def test_a_misspelt_option_of_open_datatree() -> None:
    with pytest.raises(errors.UnknownOptionError, match=r"'dimnames' \(did you mean 'dim_names'\?\)"):
        xr.open_datatree(TET, engine="tensogram", dimnames=["a"])


def test_a_misspelt_option_of_a_virtual_parser() -> None:
    pytest.importorskip("numcodecs", reason="the virtual parsers need the 'virtual' extra")
    from xarray_tensogram.virtual.parsers import TensogramParser

    with pytest.raises(errors.UnknownOptionError, match=r"TensogramParser.*did you mean 'message_index'"):
        TensogramParser(message_indx=0)
    with pytest.raises(errors.UnknownOptionError, match="'decode_times'"):  # the parsers do no CF decoding
        TensogramParser(decode_times=False)


@pytest.mark.parametrize(("path", "option"), [(ZT, {"variable_key": "name"}), (TET, {"verify_hash": True})])
def test_an_option_of_another_format_names_the_file_and_what_to_do(path: str, option: dict[str, Any]) -> None:
    with pytest.raises(errors.UnsupportedOptionError) as info:
        xr.open_dataset(path, engine="tensogram", **option)
    text = str(info.value)
    assert path in text and f"option {next(iter(option))} does not apply" in text and "remove it" in text


def test_an_option_at_its_default_is_accepted_by_every_format() -> None:
    for path in (TGM, TET, ZT):
        xr.open_dataset(path, engine="tensogram", range_threshold=0.5, merge_objects=True).close()


def test_dim_names_with_too_few_names_for_a_tgm_variable() -> None:
    """Issue 28: 3 names for the 4-D ``t`` of ``era_pl.tgm`` said "rank 2" and named no file."""
    with xr.open_dataset(TGM, engine="tensogram") as ds:
        assert ds["t"].ndim == 4
    with pytest.raises(errors.DimensionNameError) as info:
        xr.open_dataset(TGM, engine="tensogram", dim_names=["a", "b", "c"])
    text = str(info.value)
    assert TGM in text and "dim_names has 3 entries" in text and "'t' has 2 axes per object" in text
    assert "named by their metadata keys" in text and "give one name per axis" in text


def test_dim_names_name_the_stored_axes_the_same_way_for_every_format() -> None:
    """A list names the axes of every data variable; coordinates keep their names, for each format."""
    with xr.open_dataset(TGM, engine="tensogram", dim_names=["y", "x"]) as ds:
        assert ds["t"].dims == ("step", "level", "y", "x")
    with xr.open_dataset(ZT, engine="tensogram", dim_names=["y", "x"]) as ds:
        assert ds["t2m"].dims == ds["wind.speed"].dims == ("y", "x")
        assert ds["latitude"].dims == ("latitude",)
    with pytest.raises(errors.DimensionNameError) as info:  # .tet: t2m has 3 axes, tp 2
        xr.open_dataset(TET, engine="tensogram", dim_names=["y", "x"])
    assert TET in str(info.value) and "'t2m' has 3 axes" in str(info.value) and "dict" in str(info.value)
    with xr.open_dataset(TET, engine="tensogram", dim_names={"tp": ["y", "x"]}) as ds:
        assert ds["tp"].dims == ("y", "x") and ds["t2m"].dims == ("time", "lat", "lon")


def test_dim_names_for_a_zt_file_is_not_applied_to_its_coordinates() -> None:
    """Issue 28: ``dim_names=["y"]`` was applied to the coordinate tensors, then reported as a conflict."""
    with pytest.raises(errors.DimensionNameError) as info:
        xr.open_dataset(ZT, engine="tensogram", dim_names=["y"])
    text = str(info.value)
    assert ZT in text and "dim_names has 1 entry" in text and "'t2m' has 2 axes" in text
    assert "conflict" not in text and "latitude" not in text


def test_decode_cf_false_with_the_engine_class() -> None:
    """xarray reads open_dataset_parameters (derived from the declaration) when the class is passed."""
    with xr.open_dataset(TGM, engine=TensogramBackendEntrypoint, decode_cf=False) as ds:
        assert ds["step"].dtype.kind in "iu"  # not decoded to timedelta64


@pytest.mark.parametrize("decode_coords", [True, False])
def test_coordinate_roles_come_from_assembly_not_a_synthetic_attribute(decode_coords: bool) -> None:
    with xr.open_dataset(TGM, engine="tensogram", decode_coords=decode_coords) as ds:
        assert "coordinates" not in ds.attrs
        assert {"valid_time", "time"} <= set(ds.coords) - set(ds.dims)  # non-index coordinates stay coordinates
        assert set(ds.data_vars) == {"t", "z"}


def test_opening_does_not_switch_off_garbage_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("gc.disable() switches collection off for every thread of the process")

    monkeypatch.setattr(gc, "disable", refuse)
    for path in (TGM, TET, ZT):
        xr.open_dataset(path, engine="tensogram").close()


def test_cli_info_opens_the_file_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    opened: list[str] = []
    original = local.LocalFileSource.__init__

    def counting(self: Any, path: Any, **kwargs: Any) -> None:
        opened.append(str(path))
        original(self, path, **kwargs)

    monkeypatch.setattr(local.LocalFileSource, "__init__", counting)
    for path in (TGM, TET, ZT):
        opened.clear()
        assert main(["info", path]) == 0
        assert opened == [path]
    out = capsys.readouterr().out
    assert "format:   Tensogram" in out and "Dask chunks with chunks={}" in out


def test_cli_info_of_a_file_with_several_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mixed.tgm"
    path.write_bytes(Path(xt.sample_path("forecast.tgm")).read_bytes() + Path(TGM).read_bytes())
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "<xarray.DataTree>" in out and "grid_" in out
    with xr.open_datatree(path, engine="tensogram") as tree:  # the oracle: xarray's own tree of the file
        nbytes = sum(node.dataset.nbytes for node in tree.subtree)
    assert f"{nbytes} bytes decoded" in out
    assert np.isfinite(nbytes)


@pytest.mark.parametrize("path", [TGM, TET, ZT])
@pytest.mark.parametrize(("name", "value"), [("storage_options", {"anon": True}), ("retries", 0), ("retries", 8)])
def test_remote_only_options_on_a_local_file_are_named(path: str, name: str, value: Any) -> None:
    """Options that only act on remote URLs are not dropped silently for a local file: a warning names them."""
    with pytest.warns(errors.IgnoredOptionWarning, match=f"{name}=.*local file"):
        xr.open_dataset(path, engine="tensogram", **{name: value}).close()


def test_default_remote_options_on_a_local_file_are_quiet(recwarn: pytest.WarningsRecorder) -> None:
    xr.open_dataset(TGM, engine="tensogram", storage_options={}, retries=None).close()
    assert not [w for w in recwarn if issubclass(w.category, errors.IgnoredOptionWarning)]
