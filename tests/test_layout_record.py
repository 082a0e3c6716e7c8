"""The reader -> writer layout record: every Dataset read from a ``.tgm`` is written back identically through it.

The oracles: the Dataset the reader gives for the original file (whose reading the reference-made fixtures'
manifests check), and the reference ``tensogram`` decoder, which shows what each written message's metadata
says. Cases: a message dim selected down to one value (kept as a dim, or as a scalar) with and without
``message_dims``, a 2-D ``valid_time(time, step)``, files with missing objects and keys that vary with the
message dims, a file whose messages carry different layout hints, and hand-set layout entries.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram.errors import EncodeError
from xarray_tensogram.layout_record import MISSING_OBJECTS_ATTR, LayoutRecord

tensogram = pytest.importorskip("tensogram")

SAMPLES = ("forecast.tgm", "era_pl.tgm")


def _open(path: Path | str) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing in these round trips may need a warning
        with xr.open_dataset(path, engine="tensogram") as ds:
            return ds.load()


def _write_back(ds: xr.Dataset, path: Path, **kw: Any) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xt.to_tensogram(ds, path, **kw)
    return _open(path)


def _bases(path: Path) -> list[list[dict[str, Any]]]:
    """Each message's per-object metadata, as the reference decoder reads it."""
    data = path.read_bytes()
    return [tensogram.decode(data[o : o + n]).metadata.base for o, n in tensogram.scan(data)]


def _data_entries(path: Path) -> list[dict[str, Any]]:
    return [e for base in _bases(path) for e in base if "mars" in e]


@pytest.mark.parametrize("message_dims", [None, ["step"]])
@pytest.mark.parametrize("sample", SAMPLES)
def test_one_step_kept_as_a_dim_comes_back_with_its_step_dim(sample: str, message_dims: Any, tmp_path: Path) -> None:
    original = _open(xt.sample_path(sample))
    one = original.isel(step=[1])
    back = _write_back(one, tmp_path / "one.tgm", message_dims=message_dims)
    assert back.sizes["step"] == 1 and back["step"].dims == ("step",)
    xr.testing.assert_identical(back, one)
    # each message says which step it holds, as the reference decoder reads it
    hours = original["step"].values[1] / np.timedelta64(1, "h")
    assert {e["mars"]["step"] for e in _data_entries(tmp_path / "one.tgm")} == {hours}


@pytest.mark.parametrize("sample", SAMPLES)
def test_one_step_selected_to_a_scalar_is_a_key_of_every_message(sample: str, tmp_path: Path) -> None:
    original = _open(xt.sample_path(sample))
    one = original.isel(step=2)
    back = _write_back(one, tmp_path / "scalar.tgm")
    xr.testing.assert_identical(back, one)  # valid_time included
    hours = original["step"].values[2] / np.timedelta64(1, "h")
    entries = _data_entries(tmp_path / "scalar.tgm")
    assert len(entries) == len(one.data_vars) * int(np.prod([one.sizes[d] for d in one.dims if d == "level"]))
    assert {e["mars"]["step"] for e in entries} == {hours}


def _two_base_times(sample: str) -> xr.Dataset:
    """A sample with a second base time 12 h later: ``time`` becomes a dim, ``valid_time`` 2-D (time, step)."""
    ds = _open(xt.sample_path(sample))
    later = ds.assign_coords(time=ds.time + np.timedelta64(12, "h"), valid_time=ds.valid_time + np.timedelta64(12, "h"))
    later = later.assign({k: v + 1 for k, v in ds.data_vars.items()})
    two = xr.concat([ds, later], dim="time", coords="different", compat="equals", join="outer")
    assert two["valid_time"].dims == ("time", "step")
    return two


@pytest.mark.parametrize("message_dims", [None, ["time"], ["time", "step"]])
@pytest.mark.parametrize("sample", SAMPLES)
def test_two_dimensional_valid_time_survives(sample: str, message_dims: Any, tmp_path: Path) -> None:
    two = _two_base_times(sample)
    back = _write_back(two, tmp_path / "two.tgm", message_dims=message_dims)
    xr.testing.assert_identical(back, two)
    np.testing.assert_array_equal(back["valid_time"].values, (two["time"] + two["step"]).values)
    dates = {(e["mars"]["date"], e["mars"]["time"]) for e in _data_entries(tmp_path / "two.tgm")}
    assert dates == {(20240101, 0), (20240101, 1200)}  # the base times are MARS keys of the messages


@pytest.mark.parametrize("message_dims", [None, ["time"]])
def test_two_dimensional_valid_time_of_a_dataset_made_here(message_dims: Any, tmp_path: Path) -> None:
    """No reader made it (no layout record): valid_time(time, step) is written as a coordinate and comes back."""
    time = np.array(["2024-01-01T00", "2024-01-01T12"], dtype="datetime64[ns]")
    step = np.array([0, 6, 12], dtype="timedelta64[h]").astype("timedelta64[ns]")
    ds = xr.Dataset(
        {"t": (("time", "step", "x"), np.arange(18, dtype=np.float32).reshape(2, 3, 3))},
        coords={"time": time, "step": step, "valid_time": (("time", "step"), time[:, None] + step[None, :])},
    )
    back = _write_back(ds, tmp_path / "made.tgm", message_dims=message_dims)
    assert back.attrs.pop("tensogram_wire_version") == 3  # the one attribute the reader adds
    xr.testing.assert_identical(back, ds)


