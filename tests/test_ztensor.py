"""zTensor (.zt): reference fixtures against their manifest, damaged files, interop with ztensor 0.1.4,
round trips through to_ztensor, and the lazy array over zTensor tensors.

Oracles are the fixture manifest (written by the reference implementations) and the
``ztensor==0.1.4`` package; our own writer is never the oracle for our reader.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import cbor2
import numpy as np
import pytest
import xarray as xr
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xarray_tensogram.array import read_outer
from xarray_tensogram.assemble.ztensor import ztensor_to_dataset
from xarray_tensogram.errors import (
    CodecError,
    CorruptFileError,
    DimensionNameError,
    IntegrityError,
    LimitExceededError,
    MetadataError,
    MissingHashError,
    TruncatedFileError,
    UnsupportedError,
    XarrayTensogramError,
)
from xarray_tensogram.formats.ztensor import open_ztensor, write_ztensor_v01
from xarray_tensogram.write.ztensor import to_ztensor

DATA = Path(__file__).parent / "data" / "ztensor"
MANIFEST = json.loads((DATA / "MANIFEST.json").read_text())
FILES = {f["path"]: f for f in MANIFEST["files"]}
BAD = {e["path"]: e for e in MANIFEST["corrupt"] + MANIFEST["edge"]}

#: manifest error kinds -> the package's exception classes
ERRORS: dict[str, type[Exception]] = {
    "bad_magic": CorruptFileError,
    "truncated": TruncatedFileError,
    "index_size_out_of_range": CorruptFileError,
    "index_cbor_invalid": MetadataError,
    "metadata_invalid": MetadataError,
    "offset_misaligned": CorruptFileError,
    "offset_in_header": CorruptFileError,
    "blob_out_of_bounds": CorruptFileError,
    "size_mismatch": CorruptFileError,
    "zstd_size_mismatch": (CodecError, CorruptFileError),  # type: ignore[dict-item]  # a tuple: either class is right
    "zstd_corrupt": CodecError,
    "checksum_mismatch": IntegrityError,
    "checksum_malformed": MetadataError,
    "unsupported_dtype": UnsupportedError,
    "unsupported_encoding": UnsupportedError,
    "unsupported_layout": UnsupportedError,
}

try:
    import ztensor as ref  # the reference 0.1.4 package (test extra)
except ImportError:  # pragma: no cover
    ref = None
needs_ref = pytest.mark.skipif(ref is None, reason="ztensor==0.1.4 not installed")


def logical_bytes(a: np.ndarray) -> bytes:
    """The manifest's convention: C order, little-endian, bfloat16 raw words, bool as 0/1 bytes."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    assert np.little_endian or a.dtype.itemsize == 1
    return a.tobytes()


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(logical_bytes(a)).hexdigest()


