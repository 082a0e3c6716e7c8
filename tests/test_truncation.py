"""Issue 12: a cut or extended Tensogram file is never reported whole.

Every cut point of the bundled 4-message sample and every junk length 1..64 after it:
normal mode warns (naming the byte range) and still opens the complete messages,
``strict=True`` raises, ``verify`` fails. The reference scanner (``tensogram.scan``) and
decoder are the oracles for which messages are complete and what they hold.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram import open_tensogram
from xarray_tensogram.cli import main, sample_paths
from xarray_tensogram.errors import CorruptFileError, IntegrityError, TruncatedFileError, XarrayTensogramError
from xarray_tensogram.formats.tensogram import CorruptMessageWarning

tensogram = pytest.importorskip("tensogram")

SAMPLE = next(p for p in sample_paths() if p.endswith("forecast.tgm"))  # the cut offsets below are its own
with open(SAMPLE, "rb") as _fh:
    DATA = _fh.read()
SPANS = [tuple(s) for s in tensogram.scan(DATA)]
REFERENCE = [tensogram.decode(DATA[o : o + n]) for o, n in SPANS]
#: cuts at which the complete messages are also decoded and compared value by value (every cut is
#: checked against the reference spans; decoding at all 14 200 would only repeat the same frames)
VALUE_CUTS = {o + k for o, _n in SPANS for k in (1, 4, 7, 8, 30, 47, 48, 500)} | {len(DATA) - 1}


def test_sample_has_four_messages():
    assert len(SPANS) == 4
    assert SPANS[-1][0] + SPANS[-1][1] == len(DATA)


def _check_complete(f, cut: int, values: bool) -> None:
    complete = [s for s in SPANS if s[0] + s[1] <= cut]
    assert [(m.offset, m.length) for m in f] == complete, cut
    if values:
        for msg, ref in zip(f, REFERENCE, strict=False):
            for j, (_desc, arr) in enumerate(ref.objects):
                np.testing.assert_array_equal(msg.read_object(j), arr)


def test_every_cut_warns_naming_the_range_and_keeps_complete_messages():
    view = memoryview(DATA)  # one buffer, sliced without copies
    ends = {o + n for o, n in SPANS}
    for cut in range(1, len(DATA)):
        if cut in ends:
            continue  # a cut between messages leaves a valid file
        last_end = max([e for e in ends if e <= cut], default=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                f = open_tensogram(view[:cut])
            except XarrayTensogramError as exc:
                assert last_end == 0, (cut, exc)  # only a file without any complete message fails to open
                assert "byte" in str(exc)
                continue
        with f:
            found = [w for w in caught if issubclass(w.category, CorruptMessageWarning)]
            assert len(found) == 1, (cut, [str(w.message) for w in caught])
            assert f"bytes {last_end}..{cut}" in str(found[0].message), (cut, str(found[0].message))
            assert f.skipped == [(last_end, cut, f.skipped[0][2])]
            _check_complete(f, cut, cut in VALUE_CUTS)


def test_every_cut_raises_in_strict_mode():
    view = memoryview(DATA)
    ends = {o + n for o, n in SPANS}
    kinds: dict[str, int] = {}
    for cut in range(1, len(DATA)):
        if cut in ends:
            with open_tensogram(view[:cut], strict=True) as f:
                _check_complete(f, cut, values=False)
            continue
        with pytest.raises(CorruptFileError) as info:
            open_tensogram(view[:cut], strict=True)
        assert "byte" in str(info.value), cut
        kinds[type(info.value).__name__] = kinds.get(type(info.value).__name__, 0) + 1
    # cut inside a preamble or past a declared total_length reads as truncation, in plain words
    assert kinds.get("TruncatedFileError", 0) > 0
    short = r"byte 7096: message truncated: a message needs at least 48 bytes.*28"
    with pytest.raises(TruncatedFileError, match=short):
        open_tensogram(view[: 7096 + 28], strict=True)
    with pytest.raises(TruncatedFileError, match=r"truncated: its preamble declares 3560 bytes, .*100 bytes"):
        open_tensogram(view[: 7096 + 100], strict=True)
    with pytest.raises(TruncatedFileError, match="truncated inside a message preamble: 4 bytes"):
        open_tensogram(view[:7100], strict=True)


def test_junk_of_every_length_after_the_last_message():
    rng = np.random.default_rng(12)
    for n in range(1, 65):
        for junk in (rng.integers(0, 256, n, dtype=np.uint8).tobytes(), b"\x00" * n):
            buf = DATA + junk
            with pytest.warns(CorruptMessageWarning, match=f"bytes {len(DATA)}..{len(buf)}"):
                f = open_tensogram(buf)
            with f:
                _check_complete(f, len(DATA), values=n == 64)
            with pytest.raises(CorruptFileError, match=f"bytes {len(DATA)}..{len(buf)}"):
                open_tensogram(buf, strict=True)


@pytest.fixture
def half(tmp_path):
    path = tmp_path / "half.tgm"
    path.write_bytes(DATA[:7100])  # `head -c 7100 forecast.tgm`: 4 bytes into the third message
    return path


def test_xarray_open_of_a_cut_file(half):
    with pytest.raises(TruncatedFileError, match=r"half\.tgm.*byte 7096.*truncated"):
        xr.open_dataset(half, engine="tensogram", strict=True)
    with pytest.warns(CorruptMessageWarning, match="bytes 7096..7100"):
        ds = xr.open_dataset(half, engine="tensogram")
    with ds:
        full = xr.open_dataset(SAMPLE, engine="tensogram")
        with full:
            assert ds.sizes["step"] == 2 and full.sizes["step"] == 4
            xr.testing.assert_identical(ds.load(), full.isel(step=slice(0, 2)).load())


@pytest.mark.parametrize("cut", [7097, 7100, 7096 + 30, 7096 + 2000, len(DATA) - 1])
def test_verify_fails_on_a_cut_file(tmp_path, capsys, cut):
    path = tmp_path / "cut.tgm"
    path.write_bytes(DATA[:cut])
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL bytes 7096.." in out or f"FAIL bytes {SPANS[-1][0]}.." in out, out
    assert "FAILED" in out and "OK" not in out.splitlines()[-1]


@pytest.mark.parametrize("n", [1, 7, 64])
def test_verify_fails_on_junk_after_the_last_message(tmp_path, capsys, n):
    path = tmp_path / "junk.tgm"
    path.write_bytes(DATA + b"\xab" * n)
    assert main(["verify", str(path)]) == 1
    assert f"FAIL bytes {len(DATA)}..{len(DATA) + n}" in capsys.readouterr().out


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_flipped_payload_bit_is_caught_by_verify_hash_and_verify(tmp_path, capsys, compression):
    """A bit flipped in a compressed payload that still decompresses gives wrong values on a plain read
    (nothing can notice without a hash); xarray's verify_hash=True and ``verify`` both catch it."""
    if compression == "lz4":
        pytest.importorskip("lz4")
    values = np.arange(256, dtype="<f8").reshape(16, 16)
    desc = {"type": "ntensor", "shape": [16, 16], "dtype": "float64", "compression": compression}
    msg = tensogram.encode({"base": [{"name": "v"}]}, [(desc, values)])
    with open_tensogram(msg) as f:
        ref = f[0].objects[0]
    path = tmp_path / "flipped.tgm"
    found = None
    for pos in range(ref.frame_offset + ref.frame_length - 21, ref.frame_offset + 16, -1):  # payload, from the end
        damaged = bytearray(msg)
        damaged[pos] ^= 0x04
        try:
            wrong = tensogram.decode(bytes(damaged)).objects[0][1]  # the reference, hash checks off
        except Exception:  # this flip breaks the stream; try another byte
            continue
        if wrong.shape == values.shape and not np.array_equal(wrong, values):
            found = bytes(damaged)
            break
    assert found is not None, "no silent flip found"
    path.write_bytes(found)
    with xr.open_dataset(path, engine="tensogram") as ds:  # plain read: wrong values, as the reference gives
        np.testing.assert_array_equal(ds["v"].values, wrong)
    with (
        xr.open_dataset(path, engine="tensogram", verify_hash=True) as ds,
        pytest.raises(IntegrityError, match="xxh3 mismatch"),
    ):
        _ = ds["v"].values
    assert main(["verify", str(path)]) == 1
    assert "FAIL message 0, object 0: IntegrityError" in capsys.readouterr().out
