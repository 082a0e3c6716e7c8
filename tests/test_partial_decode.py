"""Partial decode: an element selection decodes only the stored bytes of the elements it needs.

Files are written by the reference ``tensogram`` encoder; the oracle is the reference decoder's whole object
(``decode_object``) and, where it offers one, its ``decode_range``. Selections of every shape (points,
windows, rows, strided, columns, empty) must equal the oracle's values bit for bit, and must not decode the
whole object where the chain allows partial decode. The codec chains are also checked on their own against
their whole decode, with hypothesis picking the ranges. szip, blosc2 and zfp are named by Tensogram
descriptors only (Tetration and zTensor name zstd and raw payloads), so the format tests run over ``.tgm``.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from xarray_tensogram import open_tensogram
from xarray_tensogram.codecs import blosc2, simple_packing, szip, zfp
from xarray_tensogram.codecs.chain import RAW, Chain, Stage
from xarray_tensogram.errors import CodecError, EncodeError
from xarray_tensogram.formats.tensogram import pipeline
from xarray_tensogram.formats.tensogram.reader import TensogramFile
from xarray_tensogram.formats.tensogram.writer import encode_message
from xarray_tensogram.io import BytesSource
from xarray_tensogram.outer import read_outer

tensogram = pytest.importorskip("tensogram")
pytest.importorskip("imagecodecs")
pytest.importorskip("blosc2")
pytest.importorskip("zfpy")

SHAPE = (61, 97)
N = 3

SZIP = {"compression": "szip", "szip_rsi": 32, "szip_block_size": 16, "szip_flags": 8}
PIPELINES = {
    "raw": {},
    "raw-big-endian": {"byte_order": "big"},
    "sp12": {"encoding": "simple_packing", "sp_bits_per_value": 12},
    "sp24": {"encoding": "simple_packing", "sp_bits_per_value": 24},
    "sp24-szip": {"encoding": "simple_packing", "sp_bits_per_value": 24, **SZIP},
    "sp16-szip": {"encoding": "simple_packing", "sp_bits_per_value": 16, **SZIP},
    "sp11-szip": {"encoding": "simple_packing", "sp_bits_per_value": 11, **SZIP},
    "blosc2": {"compression": "blosc2", "blosc2_codec": "zstd"},
    "sp16-blosc2": {"encoding": "simple_packing", "sp_bits_per_value": 16, "compression": "blosc2"},
    "zfp-rate16": {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 16.0},
    "zfp-rate13.3": {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 13.3},
    "sp16-zstd": {"encoding": "simple_packing", "sp_bits_per_value": 16, "compression": "zstd"},
}
#: pipelines whose chain cannot decode part of a payload (zstd streams have no block index)
WHOLE_ONLY = {"sp16-zstd"}

SELECTIONS = {
    "point": (slice(None), 30, 48),
    "first point": (slice(None), 0, 0),
    "last point": (slice(None), -1, -1),
    "window": (slice(None), slice(20, 30), slice(40, 50)),
    "rows": (slice(None), slice(10, 13), slice(None)),
    "strided": (slice(None), slice(3, 50, 7), slice(1, 90, 11)),
    "column": (slice(None), slice(None), 5),
    "points": (slice(None), [14, 10, 12], [50, 48, 55]),
    "empty": (slice(None), slice(5, 5), slice(None)),
}


def _fields(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(size=SHAPE), axis=1) + 280 for _ in range(N)]


def _write(path, pipe: dict) -> list[np.ndarray]:
    """N messages of one float64 field each; returns what the reference decoder reads back."""
    fields = _fields(len(path.name))
    with tensogram.TensogramFile.create(str(path)) as f:
        for step, values in enumerate(fields):
            desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": "float64", **pipe}
            if pipe.get("encoding") == "simple_packing":
                desc.update(tensogram.compute_packing_params(values.ravel(), pipe["sp_bits_per_value"], 0))
            data = values.astype(">f8").tobytes() if pipe.get("byte_order") == "big" else values  # as declared
            f.append({"base": [{"mars": {"param": "t", "step": step}}]}, [(desc, data)])
    with tensogram.TensogramFile.open(str(path)) as f:
        return [np.asarray(f.file_decode_object(i, 0)["data"]).reshape(SHAPE) for i in range(N)]


@pytest.fixture(scope="module", params=sorted(PIPELINES))
def written(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("partial") / f"{request.param}.tgm"
    return request.param, path, np.stack(_write(path, PIPELINES[request.param]))


@pytest.mark.parametrize("selection", sorted(SELECTIONS))
def test_selections_equal_the_reference_decoder(written, selection, monkeypatch):
    name, path, oracle = written
    key = SELECTIONS[selection]
    with xr.open_dataset(path, engine="tensogram") as ds:
        var = ds[next(iter(ds.data_vars))]
        if name not in WHOLE_ONLY and selection in ("point", "window", "first point", "last point", "points"):

            def whole(*args, **kwargs):
                raise AssertionError(f"{name}: a {selection} decoded the whole object")

            monkeypatch.setattr(pipeline, "decode_full", whole)
        got = var[key].values
    expected = oracle[:, key[1]][:, :, key[2]] if selection == "points" else oracle[key]  # outer, as xarray
    assert got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_points_equal_the_reference_decode_range(written):
    """A point series equals the reference's range decode, or its whole-object decode where the reference
    decodes no range of the pipeline (zstd streams have no block index)."""
    name, path, oracle = written
    flat = 30 * SHAPE[1] + 48
    if name in WHOLE_ONLY:
        ref = oracle[:, 30, 48]  # the reference's file_decode_object of every message
    else:
        with tensogram.TensogramFile.open(str(path)) as f:
            ref = np.array([f.file_decode_range(i, 0, [(flat, 1)], join=True)[0] for i in range(N)])
    with xr.open_dataset(path, engine="tensogram") as ds:
        got = ds[next(iter(ds.data_vars))][:, 30, 48].values
    assert got.tobytes() == ref.tobytes()


class _Counting(BytesSource):
    """An in-memory source that counts the bytes handed out (as a remote source would fetch them)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.fetched = 0

    def view(self, offset: int, length: int) -> memoryview | None:
        return None  # behave like a remote file: every byte is read

    def read(self, offset: int, length: int, *, what: str = "data") -> bytes:
        self.fetched += length
        return super().read(offset, length, what=what)  # read_ranges reads each range through here


