"""Writing Tensogram (issue 6): byte identity with the reference encoder, round trips, appending,
atomic writes and per-variable encodings.

The reference is ``tensogram==0.24.0``. Byte identity is checked by encoding the same arrays,
metadata and options with both encoders, copying the reference message's ``_reserved_``
(time, uuid, encoder) into ours, and comparing the bytes (spec sections 8.2, 20 and 20.1).
Pipelines whose libraries are not deterministic across implementations (lz4 and blosc2 with
the lz4 codec, inside payloads or masks) are checked by decoding our bytes with the reference.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

tensogram = pytest.importorskip("tensogram")

import xarray_tensogram  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram import to_tensogram  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.backend import TensogramBackendEntrypoint  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.codecs.optional import available  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.errors import EncodeError, UnsupportedError, XarrayTensogramError  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.formats.tensogram import open_tensogram  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.formats.tensogram import writer as writer_mod  # noqa: E402 - after the pytest.importorskip above
from xarray_tensogram.formats.tensogram.writer import ObjectInput, encode_message, write_messages  # noqa: E402 - after the pytest.importorskip above

SAMPLE = os.path.join(os.path.dirname(xarray_tensogram.__file__), "samples", "forecast.tgm")
needs = {
    name: pytest.mark.skipif(not available(mod), reason=f"{mod} not installed")
    for name, mod in (
        ("szip", "imagecodecs"),
        ("zfp", "zfpy"),
        ("lz4", "lz4.block"),
        ("blosc2", "blosc2"),
        ("roaring", "pyroaring"),
    )
}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _field(shape, dtype="float64", seed=0, scale=100.0):
    """Smooth-ish, compressible values (a sine pattern plus noise) of the given dtype."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    x = np.linspace(0, 8 * np.pi, n)
    v = np.sin(x) * scale + rng.normal(0, scale / 50, n) + scale
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return v.astype(dt).reshape(shape)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -(2**40)), min(info.max, 2**40)
    span = hi - lo
    return np.clip(np.round((v / (2 * scale)) * span + lo), lo, hi).astype(dt).reshape(shape)


def _with_non_finite(a, nan=(), pinf=(), ninf=()):
    a = np.array(a, copy=True)
    flat = a.reshape(-1)
    flat[list(nan)] = np.nan
    flat[list(pinf)] = np.inf
    flat[list(ninf)] = -np.inf
    return a


def _desc(a, **kw):
    d = {"type": "ntensor", "shape": list(np.shape(a)), "dtype": np.asarray(a).dtype.name}
    d.update(kw)
    return d


def _ref_buffered(meta, objs, **kw):
    return bytes(tensogram.encode(meta, [(dict(d), a) for d, a in objs], **kw))


def _ref_streaming(meta, objs, backfill=False, **kw):
    enc = tensogram.StreamingEncoder(meta, **kw)
    for d, a in objs:
        enc.write_object(dict(d), a)
    return bytes(enc.finish_backfilled() if backfill else enc.finish())


def _reserved(message: bytes) -> dict:
    return dict(tensogram.decode(message).metadata.reserved)


def _first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):  # lengths may differ: reported below
        if x != y:
            lo = max(0, i - 8)
            return f"first difference at byte {i}: ours {a[lo : i + 8].hex()} ref {b[lo : i + 8].hex()}"
    return f"lengths differ: ours {len(a)} ref {len(b)}"


def _assert_same_bytes(ours: bytes, ref: bytes) -> None:
    assert ours == ref, _first_difference(ours, ref)


def _assert_same_values(got, want):
    """Bitwise equality, except that NaNs only need the same positions (masks restore canonical NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if got.dtype.kind in "fc":
        gn, wn = np.isnan(got), np.isnan(want)
        np.testing.assert_array_equal(gn, wn)
        g, w = got.copy(), want.copy()
        g[gn] = 0
        w[wn] = 0
        assert g.tobytes() == w.tobytes(), f"max abs diff {np.nanmax(np.abs(g - w))}"
    else:
        assert got.tobytes() == want.tobytes()


def _ref_decode_equal(ours: bytes, ref: bytes) -> None:
    """Our message decodes in the reference to the same values, descriptors and metadata as the reference's."""
    a, b = tensogram.decode(ours, verify_hash=True), tensogram.decode(ref)
    assert len(a.objects) == len(b.objects)
    assert _same_meta(dict(a.metadata.extra), dict(b.metadata.extra))
    assert _same_meta(list(a.metadata.base), list(b.metadata.base))  # NaN == NaN (a default _FillValue)
    for (da, va), (db, vb) in zip(a.objects, b.objects, strict=True):
        assert (da.dtype, list(da.shape), da.encoding, da.filter, da.compression) == (
            db.dtype,
            list(db.shape),
            db.encoding,
            db.filter,
            db.compression,
        )
        _assert_same_values(va, vb)


def _descriptor(message: bytes, j: int) -> dict:
    f = open_tensogram(message)
    try:
        return dict(next(iter(f)).descriptor(j))
    finally:
        f.close()


def _mask_methods(message: bytes, j: int) -> dict:
    return {k: v["method"] for k, v in (_descriptor(message, j).get("masks") or {}).items()}


# ---------------------------------------------------------------------------------------------
# 1. byte identity, buffered and streaming
# ---------------------------------------------------------------------------------------------

F32 = _field((40, 50), "float32", seed=1)
F64 = _field((40, 50), "float64", seed=2)
BIG64 = _field((25000,), "float64", seed=3)  # 200 kB: index offsets above 65535
MASKED64 = _with_non_finite(
    _field((3000,), "float64", seed=4), nan=range(0, 3000, 7), pinf=[5, 11, 2999], ninf=range(100, 200)
)
MASKED32 = _with_non_finite(_field((30, 40), "float32", seed=5), nan=[0, 1, 2, 50, 1199], ninf=[600])

SZIP = {"compression": "szip", "szip_rsi": 16, "szip_block_size": 16, "szip_flags": 8}


def _case(id_, objs, meta=None, marks=(), **kw):
    return pytest.param(meta if meta is not None else {}, objs, kw, id=id_, marks=list(marks))


def _sp(bits, D=0, a=F64, **kw):
    return (_desc(a, encoding="simple_packing", sp_bits_per_value=bits, sp_decimal_scale_factor=D, **kw), a)


RICH_META = {
    "base": [
        {
            "name": "t2m",
            "mars": {"param": "2t", "step": 6, "levelist": 850, "class": "od"},
            "dim_names": ["y", "x"],
            "cf": {"units": "K", "long_name": "2 metre temperature"},
        },
        {
            "name": "u",
            "nested": {"deep": {"_reserved_": {"kept": True}}, "list": [1, "a", 2.5, None, False]},
            "pi": 3.141592653589793,
            "half": 1.5,
            "neg": -7,
            "big": 2**40,
            "f32ish": 250.0,
            "nan": float("nan"),
            "inf": float("-inf"),
            "unicode": "h\u00e9llo \u2713",
            "empty": {},
            "emptylist": [],
        },
    ],
    "_extra_": {"title": "explicit extra wins", "n": 1},
    "title": "free-form, shadowed by _extra_",
    "institution": "free-form top-level key",
    "grid": {"type": "regular_ll", "dx": 0.25},
}

