"""The metadata cache (issue 27): an open of an unchanged file is read back, never a stale or broken one.

Oracles: the reference ``tensogram`` decoder for values, and a plain open (``metadata_cache=False``)
of the same file for the whole Dataset. No timing here: that the cached open is fast is
``benchmarks/run_all.py``'s business.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram import metadata_cache
from xarray_tensogram.errors import CorruptMessageWarning, MetadataCacheWarning, UnsupportedOptionError
from xarray_tensogram.formats.tensogram.scan import MessageScanner

tensogram = pytest.importorskip("tensogram")

PARAMS = ("2t", "msl")


def _field(step: int, k: int, bump: float = 0.0) -> np.ndarray:
    return (np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * step + 10 * k + bump).astype(np.float32)


def write_archive(path: Path, steps: int = 6, bump: float = 0.0) -> Path:
    """``steps`` messages of two 3 x 4 fields, written by the reference encoder."""
    desc = {"type": "ntensor", "shape": [3, 4], "dtype": "float32", "compression": "zstd"}
    with open(path, "wb") as f:
        for s in range(steps):
            base = [{"mars": {"param": p, "date": 20240101, "time": 0, "step": 6 * s}} for p in PARAMS]
            objs = [(desc, _field(s, k, bump)) for k in range(len(PARAMS))]
            f.write(bytes(tensogram.encode({"base": base}, objs)))
    return path


def reference_values(path: Path) -> dict[str, np.ndarray]:
    """Each parameter stacked over the messages, as the reference decoder gives them."""
    buf = path.read_bytes()
    out: dict[str, list[np.ndarray]] = {p: [] for p in PARAMS}
    for o, n in tensogram.scan(buf):
        for p, (_desc, arr) in zip(PARAMS, tensogram.decode(buf[o : o + n]).objects, strict=True):
            out[p].append(np.asarray(arr))
    return {p: np.stack(v) for p, v in out.items()}


def open_ds(path: Path, **kw: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine="tensogram", **kw)


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pkl")) if folder.exists() else []


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return write_archive(tmp_path / "archive.tgm")


def test_second_open_is_read_back_and_equals_a_plain_open(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    with open_ds(archive, metadata_cache=folder) as first:
        first.load()
    assert len(entries(folder)) == 1

    # the second open must not scan the file: the catalog comes from the entry
    def no_scan(self: MessageScanner) -> Any:
        raise AssertionError("scanned although the entry was there")

    monkeypatch.setattr(MessageScanner, "scan", no_scan)
    with open_ds(archive, metadata_cache=folder) as cached:
        monkeypatch.undo()
        with open_ds(archive, metadata_cache=False) as plain:
            xr.testing.assert_identical(cached.load(), plain.load())
        for k, p in enumerate(PARAMS):
            expected = np.stack([_field(s, k) for s in range(6)])
            np.testing.assert_array_equal(cached[p].values, expected)
        ref = reference_values(archive)
        for p, values in ref.items():
            np.testing.assert_array_equal(cached[p].values, values)


def test_cached_open_stays_lazy_picklable_and_chunked(archive: Path, tmp_path: Path) -> None:
    import pickle

    folder = tmp_path / "cache"
    open_ds(archive, metadata_cache=folder, chunks={}).close()
    with open_ds(archive, metadata_cache=folder, chunks={}) as cached, open_ds(archive, chunks={}) as plain:
        assert cached["2t"].chunks == plain["2t"].chunks
        again = pickle.loads(pickle.dumps(cached))
        xr.testing.assert_identical(again.compute(), plain.compute())


def test_messages_written_out_of_order_come_back_in_place(tmp_path: Path) -> None:
    """Steps written newest first, one message per parameter: the stacks' members are not in file order,
    so the entry keeps their positions; a cached read equals the reference decoder's values."""
    path = tmp_path / "shuffled.tgm"
    desc = {"type": "ntensor", "shape": [3, 4], "dtype": "float32", "compression": "zstd"}
    with open(path, "wb") as f:
        for s in (5, 2, 4, 0, 3, 1):
            for k, p in enumerate(PARAMS):
                meta = {"base": [{"mars": {"param": p, "date": 20240101, "time": 0, "step": 6 * s}}]}
                f.write(bytes(tensogram.encode(meta, [(desc, _field(s, k))])))
    folder = tmp_path / "cache"
    open_ds(path, metadata_cache=folder).close()
    assert len(entries(folder)) == 1
    with open_ds(path, metadata_cache=folder) as cached, open_ds(path, metadata_cache=False) as plain:
        xr.testing.assert_identical(cached.load(), plain.load())
        buf = path.read_bytes()
        decoded = [tensogram.decode(buf[o : o + n]) for o, n in tensogram.scan(buf)]
        for msg in decoded:
            mars = msg.metadata.base[0]["mars"]
            np.testing.assert_array_equal(
                cached[mars["param"]].sel(step=np.timedelta64(mars["step"], "h")).values, msg.objects[0][1]
            )


