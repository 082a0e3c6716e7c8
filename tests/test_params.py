"""The parameter table (``xarray_tensogram/params.tsv``) against ecCodes, and how the mapping applies it.

The table was generated from ecCodes' definitions by ``tools/make_param_table.py``; here ecCodes
itself (the test extra) is asked again for every parameter of the ERA5 surface and pressure-level
lists and the AIFS output list: the short name (as MARS requests name it) gives a paramId, and
ecCodes says that paramId's short name, units, name and CF name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram.params import lookup, table_attributes, table_version

eccodes = pytest.importorskip("eccodes")

AIFS = (
    "10u 10v 2d 2t msl skt sp tcw lsm z slor sdor cp tp stl1 stl2 swvl1 swvl2 sf tcc lcc mcc hcc 100u 100v ro ssrd strd"
)
ERA5_PRESSURE = "z t u v q w vo d r o3 clwc ciwc cc crwc cswc pv"
ERA5_SURFACE = (
    "10u 10v 2d 2t msl sp sst skt tcc tp cp lsp sf sd stl1 stl2 stl3 stl4 swvl1 swvl2 swvl3 swvl4 ci lsm z "
    "ssrd strd ssr str tisr slhf sshf ewss nsss e pev ro sro ssro blh cape tcw tcwv tco3 10fg i10fg 100u 100v "
    "cbh hcc mcc lcc lai_hv lai_lv asn rsn tsn src istl1 mx2t mn2t tclw tciw ptype crr lsrr csfr lssfr "
    "viwve viwvn vimd tvh tvl cvh cvl sdor slor anor isor mwd mwp swh pp1d"
)
ALL = sorted(set(AIFS.split()) | set(ERA5_PRESSURE.split()) | set(ERA5_SURFACE.split()))


def _eccodes(param_id: int) -> dict[str, Any]:
    """What ecCodes says of a paramId (GRIB2 sample, else GRIB1, as cfgrib would read it)."""
    for sample in ("GRIB2", "GRIB1"):
        gid = eccodes.codes_grib_new_from_samples(sample)
        try:
            eccodes.codes_set(gid, "paramId", param_id)
            return {k: eccodes.codes_get(gid, k) for k in ("paramId", "shortName", "units", "name", "cfName")}
        except eccodes.CodesInternalError:
            continue
        finally:
            eccodes.codes_release(gid)
    raise AssertionError(f"ecCodes does not know paramId {param_id}")


def test_table_records_the_eccodes_version() -> None:
    assert re.fullmatch(
        r"ECMWF parameters from ecCodes \d+\.\d+\.\d+ definitions \(tools/make_param_table.py\)", table_version()
    )


@pytest.mark.parametrize("short_name", ALL)
def test_table_matches_eccodes(short_name: str) -> None:
    found = lookup(short_name)
    assert found is not None, short_name
    expected = _eccodes(found.param_id)
    assert expected["paramId"] == found.param_id
    assert expected["shortName"] == short_name
    assert found.units == expected["units"]
    assert found.long_name == expected["name"]
    cf = expected["cfName"]
    assert found.standard_name == ("" if cf in ("~", "unknown") else cf)
    assert lookup(found.param_id) == found == lookup(str(found.param_id))


def test_param_forms() -> None:
    assert lookup("130.128") == lookup(130) == lookup("t")
    assert lookup("228.228") == lookup(228228)
    assert lookup("tp") == lookup(228)  # the IFS table-128 id, as MARS means "tp"
    assert lookup("no-such-param") is None and lookup(999999) is None and lookup(True) is None
    assert table_attributes({"mars.param": "2t"})["standard_name"] == "air_temperature"
    assert table_attributes({"mars.param": "nothing"}) == {}


def _write(path: Path, entries: list[dict[str, Any]]) -> None:
    tensogram = pytest.importorskip("tensogram")
    objs = [
        ({"type": "ntensor", "shape": [3], "dtype": "float32"}, np.arange(3, dtype=np.float32) + i)
        for i in range(len(entries))
    ]
    path.write_bytes(tensogram.encode({"base": entries}, objs))


def test_file_attributes_win(tmp_path: Path) -> None:
    path = tmp_path / "own.tgm"
    _write(
        path,
        [
            {"name": "a", "mars": {"param": "t"}, "cf": {"units": "degC"}},
            {"name": "b", "mars": {"param": 167}, "long_name": "my own", "dim_names": ["x"]},
            {"name": "c", "mars": {"param": "unknown_thing"}},
        ],
    )
    with xr.open_dataset(path, engine="tensogram", decode_cf=False) as ds:
        assert ds["a"].attrs["units"] == "degC"
        assert ds["a"].attrs["long_name"] == "Temperature"
        assert ds["b"].attrs["long_name"] == "my own"
        assert ds["b"].attrs["units"] == "K"
        assert "units" not in ds["c"].attrs and "long_name" not in ds["c"].attrs


def test_written_back_without_table_attributes(tmp_path: Path) -> None:
    """The writer leaves out what came from the table (the file did not say it), unless the user changed it."""
    tensogram = pytest.importorskip("tensogram")
    from xarray_tensogram import to_tensogram

    path = tmp_path / "in.tgm"
    _write(path, [{"name": "a", "mars": {"param": "t"}}, {"name": "b", "mars": {"param": "q"}}])
    with xr.open_dataset(path, engine="tensogram") as ds:
        ds = ds.load()
    ds["b"].attrs["units"] = "g kg**-1"
    out = tmp_path / "out.tgm"
    to_tensogram(ds, out)
    base = tensogram.decode(out.read_bytes()).metadata.base
    by_name = {e["name"]: e for e in base}
    assert not {"units", "long_name", "standard_name"} & set(by_name["a"])
    assert by_name["b"]["units"] == "g kg**-1"
