"""Virtual Zarr (issue 17): parsers -> kerchunk refs (JSON, Parquet) / Icechunk -> any Zarr reader.

The oracle for every file is this package's backend (``xr.open_dataset(path, engine="tensogram")``),
itself checked against the reference implementations elsewhere; where this module builds its own
files it uses the reference encoder (``tensogram``) or numpy arrays it wrote, and compares with those.
Readers on the other side are not ours: kerchunk's xarray engine (Zarr v2 via fsspec) and
``xr.open_zarr`` on an Icechunk session (Zarr v3).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib
import xarray as xr

# the whole module needs the 'virtual' extra (pip install ".[test,codecs,virtual]")
pytest.importorskip("virtualizarr", reason="the virtual Zarr tests need the 'virtual' extra")

from servers import CountingMotoServer, RangeHTTPServer, make_era
from xarray_tensogram import open_tensogram
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE
from xarray_tensogram.errors import UnsupportedError, UnsupportedOptionError, XarrayTensogramError
from xarray_tensogram.virtual import (
    TensogramParser,
    TetrParser,
    VirtualMappingWarning,
    ZTensorParser,
    kerchunk_refs,
    open_virtual_dataset,
    write_refs,
)
from xarray_tensogram.virtual.refs import file_url, local_registry, registry_for

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification"),
    pytest.mark.filterwarnings("ignore:.*fastparquet"),
    pytest.mark.filterwarnings("ignore:.*future.infer_string"),
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
    pytest.mark.filterwarnings("ignore::xarray_tensogram.errors.VirtualMappingWarning"),
    # the every-file test opens damaged/edge files on purpose (their mapping warnings are the backend's,
    # tested elsewhere), and files whose variables are all inlined have no byte range to reference
    pytest.mark.filterwarnings("ignore::xarray_tensogram.errors.TensogramMappingWarning"),
    pytest.mark.filterwarnings("ignore::xarray_tensogram.errors.ZTensorMappingWarning"),
    pytest.mark.filterwarnings("ignore:Attempting to write an entirely non-virtual Dataset"),
]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "xarray_tensogram" / "samples"
EXT = {"tensogram": ".tgm", "tetr": ".tet", "ztensor": ".zt"}
OUR_CODECS = ("xarray_tensogram.tgm_frame", "xarray_tensogram.tet_tile")


def data_files(fmt: str) -> list[Path]:
    folder = DATA / fmt
    return sorted(p for p in folder.rglob("*" + EXT[fmt]) if "corrupt" not in p.parts)


def backend_groups(path: Path, **kw: Any) -> dict[str | None, xr.Dataset] | XarrayTensogramError:
    """Our backend's reading of a file, one Dataset per group (None: the only one), or its error."""
    try:
        groups = xr.open_groups(path, engine=ENGINE, **kw)
    except XarrayTensogramError as exc:
        return exc
    named = {k: v for k, v in groups.items() if k != "/" or len(groups) == 1}
    if len(named) == 1:
        return {None: next(iter(named.values()))}
    return {k.strip("/"): v for k, v in named.items() if v.variables}


def unrepresentable(ds: xr.Dataset) -> set[str]:
    """Variables Zarr cannot hold (worked out independently of the parsers): names with '/', empty names,
    dtypes outside Zarr's data types (ml_dtypes bfloat16/float8)."""
    out = set()
    for name, var in ds.variables.items():
        bad_dtype = var.dtype.kind == "V" or var.dtype.name.startswith(("bfloat", "float8"))
        if not str(name) or "/" in str(name) or bad_dtype:
            out.add(str(name))
    return out


def assert_same(got: xr.Dataset, expected: xr.Dataset) -> None:
    """Identical dims, coords, attrs and values (NaN positions included: assert_identical treats NaN == NaN)."""
    xr.testing.assert_identical(got.load(), expected.load())