BYTE_CASES = [
    # --- plain dtypes, shapes, layouts ---------------------------------------------------------
    _case("none-float32", [(_desc(F32), F32)]),
    _case("none-float64-2d", [(_desc(F64), F64)]),
    _case(
        "none-all-int-dtypes",
        [
            (_desc(a), a)
            for a in (
                _field((7, 3), dt, seed=i)
                for i, dt in enumerate(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
            )
        ],
    ),
    _case("none-big-payload-offsets>64k", [(_desc(BIG64), BIG64), (_desc(F32), F32)]),
    _case("scalar", [(_desc(np.array(3.5)), np.array(3.5)), (_desc(np.array(7, np.int32)), np.array(7, np.int32))]),
    _case("zero-size-dims", [(_desc(np.zeros((3, 0, 5), np.float32)), np.zeros((3, 0, 5), np.float32))]),
    _case(
        "zero-size-zstd",
        [(_desc(np.zeros((3, 0, 5), np.float32), compression="zstd"), np.zeros((3, 0, 5), np.float32))],
    ),
    _case("zero-size-simple-packing", [_sp(16, a=np.zeros((0, 4)))]),
    _case("zero-objects", []),
    _case("zero-objects-with-extra", [], meta={"_extra_": {"a": 1}, "b": [1, 2]}),
    _case("forty-objects", [(_desc(a), a) for a in (_field((5, i + 1), "float32", seed=i) for i in range(40))]),
    _case(
        "custom-strides-and-extra-descriptor-keys", [(_desc(F32, strides=[1, 40], units_hint="K", type="ntensor"), F32)]
    ),
    _case("big-endian-label", [(_desc(F32, byte_order="big"), F32.astype(">f4").tobytes())]),
    _case("rich-metadata", [(_desc(F32), F32), (_desc(F64, compression="zstd"), F64)], meta=RICH_META),
    _case("base-shorter-than-objects", [(_desc(F32), F32), (_desc(F64), F64)], meta={"base": [{"name": "a"}]}),
    _case("extra-alias", [(_desc(F32), F32)], meta={"extra": {"a": 1}, "b": 2}),
    # --- hashing ------------------------------------------------------------------------------
    _case("hash-none", [(_desc(F32), F32), (_desc(F64), F64)], hash=None),
    _case("hash-none-zero-objects", [], hash=None),
    *[
        _case(f"aggregate-{p}", [(_desc(F32), F32), (_desc(F64), F64)], aggregate_hash=p)
        for p in ("none", "header", "footer", "both", "auto")
    ],
    _case("aggregate-footer-no-hash", [(_desc(F32), F32)], hash=None, aggregate_hash="footer"),
    # --- zstd ---------------------------------------------------------------------------------
    _case("zstd-default", [(_desc(F32, compression="zstd"), F32)]),
    *[_case(f"zstd-level{lv}", [(_desc(F64, compression="zstd", zstd_level=lv), F64)]) for lv in (-5, 1, 3, 9, 19)],
    _case("zstd-big", [(_desc(BIG64, compression="zstd"), BIG64)]),
    # --- shuffle ------------------------------------------------------------------------------
    _case("shuffle-float32", [(_desc(F32, filter="shuffle", shuffle_element_size=4), F32)]),
    _case("shuffle-float64-zstd", [(_desc(F64, filter="shuffle", shuffle_element_size=8, compression="zstd"), F64)]),
    _case("shuffle-size2-on-float32", [(_desc(F32, filter="shuffle", shuffle_element_size=2), F32)]),
    _case(
        "shuffle-int16-zstd1",
        [
            (
                _desc(
                    _field((99,), "int16"), filter="shuffle", shuffle_element_size=2, compression="zstd", zstd_level=1
                ),
                _field((99,), "int16"),
            )
        ],
    ),
    # --- simple_packing -----------------------------------------------------------------------
    *[
        _case(f"sp-{b}bits-D{D}", [_sp(b, D)])
        for b, D in (
            (0, 0),
            (1, 0),
            (7, 0),
            (8, 0),
            (12, 0),
            (16, 0),
            (16, 2),
            (16, -1),
            (17, 0),
            (24, 0),
            (24, 2),
            (31, 0),
            (32, 0),
            (33, 0),
            (48, 0),
            (64, 0),
            (12, -1),
        )
    ],
    # equal minima: the reference keeps the first one it meets, which decides the sign of a zero reference value
    _case(
        "sp-signed-zero-min",
        [_sp(8, a=np.array([-0.0, 0.0, 3.0])), _sp(8, a=np.array([0.0, -0.0, 3.0])), _sp(8, a=np.array([0.0, -0.0]))],
    ),
    # 2487 * 2**45 / 10 = 8750353338492519.0 exactly: rounding half away from zero must not go through x + 0.5
    _case("sp-64bits-rounding-above-2**52", [_sp(64, -1, a=np.array([2.621441e6, 0.0, 2487.0]))]),
    _case("sp-0bits-constant", [_sp(0, a=np.full((10, 10), 273.15))]),
    _case("sp-explicit-params", [_sp(16, sp_reference_value=50.0, sp_binary_scale_factor=-8)]),
    _case("sp-explicit-int-reference", [_sp(12, sp_reference_value=0, sp_binary_scale_factor=-4)]),
    _case("sp-16-zstd", [_sp(16, compression="zstd")]),
    _case("sp-24-shuffle", [_sp(24, filter="shuffle", shuffle_element_size=3)]),
    _case("sp-negative-values", [_sp(16, a=F64 - 500.0)]),
    # --- szip ---------------------------------------------------------------------------------
    _case("szip-uint8", [(_desc(_field((5000,), "uint8"), **SZIP), _field((5000,), "uint8"))], marks=[needs["szip"]]),
    _case("szip-int16", [(_desc(_field((70, 70), "int16"), **SZIP), _field((70, 70), "int16"))], marks=[needs["szip"]]),
    _case(
        "szip-int32-signed",
        [(_desc(_field((3000,), "int32") - 2**30, **{**SZIP, "szip_flags": 9}), _field((3000,), "int32") - 2**30)],
        marks=[needs["szip"]],
    ),
    _case(
        "szip-float32-flags0-rsi128-bs32",
        [(_desc(F32, compression="szip", szip_rsi=128, szip_block_size=32, szip_flags=0), F32)],
        marks=[needs["szip"]],
    ),
    _case("szip-sp16", [_sp(16, **SZIP)], marks=[needs["szip"]]),
    _case("szip-sp24", [_sp(24, **SZIP)], marks=[needs["szip"]]),
    _case("szip-sp8-bs8", [_sp(8, **{**SZIP, "szip_block_size": 8})], marks=[needs["szip"]]),
    _case("szip-sp12-upstream-defect", [_sp(12, **SZIP)], marks=[needs["szip"]]),
    _case("szip-sp32", [_sp(32, **SZIP)], marks=[needs["szip"]]),
    _case(
        "szip-shuffle-float64",
        [(_desc(F64, filter="shuffle", shuffle_element_size=8, **SZIP), F64)],
        marks=[needs["szip"]],
    ),
    _case(
        "szip-zero-size",
        [(_desc(np.zeros((0, 4), np.float32), **SZIP), np.zeros((0, 4), np.float32))],
        marks=[needs["szip"]],
    ),
    _case(
        "szip-big",
        [(_desc(BIG64, filter="shuffle", shuffle_element_size=8, **{**SZIP, "szip_rsi": 64}), BIG64)],
        marks=[needs["szip"]],
    ),
    # --- zfp ----------------------------------------------------------------------------------
    _case(
        "zfp-rate", [(_desc(F64, compression="zfp", zfp_mode="fixed_rate", zfp_rate=16.0), F64)], marks=[needs["zfp"]]
    ),
    _case(
        "zfp-precision",
        [(_desc(F64, compression="zfp", zfp_mode="fixed_precision", zfp_precision=20), F64)],
        marks=[needs["zfp"]],
    ),
    _case(
        "zfp-accuracy",
        [(_desc(F64, compression="zfp", zfp_mode="fixed_accuracy", zfp_tolerance=0.001), F64)],
        marks=[needs["zfp"]],
    ),
    _case(
        "zfp-rate-int-param",
        [(_desc(BIG64, compression="zfp", zfp_mode="fixed_rate", zfp_rate=8), BIG64)],
        marks=[needs["zfp"]],
    ),
    # --- blosc2 (deterministic inner codecs) --------------------------------------------------
    *[
        _case(
            f"blosc2-{c}",
            [(_desc(F64, compression="blosc2", blosc2_codec=c, blosc2_clevel=5), F64)],
            marks=[needs["blosc2"]],
        )
        for c in ("zstd", "blosclz", "lz4hc", "zlib")
    ],
    # --- NaN / Inf masks ----------------------------------------------------------------------
    *[
        _case(
            f"masks-{m}",
            [(_desc(MASKED64), MASKED64)],
            allow_nan=True,
            allow_inf=True,
            nan_mask_method=m,
            pos_inf_mask_method=m,
            neg_inf_mask_method=m,
            marks=[needs["roaring"]] if m == "roaring" else [],
        )
        for m in ("none", "rle", "roaring", "zstd")
    ],
    _case(
        "masks-default-method", [(_desc(MASKED64), MASKED64)], allow_nan=True, allow_inf=True, marks=[needs["roaring"]]
    ),
    _case(
        "masks-mixed-methods",
        [(_desc(MASKED64), MASKED64)],
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="rle",
        pos_inf_mask_method="none",
        neg_inf_mask_method="zstd",
    ),
    _case(
        "masks-threshold0",
        [(_desc(MASKED32), MASKED32)],
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="rle",
        pos_inf_mask_method="rle",
        neg_inf_mask_method="rle",
        small_mask_threshold_bytes=0,
    ),
    _case(
        "masks-small-fallback-to-none",
        [(_desc(MASKED32), MASKED32)],
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="zstd",
        pos_inf_mask_method="zstd",
        neg_inf_mask_method="zstd",
    ),
    _case(
        "masks-float32-zstd-shuffle",
        [(_desc(MASKED32, filter="shuffle", shuffle_element_size=4, compression="zstd"), MASKED32)],
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="rle",
        pos_inf_mask_method="rle",
        neg_inf_mask_method="rle",
    ),
    _case(
        "masks-nan-only",
        [(_desc(MASKED64[:100]), np.where(np.isinf(MASKED64[:100]), 0, MASKED64[:100]))],
        allow_nan=True,
    ),
    _case(
        "masks-sp-explicit-params",
        [_sp(16, a=MASKED64, sp_reference_value=0.0, sp_binary_scale_factor=-6)],
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="rle",
        pos_inf_mask_method="rle",
        neg_inf_mask_method="rle",
    ),
    _case(
        "masks-several-objects",
        [(_desc(MASKED64), MASKED64), (_desc(F32), F32), (_desc(MASKED32), MASKED32)],
        meta={"base": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
        allow_nan=True,
        allow_inf=True,
        nan_mask_method="rle",
        pos_inf_mask_method="rle",
        neg_inf_mask_method="rle",
        hash=None,
    ),
]

#: streaming cannot put hashes in a header: those cases are compared in buffered layout only
_STREAMING_SKIP = {"aggregate-header", "aggregate-both"}
STREAMING_BYTE_CASES = [c for c in BYTE_CASES if not any(s in str(c.id) for s in _STREAMING_SKIP)]


def _ref_kwargs(kw):
    return dict(kw)


@pytest.mark.parametrize("meta, objs, kw", BYTE_CASES)
def test_buffered_bytes_equal_reference(meta, objs, kw):
    ref = _ref_buffered(meta, objs, **kw)
    ours = encode_message(meta, objs, reserved=_reserved(ref), **kw)
    _assert_same_bytes(ours, ref)


@pytest.mark.parametrize("backfill", [False, True], ids=["finish", "finish_backfilled"])
@pytest.mark.parametrize("meta, objs, kw", STREAMING_BYTE_CASES)
def test_streaming_bytes_equal_reference(meta, objs, kw, backfill):
    ref = _ref_streaming(meta, objs, backfill=backfill, **kw)
    ours = encode_message(meta, objs, reserved=_reserved(ref), layout="streaming", backfill=backfill, **kw)
    _assert_same_bytes(ours, ref)


def test_object_input_and_tuple_forms_agree():
    objs = [(_desc(F32), F32), (_desc(F64, compression="zstd"), F64)]
    ref = _ref_buffered({"base": [{"name": "a"}]}, objs)
    r = _reserved(ref)
    as_inputs = [ObjectInput(a, d) for d, a in objs]
    _assert_same_bytes(encode_message({"base": [{"name": "a"}]}, as_inputs, reserved=r), ref)
    # dtype and shape are inferred from the array when the descriptor leaves them out
    bare = [ObjectInput(F32, {}), ObjectInput(F64, {"compression": "zstd"})]
    _assert_same_bytes(encode_message({"base": [{"name": "a"}]}, bare, reserved=r), ref)


def test_streaming_base_longer_than_objects_is_cut_like_the_reference():
    meta = {"base": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "x": 1}
    objs = [(_desc(F32), F32)]
    for backfill in (False, True):
        ref = _ref_streaming(meta, objs, backfill=backfill)
        ours = encode_message(meta, objs, reserved=_reserved(ref), layout="streaming", backfill=backfill)
        _assert_same_bytes(ours, ref)


def test_fixed_reserved_gives_reproducible_bytes():
    r = {"time": "2026-01-02T03:04:05Z", "uuid": "00000000-0000-4000-8000-000000000000"}
    objs = [(_desc(F32, compression="zstd"), F32)]
    a = encode_message({"x": 1}, objs, reserved=r)
    b = encode_message({"x": 1}, objs, reserved=r)
    assert a == b
    got = tensogram.decode(a).metadata.reserved
    assert (got["time"], got["uuid"]) == (r["time"], r["uuid"])
    # our own provenance by default; the reference's when asked for
    assert got["encoder"] == writer_mod.OUR_ENCODER
    d = encode_message({"x": 1}, objs, reserved={**r, "encoder": writer_mod.REFERENCE_ENCODER})
    assert tensogram.decode(d).metadata.reserved["encoder"] == {"name": "tensogram", "version": "0.24.0"}
    # without fixing them, time/uuid are fresh and well formed (fixed lengths: 20 and 36 characters)
    c = tensogram.decode(encode_message({"x": 1}, objs)).metadata.reserved
    assert len(c["time"]) == 20 and c["time"].endswith("Z") and len(c["uuid"]) == 36


@pytest.mark.parametrize("method", ["lz4", "blosc2"])
def test_masks_with_nondeterministic_methods_decode_in_reference(method):
    pytest.importorskip("lz4.block" if method == "lz4" else "blosc2")
    kw = {
        "allow_nan": True,
        "allow_inf": True,
        "nan_mask_method": method,
        "pos_inf_mask_method": method,
        "neg_inf_mask_method": method,
    }
    objs = [(_desc(MASKED64), MASKED64), (_desc(MASKED32, compression="zstd"), MASKED32)]
    for threshold in (None, 0):
        extra = {} if threshold is None else {"small_mask_threshold_bytes": threshold}
        ref = _ref_buffered({}, objs, **kw, **extra)
        ours = encode_message({}, objs, reserved=_reserved(ref), **kw, **extra)
        _ref_decode_equal(ours, ref)
        # the descriptors name the same methods (and the same blob lengths for the deterministic ones)
        assert [_mask_methods(ours, j) for j in range(2)] == [_mask_methods(ref, j) for j in range(2)]
        _assert_same_values(tensogram.decode(ours).objects[0][1], MASKED64)


@pytest.mark.parametrize("codec", ["lz4", "blosc2-lz4"])
def test_lz4_payloads_decode_in_reference(codec):
    if codec == "lz4":
        pytest.importorskip("lz4.block")
        opts = {"compression": "lz4"}
    else:
        pytest.importorskip("blosc2")
        opts = {"compression": "blosc2", "blosc2_codec": "lz4"}
    objs = [
        (_desc(F64, **opts), F64),
        (_desc(F32, filter="shuffle", shuffle_element_size=4, **opts), F32),
        _sp(16, **opts),
        (_desc(BIG64, **opts), BIG64),
        (_desc(MASKED64, **opts), MASKED64),
    ]
    ref = _ref_buffered({"base": [{"name": str(i)} for i in range(5)]}, objs, allow_nan=True, allow_inf=True)
    for layout in ("buffered", "streaming"):
        ours = encode_message(
            {"base": [{"name": str(i)} for i in range(5)]},
            objs,
            reserved=_reserved(ref),
            allow_nan=True,
            allow_inf=True,
            layout=layout,
        )
        _ref_decode_equal(ours, ref)


# ---------------------------------------------------------------------------------------------
# 2. round trips: Dataset -> to_tensogram -> reference decoder / our backend
# ---------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402 - after the pytest.importorskip above
from hypothesis import strategies as st  # noqa: E402 - after the pytest.importorskip above
from hypothesis.extra import numpy as hnp  # noqa: E402 - after the pytest.importorskip above

from xarray_tensogram.write.tensogram import CF_ATTRS  # noqa: E402 - after the pytest.importorskip above

HYP = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
INNER_DIMS = ["latitude", "longitude", "y", "x", "height"]
VAR_NAMES = ["t2m", "msl", "u10", "v10", "tp", "sst", "q"]
DTYPES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
#: attribute path segments: no reserved meanings (name keys, cf, mars, dim_names) and nothing that CF decoding
#: would interpret (units, calendar, _FillValue, scale_factor, coordinates ...)
SEGMENTS = ["alpha", "beta", "gamma", "delta", "kappa", "long_name", "standard_name", "comment", "history", "source"]


def _open(path, **kw):
    return xr.open_dataset(path, engine=TensogramBackendEntrypoint, **kw)


def _open_loaded(path, drop_wire_version=True, **kw):
    with _open(path, **kw) as ds:
        ds = ds.load()
    if drop_wire_version:
        ds.attrs.pop("tensogram_wire_version", None)
    return ds


_leaf = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
    st.integers(-(2**62), 2**62),
    st.floats(allow_nan=False, width=64),
    st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=4).map(lambda v: np.asarray(v, dtype=np.int64)),
    st.lists(st.floats(allow_nan=False), min_size=1, max_size=4).map(lambda v: np.asarray(v, dtype=np.float64)),
    st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=5), min_size=1, max_size=3),
)
_nested = st.recursive(
    _leaf, lambda kids: st.dictionaries(st.sampled_from(SEGMENTS), kids, min_size=1, max_size=3), max_leaves=6
)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


