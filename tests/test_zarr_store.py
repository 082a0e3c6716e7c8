"""``TensogramStore``: zarr's own store conformance suite, and values against ``open_dataset`` and the reference
decoder for every kind of file the backend reads (samples, tests/data ``.tgm``, ``.tet`` and ``.zt``)."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

zarr = pytest.importorskip("zarr", reason="the Zarr store tests need zarr (the 'zarr' extra)")

from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest  # noqa: E402
from zarr.core.buffer import Buffer, default_buffer_prototype  # noqa: E402
from zarr.core.buffer.cpu import Buffer as CPUBuffer  # noqa: E402
from zarr.core.sync import sync  # noqa: E402
from zarr.testing.store import StoreTests  # noqa: E402

import xarray_tensogram as xt  # noqa: E402
from xarray_tensogram import TensogramStore, UnknownOptionError, ZarrMappingWarning  # noqa: E402
from xarray_tensogram.zarr_meta import nested_attrs  # noqa: E402

DATA = Path(__file__).parent / "data"
PROTO = default_buffer_prototype()
#: dtypes Zarr v3 has no data type for, which the store serves as float32 (exactly)
WIDENED = ("bfloat16", "float8")


def _good_files() -> list[Path]:
    files = [Path(p) for p in xt.sample_paths() if p.endswith((".tgm", ".tet", ".zt"))]
    for ext in ("tgm", "tet", "zt"):
        files += sorted(p for p in DATA.rglob(f"*.{ext}") if "corrupt" not in p.parts)
    return files


def _id(path: Path) -> str:
    return str(path.relative_to(DATA)) if DATA in path.parents else path.name


def _get(store: Any, key: str, byte_range: Any = None) -> bytes | None:
    buf = asyncio.run(store.get(key, PROTO, byte_range))
    return None if buf is None else bytes(buf.to_bytes())


def _collect(iterator: Any) -> list[str]:
    async def run() -> list[str]:
        return [k async for k in iterator]

    return asyncio.run(run())


# -- zarr's conformance suite ----------------------------------------------------------------------------------
class TestZarrStoreSuite(StoreTests[TensogramStore, CPUBuffer]):  # type: ignore[misc, unused-ignore]
    """zarr's ``StoreTests`` over a store opened on an empty ``.tgm``.

    The suite's ``set``/``get`` helpers write and read the backing storage without the store's methods;
    here the backing storage is the key table an open builds (``store._layout.documents``). The ``store``
    fixture empties it after the open, since several tests start from an empty store. What the suite
    checks through it is the store's own ``get`` (byte ranges included), ``get_partial_values``,
    ``getsize``, ``is_empty``, ``_get_many``, the read-only errors, equality and pickling.
    Tests that write through the store itself (``store.set``, ``store._set_many``) are skipped one by one
    below, each with its reason; reading, listing and existence on real files are tested after the class.
    """

    pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the suite's async tests and fixtures
    store_cls = TensogramStore
    buffer_cls = CPUBuffer

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        path = tmp_path / "empty.tgm"
        path.write_bytes(b"")
        return {"path_or_url": str(path)}

    @pytest.fixture
    def store(self, open_kwargs: dict[str, Any]) -> TensogramStore:  # sync: the suite's sync tests use it too
        store = sync(self.store_cls.open(**open_kwargs))
        store._layout.documents.clear()
        return store

    @pytest.fixture
    def store_not_open(self, store_kwargs: dict[str, Any]) -> TensogramStore:
        return self.store_cls(**store_kwargs)

    async def set(self, store: TensogramStore, key: str, value: Buffer) -> None:
        await store._ensure_open()
        store._layout.documents[key] = value.to_bytes()

    async def get(self, store: TensogramStore, key: str) -> Buffer:
        await store._ensure_open()
        return self.buffer_cls.from_bytes(store._layout.documents[key])

    def test_store_repr(self, store: TensogramStore) -> None:
        assert repr(store).startswith("TensogramStore(") and "empty.tgm" in repr(store)

    def test_store_supports_writes(self, store: TensogramStore) -> None:
        assert not store.supports_writes

    def test_store_supports_listing(self, store: TensogramStore) -> None:
        assert store.supports_listing

    def test_store_read_only(self, store: TensogramStore) -> None:  # the suite's asserts a writable store
        assert store.read_only
        with pytest.raises(AttributeError):
            store.read_only = False

    @pytest.mark.parametrize("read_only", [True, False])
    async def test_store_open_read_only(self, open_kwargs: dict[str, Any], read_only: bool) -> None:
        if read_only:
            store = await self.store_cls.open(**open_kwargs, read_only=True)
            assert store._is_open and store.read_only
        else:
            with pytest.raises(ValueError, match="read-only: writing through Zarr is not supported"):
                await self.store_cls.open(**open_kwargs, read_only=False)

    async def test_serializable_store(self, store: TensogramStore) -> None:  # the suite's writes a key to check
        new_store = pickle.loads(pickle.dumps(store))
        assert new_store == store
        assert new_store.read_only
        assert await new_store.get("zarr.json", PROTO) is not None  # reopens the file on first use

    _WRITES = "writes through the store (store.set / store._set_many): the store is read-only"

    @pytest.mark.skip(reason=_WRITES)
    async def test_set(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_set_not_open(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_set_many(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_set_if_not_exists(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_getsize_prefix(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_exists(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES)
    async def test_clear(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES + " (listing: see test_list_* below, on real files)")
    async def test_list(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES + " (listing: see test_list_* below, on real files)")
    async def test_list_prefix(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES + " (listing: see test_list_* below, on real files)")
    async def test_list_empty_path(self) -> None: ...

    @pytest.mark.skip(reason=_WRITES + " (listing: see test_list_* below, on real files)")
    async def test_list_dir(self) -> None: ...


# -- values: the store against open_dataset, for every file the backend reads ----------------------------------
def _expected(ds: xr.Dataset, name: str) -> np.ndarray:
    values = np.asarray(ds[name].values)
    return values.astype(np.float32) if values.dtype.name.startswith(WIDENED) else values


def _zarr_name(name: str) -> str:
    return name.replace("/", "_") or "_"


@pytest.mark.parametrize("path", _good_files(), ids=_id)
def test_open_zarr_equals_open_dataset(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # files with damaged parts warn the same way through both
        try:
            ref = xr.open_dataset(path, engine="tensogram")
        except ValueError as err:  # a file the backend refuses: the store refuses it with the same error
            with pytest.raises(type(err)):
                _collect(TensogramStore(path).list())
            return
        store = TensogramStore(path)
        got = xr.open_zarr(store, consolidated=False, chunks=None)
    with ref:
        assert {_zarr_name(str(n)) for n in ref.variables} == set(got.variables)
        assert {_zarr_name(str(n)) for n in ref.coords} == set(got.coords)
        for name in ref.variables:
            new = _zarr_name(str(name))
            assert tuple(_zarr_name(d) for d in ref[name].dims) == got[new].dims, name
            np.testing.assert_array_equal(got[new].values, _expected(ref, str(name)), err_msg=str(name))
            assert got[new].dtype == _expected(ref, str(name)).dtype, name


def test_zarr_open_group_and_dask_from_zarr_equal_open_dataset() -> None:
    da = pytest.importorskip("dask.array")
    path = xt.sample_path("era_pl.tgm")
    store = TensogramStore(path)
    root = zarr.open_group(store, mode="r")
    with xr.open_dataset(path, engine="tensogram", decode_times=False) as ref:
        for name in ref.data_vars:
            np.testing.assert_array_equal(root[name][...], ref[name].values)
            lazy = da.from_zarr(store, component=name)
            assert lazy.chunks == tuple(
                tuple(c) for c in ref[name].chunk(ref[name].encoding["preferred_chunks"]).chunks
            )
            np.testing.assert_array_equal(lazy.compute(), ref[name].values)


def test_values_equal_the_reference_decoder() -> None:
    """Every chunk of every data variable of the ``.tgm`` samples is an object the reference decoder decodes."""
    tensogram = pytest.importorskip("tensogram")
    for path in (p for p in xt.sample_paths() if p.endswith(".tgm")):
        objects = []
        with tensogram.TensogramFile.open(path) as f:
            for i in range(len(f)):
                _meta, decoded = tensogram.decode(f.read_message(i))
                objects += [np.asarray(arr) for _desc, arr in decoded]
        store = TensogramStore(path)
        root = zarr.open_group(store, mode="r")
        with xr.open_dataset(path, engine="tensogram") as ds:
            names = list(ds.data_vars)
        checked = 0
        for name in names:
            arr = root[name]
            for key in _collect(store.list_prefix(f"{name}/c/")):
                coords = tuple(int(c) for c in key.split("/")[2:])
                block = arr[tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, arr.chunks, strict=True))]
                assert any(_same_object(o, block) for o in objects), key
                checked += 1
        assert checked, path


def _same_object(obj: np.ndarray, block: np.ndarray) -> bool:
    """Whether a chunk (with the stacked message axes of length 1 in front) holds the values of ``obj``."""
    while block.ndim > obj.ndim and block.shape[0] == 1:
        block = block[0]
    return obj.shape == block.shape and obj.dtype == block.dtype and np.array_equal(obj, block, equal_nan=True)


def test_tet_edge_tiles_are_padded_and_read_back(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("y", "x"), np.arange(35, dtype=np.float32).reshape(5, 7))})
    path = tmp_path / "edge.tet"
    xt.to_tetr(ds, path, encoding={"v": {"chunks": (2, 3)}})
    store = TensogramStore(path)
    meta = json.loads(_get(store, "v/zarr.json") or b"")
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [2, 3]
    edge = _get(store, "v/c/2/2")  # rows 4, cols 6: one value, padded to the chunk shape
    assert edge is not None and len(edge) == 2 * 3 * 4
    np.testing.assert_array_equal(xr.open_zarr(store, consolidated=False)["v"].values, ds["v"].values)


# -- the key space of a real file ------------------------------------------------------------------------------
@pytest.fixture
def forecast() -> Any:
    return TensogramStore(xt.sample_path("forecast.tgm"))


def test_list_dir_and_list_prefix(forecast: Any) -> None:
    root = _collect(forecast.list_dir(""))
    assert "zarr.json" in root and {"2t", "msl", "latitude", "step"} <= set(root)
    assert sorted(_collect(forecast.list_dir("2t"))) == ["c", "zarr.json"]
    assert sorted(_collect(forecast.list_dir("2t/"))) == ["c", "zarr.json"]
    assert sorted(_collect(forecast.list_dir("2t/c"))) == ["0", "1", "2", "3"]  # one chunk per step
    assert _collect(forecast.list_dir("2t/c/0/0")) == ["0"]
    assert _collect(forecast.list_dir("nothing")) == []
    assert sorted(_collect(forecast.list_prefix("2t/"))) == [
        "2t/c/0/0/0",
        "2t/c/1/0/0",
        "2t/c/2/0/0",
        "2t/c/3/0/0",
        "2t/zarr.json",
    ]
    assert set(_collect(forecast.list())) >= {"zarr.json", "2t/zarr.json", "2t/c/3/0/0", "latitude/c/0"}


def test_exists_and_missing_keys(forecast: Any) -> None:
    for key in ("zarr.json", "2t/zarr.json", "2t/c/3/0/0", "time/c"):
        assert asyncio.run(forecast.exists(key)), key
    for key in (
        "2t/c/4/0/0",
        "2t/c/0/0",
        "2t/c/a/0/0",
        "2t/c/01/0/0",
        "2t/c/-1/0/0",
        "nothing/zarr.json",
        "2t",
        "2t/c",
    ):
        assert not asyncio.run(forecast.exists(key)), key
        assert _get(forecast, key) is None, key


def test_byte_ranges_on_metadata_and_chunks(forecast: Any) -> None:
    for key in ("zarr.json", "2t/zarr.json", "2t/c/1/0/0"):
        full = _get(forecast, key)
        assert full is not None
        assert _get(forecast, key, RangeByteRequest(3, 17)) == full[3:17]
        assert _get(forecast, key, OffsetByteRequest(5)) == full[5:]
        assert _get(forecast, key, SuffixByteRequest(9)) == full[-9:]
    got = asyncio.run(
        forecast.get_partial_values(
            PROTO, [("zarr.json", RangeByteRequest(0, 1)), ("2t/c/0/0/0", None), ("nope", None)]
        )
    )
    assert got[0].to_bytes() == b"{" and got[2] is None
    assert got[1].to_bytes() == _get(forecast, "2t/c/0/0/0")
    assert asyncio.run(forecast.getsize("2t/c/0/0/0")) == 19 * 36 * 4


def test_equality_repr_and_pickle() -> None:
    path = xt.sample_path("forecast.tgm")
    a, b = TensogramStore(path, message_index=[0, 1]), TensogramStore(path, message_index=[0, 1])
    assert a == b and hash(a) == hash(b)
    assert TensogramStore(path, strict=False, message_index=None) == TensogramStore(path)  # the defaults
    assert a != TensogramStore(path) and a != TensogramStore(xt.sample_path("era_pl.tgm"), message_index=[0, 1])
    assert repr(a) == f"TensogramStore({path!r}, message_index=[0, 1])"
    c = pickle.loads(pickle.dumps(a))
    assert c == a
    np.testing.assert_array_equal(zarr.open_group(c, mode="r")["2t"][...], zarr.open_group(a, mode="r")["2t"][...])
    assert zarr.open_group(a, mode="r")["2t"].shape[0] == 2


def test_options_are_those_of_open_dataset() -> None:
    path = xt.sample_path("forecast.tgm")
    with pytest.raises(UnknownOptionError, match="did you mean 'message_index'"):
        TensogramStore(path, mesage_index=0)
    with pytest.raises(UnknownOptionError, match="decode_times"):
        TensogramStore(path, decode_times=False)  # xarray's CF decoding applies on top of the store
    store = TensogramStore(path, filter_by_keys={"mars.param": "2t"}, drop_variables=["valid_time"])
    names = set(zarr.open_group(store, mode="r").array_keys())
    assert "2t" in names and "msl" not in names and "valid_time" not in names


def test_writes_raise() -> None:
    store = TensogramStore(xt.sample_path("forecast.tgm"))
    for call in (store.set("2t/zarr.json", CPUBuffer.from_bytes(b"{}")), store.delete("2t/zarr.json")):
        with pytest.raises(ValueError, match=r"read-only mode.*to_tensogram"):
            asyncio.run(call)
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_group(store, mode="a").create_array("new", shape=(2,), dtype="f4")


def test_groups_become_zarr_groups(tmp_path: Path) -> None:
    ds_a = xr.Dataset({"t": (("y", "x"), np.arange(6.0).reshape(2, 3))})
    ds_b = xr.Dataset({"t": (("n",), np.arange(4, dtype=np.float32))})
    path = tmp_path / "two.tgm"
    xt.to_tensogram(ds_a, path)
    xt.to_tensogram(ds_b, path, mode="a")
    groups = xr.open_groups(path, engine="tensogram")
    assert len(groups) > 2, "the file should hold two groups"
    store = TensogramStore(path)
    for name, ref in groups.items():
        if name == "/":
            continue
        got = xr.open_zarr(store, group=name.strip("/"), consolidated=False)
        xr.testing.assert_equal(got.reset_coords(drop=True), ref.reset_coords(drop=True))
        one = xr.open_zarr(TensogramStore(path, group=name), consolidated=False)
        xr.testing.assert_equal(one.reset_coords(drop=True), ref.reset_coords(drop=True))


def test_nested_attrs_stay_nested(tmp_path: Path) -> None:
    tensogram = pytest.importorskip("tensogram")
    meta = {"version": 3, "base": [{"name": "v", "mars": {"param": "2t", "levtype": "sfc"}, "cf": {"units": "K"}}]}
    path = str(tmp_path / "attrs.tgm")
    with tensogram.TensogramFile.create(path) as f:
        f.append(meta, [({"type": "ntensor", "shape": [2], "dtype": "float32"}, np.ones(2, np.float32))])
    attrs = dict(zarr.open_group(TensogramStore(path), mode="r")["v"].attrs)
    assert attrs["mars"] == {"param": "2t", "levtype": "sfc"}
    assert attrs["units"] == "K"


def test_nested_attrs_never_drop_a_key() -> None:
    flat = {"mars.class": "od", "mars.type": "fc", "a": 1, "a.b": 2, "x..y": 3, "p.q.r": 4}
    assert nested_attrs(flat) == {
        "mars": {"class": "od", "type": "fc"},
        "a": 1,
        "a.b": 2,
        "x..y": 3,
        "p": {"q": {"r": 4}},
    }
    # a dotted key that is a prefix of a longer one, in either order: both kept, neither overwrites the other
    for flat in ({"s.t.u": 5, "s.t": 6}, {"s.t": 6, "s.t.u": 5}):
        assert nested_attrs(flat) == {"s": {"t": 6}, "s.t.u": 5}


def test_renamed_dimension_follows_its_variable(tmp_path: Path) -> None:
    ds = xr.Dataset({"a/b": (("a/b",), np.arange(3.0)), "v": (("a/b",), np.ones(3))})
    path = tmp_path / "slash.zt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xt.to_ztensor(ds, path)
    with pytest.warns(ZarrMappingWarning, match="'a/b'"):
        got = xr.open_zarr(TensogramStore(path), consolidated=False)
    assert got["v"].dims == ("a_b",)
    np.testing.assert_array_equal(got["a_b"].values, np.arange(3.0))


def test_importing_the_package_does_not_import_zarr() -> None:
    code = "import sys, xarray_tensogram; assert 'zarr' not in sys.modules; xarray_tensogram.TensogramStore"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)


@pytest.mark.parametrize("name", ["sample.tet", "sample.zt", "era_pl.tgm"])
def test_remote_files_over_plain_http(name: str) -> None:
    from servers import RangeHTTPServer

    local = xt.sample_path(name)
    with RangeHTTPServer() as server:
        url = server.add(name, Path(local).read_bytes())
        got = xr.open_zarr(TensogramStore(url), consolidated=False, chunks=None)
        with xr.open_dataset(local, engine="tensogram") as ref:
            xr.testing.assert_equal(got.drop_encoding(), ref.drop_encoding())


def _logical_bytes(values: np.ndarray) -> bytes:
    """The manifest's convention for hashing a tensor: C order, little-endian, bool as one 0/1 byte."""
    values = np.ascontiguousarray(values)
    values = values.astype(np.uint8) if values.dtype.kind == "b" else values.astype(values.dtype.newbyteorder("<"))
    return values.tobytes()