def manifest_value(v: Any) -> Any:
    """Manifest JSON -> the Python value CBOR decoding gives (byte strings are hex-wrapped)."""
    if isinstance(v, dict) and set(v) == {"$bytes_hex"}:
        return bytes.fromhex(v["$bytes_hex"])
    if isinstance(v, dict):
        return {k: manifest_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [manifest_value(x) for x in v]
    return v


def expected_sparse(t: dict) -> np.ndarray | None:
    """Dense values of a sparse manifest entry, built from the component values it lists."""
    shape = tuple(t["shape"])
    if "sparse_decoded_by_0_1_4_rust_reader" in t:
        d = t["sparse_decoded_by_0_1_4_rust_reader"]
        dense = np.zeros(shape)
        if "indptr" in d:
            rows = np.repeat(np.arange(shape[0]), np.diff(d["indptr"]))
            dense[rows, d["indices"]] = d["values"]
        else:
            dense[tuple(np.array(d["indices"]).T)] = d["values"]
        return dense
    comps = t.get("components") or t.get("parts") or {}
    layout = t.get("format") or t.get("layout")

    def vals(k):
        return comps[k]["values_summary"]["values"]

    dense = np.zeros(shape)
    if "csr" in layout:
        dense[np.repeat(np.arange(shape[0]), np.diff(vals("indptr"))), vals("indices")] = vals("values")
        return dense
    if "coo" in layout:
        dense[tuple(np.array(vals("coords")).reshape(len(shape), -1))] = vals("values")
        return dense
    return None


def has_digest(info: Any) -> bool:
    return all(p.digest for p in info.parts.values())


# -- reference fixtures against the manifest --------------------------------------------------------
@pytest.mark.parametrize("path", sorted(FILES))
def test_manifest_file(path: str) -> None:
    entry = FILES[path]
    with open_ztensor(DATA / path) as z:
        assert z.version == {"v0.1": "0.1", "v1": "1", "v2": "2"}[entry["format_version"]]
        assert len(z.tensors) == entry["tensor_count"]
        if entry.get("manifest_version_field"):
            assert z.dialect == entry["manifest_version_field"]
        if entry.get("file_attributes"):
            assert z.attrs == entry["file_attributes"]
        by_order = entry["format_version"] == "v0.1"  # v1/v2 names are unique map keys
        for k, t in enumerate(entry["tensors"]):
            info = z.tensors[k] if by_order else z.tensor(t["name"])
            assert (info.name, info.dtype, list(info.shape)) == (t["name"], t["dtype"], t["shape"])
            assert info.layout == (t.get("layout") or t.get("format"))
            if by_order:
                assert (info.encoding, info.checksum, info.data_endianness) == (
                    t["encoding"],
                    t["checksum"],
                    t["data_endianness"],
                )
                assert (info.main_part.offset, info.main_part.length) == (t["offset"], t["size"])
                assert dict(info.attrs) == manifest_value(t["custom_fields"])
            else:
                expected_attrs = t.get("attributes") or {}
                assert dict(info.attrs) == expected_attrs
            values = z.read(info.index, verify=has_digest(info))
            assert values.shape == tuple(t["shape"])
            dense = expected_sparse(t)
            if dense is not None:
                np.testing.assert_array_equal(values.astype(np.float64), dense)
            else:
                parts = list((t.get("components") or t.get("parts") or {}).values())
                expected = t.get("sha256") or (parts[0]["sha256"] if len(parts) == 1 else None)
                assert sha(values) == expected, (path, t["name"])


def test_manifest_covers_every_fixture() -> None:
    on_disk = {str(p.relative_to(DATA)) for p in DATA.rglob("*.zt")}
    assert on_disk == set(FILES) | set(BAD)


@pytest.mark.parametrize("path", sorted(BAD))
def test_damaged_and_edge_files(path: str) -> None:
    entry = BAD[path]
    kinds = ([entry["expected_error"]] if entry["expected_error"] else []) + [
        k for k in entry.get("also_acceptable", []) if k != "accept"
    ]
    accept = entry["expected_error"] is None or "accept" in entry.get("also_acceptable", [])
    allowed = tuple(c for k in kinds for c in (ERRORS[k] if isinstance(ERRORS[k], tuple) else (ERRORS[k],)))
    try:
        z = open_ztensor(DATA / path)
    except XarrayTensogramError as exc:
        # an error is right when it is of a kind the manifest lists (also_acceptable counts even when the
        # reference accepts the file: size_zero_no_index.zt may be a cut file, so it is refused as truncated)
        assert isinstance(exc, allowed), f"{path}: {type(exc).__name__}: {exc}"
        assert str(DATA / path) in str(exc)
        return
    assert entry["stage"] == "read" or accept, f"{path} should fail at open"
    with z:
        failures = []
        for info in z.tensors:
            try:
                values = z.read(info.index, verify=bool(info.checksum))
            except XarrayTensogramError as exc:
                assert isinstance(exc, allowed), f"{path}: {type(exc).__name__}: {exc}"
                assert repr(info.name) in str(exc)
                failures.append(exc)
                continue
            observed = entry["observed_ztensor_0_1_4_reader"]
            for ot in observed.get("tensors", []):
                if ot["name"] == info.name and ot["nbytes"] == values.nbytes:
                    assert sha(values) == ot["sha256"]
        if not accept:
            assert failures, f"{path}: expected {kinds}"
        elif not kinds:
            assert not failures, path


def test_zero_copy_view_over_the_memory_map() -> None:
    with open_ztensor(DATA / "v0_1/large.zt") as z:
        info = max(z.tensors, key=lambda t: t.main_part.length)
        before = z.source.bytes_read
        a = z.read(info.index)
        assert not a.flags.writeable and not a.flags.owndata
        base = a
        while getattr(base, "base", None) is not None and not isinstance(base, memoryview):
            base = base.base
        assert isinstance(base, memoryview)  # a view of the mmap, not a copy
        assert z.source.bytes_read - before == info.main_part.length
    assert a.sum() == a.copy().sum()  # still valid after close


def test_open_reads_metadata_only() -> None:
    with open_ztensor(DATA / "v0_1/large.zt") as z:
        entry = FILES["v0_1/large.zt"]
        assert z.source.bytes_read <= entry["index_size"] + 16 + 8
    with open_ztensor(DATA / "v2/canonical_basic.zt") as z:
        assert z.source.bytes_read <= 8 + 40 + 1024


def test_name_lookup_returns_first_duplicate() -> None:
    with open_ztensor(DATA / "v0_1/duplicate_names.zt") as z:
        assert z.read("dup").dtype == np.float32
        assert z.read(1).dtype == np.int8


def test_verify_without_checksum_is_explicit() -> None:
    with open_ztensor(DATA / "v0_1/dtype_float32.zt") as z:
        with pytest.raises(MissingHashError, match="no checksum"):
            z.read("x", verify=True)
        z.read("x")


def test_every_truncation_raises_package_errors() -> None:
    blob = (DATA / "v0_1/rust_0_1_4/crc32c_zstd.zt").read_bytes()
    for n in range(len(blob)):
        try:
            with open_ztensor(blob[:n]) as z:
                for info in z.tensors:
                    z.read(info.index)
        except XarrayTensogramError:
            continue


def test_random_byte_flips_raise_only_package_errors() -> None:
    rng = np.random.default_rng(0)
    for path in ("v0_1/rust_0_1_4/kitchen_sink.zt", "v1/sparse.zt", "v0_1/all_dtypes.zt"):
        blob = bytearray((DATA / path).read_bytes())
        for _ in range(150):
            damaged = bytearray(blob)
            for pos in rng.integers(0, len(blob), size=3):
                damaged[pos] ^= int(rng.integers(1, 256))
            try:
                with open_ztensor(bytes(damaged)) as z:
                    for info in z.tensors:
                        z.read(info.index, verify=bool(info.checksum))
            except XarrayTensogramError:
                pass


def test_zstd_claiming_a_huge_size_is_refused_before_allocating(tmp_path: Path) -> None:
    path = tmp_path / "bomb.zt"
    write_ztensor_v01(path, {"x": np.zeros(4, "f4")}, compression="zstd")
    blob = bytearray(path.read_bytes())
    blob = blob.replace(b"\x65shape\x81\x04", b"\x65shape\x81\x1b" + struct.pack(">Q", 1 << 40))
    idx_len = struct.unpack("<Q", blob[-8:])[0] + 8
    blob[-8:] = struct.pack("<Q", idx_len)
    with open_ztensor(bytes(blob)) as z, pytest.raises(LimitExceededError):
        z.read("x")


# -- v2 containers built here: shards and rejection rules ---------------------------------------------
def _v2_file(objects: dict, blobs: list[tuple[int, bytes]], extra_root: dict | None = None) -> bytes:
    size = max([o + len(b) for o, b in blobs] + [4096])
    manifest_at = (size + 4095) // 4096 * 4096
    manifest = cbor2.dumps({"objects": objects, **(extra_root or {})}, canonical=True)
    out = bytearray(b"\x89ZT2\r\n\x1a\n" + bytes(manifest_at - 8))
    for o, b in blobs:
        out[o : o + len(b)] = b
    out += manifest
    out += struct.pack("<QQQII", manifest_at, len(manifest), xxhash.xxh3_64_intdigest(manifest), 2, 0)
    return bytes(out) + b"\x89ZT2\r\n\x1a\n"


def _dense(offset: int, data: np.ndarray, shard: str | None = None) -> dict:
    part = {
        "blob": [offset, data.nbytes],
        "dtype": "f32",
        "digest": f"xxh3:{xxhash.xxh3_64_intdigest(data.tobytes()):016x}",
    }
    if shard:
        part["shard"] = shard
    return {"shape": list(data.shape), "layout": "dense", "parts": {"data": part}}


def test_v2_shard_next_to_the_file(tmp_path: Path) -> None:
    values = np.arange(6, dtype="<f4")
    (tmp_path / "w.shard").write_bytes(bytes(64) + values.tobytes())
    (tmp_path / "main.zt").write_bytes(
        _v2_file(
            {"w": _dense(64, values, "w.shard")}, [], {"shards": {"w.shard": {"size": 64 + 24, "digest": "xxh3:0"}}}
        )
    )
    with open_ztensor(tmp_path / "main.zt") as z:
        np.testing.assert_array_equal(z.read("w", verify=True), values)


@pytest.mark.parametrize("name", ["../evil", "/etc/passwd", "sub/dir", "..", ".hidden", "a\\b", ""])
def test_v2_shard_paths_outside_the_directory_are_refused(tmp_path: Path, name: str) -> None:
    values = np.arange(3, dtype="<f4")
    outside = tmp_path.parent / "evil"
    outside.write_bytes(bytes(64) + values.tobytes())
    path = tmp_path / "main.zt"
    path.write_bytes(_v2_file({"w": _dense(64, values, name)}, [], {"shards": {name: {"size": 76, "digest": "x"}}}))
    with pytest.raises(MetadataError, match="shard"):
        open_ztensor(path)


def test_v2_rejects_non_canonical_manifest_and_bad_hash() -> None:
    good = _v2_file({"a": _dense(4096, np.ones(2, "<f4"))}, [(4096, np.ones(2, "<f4").tobytes())])
    with open_ztensor(good) as z:
        assert z.read("a").tolist() == [1.0, 1.0]
    m_off, m_len = struct.unpack("<QQ", good[-40:-24])
    flipped = bytearray(good)
    flipped[m_off + 3] ^= 1
    with pytest.raises(IntegrityError):
        open_ztensor(bytes(flipped))
    manifest = cbor2.loads(good[m_off : m_off + m_len])
    loose = cbor2.dumps(manifest)  # definite but not canonical (float/ordering rules) -> must be rejected
    if loose != good[m_off : m_off + m_len]:
        body = good[:m_off] + loose
        footer = struct.pack("<QQQII", m_off, len(loose), xxhash.xxh3_64_intdigest(loose), 2, 0)
        with pytest.raises(MetadataError, match="deterministic"):
            open_ztensor(body + footer + good[-8:])


def test_v2_bool_bytes_must_be_0_or_1() -> None:
    raw = np.array([0, 1, 2], np.uint8)
    part = {"blob": [4096, 3], "dtype": "u8", "type": "bool"}
    z = open_ztensor(
        _v2_file({"b": {"shape": [3], "layout": "dense", "parts": {"data": part}}}, [(4096, raw.tobytes())])
    )
    assert z.tensor("b").numpy_dtype == np.bool_
    with pytest.raises(CodecError, match="bool"):
        z.read("b")


def test_v2_sparse_coo_profile() -> None:
    coords = np.array([[0, 2], [1, 0]], "<u4").reshape(-1)  # structure of arrays: rows, then columns
    values = np.array([5, 7], "<i2")
    parts = {
        "coords": {"blob": [4096, coords.nbytes], "dtype": "u32"},
        "values": {"blob": [8192, values.nbytes], "dtype": "i16"},
    }
    z = open_ztensor(
        _v2_file(
            {"s": {"shape": [3, 2], "layout": "zt.sparse_coo/1", "parts": parts}},
            [(4096, coords.tobytes()), (8192, values.tobytes())],
        )
    )
    np.testing.assert_array_equal(z.read("s"), [[0, 5], [0, 0], [7, 0]])


def test_v2_overlapping_blobs_rejected() -> None:
    a = np.ones(4, "<f4")
    objects = {"a": _dense(4096, a), "b": _dense(4104, a)}
    with pytest.raises(CorruptFileError, match="overlap"):
        open_ztensor(_v2_file(objects, [(4096, a.tobytes())]))


# -- interop with the reference ztensor 0.1.4 -------------------------------------------------------
REF_DTYPES = [
    "float64",
    "float32",
    "float16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
    "bool",
]


def _sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(42)
    out = {}
    for i, dt in enumerate(REF_DTYPES):
        shape = [(2, 3), (7,), (1, 2, 2), (0, 3), (5, 1)][i % 5]
        if dt == "bool":
            out[f"t_{dt}"] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            out[f"t_{dt}"] = (rng.standard_normal(shape) * 100).astype(dt)
    import ml_dtypes

    out["t_bfloat16"] = np.array([[1.5, -2.0], [3.25, 0.0]], dtype=ml_dtypes.bfloat16)
    return out


@needs_ref
def test_reference_writer_we_read(tmp_path: Path) -> None:
    arrays = _sample_arrays()
    path = str(tmp_path / "ref.zt")
    with ref.Writer(path) as w:
        for name, a in arrays.items():
            w.add_tensor(name, a)
    with open_ztensor(path) as z:
        assert z.names == list(arrays)
        for name, a in arrays.items():
            got = z.read(name)
            assert got.dtype == a.dtype and got.shape == a.shape
            assert logical_bytes(got) == logical_bytes(a)
    ds = xr.open_dataset(path, engine="tensogram")
    for name, a in arrays.items():
        np.testing.assert_array_equal(ds[name].values, a)
    ds.close()


@needs_ref
@pytest.mark.parametrize(
    "compression,checksum", [(None, None), ("zstd", None), (None, "crc32c"), ("zstd", "crc32c"), (None, "sha256")]
)
def test_we_write_reference_reads(tmp_path: Path, compression: str | None, checksum: str | None) -> None:
    arrays = _sample_arrays()
    path = str(tmp_path / "ours.zt")
    write_ztensor_v01(path, arrays, compression=compression, checksum=checksum)
    with ref.Reader(path) as r:
        assert r.get_tensor_names() == list(arrays)
        for name, a in arrays.items():
            got = r.read_tensor(name)
            assert got.shape == a.shape and logical_bytes(np.asarray(got)) == logical_bytes(a), name
            assert r.get_metadata(name).checksum == (None if checksum is None else r.get_metadata(name).checksum)
    with open_ztensor(path) as z:
        for name, a in arrays.items():
            assert logical_bytes(z.read(name, verify=checksum is not None)) == logical_bytes(a)


@needs_ref
def test_raw_files_byte_identical_to_reference(tmp_path: Path) -> None:
    arrays = _sample_arrays()
    arrays["big"] = np.arange(300_000, dtype=np.int64).reshape(600, 500)
    arrays["dup"] = np.ones(3, np.float32)
    items = [*list(arrays.items()), ("dup", np.zeros((2, 2), np.uint16)), ("", np.ones(1, np.int8))]
    ours, theirs = tmp_path / "ours.zt", str(tmp_path / "theirs.zt")
    write_ztensor_v01(ours, items)
    with ref.Writer(theirs) as w:
        for name, a in items:
            w.add_tensor(name, a)
    assert ours.read_bytes() == Path(theirs).read_bytes()
    empty_ours, empty_theirs = tmp_path / "e1.zt", str(tmp_path / "e2.zt")
    write_ztensor_v01(empty_ours, {})
    with ref.Writer(empty_theirs):
        pass
    assert empty_ours.read_bytes() == Path(empty_theirs).read_bytes() == (DATA / "v0_1/empty.zt").read_bytes()
    # the reference fixture written by ztensor 0.1.4 itself
    basic = open_ztensor(DATA / "v0_1/writer_0_1_4_basic.zt")
    write_ztensor_v01(tmp_path / "basic.zt", [(t.name, basic.read(t.index)) for t in basic.tensors])
    assert (tmp_path / "basic.zt").read_bytes() == (DATA / "v0_1/writer_0_1_4_basic.zt").read_bytes()


# -- the Dataset mapping ----------------------------------------------------------------------------
def test_mapping_names_dims_attrs() -> None:
    with pytest.warns(UserWarning, match="duplicate tensor names"):
        ds = xr.open_dataset(DATA / "v0_1/duplicate_names.zt", engine="tensogram")
    assert list(ds.data_vars) == ["dup", "dup_1"]
    assert ds["dup"].dims != ds["dup_1"].dims  # sizes 2 and 3 cannot share a generic dim
    ds = xr.open_dataset(DATA / "v0_1/names.zt", engine="tensogram")
    assert "dots.in.name" in ds and "héllo/wörld" in ds
    ds = xr.open_dataset(DATA / "v0_1/rust_0_1_4/custom_fields.zt", engine="tensogram")
    attrs = ds["with_custom"].attrs
    assert attrs["description"] == "hello wörld" and attrs["flag"] == 1 and attrs["nested.a"] == 1
    assert attrs["blob"] == "00ff10" and attrs["half"] == 0.5 and list(attrs["ints"]) == [1, 2, 300, -4]
    ds2 = xr.open_dataset(DATA / "v2/sparse_and_attributes.zt", engine="tensogram")
    assert ds2.attrs["framework"] == "numpy" and ds2["q"].attrs["unit"] == "m"


def _netcdf_safe(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.dtype.kind in "iuf"
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return isinstance(value, (str, int, float, np.number)) and not isinstance(value, bool)


@pytest.mark.parametrize(
    "path",
    [
        "v0_1/rust_0_1_4/custom_fields.zt",
        "v0_1/rust_0_1_4/kitchen_sink.zt",
        "v2/sparse_and_attributes.zt",
        "v1/attributes_and_types.zt",
    ],
)
def test_attrs_are_netcdf_safe(path: str) -> None:
    ds = xr.open_dataset(DATA / path, engine="tensogram")
    for attrs in [ds.attrs] + [v.attrs for v in ds.variables.values()]:
        for key, value in attrs.items():
            assert isinstance(key, str) and _netcdf_safe(value), (key, value)


def test_dim_names_custom_key_and_kwarg(tmp_path: Path) -> None:
    path = tmp_path / "d.zt"
    write_ztensor_v01(
        path,
        [
            ("t", np.zeros((2, 3), "f4"), {"dim_names": ["lat", "lon"]}),
            ("u", np.zeros((3,), "f4"), {"dim_names": ["lon"]}),
            ("v", np.zeros(5, "i2")),
        ],
    )
    ds = xr.open_dataset(path, engine="tensogram")
    assert ds["t"].dims == ("lat", "lon") and ds["u"].dims == ("lon",) and ds["v"].dims == ("dim_0",)
    ds = xr.open_dataset(path, engine="tensogram", dim_names={"t": ["y", "x"], "v": ["n"]})
    assert ds["t"].dims == ("y", "x") and ds["v"].dims == ("n",) and ds["u"].dims == ("lon",)
    with open_ztensor(path) as z:
        # one rule for every format: a list names the axes of every data variable, so all must have that many
        with pytest.raises(DimensionNameError, match=r"d\.zt.*dim_names has 2 entries.*'u' has 1 axis.*dict"):
            ztensor_to_dataset(z, dim_names=["a", "b"], verify_hash=False)
        with pytest.raises(DimensionNameError, match=r"dim_names for 't' has 1 entry.*'t' has 2 axes"):
            ztensor_to_dataset(z, dim_names={"t": ["only_one"]}, verify_hash=False)


def test_a_list_of_dim_names_is_not_applied_to_dimension_coordinates(tmp_path: Path) -> None:
    """Issue 28: dim_names=["y"] was applied to the coordinate tensors and then reported as a conflict."""
    path = tmp_path / "c.zt"
    write_ztensor_v01(
        path,
        [
            ("lat", np.arange(3, dtype="f4"), {"dim_names": ["lat"]}),
            ("lon", np.arange(4, dtype="f4"), {"dim_names": ["lon"]}),
            ("t", np.zeros((3, 4), "f4"), {"dim_names": ["lat", "lon"]}),
            ("s", np.zeros((3, 4), "f4")),
        ],
    )
    ds = xr.open_dataset(path, engine="tensogram", dim_names=["y", "x"])
    assert ds["t"].dims == ("y", "x") and ds["s"].dims == ("y", "x")
    assert ds["lat"].dims == ("lat",) and ds["lon"].dims == ("lon",)  # the coordinates keep their names
    with pytest.raises(DimensionNameError) as info:
        xr.open_dataset(path, engine="tensogram", dim_names=["y"])
    text = str(info.value)
    assert "c.zt" in text and "dim_names has 1 entry" in text and "'t' has 2 axes" in text
    assert "give one name per axis" in text and "conflict" not in text


def test_bfloat16_with_and_without_ml_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    import ml_dtypes

    ds = xr.open_dataset(DATA / "v0_1/dtype_bfloat16.zt", engine="tensogram")
    assert ds["x"].dtype == ml_dtypes.bfloat16
    from xarray_tensogram.formats.ztensor import model

    monkeypatch.setattr(model, "available", lambda name: False)
    ds = xr.open_dataset(DATA / "v0_1/dtype_bfloat16.zt", engine="tensogram")
    assert ds["x"].dtype == np.uint16 and ds["x"].attrs["ztensor_dtype"] == "bfloat16"
    assert sha(ds["x"].values) == FILES["v0_1/dtype_bfloat16.zt"]["tensors"][0]["sha256"]


def test_unreadable_tensors_are_skipped_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="skipping tensor"):
        ds = xr.open_dataset(DATA / "corrupt/unknown_dtype.zt", engine="tensogram")
    assert not ds.data_vars


@needs_ref
@pytest.mark.parametrize("chunks", [{}, "auto"])
def test_compressed_tensor_is_one_whole_dask_chunk(tmp_path: Path, chunks: Any) -> None:
    """A zstd tensor is one stream: under ``chunks={}`` and ``"auto"`` (below ``array.chunk-size``) each
    variable is one Dask chunk of the whole tensor, never a split stream, and the values are the reference's."""
    path = tmp_path / "z.zt"
    arrays = {"w.0": np.arange(655 * 64, dtype="f4").reshape(655, 64), "w.1": np.linspace(0, 1, 300).reshape(3, 100)}
    write_ztensor_v01(path, arrays, compression="zstd")
    with xr.open_dataset(path, engine="tensogram", chunks=chunks) as ds, ref.Reader(str(path)) as r:
        for name, a in arrays.items():
            assert ds[name].chunks == tuple((n,) for n in a.shape)
            view = r.read_tensor(name)  # held while it is read: the reference's array borrows its buffer
            np.testing.assert_array_equal(ds[name].values, np.array(view))


def test_verify_hash_through_the_backend() -> None:
    ds = xr.open_dataset(DATA / "corrupt/checksum_mismatch_raw.zt", engine="tensogram", verify_hash=True)
    with pytest.raises(IntegrityError):
        _ = ds["t_float32"].values
    ds = xr.open_dataset(DATA / "corrupt/checksum_mismatch_raw.zt", engine="tensogram")
    _ = ds["t_float32"].values  # not verified unless asked


# -- lazy array: row bands and random selections -----------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_selections_equal_numpy(tmp_path: Path, data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7))
    values = np.arange(int(np.prod(shape)), dtype="<f4").reshape(shape)
    compression = data.draw(st.sampled_from([None, "zstd"]))
    path = tmp_path / "r.zt"
    write_ztensor_v01(path, {"v": values}, compression=compression)
    rows = data.draw(st.integers(0, shape[0]))
    key = tuple(
        data.draw(
            st.one_of(
                st.integers(-n, n - 1),
                st.slices(n),
                st.lists(st.integers(0, n - 1), min_size=1, max_size=4).map(np.array),
            )
        )
        for n in shape
    )
    with open_ztensor(path) as z:
        spec = z.array_spec("v", rows_per_chunk=rows)
        got = read_outer(spec, key)
    expected = values
    for axis in reversed(range(len(key))):  # orthogonal indexing, axis by axis
        expected = expected[(slice(None),) * axis + (key[axis],)]
    np.testing.assert_array_equal(got, expected)


def test_row_band_reads_only_those_bytes(tmp_path: Path) -> None:
    path = tmp_path / "rows.zt"
    values = np.arange(1000 * 50, dtype="<f8").reshape(1000, 50)
    write_ztensor_v01(path, {"v": values})
    with open_ztensor(path) as z:
        spec = z.array_spec("v", rows_per_chunk=100)
        assert spec.chunk_shape == (100, 50)
        before = z.source.bytes_read
        np.testing.assert_array_equal(read_outer(spec, (slice(10, 12), slice(None))), values[10:12])
        assert z.source.bytes_read - before == 2 * 50 * 8


# -- round trips through to_ztensor and open_dataset --------------------------------------------------
DTYPES = st.sampled_from(["<f8", "<f4", "<f2", "<i8", "<i4", "<i2", "i1", "<u8", "<u4", "<u2", "u1", "?", ">f4", ">i2"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arrays=st.lists(
        DTYPES.flatmap(
            lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
        ),
        min_size=1,
        max_size=4,
    ),
    compression=st.sampled_from([None, "zstd"]),
    checksum=st.sampled_from([None, "crc32c", "sha256"]),
)
def test_round_trip_dataset(
    tmp_path: Path, arrays: list[np.ndarray], compression: str | None, checksum: str | None
) -> None:
    ds = xr.Dataset(
        {
            f"v.{i}": (tuple(f"d{i}_{k}" for k in range(a.ndim)), a, {"note": f"n{i}", "k": i})
            for i, a in enumerate(arrays)
        }
    )
    path = tmp_path / "rt.zt"
    to_ztensor(ds, str(path), compression=compression, checksum=checksum)
    back = xr.open_dataset(path, engine="tensogram", verify_hash=checksum is not None)
    try:
        assert list(back.data_vars) == list(ds.data_vars)
        for name in ds.data_vars:
            assert back[name].dims == ds[name].dims and back[name].attrs == ds[name].attrs
            assert back[name].dtype == ds[name].dtype.newbyteorder("=")
            assert logical_bytes(back[name].values) == logical_bytes(
                ds[name].values.astype(ds[name].dtype.newbyteorder("="))
            )
    finally:
        back.close()


def test_round_trip_with_coords_and_times(tmp_path: Path) -> None:
    import pandas as pd

    ds = xr.Dataset(
        {"t2m": (("time", "lat"), np.random.default_rng(1).random((3, 4)).astype("f4"), {"units": "K"})},
        coords={
            "time": pd.date_range("2020-01-01", periods=3),
            "lat": np.linspace(-10, 10, 4),
            "h": ("lat", np.arange(4.0)),
        },
    )
    path = tmp_path / "c.zt"
    to_ztensor(ds, str(path), compression="zstd")
    back = xr.open_dataset(path, engine="tensogram").load()
    xr.testing.assert_identical(back, ds)
    odd = xr.Dataset({"a": ("x", [1], {"shape": "kept", "dtype": "too"})})  # named like v0.1 keys: under cf.
    to_ztensor(odd, str(tmp_path / "odd.zt"))
    with xr.open_dataset(tmp_path / "odd.zt", engine="tensogram") as back:
        xr.testing.assert_identical(back, odd)


def test_to_ztensor_mapping_and_engine_guess(tmp_path: Path) -> None:
    path = tmp_path / "m.zt"
    to_ztensor(
        {"a": np.arange(3), "b": xr.DataArray(np.ones((2, 2)), dims=("y", "x"), attrs={"units": "m"})}, str(path)
    )
    ds = xr.open_dataset(path)  # engine guessed from the magic
    assert ds["b"].dims == ("y", "x") and ds["b"].attrs["units"] == "m"
    np.testing.assert_array_equal(ds["a"].values, np.arange(3))


def _checkpoint() -> dict[str, np.ndarray]:
    """Twelve unrelated tensors, as an ML checkpoint holds them: shapes that share no dim, a 0-d one, a bool."""
    rng = np.random.default_rng(3)
    return {
        "encoder.w": rng.random((7, 5)).astype("f4"),
        "encoder.b": rng.random(5).astype("f4"),
        "decoder.w": rng.random((5, 7)),
        "decoder.h": rng.random((2, 3, 4)).astype("f2"),
        "step": np.asarray(1234, "i8"),
        "mask": rng.random((4, 3)) > 0.5,
        "q8": np.arange(-4, 4, dtype="i1"),
        "u8": np.arange(6, dtype="u1").reshape(2, 3),
        "i16": np.arange(5, dtype="i2"),
        "u32": np.arange(11, dtype="u4"),
        "i64": np.arange(6, dtype="i8").reshape(3, 2),
        "u64": np.array([0, 2**63 + 5], dtype="u8"),
    }


@needs_ref
def test_to_ztensor_checkpoint_of_unrelated_tensors(tmp_path: Path) -> None:
    """Each tensor of a mapping keeps its own shape and dtype, with dims of its own: the reference reader and
    ours give every value back."""
    tensors = _checkpoint()
    path = tmp_path / "ckpt.zt"
    to_ztensor(tensors, path)
    with ref.Reader(str(path)) as reader, xr.open_dataset(path, engine="tensogram") as ours:
        for name, original in tensors.items():
            theirs = reader.read_tensor(name, to="numpy")
            assert theirs.dtype == original.dtype, name
            np.testing.assert_array_equal(theirs.reshape(original.shape), original, err_msg=name)
            assert ours[name].dtype == original.dtype and ours[name].shape == original.shape, name
            assert ours[name].dims == tuple(f"{name}.dim_{i}" for i in range(original.ndim)), name
            np.testing.assert_array_equal(ours[name].values, original, err_msg=name)


def test_to_ztensor_mapping_with_clashing_dataarrays_is_refused(tmp_path: Path) -> None:
    """DataArrays keep the dims they name: one dim with two sizes is a package error naming the tensors."""
    clash = {"a": xr.DataArray(np.zeros(3), dims="x"), "b": xr.DataArray(np.zeros(4), dims="x")}
    with pytest.raises(XarrayTensogramError, match=r"\['a', 'b'\].*distinct dim names"):
        to_ztensor(clash, tmp_path / "clash.zt")
    assert not (tmp_path / "clash.zt").exists()


def test_sample_ships_with_the_package() -> None:
    from importlib import resources

    path = resources.files("xarray_tensogram") / "samples" / "sample.zt"
    ds = xr.open_dataset(str(path), engine="tensogram")
    assert len(ds.data_vars) >= 2 and all(not d.startswith("dim_") for d in ds.dims)
    ds.load()
