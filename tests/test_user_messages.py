"""What a new user reads when something is wrong: each message names the item and says what to do,
in words (no ``[Errno 2]``, no ``b'...'`` literals, no dict reprs, no "1 ranges"), said once.

The files are the bundled samples, cut or copied, and netCDF files written by xarray itself.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram.cli import main
from xarray_tensogram.errors import (
    CorruptMessageWarning,
    IsADirectoryTensorError,
    NotATensorFileError,
    TruncatedFileError,
    UnknownOptionError,
    XarrayTensogramError,
    byte_text,
    closest,
)

FORECAST = Path(xt.sample_path("forecast.tgm"))
TET = Path(xt.sample_path("sample.tet"))
#: what no message shows a user: Python's bytes literals, errno prefixes, dict reprs of sizes
RAW = re.compile(r"\bb'|\bb\"|\[Errno \d+\]|\{'\w+': \d+")


def _cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- opening something that is not one of the formats -------------------------------------------------
@pytest.mark.parametrize(
    ("engine", "says"),
    [("h5netcdf", 'netCDF-4/HDF5 file; open it with engine="netcdf4" or engine="h5netcdf"'), ("scipy", "netCDF-3")],
)
def test_a_netcdf_file_says_which_engine_opens_it(tmp_path: Path, engine: str, says: str) -> None:
    path = tmp_path / "data.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(path, engine=engine)
    with pytest.raises(NotATensorFileError, match=re.escape(says)) as info:
        xr.open_dataset(path, engine="tensogram")
    assert "data.nc" in str(info.value)
    if engine == "scipy":
        assert 'engine="netcdf4" or engine="scipy"' in str(info.value)


def test_cut_tet_files_show_bytes_as_text_or_hex(tmp_path: Path) -> None:
    data = TET.read_bytes()
    seen = 0
    for n in range(40, len(data), 7):
        path = tmp_path / "cut.tet"
        path.write_bytes(data[:n])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xr.open_dataset(path, engine="tensogram").load()
        except XarrayTensogramError as exc:
            seen += 1
            assert not RAW.search(str(exc)), str(exc)
    assert seen > 10


def test_byte_text() -> None:
    assert byte_text(b"THST") == "'THST'"
    assert byte_text(b'"lon') == "'\"lon'"
    assert byte_text(b"\x89HDF") == "hex 89 48 44 46"
    assert byte_text(b"") == "no bytes"


def test_a_file_of_no_message_is_one_error_not_a_warning_too(tmp_path: Path) -> None:
    path = tmp_path / "short.tgm"
    path.write_bytes(FORECAST.read_bytes()[:100])
    with warnings.catch_warnings(record=True) as said, pytest.raises(TruncatedFileError, match="cut short"):
        warnings.simplefilter("always")
        xr.open_dataset(path, engine="tensogram")
    assert not [w for w in said if issubclass(w.category, CorruptMessageWarning)]


def test_damage_after_good_messages_is_still_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "tail.tgm"
    path.write_bytes(FORECAST.read_bytes() + b"TENSOGRM" + b"x" * 50)
    with pytest.warns(CorruptMessageWarning, match="skipped damaged message"):
        xr.open_dataset(path, engine="tensogram").close()


# -- writing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("writer", [xt.to_tensogram, xt.to_tetr, xt.to_ztensor])
def test_writing_to_a_directory_fails_first_naming_it(tmp_path: Path, writer: object) -> None:
    """Before anything is encoded: a complex variable (which every writer refuses while encoding) is not
    what the error is about; and the path named is the user's, not a temporary file's."""
    ds = xr.Dataset({"t": (("y", "x"), np.zeros((2, 3), "c8"))})
    with pytest.raises(XarrayTensogramError, match="complex"):
        writer(ds, tmp_path / "file")  # type: ignore[operator]
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(
        IsADirectoryTensorError, match=re.escape(f"cannot write {str(target)!r}: it is a directory")
    ) as info:
        writer(ds, target)  # type: ignore[operator]
    assert ".tmp-" not in str(info.value) and isinstance(info.value, IsADirectoryError)


@pytest.mark.parametrize("writer", [xt.to_tensogram, xt.to_tetr, xt.to_ztensor])
def test_a_misspelt_writer_keyword_suggests_the_right_one(tmp_path: Path, writer: object) -> None:
    ds = xr.Dataset({"t": (("y", "x"), np.zeros((2, 3), "f4"))})
    with pytest.raises(UnknownOptionError, match=r"'mode_' \(did you mean 'mode'\?\)") as info:
        writer(ds, tmp_path / "out", mode_="w")  # type: ignore[operator]
    assert isinstance(info.value, TypeError) and not (tmp_path / "out").exists()


def test_message_dims_typo(tmp_path: Path) -> None:
    with pytest.raises(UnknownOptionError, match=r"'mesage_dims' \(did you mean 'message_dims'\?\)"):
        xt.to_tensogram(xr.open_dataset(FORECAST, engine="tensogram"), tmp_path / "x.tgm", mesage_dims=["step"])


# -- suggestions ----------------------------------------------------------------------------------------
def test_closest_counts_a_swap_as_one_edit() -> None:
    keys = ["mars.class", "mars.type", "mars.step", "mars.stream"]
    assert closest("mars.stpe", keys) == "mars.step"
    assert closest("mars.tpye", keys) == "mars.type"
    assert closest("levelist", ["level", "levelist"]) == "levelist"
    assert closest("zzz", keys) is None


def test_filter_by_keys_suggests_the_key_meant(tmp_path: Path) -> None:
    import tensogram

    entry = {"mars": {"class": "od", "type": "fc", "step": 6, "param": "2t"}}
    obj = ({"type": "ntensor", "shape": [2], "dtype": "float64"}, np.zeros(2))
    path = tmp_path / "k.tgm"
    path.write_bytes(tensogram.encode({"base": [entry]}, [obj]))
    with pytest.raises(
        XarrayTensogramError, match=r"'mars.stpe'=6: no object has this key \(did you mean 'mars.step'\?\)"
    ):
        xr.open_dataset(path, engine="tensogram", filter_by_keys={"mars.stpe": 6})


# -- the command line -------------------------------------------------------------------------------------
def test_cli_missing_file_in_words(capsys, tmp_path: Path) -> None:
    for command in ("info", "ls", "verify"):
        code, _, err = _cli(capsys, command, tmp_path / "nofile.tgm")
        assert code == 1 and "No such file or directory" in err and "nofile.tgm" in err
        assert not RAW.search(err), err


def test_cli_isel_errors_in_words(capsys) -> None:
    code, _, err = _cli(capsys, "dump", FORECAST, "2t", "--isel", "step=9")
    assert code == 2 and "--isel step=9: out of range: step of '2t' has 4 elements (indices 0..3 or -4..-1)" in err
    code, _, err = _cli(capsys, "dump", FORECAST, "2t", "--isel", "stpe=1")
    assert code == 2 and "no dimension 'stpe' (did you mean 'step'?)" in err
    assert not RAW.search(err)


def test_cli_counts_one_damaged_range_in_the_singular(capsys, tmp_path: Path) -> None:
    path = tmp_path / "tail.tgm"
    path.write_bytes(FORECAST.read_bytes() + b"TENSOGRM" + b"x" * 50)
    code, out, _ = _cli(capsys, "info", path)
    assert code == 0 and "damaged:  1 damaged byte range skipped" in out


@pytest.mark.parametrize("sample", ["forecast.tgm", "era_pl.tgm", "sample.tet", "sample.zt"])
def test_info_counts_dask_chunks_as_ls_does(capsys, sample: str) -> None:
    path = xt.sample_path(sample)
    _, out, _ = _cli(capsys, "ls", path)
    table = out[out.index("as xarray opens it") :].splitlines()[3:]
    from_ls = sum(int(row.split()[-1]) for row in (r[: r.rindex("  ")].rstrip() for r in table if r.strip()))
    _, out, _ = _cli(capsys, "info", path)
    with xr.open_dataset(path, engine="tensogram", chunks={}) as ds:
        from_dask = sum(v.data.npartitions for v in ds.data_vars.values())
    assert f"in {from_dask} Dask chunk" in out and from_ls == from_dask


def test_writer_warnings_point_at_the_users_call(tmp_path: Path) -> None:
    """The keyword check wraps each writer: its warnings still name the line that called the writer."""
    ds = xr.Dataset({"t": ("x", np.zeros(3, "f4"))}, attrs={"title": "t"})
    for writer, name in ((xt.to_ztensor, "a.zt"), (xt.to_tetr, "a.tet")):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            writer(ds, tmp_path / name)  # type: ignore[operator]
        dropped = [w for w in said if "title" in str(w.message)]
        assert dropped and all(w.filename == __file__ for w in dropped), [(w.filename, w.lineno) for w in said]
