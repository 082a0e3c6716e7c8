"""Helpers shared by the Tensogram v3 codec-core tests (issue 2).

The reference ``tensogram`` package (0.24.0) is the oracle: messages are written
with its encoders, and what our reader returns is compared with what its decoder
returns, bit for bit. Nothing here reads ``../shared``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

tensogram = pytest.importorskip("tensogram")

from xarray_tensogram import open_tensogram  # noqa: E402 - after the pytest.importorskip above

#: the 15 dtypes of spec §11
DTYPES = [
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bitmask",
]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]

#: bytes per element (bitmask: packed, 0)
WIDTH = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bitmask": 0,
}
#: numpy dtype holding the element bytes (bfloat16 as its uint16 bit pattern)
NUMPY = {
    "float16": "f2",
    "bfloat16": "u2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "int64": "i8",
    "uint64": "u8",
    "bitmask": "u1",
}

#: compressor name -> parameters that make the reference accept it
COMPRESSIONS: dict[str, dict[str, Any]] = {
    "none": {},
    "zstd": {},
    "lz4": {},
    "szip": {"szip_rsi": 2, "szip_block_size": 8, "szip_flags": 8},
    "blosc2": {},
    "zfp": {"zfp_mode": "fixed_rate", "zfp_rate": 16.0},
    "sz3": {"sz3_error_bound_mode": "abs", "sz3_error_bound": 0.01},
}
LOSSY = ("zfp", "sz3")
MASK_METHODS = ["none", "rle", "roaring", "lz4", "zstd", "blosc2"]
LAYOUTS = ["buffered", "streaming", "backfilled"]

NAN_BITS = {"float16": 0x7E01, "bfloat16": 0x7FC1, "float32": 0x7FC00001, "float64": 0x7FF8000000000001}
POS_INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000, "float64": 0x7FF0000000000000}
NEG_INF_BITS = {"float16": 0xFC00, "bfloat16": 0xFF80, "float32": 0xFF800000, "float64": 0xFFF0000000000000}


def desc(shape: Iterable[int], dtype: str, **kw: Any) -> dict:
    return {"type": "ntensor", "shape": list(shape), "dtype": dtype, **kw}


def element_count(shape: Iterable[int]) -> int:
    return math.prod(shape)


def make_values(dtype: str, shape: Iterable[int], seed: int = 0, nonfinite: bool = False) -> np.ndarray:
    """Deterministic native-order values for ``dtype`` (bfloat16: uint16 bits, bitmask: packed bytes).

    With ``nonfinite`` a float array gets NaN (with a non-canonical payload), +Inf and -Inf at
    several positions, so masks of every kind are written.
    """
    shape = list(shape)
    n = element_count(shape)
    rng = np.random.default_rng(seed)
    if dtype == "bitmask":
        return rng.integers(0, 256, (n + 7) // 8, dtype=np.uint8)
    if dtype == "bfloat16":
        a = (rng.standard_normal(n).astype("f4") * 100).view("u4") >> 16
        a = a.astype("u2")
    elif dtype in ("complex64", "complex128"):
        a = (rng.standard_normal(n) * 100 + 1j * rng.standard_normal(n) * 100).astype(NUMPY[dtype])
    elif dtype.startswith("float"):
        a = (rng.standard_normal(n) * 100).astype(NUMPY[dtype])
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if nonfinite and n:
        nan_at = list(range(0, n, 7))
        pinf_at = list(range(3, n, 11))
        ninf_at = list(range(5, n, 13))
        if dtype in ("complex64", "complex128"):
            part = np.float32 if dtype == "complex64" else np.float64
            view = a.view(part)  # real, imag interleaved
            for i in nan_at:
                view[2 * i + 1] = np.nan  # NaN in the imaginary part only
            for i in pinf_at:
                view[2 * i] = np.inf
            for i in ninf_at:
                view[2 * i + 1] = -np.inf
        else:
            key = "float16" if dtype == "float16" else dtype
            ubits = {2: "u2", 4: "u4", 8: "u8"}[WIDTH[dtype]]
            bits = a.view(ubits)
            bits[nan_at] = NAN_BITS[key]
            bits[pinf_at] = POS_INF_BITS[key]
            bits[ninf_at] = NEG_INF_BITS[key]
    return a.reshape(shape) if dtype != "bitmask" else a


def wire_bytes(values: np.ndarray, dtype: str, byte_order: str) -> bytes:
    """The element bytes in ``byte_order`` (per component for complex types)."""
    if dtype == "bitmask":
        return values.tobytes()
    arr = np.ascontiguousarray(values)
    target = arr.dtype.newbyteorder("<" if byte_order == "little" else ">")
    return arr.astype(target).tobytes()


def ref_encode(meta: dict, objects: list[tuple[dict, Any]], layout: str = "buffered", **kw: Any) -> bytes:
    """Encode one message with the reference: buffered ``encode`` or the ``StreamingEncoder``."""
    if layout == "buffered":
        return tensogram.encode(meta, objects, **kw)
    kw.pop("threads", None)
    enc = tensogram.StreamingEncoder(meta, **kw)
    for d, data in objects:
        enc.write_object(d, data)
    if layout == "streaming":
        return enc.finish()
    assert layout == "backfilled"
    return enc.finish_backfilled()


def try_ref_encode(meta: dict, objects: list[tuple[dict, Any]], layout: str = "buffered", **kw: Any) -> bytes | None:
    """The reference's encoding, or ``None`` once a refusal has been checked against ours.

    A combination the reference encoder refuses is not skipped: our encoder (the same arguments,
    ``encode_message``) must refuse it too, with one of this package's errors, or, where it writes
    the message, the reference decoder must read back exactly what ours reads. Callers compare the
    two readers on the bytes returned and stop when there are none.
    """
    try:
        return ref_encode(meta, objects, layout, **kw)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # ValueError subclasses, or a Rust panic: sz3 of 0 elements
        refused = f"{type(exc).__name__}: {str(exc)[:200]}"
    check_ours_refuses_too(meta, objects, layout, refused, **kw)
    return None


def check_ours_refuses_too(meta: dict, objects: list[tuple[dict, Any]], layout: str, refused: str, **kw: Any) -> None:
    """What the reference encoder refused (``refused``): ours refuses it, or both decoders agree on ours."""
    from xarray_tensogram.errors import XarrayTensogramError
    from xarray_tensogram.formats.tensogram.writer import encode_message

    options = {k: v for k, v in kw.items() if k != "threads"}
    try:
        ours = encode_message(
            meta,
            objects,
            layout="buffered" if layout == "buffered" else "streaming",
            backfill=layout == "backfilled",
            **options,
        )
    except XarrayTensogramError:
        return  # both refuse, ours with a package error
    except Exception as exc:
        raise AssertionError(f"the reference refuses ({refused}); ours raises a foreign {exc!r}") from exc
    try:
        ref_objects = tensogram.decode(ours).objects
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise AssertionError(
            f"the reference refuses to encode this ({refused}); ours writes it, and the reference cannot read "
            f"ours: {exc!r}"
        ) from exc
    with open_tensogram(ours) as f:
        for j, (_d, ref) in enumerate(ref_objects):
            assert_same_array(f[0].read_object(j), ref)


def unsigned_view(a: np.ndarray) -> np.ndarray:
    """The element bits as unsigned integers (complex: per component)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype.itemsize == 8 else np.float64)
    if a.dtype.itemsize == 0:
        return a
    return a.view(f"u{a.dtype.itemsize}")


