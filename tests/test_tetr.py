"""Tetration (.tet): fixtures against their manifest, damaged files, byte identity with the
reference files, round trips, the lazy array over tiles, and the xarray mapping.

Oracles: the fixture manifest (written by an independent generator that reproduces the
reference crate's binaries) and ``reference/SHA256SUMS`` (files written by the reference
tool itself). Our writer is never the oracle for our reader: round trips only compare
values we put in with values we get out.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import struct
import warnings
from operator import itemgetter
from pathlib import Path
from typing import Any

import dask
import dask.utils
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xarray_tensogram.array import read_outer
from xarray_tensogram.assemble.tetr import TetrMappingWarning, tetr_group
from xarray_tensogram.codecs import zstd
from xarray_tensogram.errors import (
    CodecError,
    CorruptFileError,
    LimitExceededError,
    MetadataError,
    TruncatedFileError,
    UnsupportedError,
    XarrayTensogramError,
)
from xarray_tensogram.formats.tetr import DTYPE_CODES, DatasetWrite, open_tetr, write_tetr
from xarray_tensogram.io import BytesSource, open_source
from xarray_tensogram.write.tetr import to_tetr

DATA = Path(__file__).parent / "data" / "tetr"
MANIFEST = json.loads((DATA / "MANIFEST.json").read_text())
VALID = {f["file"]: f for f in MANIFEST["files"] if f["valid"]}
CORRUPT = {f["file"]: f for f in MANIFEST["files"] if not f["valid"]}


def tetr_to_dataset(t: Any, **kwargs: Any) -> xr.Dataset:
    """Assembly's raw group as a Dataset without indexes (no CF decoding)."""
    return tetr_group(t, **kwargs).to_dataset()


REFERENCE_SUMS = dict(reversed(line.split()) for line in (DATA / "reference" / "SHA256SUMS").read_text().splitlines())

#: the manifest's selfcheck codes -> the package error each must raise (at open or at read)
ERRORS: dict[str, type[Exception]] = {
    "BadMagic": CorruptFileError,
    "UnsupportedVersion": UnsupportedError,
    "TooShort": TruncatedFileError,
    "IndexOutOfBounds": TruncatedFileError,
    "PayloadOutOfBounds": CorruptFileError,
    "RawStoredMismatch": CorruptFileError,
    "UnsupportedCodec": UnsupportedError,
    "VerifyDatasetTensorBytes": (CorruptFileError, UnsupportedError),  # type: ignore[dict-item]  # a tuple: either class is right
    "VerifyChunkDatasetId": CorruptFileError,
    "BadIndexMagic": CorruptFileError,
    "UnsupportedIndexVersion": UnsupportedError,
    "BadIndexLength": CorruptFileError,
    "ChunkIndexOffsetMismatch": CorruptFileError,
    "DatasetBlobMismatch": CorruptFileError,
    "BadNdim": CorruptFileError,
    "BadDatasetName": CorruptFileError,
    "MissingDatasetDirectory": TruncatedFileError,
    "VerifyDuplicatePayloadOffset": CorruptFileError,
    "FooterMissing": CorruptFileError,
    "FooterVersion": UnsupportedError,
    "FooterJsonParse": MetadataError,
    "FooterOutOfBounds": CorruptFileError,
    "MetadataRefOutOfBounds": CorruptFileError,
    "VerifyFooterMetadata": LimitExceededError,
    "ZstdDecode": CodecError,
}

