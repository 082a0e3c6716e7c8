"""The format-free codecs every format shares: the one zstd output bound, bitmaps and shuffle; and every
codec over every format whose table names it.

Oracles: the zstandard library's own decoder (what a stream really decodes to), Python's
arbitrary-precision integers (for the overflow-free uint64 form of the bound) and numpy.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import fractions
import ipaddress
import re
import uuid

import cbor2
import numpy as np
import pytest
import xarray as xr
import zstandard

import xarray_tensogram as xt
from xarray_tensogram.codecs import bitmaps, cbor, shuffle, zstd
from xarray_tensogram.codecs import registry as codec_registry
from xarray_tensogram.codecs.base import Codec
from xarray_tensogram.codecs.chain import RAW
from xarray_tensogram.errors import CodecError, LimitExceededError, MetadataError, MissingCodecError
from xarray_tensogram.formats.tensogram import compression as tgm_compression
from xarray_tensogram.formats.tensogram.writer import encode_message
from xarray_tensogram.formats.tetr import model as tetr_model
from xarray_tensogram.formats.ztensor import compression as zt_compression


@pytest.mark.parametrize("size", [0, 1, 4096, 131072, 131073, 3 << 20])
def test_max_output_bounds_what_zstandard_decodes(size: int) -> None:
    # zeros are the most compressible input: the worst case for an output bound
    payload = zstandard.ZstdCompressor(level=19, write_content_size=False).compress(bytes(size))
    decoded = len(zstandard.ZstdDecompressor().decompressobj().decompress(payload))
    assert decoded == size
    assert zstd.frames_bound(payload) <= zstd.max_output(len(payload))
    assert decoded <= zstd.frames_bound(payload)
    assert zstd.fits_output_bound(decoded, len(payload))


def test_fits_output_bound_matches_exact_integer_arithmetic_on_uint64() -> None:
    rng = np.random.default_rng(7)
    stored = np.concatenate(
        [
            rng.integers(0, 1 << 20, 500, dtype=np.uint64),
            np.array([0, 3, 4, (1 << 64) - 1, (1 << 62) + 5], dtype=np.uint64),
        ]
    )
    decoded = np.concatenate(
        [
            rng.integers(0, 1 << 40, 500, dtype=np.uint64),
            np.array([131072, 131073, 262144, (1 << 64) - 1, (1 << 64) - 1], dtype=np.uint64),
        ]
    )
    got = zstd.fits_output_bound(decoded, stored)
    want = [int(d) <= (int(s) // 4 + 1) * 131072 for d, s in zip(decoded, stored, strict=True)]
    assert got.tolist() == want
    assert [zstd.fits_output_bound(int(d), int(s)) for d, s in zip(decoded, stored, strict=True)] == want


def test_decompress_capped_refuses_more_than_the_cap() -> None:
    payload = zstd.compress(bytes(10_000))
    assert zstd.decompress_capped(payload, 10_000).tobytes() == bytes(10_000)
    with pytest.raises(CodecError, match="more than the 9999 bytes"):
        zstd.decompress_capped(payload, 9_999)


def test_rle_round_trip_and_packed_bits_match_numpy() -> None:
    rng = np.random.default_rng(3)
    bits = rng.random(1000) < 0.1
    assert np.array_equal(bitmaps.rle_decode(bitmaps.rle_encode(bits), bits.size), bits)
    assert np.array_equal(bitmaps.unpack(np.packbits(bits).tobytes(), bits.size), bits)
    with pytest.raises(CodecError, match="runs sum to"):
        bitmaps.rle_decode(bitmaps.rle_encode(bits), bits.size + 1)


@pytest.mark.parametrize("element_size", [1, 2, 4, 8])
def test_shuffle_groups_byte_k_of_every_element(element_size: int) -> None:
    raw = np.arange(64, dtype=np.uint8)
    shuffled = shuffle.shuffle(raw, element_size)
    # numpy oracle: element bytes as rows, read column by column
    assert np.array_equal(shuffled, raw.reshape(-1, element_size).T.reshape(-1))
    assert np.array_equal(shuffle.unshuffle(shuffled, element_size), raw)


# -- CBOR metadata: tags that build objects are refused while decoding, nesting is bounded -----------
@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
        datetime.date(2024, 1, 1),
        decimal.Decimal("1.5"),
        fractions.Fraction(1, 3),
        uuid.UUID(int=1),
        ipaddress.ip_address("10.0.0.1"),
        ipaddress.ip_network("10.0.0.0/8"),
        {1, 2},
        re.compile("a+"),
        cbor2.CBORTag(9999, 1),
    ],
    ids=["datetime", "date", "decimal", "fraction", "uuid", "ip", "network", "set", "regex", "unknown-tag"],
)
def test_cbor_metadata_refuses_values_built_from_tags(value):
    """Wherever the tag sits in the metadata, the decoder refuses it (nothing is built from it)."""
    raw = cbor2.dumps({"base": [{"mars": {"param": "2t", "x": [1, {"v": value}]}}]}, datetime_as_timestamp=False)
    with pytest.raises(MetadataError, match="not allowed"):
        cbor.loads(raw)


def test_cbor_refused_and_plain_tags_cover_every_tag_the_decoder_knows():
    """A tag the installed cbor2 decodes natively is either refused or known to give a plain value, so
    a cbor2 release that learns a new tag fails here instead of letting its objects through."""

    def native(tag):
        hooked = []

        def hook(t, immutable):
            hooked.append(t)
            return 0

        for payload in (0, "2024-01-01T00:00:00Z", b"\x01\x02\x03\x04", [1, 2], {"a": 1}, 1.5, None):
            hooked.clear()
            with contextlib.suppress(cbor2.CBORDecodeError):
                cbor2.loads(cbor2.dumps(cbor2.CBORTag(tag, payload)), tag_hook=hook)
            if not hooked:
                return True
        return False

    found = {t for t in [*range(0, 5000), 55799, 55800, 65535, 2**32] if native(t)}
    assert found == set(cbor.REFUSED_NATIVE_TAGS) | set(cbor.PLAIN_NATIVE_TAGS)
    assert cbor.loads(cbor2.dumps(2**70)) == 2**70  # bignum: a plain int
    assert cbor.loads(b"\xd9\xd9\xf7\x01") == 1  # self-describe


def test_cbor_metadata_nesting_bound_and_plain_values():
    def nest(n):
        return b"\x81" * n + b"\x00"

    assert cbor.loads(nest(cbor.MAX_DEPTH + 1)) is not None  # 65 nested arrays: the top one plus 64 levels
    with pytest.raises(LimitExceededError, match="nested deeper than 64 levels"):
        cbor.loads(nest(cbor.MAX_DEPTH + 2))
    plain = {"a": -1.5, "b": [True, None, "é", 2**70], "c": {"d": b"\xc1"}}  # bytes that look like tags
    assert cbor.loads(cbor2.dumps(plain)) == plain


# -- every codec over every format whose table names it ---------------------------------------------------
# The cases come from the formats' own tables (file word -> codec object), so a codec registered in a table
# is tested here with no new test code: written by our writer (and by the reference writer where one
# exists), then read whole, by rows, by an element selection and in Dask chunks, against the input.
def _table_cases() -> list[tuple[str, str, str, Codec]]:
    """``(format, stage, word, codec)`` for every word of every format's table."""
    cases = [(".tgm", stage, word, c) for stage, words in tgm_compression.STAGES.items() for word, c in words.items()]
    cases += [(".tet", "codec", word, c) for word, c in tetr_model.CODEC_OBJECTS.items()]
    cases += [(".zt", "encoding", word, c) for word, c in zt_compression.ENCODINGS.items()]
    return cases