_attrs = st.dictionaries(st.sampled_from(SEGMENTS), _nested, max_size=4).map(_flatten)


def _values(dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elements = st.floats(width=dt.itemsize * 8, allow_nan=True, allow_infinity=True)
    else:
        elements = st.integers(np.iinfo(dt).min, np.iinfo(dt).max)
    return hnp.arrays(dt, shape, elements=elements)


@st.composite
def datasets(draw, message_dim=False):
    ndim = draw(st.integers(0 if not message_dim else 1, 3))
    dims = draw(st.permutations(INNER_DIMS))[:ndim]
    shape = tuple(draw(st.integers(1, 4)) for _ in dims)
    names = draw(st.lists(st.sampled_from(VAR_NAMES), min_size=1, max_size=3, unique=True))
    data_vars = {}
    for name in names:
        dtype = draw(st.sampled_from(DTYPES))
        data_vars[name] = (dims, draw(_values(dtype, shape)), draw(_attrs))
    coords = {}
    for d, n in zip(dims, shape, strict=True):
        if draw(st.booleans()):
            dtype = draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
            cattrs = draw(_attrs)
            if draw(st.booleans()):
                cattrs["units"] = draw(st.sampled_from(["m", "degrees_north", "1"]))
            coords[d] = (
                (d,),
                draw(_values(dtype, (n,)).filter(lambda a: not (a.dtype.kind == "f" and np.isnan(a).any()))),
                cattrs,
            )
    if message_dim:
        n = draw(st.integers(2, 4))  # a length-1 message dim is a constant key: it reads back as a scalar
        values = np.asarray(sorted(draw(st.sets(st.integers(-1000, 1000), min_size=n, max_size=n))), dtype=np.int64)
        data_vars = {
            k: (("member", *d), np.stack([v] * n) + np.zeros((n, *v.shape), v.dtype), a)
            for k, (d, v, a) in data_vars.items()
        }
        coords["member"] = (("member",), values, {"long_name": "member"})
    ds = xr.Dataset(data_vars, coords=coords, attrs=draw(_attrs))
    return ds


def _expected_entry(attrs, name, dims):
    entry = {}
    for k, v in attrs.items():
        key = f"cf.{k}" if k in CF_ATTRS and "." not in k else k
        node = entry
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v.tolist() if isinstance(v, np.ndarray) else v
    entry["name"] = name
    if dims is not None:
        entry["dim_names"] = list(dims)
    return entry


def _nest(flat):
    out = {}
    for k, v in flat.items():
        node = out
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v.tolist() if isinstance(v, np.ndarray) else v
    return out


def _same_meta(a, b):
    """Metadata equality where NaN == NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_meta(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_meta(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (a == b and type(a) is type(b)) or (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and a == b
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    )


def _check_reference_reads(path, ds, hashed=True):
    """The reference decoder sees every variable and coordinate with the same values and metadata."""
    data = Path(path).read_bytes()
    spans = tensogram.scan(data)
    messages = [tensogram.decode(data[o : o + n], verify_hash=hashed) for o, n in spans]
    assert len(messages) == 1
    msg = messages[0]
    assert _same_meta(dict(msg.metadata.extra), _nest(ds.attrs))
    seen = {}
    for entry, (_desc, arr) in zip(msg.metadata.base, msg.objects, strict=True):
        entry = {k: v for k, v in entry.items() if k != "_reserved_"}
        seen[entry["name"]] = (entry, arr)
    assert set(seen) == set(ds.data_vars) | {c for c in ds.coords if ds[c].ndim}
    for name, var in ds.variables.items():
        entry, arr = seen[name]
        _assert_same_values(arr, var.values)
        is_dim_coord = name in ds.coords and var.dims == (name,)
        want = _expected_entry(var.attrs, name, None if is_dim_coord else var.dims)
        if var.dtype.kind == "f" and "_FillValue" not in var.attrs and "_FillValue" not in var.encoding:
            want["_FillValue"] = math.nan  # to_netcdf's default fill of a float built in memory
            if var.dtype != np.float64:
                want["xarray_attr_types"] = json.dumps({"_FillValue": var.dtype.str}, separators=(",", ":"))
        assert _same_meta(entry, want), (entry, want)


@HYP
@given(ds=datasets())
def test_random_dataset_round_trip(tmp_path_factory, ds):
    path = tmp_path_factory.mktemp("rt") / "ds.tgm"
    to_tensogram(ds, path)
    _check_reference_reads(path, ds)
    xr.testing.assert_identical(_open_loaded(path), ds)


@HYP
@given(ds=datasets(message_dim=True))
def test_random_dataset_with_message_dim_round_trip(tmp_path_factory, ds):
    path = tmp_path_factory.mktemp("rt") / "ds.tgm"
    to_tensogram(ds, path, message_dims=["member"])
    data = Path(path).read_bytes()
    assert len(tensogram.scan(data)) == ds.sizes["member"]
    back = _open_loaded(path)
    xr.testing.assert_identical(back, ds)
    # written again from what was read, the file opens the same (the dims are recorded in the encodings)
    path2 = path.with_name("again.tgm")
    with _open(path) as opened:
        to_tensogram(opened, path2)
    xr.testing.assert_identical(_open_loaded(path2), ds)


@pytest.mark.parametrize("layout", ["buffered", "streaming"])
@pytest.mark.parametrize("hash_", ["xxh3", None])
def test_round_trip_layouts_and_hashing(tmp_path, layout, hash_):
    ds = xr.Dataset(
        {
            "t2m": (("latitude", "longitude"), MASKED32, {"units": "K", "long_name": "temperature"}),
            "n": (("latitude", "longitude"), _field((30, 40), "int16")),
        },
        coords={"latitude": np.linspace(-90, 90, 30), "longitude": np.arange(40.0)},
        attrs={"title": "x", "a.b": 1},
    )
    to_tensogram(ds, tmp_path / "x.tgm", layout=layout, hash=hash_)
    data = (tmp_path / "x.tgm").read_bytes()
    assert data[:8] == b"TENSOGRM" and len(tensogram.scan(data)) == 1
    total = struct.unpack(">Q", data[16:24])[0]
    assert total == (len(data) if layout == "buffered" else 0)
    xr.testing.assert_identical(_open_loaded(tmp_path / "x.tgm", verify_hash=hash_ is not None), ds)
    _check_reference_reads(tmp_path / "x.tgm", ds, hashed=hash_ is not None)


def test_accessor_writes_the_same_bytes(tmp_path):
    ds = xr.Dataset({"t": (("y", "x"), F32)}, attrs={"k": "v"})
    r = {"time": "2026-01-01T00:00:00Z", "uuid": "12345678-1234-4234-8234-123456789abc"}
    to_tensogram(ds, tmp_path / "a.tgm", reserved=r)
    ds.tensogram.to_tgm(tmp_path / "b.tgm", reserved=r)
    assert (tmp_path / "a.tgm").read_bytes() == (tmp_path / "b.tgm").read_bytes()
    # DataArray input
    to_tensogram(ds["t"], tmp_path / "c.tgm", reserved=r)
    xr.testing.assert_identical(_open_loaded(tmp_path / "c.tgm").drop_attrs(), ds.drop_attrs())


def test_zero_size_and_scalar_variables_round_trip(tmp_path):
    ds = xr.Dataset({"a": ((), np.float64(2.5)), "b": ((), np.int32(-3))}, attrs={"k": 1})
    to_tensogram(ds, tmp_path / "s.tgm")
    xr.testing.assert_identical(_open_loaded(tmp_path / "s.tgm"), ds)
    ds0 = xr.Dataset({"a": (("y", "x"), np.zeros((0, 3), np.float32))})
    to_tensogram(ds0, tmp_path / "z.tgm")
    msg = tensogram.decode((tmp_path / "z.tgm").read_bytes())
    assert msg.objects[0][1].shape == (0, 3)
    xr.testing.assert_identical(_open_loaded(tmp_path / "z.tgm"), ds0)


def _same_message_content(ours: bytes, theirs: bytes):
    """Two files hold the same messages: values and base entries (ours add dim_names) message by message.
    Ours carry the grid (latitude/longitude objects) in every message, equal to theirs, which may hold it in
    the first message only."""
    a_spans, b_spans = tensogram.scan(ours), tensogram.scan(theirs)
    assert len(a_spans) == len(b_spans)
    coords = {("latitude", "None"), ("longitude", "None")}
    grid = {}
    for (ao, an), (bo, bn) in zip(a_spans, b_spans, strict=True):
        a, b = tensogram.decode(ours[ao : ao + an]), tensogram.decode(theirs[bo : bo + bn])
        a_entries = {
            (e.get("name"), str(e.get("mars", {}).get("param"))): (e, v)
            for e, (_, v) in zip(a.metadata.base, a.objects, strict=True)
        }
        b_entries = {
            (e.get("name"), str(e.get("mars", {}).get("param"))): (e, v)
            for e, (_, v) in zip(b.metadata.base, b.objects, strict=True)
        }
        grid.update({k: v for k, v in b_entries.items() if k in coords})
        assert a_entries.keys() - coords == b_entries.keys() - coords
        assert a_entries.keys() >= coords  # each message describes its grid
        for k, (ea, va) in a_entries.items():
            eb, vb = b_entries.get(k) or grid[k]
            ea = {x: y for x, y in ea.items() if x != "dim_names"}
            eb = {x: y for x, y in eb.items() if x != "dim_names"}
            assert _same_meta(ea, eb), (ea, eb)
            _assert_same_values(va, vb)
        assert dict(a.metadata.extra) == dict(b.metadata.extra)


def _era_cube_bytes(ny=7, nx=12, steps=(0, 6, 12, 18), levels=(500, 850, 1000), params=("t", "u"), encoder=None):
    """An ERA-like file written by the reference: one message per (step, level), one object per param,
    latitude/longitude objects in the first message."""
    rng = np.random.default_rng(7)
    lat, lon = np.linspace(90, -90, ny), np.linspace(0, 360, nx, endpoint=False)
    units = {"t": "K", "u": "m s**-1", "v": "m s**-1", "q": "kg kg**-1"}
    out, first = [], True
    for s in steps:
        for lev in levels:
            base, objs = [], []
            for p in params:
                a = (rng.normal(size=(ny, nx)) * 10 + 280).astype(np.float32)
                base.append(
                    {
                        "mars": {
                            "class": "ea",
                            "type": "an",
                            "date": 20240101,
                            "time": 1200,
                            "param": p,
                            "step": s,
                            "levelist": lev,
                            "levtype": "pl",
                        },
                        "cf": {"units": units.get(p, "1"), "long_name": p.upper()},
                    }
                )
                objs.append(({"type": "ntensor", "shape": [ny, nx], "dtype": "float32"}, a))
            if first:
                for n, v, u in (("latitude", lat, "degrees_north"), ("longitude", lon, "degrees_east")):
                    base.append({"name": n, "cf": {"units": u}})
                    objs.append(({"type": "ntensor", "shape": [v.size], "dtype": "float64"}, v))
                first = False
            out.append(bytes(tensogram.encode({"base": base, "title": "ERA-like", "origin": {"centre": "ecmf"}}, objs)))
    return b"".join(out)


@pytest.mark.parametrize("lazy", [False, True], ids=["loaded", "lazy"])
def test_era_like_cube_from_reference_round_trips(tmp_path, lazy):
    src = tmp_path / "era.tgm"
    src.write_bytes(_era_cube_bytes())
    with _open(src) as ds:
        assert dict(ds.sizes) == {"step": 4, "level": 3, "latitude": 7, "longitude": 12}
        ds_in = ds if lazy else ds.load()
        to_tensogram(ds_in, tmp_path / "out.tgm")
        expected = ds.load()
    with _open(tmp_path / "out.tgm") as back:
        xr.testing.assert_identical(back.load(), expected)
    _same_message_content((tmp_path / "out.tgm").read_bytes(), src.read_bytes())


def test_bundled_sample_round_trips(tmp_path):
    with _open(SAMPLE) as ds:
        to_tensogram(ds, tmp_path / "f.tgm")
        expected = ds.load()
    with _open(tmp_path / "f.tgm") as back:
        xr.testing.assert_identical(back.load(), expected)
    _same_message_content((tmp_path / "f.tgm").read_bytes(), Path(SAMPLE).read_bytes())
    # selections of the sample keep working: a subset of steps, and one variable
    sub = expected.isel(step=[1, 3])[["2t"]]
    to_tensogram(sub, tmp_path / "sub.tgm")
    with _open(tmp_path / "sub.tgm") as back:
        xr.testing.assert_identical(back.load(), sub)


# ---------------------------------------------------------------------------------------------
# 3. appending
# ---------------------------------------------------------------------------------------------


def _cube(steps=50, ny=5, nx=6):
    """A forecast cube opened from a reference-written file: steps 0, 1, ... hours of 2t, plus lat/lon."""
    rng = np.random.default_rng(11)
    lat, lon = np.linspace(60, 40, ny), np.linspace(-10, 10, nx)
    out = []
    for s in range(steps):
        base = [{"mars": {"class": "od", "date": 20250101, "time": 0, "param": "2t", "step": s}, "cf": {"units": "K"}}]
        objs = [
            (
                {"type": "ntensor", "shape": [ny, nx], "dtype": "float32"},
                (rng.normal(size=(ny, nx)) + 280).astype(np.float32),
            )
        ]
        if s == 0:
            for n, v in (("latitude", lat), ("longitude", lon)):
                base.append({"name": n})
                objs.append(({"type": "ntensor", "shape": [v.size], "dtype": "float64"}, v))
        out.append(bytes(tensogram.encode({"base": base, "title": "cube"}, objs)))
    return b"".join(out)


@pytest.mark.parametrize("layout", ["buffered", "streaming"])
def test_fifty_appends_make_a_fifty_step_cube(tmp_path, layout):
    src = tmp_path / "src.tgm"
    src.write_bytes(_cube(50))
    with _open(src) as ds:
        full = ds.load()
    assert full.sizes["step"] == 50
    path = tmp_path / "appended.tgm"
    sizes = []
    for i in range(50):
        before = path.read_bytes() if path.exists() else b""
        to_tensogram(full.isel(step=[i]), path, mode="a", layout=layout)
        data = path.read_bytes()
        assert data.startswith(before), "appending must not rewrite what is there"
        assert len(tensogram.scan(data)) == i + 1
        sizes.append(len(data))
        if i in (0, 1, 2, 17, 49):  # readable after an append (one step reads back with a scalar step)
            with _open(path) as back:
                assert back["2t"].shape[-2:] == (5, 6)
                assert back.sizes.get("step", 1) == i + 1
                np.testing.assert_array_equal(back["2t"].values.reshape(-1, 5, 6)[-1], full["2t"].values[i])
    assert sorted(sizes) == sizes
    with _open(path) as back:
        xr.testing.assert_identical(back.load(), full)
    # each message decodes in the reference, the step in its metadata
    data = path.read_bytes()
    steps = [tensogram.decode(data[o : o + n]).metadata.base[0]["mars"]["step"] for o, n in tensogram.scan(data)]
    assert steps == list(range(50))
    with tensogram.TensogramFile.open(str(path)) as f:
        assert len(f) == 50


def test_append_to_reference_file_and_across_layouts(tmp_path):
    path = tmp_path / "mixed.tgm"
    path.write_bytes(_cube(3))  # three reference messages
    with _open(path) as ds:
        full = ds.load()
    more = full.assign_coords(step=full.step + np.timedelta64(3, "h"))
    to_tensogram(more.isel(step=[0]), path, mode="a", layout="streaming")
    to_tensogram(more.isel(step=[1, 2]), path, mode="a", hash=None)
    data = path.read_bytes()
    assert len(tensogram.scan(data)) == 6
    with _open(path) as back:
        back = back.load()
    assert back.sizes["step"] == 6
    expected = xr.concat([full, more], "step").drop_vars("valid_time")
    xr.testing.assert_identical(back.drop_vars("valid_time"), expected)
    np.testing.assert_array_equal(back.valid_time.values, (back.time + back.step).values)


def test_append_keeps_the_same_file(tmp_path):
    path = tmp_path / "a.tgm"
    ds = xr.Dataset(
        {"t": (("number", "y"), np.arange(6.0).reshape(3, 2))},
        coords={"number": ("number", [0, 1, 2], {"long_name": "number"})},
    )
    to_tensogram(ds.isel(number=[0]), path, message_dims=["number"])
    ino = os.stat(path).st_ino
    with open(path, "rb") as reader:  # an open reader keeps seeing a valid prefix
        to_tensogram(ds.isel(number=[1, 2]), path, message_dims=["number"], mode="a")
        assert os.stat(path).st_ino == ino
        assert len(tensogram.scan(reader.read())) == 3
    xr.testing.assert_identical(_open_loaded(path), ds)


# ---------------------------------------------------------------------------------------------
# 4. atomic writes
# ---------------------------------------------------------------------------------------------


def _two_var_ds():
    return xr.Dataset({"a": (("y", "x"), F32), "b": (("y", "x"), F64)}, attrs={"title": "t"})


def _dir_listing(path):
    return sorted(os.listdir(os.path.dirname(path)))


BAD_ENCODINGS = [
    {"b": {"compression": "no-such-codec"}},
    {"b": {"encoding": "simple_packing", "bits_per_value": 99}},
    {"b": {"compression": "zfp", "zfp_mode": "fixed_accuracy"}},  # fixed_accuracy needs a tolerance
]


@pytest.mark.parametrize("bad", BAD_ENCODINGS, ids=["unknown-codec", "bits-99", "zfp-no-tolerance"])
def test_failed_write_leaves_old_file_untouched(tmp_path, bad):
    path = tmp_path / "x.tgm"
    path.write_bytes(b"old contents")
    listing = _dir_listing(path)
    with pytest.raises(XarrayTensogramError):
        to_tensogram(_two_var_ds(), path, encoding=bad)
    assert path.read_bytes() == b"old contents"
    assert _dir_listing(path) == listing  # no temporary file left behind


def test_failed_write_leaves_no_file(tmp_path):
    path = tmp_path / "new.tgm"
    with pytest.raises(XarrayTensogramError):
        to_tensogram(_two_var_ds(), path, encoding=BAD_ENCODINGS[0])
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("bad", BAD_ENCODINGS, ids=["unknown-codec", "bits-99", "zfp-no-tolerance"])
def test_failed_append_truncates_back(tmp_path, bad):
    path = tmp_path / "x.tgm"
    to_tensogram(_two_var_ds(), path)
    old = path.read_bytes()
    with pytest.raises(XarrayTensogramError):
        to_tensogram(_two_var_ds(), path, mode="a", encoding=bad)
    assert path.read_bytes() == old
    assert _dir_listing(path) == ["x.tgm"]


def _fail_on_call(monkeypatch, n, exc=RuntimeError):
    """Make the n-th message encode (1-based) raise, after earlier messages were written."""
    import xarray_tensogram.write.tensogram as tw

    calls = {"n": 0}

    def flaky_version_of(real):
        def flaky(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == n:
                raise exc("injected failure")
            return real(*args, **kwargs)

        return flaky

    # messages are encoded as bytes (a message without objects) or as streamed parts
    for name in ("encode_message", "encode_message_parts"):
        monkeypatch.setattr(tw, name, flaky_version_of(getattr(tw, name)))
    return calls


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("mode", ["w", "a"])
def test_failure_after_some_messages_were_written(tmp_path, monkeypatch, mode, exc):
    path = tmp_path / "cube.tgm"
    path.write_bytes(_cube(2))
    old = path.read_bytes()
    with _open(path) as ds:
        cube = ds.load()
    _fail_on_call(monkeypatch, 2, exc)
    with pytest.raises(exc):
        to_tensogram(cube, path, mode=mode)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["cube.tgm"]


def _tagged(ds, i):
    """``ds`` with an attribute on each data variable that tells its objects apart from ``ds``'s (appendable)."""
    out = ds.copy()
    for v in out.data_vars.values():
        v.attrs = {**v.attrs, "append": i}
    return out


def test_append_refuses_duplicate_objects_before_writing_a_byte(tmp_path):
    """Objects with the same name and metadata as the file's (the reader could only stack them along a
    'message' dim) are refused, naming the variable; a new step of the same variable is appended."""
    ds = xr.Dataset(
        {"t": (("step", "y"), np.arange(6.0).reshape(3, 2))},
        coords={"step": np.array([0, 6, 12], dtype="timedelta64[h]"), "y": [10.0, 20.0]},
    )
    path = tmp_path / "a.tgm"
    to_tensogram(ds.isel(step=[0]), path, message_dims=["step"])
    before = path.read_bytes()
    with pytest.raises(XarrayTensogramError, match="cannot add variable 't': the file already has it with the same"):
        to_tensogram(ds.isel(step=[0]), path, mode="a", message_dims=["step"])
    with pytest.raises(XarrayTensogramError, match="cannot add coordinate 'y'"):
        to_tensogram(ds.isel(step=[1]).assign_coords(y=[1.0, 2.0]), path, mode="a", message_dims=["step"])
    assert path.read_bytes() == before
    to_tensogram(ds.isel(step=[1]), path, mode="a", message_dims=["step"])  # another step (the shared 'y' once)
    to_tensogram(ds.isel(step=[2]), path, mode="a", message_dims=["step"])
    back = _open_loaded(path)
    assert dict(back.sizes) == {"step": 3, "y": 2}  # no 'message' dim
    xr.testing.assert_equal(back.t.reset_coords(drop=True), ds.t.reset_coords(drop=True))
    np.testing.assert_array_equal(back.step.values, ds.step.values)
    np.testing.assert_array_equal(back.y.values, ds.y.values)


@pytest.mark.parametrize("mode", ["w", "a"])
def test_failing_fsync_or_write(tmp_path, monkeypatch, mode):
    path = tmp_path / "x.tgm"
    to_tensogram(_two_var_ds(), path)
    old = path.read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        to_tensogram(_tagged(_two_var_ds(), 1), path, mode=mode)  # tagged: not a duplicate of what is there
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["x.tgm"]


def test_failing_rename_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "x.tgm"
    path.write_bytes(b"old")

    def boom(*a, **k):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        to_tensogram(_two_var_ds(), path)
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["x.tgm"]


def test_write_messages_partial_write_in_append_mode(tmp_path):
    path = tmp_path / "m.tgm"
    first = encode_message({}, [(_desc(F32), F32)])
    write_messages(path, [first])

    def messages():
        yield first
        yield first[:100]  # half a message reaches the file ...
        raise RuntimeError("producer died")  # ... before the failure

    with pytest.raises(RuntimeError):
        write_messages(path, messages(), mode="a")
    assert path.read_bytes() == first
    with pytest.raises(ValueError):
        write_messages(path, [first], mode="x")


def test_failed_append_to_missing_file_leaves_no_file(tmp_path):
    path = tmp_path / "new.tgm"
    with pytest.raises(XarrayTensogramError):
        to_tensogram(_two_var_ds(), path, mode="a", encoding=BAD_ENCODINGS[0])
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# 5. per-variable encodings through encoding=
# ---------------------------------------------------------------------------------------------

T32 = (_field((30, 40), "float32", seed=21) + 200).astype(np.float32)
T64 = _field((30, 40), "float64", seed=22) + 200
N16 = _field((30, 40), "int16", seed=23)


def _enc_ds():
    return xr.Dataset(
        {"t": (("y", "x"), T32, {"units": "K"}), "d": (("y", "x"), T64), "n": (("y", "x"), N16)},
        attrs={"title": "encodings"},
    )


def _reference_twin(tmp_path, ds, encoding, ref_descs, **to_kw):
    """Write ``ds`` with ``encoding=``; encode the same arrays and metadata with the reference using
    ``ref_descs`` (name -> extra descriptor keys); write ours again with the reference's _reserved_."""
    path = tmp_path / "enc.tgm"
    to_tensogram(ds, path, encoding=encoding, **to_kw)
    first = tensogram.decode(path.read_bytes())
    base = [{k: v for k, v in e.items() if k != "_reserved_"} for e in first.metadata.base]
    objs = []
    for entry in base:
        name = entry["name"]
        values = np.asarray(ds[name].values)
        extra = dict(ref_descs.get(name, {}))
        if extra.get("encoding") == "simple_packing" or extra.get("compression") == "zfp":
            values = values.astype(np.float64)
        objs.append((_desc(values, **extra), values))
    meta = {"base": base, **({"_extra_": dict(first.metadata.extra)} if first.metadata.extra else {})}
    ref = _ref_buffered(meta, objs, allow_nan=True, allow_inf=True)
    to_tensogram(ds, path, encoding=encoding, reserved=_reserved(ref), **to_kw)
    return path.read_bytes(), ref


SZIP_ENC = {"compression": "szip", "szip_rsi": 32, "szip_block_size": 16, "szip_flags": 8}
ENCODING_CASES = [
    ("zstd-level", {"t": {"compression": "zstd", "level": 7}}, {"t": {"compression": "zstd", "zstd_level": 7}}),
    (
        "zstd-zstd_level-key",
        {"t": {"compression": "zstd", "zstd_level": 2}},
        {"t": {"compression": "zstd", "zstd_level": 2}},
    ),
    (
        "zstd-default",
        {"t": {"compression": "zstd"}, "n": {"compression": "zstd"}},
        {"t": {"compression": "zstd"}, "n": {"compression": "zstd"}},
    ),
    (
        "shuffle",
        {"t": {"filter": "shuffle"}, "d": {"filter": "shuffle", "compression": "zstd"}},
        {
            "t": {"filter": "shuffle", "shuffle_element_size": 4},
            "d": {"filter": "shuffle", "shuffle_element_size": 8, "compression": "zstd"},
        },
    ),
    (
        "shuffle-size2",
        {"t": {"filter": "shuffle", "shuffle_element_size": 2}},
        {"t": {"filter": "shuffle", "shuffle_element_size": 2}},
    ),
    (
        "sp16",
        {"t": {"encoding": "simple_packing", "bits_per_value": 16}},
        {"t": {"encoding": "simple_packing", "sp_bits_per_value": 16}},
    ),
    (
        "sp12-D2-zstd1",
        {
            "d": {
                "encoding": "simple_packing",
                "bits_per_value": 12,
                "decimal_scale_factor": 2,
                "compression": "zstd",
                "level": 1,
            }
        },
        {
            "d": {
                "encoding": "simple_packing",
                "sp_bits_per_value": 12,
                "sp_decimal_scale_factor": 2,
                "compression": "zstd",
                "zstd_level": 1,
            }
        },
    ),
    (
        "sp-prefixed-keys",
        {"d": {"encoding": "simple_packing", "sp_bits_per_value": 24, "sp_decimal_scale_factor": -1}},
        {"d": {"encoding": "simple_packing", "sp_bits_per_value": 24, "sp_decimal_scale_factor": -1}},
    ),
    ("szip-int16", {"n": SZIP_ENC}, {"n": SZIP_ENC}),
    (
        "szip-sp16",
        {"t": {"encoding": "simple_packing", "bits_per_value": 16, **SZIP_ENC}},
        {"t": {"encoding": "simple_packing", "sp_bits_per_value": 16, **SZIP_ENC}},
    ),
    (
        "zfp-rate-float64",
        {"d": {"compression": "zfp", "zfp_mode": "fixed_rate", "rate": 12}},
        {"d": {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 12}},
    ),
    (
        "zfp-precision-float64",
        {"d": {"compression": "zfp", "zfp_mode": "fixed_precision", "precision": 18}},
        {"d": {"compression": "zfp", "zfp_mode": "fixed_precision", "zfp_precision": 18}},
    ),
    (
        "zfp-accuracy-float64",
        {"d": {"compression": "zfp", "zfp_mode": "fixed_accuracy", "zfp_tolerance": 0.01}},
        {"d": {"compression": "zfp", "zfp_mode": "fixed_accuracy", "zfp_tolerance": 0.01}},
    ),
    (
        "blosc2-zstd",
        {"d": {"compression": "blosc2", "blosc2_codec": "zstd", "blosc2_clevel": 5}},
        {"d": {"compression": "blosc2", "blosc2_codec": "zstd", "blosc2_clevel": 5}},
    ),
    (
        "mixed",
        {
            "t": {"compression": "zstd", "level": 3},
            "d": {"encoding": "simple_packing", "bits_per_value": 16},
            "n": {"filter": "shuffle", "compression": "zstd"},
        },
        {
            "t": {"compression": "zstd", "zstd_level": 3},
            "d": {"encoding": "simple_packing", "sp_bits_per_value": 16},
            "n": {"filter": "shuffle", "shuffle_element_size": 2, "compression": "zstd"},
        },
    ),
]


@pytest.mark.parametrize("encoding, ref_descs", [pytest.param(e, r, id=i) for i, e, r in ENCODING_CASES])
def test_encoding_matches_reference_pipeline(tmp_path, encoding, ref_descs):
    for codec in ("szip", "zfp", "blosc2"):
        if any(v.get("compression") == codec for v in encoding.values()):
            pytest.importorskip({"szip": "imagecodecs", "zfp": "zfpy", "blosc2": "blosc2"}[codec])
    ours, ref = _reference_twin(tmp_path, _enc_ds(), encoding, ref_descs)
    _assert_same_bytes(ours, ref)


def test_encoding_from_variable_encoding_and_override(tmp_path):
    ds = _enc_ds()
    ds["t"].encoding = {"compression": "zstd", "level": 5}
    to_tensogram(ds, tmp_path / "a.tgm")
    msg = tensogram.decode((tmp_path / "a.tgm").read_bytes())
    descs = {e["name"]: d for e, (d, _) in zip(msg.metadata.base, msg.objects, strict=True)}
    assert descs["t"].compression == "zstd" and descs["t"].params.get("zstd_level") == 5
    assert descs["d"].compression == "none"
    to_tensogram(ds, tmp_path / "b.tgm", encoding={"t": {"compression": "none"}})
    msg = tensogram.decode((tmp_path / "b.tgm").read_bytes())
    assert {d.compression for d, _ in msg.objects} == {"none"}


@pytest.mark.parametrize("bits, D", [(8, 0), (16, 0), (16, 2), (24, -1), (12, 1), (32, 0)])
def test_simple_packing_parameters_equal_compute_packing_params(tmp_path, bits, D):
    rng = np.random.default_rng(bits + D)
    values = (rng.normal(size=(4, 20, 30)) * 15 + 270).astype(np.float32)
    ds = xr.Dataset(
        {"t": (("number", "y", "x"), values)}, coords={"number": ("number", [1, 2, 3, 4], {"long_name": "number"})}
    )
    path = tmp_path / "sp.tgm"
    to_tensogram(
        ds,
        path,
        message_dims=["number"],
        encoding={"t": {"encoding": "simple_packing", "bits_per_value": bits, "decimal_scale_factor": D}},
    )
    data = path.read_bytes()
    spans = tensogram.scan(data)
    assert len(spans) == 4
    for k, (o, n) in enumerate(spans):
        desc, decoded = tensogram.decode(data[o : o + n], verify_hash=True).objects[0]
        want = tensogram.compute_packing_params(values[k].astype(np.float64).ravel(), bits, D)
        got = {key: desc.params[key] for key in want}
        assert got == want
        assert type(got["sp_reference_value"]) is float
        step = 2.0 ** want["sp_binary_scale_factor"] * 10.0**-D
        assert np.abs(decoded - values[k].astype(np.float64)).max() <= step / 2 * (1 + 1e-9)
    with _open(path) as back:
        ref_values = np.stack([tensogram.decode(data[o : o + n]).objects[0][1] for o, n in spans])
        assert back["t"].dtype == np.float32  # written from float32: the reference's float64 values, as float32
        np.testing.assert_array_equal(back["t"].values, ref_values.astype(np.float32))


def test_simple_packing_with_nan_is_masked(tmp_path):
    """simple_packing cannot compute parameters from non-finite values (as the reference): they go to masks,
    so NaN and -inf come back where they were and the finite values within the packing's step."""
    ds = xr.Dataset({"t": (("y", "x"), MASKED32)})
    path = tmp_path / "nan.tgm"
    to_tensogram(ds, path, encoding={"t": {"encoding": "simple_packing", "bits_per_value": 16}})
    back = _open_loaded(path)["t"].values
    finite = np.isfinite(MASKED32)
    np.testing.assert_array_equal(back[~finite], MASKED32[~finite])  # NaN and -inf, position by position
    span = float(MASKED32[finite].max() - MASKED32[finite].min())
    np.testing.assert_allclose(back[finite], MASKED32[finite], rtol=0, atol=span / 2**16)


@pytest.mark.parametrize(
    "opts",
    [
        {"compression": "lz4"},
        {"compression": "blosc2"},
        {"compression": "blosc2", "blosc2_codec": "lz4", "blosc2_clevel": 9},
        {"filter": "shuffle", "compression": "lz4"},
        {"encoding": "simple_packing", "bits_per_value": 16, "compression": "lz4"},
        {"encoding": "simple_packing", "bits_per_value": 16, "compression": "blosc2"},
    ],
    ids=["lz4", "blosc2", "blosc2-lz4-9", "shuffle-lz4", "sp16-lz4", "sp16-blosc2"],
)
def test_lz4_and_blosc2_are_read_by_the_reference(tmp_path, opts):
    pytest.importorskip("lz4.block" if opts.get("compression") == "lz4" else "blosc2")
    packed = "bits_per_value" in opts
    ds = xr.Dataset({"t": (("y", "x"), T32 if packed else MASKED32), "n": (("y", "x"), N16)})
    enc = {"t": opts, "n": {k: v for k, v in opts.items() if k not in ("encoding", "bits_per_value")}}
    ours, ref = _reference_twin(
        tmp_path,
        ds,
        enc,
        {
            "t": {
                **{k: v for k, v in opts.items() if k != "bits_per_value"},
                **({"sp_bits_per_value": 16} if "bits_per_value" in opts else {}),
                **({"shuffle_element_size": 4} if opts.get("filter") else {}),
            },
            "n": {
                **{k: v for k, v in opts.items() if k not in ("encoding", "bits_per_value")},
                **({"shuffle_element_size": 2} if opts.get("filter") else {}),
            },
        },
    )
    _ref_decode_equal(ours, ref)
    back = _open_loaded(tmp_path / "enc.tgm")
    if packed:  # lossy: the values the reference decodes from its own message
        # (float64), handed back as the float32 that was written (the dtype is recorded in the metadata)
        ds["t"] = (("y", "x"), tensogram.decode(ref).objects[0][1].astype(np.float32))
    xr.testing.assert_identical(back, ds)


@pytest.mark.parametrize(
    "mode, param",
    [("fixed_rate", {"rate": 16}), ("fixed_precision", {"precision": 20}), ("fixed_accuracy", {"tolerance": 0.01})],
)
def test_zfp_on_float32_variable_reads_back(tmp_path, mode, param):
    """zfp works on float64 only (spec 12): a float32 variable is converted (as for simple_packing), never
    written as an object that no decoder can read."""
    pytest.importorskip("zfpy")
    ds = xr.Dataset({"t": (("y", "x"), T32)})
    path = tmp_path / "zfp.tgm"
    to_tensogram(ds, path, encoding={"t": {"compression": "zfp", "zfp_mode": mode, **param}})
    _, decoded = tensogram.decode(path.read_bytes()).objects[0]
    assert decoded.shape == T32.shape
    assert np.abs(decoded - T32).max() < 0.05
    back = _open_loaded(path)
    assert back["t"].shape == T32.shape
    assert float(np.abs(back["t"].values - T32).max()) < 0.05


def test_unknown_encoding_keys_are_rejected(tmp_path):
    """As xarray's to_netcdf: a typo in encoding= should not silently write an uncompressed file."""
    typo = (
        r"unexpected encoding parameters for variable 't': \['compresion'\]; "
        r"accepted for a \.tgm file: .*'compression'"
    )
    with pytest.raises(UnsupportedError, match=typo):
        to_tensogram(_enc_ds(), tmp_path / "typo.tgm", encoding={"t": {"compresion": "zstd"}})
    assert not (tmp_path / "typo.tgm").exists()


# ---------------------------------------------------------------------------------------------
# more Datasets opened from .tgm files: dates, ensembles, sub-hourly steps, holes
# ---------------------------------------------------------------------------------------------


def _reference_file(entries, ny=4, nx=5, coords_first=True):
    """One reference message per entry (a dict of mars keys), one object each; lat/lon in the first."""
    rng = np.random.default_rng(5)
    out = []
    for i, mars in enumerate(entries):
        base = [{"mars": {"class": "od", "type": "pf", **mars}, "cf": {"units": "K"}}]
        objs = [
            (
                {"type": "ntensor", "shape": [ny, nx], "dtype": "float32"},
                (rng.normal(size=(ny, nx)) + 280).astype(np.float32),
            )
        ]
        if i == 0 and coords_first:
            for n, v in (("latitude", np.linspace(50, 40, ny)), ("longitude", np.linspace(0, 8, nx))):
                base.append({"name": n})
                objs.append(({"type": "ntensor", "shape": [v.size], "dtype": "float64"}, v))
        out.append(bytes(tensogram.encode({"base": base}, objs)))
    return b"".join(out)


FROM_TGM_CASES = {
    "dates-and-steps": [
        {"param": "2t", "date": d, "time": t, "step": s}
        for d in (20240101, 20240102)
        for t in (0, 1200)
        for s in (0, 6)
    ],
    "ensemble": [
        {"param": "2t", "date": 20240101, "time": 0, "step": s, "number": n} for n in range(3) for s in (0, 12)
    ],
    "sub-hourly-steps": [{"param": "2t", "date": 20240101, "time": 30, "step": s} for s in (0, 0.25, 1.5, 3)],
    "levels-two-params": [
        {"param": p, "date": 20240101, "time": 0, "step": 0, "levelist": lev}
        for p in ("t", "q")
        for lev in (1000, 500, 850)
    ],
    "hole": [
        {"param": p, "date": 20240101, "time": 0, "step": s}
        for p in ("t", "q")
        for s in (0, 6, 12)
        if not (p == "q" and s == 6)
    ],
}


@pytest.mark.parametrize("case", list(FROM_TGM_CASES))
def test_datasets_opened_from_tgm_round_trip(tmp_path, case):
    src = tmp_path / "src.tgm"
    src.write_bytes(_reference_file(FROM_TGM_CASES[case]))
    with _open(src) as ds:
        expected = ds.load()
        to_tensogram(ds, tmp_path / "out.tgm")
    if case == "hole":
        assert expected["q"].attrs.get("tensogram_missing_objects") == 1
        assert len(tensogram.scan((tmp_path / "out.tgm").read_bytes())) == 3
    with _open(tmp_path / "out.tgm") as back:
        xr.testing.assert_identical(back.load(), expected)


def test_subset_opened_with_filter_by_keys_round_trips(tmp_path):
    src = tmp_path / "src.tgm"
    src.write_bytes(_reference_file(FROM_TGM_CASES["levels-two-params"]))
    with _open(src, filter_by_keys={"mars.param": "t"}) as ds:
        expected = ds.load()
        to_tensogram(ds.sel(level=[500, 1000]), tmp_path / "out.tgm")
    with _open(tmp_path / "out.tgm") as back:
        xr.testing.assert_identical(back.load(), expected.sel(level=[500, 1000]))


def test_dimension_coordinate_with_any_name_round_trips(tmp_path):
    """A dimension coordinate that is not on the reader's list of coordinate names (site, member, lev ...)
    comes back as the same coordinate, on its own dimension."""
    ds = xr.Dataset(
        {"t": (("site", "lev"), np.arange(6.0).reshape(3, 2))},
        coords={"site": ("site", [10, 20, 30], {"long_name": "station id"}), "lev": [1.5, 2.5]},
    )
    to_tensogram(ds, tmp_path / "c.tgm")
    xr.testing.assert_identical(_open_loaded(tmp_path / "c.tgm"), ds)


def test_returns_bytes_written(tmp_path):
    ds = _two_var_ds()
    n = to_tensogram(ds, tmp_path / "a.tgm")
    assert n == os.path.getsize(tmp_path / "a.tgm")
    m = _tagged(ds, 1).tensogram.to_tgm(tmp_path / "a.tgm", mode="a")
    assert n + m == os.path.getsize(tmp_path / "a.tgm")


def test_dask_backed_dataset_writes_the_same_bytes(tmp_path):
    pytest.importorskip("dask")
    r = {"time": "2026-01-01T00:00:00Z", "uuid": "12345678-1234-4234-8234-123456789abc"}
    ds = xr.Dataset(
        {"t": (("number", "y", "x"), np.stack([T32] * 3))},
        coords={"number": ("number", [0, 1, 2], {"long_name": "number"})},
    )
    to_tensogram(ds, tmp_path / "a.tgm", message_dims=["number"], reserved=r)
    to_tensogram(ds.chunk({"number": 1, "y": 7}), tmp_path / "b.tgm", message_dims=["number"], reserved=r)
    assert (tmp_path / "a.tgm").read_bytes() == (tmp_path / "b.tgm").read_bytes()


# ---------------------------------------------------------------------------------------------
# encode_message against the reference on less common inputs
# ---------------------------------------------------------------------------------------------


def _nan_bytes(dtype="float32"):
    v = np.linspace(0, 1, 4000).astype(np.float32 if dtype == "float32" else np.float64)
    v[::9] = np.nan
    v[5] = -np.inf
    return v.tobytes()


@pytest.mark.parametrize(
    "kw",
    [{"allow_nan": True, "allow_inf": True}, {"allow_nan": True, "allow_inf": True, "nan_mask_method": "rle"}],
    ids=["roaring", "rle"],
)
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_raw_bytes_input_gets_masks_like_the_reference(kw, dtype):
    """spec 11/19: float16/bfloat16/complex data must be handed over as bytes; the NaN/Inf scan and the
    masks apply to them as to arrays."""
    if "roaring" in str(kw.get("nan_mask_method", "roaring")):
        pytest.importorskip("pyroaring")
    raw = _nan_bytes(dtype)
    desc = {"type": "ntensor", "shape": [len(raw) // (4 if dtype == "float32" else 16)], "dtype": dtype}
    ref = _ref_buffered({}, [(desc, raw)], **kw)
    ours = encode_message({}, [(desc, raw)], reserved=_reserved(ref), **kw)
    _assert_same_bytes(ours, ref)


def test_raw_bytes_with_nan_are_refused_without_allow_nan():
    desc = {"type": "ntensor", "shape": [4000], "dtype": "float32"}
    with pytest.raises(ValueError):
        tensogram.encode({}, [(desc, _nan_bytes())])
    with pytest.raises(XarrayTensogramError):
        encode_message({}, [(desc, _nan_bytes())])


def _d(shape=(100,), dtype="float64", **kw):
    return {"type": "ntensor", "shape": list(shape), "dtype": dtype, **kw}


_LIN = np.linspace(0, 1, 100)
REFUSED = {
    # inputs the reference refuses; writing them anyway gives messages that decode to garbage or not at all
    "sp-binary-scale-factor-300": (
        {},
        [
            (
                _d(encoding="simple_packing", sp_bits_per_value=8, sp_reference_value=0.0, sp_binary_scale_factor=300),
                _LIN,
            )
        ],
    ),
    "sp-range-needs-E>256": ({}, [(_d(encoding="simple_packing", sp_bits_per_value=8), _LIN * 1e300)]),
    "sp-reference-nan": (
        {},
        [
            (
                _d(
                    encoding="simple_packing",
                    sp_bits_per_value=8,
                    sp_reference_value=float("nan"),
                    sp_binary_scale_factor=0,
                ),
                _LIN,
            )
        ],
    ),
    "sp-decimal-scale-float": (
        {},
        [(_d(encoding="simple_packing", sp_bits_per_value=8, sp_decimal_scale_factor=1.0), _LIN)],
    ),
    "shape-longer-than-data": ({}, [(_d(shape=(7,), dtype="float32"), _LIN.astype(np.float32))]),
    "shape-vs-raw-bytes": ({}, [(_d(shape=(7,), dtype="float32"), _LIN.astype(np.float32).tobytes())]),
    "negative-shape": ({}, [(_d(shape=(-1,)), _LIN)]),
    "byte-order-unknown": ({}, [(_d(byte_order="middle"), _LIN)]),
    "zstd-level-text": ({}, [(_d(compression="zstd", zstd_level="3"), _LIN)]),
}

#: what our encoder says for each of them (an EncodeError naming the field and the value)
REFUSED_BECAUSE = {
    "sp-binary-scale-factor-300": r"descriptor parameter 'sp_binary_scale_factor' must be in -256\.\.256, got 300",
    "sp-range-needs-E>256": r"sp_binary_scale_factor \d+ is outside -256\.\.256",
    "sp-reference-nan": r"sp_reference_value must be finite, got nan",
    "sp-decimal-scale-float": r"descriptor parameter 'sp_decimal_scale_factor' must be an integer, got 1\.0",
    "shape-longer-than-data": r"shape \[7\] holds 7 elements but the data has 100",
    "shape-vs-raw-bytes": r"shape \[7\] holds 7 elements but the data has 100",
    "negative-shape": r"shape \[-1\] must be a list of non-negative integers",
    "byte-order-unknown": r"byte_order must be 'little' or 'big', got 'middle'",
    "zstd-level-text": r"descriptor parameter 'zstd_level' must be an integer, got '3'",
}


@pytest.mark.parametrize("meta, objs", [pytest.param(m, o, id=k) for k, (m, o) in REFUSED.items()])
def test_refuses_what_the_reference_refuses(meta, objs, request):
    with pytest.raises((ValueError, OverflowError)):  # OverflowError: a negative shape for its unsigned fields
        tensogram.encode(meta, objs)
    with pytest.raises(EncodeError, match=REFUSED_BECAUSE[request.node.callspec.id]):
        encode_message(meta, objs)


METADATA_PARITY = {
    # spec 7: ints outside i64 become floats in the reference binding
    "int-above-i64": {"x": 2**63, "y": 2**64 - 1},
    "int-below-i64": {"x": -(2**63) - 1},
    # spec 7: bytewise order of encoded keys when integer and text keys are mixed
    "mixed-int-text-keys": {"base": [{"m": {1: "a", "b": 2, -1: 3, 1000: 4, "": 5}}]},
    # numpy scalars are accepted by the reference binding
    "numpy-scalars": {"x": np.float32(1.5), "y": np.int64(3), "z": np.float64(0.1), "b": np.bool_(True)},
}


@pytest.mark.parametrize("meta", [pytest.param(m, id=k) for k, m in METADATA_PARITY.items()])
def test_metadata_values_like_the_reference(meta):
    objs = [(_d(), _LIN)]
    ref = _ref_buffered(meta, objs)
    ours = encode_message(meta, objs, reserved=_reserved(ref))
    _assert_same_bytes(ours, ref)


@pytest.mark.parametrize("compression", ["rle", "roaring"])
def test_bitmask_payload_compressions(compression):
    """spec 13.9/13.10: bitmask objects with rle or roaring compression."""
    if compression == "roaring":
        pytest.importorskip("pyroaring")
    bits = np.zeros(5000, dtype=bool)
    bits[100:900] = True
    bits[::37] = True
    packed = np.packbits(bits).tobytes()
    desc = {"type": "ntensor", "shape": [5000], "dtype": "bitmask", "compression": compression}
    ref = _ref_buffered({}, [(desc, packed)])
    ours = encode_message({}, [(desc, packed)], reserved=_reserved(ref))
    _assert_same_bytes(ours, ref)


def test_non_contiguous_arrays_are_written_in_c_order():
    """The reference takes a numpy array's memory as is (a transposed array comes back scrambled); ours writes
    the logical C-order values, which is what a transposed input means."""
    a = np.arange(12.0).reshape(3, 4).T
    back = tensogram.decode(encode_message({}, [(_d(shape=a.shape), a)])).objects[0][1]
    np.testing.assert_array_equal(back, a)
    ref = _ref_buffered({}, [(_d(shape=a.shape), np.ascontiguousarray(a))])
    _assert_same_bytes(encode_message({}, [(_d(shape=a.shape), a)], reserved=_reserved(ref)), ref)


def test_per_variable_mask_method(tmp_path):
    """encoding={var: {"mask_method": ...}} chooses that variable's masks, whatever the other variables ask for."""
    ds = xr.Dataset({"t": (("y", "x"), MASKED32), "n": (("y", "x"), N16), "d": (("y", "x"), MASKED32.astype("f8"))})
    to_tensogram(ds, tmp_path / "m.tgm", encoding={"t": {"mask_method": "rle"}, "d": {"mask_method": "zstd"}})
    data = (tmp_path / "m.tgm").read_bytes()
    assert _mask_methods(data, 0) == {"nan": "rle", "inf-": "rle"}
    assert _mask_methods(data, 2) == {"nan": "zstd", "inf-": "zstd"}
    to_tensogram(ds, tmp_path / "m.tgm", mask_method="none")
    data = (tmp_path / "m.tgm").read_bytes()
    assert _mask_methods(data, 0) == _mask_methods(data, 2) == {"nan": "none", "inf-": "none"}
    xr.testing.assert_identical(_open_loaded(tmp_path / "m.tgm"), ds)


# ---------------------------------------------------------------------------------------------
# property: encode_message == reference, random arrays, pipelines, metadata and options
# ---------------------------------------------------------------------------------------------

_meta_leaf = st.one_of(
    st.text(max_size=6),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
_meta_value = st.recursive(
    _meta_leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=5), kids, max_size=3)),
    max_leaves=8,
)
_meta_map = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in ("_reserved_", "base", "_extra_", "extra")), _meta_value, max_size=4
)


