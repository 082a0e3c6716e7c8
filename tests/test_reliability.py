"""Reliability under load and change: threads, processes, descriptors, integrity, files changed on disk."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time

import numpy as np
import pytest
import xarray as xr

from selections import outer, random_selection
from xarray_tensogram import open_tensogram
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.errors import FileChangedError, IntegrityError, MissingHashError

tensogram = pytest.importorskip("tensogram")
E = TensogramBackendEntrypoint


def _cube(path, compression="zstd", steps=6, shape=(40, 60)) -> np.ndarray:
    rng = np.random.default_rng(11)
    fields = rng.normal(size=(steps, 2, *shape)).astype("f4")
    msgs = []
    for s in range(steps):
        objs, base = [], []
        for k, p in enumerate(("2t", "msl")):
            objs.append(
                (
                    {"type": "ntensor", "shape": list(shape), "dtype": "float32", "compression": compression},
                    fields[s, k],
                )
            )
            base.append({"mars": {"param": p, "step": s * 6, "date": 20240101, "time": 0}, "dim_names": ["y", "x"]})
        msgs.append(tensogram.encode({"base": base}, objs))
    path.write_bytes(b"".join(msgs))
    return fields


def test_eight_threads_read_exactly_what_one_thread_reads(tmp_path):
    path = tmp_path / "cube.tgm"
    _cube(path)
    ds = xr.open_dataset(path, engine=E)
    reference = {name: ds[name].values.copy() for name in ("2t", "msl")}
    lazy = xr.open_dataset(path, engine=E)
    deadline = time.monotonic() + 3.0

    def worker(seed: int) -> int:
        rng = np.random.default_rng(seed)
        n = 0
        while time.monotonic() < deadline:
            name = ("2t", "msl")[rng.integers(2)]
            key = random_selection(rng, lazy[name].shape)
            got = lazy[name].variable[key].values
            np.testing.assert_array_equal(got, outer(reference[name], key))
            n += 1
        return n

    with cf.ThreadPoolExecutor(8) as ex:
        counts = list(ex.map(worker, range(8)))
    assert all(c > 0 for c in counts)


def _process_worker(args):
    path, seed, seconds = args
    ds = xr.open_dataset(path, engine=E)
    rng = np.random.default_rng(seed)
    results = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(results) < 50:
        key = random_selection(rng, ds["2t"].shape)
        results.append((key, ds["2t"].variable[key].values))
    return results


def test_two_processes_read_exactly_what_one_thread_reads(tmp_path):
    path = tmp_path / "cube.tgm"
    _cube(path)
    reference = xr.open_dataset(path, engine=E)["2t"].values
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        outputs = list(ex.map(_process_worker, [(str(path), s, 2.0) for s in (1, 2)]))
    assert sum(len(o) for o in outputs) > 0
    for results in outputs:
        for key, values in results:
            np.testing.assert_array_equal(values, outer(reference, key))


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count descriptors")
def test_opening_and_closing_leaves_no_descriptors(tmp_path):
    path = tmp_path / "cube.tgm"
    _cube(path, steps=2)
    xr.open_dataset(path, engine=E).load().close()  # warm imports
    before = _open_fds()
    for i in range(1000):
        if i % 2:
            with open_tensogram(path) as f:
                f[0].read_object(0)
        else:
            ds = xr.open_dataset(path, engine=E)
            _ = ds["2t"][0, 0, 0].values
            ds.close()
    assert _open_fds() <= before


def test_verify_hash_catches_every_single_byte_change_of_a_payload(tmp_path):
    data = np.arange(12, dtype="<f4")
    msg = tensogram.encode({"base": [{"name": "a"}]}, [({"type": "ntensor", "shape": [12], "dtype": "float32"}, data)])
    f = open_tensogram(msg)
    ref = f[0].objects[0]
    start = ref.frame_offset + 16
    end = ref.frame_offset + ref.frame_length - 20  # payload and descriptor: the hashed body
    for pos in range(start, end):
        damaged = bytearray(msg)
        damaged[pos] ^= 0x41
        g = open_tensogram(bytes(damaged))
        with pytest.raises(IntegrityError):
            g[0].read_object(0, verify_hash=True)
    unhashed = tensogram.encode(
        {"base": [{}]}, [({"type": "ntensor", "shape": [12], "dtype": "float32"}, data)], hash=None
    )
    with pytest.raises(MissingHashError, match="no hash"):
        open_tensogram(unhashed)[0].read_object(0, verify_hash=True)


def test_partial_reads_under_verification_verify_the_whole_frame(tmp_path):
    data = np.arange(40, dtype="<f4").reshape(10, 4)
    msg = bytearray(
        tensogram.encode({"base": [{}]}, [({"type": "ntensor", "shape": [10, 4], "dtype": "float32"}, data)])
    )
    ref = open_tensogram(bytes(msg))[0].objects[0]
    msg[ref.frame_offset + 16 + 9 * 16] ^= 1  # damage row 9 only
    f = open_tensogram(bytes(msg))
    np.testing.assert_array_equal(f[0].read_object(0, rows=slice(0, 2)), data[:2])  # unverified: rows 0-1 are fine
    with pytest.raises(IntegrityError):
        f[0].read_object(0, rows=slice(0, 2), verify_hash=True)


def test_file_changed_on_disk_raises_on_next_read(tmp_path):
    path = tmp_path / "cube.tgm"
    _cube(path, steps=2)
    ds = xr.open_dataset(path, engine=E)
    _ = ds["2t"][0].values
    time.sleep(0.01)
    _cube(path, steps=3)  # rewritten in place with other content
    with pytest.raises(FileChangedError, match="changed on disk"):
        _ = ds["2t"][1].values
