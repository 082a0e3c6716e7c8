"""``encoding=`` of the three writers, checked in one place against the codec registry and honoured per
variable (issue 23, point 4).

Oracles: the reference readers (``tensogram`` for ``.tgm``, ``ztensor`` 0.1.4 for ``.zt``) and, for
``.tet`` (no reference reader package), the chunk index parsed here from the byte offsets of
``specs/tetr-v1.md`` §3-§4 with the tiles decoded by ``zstandard`` itself: none of them is our reader.
"""

from __future__ import annotations

import inspect
import re
import stat
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zstandard

import xarray_tensogram as xt
from xarray_tensogram.codecs.registry import CODECS
from xarray_tensogram.errors import EncodeError, UnsupportedError
from xarray_tensogram.write import tensogram_pipeline, tetr, ztensor
from xarray_tensogram.write.encoding_check import CF_ENCODING_KEYS, markdown_table

ROOT = Path(__file__).resolve().parents[1]
WRITERS = {"tgm": xt.to_tensogram, "tet": xt.to_tetr, "zt": xt.to_ztensor}
SPECS = {"tgm": tensogram_pipeline.ENCODING, "tet": tetr.ENCODING, "zt": ztensor.ENCODING}
ZSTD = CODECS["zstd"]


def compressible(seed: int = 0) -> np.ndarray:
    """Values zstd compresses much better at high levels than at low ones (rounded normals)."""
    return np.round(np.random.default_rng(seed).normal(0, 1, (120, 250)), 2).astype("f4")


def dataset() -> xr.Dataset:
    v = compressible()
    return xr.Dataset({name: (("y", "x"), v.copy()) for name in ("fast", "small", "plain")})


LEVELS = {
    "fast": {"compression": "zstd", "level": 1},
    "small": {"compression": "zstd", "level": 19},
    "plain": {"compression": "raw"},
}


def zstd_stream(data: bytes, level: int) -> bytes:
    """One zstd frame without a content size, as the reference writers of .tet and .zt make it (the Python
    equivalent the specs give: ``ZstdCompressor(level).compressobj()``, ``compress``, ``flush``)."""
    cobj = zstandard.ZstdCompressor(level=level).compressobj()
    return cobj.compress(data) + cobj.flush()


# -- what the reference readers see -----------------------------------------------------------------
def _tgm_objects(path: Path) -> dict[str, tuple[Any, np.ndarray]]:
    tensogram = pytest.importorskip("tensogram")
    message = tensogram.decode(path.read_bytes())
    return {base["name"]: obj for base, obj in zip(message.metadata.base, message.objects, strict=True)}


def _zt_tensors(path: Path) -> dict[str, tuple[Any, np.ndarray]]:
    ztensor_ref = pytest.importorskip("ztensor")
    reader = ztensor_ref.Reader(str(path))
    return {m.name: (m, reader.read_tensor(m.name, to="numpy")) for m in reader.list_tensors()}


def _tet_datasets(path: Path) -> dict[str, dict[str, Any]]:
    """name -> dtype code, shape, and per tile (codec, stored size, decoded bytes), read by the spec's offsets."""
    data = path.read_bytes()
    magic, _version, count, _flags, index_off, _index_len = struct.unpack_from("<4sIIIQQ", data, 0)
    assert magic == b"TETR"
    pos, names = 40, []  # records follow the u64 blob length at 32
    for _ in range(count):
        name_len, code, ndim, _ = struct.unpack_from("<IIII", data, pos)
        name = data[pos + 16 : pos + 16 + name_len].decode()
        pos += 16 + name_len + (8 - (16 + name_len) % 8) % 8
        shape = struct.unpack_from(f"<{ndim}Q", data, pos)
        pos += 16 * ndim
        names.append((name, code, shape))
    assert data[index_off : index_off + 4] == b"TIDX"
    (entries,) = struct.unpack_from("<Q", data, index_off + 8)
    out: dict[str, dict[str, Any]] = {n: {"code": c, "shape": s, "tiles": []} for n, c, s in names}
    for k in range(entries):
        at = index_off + 32 + 104 * k
        (dataset_id,) = struct.unpack_from("<Q", data, at)
        offset, raw, stored = struct.unpack_from("<QQQ", data, at + 72)
        (codec,) = struct.unpack_from("<I", data, at + 96)
        payload = data[offset : offset + stored]
        decoded = zstandard.ZstdDecompressor().decompressobj().decompress(payload) if codec == 1 else payload
        assert len(decoded) == raw
        out[names[dataset_id][0]]["tiles"].append((codec, stored, decoded))
    return out