@st.composite
def _objects(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 12), max_size=3)))
    if dtype.kind == "f":
        elements = st.floats(-1e6, 1e6, width=dtype.itemsize * 8)
    else:
        elements = st.integers(max(np.iinfo(dtype).min, -(2**40)), min(np.iinfo(dtype).max, 2**40))
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    opts = {}
    pipeline = draw(st.sampled_from(["none", "zstd", "shuffle", "shuffle+zstd", "sp", "sp+zstd", "szip", "zfp"]))
    if pipeline == "sp" or pipeline == "sp+zstd":
        a = a.astype(np.float64)
        opts.update(
            encoding="simple_packing",
            sp_bits_per_value=draw(st.sampled_from([0, 1, 8, 12, 16, 24, 32, 40, 64])),
            sp_decimal_scale_factor=draw(st.integers(-2, 2)),
        )
    if "shuffle" in pipeline:
        opts.update(filter="shuffle", shuffle_element_size=a.dtype.itemsize)
    if "zstd" in pipeline:
        opts["compression"] = "zstd"
        if draw(st.booleans()):
            opts["zstd_level"] = draw(st.integers(-3, 12))
    if pipeline == "szip" and available("imagecodecs") and a.dtype.itemsize <= 4:
        opts.update(
            compression="szip",
            szip_rsi=draw(st.sampled_from([1, 4, 32])),
            szip_block_size=draw(st.sampled_from([8, 16, 32, 64])),
            szip_flags=draw(st.sampled_from([0, 8])),
        )
    if pipeline == "zfp" and available("zfpy") and a.dtype == np.float64:
        mode = draw(st.sampled_from(["fixed_rate", "fixed_precision", "fixed_accuracy"]))
        opts.update(
            compression="zfp",
            zfp_mode=mode,
            **{
                "fixed_rate": {"zfp_rate": 8.0},
                "fixed_precision": {"zfp_precision": 16},
                "fixed_accuracy": {"zfp_tolerance": 0.5},
            }[mode],
        )
    if a.dtype.kind == "f" and a.size and opts.get("encoding") != "simple_packing" and draw(st.booleans()):
        flat = a.reshape(-1)
        for idx in draw(st.lists(st.integers(0, a.size - 1), max_size=5)):
            flat[idx] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    return _desc(a, **opts), a


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    objs=st.lists(_objects(), max_size=4),
    extra=_meta_map,
    base=st.lists(_meta_map, max_size=4),
    hash_=st.sampled_from(["xxh3", None]),
    layout=st.sampled_from(["buffered", "streaming", "backfilled"]),
    method=st.sampled_from(["none", "rle", "zstd"] + (["roaring"] if available("pyroaring") else [])),
    threshold=st.sampled_from([None, 0, 1]),
)
def test_random_messages_equal_reference(objs, extra, base, hash_, layout, method, threshold):
    meta = {**extra, "base": base[: len(objs)]}
    kw = {
        "hash": hash_,
        "allow_nan": True,
        "allow_inf": True,
        "nan_mask_method": method,
        "pos_inf_mask_method": method,
        "neg_inf_mask_method": method,
    }
    if threshold is not None:
        kw["small_mask_threshold_bytes"] = threshold
    if layout == "buffered":
        ref = _ref_buffered(meta, objs, **kw)
        ours = encode_message(meta, objs, reserved=_reserved(ref), **kw)
    else:
        ref = _ref_streaming(meta, objs, backfill=layout == "backfilled", **kw)
        ours = encode_message(
            meta, objs, reserved=_reserved(ref), layout="streaming", backfill=layout == "backfilled", **kw
        )
    _assert_same_bytes(ours, ref)


