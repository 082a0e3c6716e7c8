"""``await ds.load_async()`` gives what ``ds.load()`` gives: every format, from disk and over HTTP, with and
without Dask (xarray computes Dask-backed variables itself and awaits the lazy ones, which read through
``LazyChunkedArray.async_getitem``). The chunk reads running at once is checked in test_lazy_array.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import xarray as xr

from servers import RangeHTTPServer
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE

SAMPLES = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples"
#: one sample per format, and the .tgm whose variables span many messages (one chunk each)
NAMES = ["era_pl.tgm", "forecast.tgm", "sample.tet", "sample.zt"]


@pytest.fixture(scope="module")
def http():
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    with RangeHTTPServer({"/" + name: (SAMPLES / name).read_bytes() for name in NAMES}) as server:
        yield server


async def _load_async(source: str, chunks: dict | None) -> xr.Dataset:
    with xr.open_dataset(source, engine=ENGINE, chunks=chunks) as ds:
        lazy = [k for k, v in ds.variables.items() if not v._in_memory]
        assert lazy, "nothing left to load lazily"
        loaded = await ds.load_async()
        assert loaded is ds and all(ds.variables[k]._in_memory for k in lazy)
        return ds


@pytest.mark.parametrize("chunks", [None, {}], ids=["numpy", "dask"])
@pytest.mark.parametrize("where", ["local", "http"])
@pytest.mark.parametrize("name", NAMES)
def test_load_async_equals_load(name, where, chunks, request):
    source = str(SAMPLES / name) if where == "local" else request.getfixturevalue("http").url(name)
    got = asyncio.run(_load_async(source, chunks))
    with xr.open_dataset(source, engine=ENGINE, chunks=chunks) as ds:
        expected = ds.load()
    xr.testing.assert_identical(got, expected)
    for k, v in got.variables.items():
        assert v.dtype == expected[k].dtype


def test_load_async_of_a_selection_equals_load():
    """An indexed selection (outer and vectorized keys) reads the same values asynchronously."""
    with xr.open_dataset(SAMPLES / "era_pl.tgm", engine=ENGINE) as ds:
        dims = list(ds.dims)
        picks = {d: [ds.sizes[d] - 1, 0] for d in dims[:2]}
        outer = ds.isel(picks)
        expected = outer.load().copy(deep=True)
    with xr.open_dataset(SAMPLES / "era_pl.tgm", engine=ENGINE) as ds:
        got = asyncio.run(ds.isel(picks).load_async())
    xr.testing.assert_identical(got, expected)
    with xr.open_dataset(SAMPLES / "era_pl.tgm", engine=ENGINE) as ds:
        point = {d: xr.DataArray([0, ds.sizes[d] - 1], dims="p") for d in dims[:2]}
        expected = ds.isel(point).load().copy(deep=True)
        got = asyncio.run(ds.isel(point).load_async())
    xr.testing.assert_identical(got, expected)
