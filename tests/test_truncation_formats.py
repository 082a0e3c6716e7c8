"""Issue 12 for .tet and .zt: every cut is detected by open or by reading everything (what ``verify``
does), junk appended is detected where the format does not allow it, and the error says "truncated"
in plain words with the file's actual size."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from xarray_tensogram import sample_paths
from xarray_tensogram.cli import main
from xarray_tensogram.errors import MissingHashError, TruncatedFileError, XarrayTensogramError
from xarray_tensogram.formats.tetr import open_tetr
from xarray_tensogram.formats.ztensor import open_ztensor

DATA = Path(__file__).parent / "data"
SAMPLE_TET = next(p for p in sample_paths() if p.endswith(".tet"))
SAMPLE_ZT = next(p for p in sample_paths() if p.endswith(".zt"))
#: the bundled samples (a .tet with a THST footer, a v0.1 .zt), a .tet without footer, a v1 and a v2 .zt
CASES = {
    "sample.tet": SAMPLE_TET,
    "no_footer.tet": DATA / "tetr" / "multichunk_u32.tet",
    "sample.zt": SAMPLE_ZT,
    "v1_crc32c.zt": DATA / "ztensor" / "v1" / "crc32c.zt",
    "v2_zstd.zt": DATA / "ztensor" / "v2" / "aligned_4096_zstd.zt",
}


def read_everything(buf: bytes | memoryview, kind: str) -> None:
    """Open and decode every tile or tensor, checking checksums where stored (what ``verify`` does)."""
    if kind == "tet":
        with open_tetr(buf) as f:
            for d in f.datasets:
                reader = f.tile_reader(d.dataset_id)
                for coords in np.ndindex(*d.grid):
                    reader.read_chunk(tuple(coords))
        return
    with open_ztensor(buf) as f:
        for t in f.tensors:
            try:
                f.read(t.index, verify=True)
            except MissingHashError:
                f.read(t.index)


@pytest.mark.parametrize("name", list(CASES))
def test_every_cut_is_detected_and_says_truncated(name):
    data = Path(CASES[name]).read_bytes()
    kind = name.rsplit(".", 1)[1]
    read_everything(data, kind)  # the whole file is fine
    view = memoryview(data)  # one buffer, sliced without copies
    truncated = 0
    for cut in range(len(data)):
        with pytest.raises(XarrayTensogramError) as info:
            read_everything(view[:cut], kind)
        text = str(info.value)
        if isinstance(info.value, TruncatedFileError):
            truncated += 1
            assert "truncated" in text, (cut, text)
        if "truncated" in text:  # plain words come with the actual size of the cut file
            assert re.search(rf"\b{cut}\b", text), (cut, text)
    assert truncated >= len(data) // 2, truncated


@pytest.mark.parametrize("name", ["sample.tet", "sample.zt", "v1_crc32c.zt", "v2_zstd.zt"])
def test_junk_appended_is_detected(name):
    """Junk after the footer: these layouts end with a footer (THST, the index length, the v2 magic)."""
    data = Path(CASES[name]).read_bytes()
    kind = name.rsplit(".", 1)[1]
    rng = np.random.default_rng(5)
    for n in range(1, 65):
        for junk in (rng.integers(0, 256, n, dtype=np.uint8).tobytes(), b"\x00" * n):
            with pytest.raises(XarrayTensogramError):
                read_everything(data + junk, kind)


def test_junk_after_a_tet_without_footer_is_allowed():
    """Spec tetr-v1 §4: trailing bytes are allowed when the superblock flags are 0; the values still read."""
    data = Path(CASES["no_footer.tet"]).read_bytes()
    with open_tetr(data) as f:
        ref = [f.read(d.name) for d in f.datasets]
    with open_tetr(data + b"\xab" * 13) as f:
        for d, r in zip(f.datasets, ref, strict=True):
            np.testing.assert_array_equal(f.read(d.name), r)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("sample.tet", "needs at least a 32-byte superblock, this one has 12 bytes"),
        ("sample.zt", "needs at least 16 bytes, this one has 12"),
    ],
)
def test_truncation_message_gives_expected_and_actual_size(name, short):
    data = Path(CASES[name]).read_bytes()
    kind = name.rsplit(".", 1)[1]
    with pytest.raises(TruncatedFileError, match=f"file truncated: .*{short}"):
        read_everything(data[:12], kind)
    cut = len(data) - 100
    with pytest.raises(XarrayTensogramError, match=rf"truncated.*\b{cut}\b"):
        read_everything(data[:cut], kind)


@pytest.mark.parametrize("name", ["sample.tet", "sample.zt"])
def test_verify_fails_on_a_cut_file(tmp_path, capsys, name):
    data = Path(CASES[name]).read_bytes()
    for cut in (len(data) // 2, len(data) - 1):
        path = tmp_path / name
        path.write_bytes(data[:cut])
        assert main(["verify", str(path)]) == 1
        err = capsys.readouterr().err
        assert str(path) in err and "truncated" in err
