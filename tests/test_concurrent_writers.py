"""Writers side by side, killed, or out of disk: every append that returns is in the file, nothing half-written.

* 8 processes append one variable each to the same file at once (``mode="a"``), for every format;
  afterwards the file holds all 8, each with its own values.
* A writer that cannot get the lock in time raises :class:`WriteLockTimeoutError` naming the file.
* A reader opening while a ``.tgm`` append is half-written reads the file as it was before.
* A writer killed (``SIGKILL``) halfway through an append: the file opens with everything committed,
  and the next append works and follows the last complete message.
* A full disk (``RLIMIT_FSIZE``): the write fails, the file is byte-identical and no temporary file is left.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram import WriteLockTimeoutError
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE
from xarray_tensogram.io.lock import lock_path, write_lock

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(sys.platform == "win32", reason="fcntl locks and fork are POSIX"),
]

WRITERS = {"tgm": xt.to_tensogram, "tet": xt.to_tetr, "zt": xt.to_ztensor}
N = 8
SHAPE = (30, 40)
_FORK = multiprocessing.get_context("fork")


def _values(i: int) -> np.ndarray:
    return np.random.default_rng(100 + i).normal(size=SHAPE).astype("f4") + i


def _variable(i: int) -> xr.Dataset:
    return xr.Dataset({f"v{i}": (("y", "x"), _values(i))})


def _base(path: Path, fmt: str) -> None:
    WRITERS[fmt](xr.Dataset({"base": (("y", "x"), np.zeros(SHAPE, "f4"))}), path)


def _append_one(fmt: str, path: str, i: int, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]  # a multiprocessing Barrier: all writers begin together
    WRITERS[fmt](_variable(i), path, mode="a")


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_eight_processes_appending_at_once_keep_every_append(tmp_path, fmt):
    path = tmp_path / f"shared.{fmt}"
    _base(path, fmt)
    start = _FORK.Barrier(N)
    procs = [_FORK.Process(target=_append_one, args=(fmt, str(path), i, start)) for i in range(N)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * N, "an appender failed"
    with xr.open_dataset(path, engine=ENGINE) as ds:
        assert sorted(ds.data_vars) == sorted(["base", *(f"v{i}" for i in range(N))])
        for i in range(N):
            np.testing.assert_array_equal(ds[f"v{i}"].values, _values(i), err_msg=f"v{i}")
        np.testing.assert_array_equal(ds["base"].values, 0)
    assert sorted(os.listdir(tmp_path)) == [path.name], "a lock or temporary file was left behind"


def _hold_lock(path: str, held: object, release: object) -> None:
    with write_lock(path):
        held.set()  # type: ignore[attr-defined]
        release.wait(60)  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_writer_that_cannot_get_the_lock_in_time_names_the_file(tmp_path, fmt, monkeypatch):
    path = tmp_path / f"busy.{fmt}"
    _base(path, fmt)
    before = path.read_bytes()
    held, release = _FORK.Event(), _FORK.Event()
    holder = _FORK.Process(target=_hold_lock, args=(str(path), held, release))
    holder.start()
    try:
        assert held.wait(30)
        monkeypatch.setenv("XARRAY_TENSOGRAM_LOCK_TIMEOUT", "0.2")
        with pytest.raises(WriteLockTimeoutError, match=rf"{path.name}.*XARRAY_TENSOGRAM_LOCK_TIMEOUT") as info:
            WRITERS[fmt](_variable(1), path, mode="a")
        assert isinstance(info.value, TimeoutError)
        assert path.read_bytes() == before
    finally:
        release.set()
        holder.join(30)
    monkeypatch.delenv("XARRAY_TENSOGRAM_LOCK_TIMEOUT")
    WRITERS[fmt](_variable(1), path, mode="a")  # the lock is free again
    with xr.open_dataset(path, engine=ENGINE) as ds:
        np.testing.assert_array_equal(ds["v1"].values, _values(1))


def test_threads_of_one_process_take_turns_too(tmp_path):
    import concurrent.futures as cf

    path = tmp_path / "threads.zt"
    _base(path, "zt")
    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: xt.to_ztensor(_variable(i), path, mode="a"), range(4)))
    with xr.open_dataset(path, engine=ENGINE) as ds:
        for i in range(4):
            np.testing.assert_array_equal(ds[f"v{i}"].values, _values(i))


# -- a .tgm append half-written: what readers see, and what a killed appender leaves -------------------------------
def _append_and_stop_halfway(path: str, halfway: object, stop: object) -> None:
    """Append v1 to a .tgm, but stop after half of its first message (then wait, to be killed or released)."""
    from xarray_tensogram.formats.tensogram import writer

    real = writer._write_message

    def half(f, m):
        data = b"".join(m.parts) if hasattr(m, "parts") else bytes(m)
        f.write(data[: len(data) // 2])
        f.flush()
        halfway.set()  # type: ignore[attr-defined]
        stop.wait(60)  # type: ignore[attr-defined]
        f.write(data[len(data) // 2 :])
        return len(data)

    writer._write_message = half
    try:
        xt.to_tensogram(_variable(1), path, mode="a")
    finally:
        writer._write_message = real


def _start_half_append(path: Path) -> tuple[object, object, object]:
    halfway, stop = _FORK.Event(), _FORK.Event()
    proc = _FORK.Process(target=_append_and_stop_halfway, args=(str(path), halfway, stop))
    proc.start()
    assert halfway.wait(60), "the appender did not start"
    return proc, halfway, stop


def test_a_reader_opening_during_an_append_sees_the_file_as_before(tmp_path):
    path = tmp_path / "growing.tgm"
    _base(path, "tgm")
    size = path.stat().st_size
    proc, _halfway, stop = _start_half_append(path)
    try:
        assert path.stat().st_size > size  # half a message is in the file now
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "damaged message skipped": the partial message is not read
            with xr.open_dataset(path, engine=ENGINE) as ds:
                assert list(ds.data_vars) == ["base"]
                np.testing.assert_array_equal(ds["base"].values, 0)
    finally:
        stop.set()
        proc.join(60)
    assert proc.exitcode == 0
    with xr.open_dataset(path, engine=ENGINE) as ds:  # and after it, the file as it is now
        np.testing.assert_array_equal(ds["v1"].values, _values(1))


def test_a_writer_killed_halfway_leaves_the_committed_file_and_the_next_append_works(tmp_path):
    path = tmp_path / "killed.tgm"
    _base(path, "tgm")
    committed = path.read_bytes()
    proc, _halfway, _stop = _start_half_append(path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    assert len(path.read_bytes()) > len(committed)  # the partial message is still on disk
    with (
        pytest.warns(xt.CorruptMessageWarning, match="skipped damaged message"),
        xr.open_dataset(path, engine=ENGINE) as ds,
    ):  # everything committed, and the partial message skipped with a word
        assert list(ds.data_vars) == ["base"]
        np.testing.assert_array_equal(ds["base"].values, 0)
    xt.to_tensogram(_variable(2), path, mode="a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with xr.open_dataset(path, engine=ENGINE) as ds:
            assert sorted(ds.data_vars) == ["base", "v2"]
            np.testing.assert_array_equal(ds["v2"].values, _values(2))
    assert path.read_bytes().startswith(committed)  # the partial message was cut off before the append
    assert sorted(os.listdir(tmp_path)) == [path.name]


def _rewrite_and_stop_before_the_rename(fmt: str, path: str, halfway: object) -> None:
    """Append to a .tet/.zt (a rewrite under a temporary name), but stop before the rename, to be killed."""
    import time

    def stop(fd: int) -> None:
        halfway.set()  # type: ignore[attr-defined]
        time.sleep(60)

    os.fsync = stop  # this process only: atomic_write syncs the temporary file just before renaming it
    WRITERS[fmt](_variable(1), path, mode="a")


@pytest.mark.parametrize("fmt", ["tet", "zt"])
def test_a_writer_killed_before_its_rename_leaves_the_file_and_the_next_cleans_up(tmp_path, fmt):
    path = tmp_path / f"killed.{fmt}"
    _base(path, fmt)
    committed = path.read_bytes()
    halfway = _FORK.Event()
    proc = _FORK.Process(target=_rewrite_and_stop_before_the_rename, args=(fmt, str(path), halfway))
    proc.start()
    assert halfway.wait(60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert path.read_bytes() == committed
    left = sorted(os.listdir(tmp_path))
    assert any(name.startswith(f".tmp-{path.name}-") for name in left), left  # the dead writer's temporary file
    with xr.open_dataset(path, engine=ENGINE) as ds:
        assert list(ds.data_vars) == ["base"]
    WRITERS[fmt](_variable(2), path, mode="a")
    with xr.open_dataset(path, engine=ENGINE) as ds:
        assert sorted(ds.data_vars) == ["base", "v2"]
        np.testing.assert_array_equal(ds["v2"].values, _values(2))
    assert sorted(os.listdir(tmp_path)) == [path.name]  # the next writer removed what the dead one left


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_writer_killed_while_holding_the_lock_does_not_block_the_next(tmp_path, fmt):
    path = tmp_path / f"dead.{fmt}"
    _base(path, fmt)
    held, release = _FORK.Event(), _FORK.Event()
    holder = _FORK.Process(target=_hold_lock, args=(str(path), held, release))
    holder.start()
    assert held.wait(30)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    assert os.path.exists(lock_path(path))  # the dead writer's lock file is still there, but not locked
    WRITERS[fmt](_variable(3), path, mode="a")
    with xr.open_dataset(path, engine=ENGINE) as ds:
        np.testing.assert_array_equal(ds["v3"].values, _values(3))


# -- a full disk -----------------------------------------------------------------------------------------------------
def _append_with_file_size_limit(fmt: str, path: str, limit: int, result: object) -> None:
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        big = xr.Dataset({"big": (("n",), np.arange(limit, dtype="f8"))})  # 8x the limit
        WRITERS[fmt](big, path, mode="a")
    except OSError as exc:
        result.put(f"OSError errno {exc.errno}")  # type: ignore[attr-defined]
    except BaseException as exc:  # reported to the parent, which fails the test with it
        result.put(f"{type(exc).__name__}: {exc}")  # type: ignore[attr-defined]
    else:
        result.put("no error")  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_full_disk_leaves_the_file_byte_identical_and_no_temporary_file(tmp_path, fmt):
    import errno

    path = tmp_path / f"full.{fmt}"
    _base(path, fmt)
    before = path.read_bytes()
    result = _FORK.Queue()
    proc = _FORK.Process(target=_append_with_file_size_limit, args=(fmt, str(path), len(before) + 4096, result))
    proc.start()
    outcome = result.get(timeout=120)
    proc.join(60)
    assert outcome == f"OSError errno {errno.EFBIG}"
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [path.name]
    WRITERS[fmt](_variable(4), path, mode="a")  # and the next append works
    with xr.open_dataset(path, engine=ENGINE) as ds:
        np.testing.assert_array_equal(ds["v4"].values, _values(4))
