"""Issue 12: ``verify`` tells damage apart from a missing optional codec package.

The missing package is simulated the way a bare installation behaves: its import fails
(``sys.modules[name] = None``), so the package's lazy import raises MissingCodecError.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from xarray_tensogram import open_tensogram
from xarray_tensogram.cli import main
from xarray_tensogram.codecs import optional as registry
from xarray_tensogram.errors import MissingCodecError

tensogram = pytest.importorskip("tensogram")


@pytest.fixture
def no_lz4(monkeypatch):
    """An installation without the ``lz4`` package of the ``codecs`` extra."""
    for name in ("lz4", "lz4.block"):
        monkeypatch.setitem(sys.modules, name, None)
    registry._import.cache_clear()
    yield
    registry._import.cache_clear()


def _desc(comp: str) -> dict:
    return {"type": "ntensor", "shape": [6, 8], "dtype": "float64", "compression": comp}


VALUES = np.linspace(0.0, 1.0, 48).reshape(6, 8)


def _file(tmp_path, hashed: bool = True):
    """Message 0: zstd + lz4 objects; message 1: one lz4 object (unhashed when ``hashed`` is False)."""
    a = tensogram.encode({"base": [{"name": "z"}, {"name": "l"}]}, [(_desc("zstd"), VALUES), (_desc("lz4"), VALUES)])
    b = tensogram.encode({"base": [{"name": "l2"}]}, [(_desc("lz4"), VALUES * 2)], **({} if hashed else {"hash": None}))
    path = tmp_path / "codecs.tgm"
    path.write_bytes(a + b)
    return path


def _run(capsys, *argv) -> tuple[int, list[str]]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out.splitlines()


def test_the_simulation_really_removes_lz4(tmp_path, no_lz4):
    with open_tensogram(_file(tmp_path)) as f:
        np.testing.assert_array_equal(f[0].read_object(0), VALUES)  # zstd is a core dependency
        with pytest.raises(MissingCodecError, match=r"'lz4'.*pip install \"\.\[codecs\]\" in a checkout"):
            f[0].read_object(1)


def test_missing_codec_is_skipped_not_damage(tmp_path, capsys, no_lz4):
    code, lines = _run(capsys, "verify", _file(tmp_path))
    assert code == 0, lines
    skips = [line for line in lines if line.startswith("SKIP")]
    assert [s.split(":")[0] for s in skips] == ["SKIP message 0, object 1", "SKIP message 1, object 0"]
    for s in skips:
        assert "xxh3 hash verified" in s and 'pip install ".[codecs]"' in s and "lz4" in s
    assert not [line for line in lines if line.startswith("FAIL")]
    assert lines[-1].endswith("3 hashes verified, 1 item decoded, 2 items skipped (optional codec package missing))")
    assert ": OK (" in lines[-1]


def test_missing_codec_fails_with_strict(tmp_path, capsys, no_lz4):
    code, lines = _run(capsys, "verify", "--strict", _file(tmp_path))
    assert code == 1
    assert "FAILED: 2 problems" in lines[-1]


def test_hash_of_an_undecodable_object_is_still_checked(tmp_path, capsys, no_lz4):
    path = _file(tmp_path)
    data = bytearray(path.read_bytes())
    with open_tensogram(bytes(data)) as f:
        ref = f[1].objects[0]
    data[ref.frame_offset + ref.frame_length // 2] ^= 0x10  # inside the lz4 payload of message 1
    path.write_bytes(bytes(data))
    code, lines = _run(capsys, "verify", path)
    assert code == 1
    fails = [line for line in lines if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith("FAIL message 1, object 0: IntegrityError:") and "xxh3" in fails[0]
    assert [line.split(":")[0] for line in lines if line.startswith("SKIP")] == ["SKIP message 0, object 1"]


def test_unhashed_undecodable_object_says_so(tmp_path, capsys, no_lz4):
    code, lines = _run(capsys, "verify", _file(tmp_path, hashed=False))
    assert code == 0
    skips = [line for line in lines if line.startswith("SKIP")]
    assert "xxh3 hash verified" in skips[0] and "no stored hash" in skips[1]
    assert "2 hashes verified" in lines[-1] and "1 without a stored hash" in lines[-1]


def test_with_the_package_everything_decodes(tmp_path, capsys):
    code, lines = _run(capsys, "verify", "--strict", _file(tmp_path))
    assert code == 0 and lines[-1].endswith("3 hashes verified, 3 items decoded)")