def _manifest_dtype(name: str) -> np.dtype:
    """A dtype as the manifest spells it (``float32`` in v0.1 files, ``f32`` in later ones)."""
    short = {"f": "float", "i": "int", "u": "uint"}
    return np.dtype(name if name[0] not in short or not name[1:].isdigit() else short[name[0]] + name[1:])


def test_zt_values_equal_the_reference_writers_manifest() -> None:
    """Every dense tensor of the zTensor test files (written by the reference writers), read through the store,
    hashes to the SHA-256 the fixture manifest records for it."""
    import hashlib

    manifest = json.loads((DATA / "ztensor" / "MANIFEST.json").read_text())
    compared = 0
    for entry in manifest["files"]:
        names = [t["name"] for t in entry["tensors"]]
        # a name given to two tensors is one variable, by the backend's rule (checked against open_dataset above)
        dense = [
            t
            for t in entry["tensors"]
            if "sha256" in t and t.get("layout", "dense") == "dense" and names.count(t["name"]) == 1
        ]
        if not dense:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # renamed names and widened dtypes warn
            root = zarr.open_group(TensogramStore(DATA / "ztensor" / entry["path"]), mode="r")
        for tensor in dense:
            got = root[_zarr_name(tensor["name"])][...]
            if tensor["dtype"] in ("bfloat16", "bf16"):  # served as float32, whose upper half is the stored word
                assert got.dtype == np.float32 and not (got.view(np.uint32) & 0xFFFF).any()
                got = (got.view(np.uint32) >> 16).astype(np.uint16)
            elif got.dtype != _manifest_dtype(tensor["dtype"]):  # bytes the file's metadata retypes (fp8 in u8):
                continue  # compared with open_dataset above
            assert list(got.shape) == tensor["shape"], (entry["path"], tensor["name"])
            digest = hashlib.sha256(_logical_bytes(got)).hexdigest()
            assert digest == tensor["sha256"], (entry["path"], tensor["name"])
            compared += 1
    assert compared >= 100
