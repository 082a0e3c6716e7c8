"""Hostile and damaged zTensor (.zt) files: every case ends in the package's errors, fast, with bounded memory.

Starts from valid v0.1 files written here (``write_ztensor_v01``/``to_ztensor``: raw, zstd,
crc32c, sha256, custom fields), copies of the shared fixtures (Rust 0.1.4 big-endian and sparse
tags, v1 dialects 1.0 and 1.2 with sparse parts and sha256, v2 seekable zstd) and a small
canonical v2 file built here (dense, bool, sparse COO, attributes). Applies truncation at every
offset, random byte flips, the trailing index length, v2 footer manifest offset/length and CBOR
offset/size fields set to hostile values, the index/manifest replaced by deep, oversized, tagged
or wrongly typed CBOR, and shuffled index entries. ``tests/test_ztensor.py`` already checks the
``corrupt/`` fixtures; this file covers what issue 8 adds.
"""

from __future__ import annotations

import contextlib
import copy
import struct
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cbor2
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import LONG, SPECIAL_VALUES, fuzz_stats, run_case, with_field
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.codecs.checksums import xxh3_64
from xarray_tensogram.errors import LimitExceededError, MetadataError, MissingHashError, XarrayTensogramError
from xarray_tensogram.formats.ztensor import open_ztensor, write_ztensor_v01
from xarray_tensogram.write.ztensor import to_ztensor

DATA = Path(__file__).parent / "data" / "ztensor"
MAGIC_V2 = b"\x89ZT2\r\n\x1a\n"
STATS = fuzz_stats("ztensor")


# -- valid files ---------------------------------------------------------------------------------------
def _v2_file(objects: dict, blobs: list[tuple[int, bytes]], attributes: dict | None = None) -> bytes:
    """A v2 container: blobs at 4096 multiples, canonical manifest last, then the 40-byte footer."""
    end = max([o + len(b) for o, b in blobs] + [4096])
    manifest_at = (end + 4095) // 4096 * 4096
    root: dict[str, Any] = {"objects": objects}
    if attributes:
        root["attributes"] = attributes
    manifest = cbor2.dumps(root, canonical=True)
    out = bytearray(MAGIC_V2 + bytes(manifest_at - 8))
    for o, b in blobs:
        out[o : o + len(b)] = b
    return bytes(out) + manifest + struct.pack("<QQQII", manifest_at, len(manifest), xxh3_64(manifest), 2, 0) + MAGIC_V2


def _small_v2() -> bytes:
    a = np.arange(6, dtype="<f4")
    flags = np.array([0, 1, 1], np.uint8)
    coords = np.array([0, 2, 1, 0], "<u4")
    values = np.array([5, 7], "<i2")
    objects = {
        "a": {
            "shape": [2, 3],
            "layout": "dense",
            "attributes": {"units": "m", "n": [1, 2.5]},
            "parts": {"data": {"blob": [4096, 24], "dtype": "f32", "digest": f"xxh3:{xxh3_64(a.tobytes()):016x}"}},
        },
        "b": {
            "shape": [3],
            "layout": "dense",
            "parts": {
                "data": {
                    "blob": [4160, 3],
                    "dtype": "u8",
                    "type": "bool",
                    "digest": f"xxh3:{xxh3_64(flags.tobytes()):016x}",
                }
            },
        },
        "s": {
            "shape": [3, 2],
            "layout": "zt.sparse_coo/1",
            "parts": {"coords": {"blob": [4224, 16], "dtype": "u32"}, "values": {"blob": [4288, 4], "dtype": "i16"}},
        },
    }
    return _v2_file(
        objects,
        [(4096, a.tobytes()), (4160, flags.tobytes()), (4224, coords.tobytes()), (4288, values.tobytes())],
        {"title": "fuzz"},
    )


def _written(fn: Callable[[Path], None]) -> bytes:
    path = Path(tempfile.mkdtemp()) / "f.zt"
    fn(path)
    return path.read_bytes()