def assert_same_array(ours: np.ndarray, ref: np.ndarray, dtype: str | None = None, atol: float | None = None) -> None:
    """Equal shape, dtype and element bits (NaN payload and position, signed zeros included).

    bfloat16: the reference returns ``ml_dtypes.bfloat16`` when ml_dtypes is installed and
    uint16 otherwise; ours always returns the uint16 bit pattern (spec §11), so bits are compared.
    ``atol`` is used only for lossy decoders (zfp, sz3), where a different library build
    could legitimately produce different last bits; NaN positions must still agree.
    """
    assert isinstance(ours, np.ndarray), type(ours)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    if dtype == "bfloat16" or ref.dtype.name == "bfloat16":
        assert ours.dtype == np.uint16, ours.dtype
        ref = ref.view(np.uint16)
    else:
        assert ours.dtype == ref.dtype, (ours.dtype, ref.dtype)
    assert ours.dtype.isnative
    if atol is not None and ours.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        np.testing.assert_allclose(ours, ref, rtol=0, atol=atol, equal_nan=True)
        return
    same = unsigned_view(ours) == unsigned_view(ref)
    if not same.all():
        bad = np.argwhere(~same)[:5].tolist()
        raise AssertionError(
            f"{int((~same).sum())} of {same.size} elements differ, first at {bad}: "
            f"ours {ours.ravel()[:8]!r} ref {ref.ravel()[:8]!r}"
        )