def test_same_size_same_mtime_rewrite_is_not_served_stale(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    open_ds(archive, metadata_cache=folder).close()
    st = os.stat(archive)
    write_archive(archive, bump=0.5)  # same layout, same size, other values
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(archive).st_size == st.st_size and os.stat(archive).st_mtime_ns == st.st_mtime_ns
    with open_ds(archive, metadata_cache=folder) as ds:
        np.testing.assert_array_equal(ds["2t"].values[2], _field(2, 0, 0.5))
    assert len(entries(folder)) == 2  # a second entry, for the new content


def test_appended_messages_and_other_options_get_their_own_entry(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    open_ds(archive, metadata_cache=folder).close()
    write_archive(archive, steps=8)
    with open_ds(archive, metadata_cache=folder) as ds:
        assert ds.sizes["step"] == 8
    with open_ds(archive, metadata_cache=folder, filter_by_keys={"mars.param": "msl"}) as ds:
        assert list(ds.data_vars) == ["msl"]
    with open_ds(archive, metadata_cache=folder, drop_variables="2t") as ds:
        assert list(ds.data_vars) == ["msl"]
    assert len(entries(folder)) == 4


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"garbage" * 10,  # foreign
        lambda b: b[:20] + bytes(200) + b[220:],  # corrupt in the middle
        lambda b: metadata_cache.MAGIC + b"\x80\x05K\x01.",  # a valid pickle of something else
    ],
    ids=["truncated", "foreign", "corrupt", "other-pickle"],
)
def test_broken_entry_is_ignored_with_a_warning_and_rewritten(archive: Path, tmp_path: Path, damage: Any) -> None:
    folder = tmp_path / "cache"
    open_ds(archive, metadata_cache=folder).close()
    (entry,) = entries(folder)
    entry.write_bytes(damage(entry.read_bytes()))
    with pytest.warns(MetadataCacheWarning, match="ignored the metadata cache entry"):
        ds = open_ds(archive, metadata_cache=folder)
    with ds, open_ds(archive, metadata_cache=False) as plain:
        xr.testing.assert_identical(ds.load(), plain.load())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: read back without a warning
        open_ds(archive, metadata_cache=folder).close()


def test_opt_out_and_default_threshold_write_nothing(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "default-cache"
    monkeypatch.setenv(metadata_cache.ENV_DIR, str(folder))
    assert metadata_cache.default_cache_dir() == folder
    looked_up: list[Path] = []
    real_load = metadata_cache._load
    monkeypatch.setattr(
        metadata_cache, "_load", lambda entry, identity: looked_up.append(entry) or real_load(entry, identity)
    )
    open_ds(archive, metadata_cache=False).close()
    open_ds(archive).close()  # default: 6 messages in a few hundred bytes is below both thresholds
    assert entries(folder) == [] and looked_up == []  # not even looked up
    monkeypatch.setattr(metadata_cache, "MIN_BYTES", 0)
    open_ds(archive).close()  # looked up, not stored: 6 messages
    assert entries(folder) == [] and len(looked_up) == 1
    monkeypatch.setattr(metadata_cache, "MIN_ITEMS", 5)
    open_ds(archive).close()  # default directory, at or above both thresholds
    assert len(entries(folder)) == 1
    # never next to the user's files
    assert [p.name for p in archive.parent.iterdir() if p.suffix == ".pkl"] == []


def test_xdg_cache_home_is_the_default_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(metadata_cache.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert metadata_cache.default_cache_dir() == tmp_path / "xarray-tensogram"


def test_an_open_that_warned_is_not_stored(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with open(archive, "ab") as f:
        f.write(b"trailing junk")
    for _ in range(2):  # the warning comes on every open, never hidden by an entry
        with pytest.warns(CorruptMessageWarning):
            open_ds(archive, metadata_cache=folder).close()
    assert entries(folder) == []


def test_concurrent_writers_leave_one_whole_entry(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    results: list[xr.Dataset] = []

    def one() -> None:
        with open_ds(archive, metadata_cache=folder) as ds:
            results.append(ds.load())

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert len(entries(folder)) == 1 and list(folder.glob("*.tmp")) == []
    with open_ds(archive, metadata_cache=False) as plain:
        for ds in results:
            xr.testing.assert_identical(ds, plain.load())


def test_bad_option_and_places_it_cannot_use(archive: Path, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedOptionError, match="metadata_cache must be"):
        open_ds(archive, metadata_cache=3)
    with pytest.warns(MetadataCacheWarning, match="local files only"):
        open_ds(archive.read_bytes(), metadata_cache=True).close()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.warns(MetadataCacheWarning, match="could not write"):
        ds = open_ds(archive, metadata_cache=blocker / "cache")
    with ds, open_ds(archive, metadata_cache=False) as plain:
        xr.testing.assert_identical(ds.load(), plain.load())


def test_the_directory_keeps_the_most_recently_used_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_cache, "MAX_ENTRIES", 2)
    folder = tmp_path / "cache"
    paths = [write_archive(tmp_path / f"a{i}.tgm", bump=i) for i in range(3)]
    for p in paths:
        open_ds(p, metadata_cache=folder).close()
    assert len(entries(folder)) == 2
    with open_ds(paths[0], metadata_cache=folder) as ds:  # pruned: built again, same values
        np.testing.assert_array_equal(ds["2t"].values[1], _field(1, 0, 0))


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_an_entry_others_could_write_is_not_read(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    open_ds(archive, metadata_cache=folder).close()
    (entry,) = entries(folder)
    entry.chmod(0o666)
    with pytest.warns(MetadataCacheWarning, match="not owned by you alone"):
        open_ds(archive, metadata_cache=folder).close()


def test_datatree_and_groups_come_back_from_the_cache(archive: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with xr.open_datatree(archive, engine="tensogram", metadata_cache=folder) as first:
        first.load()
    assert len(entries(folder)) == 1
    with (
        xr.open_datatree(archive, engine="tensogram", metadata_cache=folder) as cached,
        xr.open_datatree(archive, engine="tensogram", metadata_cache=False) as plain,
    ):
        xr.testing.assert_identical(cached.load(), plain.load())


def test_a_file_changed_during_the_open_is_not_stored(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    real_scan = MessageScanner.scan

    def scan_then_touch(self: MessageScanner) -> Any:
        found = real_scan(self)
        st = os.stat(archive)
        os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # another writer, meanwhile
        return found

    monkeypatch.setattr(MessageScanner, "scan", scan_then_touch)
    open_ds(archive, metadata_cache=folder).close()
    assert entries(folder) == []
