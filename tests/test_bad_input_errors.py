"""Issue 12, point 4: every bad input ends in a package error (an XarrayTensogramError, sometimes also
the builtin a caller would catch) whose message names the file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram import errors, sample_paths
from xarray_tensogram.cli import main

ENGINE = "tensogram"
SAMPLE = {p.rsplit(".", 1)[1]: p for p in sample_paths()}


def _open(path, **kw):
    return xr.open_dataset(path, engine=ENGINE, **kw)


def test_every_error_class_is_a_package_error_and_a_value_error():
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and not issubclass(cls, Warning):
            assert issubclass(cls, errors.XarrayTensogramError) and issubclass(cls, ValueError), name
            assert getattr(xt, name) is cls, name  # exported at the top level too


def test_errors_page_lists_every_error_class():
    section = (Path(__file__).resolve().parents[1] / "docs" / "errors.md").read_text()
    section = section[: section.index("\n## ")]
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and not issubclass(cls, Warning):
            assert f"| `{name}` |" in section, name


def test_directory(tmp_path):
    with pytest.raises(errors.IsADirectoryTensorError) as info:
        _open(tmp_path)
    assert str(info.value) == f"file {str(tmp_path)!r}: is a directory; give the path of a file in it"
    assert isinstance(info.value, IsADirectoryError)  # code that catches OS errors keeps working


@pytest.mark.parametrize(
    "content",
    [
        b"hello, this is a text file\n" * 3,
        b"short text\n",
        bytes(np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)),
    ],
)
@pytest.mark.parametrize("suffix", [".txt", ".bin", ""])
def test_text_or_random_file(tmp_path, content, suffix):
    path = tmp_path / f"notes{suffix}"
    path.write_bytes(content)
    with pytest.raises(errors.NotATensorFileError) as info:
        _open(path)
    assert str(info.value) == (
        f"file {str(path)!r}: not a Tensogram, Tetration layout or zTensor file (unknown magic and extension)"
    )


@pytest.mark.parametrize("suffix", [".tgm", ".tet", ".zt", ".bin"])
def test_empty_file(tmp_path, suffix):
    path = tmp_path / f"empty{suffix}"
    path.write_bytes(b"")
    with pytest.raises(errors.CorruptFileError) as info:  # NotATensorFileError or TruncatedFileError
        _open(path)
    text = str(info.value)
    assert str(path) in text and ("empty" in text or "truncated" in text) and "0" in text, text


def test_cli_says_the_same(tmp_path, capsys):
    for path, words in [(tmp_path, "is a directory"), (SAMPLE["tgm"] + ".missing", "No such file")]:
        assert main(["verify", str(path)]) != 0
        err = capsys.readouterr().err
        assert str(path) in err and words in err and "Traceback" not in err


# -- dim_names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["tet", "zt"])
@pytest.mark.parametrize(
    ("dim_names", "words"),
    [
        (5, "must be a list of dimension names"),
        ("lat", "must be a list of dimension names"),
        (["a", "b", "c", "d", "e"], "dim_names has 5 entries ['a', 'b', 'c', 'd', 'e'], but variable"),
        ({"no_such_variable": ["a", "b"]}, "names ['no_such_variable'], which the file does not hold"),
    ],
)
def test_dim_names_mistakes_common(fmt, dim_names, words):
    with pytest.raises(errors.DimensionNameError) as info:
        _open(SAMPLE[fmt], dim_names=dim_names)
    assert str(info.value).startswith(f"file {SAMPLE[fmt]!r}: ") and words in str(info.value)


@pytest.mark.parametrize(("fmt", "var", "rank"), [("tet", "tp", 2), ("zt", "t2m", 2)])
def test_dim_names_wrong_rank_and_repeats(fmt, var, rank):
    with pytest.raises(
        errors.DimensionNameError,
        match=rf"dim_names for '{var}' has 1 entry \['y'\], but variable '{var}' has {rank} axes: give one name",
    ):
        _open(SAMPLE[fmt], dim_names={var: ["y"]})
    with pytest.raises(
        errors.DimensionNameError, match=rf"\['y', 'y'\] has a duplicate name \(variable '{var}' has {rank} axes"
    ):
        _open(SAMPLE[fmt], dim_names={var: ["y", "y"]})


@pytest.mark.parametrize(("fmt", "first", "second"), [("tet", "t2m", "tp"), ("zt", "t2m", "wind.speed")])
def test_dim_names_whose_sizes_clash(fmt, first, second):
    with _open(SAMPLE[fmt]) as ds:  # the oracle for the sizes: the default opening
        shape_first, shape_second = ds[first].shape, ds[second].shape
    assert shape_first[-2] != shape_first[-1]
    names_first = [f"d{i}" for i in range(len(shape_first) - 2)] + ["y", "x"]
    with pytest.raises(errors.DimensionNameError) as info:
        _open(SAMPLE[fmt], dim_names={first: names_first, second: ["x", "y"]})
    assert str(info.value) == (
        f"file {SAMPLE[fmt]!r}: dim_names ['x', 'y'] for {second!r} (rank 2, shape {list(shape_second)}) conflict "
        f"with another variable: dimension 'x' has length {shape_first[-1]} there, {shape_second[0]} here"
    )


def test_dim_names_that_fit_still_work():
    with _open(SAMPLE["zt"], dim_names={"t2m": ["y", "x"], "wind.speed": ["y", "x"]}) as ds:
        assert ds["t2m"].dims == ("y", "x")
        with _open(SAMPLE["zt"]) as ref:
            np.testing.assert_array_equal(ds["t2m"].values, ref["t2m"].values)


# -- writing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("writer", [xt.to_tensogram, xt.to_tetr, xt.to_ztensor])
def test_writing_into_a_missing_directory_names_the_target(tmp_path, writer):
    target = tmp_path / "no" / "such" / "dir" / "out.bin"
    ds = xr.Dataset({"a": (("y", "x"), np.arange(6.0).reshape(2, 3))})
    with pytest.raises(errors.NoSuchDirectoryError) as info:
        writer(ds, target)
    text = str(info.value)
    assert str(target) in text and "does not exist" in text and ".tmp" not in text
    assert isinstance(info.value, FileNotFoundError)
    assert not os.path.exists(tmp_path / "no")


# -- storage_options ----------------------------------------------------------------------------------
def test_storage_options_rejected_by_s3fs():
    pytest.importorskip("s3fs")
    with pytest.raises(errors.StorageOptionsError) as info:
        _open("s3://some-bucket/file.tgm", storage_options={"bogus_option": 1})
    text = str(info.value)
    assert "s3://some-bucket/file.tgm" in text and "rejected the storage_options" in text and "bogus_option" in text
    assert "no such remote file" not in text


def test_storage_options_rejected_by_a_filesystem_constructor(tmp_path):
    """A filesystem whose constructor takes only the options it knows (as most fsspec drivers do)."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.local import LocalFileSystem

    class StrictLocal(LocalFileSystem):
        protocol = "strictlocal"

        def __init__(self, *, auto_mkdir: bool = False) -> None:
            super().__init__(auto_mkdir=auto_mkdir)

    fsspec.register_implementation("strictlocal", StrictLocal, clobber=True)
    path = Path(SAMPLE["tgm"])
    with _open(f"strictlocal://{path}", storage_options={"auto_mkdir": False}) as ds:  # a known option works
        assert ds.sizes
    with pytest.raises(errors.StorageOptionsError, match=r"rejected the storage_options .*'anon'"):
        _open(f"strictlocal://{path}", storage_options={"anon": True})