def ref_decode_all(buf: bytes) -> list:
    """Reference decode of every message of a (possibly multi-message) buffer."""
    return [tensogram.decode(buf[o : o + n]) for o, n in tensogram.scan(buf)]


def ref_descriptor_dict(d: Any) -> dict:
    """The reference's DataObjectDescriptor as the flat dict of spec §10.2 (masks excluded)."""
    out = {
        "type": d.obj_type,
        "ndim": d.ndim,
        "shape": list(d.shape),
        "strides": list(d.strides),
        "dtype": d.dtype,
        "byte_order": d.byte_order,
        "encoding": d.encoding,
        "filter": d.filter,
        "compression": d.compression,
    }
    out.update(d.params)
    return out


def assert_descriptor_matches(ours: dict, ref: Any) -> None:
    expected = ref_descriptor_dict(ref)
    for key, value in expected.items():
        assert key in ours, (key, ours)
        assert ours[key] == value, (key, ours[key], value)


def assert_metadata_matches(ours: dict, ref_meta: Any) -> None:
    assert ours["version"] == 3
    assert ours["base"] == list(ref_meta.base)
    assert ours["_extra_"] == dict(ref_meta.extra)
    assert ours["_reserved_"] == dict(ref_meta.reserved)


def assert_message_matches(msg: Any, ref_msg: Any, dtypes: list[str] | None = None, atol: float | None = None) -> None:
    """Metadata, descriptors and every object's values of one message."""
    assert_metadata_matches(msg.metadata, ref_msg.metadata)
    assert len(msg.descriptors) == len(ref_msg.objects)
    for j, (rd, ra) in enumerate(ref_msg.objects):
        assert_descriptor_matches(msg.descriptors[j], rd)
        assert_same_array(msg.read_object(j), ra, dtypes[j] if dtypes else rd.dtype, atol=atol)


def rows_cases(n0: int) -> list[slice]:
    """Leading-axis ranges to compare with a slice of the reference decode."""
    cases = [slice(0, n0), slice(1, 3), slice(n0 - 1, n0), slice(2, 2), slice(-2, None), slice(None, 1)]
    return [s for s in cases if not (s.start is not None and s.start > n0)]


# ---------------------------------------------------------------- byte surgery
def be64(buf: bytes | bytearray, off: int) -> int:
    return struct.unpack_from(">Q", buf, off)[0]


def frames(msg: bytes) -> list[tuple[int, int, int]]:
    """(offset, type, length) of every frame of one well-formed message, walking as the spec says."""
    out = []
    pos = 24
    end = len(msg) - 24
    while pos + 16 <= end and msg[pos : pos + 2] == b"FR":
        ftype, _ver, _flags, length = struct.unpack_from(">HHHQ", msg, pos + 2)
        out.append((pos, ftype, length))
        pos += length
        pos += (-pos) % 8
    return out


def open_ours(buf: Any, **kw: Any):
    return open_tensogram(buf, **kw)


# ---------------------------------------------------------------- re-assembling edited reference messages
import cbor2  # noqa: E402 - after the pytest.importorskip above
import xxhash  # noqa: E402 - after the pytest.importorskip above