def _messages_with_holes() -> bytes:
    """Three steps of 2t and msl, msl missing at step 1; ``mars.number`` and (for msl) ``mars.expver`` vary with
    the step, so the reader makes coordinates of them, with a missing cell where msl has no object."""
    rng = np.random.default_rng(7)
    out = []
    for step in range(3):
        base, objects = [], []
        for param in ("2t", "msl"):
            if (param, step) == ("msl", 1):
                continue
            values = rng.normal(size=(3, 4)).astype(np.float32)
            mars = {"param": param, "date": 20240101, "time": 0, "step": step, "number": 10 * step + (param == "msl")}
            mars["expver"] = f"e{step}" if param == "msl" else "0001"
            base.append({"mars": mars, "dim_names": ["y", "x"]})
            objects.append(({"type": "ntensor", "shape": [3, 4], "dtype": "float32"}, values))
        out.append(bytes(tensogram.encode({"base": base}, objects)))
    return b"".join(out)


def test_missing_objects_and_varying_keys_are_written_back_as_read(tmp_path: Path) -> None:
    source = tmp_path / "holes.tgm"
    source.write_bytes(_messages_with_holes())
    original = _open(source)
    assert original["msl"].attrs[MISSING_OBJECTS_ATTR] == 1
    assert original["mars.expver"].values.tolist() == ["e0", "", "e2"]  # the hole's cell is empty
    back = _write_back(original, tmp_path / "back.tgm")
    xr.testing.assert_identical(back, original)
    # the hole stays a hole, and every object carries its own keys again (no NaN cells, no empty strings)
    entries = _data_entries(tmp_path / "back.tgm")
    written = [(e["mars"]["param"], e["mars"]["step"], e["mars"]["number"]) for e in entries]
    expected = [(p, s, 10 * s + (p == "msl")) for s in range(3) for p in ("2t", "msl") if (p, s) != ("msl", 1)]
    assert sorted(written) == sorted(expected)
    assert {e["mars"].get("expver") for e in entries} == {"0001", "e0", "e2"}


def _reference_cube(steps: int) -> bytes:
    rng = np.random.default_rng(3)
    out = []
    for s in range(steps):
        base = [{"mars": {"date": 20250101, "time": 0, "param": "2t", "step": s}}]
        objects = [({"type": "ntensor", "shape": [2, 3], "dtype": "float32"}, rng.normal(size=(2, 3)).astype("f4"))]
        out.append(bytes(tensogram.encode({"base": base}, objects)))
    return b"".join(out)


def test_messages_with_and_without_a_layout_hint_write_back_identically(tmp_path: Path) -> None:
    """One appended message of one step carries a layout hint, the reference's do not: the hint is never read
    as metadata keys that vary (no ``xarray_layout.*`` coordinate of empty strings)."""
    path = tmp_path / "mixed.tgm"
    path.write_bytes(_reference_cube(2))
    first = _open(path)
    later = first.assign_coords(step=first.step + np.timedelta64(2, "h")).isel(step=[0])
    xt.to_tensogram(later, path, mode="a", layout="streaming")
    ds = _open(path)
    assert ds.sizes["step"] == 3
    assert not [c for c in ds.variables if str(c).startswith("xarray_layout")]
    xr.testing.assert_identical(_write_back(ds, tmp_path / "back.tgm"), ds)


def test_hand_set_layout_entries_are_honoured_or_refused(tmp_path: Path) -> None:
    """``encoding["tensogram_message_keys"]`` set by hand splits messages as the reader's would; an entry of the
    wrong type is an error naming the variable and the entry."""
    step = np.array([0, 6], dtype="timedelta64[h]").astype("timedelta64[ns]")
    ds = xr.Dataset({"t": (("step", "x"), np.ones((2, 3), dtype=np.float32))}, coords={"step": step})
    ds["t"].encoding.update(LayoutRecord(message_keys={"step": "mars.step"}).to_encoding())
    assert ds["t"].encoding == {"tensogram_message_keys": {"step": "mars.step"}}
    xt.to_tensogram(ds, tmp_path / "split.tgm")
    assert [base[0]["mars"]["step"] for base in _bases(tmp_path / "split.tgm")] == [0, 6]
    ds["t"].encoding["tensogram_scalar_keys"] = ["time"]
    with pytest.raises(EncodeError, match=r"variable 't'.*'tensogram_scalar_keys'.*dict"):
        xt.to_tensogram(ds, tmp_path / "bad.tgm")
    assert not (tmp_path / "bad.tgm").exists()


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_record_read_is_the_record_written(sample: str) -> None:
    """What assembly stores in ``encoding`` reads back as the same record, field by field."""
    ds = _open(xt.sample_path(sample))
    for name, var in ds.data_vars.items():
        record = LayoutRecord.of(var.encoding, name)
        assert record.message_keys and "step" in record.message_keys
        assert {k: v for k, v in var.encoding.items() if k.startswith("tensogram_") and k in record.to_encoding()} == (
            record.to_encoding()
        )