#: valid fixtures no writer produces (hand-edited layouts, legacy footer rows)
NOT_WRITER_OUTPUT = {
    "empty_trailing_bytes.tet",
    "trailing_bytes.tet",
    "unordered_index.tet",
    "footer_legacy_triple.tet",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def logical_sha256(a: np.ndarray) -> str:
    return sha256(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes())


def _wire_coords(coords: dict[str, list[str]] | None) -> dict[str, Any] | None:
    return None if coords is None else {k: {"labels": v} for k, v in coords.items()}


def _compare_big(expected: dict[str, Any], key: str, value: Any) -> None:
    """Manifest values over 8 KiB are given as ``<key>_sha256`` of their compact sorted JSON."""
    if f"{key}_sha256" in expected:
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        assert sha256(text.encode("utf-8")) == expected[f"{key}_sha256"], key
    else:
        assert value == expected[key], key


# == manifest: valid files ==========================================================================
@pytest.mark.parametrize("name", sorted(VALID))
def test_manifest_valid_file(name: str) -> None:
    entry = VALID[name]
    assert sha256((DATA / name).read_bytes()) == entry["sha256"]
    with open_tetr(DATA / name) as t:
        layout = entry["layout"]
        assert (t.layout_version, len(t.datasets), t.flags) == (
            layout["layout_version"],
            layout["dataset_count"],
            layout["flags"],
        )
        assert (t.index_offset, t.index_length) == (layout["chunk_index_offset"], layout["chunk_index_length"])
        if "file_execution" in layout:
            assert t.execution == layout["file_execution"]
        if "payload_region_end" in layout:
            assert t.payload_end == layout["payload_region_end"]
        for d, md in zip(t.datasets, entry["datasets"], strict=True):
            assert (d.dataset_id, d.name, DTYPE_CODES[d.dtype_code][0], d.dtype_code) == (
                md["dataset_id"],
                md["name"],
                md["dtype"],
                md["dtype_code"],
            )
            assert d.dtype == d.dtype.newbyteorder("<")  # little-endian
            assert (list(d.shape), list(d.chunk_shape), len(d.entries)) == (
                md["shape"],
                md["chunk_shape"],
                md["chunk_count"],
            )
            assert d.codec == {0: "raw", 1: "zstd"}[md["codec"]]
            assert d.dim_names == md["dim_names"]
            _compare_big(md, "coords", _wire_coords(d.coords))
            _compare_big(md, "attrs", d.attrs)
            if isinstance(md["chunks"], list):
                got = [
                    {
                        "chunk_index": e["coords"][: d.ndim].tolist(),
                        "payload_offset": int(e["offset"]),
                        "raw_byte_len": int(e["raw"]),
                        "stored_byte_len": int(e["stored"]),
                        "codec": int(e["codec"]),
                    }
                    for e in d.entries
                ]
                assert sorted(got, key=itemgetter("chunk_index")) == sorted(md["chunks"], key=itemgetter("chunk_index"))
            values = t.read(d.name)
            assert values.shape == tuple(md["shape"]) and values.nbytes == md["logical_nbytes"]
            assert logical_sha256(values) == md["logical_sha256"]
        footer = entry.get("footer")
        if footer is not None:
            assert t.history == footer["history"]
            assert (t.metadata or None) == footer["file_metadata"]
            assert (t.metadata_spill is not None) == footer["metadata_spilled"]
            if footer["metadata_spilled"]:
                assert t.metadata_spill == (footer["spill_offset"], footer["spill_len"])
        else:
            assert t.history == [] and t.metadata == {}


def test_manifest_covers_every_fixture() -> None:
    on_disk = {str(p.relative_to(DATA)) for p in DATA.rglob("*.tet") if p.parent.name != "reference"}
    assert on_disk == set(VALID) | set(CORRUPT)


def test_legacy_history_triple_is_normalised() -> None:
    raw = (DATA / "footer_legacy_triple.tet").read_bytes()
    assert b'[["convert","h5","1700000000"]]' in raw
    with open_tetr(raw) as t:
        assert t.history == VALID["footer_legacy_triple.tet"]["extra"]["expected_history"]


# == manifest: damaged files ========================================================================
@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_manifest_corrupt_file(name: str) -> None:
    entry = CORRUPT[name]
    expected = ERRORS[entry["expected_failure"]["selfcheck_code"]]
    path = DATA / name
    with pytest.raises(expected) as info, open_tetr(path) as t:
        for d in t.datasets:
            t.read(d.name)
    assert str(path) in str(info.value)  # names the file
    assert "byte " in str(info.value) or "dataset" in str(info.value)  # and where


def test_read_stage_failures_open_fine() -> None:
    """Broken zstd frames are found on decode, as the reference does, not at open."""
    for name in ("corrupt/zstd_corrupt_frame.tet", "corrupt/zstd_truncated_frame.tet"):
        with open_tetr(DATA / name) as t:
            with pytest.raises(CodecError, match=r"tile \[0, 0\]"):
                t.read_chunk("z", (0, 0))
            np.testing.assert_array_equal(t.read_chunk("z", (0, 1)), np.zeros((2, 1), "f4"))


@pytest.mark.parametrize("name", ["sample.tet", "footer_metadata.tet", "zstd_multiblock.tet", "empty_with_footer.tet"])
def test_every_truncation_and_byte_flips_raise_our_errors(name: str) -> None:
    """No truncation point or flipped byte escapes as anything but the package's errors (or reads fine)."""
    raw = (DATA / name).read_bytes()
    rng = np.random.default_rng(0)
    variants = [raw[:n] for n in range(len(raw))]
    for pos in rng.integers(0, len(raw), size=200):
        flipped = bytearray(raw)
        flipped[pos] ^= int(rng.integers(1, 256))
        variants.append(bytes(flipped))
    for data in variants:
        try:
            with open_tetr(data) as t:
                for d in t.datasets:
                    t.read(d.name)
        except XarrayTensogramError:
            pass


def test_hostile_entry_count_allocates_nothing() -> None:
    """entry_count * 104 must fit the file before anything is read or allocated."""
    raw = bytearray((DATA / "sample.tet").read_bytes())
    struct.pack_into("<Q", raw, 104 + 8, 2**40)
    struct.pack_into("<Q", raw, 24, 32 + 104 * 2**40)
    src = BytesSource(bytes(raw))
    with pytest.raises(TruncatedFileError):
        open_tetr(src)
    assert src.bytes_read <= 64


def test_zstd_output_is_bounded_by_raw_byte_len() -> None:
    """A frame that expands past raw_byte_len fails without producing the extra output."""
    base = (DATA / "zstd_zeros.tet").read_bytes()
    with open_tetr(base) as t:
        e = t.dataset("z").entries[1]
    bomb = zstd.compress(bytes(64 << 20))
    raw = bytearray(base[: int(e["offset"])] + bomb)
    entry_at = t.index_offset + 32 + 104 * 1
    struct.pack_into("<Q", raw, entry_at + 88, len(bomb))
    with open_tetr(bytes(raw)) as t2, pytest.raises(CodecError, match="expected exactly 8"):
        t2.read_chunk("z", (0, 1))


# == byte identity ==================================================================================
def _regenerate(data: bytes, *, footer: bool | None = None) -> bytes:
    """Decode a file and write its decoded contents again with our writer."""
    with open_tetr(data) as t:
        writes = [
            DatasetWrite(d.name, t.read(d.name), d.chunk_shape, d.codec, d.dim_names, d.coords, d.attrs or None)
            for d in t.datasets
        ]
        out = io.BytesIO()
        execution = (t.execution["memory_budget_percent_bps"], t.execution["memory_budget_bytes"])
        write_tetr(out, writes, history=t.history, file_metadata=t.metadata or None, footer=footer, execution=execution)
    return out.getvalue()


@pytest.mark.parametrize(
    "name", ["sample.tet", "large.tet", "multichunk_u8.tet", "multichunk_u32.tet", "multichunk_f16.tet"]
)
def test_reference_files_regenerate_byte_for_byte(name: str) -> None:
    assert sha256(_regenerate((DATA / "reference" / name).read_bytes())) == REFERENCE_SUMS[name]


def test_reference_plan_regenerates_byte_for_byte() -> None:
    """plan.tet = the f32 'a' file plus a footer {"history":[],"metadata":{}} whose JSON was overwritten with X."""
    with open_tetr(DATA / "reference" / "sample.tet") as t:
        values = t.read("temperature")
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("a", values, (2, 2))], footer=True)
    raw = bytearray(out.getvalue())
    (json_len,) = struct.unpack_from("<Q", raw, len(raw) - 16)
    assert raw[-16 - json_len : -16] == b'{"history":[],"metadata":{}}'
    raw[-16 - json_len : -16] = b"X" * json_len
    assert sha256(bytes(raw)) == REFERENCE_SUMS["plan.tet"]