def test_readme_writing_example(tmp_path):
    """The README's 'Writing Tensogram files' snippet, on the bundled sample plus a precipitation variable."""
    import xarray_tensogram as xt

    with _open(SAMPLE) as ds:
        ds = ds.load()
    ds["tp"] = ds["2t"] * 0 + np.linspace(0, 0.01, ds["2t"].size, dtype=np.float32).reshape(ds["2t"].shape)
    ds["tp"].attrs = {"units": "m"}
    xt.to_tensogram(ds, tmp_path / "out.tgm")
    ds.tensogram.to_tgm(tmp_path / "out2.tgm")
    xt.to_tensogram(
        ds,
        tmp_path / "out.tgm",
        encoding={
            "2t": {"compression": "zstd", "level": 5},
            "msl": {"encoding": "simple_packing", "bits_per_value": 16, "compression": "zstd"},
            "tp": {"filter": "shuffle", "compression": "szip", "szip_rsi": 32, "szip_block_size": 16, "szip_flags": 8},
        },
    )
    for i in range(ds.sizes["step"]):
        xt.to_tensogram(ds.isel(step=[i]), tmp_path / "run.tgm", mode="w" if i == 0 else "a")
    with _open(tmp_path / "run.tgm") as run:
        xr.testing.assert_identical(run.load(), ds)
    with _open(tmp_path / "out.tgm") as out:
        out = out.load()
        xr.testing.assert_identical(out[["2t", "tp"]], ds[["2t", "tp"]])
        assert out["msl"].dtype == ds["msl"].dtype == np.float32  # simple_packing records the dtype written
        assert float(abs(out["msl"] - ds["msl"]).max()) < float(ds["msl"].max() - ds["msl"].min()) / 2**15


