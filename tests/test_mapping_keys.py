"""The mapping's two shortcuts over nested metadata agree with plain flattening.

GRIB-converted objects keep their ``grib_repro``/``grib`` sections nested (``producers.grib_converter.GribKeys``), and
the hypercube compares those sections column by column (``_varying_nested``). Both are checked
here against the straightforward path they replace: flatten every map with ``flat_keys``, then
compare the flattened maps item by item (``_varying_maps``). Random nested metadata from
hypothesis: scalars, NaN, lists, nested maps, dotted keys, maps with different key sets.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from xarray_tensogram.assemble.tensogram.collect import flat_keys
from xarray_tensogram.assemble.tensogram.hypercube import _varying_maps, _varying_nested
from xarray_tensogram.producers.grib_converter import GribKeys
from xarray_tensogram.producers.grib_converter.cfgrib_rules import GRIB_SECTIONS

_KEYS = st.sampled_from(["level", "step", "units", "a.b", "pl", "x", "_reserved_"])
_SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, math.nan, -0.0]),
    st.builds(float, st.just("nan")),  # a NaN of its own: equal to no other object, not even by identity
    st.sampled_from(["K", "m", ""]),
    st.none(),
)
_VALUES = st.recursive(
    st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3)),
    lambda inner: st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=8,
)
_SECTION = st.dictionaries(_KEYS, _VALUES, max_size=5)


def _variants(base: dict[str, Any], changes: list[dict[str, Any]]) -> list[Any]:
    """Maps that mostly share ``base``'s keys (the case the column comparison is for) and sometimes don't."""
    return [{**base, **c} for c in changes]


@settings(max_examples=300, deadline=None)
@given(_SECTION, st.lists(_SECTION, min_size=1, max_size=5), st.booleans())
def test_varying_nested_matches_flattened_comparison(base, changes, with_missing):
    nodes: list[Any] = _variants(base, changes)
    if with_missing:
        nodes.append(None)  # an object without the section: all its keys vary in presence
    expected = _varying_maps([flat_keys(n, "grib_repro.") if isinstance(n, dict) else {} for n in nodes])
    assert _varying_nested(nodes, "grib_repro.") == expected


def _leaves(node: Any) -> int:
    if isinstance(node, dict) and node:
        return sum(_leaves(v) for k, v in node.items() if k != "_reserved_")
    return 1


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["date", "step", "area"]), _SCALARS, max_size=3), _SECTION, _SECTION)
def test_grib_keys_reads_as_flat_keys(mars, repro, parameter):
    entry = {"mars": mars, "grib_repro": repro, "grib": {"parameter": parameter}}
    flat = flat_keys(entry)
    assume(len(flat) == _leaves(entry))  # {"a.b": 1, "a": {"b": 2}} flattens ambiguously: not a real case
    view = GribKeys(flat_keys(entry, skip=GRIB_SECTIONS), entry)
    for key, value in flat.items():
        if "_reserved_" in key:
            continue  # flat_keys drops _reserved_ sections: never looked up through the view
        got = view.get(key, "absent")
        assert got == value or (got != got and value != value), key  # NaN equals NaN here
        assert key in view
    assert view.get("grib_repro.no such key") is None
    assert "grib.parameter.no such key" not in view
    assert set(view) == set(flat)


def test_varying_nested_nan_counts_as_equal_to_nan():
    nodes = [{"level": float("nan"), "units": "K", "pl": [1, 2]} for _ in range(3)]  # three distinct NaN objects
    assert _varying_nested(nodes, "grib_repro.") == set()
    nodes[1] = {**nodes[1], "level": 850.0, "pl": [1, 3]}
    expected = _varying_maps([flat_keys(n, "grib_repro.") for n in nodes])
    assert _varying_nested(nodes, "grib_repro.") == expected == {"grib_repro.level", "grib_repro.pl"}