@pytest.mark.parametrize("name", sorted(set(VALID) - NOT_WRITER_OUTPUT))
def test_manifest_files_regenerate_byte_for_byte(name: str) -> None:
    raw = (DATA / name).read_bytes()
    with open_tetr(raw) as t:
        force = True if t.footer_present and not t.history and t.metadata_spill is None else None
    assert sha256(_regenerate(raw, footer=force)) == VALID[name]["sha256"]


def test_writer_spills_large_metadata() -> None:
    labels = {str(ax): [f"{ax}-{i}-" + "x" * 1000 for i in range(64)] for ax in range(8)}
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("a", np.arange(6, dtype="f4").reshape(2, 3), (2, 2), coords=labels)])
    raw = out.getvalue()
    assert b"metadata_ref" in raw
    with open_tetr(raw) as t:
        assert t.metadata_spill is not None and t.metadata_spill[0] == t.payload_end
        assert t.dataset("a").coords == labels


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"x": np.zeros(3, "i1")}, UnsupportedError),
        ({"x": np.zeros(3, "c8")}, UnsupportedError),
        ([DatasetWrite("", np.zeros(3))], LimitExceededError),
        ([DatasetWrite("a", np.zeros(3), attrs={"units": ""})], LimitExceededError),
        ([DatasetWrite("a", np.zeros(3), coords={"0": ["x" * 1025, "b", "c"]})], LimitExceededError),
        ([DatasetWrite("a", np.zeros(3)), DatasetWrite("a", np.zeros(3))], ValueError),
        ([DatasetWrite("a", np.zeros(3), codec="lz4")], UnsupportedError),
        ([DatasetWrite("a", np.zeros((3, 3)), chunk_shape=(0, 1))], ValueError),
    ],
)
def test_writer_rejects_what_the_format_cannot_hold(bad: Any, error: type[Exception], tmp_path: Path) -> None:
    target = tmp_path / "x.tet"
    with pytest.raises(error):
        write_tetr(target, bad)
    assert not target.exists() and not list(tmp_path.iterdir())  # atomic: nothing left behind


# == round trips and partial reads ==================================================================
DTYPES = [dt for _, dt in DTYPE_CODES.values()]