def _stacked_files() -> list[Path]:
    data = Path(__file__).parent / "data"
    return [Path(p) for p in xt.sample_paths() if p.endswith(".tgm")] + sorted((data / "producers").glob("*.tgm"))


@pytest.mark.parametrize("selection", [[0], 0, [-1]], ids=["first", "scalar", "last"])
@pytest.mark.parametrize("source", _stacked_files(), ids=lambda p: p.name)
def test_every_message_dim_selected_down_to_one_value_comes_back(source: Path, selection: Any, tmp_path: Path) -> None:
    """Keys that vary along the dim are constant in the written file: they do not come back as attributes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some producer files warn on reading (tested with the reader)
        with xr.open_dataset(source, engine="tensogram") as ds:
            original = ds.load()
    stacked = {d for n, v in original.data_vars.items() for d in LayoutRecord.of(v.encoding, n).message_keys or {}}
    assert stacked, "every file here has dims stacked from messages"
    for dim in sorted(stacked & set(original.dims)):
        one = original.isel({dim: selection})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = _write_back(one, tmp_path / f"{dim}.tgm")
        xr.testing.assert_identical(back, one)


@pytest.mark.parametrize("mask_and_scale", [True, False])
def test_missing_objects_of_integers_stay_missing(mask_and_scale: bool, tmp_path: Path) -> None:
    """Integer holes: NaN once decoded, the reader's fill value with ``mask_and_scale=False``; either way the
    hole is not written as an object of fill values."""
    messages = []
    for step in range(3):
        params = [p for p in ("a", "b") if (p, step) != ("b", 1)]
        base = [{"mars": {"param": p, "step": step, "date": 20240101, "time": 0}} for p in params]
        values = [np.arange(12, dtype=np.int16).reshape(3, 4) + step for _ in params]
        objects = [({"type": "ntensor", "shape": [3, 4], "dtype": "int16"}, v) for v in values]
        messages.append(bytes(tensogram.encode({"base": base}, objects)))
    (tmp_path / "ints.tgm").write_bytes(b"".join(messages))
    with xr.open_dataset(tmp_path / "ints.tgm", engine="tensogram", mask_and_scale=mask_and_scale) as ds:
        original = ds.load()
    assert original["b"].attrs[MISSING_OBJECTS_ATTR] == 1
    xt.to_tensogram(original, tmp_path / "back.tgm")
    with xr.open_dataset(tmp_path / "back.tgm", engine="tensogram", mask_and_scale=mask_and_scale) as back:
        xr.testing.assert_identical(back.load(), original)
    written = sorted((e["mars"]["param"], e["mars"]["step"]) for e in _data_entries(tmp_path / "back.tgm"))
    assert written == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 2)]


def test_a_key_some_objects_lack_stays_absent_from_them(tmp_path: Path) -> None:
    """The reader shows a key that only some objects have as a coordinate with empty cells; written back, the
    objects without it still lack it (no empty string, no NaN in their metadata)."""
    messages = []
    for step in range(3):
        mars: dict[str, Any] = {"param": "a", "step": step, "date": 20240101, "time": 0}
        if step != 1:
            mars.update(origin=f"run{step}", number=step)
        obj = ({"type": "ntensor", "shape": [2, 2], "dtype": "float32"}, np.full((2, 2), step, dtype=np.float32))
        messages.append(bytes(tensogram.encode({"base": [{"mars": mars}]}, [obj])))
    (tmp_path / "keys.tgm").write_bytes(b"".join(messages))
    original = _open(tmp_path / "keys.tgm")
    assert original["mars.origin"].values.tolist() == ["run0", "", "run2"]
    back = _write_back(original, tmp_path / "back.tgm")
    xr.testing.assert_identical(back, original)
    entries = sorted(_data_entries(tmp_path / "back.tgm"), key=lambda e: e["mars"]["step"])
    keys = [(e["mars"].get("origin"), e["mars"].get("number")) for e in entries]
    assert keys == [("run0", 0), (None, None), ("run2", 2)]


def test_per_step_files_combine_again_with_open_mfdataset(tmp_path: Path) -> None:
    """What docs/writing.md promises: one file per step, each with a ``step`` dim of length 1, combine by coords."""
    pytest.importorskip("dask")
    original = _open(xt.sample_path("forecast.tgm"))
    paths = []
    for i in range(original.sizes["step"]):
        paths.append(tmp_path / f"step_{i}.tgm")
        xt.to_tensogram(original.isel(step=[i]), paths[-1])
    with xr.open_mfdataset(paths[::-1], engine="tensogram", combine="by_coords") as combined:
        xr.testing.assert_identical(combined.load(), original)
