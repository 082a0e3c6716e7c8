"""Full loads decode straight into the final array (issue 15): the in-place paths give the oracles' values.

The oracles are the reference ``tensogram`` encoder/decoder, ``ztensor`` 0.1.4 and the arrays written.
Also: the byte-source and codec primitives those paths use, the linear hypercube assembly, the
garbage-collector pause around an open, ``chunks="auto"`` on small tiles, and streamed writer frames.
No timing here: speed is measured in ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram.codecs import lz4, simple_packing, zstd
from xarray_tensogram.errors import CodecError, TruncatedFileError
from xarray_tensogram.formats.tetr import DatasetWrite, write_tetr
from xarray_tensogram.formats.tetr import boxes as tetr_boxes
from xarray_tensogram.formats.ztensor import write_ztensor_v01
from xarray_tensogram.io import BytesSource, LocalFileSource

tensogram = pytest.importorskip("tensogram")


def _field(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(280, 10, size=shape), 2).astype(np.float32)


# -------------------------------------------------------------------------------------- byte sources
def test_local_read_into_contiguous_and_strided_targets(tmp_path):
    data = np.arange(64, dtype=np.float32)
    p = tmp_path / "f.bin"
    p.write_bytes(b"xx" + data.tobytes())
    src = LocalFileSource(p)
    whole = np.empty(16, np.float32)
    src.read_into(2 + 8 * 4, whole)
    np.testing.assert_array_equal(whole, data[8:24])
    big = np.zeros((8, 10), np.float32)
    tile = big[2:6, 3:7]  # not contiguous: a tile inside a larger array
    src.read_into(2, tile)
    np.testing.assert_array_equal(big[2:6, 3:7], data[:16].reshape(4, 4))
    assert big[:2].sum() == 0 and big[:, :3].sum() == 0 and big[:, 7:].sum() == 0
    with pytest.raises(TruncatedFileError):
        src.read_into(2 + 60 * 4, np.empty(8, np.float32))
    src.close()


def test_base_read_into_and_release_for_other_sources():
    src = BytesSource(np.arange(10, dtype=np.int16).tobytes())
    out = np.empty((2, 3), np.int16)
    src.read_into(4, out)
    np.testing.assert_array_equal(out, [[2, 3, 4], [5, 6, 7]])
    src.release(0, 10)  # nothing to give back, must not fail


def test_released_view_pages_read_back_the_same_bytes(tmp_path):
    payload = bytes(range(256)) * 64
    p = tmp_path / "f.bin"
    p.write_bytes(payload)
    src = LocalFileSource(p)
    view = src.view(100, 10000)
    before = bytes(view)
    src.release(100, 10000)  # the pages leave the resident set; reading faults them back in from the file
    assert bytes(view) == before == payload[100:10100]
    del view
    src.close()


# -------------------------------------------------------------------------------------------- codecs
def test_zstd_decompress_into_fills_exactly_or_raises():
    raw = _field((64, 32)).tobytes()
    payload = zstd.compress(raw)
    out = np.empty((64, 32), np.float32)
    zstd.decompress_into(payload, out)
    assert out.tobytes() == raw
    with pytest.raises(CodecError):
        zstd.decompress_into(payload, np.empty((64, 31), np.float32))  # the stream has more
    with pytest.raises(CodecError):
        zstd.decompress_into(payload, np.empty((65, 32), np.float32))  # the stream has less
    with pytest.raises(ValueError, match="contiguous"):
        zstd.decompress_into(payload, np.empty((64, 64), np.float32)[:, :32])


@pytest.mark.parametrize("cramjam", [True, False], ids=["cramjam", "python-lz4"])
def test_lz4_decompress_into_fills_exactly_or_raises(monkeypatch, cramjam):
    """Both paths (straight into the array with cramjam, python-lz4 then one copy) give python-lz4's bytes."""
    lz4_block = pytest.importorskip("lz4.block")
    if cramjam:
        pytest.importorskip("cramjam")
    else:
        monkeypatch.setattr(lz4, "available", lambda module: module != "cramjam")
    raw = _field((64, 32)).tobytes()
    payload = lz4_block.compress(raw, store_size=True)  # the block form tensogram writes (size prefix)
    out = np.empty((64, 32), np.float32)
    lz4.decompress_into(memoryview(payload), out)
    assert out.tobytes() == raw
    with pytest.raises(CodecError):
        lz4.decompress_into(payload, np.empty((64, 31), np.float32))  # the prefix declares more
    with pytest.raises(CodecError):
        lz4.decompress_into(payload[:100], out)  # truncated block
    lies = len(raw).to_bytes(4, "little") + lz4_block.compress(raw[:-8], store_size=False)
    with pytest.raises(CodecError):
        lz4.decompress_into(lies, out)  # the prefix is right, the block decodes to fewer bytes
    with pytest.raises(ValueError, match="contiguous"):
        lz4.decompress_into(payload, np.empty((64, 64), np.float32)[:, :32])


