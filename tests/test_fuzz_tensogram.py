"""Hostile and damaged Tensogram files: every case ends in the package's errors, fast, with bounded memory."""

from __future__ import annotations

import struct

import cbor2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import LONG, SPECIAL_VALUES, fuzz_stats, run_case, with_field
from xarray_tensogram import open_tensogram
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.formats.tensogram.framing import align8, parse_frame_header

tensogram = pytest.importorskip("tensogram")

STATS = fuzz_stats("tensogram")


def _desc(shape, dtype="float32", **kw):
    return {"type": "ntensor", "shape": list(shape), "dtype": dtype, **kw}


def _valid_files() -> dict[str, tuple[bytes, int]]:
    """name -> (bytes, largest legitimate decoded object in bytes)."""
    rng = np.random.default_rng(7)
    a = rng.random((6, 5)).astype("f4")
    d = rng.random((8, 4))
    d[1, 1] = np.nan
    d[2, 2] = np.inf
    meta = {"base": [{"name": "t", "mars": {"step": 6}}, {"name": "u"}], "_extra_": {"title": "fuzz"}}
    files = {}
    files["buffered_raw"] = tensogram.encode(meta, [(_desc(a.shape), a), (_desc(d.shape, "float64"), np.nan_to_num(d))])
    files["buffered_zstd_masks"] = tensogram.encode(
        meta,
        [(_desc(a.shape, compression="zstd"), a), (_desc(d.shape, "float64", compression="zstd"), d)],
        allow_nan=True,
        allow_inf=True,
        small_mask_threshold_bytes=0,
    )
    files["packing_nohash"] = tensogram.encode(
        {"base": [{"name": "p"}]},
        [(_desc(d.shape, "float64", encoding="simple_packing", sp_bits_per_value=12), np.nan_to_num(d, posinf=2.0))],
        hash=None,
    )
    enc = tensogram.StreamingEncoder({"base": [{"name": "s"}]})
    enc.write_object(_desc(a.shape, compression="zstd"), a)
    files["streaming"] = enc.finish()
    files["multi"] = files["buffered_raw"] + files["streaming"] + files["packing_nohash"]
    return {k: (v, 8 * 8 * 4 * 2) for k, v in files.items()}


FILES = _valid_files()


def exercise(data: bytes) -> None:
    """Everything a user does: open, read each object (plain and verified), open with xarray and load."""
    f = open_tensogram(data)
    for m in f:
        for j in range(len(m.objects)):
            m.read_object(j)
            try:
                m.read_object(j, verify_hash=True)
            except Exception as exc:  # MissingHashError is fine; anything else is re-raised for the check
                from xarray_tensogram.errors import XarrayTensogramError

                if not isinstance(exc, XarrayTensogramError):
                    raise
            if m.object_geometry(j)[0]:
                m.read_object(j, rows=slice(0, 1))
    for ds in TensogramBackendEntrypoint().open_groups_as_dict(data).values():
        ds.load()


@pytest.mark.parametrize("name", list(FILES))
def test_valid_files_read(name):
    data, _ = FILES[name]
    exercise(data)


@pytest.mark.parametrize("name", ["buffered_raw", "streaming", "packing_nohash"])
def test_truncation_at_every_offset(name):
    data, legit = FILES[name]
    step = 1 if LONG or len(data) < 1200 else 3
    for cut in range(0, len(data), step):
        run_case(exercise, data[:cut], legit, STATS, f"{name} truncated at {cut}")


