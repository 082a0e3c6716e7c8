"""``TgObject.own_value``: a top-level key of an object's own metadata read without rebuilding its nested map.

Checked against what the reference encoder was given, for objects whose nested map is dropped (flat keys
rebuild it) and for those that keep it (a dotted key, a map under ``dim_names``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xarray_tensogram import open_tensogram
from xarray_tensogram.assemble.tensogram.collect import collect_objects

tensogram = pytest.importorskip("tensogram")

GIVEN: list[dict[str, object]] = [
    {"mars": {"param": "2t", "step": 6}, "dim_names": ["latitude", "longitude"]},  # flat keys only
    {"a.b": 1, "dim_names": ["y", "x"]},  # a dotted key: the nested map is kept
    {"dim_names": {"first": "y", "second": "x"}},  # a map: flattened under dim_names.*
    {"mars": {"param": "msl"}},  # no dim_names
]


def test_own_value_is_what_the_encoder_was_given(tmp_path: Path) -> None:
    path = tmp_path / "own.tgm"
    desc = {"type": "ntensor", "shape": [2, 3], "dtype": "float32"}
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    path.write_bytes(bytes(tensogram.encode({"base": GIVEN}, [(desc, values)] * len(GIVEN))))
    tfile = open_tensogram(path)
    objects = collect_objects(tfile, [0], verify_hash=False, range_threshold=0.5)
    assert [o.nested is None for o in objects] == [True, False, True, True]  # both paths are exercised
    for o, given in zip(objects, GIVEN, strict=True):
        got = o.own_value("dim_names")
        assert (list(got) if type(got) is tuple else got) == given.get("dim_names")
        assert o.own_value("absent") is None