@st.composite
def arrays_and_tiles(draw: Any) -> tuple[np.ndarray, tuple[int, ...], str]:
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    tiles = tuple(draw(st.lists(st.integers(1, 8), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    data = (
        rng.integers(0, 250, size=shape).astype(dtype) if dtype.kind in "iu" else rng.normal(size=shape).astype(dtype)
    )
    return data, tiles, draw(st.sampled_from(["raw", "zstd"]))


def _slices(draw: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    out = []
    for n in shape:
        a, b = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))
        out.append(slice(a, b))
    return tuple(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=arrays_and_tiles(), data=st.data())
def test_write_read_round_trip(case: tuple[np.ndarray, tuple[int, ...], str], data: st.DataObject) -> None:
    values, tiles, codec = case
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("v", values, tiles, codec)])
    with open_tetr(out.getvalue()) as t:
        np.testing.assert_array_equal(t.read("v"), values)
        d = t.dataset("v")
        assert d.codec == codec and d.chunk_shape == tiles
        coords = tuple(data.draw(st.integers(0, g - 1)) for g in d.grid)
        box = tuple(slice(k * c, (k + 1) * c) for k, c in zip(coords, tiles, strict=True))
        np.testing.assert_array_equal(t.read_chunk("v", coords), values[box])
        sel = _slices(data.draw, values.shape)
        np.testing.assert_array_equal(t.read_region("v", sel), values[sel])
        key = tuple(data.draw(st.sampled_from([slice(None, None, 2), slice(None, None, -1), 0, -1])) for _ in tiles)
        np.testing.assert_array_equal(t.read_region("v", key), values[key])


@settings(max_examples=60, deadline=None)
@given(case=arrays_and_tiles(), data=st.data())
def test_lazy_array_hyperslabs_equal_numpy(case: tuple[np.ndarray, tuple[int, ...], str], data: st.DataObject) -> None:
    values, tiles, codec = case
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("v", values, tiles, codec)])
    with open_tetr(out.getvalue()) as t:
        spec = t.array_spec("v")
        assert spec.chunk_shape == tiles
        key = []
        for n in values.shape:
            kind = data.draw(st.sampled_from(["int", "slice", "array"]))
            if kind == "int":
                key.append(data.draw(st.integers(-n, n - 1)))
            elif kind == "slice":
                key.append(
                    slice(
                        data.draw(st.integers(0, n)),
                        data.draw(st.integers(0, n)),
                        data.draw(st.sampled_from([1, 2, 3])),
                    )
                )
            else:
                key.append(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))))
        expected = values
        for axis in reversed(range(len(key))):
            k = key[axis]
            expected = (
                np.take(expected, k, axis=axis) if isinstance(k, np.ndarray) else expected[(slice(None),) * axis + (k,)]
            )
        np.testing.assert_array_equal(read_outer(spec, tuple(key)), expected)


def _big_file(codec: str) -> tuple[bytes, np.ndarray]:
    values = np.arange(64 * 48, dtype="f8").reshape(64, 48)
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("v", values, (16, 16), codec)])
    return out.getvalue(), values


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_window_inside_one_tile_reads_only_that_tile(codec: str) -> None:
    raw, values = _big_file(codec)
    src = BytesSource(raw)
    with open_tetr(src) as t:
        e = t.dataset("v").entries[t.dataset("v").table[1, 2]]
        before = src.bytes_read
        window = (slice(18, 30), slice(33, 47))
        np.testing.assert_array_equal(read_outer(t.array_spec("v"), window), values[window])
        used = src.bytes_read - before
        if codec == "zstd":
            assert used == int(e["stored"])
        else:  # only the 12 rows asked for, of 16 columns of 8 bytes
            assert used == 12 * 16 * 8


def test_open_reads_metadata_only() -> None:
    raw, _ = _big_file("raw")
    src = BytesSource(raw)
    with open_tetr(src) as t:
        assert src.bytes_read <= t.index_offset + t.index_length + 16


def test_reader_pickles_and_reads_in_another_process_style(tmp_path: Path) -> None:
    path = tmp_path / "x.tet"
    raw, values = _big_file("zstd")
    path.write_bytes(raw)
    with open_tetr(path) as t:
        spec = pickle.loads(pickle.dumps(t.array_spec("v")))
    np.testing.assert_array_equal(read_outer(spec, (slice(None), slice(None))), values)