def parse(path: Path, parser: Any) -> tuple[xr.Dataset, set[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vds = open_virtual_dataset(path, parser=parser)
    left_out = {
        re.search(r"variable '(.*?)'", str(w.message)).group(1)  # type: ignore[union-attr]  # every warning names one
        for w in caught
        if issubclass(w.category, VirtualMappingWarning)
    }
    return vds, left_out


def open_refs(refs: Any, **kw: Any) -> xr.Dataset:
    return xr.open_dataset(refs, engine="kerchunk", decode_timedelta=True, **kw)


PARSERS = {"tensogram": TensogramParser, "tetr": TetrParser, "ztensor": ZTensorParser}


# -- every file of the test data, JSON and Parquet ----------------------------------------------------------
@pytest.mark.parametrize("fmt", ["tensogram", "tetr", "ztensor"])
def test_every_file_through_kerchunk_json_and_parquet(fmt: str, tmp_path: Path) -> None:
    files = data_files(fmt)
    assert len(files) > 10
    checked = 0
    for i, path in enumerate(files):
        expected = backend_groups(path)
        if isinstance(expected, XarrayTensogramError):  # the parser refuses what the backend refuses
            with pytest.raises(type(expected)):
                open_virtual_dataset(path, parser=PARSERS[fmt]())
            continue
        for group, exp in expected.items():
            vds, left_out = parse(path, PARSERS[fmt](group=group))
            assert left_out == unrepresentable(exp), path
            exp = exp.drop_vars(left_out)
            # JSON for every file; Parquet (slower to write) for every fourth file and every file with
            # zero-size arrays, whose chunk sizes Parquet references divide by
            zero_size = any(0 in v.shape for v in exp.variables.values())
            short = all(len(str(n).encode()) <= 200 for n in vds.variables)  # Parquet: a directory per variable
            suffix = ".parquet" if (i % 4 == 0 or zero_size) and short else ".json"
            out = tmp_path / f"{i}_{group}{suffix}"
            write_refs(vds, out)
            assert_same(open_refs(str(out)), exp)
            checked += 1
    assert checked >= len(files) - 3


# -- Tensogram pipelines: standard codecs where they fit, the frame codec elsewhere ----------------------
def _tgm(tmp_path: Path, name: str, objects: list[tuple[dict[str, Any], np.ndarray]], **kw: Any) -> Path:
    """One message per object (mars.step = 6 * i), written by the reference encoder."""
    tensogram = pytest.importorskip("tensogram")
    parts = []
    for i, (desc, values) in enumerate(objects):
        meta = {
            "base": [
                {
                    "name": "t",
                    "mars": {"param": "t", "step": 6 * i, "date": 20240101, "time": 0},
                    "dim_names": ["y", "x"],
                }
            ]
        }
        parts.append(tensogram.encode(meta, [({"type": "ntensor", "shape": list(values.shape), **desc}, values)], **kw))
    path = tmp_path / name
    path.write_bytes(b"".join(parts))
    return path


def _codec_names(vds: xr.Dataset, var: str) -> list[str]:
    return [c["name"] for c in vds[var].data.metadata.to_dict()["codecs"]]


def _reference_values(path: Path) -> np.ndarray:
    """The reference decoder's values of object 0 of every message, stacked."""
    tensogram = pytest.importorskip("tensogram")
    data = path.read_bytes()
    out = []
    with open_tensogram(path) as f:  # our framing only splits the messages; the reference decodes them
        for msg in f:
            decoded = tensogram.decode(data[msg.offset : msg.offset + msg.length])
            out.append(np.asarray(decoded.objects[0][1]))
    return np.stack(out)


def _field(seed: int, dtype: str = "f8") -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (280 + 10 * rng.standard_normal((6, 8))).astype(dtype)


@pytest.mark.parametrize("case", ["zstd", "shuffle_zstd", "raw_big_endian"])
def test_tensogram_standard_codecs_only(case: str, tmp_path: Path) -> None:
    desc = {
        "dtype": "float32",
        "zstd": {"compression": "zstd"},
        "shuffle_zstd": {"compression": "zstd", "filter": "shuffle", "shuffle_element_size": 4},
        "raw_big_endian": {"byte_order": "big"},
    }[case]
    desc = {"dtype": "float32", **desc}
    path = _tgm(tmp_path, f"{case}.tgm", [(desc, _field(s, "f4")) for s in range(3)])
    vds, _ = parse(path, TensogramParser())
    names = _codec_names(vds, "t")
    assert not set(names) & set(OUR_CODECS), names
    refs = kerchunk_refs(vds)
    got = open_refs(refs)
    assert_same(got, xr.open_dataset(path, engine=ENGINE))
    np.testing.assert_array_equal(got["t"].values, _reference_values(path))
    # a reader without our codecs: a fresh interpreter that never loads xarray_tensogram.virtual.codecs
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    np.save(tmp_path / "expected.npy", _reference_values(path))
    code = (
        "import sys, numpy as np, xarray as xr; ds = xr.open_dataset(sys.argv[1], engine='kerchunk'); "
        "np.testing.assert_array_equal(ds['t'].values, np.load(sys.argv[2])); "
        "assert 'xarray_tensogram.virtual.codecs' not in sys.modules"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "refs.json"), str(tmp_path / "expected.npy")],
        check=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_tensogram_frame_codec_every_pipeline(tmp_path: Path) -> None:
    """simple_packing, szip, lz4, NaN/Inf masks and zstd in one variable: the frame codec decodes each object."""
    tensogram = pytest.importorskip("tensogram")
    nan_field = _field(3)
    nan_field[1, ::3] = np.nan
    nan_field[4, 2] = np.inf
    packed = _field(1)
    objects = [
        ({"dtype": "float64", "compression": "zstd"}, _field(0)),
        (
            {
                "dtype": "float64",
                "encoding": "simple_packing",
                **tensogram.compute_packing_params(packed.ravel(), 16, 0),
            },
            packed,
        ),
        (
            {
                "dtype": "float64",
                "encoding": "simple_packing",
                **tensogram.compute_packing_params(_field(2).ravel(), 16, 0),
                "compression": "szip",
                "szip_rsi": 2,
                "szip_block_size": 8,
                "szip_flags": 8,
            },
            _field(2),
        ),
        ({"dtype": "float64", "compression": "zstd", "filter": "shuffle", "shuffle_element_size": 8}, nan_field),
        ({"dtype": "float64", "compression": "lz4"}, _field(4)),
    ]
    path = _tgm(tmp_path, "mixed.tgm", objects, allow_nan=True, allow_inf=True)
    vds, _ = parse(path, TensogramParser())
    assert "xarray_tensogram.tgm_frame" in _codec_names(vds, "t")
    got = open_refs(kerchunk_refs(vds))
    assert_same(got, xr.open_dataset(path, engine=ENGINE))
    ref = _reference_values(path)
    np.testing.assert_array_equal(got["t"].values, ref)
    assert np.isnan(got["t"].values[3, 1, ::3]).all() and got["t"].values[3, 4, 2] == np.inf


def test_hypercube_hole_reads_as_nan(tmp_path: Path) -> None:
    """A missing (step, level) combination has no chunk: Zarr fills it with NaN, as the backend does."""
    tensogram = pytest.importorskip("tensogram")
    parts = []
    for step in (0, 6):
        for level in (500, 850):
            if (step, level) == (6, 850):
                continue
            meta = {"base": [{"name": "t", "mars": {"param": "t", "step": step, "levelist": level}}]}
            parts.append(
                tensogram.encode(
                    meta,
                    [({"type": "ntensor", "shape": [3, 4], "dtype": "float32"}, np.full((3, 4), step + level, "f4"))],
                )
            )
    path = tmp_path / "holes.tgm"
    path.write_bytes(b"".join(parts))
    vds, _ = parse(path, TensogramParser())
    got = open_refs(kerchunk_refs(vds))
    expected = xr.open_dataset(path, engine=ENGINE)
    assert_same(got, expected)
    assert np.isnan(got["t"].sel(step=np.timedelta64(6, "h"), level=850)).all()


# -- Tetration edge tiles ----------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_tetr_edge_tiles_with_equal_sizes(compression: str | None, tmp_path: Path) -> None:
    """Square array, square tiles: clipped tiles of equal size along both axes (only the byte-range length
    tells them apart), plus a corner tile."""
    import xarray_tensogram as xt

    values = np.arange(10 * 10, dtype="f4").reshape(10, 10) * 1.5
    ints = np.arange(10 * 10, dtype="i8").reshape(10, 10) - 50
    ds = xr.Dataset({"a": (("y", "x"), values), "n": (("y", "x"), ints)})
    path = tmp_path / "edges.tet"
    xt.to_tetr(ds, path, chunks={"y": 4, "x": 4}, compression=compression)
    vds, _ = parse(path, TetrParser())
    assert "xarray_tensogram.tet_tile" in _codec_names(vds, "a")
    got = open_refs(kerchunk_refs(vds))
    np.testing.assert_array_equal(got["a"].values, values)
    np.testing.assert_array_equal(got["n"].values, ints)
    assert got["n"].dtype == ints.dtype  # no fill-value masking turned integers into floats
    assert_same(got, xr.open_dataset(path, engine=ENGINE))


# -- Icechunk -------------------------------------------------------------------------------------------
def _icechunk_roundtrip(vds: xr.Dataset, folder: Path, data_dir: Path) -> xr.Dataset:
    icechunk = pytest.importorskip("icechunk")
    prefix = file_url(data_dir) + "/"
    config = icechunk.RepositoryConfig.default()
    store = icechunk.local_filesystem_store(str(data_dir))
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(folder)), config, authorize_virtual_chunk_access={prefix: None}
    )
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    session.commit("virtual references")
    reader = repo.readonly_session("main")
    return xr.open_zarr(reader.store, consolidated=False, zarr_format=3, chunks=None, decode_timedelta=True)