CASES = _table_cases()
#: descriptor parameters a .tgm word needs (the rest take the writer's defaults)
TGM_PARAMS: dict[str, dict[str, object]] = {
    "simple_packing": {"sp_bits_per_value": 24},
    "shuffle": {"shuffle_element_size": 8},
    # szip takes samples of at most 32 bits: here simple_packing's 24-bit values
    "szip": {
        "encoding": "simple_packing",
        "sp_bits_per_value": 24,
        "szip_rsi": 2,
        "szip_block_size": 8,
        "szip_flags": 8,
    },
    "zfp": {"zfp_mode": "fixed_rate", "zfp_rate": 32.0},
    "sz3": {"sz3_error_bound_mode": "abs", "sz3_error_bound": 1e-6},
}
#: largest difference from the input a lossy word may give (simple_packing: 24 bits over a span of ~8)
LOSSY = {"simple_packing": 1e-5, "szip": 1e-5, "zfp": 1e-4, "sz3": 1e-6}


def test_every_registered_codec_is_named_by_a_format_table_or_is_a_value_stage() -> None:
    named = {id(c) for *_, c in CASES}
    assert [n for n, c in codec_registry.CODECS.items() if id(c) not in named] == [RAW.name]


def _input(bitmask: bool) -> np.ndarray:
    rng = np.random.default_rng(11)
    if bitmask:  # a bitmask object reads as its packed bytes
        return np.packbits(rng.random((12, 10)) < 0.3)
    return rng.standard_normal((12, 10))