# == xarray mapping =================================================================================
def test_footer_metadata_mapping() -> None:
    with open_tetr(DATA / "footer_metadata.tet") as t:
        ds = tetr_to_dataset(t)
        assert list(ds.data_vars) == ["temperature", "pressure", "mask"]
        assert ds.temperature.dims == ("row", "col") and ds.mask.dims == ("y", "x")
        assert ds.pressure.dims == ("dim_0", "dim_1")  # no dim_names: generic, coords keyed by axis number
        assert ds["row"].values.tolist() == ["r0", "r1"] and ds["dim_1"].values.tolist() == list("ABCD")
        assert ds["y"].values.tolist() == ["north", "south"]
        assert ds.temperature.attrs == {"long_name": "demo temperature", "units": "1"}
        assert ds.pressure.attrs["_FillValue"] == -9999.0 and ds.pressure.attrs["Zeta"] == "last"
        assert ds.attrs["tool"] == "tetration-test" and ds.attrs["created_at"] == "1700000000"
        assert ds.attrs["history"].splitlines() == [
            "2023-11-14T22:13:20Z: write rust",
            "2023-11-14T22:15:00Z: transform /data/in.tet",
        ]
        assert json.loads(ds.attrs["tetr_history"]) == VALID["footer_metadata.tet"]["footer"]["history"]
        for name in ds.data_vars:
            assert tuple(ds[name].encoding["tetr_chunk_shape"]) == t.dataset(name).chunk_shape
            d = t.dataset(name)
            tile = tuple(min(c, n) for c, n in zip(d.chunk_shape, d.shape, strict=True))
            assert tuple(ds[name].encoding["preferred_chunks"].values()) == tile
        np.testing.assert_array_equal(ds.mask.values, t.read("mask"))


def test_numeric_labels_become_numeric_coordinates() -> None:
    out = io.BytesIO()
    write_tetr(
        out,
        [
            DatasetWrite(
                "v",
                np.zeros((3, 2)),
                dim_names=["level", "lon"],
                coords={"level": ["1000", "850", "500"], "lon": ["0.5", "1.25"]},
            )
        ],
    )
    with open_tetr(out.getvalue()) as t:
        ds = tetr_to_dataset(t)
    assert ds["level"].dtype == np.int64 and ds["level"].values.tolist() == [1000, 850, 500]
    assert ds["lon"].dtype == np.float64 and ds["lon"].values.tolist() == [0.5, 1.25]


def test_dim_names_kwarg_and_size_clashes() -> None:
    with open_tetr(DATA / "multi_dataset.tet") as t:
        ds = tetr_to_dataset(t)
        for name in ds.data_vars:  # generic names never clash in size
            for dim, n in zip(ds[name].dims, ds[name].shape, strict=True):
                assert ds.sizes[dim] == n
        ds = tetr_to_dataset(t, dim_names={"a": ["y", "x"]})
        assert ds.a.dims == ("y", "x")
        with pytest.raises(ValueError, match=r"multi_dataset\.tet.*dim_names for 'a' has 1 entry"):
            tetr_to_dataset(t, dim_names={"a": ["y"]})
    with open_tetr(DATA / "sample.tet") as t:
        assert tetr_to_dataset(t, dim_names=["lat", "lon"]).temperature.dims == ("lat", "lon")
        assert list(tetr_to_dataset(t, drop_variables={"temperature"}).data_vars) == []


def _tile_grid(d: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(min(t, n - i) for i in range(0, n, t)) for t, n in zip(d.chunk_shape, d.shape, strict=True))


def test_open_dataset_chunks_are_the_tile_grid() -> None:
    """chunks={} is the tile grid whatever ``array.chunk-size`` says: one Dask chunk per tile."""
    for limit in ("8B", "128MiB"):
        with (
            dask.config.set({"array.chunk-size": limit}),
            xr.open_dataset(DATA / "edge_chunks_3d.tet", engine="tensogram", chunks={}) as ds,
            open_tetr(DATA / "edge_chunks_3d.tet") as t,
        ):
            assert ds.edge.chunks == ((2, 2, 1), (3, 3, 1), (2, 1)) == _tile_grid(t.dataset("edge"))
            np.testing.assert_array_equal(ds.edge.values, t.read("edge"))
            assert logical_sha256(ds.edge.values) == VALID["edge_chunks_3d.tet"]["datasets"][0]["logical_sha256"]


@pytest.mark.parametrize("chunks", [{}, "auto"])
@pytest.mark.parametrize("name", ["large.tet", "edge_chunks_3d.tet", "multichunk_u8.tet", "multi_dataset.tet"])
def test_chunks_are_whole_tiles_and_give_the_manifest_values(name: str, chunks: Any) -> None:
    """preferred_chunks is the tile; chunks={} is one Dask chunk per tile, "auto" whole multiples of it
    (with ``array.chunk-size`` small enough to make several); the values, through Dask on threads, hash as
    the manifest says."""
    entry = VALID[name]
    with (
        dask.config.set({"array.chunk-size": "256B", "scheduler": "threads", "num_workers": 2}),
        xr.open_dataset(DATA / name, engine="tensogram", chunks=chunks) as ds,
        open_tetr(DATA / name) as t,
    ):
        for md in entry["datasets"]:
            d = t.dataset(md["name"])
            var = ds[md["name"]]
            tile = tuple(min(c, n) for c, n in zip(d.chunk_shape, d.shape, strict=True))
            assert tuple(var.encoding["preferred_chunks"][dim] for dim in var.dims) == tile
            if chunks == {}:
                assert var.chunks == _tile_grid(d)
            for sizes, tile, n in zip(var.chunks, d.chunk_shape, d.shape, strict=True):
                assert all(c % tile == 0 for c in sizes[:-1]) and sum(sizes) == n
            assert logical_sha256(var.values) == md["logical_sha256"]