# -- 1. accepted keys honoured, per variable, as the reference readers see them ---------------------
def test_tgm_levels_per_variable_in_the_reference_decoder(tmp_path: Path) -> None:
    ds = dataset()
    enc = {**LEVELS, "plain": {"compression": "none"}}
    xt.to_tensogram(ds, tmp_path / "l.tgm", encoding=enc)
    objects = _tgm_objects(tmp_path / "l.tgm")
    for name in ds.data_vars:
        np.testing.assert_array_equal(objects[name][1], ds[name].values)  # bit-exact
    assert (objects["fast"][0].compression, objects["fast"][0].params) == ("zstd", {"zstd_level": 1})
    assert (objects["small"][0].compression, objects["small"][0].params) == ("zstd", {"zstd_level": 19})
    assert objects["plain"][0].compression == "none"


def test_zt_levels_and_checksums_per_tensor_in_the_reference_reader(tmp_path: Path) -> None:
    ds = dataset()
    enc = {**LEVELS, "small": {**LEVELS["small"], "checksum": "crc32c"}}
    xt.to_ztensor(ds, tmp_path / "l.zt", encoding=enc)
    tensors = _zt_tensors(tmp_path / "l.zt")
    for name in ds.data_vars:
        np.testing.assert_array_equal(tensors[name][1], ds[name].values)  # bit-exact
    meta = {name: m for name, (m, _) in tensors.items()}
    assert [meta[n].encoding for n in ("fast", "small", "plain")] == ["zstd", "zstd", "raw"]
    assert meta["small"].checksum.startswith("crc32c:0x") and meta["fast"].checksum is None
    assert meta["small"].size < meta["fast"].size < meta["plain"].size  # level 19 < level 1 < raw
    raw = ds["fast"].values.tobytes()
    assert (meta["fast"].size, meta["small"].size) == (len(zstd_stream(raw, 1)), len(zstd_stream(raw, 19)))


def test_tet_codec_and_level_per_dataset_as_the_spec_reads_them(tmp_path: Path) -> None:
    ds = dataset()
    enc = {**LEVELS, "small": {**LEVELS["small"], "chunks": (60, 250)}}
    xt.to_tetr(ds, tmp_path / "l.tet", encoding=enc)
    found = _tet_datasets(tmp_path / "l.tet")
    for name in ds.data_vars:
        tiles = found[name]["tiles"]
        values = np.concatenate([np.frombuffer(t[2], "<f4") for t in tiles]).reshape(ds[name].shape)
        np.testing.assert_array_equal(values, ds[name].values)  # bit-exact
    assert [len(found[n]["tiles"]) for n in ("fast", "small", "plain")] == [1, 2, 1]  # the tile shape asked for
    assert {t[0] for t in found["fast"]["tiles"]} == {1} and {t[0] for t in found["plain"]["tiles"]} == {0}
    half = ds["small"].values[:60].tobytes()
    fast = found["fast"]["tiles"][0][1]
    assert found["small"]["tiles"][0][1] == len(zstd_stream(half, 19))
    assert fast == len(zstd_stream(ds["fast"].values.tobytes(), 1)) > found["small"]["tiles"][0][1] * 2
    back = xr.open_dataset(tmp_path / "l.tet", engine="tensogram").load()
    xr.testing.assert_equal(back, ds)


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_compression_none_means_no_codec(tmp_path: Path, ext: str) -> None:
    """``"compression": None`` asks for no compression, as in ``to_netcdf``, even for a variable read compressed."""
    WRITERS[ext](dataset()[["fast"]], tmp_path / f"z.{ext}", encoding={"fast": {"compression": "zstd"}})
    with xr.open_dataset(tmp_path / f"z.{ext}", engine="tensogram") as read:
        WRITERS[ext](read, tmp_path / f"n.{ext}", encoding={"fast": {"compression": None}})
    assert (tmp_path / f"n.{ext}").stat().st_size > compressible().nbytes > (tmp_path / f"z.{ext}").stat().st_size