def test_icechunk_repository_on_local_disk(tmp_path: Path) -> None:
    files = [
        *sorted(SAMPLES.iterdir()),
        DATA / "tetr" / "edge_chunks_3d.tet",
        DATA / "tetr" / "zstd_multiblock.tet",
        DATA / "ztensor" / "v0_1" / "rust_0_1_4" / "big_endian.zt",
        DATA / "ztensor" / "v1" / "sparse.zt",
        DATA / "tensogram" / "upstream" / "ten-msg.tgm",
    ]
    for i, path in enumerate(files):
        if path.suffix not in EXT.values():
            continue
        vds, left_out = parse(path, None)
        got = _icechunk_roundtrip(vds, tmp_path / f"repo{i}", path.parent)
        assert_same(got, xr.open_dataset(path, engine=ENGINE).drop_vars(left_out))


def test_icechunk_frame_codec(tmp_path: Path) -> None:
    tensogram = pytest.importorskip("tensogram")
    packed = _field(1)
    path = _tgm(
        tmp_path,
        "packed.tgm",
        [
            (
                {
                    "dtype": "float64",
                    "encoding": "simple_packing",
                    **tensogram.compute_packing_params(packed.ravel(), 12, 0),
                },
                packed,
            ),
            ({"dtype": "float64", "compression": "zstd"}, _field(2)),
        ],
    )
    vds, _ = parse(path, TensogramParser())
    got = _icechunk_roundtrip(vds, tmp_path / "repo", tmp_path)
    assert_same(got, xr.open_dataset(path, engine=ENGINE))
    np.testing.assert_array_equal(got["t"].values, _reference_values(path))