def test_a_small_selection_of_a_multi_tile_chunk_reads_only_the_tiles_it_touches() -> None:
    raw, values = _big_file("zstd")  # 64 x 48 float64 in 16 x 16 tiles: 12 tiles, one Dask chunk here
    src = BytesSource(raw)
    with xr.open_dataset(src, engine="tensogram", chunks={"dim_0": 64, "dim_1": 48}) as ds, open_tetr(raw) as t:
        assert ds.v.data.numblocks == (1, 1)
        d = t.dataset("v")
        stored = {tuple(int(c) for c in e["coords"][:2]): int(e["stored"]) for e in d.entries}
        for window, tiles in [
            ((slice(18, 30), slice(33, 47)), [(1, 2)]),
            ((slice(10, 20), slice(5, 6)), [(0, 0), (1, 0)]),
            ((slice(63, 64), slice(0, 48)), [(3, 0), (3, 1), (3, 2)]),
        ]:
            before = src.bytes_read
            got = ds.v[window].compute(scheduler="threads", num_workers=2).values
            np.testing.assert_array_equal(got, values[window])
            assert src.bytes_read - before == sum(stored[c] for c in tiles), window


def test_a_raw_window_of_a_multi_tile_chunk_reads_only_its_rows() -> None:
    raw, values = _big_file("raw")
    src = BytesSource(raw)
    with xr.open_dataset(src, engine="tensogram", chunks={"dim_0": 64, "dim_1": 48}) as ds:
        before = src.bytes_read
        window = (slice(18, 30), slice(33, 47))  # 12 rows of tile (1, 2), 16 columns of 8 bytes each
        np.testing.assert_array_equal(ds.v[window].values, values[window])
        assert src.bytes_read - before == 12 * 16 * 8


def test_open_dataset_pickles_and_computes_on_threads(tmp_path: Path) -> None:
    path = tmp_path / "x.tet"
    raw, values = _big_file("zstd")
    path.write_bytes(raw)
    ds = xr.open_dataset(path, engine="tensogram", chunks={})
    assert ds.v.chunks == ((16,) * 4, (16,) * 3)
    again = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(again.v.compute(scheduler="threads", num_workers=2).values, values)
    ds.close()
    again.close()


def _sample_dataset() -> xr.Dataset:
    rng = np.random.default_rng(1)
    return xr.Dataset(
        {
            "t": (("time", "lat", "lon"), rng.normal(size=(3, 5, 7)).astype("f4"), {"units": "K", "long_name": "temp"}),
            "n": (("lat", "lon"), rng.integers(0, 9, size=(5, 7)).astype("u2"), {"comment": "counts"}),
            "flag": (("lat",), np.array([True, False, True, True, False])),
        },
        coords={"time": ["a", "b", "c"], "lat": [10, 20, 30, 40, 50], "lon": np.linspace(0.5, 3.5, 7)},
        attrs={"tool": "unit-test", "created_at": "1700000000"},
    )


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_dataset_round_trip_keeps_names_dims_coords_attrs(compression: str | None, tmp_path: Path) -> None:
    ds = _sample_dataset()
    path = tmp_path / "x.tet"
    to_tetr(
        ds,
        path,
        chunks={"lat": 2, "lon": 3},
        compression=compression,
        history=[{"op": "write", "source": "test", "at": "1700000000"}],
    )
    back = xr.open_dataset(path, engine="tensogram", chunks={})
    assert back.t.chunks == ((3,), (2, 2, 1), (3, 3, 1))
    assert back.t.encoding["tetr_chunk_shape"] == (3, 2, 3)
    xr.testing.assert_identical(back.drop_attrs(deep=False), ds.drop_attrs(deep=False))
    with open_tetr(path) as t:  # the format has no bool: stored as u8 0/1, decoded back by the CF dtype attr
        assert t.dataset("flag").dtype == np.uint8 and t.dataset("flag").attrs == {"dtype": "bool"}
    assert back.attrs["tool"] == "unit-test" and back.attrs["history"] == "2023-11-14T22:13:20Z: write test"
    with open_tetr(path) as t:
        assert t.dataset("t").codec == ("zstd" if compression else "raw")
    # writing what we read gives the same file again (tiles, codec, history kept)
    path2 = tmp_path / "y.tet"
    to_tetr(back, path2, compression=compression)
    assert path2.read_bytes() == path.read_bytes()
    back.close()


_ROWS = [
    {"op": "convert", "source": "nc", "at": "1700000000", "parents": ["in.nc"], "params": {"method": "x"}},
    {"op": "write", "source": "test", "at": "1700000100"},
]


