"""Opens of archives made as operational files are: 8 MARS keys and ``dim_names`` per object.

The open keeps an object's flat keys and rebuilds its nested metadata from them when asked (lists of
scalars such as ``dim_names`` included); the metadata cache stores the members of stacked variables from
their packed ints. These tests check both against what the reference encoder was given and against the
reference decoder's values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram import open_tensogram
from xarray_tensogram.assemble.tensogram.collect import collect_objects

tensogram = pytest.importorskip("tensogram")

PARAMS = ("2t", "msl", "10u", "10v")
STEPS = 6


def _base(step: int) -> list[dict[str, object]]:
    return [
        {
            "mars": {
                "class": "od",
                "type": "fc",
                "stream": "oper",
                "expver": "0001",
                "date": 20240101,
                "time": 0,
                "step": step,
                "param": p,
            },
            "dim_names": ["latitude", "longitude"],
            "levels": [1000, 850.5, None],  # a list of mixed scalars, rebuilt as a list too
        }
        for p in PARAMS
    ]


def _values(step: int, k: int) -> np.ndarray:
    return (np.arange(12, dtype=np.float32).reshape(3, 4) + 10 * step + k).astype(np.float32)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "operational.tgm"
    desc = {"type": "ntensor", "shape": [3, 4], "dtype": "float32"}
    with open(path, "wb") as f:
        for s in range(STEPS):
            objects = [(desc, _values(s, k)) for k in range(len(PARAMS))]
            f.write(bytes(tensogram.encode({"base": _base(s)}, objects)))
    return path


def test_nested_metadata_is_rebuilt_from_flat_keys_as_given(archive: Path) -> None:
    with open_tensogram(archive) as f:
        objects = collect_objects(f, list(range(len(f))), verify_hash=False, range_threshold=0.5)
    assert len(objects) == STEPS * len(PARAMS)
    for o in objects:
        given = _base(o.msg)[o.obj]
        assert o.nested is None  # not kept: the flat keys give it back
        assert o.entry == given
        assert type(o.entry["dim_names"]) is list and type(o.entry["levels"]) is list
        assert o.keys["dim_names"] == ("latitude", "longitude")
    # one tuple of names for every object, not one per object
    assert len({id(o.keys["dim_names"]) for o in objects}) == 1


def test_open_and_cached_open_give_the_reference_values(archive: Path, tmp_path: Path) -> None:
    plain = xr.open_dataset(archive, engine="tensogram", metadata_cache=False).load()
    assert plain["2t"].dims == ("step", "latitude", "longitude")
    with tensogram.TensogramFile.open(str(archive)) as f:
        for s in range(STEPS):
            message = f.decode_message(s)
            for k, p in enumerate(PARAMS):
                np.testing.assert_array_equal(plain[p].values[s], np.asarray(message.objects[k][1]))
    cache = tmp_path / "cache"
    xr.open_dataset(archive, engine="tensogram", metadata_cache=str(cache)).close()  # stores the entry
    assert len(list(cache.glob("*.pkl"))) == 1
    again = xr.open_dataset(archive, engine="tensogram", metadata_cache=str(cache)).load()
    xr.testing.assert_identical(again, plain)