@pytest.mark.parametrize("name", ["sp24-szip", "zfp-rate16", "sp24", "raw"])
def test_a_point_fetches_only_its_blocks(tmp_path, name):
    path = tmp_path / "f.tgm"
    oracle = _write(path, PIPELINES[name])
    data = path.read_bytes()
    source = _Counting(data)
    f = TensogramFile(source)
    spec = f[1].array_spec(0, range_threshold=1.0)
    spec.reader.layout()  # descriptor and frame bounds: read once, whatever is selected
    before = source.fetched
    got = read_outer(spec, (30, 48))
    assert got.tobytes() == oracle[1][30, 48].tobytes()
    payload = spec.reader.layout().region_length
    assert source.fetched - before < payload / 4, (source.fetched - before, payload)


# ------------------------------------------------------------------------------- chains on their own
def _chains() -> dict[str, tuple[Chain, bytes, np.ndarray]]:
    rng = np.random.default_rng(5)
    values = np.cumsum(rng.normal(size=5003)) + 10
    out = {}
    for bits in (1, 7, 12, 16, 24, 33):
        ref, e = simple_packing.compute_params(values, bits)
        params = {"bits_per_value": bits, "reference_value": ref, "binary_scale_factor": e, "decimal_scale_factor": 0}
        packed = simple_packing.encode(values, bits, ref, e, 0)
        stage = Stage(simple_packing.CODEC, params)
        out[f"sp{bits}"] = (Chain(stage, (), values.size), packed, values)
        if bits in (16, 24):
            sz = {"rsi": 8, "block_size": 16, "flags": 8 | 4 | (2 if bits == 24 else 0), "bits_per_sample": bits}
            stream, recorded = szip.CODEC.encode(packed, sz)
            out[f"sp{bits}-szip"] = (
                Chain(stage, (Stage(szip.CODEC, {**sz, **recorded}),), values.size),
                stream,
                values,
            )
    raw = Stage(RAW, {"dtype": np.dtype("<f8")})
    frame, _ = blosc2.CODEC.encode(values.tobytes(), {"typesize": 8})
    out["blosc2"] = (Chain(raw, (Stage(blosc2.CODEC),), values.size), frame, values)
    for rate in (8.0, 16.0, 21.7):
        p = {"mode": "fixed_rate", "rate": rate}
        stream, _ = zfp.CODEC.encode(values.tobytes(), p)
        out[f"zfp{rate}"] = (Chain(raw, (Stage(zfp.CODEC, p),), values.size), stream, values)
    return out