def test_encode_message_accepts_the_reference_keywords():
    """README: encode_message 'takes the same arguments as the reference tensogram.encode' (threads included)."""
    import inspect

    ref_params = set(inspect.signature(tensogram.encode).parameters) - {"global_meta_dict", "descriptors_and_data"}
    ours = set(inspect.signature(encode_message).parameters)
    assert ref_params <= ours, sorted(ref_params - ours)


# ---------------------------------------------------------------------------------------------
# the reference's file tools on our files
# ---------------------------------------------------------------------------------------------

#: warnings the reference's validator gives on the reference's own output in these layouts (spec 21)
EXPECTED_WARNINGS = {"flag_mismatch", "no_hash_available"}


def _issues(report):
    return [(i.get("severity"), i.get("code")) for m in report["messages"] for i in m["issues"]]


@pytest.mark.parametrize("check_canonical", [False, True])
def test_reference_validator_accepts_our_files(tmp_path, check_canonical):
    ds = xr.Dataset(
        {"t": (("y", "x"), MASKED32, {"units": "K"}), "n": (("y", "x"), N16), "d": (("y", "x"), T64)},
        coords={"y": np.arange(30.0), "x": np.arange(40.0)},
        attrs={"title": "validate", "nested.key": [1, 2, 3]},
    )
    path = tmp_path / "v.tgm"
    to_tensogram(ds, path)
    to_tensogram(_tagged(ds, 1), path, mode="a", layout="streaming")
    to_tensogram(_tagged(ds, 2), path, mode="a", hash=None)
    to_tensogram(
        _tagged(ds, 3),
        path,
        mode="a",
        encoding={
            "t": {"compression": "zstd"},
            "n": {"filter": "shuffle"},
            "d": {"encoding": "simple_packing", "bits_per_value": 16},
        },
    )
    if available("imagecodecs"):
        to_tensogram(_tagged(ds, 4), path, mode="a", encoding={"n": SZIP_ENC})
    report = tensogram.validate_file(str(path), level="full", check_canonical=check_canonical)
    assert report["file_issues"] == []
    assert len(report["messages"]) == (5 if available("imagecodecs") else 4)
    bad = [i for i in _issues(report) if i[0] != "warning" or i[1] not in EXPECTED_WARNINGS]
    assert bad == [], report
    assert [m["hash_verified"] for m in report["messages"]][:3] == [True, True, False]