def _valid_files() -> dict[str, bytes]:
    rng = np.random.default_rng(3)
    mixed = {
        "f": rng.random((3, 4)).astype("f4"),
        "i": np.arange(5, dtype="i8"),
        "b": np.array([True, False]),
        "s": np.float64(2.5),
        "e": np.zeros((0, 3), "u2"),
    }
    files = {
        "v01_raw": _written(lambda p: write_ztensor_v01(p, mixed)),
        "v01_zstd_crc32c": _written(lambda p: write_ztensor_v01(p, mixed, compression="zstd", checksum="crc32c")),
        "v01_raw_sha256": _written(
            lambda p: write_ztensor_v01(p, [("w", np.arange(8, dtype="<i2"), {"k": [1, {"x": 2}]})], checksum="sha256")
        ),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.Dataset({"t": (("y", "x"), rng.random((3, 2)).astype("f4"), {"units": "K"})}, coords={"y": [1, 2, 3]})
        files["to_ztensor_zstd"] = _written(lambda p: to_ztensor(ds, str(p), compression="zstd", checksum="crc32c"))
    for name in (
        "v0_1/rust_0_1_4/kitchen_sink.zt",
        "v0_1/rust_0_1_4/sparse_layout_tags.zt",
        "v0_1/rust_0_1_4/big_endian.zt",
        "v1/sparse.zt",
        "v1/sha256.zt",
        "v1/writer_1_0_0/basic.zt",
        "v1/writer_1_1_1/basic.zt",
        "v2/aligned_4096_zstd.zt",
    ):
        files[name] = (DATA / name).read_bytes()
    files["v2_small"] = _small_v2()
    return files


FILES = _valid_files()
SMALL = [k for k, v in FILES.items() if len(v) <= 2000]
V2 = ["v2_small", "v2/aligned_4096_zstd.zt"]


def _legit(data: bytes) -> int:
    with open_ztensor(data) as z:
        return max((z.read(t.index).nbytes for t in z.tensors), default=0)


LEGIT = {k: max(_legit(v), 4096) for k, v in FILES.items()}


# -- what a user does ----------------------------------------------------------------------------------
def _read_all(data: bytes) -> None:
    """Low-level API: every tensor plain, verified and by rows; one tensor's error does not hide the others."""
    failed: list[XarrayTensogramError] = []
    with open_ztensor(data) as z:
        for info in z.tensors:
            for verify in (False, True):
                try:
                    z.read(info.index, verify=verify)
                    if info.shape and info.problem is None:
                        z.reader(info.index, verify=verify).read_rows(0, min(1, info.shape[0]))
                except MissingHashError:
                    pass
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
    for data in [b"", b"ZTEN0001" + bytes(16), *FILES.values()]:
        with contextlib.suppress(XarrayTensogramError):
            exercise(data)


_warm_up()


@pytest.mark.parametrize("name", list(FILES))
def test_valid_files_read(name):
    exercise(FILES[name])


# -- truncation and flips ------------------------------------------------------------------------------
def _cuts(data: bytes) -> range | list[int]:
    if LONG or len(data) <= 2000:
        return range(len(data))
    # v2: the blob heap is mostly padding; every offset near the blobs and the footer, a stride elsewhere
    near = set(range(len(data) - 400, len(data))) | set(range(4096, 4400)) | set(range(0, len(data), 61))
    return sorted(near)


@pytest.mark.parametrize("name", SMALL + V2)
def test_truncation_at_every_offset(name):
    data = FILES[name]
    for cut in _cuts(data):
        run_case(exercise, data[:cut], LEGIT[name], STATS, f"{name} truncated at {cut}")


@pytest.mark.parametrize("name", SMALL + V2)
@settings(max_examples=400 if LONG else 30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips(name, data):
    raw = FILES[name]
    b = bytearray(raw)
    lo = 0 if name not in V2 else 4096  # v2: flips in the heap padding prove nothing; aim at blobs and footer
    for _ in range(data.draw(st.integers(1, 4))):
        region = data.draw(st.sampled_from(["any", "tail"]))
        pos = (
            data.draw(st.integers(lo, len(b) - 1))
            if region == "any"
            else data.draw(st.integers(max(lo, len(b) - 300), len(b) - 1))
        )
        b[pos] = data.draw(st.integers(0, 255))
    run_case(exercise, bytes(b), LEGIT[name], STATS, f"{name} with flipped bytes")


# -- index / manifest access ---------------------------------------------------------------------------
def _split(data: bytes) -> tuple[str, int, Any]:
    """(kind, start of the CBOR, decoded CBOR) with kind 'v01', 'v1_8', 'v1_16' or 'v2'."""
    if data[:8] == MAGIC_V2:
        m_off, m_len = struct.unpack("<QQ", data[-40:-24])
        return "v2", m_off, cbor2.loads(data[m_off : m_off + m_len])
    footer = 16 if data[:8] == b"ZTEN1000" and data[-8:] == b"ZTEN1000" else 8
    length = struct.unpack("<Q", data[len(data) - footer : len(data) - footer + 8])[0]
    start = len(data) - footer - length
    kind = "v01" if data[:8] == b"ZTEN0001" else f"v1_{footer}"
    return kind, start, cbor2.loads(data[start : len(data) - footer])


def _with_index(data: bytes, raw: bytes) -> bytes:
    """``data`` with its index/manifest replaced by the CBOR bytes ``raw`` (footer and hash rebuilt)."""
    kind, start, _ = _split(data)
    if kind == "v2":
        return data[:start] + raw + struct.pack("<QQQII", start, len(raw), xxh3_64(raw), 2, 0) + MAGIC_V2
    tail = struct.pack("<Q", len(raw)) + (b"ZTEN1000" if kind == "v1_16" else b"")
    return data[:start] + raw + tail


def _encode(kind: str, obj: Any) -> bytes:
    return cbor2.dumps(obj, canonical=kind == "v2")


def _numeric_paths(kind: str, root: Any) -> list[tuple[Any, ...]]:
    """Paths (key tuples) to every offset/size/length/shape integer of the first few tensors."""
    paths: list[tuple[Any, ...]] = []
    if kind == "v01":
        for i, e in enumerate(root[:3]):
            paths += [(i, "offset"), (i, "size")] + [(i, "shape", k) for k in range(len(e["shape"]))]
        return paths
    objects_key = "tensors" if "tensors" in root else "objects"
    for name in list(root[objects_key])[:3]:
        obj = root[objects_key][name]
        paths += [(objects_key, name, "shape", k) for k in range(len(obj["shape"]))]
        parts_key = "parts" if kind == "v2" else "components"
        for pname, part in obj[parts_key].items():
            base = (objects_key, name, parts_key, pname)
            if kind == "v2":
                paths += [(*base, "blob", 0), (*base, "blob", 1)]
                if "decoded_length" in part:
                    paths.append((*base, "decoded_length"))
            else:
                paths += [(*base, "offset"), (*base, "length")]
                if "uncompressed_length" in part:
                    paths.append((*base, "uncompressed_length"))
    return paths


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(root)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


FIELD_FILES = [
    "v01_raw",
    "v01_zstd_crc32c",
    "v0_1/rust_0_1_4/sparse_layout_tags.zt",
    "v0_1/rust_0_1_4/big_endian.zt",
    "v1/sparse.zt",
    "v1/writer_1_0_0/basic.zt",
    "v2_small",
    "v2/aligned_4096_zstd.zt",
] + (["v1/sha256.zt"] if LONG else [])


@pytest.mark.parametrize("name", FIELD_FILES)
def test_trailing_length_and_footer_fields(name):
    """The index length (v0.1/v1) or the v2 footer's manifest offset, length, hash and version."""
    data = FILES[name]
    kind, _, _ = _split(data)
    n = len(data)
    fields = (
        [(n - 40, 8), (n - 32, 8), (n - 24, 8), (n - 16, 4)]
        if kind == "v2"
        else [(n - 16, 8)]
        if kind == "v1_16"
        else [(n - 8, 8)]
    )
    for off, width in fields:
        for value in [*SPECIAL_VALUES, n, n - 40, 4096]:
            run_case(
                exercise,
                with_field(data, off, width, value, "little"),
                LEGIT[name],
                STATS,
                f"{name}: footer field at {off} set to {value}",
            )


@pytest.mark.parametrize("name", FIELD_FILES)
def test_cbor_offset_size_and_shape_fields(name):
    """Every offset/size/length/shape integer in the index re-encoded with hostile values."""
    data = FILES[name]
    kind, _, root = _split(data)
    for path in _numeric_paths(kind, root):
        for value in SPECIAL_VALUES + [len(data)] + ([2**63, -1] if LONG else []):
            mutated = _with_index(data, _encode(kind, _set(root, path, value)))
            run_case(exercise, mutated, LEGIT[name], STATS, f"{name}: {path} set to {value}")


# -- index/manifest replaced by hostile CBOR -----------------------------------------------------------
def _cyclic() -> bytes:
    """tag 28 (shareable) array holding a tag 29 reference to itself: decodes to a list that contains itself."""
    return b"\xd8\x1c\x81\xd8\x1d\x00"


#: oversized items: as a whole index, and in one slot per file (tracemalloc makes each such case slow)
BIG = [cbor2.dumps("x" * 300000), cbor2.dumps(list(range(20000))), cbor2.dumps({f"k{i}": i for i in range(5000)})]


def _weird_values() -> list[bytes]:
    """CBOR items to put where metadata goes: deep, long, tagged, wrongly typed."""
    return [
        b"\x81" * 5000 + b"\x00",
        b"\x81" * 100 + b"\x00",
        b"\xa1\x61a" * 100 + b"\x00",
        _cyclic(),
        cbor2.dumps("x" * 3000),
        cbor2.dumps(list(range(500))),
        cbor2.dumps({f"k{i}": i for i in range(200)}),
        b"\xc1\x1a\x00\x00\x00\x01",
        b"\xc0\x74" + b"2020-01-01T00:00:00Z",
        b"\xd9\x01\x02\x82\x01\x02",
        b"\xd8\x23\x63a+b",
        b"\xd8\x24\x60",
        b"\xd8\x25\x50" + b"1" * 16,
        b"\xd9\x03\xe7\x01",
        b"\xd8\x1b\x82\x61a\x80",
        b"\xc2\x49\x01" + b"\x00" * 8,
        b"\xc3\x41\x00",
        b"\xd9\xd9\xf7\x80",
        b"\xf9\x7e\x00",
        b"\xfb" + struct.pack(">d", 1e308),
        b"\x5b" + b"\xff" * 8,
        b"\x9b" + b"\xff" * 8,
        b"\xbb" + b"\xff" * 8,
        b"\x7f\x61a",
        b"\xbf\x61a",
        b"\xff",
        b"\x1c",
        cbor2.dumps(5),
        cbor2.dumps(None),
        cbor2.dumps(True),
        cbor2.dumps(-1),
        cbor2.dumps(2**64 - 1),
        cbor2.dumps(1.5),
        cbor2.dumps(b"\x00" * 10),
        cbor2.dumps([]),
        cbor2.dumps({}),
        cbor2.dumps({1: 2}),
        cbor2.dumps({b"k": 1}),
    ]


WEIRD = _weird_values()


def _hostile_indexes(kind: str, root: Any) -> list[bytes]:
    """Whole indexes/manifests: the weird values as the root, and in each standard slot of the first tensor."""
    out = list(WEIRD) + list(BIG)
    if kind == "v01":
        first = root[0]
        for key in [
            "name",
            "offset",
            "size",
            "dtype",
            "layout",
            "shape",
            "encoding",
            "data_endianness",
            "checksum",
            "custom",
        ]:
            for raw in WEIRD[:: 1 if LONG else 4]:
                entry = dict(first.items())
                entry[key] = cbor2.CBORTag(55799, None)  # placeholder, replaced by raw bytes below
                enc = cbor2.dumps([entry, *root[1:]])
                out.append(enc.replace(b"\xd9\xd9\xf7\xf6", raw, 1))
        out.append(cbor2.dumps([first] * 120))  # many entries sharing one blob: ~1.5 ms and ~3.5 KB each (see report)
        out.append(cbor2.dumps([dict(first, shape=[1] * 65)]))
        out.append(cbor2.dumps([dict(first, shape=[2**32, 2**32, 2**32])]))
        return out
    objects_key = "tensors" if "tensors" in root else "objects"
    parts_key = "parts" if kind == "v2" else "components"
    name = next(iter(root[objects_key]))
    obj = root[objects_key][name]
    pname = next(iter(obj[parts_key]))
    slots = [
        (objects_key,),
        (objects_key, name),
        (objects_key, name, "shape"),
        (objects_key, name, "attributes"),
        (objects_key, name, "layout" if kind == "v2" else "format"),
        (objects_key, name, parts_key),
        (objects_key, name, parts_key, pname),
        ("attributes",),
        ("version",),
        ("shards",),
    ]
    slots += [
        (objects_key, name, parts_key, pname, k)
        for k in (
            "dtype",
            "type",
            "encoding",
            "digest",
            "shard",
            "blob",
            "decoded_length",
            "offset",
            "length",
            "uncompressed_length",
        )
    ]
    marker = b"\xd9\xd9\xf7\xf6"  # self-describe tag around null: a unique byte string to splice at
    for path in slots:
        for raw in WEIRD[:: 1 if LONG else 5]:
            enc = _encode(kind, _set(root, path, cbor2.CBORTag(55799, None)))
            out.append(enc.replace(marker, raw, 1))
    for raw in BIG if LONG else BIG[1:2]:
        enc = _encode(kind, _set(root, (objects_key, name, "attributes"), cbor2.CBORTag(55799, None)))
        out.append(enc.replace(marker, raw, 1))
    many = _set(root, (objects_key,), {f"o{i:05d}": obj for i in range(100)})
    out.append(_encode(kind, many))
    out.append(_encode(kind, _set(root, (objects_key, name, "shape"), [1] * 65)))
    out.append(_encode(kind, _set(root, (objects_key, name, "attributes"), {"deep": _nest(70)})))
    out.append(_encode(kind, _set(root, ("shards",), {"../evil": {"size": 1}, "x": {"size": 1}})))
    out.append(_encode(kind, _set(root, (objects_key, name, parts_key, pname, "shard"), "missing")))
    return out


def _nest(depth: int) -> Any:
    v: Any = 0
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize(
    "name", ["v01_raw", "v0_1/rust_0_1_4/kitchen_sink.zt", "v1/sparse.zt", "v1/writer_1_0_0/basic.zt", "v2_small"]
)
def test_hostile_index(name):
    data = FILES[name]
    kind, _, root = _split(data)
    for i, raw in enumerate(_hostile_indexes(kind, root)):
        run_case(
            exercise, _with_index(data, raw), LEGIT[name] + 8 * len(raw), STATS, f"{name}: index #{i} {raw[:24]!r}"
        )


# -- shuffled entries ----------------------------------------------------------------------------------
def _by_name(data: bytes) -> dict[str, np.ndarray]:
    with open_ztensor(data) as z:
        return {t.name: np.array(z.read(t.index)) for t in z.tensors}


@pytest.mark.parametrize(
    "name", ["v01_raw", "v01_zstd_crc32c", "v0_1/rust_0_1_4/kitchen_sink.zt", "v1/sparse.zt", "v1/sha256.zt"]
)
def test_shuffled_entries_read_the_same_values(name):
    """v0.1 index array order and v1 object map order are free: the same tensors come back by name."""
    data = FILES[name]
    kind, _, root = _split(data)
    expected = _by_name(data)
    rng = np.random.default_rng(2)
    for _ in range(60 if LONG else 8):
        if kind == "v01":
            shuffled: Any = [root[k] for k in rng.permutation(len(root))]
        else:
            key = "tensors" if "tensors" in root else "objects"
            names = list(root[key])
            shuffled = dict(root, **{key: {names[k]: root[key][names[k]] for k in rng.permutation(len(names))}})
        mutated = _with_index(data, cbor2.dumps(shuffled))
        run_case(exercise, mutated, LEGIT[name], STATS, f"{name} shuffled")
        got = _by_name(mutated)
        assert got.keys() == expected.keys()
        for k, v in expected.items():  # bytes, not values: NaN payloads and bfloat16 compare exactly
            assert (got[k].dtype, got[k].shape, got[k].tobytes()) == (v.dtype, v.shape, v.tobytes()), k


def test_v2_shuffled_manifest_is_refused_as_non_canonical():
    """v2 manifests must be deterministic CBOR: a reordered object map is a MetadataError, not a silent read."""
    data = FILES["v2_small"]
    _, _m_off, root = _split(data)
    reordered = {"objects": dict(reversed(list(root["objects"].items()))), "attributes": root["attributes"]}
    raw = cbor2.dumps(reordered)  # not canonical: keys out of order
    mutated = _with_index(data, raw)
    with pytest.raises(MetadataError, match="deterministic"):
        open_ztensor(mutated)
    run_case(exercise, mutated, LEGIT["v2_small"], STATS, "v2 reordered manifest")


# -- explicit limits ----------------------------------------------------------------------------------
def test_rank_limit_is_named():
    data = FILES["v01_raw"]
    _kind, _, root = _split(data)
    with pytest.raises(LimitExceededError, match="rank 65 exceeds the limit of 64"):
        open_ztensor(_with_index(data, cbor2.dumps([dict(root[0], shape=[1] * 65)])))


@pytest.mark.parametrize("name, limit", [("v1/sparse.zt", 64), ("v2_small", 32), ("v01_raw", 64)])
def test_metadata_nesting_limit_is_named(name, limit):
    data = FILES[name]
    kind, _, root = _split(data)
    if kind == "v01":
        bad = [dict(root[0], deep=_nest(limit + 2)), *root[1:]]
    else:
        key = "objects"
        first = next(iter(root[key]))
        bad = _set(root, (key, first, "attributes"), {"deep": _nest(limit + 2)})
    with pytest.raises(LimitExceededError, match=f"nested deeper than {limit} levels"):
        open_ztensor(_with_index(data, _encode(kind, bad)))
    with pytest.raises(LimitExceededError, match="nesting is too deep"):
        open_ztensor(_with_index(data, b"\x81" * 100000 + b"\x00"))


def test_cbor_tags_that_build_objects_are_refused():
    """Custom fields and attributes hold plain CBOR only: datetimes, sets, regexes, MIME, UUIDs, unknown tags."""
    data = FILES["v01_raw"]
    _, _, root = _split(data)
    for raw in [
        b"\xc1\x1a\x00\x00\x00\x01",
        b"\xd9\x01\x02\x82\x01\x02",
        b"\xd8\x23\x63a+b",
        b"\xd8\x24\x60",
        b"\xd8\x25\x50" + b"1" * 16,
        b"\xd9\x03\xe7\x01",
        b"\xd8\x1b\x82\x61a\x80",
    ]:
        enc = cbor2.dumps([dict(root[0], custom=cbor2.CBORTag(55799, None)), *root[1:]])
        with pytest.raises(MetadataError, match=r"CBOR|not allowed"):
            open_ztensor(_with_index(data, enc.replace(b"\xd9\xd9\xf7\xf6", raw, 1)))


def test_shape_product_against_payload_is_checked():
    data = FILES["v01_raw"]
    _, _, root = _split(data)
    big = [dict(root[0], shape=[2**20, 2**20]), *root[1:]]
    with (
        open_ztensor(_with_index(data, cbor2.dumps(big))) as z,
        pytest.raises(XarrayTensogramError, match=r"stored size is 48 bytes, the shape and dtype need 4398046511104"),
    ):
        z.read(0)


def test_zstd_decoded_size_is_bounded_by_the_entry():
    data = FILES["v1/sha256.zt"]
    kind, _, root = _split(data)
    bad = _set(root, ("objects", "t_uint8_zstd", "components", "data", "uncompressed_length"), 2**40)
    bad = _set(bad, ("objects", "t_uint8_zstd", "shape"), [2**40])
    with (
        open_ztensor(_with_index(data, _encode(kind, bad))) as z,
        pytest.raises(LimitExceededError, match=r"22 zstd bytes cannot decode to the 1099511627776 bytes declared"),
    ):
        z.read("t_uint8_zstd")


def test_sparse_dense_form_limit_is_named():
    """A sparse tensor is densified: its dense size is capped (MAX_SPARSE_DENSE_BYTES), before any allocation."""
    data = FILES["v1/sparse.zt"]
    kind, _, root = _split(data)
    bad = _set(root, ("objects", "coo", "shape"), [2**20, 2**20])
    with (
        open_ztensor(_with_index(data, _encode(kind, bad))) as z,
        pytest.raises(LimitExceededError, match="MAX_SPARSE_DENSE_BYTES"),
    ):
        z.read("coo")
    run_case(exercise, _with_index(data, _encode(kind, bad)), LEGIT["v1/sparse.zt"], STATS, "sparse 2**40 dense")


def test_manifest_size_limit_is_named(tmp_path):
    """An index length over MAX_MANIFEST (1 GiB) is refused before anything is read (sparse file on disk)."""
    path = tmp_path / "huge.zt"
    with open(path, "wb") as f:
        f.write(b"ZTEN0001")
        f.truncate((1 << 30) + 4096)
        f.seek((1 << 30) + 4096 - 8)
        f.write(struct.pack("<Q", (1 << 30) + 1))
    with pytest.raises(LimitExceededError, match="limit of 1073741824"):
        open_ztensor(path)