@pytest.mark.parametrize("ext", ["tet", "zt"])
def test_append_keeps_how_the_files_variables_are_stored(tmp_path: Path, ext: str) -> None:
    """``.tet`` and ``.zt`` rewrite the file to append: the variables already there keep their codec (and
    checksum), the new one gets its own encoding."""
    path = tmp_path / f"k.{ext}"
    kept = {"compression": "zstd", "level": 19, **({"checksum": "crc32c"} if ext == "zt" else {})}
    WRITERS[ext](dataset()[["small"]], path, encoding={"small": kept})
    WRITERS[ext](dataset()[["plain"]], path, mode="a", encoding={"plain": {"compression": "raw"}})
    if ext == "zt":
        meta = {name: m for name, (m, _) in _zt_tensors(path).items()}
        assert (meta["small"].encoding, meta["small"].checksum[:9], meta["plain"].encoding) == (
            "zstd",
            "crc32c:0x",
            "raw",
        )
    else:
        found = _tet_datasets(path)
        assert [t[0] for t in found["small"]["tiles"]] == [1] and [t[0] for t in found["plain"]["tiles"]] == [0]
    xr.testing.assert_equal(xr.open_dataset(path, engine="tensogram").load(), dataset()[["small", "plain"]])


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_a_level_alone_adjusts_the_codec_a_variable_was_read_with(tmp_path: Path, ext: str) -> None:
    """``{"level": 19}`` without ``compression`` applies to the codec in effect: the one it was read with."""
    ds = dataset()[["fast"]]
    WRITERS[ext](ds, tmp_path / f"a.{ext}", encoding={"fast": {"compression": "zstd", "level": 1}})
    with xr.open_dataset(tmp_path / f"a.{ext}", engine="tensogram") as read:
        WRITERS[ext](read, tmp_path / f"b.{ext}", encoding={"fast": {"level": 19}})
    assert (tmp_path / f"b.{ext}").stat().st_size < (tmp_path / f"a.{ext}").stat().st_size
    xr.testing.assert_equal(xr.open_dataset(tmp_path / f"b.{ext}", engine="tensogram").load(), ds)


# -- 2. refused before a byte is written, naming the variable and the key -----------------------------
#: netCDF keys none of our formats takes
NETCDF_ONLY = ["zlib", "complevel", "contiguous", "fletcher32", "least_significant_digit", "szip_coding"]


@pytest.mark.parametrize("ext", sorted(WRITERS))
@pytest.mark.parametrize("key", [*NETCDF_ONLY, "shuffle", "compresion"])
def test_unknown_keys_are_refused_naming_variable_and_key(tmp_path: Path, ext: str, key: str) -> None:
    target = tmp_path / f"u.{ext}"
    with pytest.raises(UnsupportedError, match=rf"variable 'fast'.*'{key}'") as info:
        WRITERS[ext](dataset(), target, encoding={"fast": {key: True}})
    assert f"accepted for a {SPECS[ext].fmt} file: {SPECS[ext].accepted()}" in str(info.value)
    assert not target.exists() and not list(tmp_path.iterdir())


def test_every_unknown_key_is_named_at_once(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"'fast': \['complevel', 'shuffle', 'zlib'\]; accepted for a \.tet"):
        xt.to_tetr(dataset(), tmp_path / "n.tet", encoding={"fast": {"zlib": True, "complevel": 4, "shuffle": True}})


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_refused_on_append_leaves_the_file_as_it_was(tmp_path: Path, ext: str) -> None:
    target = tmp_path / f"a.{ext}"
    WRITERS[ext](dataset()[["fast"]], target)
    before = target.read_bytes()
    with pytest.raises(EncodeError, match=r"variable 'small'.*'level'.*-131072\.\.22, got 23"):
        WRITERS[ext](dataset()[["small"]], target, mode="a", encoding={"small": {"compression": "zstd", "level": 23}})
    assert target.read_bytes() == before