def _writes(writer: str, fmt: str, word: str, codec: Codec) -> bool:
    """Whether ``writer`` writes ``word`` into ``fmt``: our writers write every codec that can encode (sz3 is
    read-only), a ``.tgm``'s every stage; the reference ``ztensor`` 0.1.4 writes raw ``.zt`` only, and no
    reference writer writes ``.tet``; nothing writes seekable zstd (its reads are tested on fixtures)."""
    if writer == "reference":
        return fmt == ".tgm" or (fmt == ".zt" and word == zt_compression.RAW)
    if not codec.capabilities.encode:
        return False
    return fmt != ".zt" or word in zt_compression.V01_ENCODINGS


WRITTEN = [
    (fmt, stage, word, codec, writer)
    for fmt, stage, word, codec in CASES
    for writer in ("ours", "reference")
    if _writes(writer, fmt, word, codec)
]


def _write(tmp_path, fmt: str, stage: str, word: str, codec: Codec, values: np.ndarray, writer: str):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{writer}{fmt}"
    if fmt == ".tgm":
        bitmask = values.ndim == 1
        shape = [values.size * 8] if bitmask else list(values.shape)  # a bitmask's shape counts bits
        desc = {"type": "ntensor", "shape": shape, "dtype": "bitmask" if bitmask else "float64"}
        desc |= {"encoding": "none", "filter": "none", "compression": "none", stage: word, **TGM_PARAMS.get(word, {})}
        encode = pytest.importorskip("tensogram").encode if writer == "reference" else encode_message
        path.write_bytes(encode({}, [(desc, values)]))
        return path
    if writer == "reference":
        ztensor = pytest.importorskip("ztensor")
        w = ztensor.Writer(str(path))
        w.add_tensor("v", values)
        w.finalize()
        return path
    ds = xr.Dataset({"v": (("y", "x"), values)})
    if fmt == ".tet":
        xt.to_tetr(ds, path, compression=word, chunks=(5, 4))
    else:
        xt.to_ztensor(ds, path, compression=word)
    return path


@pytest.mark.filterwarnings("ignore:The specified chunks separate:UserWarning")
@pytest.mark.parametrize(
    ("fmt", "stage", "word", "codec", "writer"), WRITTEN, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[4]}" for c in WRITTEN]
)
def test_codec_reads_the_input_back_through_every_read_path(tmp_path, fmt, stage, word, codec, writer) -> None:  # type: ignore[no-untyped-def]
    bitmask = fmt == ".tgm" and codec in (bitmaps.RLE, bitmaps.ROARING)  # what the format applies them to
    values = _input(bitmask)
    try:
        path = _write(tmp_path, fmt, stage, word, codec, values, writer)
    except MissingCodecError as exc:  # an optional codec's package is not installed
        pytest.skip(str(exc))
    with xr.open_dataset(path, engine="tensogram") as ds:
        (da,) = ds.data_vars.values()
        whole = da.values
        if word in LOSSY:
            np.testing.assert_allclose(whole, values, rtol=0, atol=LOSSY[word])
        else:
            np.testing.assert_array_equal(whole, values)
        assert whole.dtype == values.dtype
        # each path gives exactly the whole read's values
        np.testing.assert_array_equal(da[3:8].values, whole[3:8])
        picks = [np.array([9, 0, 4]), np.array([7, 1])] if whole.ndim == 2 else [np.array([9, 0, 4])]
        np.testing.assert_array_equal(da.isel(dict(zip(da.dims, picks, strict=True))).values, whole[np.ix_(*picks)])
    with xr.open_dataset(path, engine="tensogram", chunks={da.dims[0]: 5}) as lazy:
        (dd,) = lazy.data_vars.values()
        assert len(dd.chunks[0]) > 1
        np.testing.assert_array_equal(dd.compute().values, whole)