@pytest.mark.parametrize("name", list(FILES))
@settings(max_examples=600 if LONG else 60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips(name, data):
    raw, legit = FILES[name]
    n = data.draw(st.integers(1, 4))
    b = bytearray(raw)
    for _ in range(n):
        b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    run_case(exercise, bytes(b), legit, STATS, f"{name} with flipped bytes")


def _field_positions(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every length/offset field of the first message (big-endian)."""
    fields = [(16, 8)]
    total = int.from_bytes(data[16:24], "big") or len(data)
    fields += [(total - 24, 8), (total - 16, 8)]
    pos = 24
    while pos + 16 <= total - 24 and data[pos : pos + 2] == b"FR":
        hdr = parse_frame_header(data[pos : pos + 16])
        fields.append((pos + 8, 8))
        if hdr.frame_type == 9:
            fields.append((pos + hdr.length - 20, 8))
        pos = align8(pos + hdr.length)
    return fields


@pytest.mark.parametrize("name", ["buffered_raw", "buffered_zstd_masks", "streaming"])
def test_length_and_offset_fields(name):
    data, legit = FILES[name]
    for off, width in _field_positions(data):
        for value in [*SPECIAL_VALUES, len(data)]:
            run_case(
                exercise,
                with_field(data, off, width, value, "big"),
                legit,
                STATS,
                f"{name}: field at {off} set to {value}",
            )


def _frame(frame_type: int, body: bytes) -> bytes:
    return b"FR" + struct.pack(">HHHQ", frame_type, 1, 0, 28 + len(body)) + body + b"\0" * 8 + b"ENDF"


def _data_frame(desc_cbor: bytes, payload: bytes) -> bytes:
    body = payload + desc_cbor
    return (
        b"FR"
        + struct.pack(">HHHQ", 9, 1, 1, 36 + len(body))
        + body
        + struct.pack(">QQ", 16 + len(payload), 0)
        + b"ENDF"
    )


def _message(frames: list[bytes]) -> bytes:
    buf = bytearray(24)
    for f in frames:
        buf += f
        buf += b"\0" * (align8(len(buf)) - len(buf))
    total = len(buf) + 24
    buf += struct.pack(">QQ", total - 24, total) + b"39277777"
    buf[:24] = b"TENSOGRM" + struct.pack(">HHIQ", 3, 1, 0, total)
    return bytes(buf)


DEEP = b"\x81" * 5000 + b"\x00"
WEIRD_METADATA = [
    DEEP,
    cbor2.dumps(5),
    cbor2.dumps([1, 2]),
    cbor2.dumps({"base": 5}),
    cbor2.dumps({"base": [1, "x"]}),
    cbor2.dumps({"base": [{}, {}, {}]}),
    cbor2.dumps({1: 2}),
    cbor2.dumps({"_extra_": [1]}),
    cbor2.dumps({"a": 1, "_extra_": {"a": 2}}),
    cbor2.dumps({"base": [{"name": {"deep": [[[]]]}, "dim_names": 7}]}),
    cbor2.dumps({"base": [{"name": "x" * 100000}]}),
    cbor2.dumps({"base": [{"mars": {"step": "zz", "date": -1}}]}),
    b"\xd8\x25\x50" + b"1" * 16,
    b"\xc1\x1a\x00\x00\x00\x01",
    b"\x5b" + b"\xff" * 8,
    b"\xbf\x61a",
    cbor2.dumps({"base": [{"_reserved_": {"tensor": {"shape": [2**40, 2**40], "dtype": "float64"}}}]}),
    cbor2.dumps({"base": [{"_reserved_": {"tensor": {"shape": [-3], "dtype": "float32"}}}]}),
]
PAYLOAD = np.arange(6, dtype="<f4").tobytes()
GOOD_DESC = _desc(
    (2, 3), byte_order="little", strides=[3, 1], encoding="none", filter="none", compression="none", ndim=2
)
WEIRD_DESCRIPTORS = [
    {**GOOD_DESC, "shape": [2**40, 2**40]},
    {**GOOD_DESC, "shape": "x"},
    {**GOOD_DESC, "shape": [-1]},
    {**GOOD_DESC, "shape": [2**63, 2**63]},
    {**GOOD_DESC, "shape": [1] * 500},
    {**GOOD_DESC, "dtype": 5},
    {**GOOD_DESC, "dtype": "float128"},
    {**GOOD_DESC, "compression": "brotli"},
    {**GOOD_DESC, "compression": 3},
    {**GOOD_DESC, "compression": "zstd", "shape": [10**11]},
    {**GOOD_DESC, "compression": "lz4", "shape": [10**11]},
    {**GOOD_DESC, "encoding": "simple_packing", "sp_bits_per_value": 65},
    {
        **GOOD_DESC,
        "encoding": "simple_packing",
        "sp_bits_per_value": 0,
        "sp_reference_value": 1.0,
        "sp_binary_scale_factor": 0,
        "shape": [10**12],
        "dtype": "float64",
    },
    {
        **GOOD_DESC,
        "encoding": "simple_packing",
        "sp_bits_per_value": 8,
        "sp_reference_value": "a",
        "sp_binary_scale_factor": 0,
        "dtype": "float64",
    },
    {**GOOD_DESC, "filter": "shuffle", "shuffle_element_size": 0},
    {**GOOD_DESC, "filter": "shuffle"},
    {**GOOD_DESC, "masks": {"nan": {"offset": 2**63, "length": 5, "method": "none"}}},
    {**GOOD_DESC, "masks": {"nan": {"offset": 0, "length": 4, "method": "bogus"}}},
    {**GOOD_DESC, "masks": {"nan": {"offset": 0, "length": 4, "method": "rle"}}},
    {**GOOD_DESC, "masks": {"nan": 7}},
    {**GOOD_DESC, "masks": {"zzz": {}}},
    {**GOOD_DESC, "byte_order": "middle"},
    {k: v for k, v in GOOD_DESC.items() if k != "type"},
    {**GOOD_DESC, "dtype": "bitmask", "compression": "rle"},
    {**GOOD_DESC, "compression": "szip"},
    {**GOOD_DESC, "compression": "zfp", "zfp_mode": "nope", "dtype": "float64", "shape": [3]},
]


@pytest.mark.parametrize("meta", WEIRD_METADATA, ids=range(len(WEIRD_METADATA)))
def test_weird_metadata(meta):
    desc = cbor2.dumps(GOOD_DESC, canonical=True)
    data = _message([_frame(1, meta), _data_frame(desc, PAYLOAD)])
    run_case(exercise, data, 64, STATS, f"metadata {meta[:20]!r}")


@pytest.mark.parametrize("desc", WEIRD_DESCRIPTORS, ids=range(len(WEIRD_DESCRIPTORS)))
def test_weird_descriptors(desc):
    meta = cbor2.dumps({"base": [{"name": "x"}]})
    data = _message([_frame(1, meta), _data_frame(cbor2.dumps(desc, canonical=True), PAYLOAD)])
    run_case(exercise, data, 64, STATS, f"descriptor {desc}")


@pytest.mark.parametrize("name", ["buffered_raw", "buffered_zstd_masks", "streaming"])
def test_shuffled_frames(name):
    data, legit = FILES[name]
    total = int.from_bytes(data[16:24], "big") or len(data)
    frames, pos = [], 24
    while pos + 16 <= total - 24 and data[pos : pos + 2] == b"FR":
        hdr = parse_frame_header(data[pos : pos + 16])
        frames.append(data[pos : pos + hdr.length])
        pos = align8(pos + hdr.length)
    rng = np.random.default_rng(3)
    for _k in range(40 if not LONG else 400):
        order = rng.permutation(len(frames))
        run_case(
            exercise,
            _message([frames[i] for i in order]),
            legit,
            STATS,
            f"{name} frames in order {order.tolist()}",
        )