# -- many files: open_virtual_mfdataset ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def era_steps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The ERA-like cube of 20 steps (reference encoder) and the same 20 messages as single-step files."""
    pytest.importorskip("tensogram")
    folder = tmp_path_factory.mktemp("era_virtual")
    whole = folder / "era.tgm"
    whole.write_bytes(make_era(19, 36, steps=20, compression="zstd"))
    data = whole.read_bytes()
    singles = []
    with open_tensogram(whole) as f:
        for i, msg in enumerate(f):
            p = folder / f"step_{i:02d}.tgm"
            p.write_bytes(data[msg.offset : msg.offset + msg.length])
            singles.append(p)
    return whole, singles


def test_open_virtual_mfdataset_combines_along_step(era_steps: tuple[Path, list[Path]], tmp_path: Path) -> None:
    from virtualizarr import open_virtual_mfdataset

    whole, singles = era_steps
    assert len(singles) == 20
    urls = [file_url(p) for p in singles]
    combined = open_virtual_mfdataset(
        urls,
        registry=local_registry(),
        parser=TensogramParser(),
        combine="nested",
        concat_dim="step",
        data_vars="all",
        coords="different",
        compat="equals",
        combine_attrs="override",
    )
    expected = _whole_file_expected(whole)
    assert_same(open_refs(kerchunk_refs(combined)), expected)
    write_refs(combined, tmp_path / "era.parquet")
    assert_same(open_refs(str(tmp_path / "era.parquet")), expected)


