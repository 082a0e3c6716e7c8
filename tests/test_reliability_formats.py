"""Reliability of the .tet and .zt readers under load and change (issue 8), as test_reliability.py does for .tgm.

Threads and processes reading random selections of the same opened Datasets get exactly the
single-threaded values; opening and closing 1,000 times leaves no descriptor behind; zTensor
``verify=True`` (crc32c, sha256, xxh3) catches every single-byte change of a payload; a file
changed on disk after opening raises FileChangedError on the next read; nothing named inside a
file is opened outside the file's own directory.

Tetration files carry no checksums, so there is nothing to verify for ``.tet``.
"""

from __future__ import annotations

import builtins
import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import re
import struct
import time
from pathlib import Path

import cbor2
import numpy as np
import pytest
import xarray as xr

from selections import outer, random_selection
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.codecs.checksums import xxh3_64
from xarray_tensogram.errors import CodecError, FileChangedError, IntegrityError, MetadataError, XarrayTensogramError
from xarray_tensogram.formats.tetr import DatasetWrite, open_tetr, write_tetr
from xarray_tensogram.formats.ztensor import open_ztensor, write_ztensor_v01

E = TensogramBackendEntrypoint
MAGIC_V2 = b"\x89ZT2\r\n\x1a\n"


# -- files --------------------------------------------------------------------------------------------
def _tet(path: Path, seed: int = 11, rows: int = 30) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {
        "t2m": rng.normal(size=(rows, 40)).astype("f4"),
        "q": rng.integers(0, 1000, size=(6, 20, 10)).astype("<i4"),
        "mask": rng.integers(0, 2, size=(rows,)).astype("u1"),
    }
    write_tetr(
        path,
        [
            DatasetWrite("t2m", arrays["t2m"], (7, 9), "zstd", ["y", "x"]),
            DatasetWrite("q", arrays["q"], (4, 6, 5), "raw", ["t", "a", "b"]),
            DatasetWrite("mask", arrays["mask"], (8,), "zstd", ["y"]),
        ],
    )
    return arrays


