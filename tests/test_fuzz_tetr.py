"""Hostile and damaged Tetration (.tet) files: every case ends in the package's errors, fast, with bounded memory.

Starts from valid files (written here by ``write_tetr``/``to_tetr``, plus copies of the shared
fixtures: zstd, unordered index, legacy footer, spilled footer) and applies truncation at every
offset, random byte flips, length/offset fields set to hostile values, footer JSON replaced by
deep, oversized or wrongly typed values, and shuffled index entries. ``tests/test_tetr.py``
already checks the ``corrupt/`` fixtures; this file covers what issue 8 adds.
"""

from __future__ import annotations

import io
import json
import re
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import LONG, SPECIAL_VALUES, fuzz_stats, run_case, with_field
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.errors import LimitExceededError, XarrayTensogramError
from xarray_tensogram.formats.tetr import DatasetWrite, open_tetr, write_tetr
from xarray_tensogram.write.tetr import to_tetr

DATA = Path(__file__).parent / "data" / "tetr"
STATS = fuzz_stats("tetr")


def _written(arrays, **kw) -> bytes:
    buf = io.BytesIO()
    write_tetr(buf, arrays, **kw)
    return buf.getvalue()


def _valid_files() -> dict[str, bytes]:
    rng = np.random.default_rng(5)
    files: dict[str, bytes] = {}
    a = rng.random((5, 7)).astype("<f4")
    files["raw_tiles_footer"] = _written(
        [DatasetWrite("t2m", a, (2, 3), "raw", ["y", "x"], {"y": [str(v) for v in range(5)]}, {"units": "K"})],
        history=[{"op": "write", "source": "fuzz", "at": "1700000000"}],
        file_metadata={"tool": "fuzz"},
    )
    b = rng.integers(0, 9, size=(3, 4, 5)).astype("<i2")
    files["zstd_3d"] = _written([DatasetWrite("q", b, (2, 3, 2), "zstd")])
    files["multi_dataset"] = _written(
        [
            DatasetWrite("u", rng.random(6).astype("<f8"), (4,), "raw"),
            DatasetWrite("v", rng.integers(0, 255, size=(2, 3)).astype("u1"), (1, 3), "zstd", attrs={"k": "v"}),
        ],
        history=[("convert", "nc", "1")],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buf = io.BytesIO()
        ds = xr.Dataset(
            {"z": (("t", "x"), rng.random((4, 3)).astype("f4"), {"long_name": "z"})},
            coords={"t": [0, 6, 12, 18], "x": [10.0, 20.0, 30.0]},
        )
        path = Path(__import__("tempfile").mkdtemp()) / "ds.tet"
        to_tetr(ds, path, chunks={"t": 2}, compression="zstd")
        files["to_tetr_zstd"] = path.read_bytes()
    del buf
    for name in (
        "sample.tet",
        "zstd_multiblock.tet",
        "unordered_index.tet",
        "footer_legacy_triple.tet",
        "rank8_u8.tet",
        "empty_with_footer.tet",
        "footer_spill_history.tet",
    ):
        files[name] = (DATA / name).read_bytes()
    return files


FILES = _valid_files()
SMALL = [k for k, v in FILES.items() if len(v) <= 2000]


def _legit(data: bytes) -> int:
    """Largest decoded dataset of a valid file (``read`` returns whole datasets)."""
    with open_tetr(data) as t:
        return max((d.nbytes for d in t.datasets), default=0)


LEGIT = {k: max(_legit(v), 4096) for k, v in FILES.items()}


def _read_all(data: bytes) -> None:
    """Low-level API: open, read every dataset whole and one row of it; errors of one dataset don't hide others."""
    with open_tetr(data) as t:
        failed: list[XarrayTensogramError] = []
        for d in t.datasets:
            try:
                t.read(d.name)
                t.read_region(d.dataset_id, (slice(0, 1),))
            except XarrayTensogramError as exc:
                failed.append(exc)
        if failed:
            raise failed[0]


def _load(data: bytes) -> None:
    ds = TensogramBackendEntrypoint().open_dataset(data)
    try:
        ds.load()
    finally:
        ds.close()


def exercise(data: bytes) -> None:
    """Both paths run; a foreign exception from either escapes at once, package errors are collected."""
    errors: list[XarrayTensogramError] = []
    for step in (_read_all, _load):
        try:
            step(data)
        except XarrayTensogramError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


def _warm_up() -> None:
    """Import everything the cases can reach once, so imports are not counted as a case's allocation."""
    for data in [b"", b"TENSOGRM" + bytes(40), *FILES.values()]:
        try:
            with warnings.catch_warnings():  # the fake Tensogram message is skipped with a CorruptMessageWarning
                warnings.simplefilter("ignore")
                exercise(data)
        except XarrayTensogramError:
            pass


_warm_up()


@pytest.mark.parametrize("name", list(FILES))
def test_valid_files_read(name):
    exercise(FILES[name])


@pytest.mark.parametrize("name", SMALL)
def test_truncation_at_every_offset(name):
    data = FILES[name]
    step = 1 if LONG or len(data) <= 1200 else 2
    for cut in range(0, len(data), step):
        run_case(exercise, data[:cut], LEGIT[name], STATS, f"{name} truncated at {cut}")


@pytest.mark.parametrize("name", SMALL)
@settings(max_examples=500 if LONG else 40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips(name, data):
    raw = FILES[name]
    b = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    run_case(exercise, bytes(b), LEGIT[name], STATS, f"{name} with flipped bytes")


# -- length and offset fields --------------------------------------------------------------------------
def _fields(data: bytes) -> list[tuple[int, int, str]]:
    """(offset, width, label) of every length/offset/count field (little-endian)."""
    count, _flags, index_off = struct.unpack_from("<IIQ", data, 8)
    out = [(8, 4, "dataset_count"), (16, 8, "chunk_index_offset"), (24, 8, "chunk_index_length")]
    if count:
        out.append((32, 8, "dataset_blob_len"))
        pos = 40
        for i in range(count):
            name_len, _code, ndim, _ = struct.unpack_from("<IIII", data, pos)
            out += [
                (pos, 4, f"record {i} name_len"),
                (pos + 4, 4, f"record {i} dtype"),
                (pos + 8, 4, f"record {i} ndim"),
            ]
            dims = pos + 16 + name_len + (8 - (16 + name_len) % 8) % 8
            out += [
                (dims + 8 * k, 8, f"record {i} {'shape' if k < ndim else 'chunk_shape'}[{k % ndim}]")
                for k in range(2 * ndim)
            ]
            pos = dims + 16 * ndim
        n = struct.unpack_from("<Q", data, index_off + 8)[0]
        out.append((index_off + 8, 8, "TIDX entry_count"))
        for k in sorted({0, 1, n - 1} & set(range(n))):
            e = index_off + 32 + 104 * k
            out += [
                (e, 8, f"entry {k} dataset_id"),
                (e + 8, 8, f"entry {k} coords[0]"),
                (e + 72, 8, f"entry {k} payload_offset"),
                (e + 80, 8, f"entry {k} raw_byte_len"),
                (e + 88, 8, f"entry {k} stored_byte_len"),
                (e + 96, 4, f"entry {k} codec"),
            ]
    if data[-4:] == b"THST":
        out += [(len(data) - 16, 8, "footer history_json_len"), (len(data) - 8, 4, "footer version")]
    return out


FIELD_FILES = [
    "raw_tiles_footer",
    "zstd_3d",
    "multi_dataset",
    "to_tetr_zstd",
    "unordered_index.tet",
    "rank8_u8.tet",
    "footer_spill_history.tet",
]


@pytest.mark.parametrize("name", FIELD_FILES)
def test_length_and_offset_fields(name):
    data = FILES[name]
    for off, width, label in _fields(data):
        for value in [*SPECIAL_VALUES, len(data)]:
            run_case(
                exercise,
                with_field(data, off, width, value, "little"),
                LEGIT[name],
                STATS,
                f"{name}: {label} set to {value}",
            )


def _footer(data: bytes) -> tuple[int, dict]:
    json_len = struct.unpack_from("<Q", data, len(data) - 16)[0]
    start = len(data) - 16 - json_len
    return start, json.loads(data[start : len(data) - 16])


def _with_footer_json(data: bytes, text: bytes) -> bytes:
    start, _ = _footer(data)
    return data[:start] + text + struct.pack("<QI4s", len(text), 1, b"THST")


@pytest.mark.parametrize("name", ["footer_spill_history.tet"])
def test_metadata_ref_fields(name):
    data = FILES[name]
    _, top = _footer(data)
    assert "metadata_ref" in top
    for key in ("offset", "len"):
        for value in [*SPECIAL_VALUES, len(data), -1, 1.5, True, "7", None]:
            footer = dict(top, metadata_ref=dict(top["metadata_ref"], **{key: value}))
            run_case(
                exercise,
                _with_footer_json(data, json.dumps(footer).encode()),
                LEGIT[name],
                STATS,
                f"{name}: metadata_ref.{key} = {value!r}",
            )


# -- footer JSON replaced by hostile values -------------------------------------------------------------
def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


WEIRD_FOOTERS: list[bytes] = [
    s.encode("utf-8", "surrogatepass") if isinstance(s, str) else s
    for s in [
        _nested(100000),
        _nested(3000),
        _nested(200),
        '{"history":' + _nested(150, "") + "}",
        '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{"a":' + "{" * 0 + '"x"}}}}}',
        '{"history":[],"metadata":' + '{"a":' * 5000 + "1" + "}" * 5000 + "}",
        '{"history":[],"metadata":{"datasets":{"t2m":{"dim_names":' + _nested(500, '"y"') + "}}}}",
        "",
        "null",
        "5",
        '"x"',
        "[]",
        "{}",
        '{"history":null}',
        '{"history":5}',
        '{"history":[5]}',
        '{"history":[[1,2,3]]}',
        '{"history":[["a","b"]]}',
        '{"history":[{"op":"a","source":"b"}]}',
        '{"history":[{"op":"a","source":"b","at":"c","evil":1}]}',
        '{"history":[{"op":"a","source":"b","at":"c","parents":"p","params":[]}]}',
        '{"history":[{"op":"a","source":"b","at":"c","params":{"k":5}}]}',
        '{"history":[],"metadata":[]}',
        '{"history":[],"metadata":{"file":7}}',
        '{"history":[],"metadata":{"file":{"tool":5}}}',
        '{"history":[],"metadata":{"datasets":[]}}',
        '{"history":[],"metadata":{"datasets":{"t2m":5}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{"units":5}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":[]}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"dim_names":"yx"}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"dim_names":["y","y"]}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"dim_names":["a","b","c","d"]}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"dim_names":[""]}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"y":{"labels":["1","2"]}}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"y":{"labels":"abc"}}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"y":[]}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"0":{"labels":["nan","inf","-0","1e999","x"]}}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"9":{"labels":["1"]}}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{"_FillValue":"zz","scale_factor":"1e999"}}}}}',
        '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{"x":"\\ud800"}}}}}',
        '{"history":[],"metadata":{"pad":"' + "p" * 300000 + '"}}',
        '{"history":[],"metadata_ref":{"offset":0,"len":5}}',
        '{"history":[],"metadata_ref":[0,5]}',
        '{"history":[],"metadata_ref":{"offset":18446744073709551615,"len":18446744073709551615}}',
        '{"history":[],"history":5}',
        '{"history":[]} trailing',
        '{"history":[],"x":NaN}',
        b'{"history":[],"metadata":{"file":{"tool":"\xff\xfe"}}}',
        b"\x00" * 64,
    ]
]

#: footers over the reference's MetadataLimitsV1 -> the text the error must contain
LIMIT_FOOTERS = {
    "attrs has 100 entries, the limit is 64": '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{'
    + ",".join(f'"a{i}":"v"' for i in range(100))
    + "}}}}}",
    "2000 bytes of UTF-8, expected 1..1024": '{"history":[],"metadata":{"datasets":{"t2m":{"attrs":{"x":"'
    + "y" * 2000
    + '"}}}}}',
    "history has 5000 entries, the limit is 4096": '{"history":[' + ",".join(['["a","b","c"]'] * 5000) + "]}",
    "metadata.datasets has 300 entries, the limit is 256": '{"history":[],"metadata":{"datasets":{'
    + ",".join(f'"d{i}":{{}}' for i in range(300))
    + "}}}",
    "labels has 65 entries, the limit is 64": '{"history":[],"metadata":{"datasets":{"t2m":{"coords":{"y":{"labels":['
    + ",".join(['"1"'] * 65)
    + "]}}}}}}",
}
WEIRD_FOOTERS += [v.encode() for v in LIMIT_FOOTERS.values()]


@pytest.mark.parametrize("name", ["raw_tiles_footer", "multi_dataset", "footer_legacy_triple.tet"])
def test_weird_footer_json(name):
    data = FILES[name]
    for i, text in enumerate(WEIRD_FOOTERS):
        run_case(
            exercise,
            _with_footer_json(data, text),
            LEGIT[name] + len(text) * 4,
            STATS,
            f"{name}: footer JSON #{i} {text[:40]!r}",
        )


def test_weird_spilled_metadata():
    """The spill is parsed too: replace it (keeping the footer's metadata_ref consistent)."""
    data = FILES["footer_spill_history.tet"]
    _start, top = _footer(data)
    off = top["metadata_ref"]["offset"]
    for i, text in enumerate(WEIRD_FOOTERS):
        footer = json.dumps(dict(top, metadata_ref={"offset": off, "len": len(text)})).encode()
        mutated = data[:off] + text + footer + struct.pack("<QI4s", len(footer), 1, b"THST")
        run_case(exercise, mutated, LEGIT["footer_spill_history.tet"], STATS, f"spill #{i} {text[:40]!r}")


# -- shuffled index entries -----------------------------------------------------------------------------
def _entries(data: bytes) -> tuple[int, int]:
    index_off = struct.unpack_from("<Q", data, 16)[0]
    return index_off + 32, struct.unpack_from("<Q", data, index_off + 8)[0]


@pytest.mark.parametrize(
    "name", ["raw_tiles_footer", "zstd_3d", "multi_dataset", "to_tetr_zstd", "zstd_multiblock.tet"]
)
def test_shuffled_entries_read_the_same_values(name):
    """Entry order is free in v1: any permutation must read exactly the same arrays."""
    data = FILES[name]
    with open_tetr(data) as t:
        expected = {d.name: t.read(d.name) for d in t.datasets}
    first, n = _entries(data)
    rows = [data[first + 104 * k : first + 104 * (k + 1)] for k in range(n)]
    rng = np.random.default_rng(9)
    for _ in range(200 if LONG else 20):
        order = rng.permutation(n)
        mutated = data[:first] + b"".join(rows[k] for k in order) + data[first + 104 * n :]
        run_case(exercise, mutated, LEGIT[name], STATS, f"{name} entries in order {order.tolist()}")
        with open_tetr(mutated) as t:
            for key, values in expected.items():
                np.testing.assert_array_equal(t.read(key), values)


@pytest.mark.parametrize("name", ["raw_tiles_footer", "zstd_3d", "multi_dataset"])
def test_shuffled_entries_with_swapped_payload_fields(name):
    """Entries permuted but payload descriptions (offset, lengths, codec) left in place: tiles get the wrong bytes."""
    data = bytearray(FILES[name])
    first, n = _entries(bytes(data))
    rng = np.random.default_rng(4)
    for _ in range(100 if LONG else 15):
        order = rng.permutation(n)
        b = bytearray(data)
        for k, j in enumerate(order):
            src = first + 104 * j
            b[first + 104 * k + 72 : first + 104 * k + 104] = data[src + 72 : src + 104]
        run_case(exercise, bytes(b), LEGIT[name], STATS, f"{name} payload fields in order {order.tolist()}")


# -- explicit limits -----------------------------------------------------------------------------------
def test_footer_nesting_limit_is_named():
    data = _with_footer_json(FILES["raw_tiles_footer"], _nested(100000).encode())
    with pytest.raises(LimitExceededError, match="nest"):
        open_tetr(data)
    deep = ('{"history":[],"metadata":{"x":' + _nested(200) + "}}").encode()
    with pytest.raises(LimitExceededError, match=r"nested deeper than 128"):
        open_tetr(_with_footer_json(FILES["raw_tiles_footer"], deep))


def test_footer_limits_are_named():
    base = FILES["raw_tiles_footer"]
    for message, text in LIMIT_FOOTERS.items():
        with pytest.raises(LimitExceededError, match=re.escape(message)):
            open_tetr(_with_footer_json(base, text.encode()))


def test_rank_limit_is_named():
    data = bytearray(FILES["sample.tet"])
    struct.pack_into("<I", data, 40 + 8, 9)
    with pytest.raises(XarrayTensogramError, match=r"ndim 9, expected 1\.\.8"):
        open_tetr(bytes(data))


def test_shape_product_is_checked_against_the_index():
    """A shape whose tile grid the index cannot cover, or a tile whose raw_byte_len is not its clipped size."""
    data = bytearray(FILES["sample.tet"])  # f32 [2, 3] in [2, 2] tiles, record at 40, name "temperature"
    dims = 40 + 16 + 11 + 5
    struct.pack_into("<Q", data, dims, 2**32)
    with pytest.raises(XarrayTensogramError, match=r"2 index entries for a grid of 4294967296 tiles"):
        open_tetr(bytes(data))
    data = bytearray(FILES["sample.tet"])
    first, _ = _entries(bytes(data))
    struct.pack_into("<QQ", data, first + 80, 8, 8)  # tile (0, 0) claims 8 bytes, stored raw in 8
    with pytest.raises(XarrayTensogramError, match=r"raw_byte_len 8, the clipped tile is 16 bytes"):
        open_tetr(bytes(data))


def test_zstd_tile_cannot_promise_more_than_its_payload_can_hold():
    """A one-tile zstd dataset whose shape and raw_byte_len claim 2**40 bytes from a few stored bytes."""
    data = bytearray(_written([DatasetWrite("z", np.zeros((4, 4), "<f4"), (4, 4), "zstd")]))
    dims = 40 + 16 + 1 + 7
    struct.pack_into("<QQ", data, dims, 2**19, 2**19)  # shape
    struct.pack_into("<QQ", data, dims + 16, 2**19, 2**19)  # chunk_shape
    first, _ = _entries(bytes(data))
    struct.pack_into("<Q", data, first + 80, 2**40)
    with pytest.raises(LimitExceededError, match=r"raw_byte_len 1099511627776.*zstd"):
        open_tetr(bytes(data))
    run_case(exercise, bytes(data), 64, STATS, "zstd tile promising 2**40 bytes")