def _whole_file_expected(whole: Path) -> xr.Dataset:
    """The backend's reading of the concatenated file. Its ``step`` carries ``long_name`` only when ``step``
    is a dimension: a single-step file (what the references are built from) has none, exactly as
    ``xr.open_mfdataset`` over our backend would give, so that one attribute is not compared."""
    expected = xr.open_dataset(whole, engine=ENGINE)
    expected["step"].attrs.pop("long_name")
    return expected


def test_cli_refs_many_files(era_steps: tuple[Path, list[Path]], tmp_path: Path) -> None:
    from xarray_tensogram.cli import main

    whole, singles = era_steps
    expected = _whole_file_expected(whole)
    for out in (tmp_path / "refs.json", tmp_path / "refs.parquet"):
        assert main(["refs", *map(str, singles), "-o", str(out), "--concat-dim", "step", "--no-progress"]) == 0
        assert_same(open_refs(str(out)), expected)
    assert main(["refs", str(SAMPLES / "sample.zt"), "-o", str(tmp_path / "zt.json")]) == 0
    assert_same(open_refs(str(tmp_path / "zt.json")), xr.open_dataset(SAMPLES / "sample.zt", engine=ENGINE))


# -- remote files ----------------------------------------------------------------------------------------
_REMOTE = ["forecast.tgm", "sample.tet", "sample.zt"]


def test_references_to_files_on_http_server(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    files = {"/" + n: (SAMPLES / n).read_bytes() for n in _REMOTE}
    with RangeHTTPServer(files) as server:
        for name in _REMOTE:
            url = server.url(name)
            vds = open_virtual_dataset(url, registry=registry_for([url]))
            refs = kerchunk_refs(vds)
            assert any(isinstance(v, list) and v[0] == url for v in refs["refs"].values())
            server.traffic.reset()
            got = open_refs(refs, storage_options={"remote_protocol": "http"})
            assert_same(got, xr.open_dataset(SAMPLES / name, engine=ENGINE))
            assert server.traffic.gets >= 1 and all(r[2] for r in server.traffic.requests if r[0] == "GET")


def test_references_to_files_on_s3_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s3fs = pytest.importorskip("s3fs")
    server = CountingMotoServer().start()
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint_url)  # even a misconfigured client stays local
    try:
        options = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": server.endpoint_url, "region_name": "eu-west-1"},
        }
        fs = s3fs.S3FileSystem(**options)
        fs.mkdir("virtual")
        for name in _REMOTE:
            fs.pipe_file(f"virtual/{name}", (SAMPLES / name).read_bytes())
        # every file is parsed before any is read back: kerchunk's s3 reader leaves fsspec's
        # shared event loop closed behind it, which later fsspec calls in this process cannot use
        all_refs = {
            name: kerchunk_refs(open_virtual_dataset(f"s3://virtual/{name}", storage_options=options))
            for name in _REMOTE
        }
        for name, refs in all_refs.items():
            assert any(isinstance(v, list) and v[0] == f"s3://virtual/{name}" for v in refs["refs"].values())
            got = open_refs(refs, storage_options={"remote_protocol": "s3", "remote_options": options})
            assert_same(got, xr.open_dataset(SAMPLES / name, engine=ENGINE))
    finally:
        server.stop()


# -- options, errors, registration -----------------------------------------------------------------------
def test_parser_options_match_open_dataset() -> None:
    path = DATA / "tensogram" / "upstream" / "multi_object.tgm"
    dims = {"object_0": ["n"]}
    vds, _ = parse(path, TensogramParser(dim_names=dims))
    assert_same(open_refs(kerchunk_refs(vds)), xr.open_dataset(path, engine=ENGINE, dim_names=dims))
    era = SAMPLES / "forecast.tgm"
    kw = {"filter_by_keys": {"mars.param": "2t"}, "variable_key": "mars.param"}
    vds, _ = parse(era, TensogramParser(**kw))
    assert_same(open_refs(kerchunk_refs(vds)), xr.open_dataset(era, engine=ENGINE, **kw))
    tet = SAMPLES / "sample.tet"
    kw2 = {"dim_names": {"tp": ["la", "lo"]}}
    vds, _ = parse(tet, TetrParser(**kw2))
    assert_same(open_refs(kerchunk_refs(vds)), xr.open_dataset(tet, engine=ENGINE, **kw2))