class Frame:
    """One frame of a reference message, editable: ``ftype``, ``flags``, ``version`` and either
    ``body`` (CBOR bytes of a non-data frame) or ``payload`` + ``descriptor`` (bytes) of a data frame."""

    def __init__(
        self,
        ftype: int,
        flags: int,
        version: int = 1,
        body: bytes = b"",
        payload: bytes = b"",
        descriptor: bytes = b"",
        hash_value: int | None = None,
    ) -> None:
        self.ftype, self.flags, self.version = ftype, flags, version
        self.body, self.payload, self.descriptor = body, payload, descriptor
        self.hash_value = hash_value  # None: recompute when HASH_PRESENT, else 0

    @property
    def value(self) -> Any:
        return cbor2.loads(self.body if self.ftype != 9 else self.descriptor)

    def set_value(self, obj: Any) -> None:
        data = cbor2.dumps(obj, canonical=True)
        if self.ftype == 9:
            self.descriptor = data
        else:
            self.body = data

    def to_bytes(self, descriptor_first: bool = False) -> bytes:
        if self.ftype == 9:
            content = self.descriptor + self.payload if descriptor_first else self.payload + self.descriptor
            footer = 20
            cbor_off = 16 if descriptor_first else 16 + len(self.payload)
        else:
            content, footer = self.body, 12
        h = self.hash_value
        if h is None:
            h = xxhash.xxh3_64_intdigest(content) if self.flags & 0x2 else 0
        length = 16 + len(content) + footer
        out = b"FR" + struct.pack(">HHHQ", self.ftype, self.version, self.flags, length) + content
        if self.ftype == 9:
            out += struct.pack(">Q", cbor_off)
        return out + struct.pack(">Q", h) + b"ENDF"


def split_message(msg: bytes) -> tuple[bytes, list[Frame], bytes]:
    """(preamble, frames, postamble) of one well-formed reference message."""
    out = []
    for off, ftype, length in frames(msg):
        raw = msg[off : off + length]
        _t, version, flags, _l = struct.unpack_from(">HHHQ", raw, 2)
        if ftype == 9:
            cbor_off = be64(raw, length - 20)
            out.append(Frame(9, flags, version, payload=raw[16:cbor_off], descriptor=raw[cbor_off : length - 20]))
        else:
            out.append(Frame(ftype, flags, version, body=raw[16 : length - 12]))
    return msg[:24], out, msg[-24:]


def assemble(
    preamble: bytes,
    fr: list[Frame],
    *,
    total: bool | None = None,
    fix_index: bool = True,
    pad: bytes = b"\x00",
    raw_frames: list[bytes] | None = None,
) -> bytes:
    """Lay frames out as the reference does (pad to 8), fix index offsets/lengths, total_length and
    the postamble. ``total=None`` keeps the preamble's choice (0 stays 0)."""
    keep_total = be64(preamble, 16) != 0 if total is None else total
    for _ in range(4):
        blobs = raw_frames if raw_frames is not None else [f.to_bytes() for f in fr]
        body = b""
        offsets, lengths, first_footer = [], [], None
        for f, blob in zip(fr, blobs, strict=True):
            pos = 24 + len(body)
            if f.ftype in (5, 6, 7) and first_footer is None:
                first_footer = pos
            if f.ftype == 9:
                offsets.append(pos)
                lengths.append(len(blob))
            body += blob
            body += pad * ((-len(body)) % 8)
        changed = False
        if fix_index and raw_frames is None:
            for f in fr:
                if f.ftype in (2, 6):
                    new = cbor2.dumps({"lengths": lengths, "offsets": offsets}, canonical=True)
                    if new != f.body:
                        f.body, changed = new, True
        if not changed:
            break
    length = 24 + len(body) + 24
    if first_footer is None:
        first_footer = 24 + len(body)
    tl = length if keep_total else 0
    pre = preamble[:16] + struct.pack(">Q", tl)
    return pre + body + struct.pack(">QQ", first_footer, tl) + b"39277777"


def edit_message(msg: bytes, edit, **kw: Any) -> bytes:
    """Apply ``edit(frames)`` (in place, or returning a new frame list) and re-assemble."""
    pre, fr, _post = split_message(msg)
    new = edit(fr)
    return assemble(pre, fr if new is None else new, **kw)


def data_frames(fr: list[Frame]) -> list[Frame]:
    return [f for f in fr if f.ftype == 9]


def metadata_frame(fr: list[Frame]) -> Frame:
    """The metadata frame decode() uses (the last one)."""
    return [f for f in fr if f.ftype in (1, 7)][-1]


def mark_known_reader_bugs(request: Any, known: dict[str, str]) -> None:
    """Mark a test as a strict xfail when its name (``test_x[param-ids]``) is listed in ``known``:
    used only for reader bugs that were reported and not yet fixed (an XPASS then fails the run,
    so a fix forces the entry to be removed)."""
    reason = known.get(request.node.name)
    if reason:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))