@pytest.mark.parametrize("ext", sorted(WRITERS))
@pytest.mark.parametrize(
    ("enc", "error", "pattern"),
    [
        ({"compression": "zstd", "level": 99}, EncodeError, r"variable 'fast': zstd parameter 'level' must be in"),
        ({"compression": "zstd", "level": "high"}, EncodeError, r"variable 'fast'.*'level' must be an integer"),
        ({"compression": "zstd", "level": 2.5}, EncodeError, r"variable 'fast'.*'level' must be an integer"),
        ({"compression": "gzip"}, UnsupportedError, r"variable 'fast': unknown compression 'gzip'.*valid values"),
        ({"compression": "raw", "level": 9}, UnsupportedError, r"variable 'fast'.*'level' is a parameter of"),
        ({"level": 9}, UnsupportedError, r"variable 'fast'.*'level' is a parameter of compression zstd"),
    ],
    ids=["level-range", "level-type", "level-float", "unknown-codec", "level-for-raw", "level-without-codec"],
)
def test_invalid_values_are_refused_naming_variable_and_parameter(
    tmp_path: Path, ext: str, enc: dict, error: type[Exception], pattern: str
) -> None:
    if ext == "tgm" and enc.get("compression") == "raw":
        enc = {**enc, "compression": "none"}  # .tgm's name for no compression
    target = tmp_path / f"v.{ext}"
    with pytest.raises(error, match=pattern):
        WRITERS[ext](dataset(), target, encoding={"fast": enc})
    assert not target.exists()


@pytest.mark.parametrize(
    ("ext", "codec"), [("tet", "lz4"), ("zt", "lz4"), ("zt", "zt.zstd-seekable/1"), ("tgm", "sz3")]
)
def test_codecs_the_format_cannot_write_are_refused(tmp_path: Path, ext: str, codec: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"variable 'fast': unknown compression '{re.escape(codec)}'"):
        WRITERS[ext](dataset(), tmp_path / f"c.{ext}", encoding={"fast": {"compression": codec}})
    assert not (tmp_path / f"c.{ext}").exists()


@pytest.mark.parametrize(("ext", "key", "value"), [("zt", "checksum", "md5"), ("tgm", "byte_order", "middle")])
def test_invalid_option_values_are_refused(tmp_path: Path, ext: str, key: str, value: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"variable 'fast': {key} '{value}' is not valid.*valid values"):
        WRITERS[ext](dataset(), tmp_path / f"o.{ext}", encoding={"fast": {key: value}})
    assert not (tmp_path / f"o.{ext}").exists()


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_cf_keys_are_accepted_by_every_writer(tmp_path: Path, ext: str) -> None:
    assert set(SPECS[ext].accepted()) >= CF_ENCODING_KEYS
    ds = xr.Dataset({"v": ("x", np.array([1.5, np.nan, 3.25]))})
    enc = {"v": {"dtype": "i2", "scale_factor": 0.25, "add_offset": 0.0, "_FillValue": -9, "units": "K"}}
    WRITERS[ext](ds, tmp_path / f"cf.{ext}", encoding=enc)
    with xr.open_dataset(tmp_path / f"cf.{ext}", engine="tensogram", decode_cf=False) as raw:
        np.testing.assert_array_equal(raw["v"].values, [6, -9, 13])