@pytest.mark.parametrize(
    ("edit", "kept"),
    [
        pytest.param(lambda h: h + "\n2026-01-02T03:04:05Z: regrid cdo remapbil", [0, 1], id="appended"),
        pytest.param(lambda h: h.splitlines()[1] + "\n" + h.splitlines()[0], [1, 0], id="reordered"),
        pytest.param(lambda h: "Mon Jan  1 00:00:00 2024: ncks -O a.nc b.nc\nhand-made", [], id="replaced-free-text"),
        pytest.param(lambda h: "1700000000: write test", [], id="unix-seconds-as-text"),
    ],
)
def test_to_tetr_writes_the_edited_history(edit: Any, kept: list[int], tmp_path: Path) -> None:
    """An opened .tet whose ``history`` attribute was edited is written with the edited history (not the rows it
    was read with); rows whose line is unchanged keep their parents and params."""
    to_tetr(_sample_dataset(), tmp_path / "a.tet", history=_ROWS)
    with xr.open_dataset(tmp_path / "a.tet", engine="tensogram") as ds:
        edited = ds.copy()
        edited.attrs["history"] = edit(ds.attrs["history"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            to_tetr(edited, tmp_path / "b.tet")
    with xr.open_dataset(tmp_path / "b.tet", engine="tensogram") as back:
        assert back.attrs["history"] == edited.attrs["history"]
        rows = json.loads(back.attrs["tetr_history"])
    assert rows[: len(kept)] == [_ROWS[i] for i in kept]  # unchanged lines: their rows, parents and params kept
    assert len(rows) == len(edited.attrs["history"].split("\n"))


def test_to_tetr_writes_a_history_built_in_memory(tmp_path: Path) -> None:
    """A Dataset's own ``history`` (netCDF style, no rows behind it) is written, not dropped: read back equal."""
    ds = _sample_dataset()
    ds.attrs["history"] = "Tue Feb  6 10:00:00 2024: cdo -f nc copy in.grb out.nc\n2024-02-07T00:00:00Z: edit me"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        to_tetr(ds, tmp_path / "m.tet")
    with xr.open_dataset(tmp_path / "m.tet", engine="tensogram") as back:
        assert back.attrs["history"] == ds.attrs["history"]
    with open_tetr(tmp_path / "m.tet") as t:  # the ISO line is a structured row, as the reference writes them
        assert t.history[1] == {"op": "edit", "source": "me", "at": "1707264000"}


def test_to_tetr_warns_of_history_lines_no_row_holds(tmp_path: Path) -> None:
    """A line over the format's string limit (or empty) has no row: a warning names it, the others are written."""
    ds = _sample_dataset()
    long = "x" * 2000
    ds.attrs["history"] = f"2024-02-07T00:00:00Z: edit me\n{long}"
    with pytest.warns(TetrMappingWarning, match=r"'history'.*xxxxx"):
        to_tetr(ds, tmp_path / "w.tet")
    with xr.open_dataset(tmp_path / "w.tet", engine="tensogram") as back:
        assert back.attrs["history"] == "2024-02-07T00:00:00Z: edit me"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=arrays_and_tiles())
def test_to_tetr_open_dataset_round_trip(case: tuple[np.ndarray, tuple[int, ...], str], tmp_path: Path) -> None:
    values, tiles, codec = case
    dims = [f"d{i}" for i in range(values.ndim)]
    ds = xr.Dataset({"v": (dims, values, {"units": "m"})})
    path = tmp_path / "h.tet"
    to_tetr(ds, path, chunks=dict(zip(dims, tiles, strict=True)), compression=None if codec == "raw" else codec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = xr.open_dataset(path, engine="tensogram", chunks={}, mask_and_scale=False)
    assert back.v.chunks == tuple(
        tuple(min(c, n - i) for i in range(0, n, c)) for n, c in zip(values.shape, tiles, strict=True)
    )
    if values.dtype.kind == "f":  # to_netcdf's default fill of a float built in memory, seen with mask_and_scale=False
        ds["v"].attrs["_FillValue"] = values.dtype.type(np.nan)
    xr.testing.assert_identical(back.load(), ds)
    back.close()


def test_to_tetr_drops_what_the_format_cannot_hold(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("x",), np.arange(100.0))}, coords={"x": np.arange(100)}, attrs={"title": "t"})
    with pytest.warns(TetrMappingWarning) as record:
        to_tetr(ds, tmp_path / "x.tet")
    text = " ".join(str(w.message) for w in record)
    assert "title" in text
    with xr.open_dataset(tmp_path / "x.tet", engine="tensogram") as back:  # 100 values: a dataset, not labels
        xr.testing.assert_identical(back, ds.drop_attrs(deep=False))