def _zt(
    path: Path, seed: int = 11, rows: int = 30, compression: str | None = "zstd", checksum: str | None = None
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {"w": rng.normal(size=(rows, 40)).astype("f4"), "b": rng.integers(-9, 9, size=(5, 7, 3)).astype("i8")}
    write_ztensor_v01(path, arrays, compression=compression, checksum=checksum)
    return arrays


FORMATS = {"tet": _tet, "zt": _zt}


# -- threads and processes ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_eight_threads_read_exactly_what_one_thread_reads(tmp_path, fmt):
    path = tmp_path / f"cube.{fmt}"
    arrays = FORMATS[fmt](path)
    with xr.open_dataset(path, engine=E) as ds:
        reference = {name: ds[name].values.copy() for name in arrays}
    for name, values in arrays.items():  # the single-threaded load is itself right
        np.testing.assert_array_equal(reference[name], values)
    lazy = xr.open_dataset(path, engine=E)
    names = sorted(arrays)
    deadline = time.monotonic() + 1.5

    def worker(seed: int) -> int:
        rng = np.random.default_rng(seed)
        n = 0
        while time.monotonic() < deadline:
            name = names[rng.integers(len(names))]
            key = random_selection(rng, lazy[name].shape)
            np.testing.assert_array_equal(lazy[name].variable[key].values, outer(reference[name], key))
            n += 1
        return n

    with cf.ThreadPoolExecutor(8) as ex:
        counts = list(ex.map(worker, range(8)))
    lazy.close()
    assert all(c > 0 for c in counts)


def _process_worker(args):
    path, seed, seconds = args
    results = []
    with xr.open_dataset(path, engine=E) as ds:
        names = sorted(ds.data_vars)
        rng = np.random.default_rng(seed)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and len(results) < 40:
            name = names[rng.integers(len(names))]
            key = random_selection(rng, ds[name].shape)
            results.append((name, key, ds[name].variable[key].values))
    return path, results


def test_two_processes_read_exactly_what_one_thread_reads(tmp_path):
    paths = {}
    for fmt, make in FORMATS.items():
        paths[fmt] = str(tmp_path / f"cube.{fmt}")
        make(Path(paths[fmt]))
    reference = {}
    for p in paths.values():
        with xr.open_dataset(p, engine=E) as ds:
            reference[p] = {name: ds[name].values.copy() for name in ds.data_vars}
    ctx = multiprocessing.get_context("spawn")
    jobs = [(p, seed, 1.0) for p in paths.values() for seed in (1, 2)]
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        outputs = list(ex.map(_process_worker, jobs))
    for p in paths.values():
        assert sum(len(r) for q, r in outputs if q == p) > 0, p
    for p, results in outputs:
        for name, key, values in results:
            np.testing.assert_array_equal(values, outer(reference[p][name], key))


# -- descriptors ---------------------------------------------------------------------------------------
def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count descriptors")
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_opening_and_closing_leaves_no_descriptors(tmp_path, fmt):
    path = tmp_path / f"cube.{fmt}"
    FORMATS[fmt](path, rows=8)
    if fmt == "zt":  # raw tensors come back as views of a memory map: cover that path too
        raw = tmp_path / "raw.zt"
        _zt(raw, rows=8, compression=None)
    xr.open_dataset(path, engine=E).load().close()  # warm imports
    before = _open_fds()
    for i in range(1000):
        if i % 2:
            if fmt == "tet":
                with open_tetr(path) as t:
                    t.read_chunk("t2m", (0, 0))
            else:
                with open_ztensor(path if i % 4 == 1 else raw) as z:
                    z.read("w")
        else:
            ds = xr.open_dataset(path, engine=E)
            _ = ds[next(iter(ds.data_vars))][0].values
            ds.close()
    assert _open_fds() <= before


# -- integrity -----------------------------------------------------------------------------------------
def _v2_file(path: Path, values: np.ndarray, encoded: bytes | None = None) -> tuple[int, int]:
    """A v2 file of ``values`` (raw, or the given zstd-seekable bytes) with an xxh3 digest; returns its blob span."""
    blob = values.tobytes() if encoded is None else encoded
    part = {"blob": [4096, len(blob)], "dtype": "f32", "digest": f"xxh3:{xxh3_64(values.tobytes()):016x}"}
    if encoded is not None:
        part.update(encoding="zt.zstd-seekable/1", decoded_length=values.nbytes)
    manifest = cbor2.dumps(
        {"objects": {"v": {"shape": list(values.shape), "layout": "dense", "parts": {"data": part}}}}, canonical=True
    )
    at = (4096 + len(blob) + 4095) // 4096 * 4096
    body = bytearray(MAGIC_V2 + bytes(at - 8))
    body[4096 : 4096 + len(blob)] = blob
    path.write_bytes(
        bytes(body) + manifest + struct.pack("<QQQII", at, len(manifest), xxh3_64(manifest), 2, 0) + MAGIC_V2
    )
    return 4096, len(blob)


def _blob_span(path: Path, name: str) -> tuple[int, int]:
    with open_ztensor(path) as z:
        part = z.tensor(name).main_part
        return part.offset, part.length


CHECKSUM_CASES = ["crc32c-raw", "crc32c-zstd", "sha256-raw", "sha256-zstd", "xxh3-raw-v2"]


@pytest.mark.parametrize("case", CHECKSUM_CASES)
def test_verify_catches_every_single_byte_change_of_a_payload(tmp_path, case):
    values = np.arange(24, dtype="<f4").reshape(4, 6)
    path = tmp_path / "v.zt"
    algo, encoding, *v2 = case.split("-")
    if v2:
        start, length = _v2_file(path, values)
        name = "v"
    else:
        write_ztensor_v01(path, {"v": values}, compression=None if encoding == "raw" else "zstd", checksum=algo)
        start, length = _blob_span(path, "v")
        name = "v"
    good = path.read_bytes()
    with open_ztensor(good) as z:
        np.testing.assert_array_equal(z.read(name, verify=True), values)
    for pos in range(start, start + length):
        damaged = bytearray(good)
        damaged[pos] ^= 0x41
        with open_ztensor(bytes(damaged)) as z, pytest.raises(IntegrityError, match="checksum mismatch"):
            z.read(name, verify=True)
    # the same through the backend: verify_hash=True reaches the zTensor checksum
    damaged = bytearray(good)
    damaged[start] ^= 1
    path.write_bytes(bytes(damaged))
    with xr.open_dataset(path, engine=E, verify_hash=True) as ds, pytest.raises(IntegrityError):
        _ = ds[name].values


def test_v2_seekable_zstd_changes_are_caught_by_frame_or_digest(tmp_path):
    """v2 digests cover decoded bytes: a changed compressed byte fails the zstd checksum or the digest, or decodes
    to exactly the original bytes (some frame header bits do not change the output); never to other values."""
    from xarray_tensogram.codecs import zstd

    values = np.linspace(0, 1, 300, dtype="<f4")
    path = tmp_path / "s.zt"
    frame = zstd.compress(values.tobytes())
    start, length = _v2_file(path, values, frame)
    good = path.read_bytes()
    with open_ztensor(good) as z:
        np.testing.assert_array_equal(z.read("v", verify=True), values)
    for pos in range(start, start + length):
        damaged = bytearray(good)
        damaged[pos] ^= 0x41
        with open_ztensor(bytes(damaged)) as z:
            try:
                got = z.read("v", verify=True)
            except (IntegrityError, CodecError):
                continue
            # a change that leaves the decoded bytes intact (e.g. the frame's window descriptor) is harmless
            assert got.tobytes() == values.tobytes(), f"byte {pos}: wrong values passed verification"


def test_partial_reads_under_verification_verify_the_whole_tensor(tmp_path):
    """``read_rows`` with verify=True reads and checks the whole tensor, never a verified-looking partial."""
    values = np.arange(40, dtype="<f4").reshape(10, 4)
    path = tmp_path / "p.zt"
    write_ztensor_v01(path, {"v": values}, checksum="crc32c")
    start, _ = _blob_span(path, "v")
    damaged = bytearray(path.read_bytes())
    damaged[start + 9 * 16] ^= 1  # row 9 only
    with open_ztensor(bytes(damaged)) as z:
        np.testing.assert_array_equal(z.reader("v").read_rows(0, 2), values[:2])  # unverified rows 0-1 are fine
        with pytest.raises(IntegrityError):
            z.reader("v", verify=True).read_rows(0, 2)


# -- files changed on disk -----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("same_size", [False, True])
def test_file_changed_on_disk_raises_on_next_read(tmp_path, fmt, same_size):
    path = tmp_path / f"cube.{fmt}"
    make = FORMATS[fmt] if fmt == "tet" else (lambda p, **kw: _zt(p, compression=None, **kw))
    make(path, seed=1)
    ds = xr.open_dataset(path, engine=E)
    first = sorted(ds.data_vars)[0]
    _ = ds[first][0].values
    stamp = os.stat(path)
    other = tmp_path / f"other.{fmt}"
    make(other, seed=2, **({} if same_size else {"rows": 40}))
    path.write_bytes(other.read_bytes())  # rewritten in place (same inode)
    if same_size:  # same layout, other values: only the mtime tells
        assert os.path.getsize(path) == stamp.st_size
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
    with pytest.raises(FileChangedError, match="changed on disk"):
        _ = ds[first][1].values
    ds.close()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_file_replaced_by_rename_keeps_serving_the_old_file_or_raises(tmp_path, fmt):
    """Writers replace files atomically (new inode): an open descriptor still reads the old bytes, never the
    new ones; a copy that reopens the path (a pickled Dataset in a Dask worker) raises FileChangedError."""
    import pickle

    path = tmp_path / f"cube.{fmt}"
    old = FORMATS[fmt](path, seed=1)
    ds = xr.open_dataset(path, engine=E)
    name = sorted(ds.data_vars)[0]
    _ = ds[name][0].values  # descriptor opened
    shipped = pickle.dumps(ds)
    FORMATS[fmt](path, seed=2, rows=40)  # atomic replace
    np.testing.assert_array_equal(ds[name].values, old[name])
    with pytest.raises(FileChangedError):
        _ = pickle.loads(shipped)[name].values
    ds.close()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_file_changed_before_the_first_payload_read_is_caught_too(tmp_path, fmt):
    """Metadata read, then the file replaced before any payload byte was read (a lazily opened descriptor)."""
    path = tmp_path / f"cube.{fmt}"
    FORMATS[fmt](path, seed=1)
    opener = open_tetr if fmt == "tet" else open_ztensor
    f = opener(path)
    f.source.close()  # drop the descriptor: the next read reopens the path
    FORMATS[fmt](path, seed=2, rows=40)
    with pytest.raises(FileChangedError):
        f.read(0)
    f.close()


# -- nothing trusted from inside a file ----------------------------------------------------------------
class _OpenRecorder:
    """Records every path opened with os.open / builtins.open while active."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        real_os_open, real_open = os.open, builtins.open

        def os_open(path, *a, **kw):
            self.paths.append(os.fspath(path))
            return real_os_open(path, *a, **kw)

        def b_open(file, *a, **kw):
            if isinstance(file, (str, bytes, os.PathLike)):
                self.paths.append(os.fsdecode(file))
            return real_open(file, *a, **kw)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(builtins, "open", b_open)


def _v2_with_shard(directory: Path, shard: str, values: np.ndarray) -> Path:
    part = {"blob": [64, values.nbytes], "dtype": "f32", "shard": shard}
    manifest = cbor2.dumps(
        {
            "objects": {"w": {"shape": list(values.shape), "layout": "dense", "parts": {"data": part}}},
            "shards": {shard: {"size": 64 + values.nbytes, "digest": "xxh3:0"}},
        },
        canonical=True,
    )
    path = directory / "main.zt"
    path.write_bytes(
        MAGIC_V2
        + bytes(4088)
        + manifest
        + struct.pack("<QQQII", 4096, len(manifest), xxh3_64(manifest), 2, 0)
        + MAGIC_V2
    )
    return path


SHARD_NAMES = [
    "../evil",
    "..",
    "/etc/passwd",
    "sub/../../evil",
    "a/b",
    "a\\b",
    ".hidden",
    "",
    "x" * 65,
    "\u2024\u2024",
    "evil\x00",
    "~",
    "C:evil",
    "%2e%2e",
    "..\\evil",
    " ",
    "e vil",
]


@pytest.mark.parametrize("name", SHARD_NAMES, ids=range(len(SHARD_NAMES)))
def test_v2_shard_names_never_open_paths_outside_the_directory(tmp_path, monkeypatch, name):
    values = np.arange(3, dtype="<f4")
    inner = tmp_path / "data"
    inner.mkdir()
    (tmp_path / "evil").write_bytes(bytes(64) + values.tobytes())
    path = _v2_with_shard(inner, name, values)
    rec = _OpenRecorder(monkeypatch)
    try:
        with open_ztensor(path) as z:
            z.read("w")
    except XarrayTensogramError:
        pass
    with contextlib.suppress(XarrayTensogramError):
        xr.open_dataset(path, engine=E).load()
    for p in rec.paths:
        assert os.path.dirname(os.path.abspath(p)) == str(inner), f"shard name {name!r} opened {p!r}"


def test_v2_shard_symlink_leading_outside_is_refused(tmp_path):
    """A plain shard name that is a symlink to a file outside the directory is not followed."""
    values = np.arange(3, dtype="<f4")
    inner = tmp_path / "data"
    inner.mkdir()
    outside = tmp_path / "secret.bin"
    outside.write_bytes(bytes(64) + values.tobytes())
    (inner / "w.shard").symlink_to(outside)
    path = _v2_with_shard(inner, "w.shard", values)
    with pytest.raises(MetadataError, match="outside"):
        open_ztensor(path)


def test_v2_shard_inside_the_directory_is_read(tmp_path):
    values = np.arange(3, dtype="<f4")
    (tmp_path / "w.shard").write_bytes(bytes(64) + values.tobytes())
    with open_ztensor(_v2_with_shard(tmp_path, "w.shard", values)) as z:
        np.testing.assert_array_equal(z.read("w"), values)


def test_paths_named_in_metadata_are_never_opened(tmp_path, monkeypatch):
    """Tetration history parents and zTensor attributes may name files; reading never opens them."""
    bait = tmp_path / "bait"
    bait.write_bytes(b"x")
    tet, zt = tmp_path / "m.tet", tmp_path / "m.zt"
    write_tetr(
        tet,
        [DatasetWrite("a", np.zeros(3, "f4"), attrs={"source": str(bait)})],
        history=[{"op": "transform", "source": str(bait), "at": "1", "parents": [str(bait), "../bait"]}],
    )
    write_ztensor_v01(zt, [("a", np.zeros(3, "f4"), {"path": str(bait), "shard": "bait", "file": "../bait"})])
    rec = _OpenRecorder(monkeypatch)
    for p in (tet, zt):
        with xr.open_dataset(p, engine=E) as ds:
            ds.load()
    assert {os.path.abspath(p) for p in rec.paths} <= {str(tet), str(zt)}, rec.paths


def test_readers_never_eval_or_unpickle_file_content():
    """Static check: no eval/exec/pickle.load/marshal in the format readers and assemblers."""
    root = Path(__file__).parent.parent / "xarray_tensogram"
    pattern = re.compile(r"\b(eval|exec)\s*\(|pickle\.loads?\s*\(|marshal\.loads?\s*\(|yaml\.load\s*\(|__import__\s*\(")
    offenders = []
    for sub in ("formats", "assemble", "codecs"):
        for py in (root / sub).rglob("*.py"):
            for i, line in enumerate(py.read_text().splitlines(), 1):
                if pattern.search(line.split("#")[0]):
                    offenders.append(f"{py.relative_to(root)}:{i}: {line.strip()}")
    assert not offenders, offenders