def test_reference_file_append_interleaves_with_ours(tmp_path):
    path = tmp_path / "both.tgm"
    ds = xr.Dataset(
        {"t": (("number", "y", "x"), np.stack([T32, T32 + 1, T32 + 2, T32 + 3]))},
        coords={"number": ("number", [0, 1, 2, 3], {"long_name": "number"})},
    )
    to_tensogram(ds.isel(number=[0]), path, message_dims=["number"])
    with tensogram.TensogramFile.open(str(path)) as f:
        assert len(f) == 1
        f.append({"base": [{"name": "t", "number": 1, "dim_names": ["y", "x"]}]}, [(_desc(T32 + 1), T32 + 1)])
    to_tensogram(ds.isel(number=[2, 3]), path, message_dims=["number"], mode="a")
    with tensogram.TensogramFile.open(str(path)) as f:
        assert len(f) == 4
        for i in range(4):
            np.testing.assert_array_equal(f.decode_message(i, verify_hash=True).objects[0][1], T32 + i)
    xr.testing.assert_identical(_open_loaded(path), ds)


def _lossless_encodings(ds, draw):
    enc = {}
    for name, var in ds.data_vars.items():
        choice = draw(st.sampled_from(["none", "zstd", "shuffle", "shuffle+zstd", "lz4", "blosc2", "szip"]))
        width = var.dtype.itemsize
        if (choice == "lz4" and not available("lz4.block")) or (choice == "blosc2" and not available("blosc2")):
            choice = "zstd"
        if choice == "szip" and (not available("imagecodecs") or width > 4):
            choice = "shuffle+zstd"
        e = {
            "none": {},
            "zstd": {"compression": "zstd", "level": draw(st.integers(1, 9))},
            "shuffle": {"filter": "shuffle"},
            "shuffle+zstd": {"filter": "shuffle", "compression": "zstd"},
            "lz4": {"compression": "lz4"},
            "blosc2": {"compression": "blosc2"},
            "szip": {"compression": "szip", "szip_rsi": 4, "szip_block_size": 8, "szip_flags": 8},
        }[choice]
        e = dict(e)
        if var.dtype.kind == "f":
            e["mask_method"] = draw(
                st.sampled_from(["none", "rle", "zstd"] + (["roaring"] if available("pyroaring") else []))
            )
        enc[name] = e
    return enc


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ds=datasets(), data=st.data(), layout=st.sampled_from(["buffered", "streaming"]))
def test_random_dataset_lossless_encodings_round_trip(tmp_path_factory, ds, data, layout):
    enc = _lossless_encodings(ds, data.draw)
    path = tmp_path_factory.mktemp("enc") / "ds.tgm"
    to_tensogram(ds, path, encoding=enc, layout=layout)
    _check_reference_reads(path, ds)
    xr.testing.assert_identical(_open_loaded(path, verify_hash=True), ds)