def test_sample_ships_with_the_package() -> None:
    from xarray_tensogram.cli import sample_paths

    path = next(p for p in sample_paths() if p.endswith(".tet"))
    ds = xr.open_dataset(path, engine="tensogram", chunks={})
    assert set(ds.data_vars) == {"t2m", "tp"} and ds.t2m.dims == ("time", "lat", "lon")
    assert ds.t2m.attrs["units"] == "K" and ds["lat"].dtype.kind == "i" and ds["time"].dtype.kind == "M"
    assert ds.t2m.encoding["tetr_chunk_shape"] == (2, 4, 5)
    assert ds.t2m.chunks == ((2, 2), (4, 2), (5, 3))  # one Dask chunk per tile
    ds.close()


def test_sources_of_every_kind(tmp_path: Path) -> None:
    path = tmp_path / "s.tet"
    path.write_bytes((DATA / "sample.tet").read_bytes())
    expected = np.array([[1, 2, 3], [4, 5, 6]], dtype="f4")
    for source in (path, str(path), path.read_bytes(), open_source(path)):
        with open_tetr(source) as t:
            np.testing.assert_array_equal(t.read("temperature"), expected)
    with open(path, "rb") as f, open_tetr(f) as t:
        np.testing.assert_array_equal(t.read_region("temperature", (1, slice(1, 3))), expected[1, 1:3])


def test_history_strings_are_not_limited_on_read() -> None:
    """The reference checks history string limits only when writing: long/empty strings still read."""
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("a", np.zeros(2))], history=[("write", "x", "1")])
    head = out.getvalue()[: -16 - len(b'{"history":[{"op":"write","source":"x","at":"1"}]}')]
    body = b'{"history":[{"op":"write","source":"","at":"1"}]}'
    raw = head + body + struct.pack("<QI4s", len(body), 1, b"THST")
    with open_tetr(raw) as t:
        assert t.history == [{"op": "write", "source": "", "at": "1"}]
    with pytest.raises(LimitExceededError):
        write_tetr(io.BytesIO(), [DatasetWrite("a", np.zeros(2))], history=t.history)
    with pytest.raises(MetadataError, match="surrogate"):
        write_tetr(io.BytesIO(), [DatasetWrite("a", np.zeros(2), attrs={"units": "\ud800"})])


def test_backend_recognises_tetr_by_magic(tmp_path: Path) -> None:
    from xarray_tensogram.backend import TensogramBackendEntrypoint

    path = tmp_path / "tiles.bin"  # no .tet extension: the magic decides
    path.write_bytes((DATA / "sample.tet").read_bytes())
    assert TensogramBackendEntrypoint().guess_can_open(path)
    with xr.open_dataset(path, engine="tensogram") as ds:
        assert list(ds.data_vars) == ["temperature"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=arrays_and_tiles(), data=st.data())
def test_boxes_read_in_one_pass_equal_numpy_from_every_kind_of_source(
    case: tuple[np.ndarray, tuple[int, ...], str], data: st.DataObject
) -> None:
    """A box (step-1 slices) read in one pass, through a memory-mappable source and through one read by
    ranges (a file object), with runs and batches as small as one tile, equals numpy on the written values."""
    from xarray_tensogram.formats.tetr import boxes

    values, tiles, codec = case
    out = io.BytesIO()
    write_tetr(out, [DatasetWrite("v", values, tiles, codec)])
    raw = out.getvalue()
    sel = _slices(data.draw, values.shape)
    small = data.draw(st.booleans())
    saved = boxes.RUN_BYTES, boxes.BATCH_BYTES
    try:
        if small:
            boxes.RUN_BYTES, boxes.BATCH_BYTES = 1, 1
        for source in (BytesSource(raw), open_source(io.BytesIO(raw))):
            with open_tetr(source) as t:
                got = np.full(values[sel].shape, 7, dtype=t.dataset("v").dtype)
                assert t.tile_reader("v").read_box_into(sel, got)
                np.testing.assert_array_equal(got, values[sel])
    finally:
        boxes.RUN_BYTES, boxes.BATCH_BYTES = saved


def test_auto_chunks_are_whole_multiples_of_the_tiles_under_the_chunk_size() -> None:
    raw, values = _big_file("zstd")  # 64 x 48 float64 in 16 x 16 tiles of 2 KiB
    src = BytesSource(raw)
    with (
        dask.config.set({"array.chunk-size": "8KiB"}),
        xr.open_dataset(src, engine="tensogram", chunks="auto") as ds,
        open_tetr(raw) as t,
    ):
        preferred = tuple(ds.v.encoding["preferred_chunks"][d] for d in ds.v.dims)
        assert preferred == t.dataset("v").chunk_shape == (16, 16)
        for sizes, p in zip(ds.v.chunks, preferred, strict=True):
            assert all(c % p == 0 for c in sizes[:-1])
        assert max(a * b for a in ds.v.chunks[0] for b in ds.v.chunks[1]) * 8 <= 8192
        assert ds.v.data.npartitions < 12  # fewer tasks than tiles
        np.testing.assert_array_equal(ds.v.values, values)