@pytest.mark.parametrize(
    "kw",
    [
        {"message_index": -1},
        {"message_index": [2, 0]},
        {"message_index": slice(1, None, 2)},
        {"message_index": 1, "merge_objects": False},
    ],
    ids=["int", "list", "slice", "one"],
)
def test_parser_message_index_matches_open_dataset(kw: dict[str, Any]) -> None:
    """message_index (and merge_objects) select messages as open_dataset does, and every chunk of the
    references lies inside a selected message (message extents from our framing of the file)."""
    path = SAMPLES / "forecast.tgm"
    vds, _ = parse(path, TensogramParser(**kw))
    refs = kerchunk_refs(vds)
    expected = xr.open_dataset(path, engine=ENGINE, **kw)
    assert_same(open_refs(refs), expected)
    with open_tensogram(path) as f:
        extents = [(m.offset, m.offset + m.length) for m in f]
    index = kw["message_index"]
    wanted = [
        extents[i]
        for i in (
            index if isinstance(index, list) else range(len(extents))[index] if isinstance(index, slice) else [index]
        )
    ]
    assert expected.sizes.get("step", 1) == len(wanted) < len(extents)
    chunks = [v for k, v in refs["refs"].items() if k.startswith(("2t/", "msl/")) and isinstance(v, list)]
    assert len(chunks) == 2 * len(wanted)
    assert all(any(a <= v[1] and v[1] + v[2] <= b for a, b in wanted) for v in chunks)
    assert {a for a, b in wanted} == {a for a, b in wanted if any(a <= v[1] < b for v in chunks)}


def test_wrong_parser_and_options_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="TetrParser"):
        open_virtual_dataset(SAMPLES / "sample.tet", parser=ZTensorParser())
    with pytest.raises(UnsupportedOptionError, match="variable_key"):
        open_virtual_dataset(SAMPLES / "sample.zt", parser=ZTensorParser(variable_key="name"))
    with pytest.raises(UnsupportedOptionError, match="message_index"):
        open_virtual_dataset(SAMPLES / "sample.tet", parser=TetrParser(message_index=0))


def test_codec_entry_points_resolve() -> None:
    """The entry points in pyproject.toml name the codec classes (so an installed package registers them)."""
    import importlib

    from xarray_tensogram.virtual import codecs

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in ("numcodecs.codecs", "zarr.codecs"):
        assert set(meta[group]) == set(OUR_CODECS)
        for name, target in meta[group].items():
            module, attr = target.split(":")
            cls = getattr(importlib.import_module(module), attr)
            if group == "numcodecs.codecs":
                assert cls.codec_id == name
            else:
                assert cls.from_dict({"name": name, "configuration": {}}).to_dict()["name"] == name
    assert codecs.TetrTileCodec("<f4", [2, 2]).get_config()["id"] == "xarray_tensogram.tet_tile"


def test_frame_codec_rejects_damaged_frames() -> None:
    from xarray_tensogram.virtual.codecs import TensogramFrameCodec

    with open_tensogram(SAMPLES / "forecast.tgm") as f:
        ref = f[0].objects[0]
        frame = (SAMPLES / "forecast.tgm").read_bytes()[ref.frame_offset : ref.frame_offset + ref.frame_length]
    codec = TensogramFrameCodec()
    np.testing.assert_array_equal(
        np.frombuffer(codec.decode(frame), "<f4"), open_tensogram(SAMPLES / "forecast.tgm")[0].read_object(0).ravel()
    )
    with pytest.raises(XarrayTensogramError):
        codec.decode(frame[:-5])
    with pytest.raises(XarrayTensogramError):
        codec.decode(b"\0" * 40)