@pytest.mark.parametrize("bits", [8, 12, 16, 24, 32])
def test_simple_packing_decode_into_matches_the_reference_decoder(bits):
    values = _field((40, 25), bits).astype(np.float64)
    desc = {"type": "ntensor", "shape": [40, 25], "dtype": "float64", "encoding": "simple_packing"}
    desc.update(tensogram.compute_packing_params(values.ravel(), bits, 0))
    ref = tensogram.decode(tensogram.encode({"base": [{}]}, [(desc, values)])).objects[0][1]
    msg = tensogram.decode(tensogram.encode({"base": [{}]}, [(desc, values)]))
    d = msg.objects[0][0]
    # the packed payload, re-packed by our encoder with the reference's parameters
    params = (
        float(d.params["sp_reference_value"]),
        int(d.params["sp_binary_scale_factor"]),
        int(d.params.get("sp_decimal_scale_factor", 0)),
    )
    packed = simple_packing.encode(values, bits, *params)
    out = np.full((40, 25), -1.0)
    simple_packing.decode_into(out, packed, bits, *params)
    np.testing.assert_array_equal(out, ref)


# ------------------------------------------------------------------------------------ full loads (tgm)
def _write_tgm(path, pipeline: dict, steps: int = 3, float64: bool = False) -> list[np.ndarray]:
    """Three messages of two fields each, written by the reference encoder; returns the arrays written."""
    fields = []
    with open(path, "wb") as f:
        for s in range(steps):
            objs, base = [], []
            for k, name in enumerate(("t", "u")):
                values = _field((30, 40), 10 * s + k)
                if float64:
                    values = values.astype(np.float64)
                desc = {"type": "ntensor", "shape": [30, 40], "dtype": values.dtype.name, **pipeline}
                if pipeline.get("encoding") == "simple_packing":
                    desc.update(tensogram.compute_packing_params(values.ravel(), 16, 0))
                objs.append((desc, values))
                base.append({"mars": {"param": name, "date": 20240101, "time": 0, "step": 6 * s}})
                fields.append(values)
            f.write(bytes(tensogram.encode({"base": base}, objs)))
    return fields


@pytest.mark.parametrize(
    "pipeline,float64",
    [
        ({}, False),
        ({"compression": "zstd"}, False),
        ({"compression": "lz4"}, False),
        ({"encoding": "simple_packing"}, True),
        ({"encoding": "simple_packing", "compression": "zstd"}, True),
        ({"filter": "shuffle", "shuffle_element_size": 4, "compression": "zstd"}, False),  # not in place: fallback
    ],
)
def test_tgm_full_load_equals_the_reference_decoder(tmp_path, pipeline, float64):
    if pipeline.get("compression") == "lz4":
        pytest.importorskip("lz4")
    path = tmp_path / "cube.tgm"
    _write_tgm(path, pipeline, float64=float64)
    data = path.read_bytes()
    spans = tensogram.scan(data)
    with xr.open_dataset(path, engine="tensogram") as ds:
        loaded = ds.load()
        for s, (offset, length) in enumerate(spans):
            msg = tensogram.decode(data[offset : offset + length])
            for k, name in enumerate(("t", "u")):
                np.testing.assert_array_equal(loaded[name].values[s], msg.objects[k][1])