def test_dataset_opened_from_netcdf_writes(tmp_path):
    """netCDF encodings left on the variables (zlib, chunksizes, _FillValue, source ...) do not get in the way."""
    pytest.importorskip("h5netcdf")
    ds = xr.Dataset(
        {"t": (("y", "x"), T32, {"units": "K"}), "n": (("y", "x"), N16)},
        coords={"y": np.arange(30.0), "x": np.arange(40.0)},
        attrs={"title": "from netCDF"},
    )
    ds.to_netcdf(tmp_path / "in.nc", engine="h5netcdf", encoding={"t": {"zlib": True, "complevel": 4, "shuffle": True}})
    with xr.open_dataset(tmp_path / "in.nc", engine="h5netcdf") as nc:
        to_tensogram(nc, tmp_path / "out.tgm", encoding={"n": {"compression": "zstd"}})
        expected = nc.load()
    xr.testing.assert_identical(_open_loaded(tmp_path / "out.tgm"), expected)


def test_scalar_coordinates_round_trip(tmp_path):
    """cfgrib-style scalar coordinates (height 2 m, number, surface ...) are kept, not dropped silently."""
    ds = xr.Dataset(
        {"t2m": (("latitude", "longitude"), T32[:3, :4])},
        coords={
            "latitude": [10.0, 20.0, 30.0],
            "longitude": [0.0, 1.0, 2.0, 3.0],
            "height": ((), 2.0, {"units": "m", "long_name": "height"}),
            "number": 0,
        },
    )
    to_tensogram(ds, tmp_path / "s.tgm")
    xr.testing.assert_identical(_open_loaded(tmp_path / "s.tgm"), ds)


def test_dataset_without_variables_keeps_its_attributes(tmp_path):
    """An empty Dataset writes a readable file (a message without objects holds the attributes), not 0 bytes."""
    ds = xr.Dataset(attrs={"title": "nothing yet", "a.b": 1})
    to_tensogram(ds, tmp_path / "e.tgm")
    data = (tmp_path / "e.tgm").read_bytes()
    assert len(tensogram.scan(data)) == 1
    assert dict(tensogram.decode(data).metadata.extra) == {"title": "nothing yet", "a": {"b": 1}}
    xr.testing.assert_identical(_open_loaded(tmp_path / "e.tgm"), ds)


@pytest.mark.parametrize("message_dims", [None, ["time"]], ids=["plain-dim", "message-dim"])
def test_datetime_and_timedelta_coordinates_round_trip(tmp_path, message_dims):
    """A time series (datetime64 dimension coordinate, timedelta64 auxiliary coordinate) is not a .tgm-born cube;
    its times must survive the round trip (e.g. CF-encoded like to_netcdf), not be dropped or turned into text."""
    times = np.array(["2024-01-01T00", "2024-01-01T06", "2024-01-01T12"], dtype="datetime64[ns]")
    ds = xr.Dataset(
        {"t": (("time", "y"), np.arange(6.0).reshape(3, 2))},
        coords={"time": times, "lead": ("time", np.array([0, 6, 12], "timedelta64[h]").astype("m8[ns]"))},
    )
    to_tensogram(ds, tmp_path / "ts.tgm", message_dims=message_dims)
    xr.testing.assert_identical(_open_loaded(tmp_path / "ts.tgm"), ds)


def test_coordinate_named_like_its_own_dim_is_refused_before_writing(tmp_path):
    """xarray keeps ``x(t, x)`` as a non-index coordinate; in .tgm an object named like a dim is that dim's
    index, so it would not come back: refused, naming it, and nothing is written."""
    ds = xr.Dataset({"x": (("t", "x"), np.array([[False, True], [True, False]]))})
    path = tmp_path / "b.tgm"
    with pytest.raises(UnsupportedError, match="variable 'x': a 2-D coordinate named like its own dim 'x'"):
        to_tensogram(ds, path)
    assert not path.exists()
