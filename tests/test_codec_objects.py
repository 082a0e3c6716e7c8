"""The codec objects (issue 26): declared parameters, the writers' validation function, and decode/encode
against the libraries that define the formats (zstandard, python-lz4, python-blosc2, pyroaring), not our own
output."""

from __future__ import annotations

import numpy as np
import pytest
import zstandard

from xarray_tensogram.codecs import bitmaps, blosc2, lz4, simple_packing, zfp, zstd
from xarray_tensogram.codecs.registry import CODECS, codec, resolve_params
from xarray_tensogram.errors import EncodeError, UnsupportedError


def test_resolve_params_fills_defaults_and_refuses_what_the_codec_does_not_declare() -> None:
    assert resolve_params("zstd", {}) == {"level": 3}
    assert resolve_params("szip", {"rsi": 64}) == {"rsi": 64, "block_size": 16, "flags": 8}
    assert resolve_params("zfp", {"mode": "fixed_rate"}) == {"mode": "fixed_rate", "rate": 16.0}
    with pytest.raises(EncodeError, match=r"var 't': zstd has no parameter 'levle'; its parameters: level"):
        resolve_params("zstd", {"levle": 3}, what="var 't': ")
    with pytest.raises(EncodeError, match=r"'level' must be an integer, got 'high'"):
        resolve_params("zstd", {"level": "high"})
    with pytest.raises(EncodeError, match=r"'codec' must be one of .*'zstd'.*got 'brotli'"):
        resolve_params("blosc2", {"codec": "brotli"})
    with pytest.raises(EncodeError, match=r"'clevel' must be in 0..9, got 12"):
        resolve_params("blosc2", {"clevel": 12})
    with pytest.raises(EncodeError, match="needs its parameter 'tolerance'"):
        resolve_params("zfp", {"mode": "fixed_accuracy"})
    with pytest.raises(UnsupportedError, match="unknown codec 'gzip'"):
        codec("gzip")


def test_every_registered_codec_has_a_unique_name_and_typed_parameters() -> None:
    assert len(CODECS) == len({c.name for c in CODECS.values()})
    for c in CODECS.values():
        for p in c.params:
            assert p.kind in (int, float, str, bool, list), (c.name, p.name)


def test_zstd_object_decodes_what_zstandard_writes_and_zstandard_reads_what_it_writes() -> None:
    data = np.arange(50_000, dtype="<f8").tobytes()
    theirs = zstandard.ZstdCompressor(level=5).compress(data)
    assert bytes(zstd.CODEC.decode(theirs, len(data), {})) == data
    out = np.empty(len(data) // 8, dtype="<f8")
    zstd.CODEC.decode_into(theirs, out, {})
    assert out.tobytes() == data
    ours, recorded = zstd.CODEC.encode(data, {"level": 1})
    assert recorded == {} and zstandard.ZstdDecompressor().decompressobj().decompress(ours) == data
    assert bytes(zstd.CODEC.decode_prefix(theirs, 800, len(data), {})) == data[:800]


def test_lz4_and_blosc2_objects_against_their_libraries() -> None:
    lz4_block = pytest.importorskip("lz4.block")
    py_blosc2 = pytest.importorskip("blosc2")
    data = np.tile(np.arange(1000, dtype="<i4"), 20).tobytes()
    assert bytes(lz4.CODEC.decode(lz4_block.compress(data, store_size=True), len(data), {})) == data
    assert lz4_block.decompress(lz4.CODEC.encode(data, {})[0]) == data
    payload, _ = blosc2.CODEC.encode(data, {"codec": "zstd", "typesize": 4})
    sc = py_blosc2.schunk_from_cframe(payload, copy=True)
    assert b"".join(sc.decompress_chunk(i) for i in range(sc.nchunks)) == data


def test_bitmap_objects_against_pyroaring() -> None:
    pyroaring = pytest.importorskip("pyroaring")
    bits = np.zeros(1000, dtype=bool)
    bits[[3, 4, 5, 999]] = True
    blob = pyroaring.BitMap([3, 4, 5, 999]).serialize()
    packed = bitmaps.ROARING.decode(blob, 125, {"bits": 1000})
    np.testing.assert_array_equal(np.unpackbits(np.asarray(packed, dtype=np.uint8)).astype(bool), bits)
    ours, _ = bitmaps.ROARING.encode(np.packbits(bits).tobytes(), {"bits": 1000})
    assert sorted(pyroaring.BitMap.deserialize(ours)) == [3, 4, 5, 999]


def test_simple_packing_and_zfp_objects_round_trip_within_their_precision() -> None:
    values = np.linspace(250.0, 310.0, 4096)
    packed, recorded = simple_packing.CODEC.encode(values.tobytes(), {"bits_per_value": 16})
    assert set(recorded) == {"reference_value", "binary_scale_factor"}
    params = {"bits_per_value": 16, **recorded}
    back = np.frombuffer(simple_packing.CODEC.decode(packed, values.nbytes, params), dtype=np.float64)
    assert np.abs(back - values).max() <= 2.0 ** recorded["binary_scale_factor"]
    pytest.importorskip("zfpy")
    stream, _ = zfp.CODEC.encode(values.tobytes(), {"mode": "fixed_accuracy", "tolerance": 1e-3})
    got = zfp.CODEC.decode(stream, values.nbytes, {"mode": "fixed_accuracy", "tolerance": 1e-3})
    assert np.abs(np.asarray(got) - values).max() <= 1e-3


def test_zstd_decodes_in_many_threads_at_once_as_zstandard_does() -> None:
    # each thread keeps its own decompressor: payloads of different sizes and levels, decoded concurrently
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    raws = [np.round(rng.normal(size=n), 1).astype(np.float32).tobytes() for n in (10, 70_000, 300_000) * 8]
    payloads = [zstandard.ZstdCompressor(level=1 + i % 5).compress(r) for i, r in enumerate(raws)]

    def ours(i: int) -> bytes:
        out = np.empty(len(raws[i]), dtype=np.uint8)
        zstd.decompress_into(payloads[i], out)
        return out.tobytes()

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ours, [i for _ in range(3) for i in range(len(payloads))]))
    expected = [zstandard.ZstdDecompressor().decompress(p) for p in payloads] * 3
    assert got == expected


def test_zstd_does_not_keep_a_decompressor_after_a_large_window() -> None:
    # a frame needing a 16 MiB window is decoded right, and no thread holds that buffer afterwards
    raw = np.random.default_rng(4).integers(0, 4, size=20 << 20, dtype=np.uint8).tobytes()
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=24)
    payload = zstandard.ZstdCompressor(compression_params=params).compress(raw)
    assert zstandard.get_frame_parameters(payload).window_size > zstd._KEEP_WINDOW
    assert zstd.decompress(payload, len(raw)).tobytes() == raw
    assert zstd._THREAD.decompressor is None