@pytest.mark.parametrize("bits", [12, 16, 24])
def test_tgm_simple_packing_streamed_in_blocks_equals_the_reference_decoder(tmp_path, monkeypatch, bits):
    """Packed payloads of a local file pass through a small buffer block by block (odd widths included)."""
    from xarray_tensogram.formats.tensogram import pipeline

    monkeypatch.setattr(pipeline, "STREAM_BLOCK", 100)  # 1200 values -> many blocks, the last one partial
    values = _field((30, 40), bits).astype(np.float64)
    desc = {"type": "ntensor", "shape": [30, 40], "dtype": "float64", "encoding": "simple_packing"}
    desc.update(tensogram.compute_packing_params(values.ravel(), bits, 0))
    data = bytes(tensogram.encode({"base": [{"name": "v"}]}, [(desc, values)]))
    path = tmp_path / "packed.tgm"
    path.write_bytes(data)
    expected = tensogram.decode(data).objects[0][1]
    with xr.open_dataset(path, engine="tensogram") as ds:
        np.testing.assert_array_equal(ds["v"].values, expected)


def test_tgm_lz4_full_load_refuses_a_size_prefix_that_lies(tmp_path):
    """The lz4 payload read through the per-thread buffer is checked like a mapped one."""
    pytest.importorskip("lz4")
    values = _field((30, 40))
    desc = {"type": "ntensor", "shape": [30, 40], "dtype": "float32", "compression": "lz4"}
    data = bytearray(tensogram.encode({"base": [{"name": "v"}]}, [(desc, values)]))
    prefix = (values.nbytes).to_bytes(4, "little")
    at = bytes(data).index(prefix)  # the block's size prefix starts the payload
    data[at : at + 4] = (values.nbytes + 4).to_bytes(4, "little")
    path = tmp_path / "lies.tgm"
    path.write_bytes(bytes(data))
    with xr.open_dataset(path, engine="tensogram") as ds, pytest.raises(CodecError, match="declares"):
        ds.load()


def test_tgm_scalars_and_selections_still_read_right(tmp_path):
    path = tmp_path / "cube.tgm"
    fields = _write_tgm(path, {"compression": "zstd"})
    with xr.open_dataset(path, engine="tensogram") as ds:
        np.testing.assert_array_equal(ds["u"][1, 5:9, 3].values, fields[3][5:9, 3])
        np.testing.assert_array_equal(ds["t"][:, 0, 0].values, [f[0, 0] for f in fields[0::2]])
        assert float(ds["t"][2, 29, 39]) == fields[4][29, 39]


# ------------------------------------------------------------------------------------ full loads (tet, zt)
@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_tet_tiles_land_in_place_including_clipped_edges(tmp_path, codec):
    values = _field((70, 45))
    path = tmp_path / "f.tet"
    write_tetr(path, [DatasetWrite("v", values, (16, 16), codec, dim_names=["y", "x"])])
    with xr.open_dataset(path, engine="tensogram") as ds:
        np.testing.assert_array_equal(ds["v"].values, values)
    with xr.open_dataset(path, engine="tensogram", chunks={}) as ds:
        np.testing.assert_array_equal(ds["v"].values, values)


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_zt_full_load_equals_ztensor(tmp_path, compression):
    ztensor = pytest.importorskip("ztensor")
    path = tmp_path / "m.zt"
    arrays = {f"w{i}": _field((12 + i, 7), i) for i in range(4)} | {"s": np.float32(3.5)}
    write_ztensor_v01(path, arrays, compression=compression)
    with ztensor.Reader(str(path)) as ref, xr.open_dataset(path, engine="tensogram") as ds:
        loaded = ds.load()
        for name in ("w0", "w1", "w2", "w3"):
            np.testing.assert_array_equal(loaded[name].values, np.array(ref.read_tensor(name)))
        assert float(loaded["s"]) == 3.5


