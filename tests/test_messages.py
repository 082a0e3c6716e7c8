"""Messages a new user meets first: each names the file, says what is wrong and what to do.

Each case is a mistake or a damaged file a user actually makes or gets (a copy cut short, a misspelt
key, an option the filesystem does not take); the class is checked too, so that code catching
``TruncatedFileError`` or ``StorageOptionsError`` keeps working.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import xarray as xr

from xarray_tensogram import errors
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE

SAMPLES = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples"


def _error(path: Path | str, **kwargs: object) -> errors.XarrayTensogramError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the skipped-message warning; the error is what is tested
        with pytest.raises(errors.XarrayTensogramError) as info:
            xr.open_dataset(path, engine=ENGINE, **kwargs)
    return info.value


def test_ztensor_cut_in_half(tmp_path):
    data = (SAMPLES / "sample.zt").read_bytes()
    path = tmp_path / "half.zt"
    path.write_bytes(data[: len(data) // 2])
    exc = _error(path)
    text = str(exc)
    assert isinstance(exc, errors.TruncatedFileError)
    assert text.startswith(f"file {str(path)!r}, byte {len(data) // 2 - 8}: the file is truncated or damaged")
    assert f"({len(data) // 2} bytes in all)" in text and "copy or download the file again" in text
    assert "needs a file of at least" not in text  # the absurd size read from garbage is not presented as a need


def test_tensogram_cut_at_500_bytes(tmp_path):
    path = tmp_path / "cut.tgm"
    path.write_bytes((SAMPLES / "forecast.tgm").read_bytes()[:500])
    exc = _error(path)
    text = str(exc)
    assert type(exc) is errors.TruncatedFileError  # a truncation, not a generic CorruptFileError
    assert text.count(str(path)) == 1  # the path once, not repeated by the wrapping message
    assert text.startswith(f"file {str(path)!r}, message 0, byte 16: message truncated")
    assert "it was cut short; copy or download it again" in text


def test_filter_by_keys_misspelt_key_suggests_the_closest(tmp_path):
    path = SAMPLES / "era_pl.tgm"
    text = str(_error(path, filter_by_keys={"mars.levelst": 850}))
    assert text.startswith(f"file {str(path)!r}: filter_by_keys matches no object")
    assert "'mars.levelst'=850: no object has this key (did you mean 'mars.levelist'?)" in text
    assert "The objects' keys: cf.long_name, cf.units, dim_names, mars.class" in text and "mars.levtype" in text


def test_filter_by_keys_with_a_key_the_file_lacks_lists_those_it_has():
    path = SAMPLES / "forecast.tgm"  # MARS keys only: no GRIB shortName
    text = str(_error(path, filter_by_keys={"shortName": "2t"}))
    assert text.startswith(f"file {str(path)!r}: filter_by_keys matches no object ('shortName'='2t': no object")
    assert "did you mean" not in text  # nothing close: no guess
    assert text.endswith(
        "The objects' keys: cf.long_name, cf.units, dim_names, mars.class, mars.date, mars.param, mars.step, mars.time"
    )


def test_filter_by_keys_with_a_value_the_file_lacks_lists_the_values():
    text = str(_error(SAMPLES / "era_pl.tgm", filter_by_keys={"mars.levelist": 700}))
    assert text.endswith("('mars.levelist'=700: the file has 1000, 500, 850)")


def test_unknown_storage_option_names_it():
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from servers import RangeHTTPServer

    with RangeHTTPServer({"/forecast.tgm": (SAMPLES / "forecast.tgm").read_bytes()}) as server:
        url = server.url("forecast.tgm")
        with pytest.raises(errors.StorageOptionsError) as info:
            xr.open_dataset(url, engine=ENGINE, storage_options={"anonn": True})
    text = str(info.value)
    assert isinstance(info.value, TypeError)  # as fsspec itself would raise
    assert text.startswith(f"{url}: fsspec rejected the storage_options 'anonn': HTTPFileSystem does not accept it")
    assert "remove or correct it (given: 'anonn')" in text
    assert "no such remote file" not in text and "FileNotFoundError" not in text
