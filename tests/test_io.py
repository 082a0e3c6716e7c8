"""Byte sources: exact reads, pickling by path, change detection, atomic writes."""

from __future__ import annotations

import io
import os
import pickle

import pytest

from xarray_tensogram.errors import FileChangedError, TruncatedFileError
from xarray_tensogram.io import BytesSource, FileObjectSource, LocalFileSource, atomic_write, open_source


def test_local_source_reads_exact_ranges_and_counts(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(256)))
    src = open_source(p)
    assert isinstance(src, LocalFileSource)
    assert src.read(10, 5) == bytes(range(10, 15))
    assert (src.bytes_read, src.read_calls) == (5, 1)
    with pytest.raises(TruncatedFileError, match="byte 250"):
        src.read(250, 10)
    assert bytes(src.view(0, 4)) == b"\x00\x01\x02\x03"
    src.close()


def test_sources_pickle_as_descriptions(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"abcdef")
    src = LocalFileSource(p)
    src.read(0, 1)
    clone = pickle.loads(pickle.dumps(src))
    assert clone.read(2, 2) == b"cd"
    assert pickle.loads(pickle.dumps(BytesSource(b"xyz"))).read(1, 2) == b"yz"
    with open(p, "rb") as f:
        fsrc = FileObjectSource(f)
        assert fsrc.read(3, 3) == b"def"
        assert pickle.loads(pickle.dumps(fsrc)).read(0, 2) == b"ab"
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(FileObjectSource(io.BytesIO(b"123")))


def test_modified_file_raises_on_next_read(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"0123456789")
    src = LocalFileSource(p)
    assert src.read(0, 2) == b"01"
    with open(p, "ab") as f:
        f.write(b"more")
    # payload reads (arrays, memory maps, large reads) re-check size and mtime every time
    with pytest.raises(FileChangedError, match="changed on disk"):
        src.read_array(0, 2)
    with pytest.raises(FileChangedError, match="changed on disk"):
        src.view(0, 2)
    with pytest.raises(FileChangedError, match="changed on disk"):
        src.check_unchanged()


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    p = tmp_path / "out.bin"
    p.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(p) as f:
        f.write(b"half")
        raise RuntimeError("boom")
    assert p.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]
    with atomic_write(p) as f:
        f.write(b"new")
    assert p.read_bytes() == b"new"


def test_read_ranges_gives_the_file_bytes_and_reports_a_range_cut_off(tmp_path):
    """The batched small reads an open makes (every object's footer and descriptor): the bytes at each
    range, counted; a file cut short after the open gives a TruncatedFileError naming the range, no crash."""
    p = tmp_path / "f.bin"
    data = os.urandom(70_000)
    p.write_bytes(data)
    src = LocalFileSource(p)
    ranges = [(0, 20), (69_980, 20), (100, 0), (5, 66_000)]  # the last one is long (checked like a read)
    assert src.read_ranges(ranges) == [data[o : o + n] for o, n in ranges]
    assert (src.bytes_read, src.read_calls) == (66_040, 4)
    assert src.read_ranges([]) == []
    with pytest.raises(TruncatedFileError, match="needs 30 bytes"):
        src.read_ranges([(69_990, 30)])
    stat = os.stat(p)
    with open(p, "r+b") as f:  # another process cuts the file (its mtime put back: only the size tells)
        f.truncate(1000)
    os.utime(p, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(TruncatedFileError, match=r"byte 990\b.*expected 20 bytes, got 10"):
        src.read_ranges([(0, 20), (990, 20)])
    src.close()


def test_read_ranges_without_memory_maps(tmp_path, monkeypatch):
    """On a file system that cannot map files, the same bytes come from a read per range."""
    import mmap

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")  # what mmap raises where a file system cannot map files

    p = tmp_path / "f.bin"
    data = os.urandom(1000)
    p.write_bytes(data)
    src = LocalFileSource(p)
    monkeypatch.setattr(mmap, "mmap", refuse)
    ranges = [(0, 20), (980, 20), (500, 0)]
    assert src.read_ranges(ranges) == [data[o : o + n] for o, n in ranges]
    src.close()