CHAINS = _chains()


@pytest.mark.parametrize("name", sorted(CHAINS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_chain_ranges_equal_the_whole_decode(name, data):
    chain, stored, _values = CHAINS[name]
    assert chain.partial
    whole = chain.decode(stored)
    start = data.draw(st.integers(0, chain.count))
    stop = data.draw(st.integers(start, chain.count))
    lo, hi = chain.stored_span(start, stop, len(stored))
    assert 0 <= lo <= hi <= len(stored)
    got = chain.decode_range(stored[lo:hi], lo, start, stop)
    assert got.tobytes() == whole[start:stop].tobytes()


def test_runs_merge_within_what_a_restart_costs():
    """Runs closer than one szip interval are decoded as one; zfp fixed-rate restarts after 8 blocks."""
    assert CHAINS["sp24-szip"][0].merge_gap() == 8 * 16  # rsi x block_size values
    assert CHAINS["zfp16.0"][0].merge_gap() == 32
    assert Chain(Stage(RAW, {"dtype": np.dtype("<f4")}), (), 10).merge_gap() == 8192


def test_chains_without_recorded_offsets_or_fixed_rate_decode_whole():
    stage = Stage(RAW, {"dtype": np.dtype("<f8")})
    assert not Chain(stage, (Stage(szip.CODEC, {"rsi": 8, "block_size": 16, "flags": 8}),), 10).partial
    assert not Chain(stage, (Stage(zfp.CODEC, {"mode": "fixed_precision", "precision": 20}),), 10).partial
    assert Chain(stage, (), 10).partial


@pytest.mark.parametrize("name", ["raw", "sp24-szip", "blosc2", "zfp-rate16"])
def test_masked_values_come_back_in_partial_selections(tmp_path, name, monkeypatch):
    """NaN and infinities (stored as mask blobs beside the payload) are restored in a selection too."""
    values = _fields(7)[0]
    values[30, 48] = np.nan
    values[31, 48] = np.inf
    values[30, 47] = -np.inf
    pipe = PIPELINES[name]
    desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": "float64", **pipe}
    if pipe.get("encoding") == "simple_packing":
        finite = values[np.isfinite(values)]
        desc.update(tensogram.compute_packing_params(finite, pipe["sp_bits_per_value"], 0))
    path = tmp_path / "masked.tgm"
    with tensogram.TensogramFile.create(str(path)) as f:
        f.append({"base": [{"mars": {"param": "t"}}]}, [(desc, values)], allow_nan=True, allow_inf=True)
    with tensogram.TensogramFile.open(str(path)) as f:
        oracle = np.asarray(f.file_decode_object(0, 0)["data"]).reshape(SHAPE)
    assert np.isnan(oracle[30, 48]) and oracle[31, 48] == np.inf and oracle[30, 47] == -np.inf

    def whole(*args, **kwargs):
        raise AssertionError(f"{name}: a window decoded the whole object")

    monkeypatch.setattr(pipeline, "decode_full", whole)
    with xr.open_dataset(path, engine="tensogram") as ds:
        got = ds[next(iter(ds.data_vars))][28:33, 45:50].values
    assert got.tobytes() == oracle[28:33, 45:50].tobytes()


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_boxes_equal_the_reference_decoder(written, data):
    """Any box (steps included) of the stacked fields equals the reference decoder's values."""
    _name, path, oracle = written
    key = []
    for n in oracle.shape:
        start = data.draw(st.integers(0, n))
        stop = data.draw(st.integers(start, n))
        key.append(slice(start, stop, data.draw(st.integers(1, 3))))
    with xr.open_dataset(path, engine="tensogram") as ds:
        got = ds[next(iter(ds.data_vars))][tuple(key)].values
    assert got.tobytes() == oracle[tuple(key)].tobytes()


# ------------------------------------------------------------------ streams that cannot be trusted, or the oracle
def _write_one(path, desc: dict, data) -> None:
    with tensogram.TensogramFile.create(str(path)) as f:
        f.append({"base": [{"mars": {"param": "t"}}]}, [(desc, data)])


@pytest.mark.parametrize("dtype,block,rsi", [("float32", 16, 1), ("uint16", 8, 1), ("int32", 8, 4), ("uint16", 16, 2)])
def test_szip_pad_rsi_selections_equal_the_original(tmp_path, dtype, block, rsi, monkeypatch):
    """szip flag PAD_RSI: the reference encoder writes the intervals unpadded and its own decoder misreads
    them, so the original is the oracle. Points, windows and rows decode from their intervals alone."""
    rng = np.random.default_rng(11)
    values = (np.cumsum(rng.normal(size=SHAPE), axis=1) * 40 + 500).astype(dtype)
    desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": dtype, "compression": "szip"}
    desc.update(szip_rsi=rsi, szip_block_size=block, szip_flags=8 | 32)
    _write_one(tmp_path / "pad.tgm", desc, values)

    def whole(*args, **kwargs):
        raise AssertionError("a selection decoded the whole object")

    monkeypatch.setattr(pipeline, "decode_full", whole)
    with xr.open_dataset(tmp_path / "pad.tgm", engine="tensogram") as ds:
        var = ds[next(iter(ds.data_vars))]
        assert var.dtype == values.dtype
        for key in [(30, 48), (0, 0), (-1, -1), (slice(20, 30), slice(40, 50)), (slice(10, 13), slice(None))]:
            assert var[key].values.tobytes() == values[key].tobytes(), key
    monkeypatch.undo()
    with xr.open_dataset(tmp_path / "pad.tgm", engine="tensogram") as ds:
        assert ds[next(iter(ds.data_vars))].values.tobytes() == values.tobytes()


def test_szip_padded_streams_keep_their_flag():
    """This package's writer pads the intervals as flag 32 says: its byte-aligned offsets keep the flag, and
    the reference decoder and ours both read the original back."""
    values = (np.cumsum(np.random.default_rng(1).normal(size=(40, 13)), axis=1) * 50).astype("int32")
    desc = {"type": "ntensor", "shape": [40, 13], "dtype": "int32", "compression": "szip"}
    buf = encode_message({}, [({**desc, "szip_block_size": 8, "szip_rsi": 1, "szip_flags": 40}, values)])
    with open_tensogram(buf) as f:
        assert all(o % 8 == 0 for o in f[0].descriptors[0]["szip_block_offsets"])
        assert f[0].read_object(0).tobytes() == values.tobytes()
        assert f[0].read_object(0, rows=slice(17, 19)).tobytes() == values[17:19].tobytes()
    assert np.asarray(tensogram.decode(buf).objects[0][1]).tobytes() == values.tobytes()


def test_szip_pad_rsi_without_offsets_is_refused():
    """Without the recorded offsets nothing tells a padded stream from the reference's unpadded one."""
    values = np.arange(4000, dtype="<u2").tobytes()
    params = {"rsi": 1, "block_size": 8, "flags": 8 | 32, "bits_per_sample": 16}
    stream, recorded = szip.CODEC.encode(values, {**params, "flags": 8})  # unpadded, as the reference writes
    assert any(o % 8 for o in recorded["block_offsets"])
    assert bytes(szip.CODEC.decode(stream, len(values), {**params, **recorded})) == values
    with pytest.raises(CodecError, match="PAD_RSI"):
        szip.CODEC.decode(stream, len(values), params, "object 3: ")
    assert not Chain(Stage(RAW, {"dtype": np.dtype("<u2")}), (Stage(szip.CODEC, params),), 2000).partial


LOSSY_MODES = {
    "zfp": {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 16.0},
    "sz3": {"compression": "sz3", "sz3_error_bound_mode": "abs", "sz3_error_bound": 0.01},
}
#: zfp/sz3 handed bytes that were not native doubles: values lost at encoding time (test_tensogram_interop)
LOST = [
    (dtype, order, filt, comp)
    for comp in LOSSY_MODES
    for dtype in ("float64", "complex128")
    for order, filt in (("big", "none"), ("little", "shuffle"))
] + [(dtype, "little", "none", "zfp") for dtype in ("complex64", "int64", "uint64")]
LOST += [("float64", "little", "packed", comp) for comp in LOSSY_MODES]


@pytest.mark.parametrize("dtype,order,filt,comp", LOST, ids=["-".join(c) for c in LOST])
def test_lossy_stage_on_other_bytes_is_refused_whole_and_in_part(tmp_path, dtype, order, filt, comp):
    """zfp/sz3 streams coded from byte-swapped, shuffled or non-float64 bytes cannot give back the values:
    every read path refuses (a point, a window, the whole), none returns other values."""
    rng = np.random.default_rng(3)
    values = (rng.normal(size=SHAPE) + 1j * rng.normal(size=SHAPE)) * 1000
    values = values.real if "complex" not in dtype else values
    desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": dtype, **LOSSY_MODES[comp]}
    desc.update(byte_order=order, filter=filt)
    if filt == "packed":  # the reference packs the values, then zfp/sz3 code the packed bit stream
        desc.update(filter="none", encoding="simple_packing", sp_bits_per_value=64)  # whole doubles
    if filt == "shuffle":
        desc["shuffle_element_size"] = np.dtype(dtype).itemsize
    wire = values.astype(np.dtype(dtype).newbyteorder("<" if order == "little" else ">"))
    _write_one(tmp_path / "z.tgm", desc, wire if filt == "packed" else wire.tobytes())
    if (dtype, comp) == ("complex128", "zfp"):  # the reference refuses these; it decodes the others as garbage
        with tensogram.TensogramFile.open(str(tmp_path / "z.tgm")) as f, pytest.raises(ValueError, match="zfp"):
            f.file_decode_object(0, 0)
    with xr.open_dataset(tmp_path / "z.tgm", engine="tensogram") as ds:
        var = ds[next(iter(ds.data_vars))]
        for key in [(30, 48), (slice(20, 30), slice(40, 50)), (slice(None), slice(None))]:
            with pytest.raises(CodecError, match=f"{comp} coded the {dtype} values.*not the values"):
                var[key].load()


@pytest.mark.parametrize("extra", [{"byte_order": "big"}, {"filter": "shuffle", "shuffle_element_size": 8}])
def test_zfp_of_reinterpreted_bytes_is_not_written(extra):
    """The reference writes these and every decoder then returns values unrelated to the input (1e303 for
    big-endian doubles): this package's writer refuses them."""
    desc = {"type": "ntensor", "shape": [5, 7], "dtype": "float64", "compression": "zfp"}
    desc.update(zfp_mode="fixed_rate", zfp_rate=16.0, **extra)
    with pytest.raises(EncodeError, match="zfp coded the float64 values"):
        encode_message({}, [(desc, np.random.default_rng(0).normal(size=(5, 7)))])


# ------------------------------------------------------------------ blosc2 over a network: index first, then blocks
B2_SHAPE = (721, 720)


def _b2_fields(zeros: bool) -> np.ndarray:
    values = np.cumsum(np.random.default_rng(21).normal(size=B2_SHAPE), axis=1) + 280
    if zeros:
        values[40:70] = 0.0  # whole chunks of zeros: blosc2 stores them as runs of one value, without blocks
    return values


@pytest.fixture
def poisoned(monkeypatch):
    """Bytes of a frame that were not fetched read as 0xA5, not zeros: a decode that needs them goes wrong."""
    from xarray_tensogram.codecs import blosc2_frame

    init = blosc2_frame._Frame.__init__

    def fill(self, *args):
        init(self, *args)
        self.buf[:] = 0xA5

    monkeypatch.setattr(blosc2_frame._Frame, "__init__", fill)


def _b2_object(monkeypatch, chunk: int | None, zeros: bool) -> tuple[bytes, np.ndarray]:
    """One blosc2 object (written by this package in chunks of ``chunk`` bytes, else by the reference in
    one) and the reference decoder's values of it; with ``zeros``, the values written (blosc2 is lossless,
    and the reference decoder aborts the process on frames holding runs of zeros)."""
    desc = {"type": "ntensor", "shape": list(B2_SHAPE), "dtype": "float64", "compression": "blosc2"}
    values = _b2_fields(zeros)
    if chunk is None:
        buf = bytes(tensogram.encode({"base": [{}]}, [({**desc, "blosc2_codec": "zstd"}, values)]))
    else:
        monkeypatch.setattr(blosc2, "MAX_CHUNK", chunk)
        buf = encode_message({}, [(desc, values)])
        monkeypatch.undo()
    return buf, values if zeros else np.asarray(tensogram.decode(buf).objects[0][1]).reshape(B2_SHAPE)


B2_SELECTIONS = {
    "point": (360, 360),
    "first point": (0, 0),
    "last point": (-1, -1),
    "zero point": (50, 7),
    "window": (slice(500, 510), slice(200, 210)),
    "rows": (slice(10, 13), slice(None)),
    "across chunks": (slice(60, 80), slice(0, 30)),
}


@pytest.mark.parametrize("chunk,zeros", [(None, False), (16 << 10, False), (100_000, False), (16 << 10, True)])
@pytest.mark.parametrize("selection", sorted(B2_SELECTIONS))
def test_blosc2_remote_reads_fetch_only_their_blocks(monkeypatch, poisoned, chunk, zeros, selection):
    """Over a remote source a selection of a blosc2 object fetches the frame's header, its offsets chunk and
    the blocks holding the selection (the reference writes one chunk of several blocks, this package's
    writer several chunks), and equals the reference decoder's values."""
    buf, oracle = _b2_object(monkeypatch, chunk, zeros)
    source = _Counting(buf)
    spec = TensogramFile(source)[0].array_spec(0, range_threshold=1.0)
    payload = spec.reader.layout().region_length
    before = source.fetched
    key = B2_SELECTIONS[selection]
    got = read_outer(spec, key)
    assert got.tobytes() == oracle[key].tobytes()
    if selection != "rows":
        assert source.fetched - before < payload / 3, (source.fetched - before, payload)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_blosc2_chain_read_ranges_equal_the_whole_decode(data):
    """Element runs read through a fetch (index first) equal the whole decode, for frames of many chunks."""
    chain, stored, _values = CHAINS["blosc2"]
    small, _ = blosc2.CODEC.encode(_values.tobytes(), {"typesize": 8})
    old = blosc2.MAX_CHUNK
    blosc2.MAX_CHUNK = 4096
    try:
        many, _ = blosc2.CODEC.encode(_values.tobytes(), {"typesize": 8})
    finally:
        blosc2.MAX_CHUNK = old
    whole = chain.decode(stored)
    for frame in (small, many):
        runs = []
        for _ in range(data.draw(st.integers(1, 3))):
            start = data.draw(st.integers(0, chain.count))
            runs.append((start, data.draw(st.integers(start, chain.count))))
        got = chain.read_ranges(lambda spans, f=frame: [f[o : o + n] for o, n in spans], runs, len(frame))
        assert got is not None
        for (a, b), part in zip(runs, got, strict=True):
            assert part.tobytes() == whole[a:b].tobytes()


def _damaged(frame: bytes) -> dict[str, bytes]:
    header = int.from_bytes(frame[0x0B:0x0F], "big")
    cbytes = int.from_bytes(frame[0x27:0x2F], "big")
    offsets = header + cbytes
    return {
        "magic": frame[:2] + b"x" + frame[3:],
        "frame size": frame[:0x10] + (len(frame) + 9).to_bytes(8, "big") + frame[0x18:],
        "offsets chunk": frame[:offsets] + bytes(16) + frame[offsets + 16 :],
        "chunk offset": frame[:offsets] + b"\xff" * (len(frame) - offsets),
        "block offsets": frame[: header + 32] + b"\xff\xff\xff\x7f" + frame[header + 36 :],
        "truncated": frame[: len(frame) - 40],
    }


@pytest.mark.parametrize("damage", sorted(_damaged(b"\0" * 64)))
def test_blosc2_remote_reads_of_damaged_frames_raise_codec_errors(damage):
    values = np.cumsum(np.random.default_rng(2).normal(size=50_000))
    frame, _ = blosc2.CODEC.encode(values.tobytes(), {"typesize": 8})
    bad = _damaged(frame)[damage]
    fetch = lambda spans: [bad[o : o + n] for o, n in spans]  # noqa: E731 - a one-line source
    with pytest.raises(CodecError, match="object 2: blosc2"):
        blosc2.CODEC.read_ranges(fetch, [(8000, 8008)], values.nbytes, len(bad), {}, "object 2: ")


def test_blosc2_point_over_http_fetches_only_its_block(monkeypatch):
    """End to end over HTTP range requests: a point of a reference-written blosc2 object (one chunk of
    several blocks) transfers a fraction of the frame, and equals the reference decoder's value."""
    pytest.importorskip("aiohttp")
    from servers import RangeHTTPServer

    buf, oracle = _b2_object(monkeypatch, None, False)
    server = RangeHTTPServer({"/b.tgm": buf}).start()
    try:
        with xr.open_dataset(server.url("b.tgm"), engine="tensogram") as ds:
            var = ds[next(iter(ds.data_vars))]
            server.traffic.reset()
            got = var[360, 360].values
            point = server.traffic.snapshot()
    finally:
        server.stop()
    assert got.tobytes() == oracle[360, 360].tobytes()
    assert point.nbytes < len(buf) / 4, point.summary()