# ------------------------------------------------------------------------------------ chunks="auto"
def test_auto_chunks_are_whole_tiles_and_each_tile_is_read_once(tmp_path, monkeypatch):
    values = _field((512, 384))
    path = tmp_path / "f.tet"
    write_tetr(path, [DatasetWrite("v", values, (32, 32), "zstd", dim_names=["y", "x"])])
    reads: list[tuple[int, ...]] = []
    real = tetr_boxes._decode_tile

    def counting(t, *args):
        reads.append(tuple(t.coords))
        return real(t, *args)

    monkeypatch.setattr(tetr_boxes, "_decode_tile", counting)
    import dask

    with xr.open_dataset(path, engine="tensogram") as ds:  # no Dask: one pass over every tile too
        np.testing.assert_array_equal(ds.load()["v"].values, values)
    assert sorted(reads) == sorted(set(reads)) and len(reads) == 192
    for chunks in ("auto", {}):
        reads.clear()
        with (
            dask.config.set({"array.chunk-size": "256KiB", "scheduler": "threads", "num_workers": 2}),
            xr.open_dataset(path, engine="tensogram", chunks=chunks) as ds,
        ):
            sizes = ds["v"].chunks
            assert all(c % 32 == 0 for c in sizes[0][:-1]) and all(c % 32 == 0 for c in sizes[1][:-1])
            if chunks == {}:
                assert len(sizes[0]) * len(sizes[1]) == 192  # one Dask chunk per tile
            else:
                assert 1 < len(sizes[0]) * len(sizes[1]) < 192  # fewer tasks than the 16 x 12 tiles
            np.testing.assert_array_equal(ds["v"].values, values)
        assert sorted(reads) == sorted(set(reads)) and len(reads) == 192, chunks


# ------------------------------------------------------------------------------------ open: linear steps
def test_many_messages_stack_in_order(tmp_path):
    path = tmp_path / "many.tgm"
    desc = {"type": "ntensor", "shape": [2, 2], "dtype": "float32"}
    with open(path, "wb") as f:
        for s in (30, 10, 20, 0):  # out of order in the file
            f.write(
                bytes(
                    tensogram.encode(
                        {"base": [{"mars": {"param": "t", "step": s}}]}, [(desc, np.full((2, 2), s, np.float32))]
                    )
                )
            )
    with xr.open_dataset(path, engine="tensogram", decode_timedelta=False) as ds:
        assert list(ds["step"].values) == [0, 10, 20, 30]
        np.testing.assert_array_equal(ds["t"].values[:, 0, 0], [0, 10, 20, 30])


@pytest.mark.parametrize("enabled", [True, False])
def test_open_restores_the_garbage_collector_state(tmp_path, enabled):
    path = tmp_path / "one.tgm"
    _write_tgm(path, {}, steps=1)
    (gc.enable if enabled else gc.disable)()
    try:
        xr.open_dataset(path, engine="tensogram").close()
        assert gc.isenabled() is enabled
        with pytest.raises(FileNotFoundError):
            xr.open_dataset(tmp_path / "missing.tgm", engine="tensogram")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


# ------------------------------------------------------------------------------------ writer: streamed frames
def test_streamed_parts_equal_the_reference_bytes(tmp_path):
    from xarray_tensogram.formats.tensogram.writer import (
        REFERENCE_ENCODER,
        EncodedMessage,
        encode_message,
        encode_message_parts,
        write_messages,
    )

    values = _field((20, 30))
    objs = [
        ({"type": "ntensor", "shape": [20, 30], "dtype": "float32", "compression": "zstd"}, values),
        ({"type": "ntensor", "shape": [20, 30], "dtype": "float32"}, values + 1),
    ]
    meta = {"base": [{"name": "a"}, {"name": "b"}]}
    ref = bytes(tensogram.encode(meta, objs))
    reserved = dict(tensogram.decode(ref).metadata.reserved)  # the reference's time/uuid/encoder stamps
    parts = encode_message_parts(meta, objs, reserved=reserved)
    assert isinstance(parts, EncodedMessage) and parts.length == len(parts.tobytes())
    assert parts.tobytes() == encode_message(meta, objs, reserved=reserved) == ref
    out = tmp_path / "two.tgm"
    assert write_messages(out, [parts, ref]) == 2 * len(ref)
    assert out.read_bytes() == ref + ref
    assert REFERENCE_ENCODER["name"] == "tensogram"