@pytest.mark.parametrize(("ext", "category"), [("tet", xt.TetrMappingWarning), ("tgm", xt.TensogramMappingWarning)])
def test_a_codec_asked_for_strings_kept_in_metadata_is_warned_about(
    tmp_path: Path, ext: str, category: type[Warning]
) -> None:
    """Strings go to the footer or to metadata, where nothing is compressed: a codec for them is named, not dropped
    silently (``.zt`` compresses their zero-size placeholder tensor as asked)."""
    ds = xr.Dataset({"v": ("x", np.arange(3.0))}, coords={"x": ["a", "b", "c"]})
    with pytest.warns(category, match=r"variable 'x': strings are kept .* encoding \['compression'\] does not apply"):
        WRITERS[ext](ds, tmp_path / f"s.{ext}", encoding={"x": {"compression": "zstd"}, "v": {"compression": "zstd"}})
    np.testing.assert_array_equal(
        xr.open_dataset(tmp_path / f"s.{ext}", engine="tensogram")["x"].values, ["a", "b", "c"]
    )


# -- 3. one signature shape --------------------------------------------------------------------------
@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_the_writers_share_one_signature_shape(ext: str) -> None:
    params = inspect.signature(WRITERS[ext]).parameters
    assert list(params)[:2] == ["ds", "path"]
    for name, default in (("mode", "w"), ("encoding", None), ("unlimited_dims", None)):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY and params[name].default == default, name
    assert inspect.signature(WRITERS[ext]).return_annotation in (int, "int")


@pytest.mark.parametrize("ext", sorted(WRITERS))
@pytest.mark.parametrize("mode", ["w", "a"])
def test_a_failure_while_writing_leaves_the_old_file(tmp_path: Path, ext: str, mode: str) -> None:
    """Atomic in both modes: a Dask task that fails while the values are written leaves the file as it was."""
    dask_array = pytest.importorskip("dask.array")
    target = tmp_path / f"f.{ext}"
    WRITERS[ext](dataset()[["fast"]], target)
    before = target.read_bytes()

    def boom(block: np.ndarray) -> np.ndarray:
        raise RuntimeError("a task failed")

    lazy = dask_array.from_array(compressible(), chunks=(60, 250)).map_blocks(boom, dtype="f4")
    with pytest.raises(RuntimeError, match="a task failed"):
        WRITERS[ext](xr.Dataset({"late": (("y", "x"), lazy)}), target, mode=mode)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary left


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_append_keeps_the_files_permissions(tmp_path: Path, ext: str) -> None:
    """``.tet`` and ``.zt`` append by rewriting the file atomically, ``.tgm`` in place: all keep its mode."""
    target = tmp_path / f"p.{ext}"
    WRITERS[ext](dataset()[["fast"]], target)
    target.chmod(0o640)
    WRITERS[ext](dataset()[["plain"]], target, mode="a")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(xr.open_dataset(target, engine="tensogram").data_vars) == ["fast", "plain"]


# -- 4. the docs table is the registry's -----------------------------------------------------------------
def test_the_docs_table_of_encoding_keys_is_built_from_the_codec_objects() -> None:
    text = (ROOT / "docs" / "writing.md").read_text()
    start, end = "<!-- encoding-keys:start -->\n", "<!-- encoding-keys:end -->"
    table = text[text.index(start) + len(start) : text.index(end)]
    expected = markdown_table(tuple(SPECS[ext] for ext in ("tgm", "tet", "zt")))
    assert table == expected, "regenerate docs/writing.md's table with markdown_table():\n" + expected


def test_the_table_lists_each_formats_keys_and_the_codec_defaults() -> None:
    """Read back from the table: per format, exactly the keys it accepts; the zstd row shows the codec's own
    default and range."""
    rows = [line.split(" | ") for line in markdown_table(tuple(SPECS.values())).splitlines()[2:]]
    for column, ext in enumerate(SPECS, start=2):
        listed = {
            key
            for row in rows
            if row[column].strip(" |") != "—"
            for key in re.findall(r"`(\w+)`", row[0]) + re.findall(r"also `(\w+)`", row[column])
        }
        assert listed == set(SPECS[ext].accepted()), ext
    level = next(row for row in rows if row[0] == "| `level`")
    p = ZSTD.param("level")
    assert f"default `{p.default}`; {p.bounds[0]}..{p.bounds[1]}" in level[3]
