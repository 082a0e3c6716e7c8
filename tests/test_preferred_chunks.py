"""The storage unit is the preferred chunk (issue 26): one Tensogram object, one Tetration tile, one zTensor tensor.

``chunks={}`` gives one Dask chunk per unit, chunking along units never warns, ``chunks="auto"`` gives whole
multiples of the unit read by one task each, and an open without ``chunks`` does not import ``dask.array``.
The units are taken from the files themselves (the reference ``tensogram`` decoder's object shapes, the
Tetration directory's tile shape, the zTensor index), not from our encoding.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt

SAMPLES = ("era_pl.tgm", "forecast.tgm", "grib_pl.tgm", "sample.tet", "sample.zt")


def _grid(shape: tuple[int, ...], unit: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(min(u, n - i) for i in range(0, n, u)) for n, u in zip(shape, unit, strict=True))


def _units(name: str, ds: xr.Dataset) -> dict[str, tuple[int, ...]]:
    """The storage unit of each data variable, from the file's own description of it."""
    path = xt.sample_path(name)
    out: dict[str, tuple[int, ...]] = {}
    if name.endswith(".tet"):
        with xt.open_tetr(path) as t:
            for d in t.datasets:
                out[d.name] = tuple(min(c, n) for c, n in zip(d.chunk_shape, d.shape, strict=True))
        return out
    if name.endswith(".zt"):
        ztensor = pytest.importorskip("ztensor")
        with ztensor.Reader(str(path)) as reader:
            for var in ds.data_vars:
                out[str(var)] = tuple(int(s) for s in reader.read_tensor(str(var)).shape)
        return out
    tensogram = pytest.importorskip("tensogram")
    ref = tensogram.TensogramFile.open(str(path))
    shapes = {tuple(a.shape) for i in range(len(ref)) for _, a in ref[i].objects}
    for var in ds.data_vars:
        v = ds[var]
        stacked = set(v.encoding.get("tensogram_message_keys", {}))
        inner = tuple(n for d, n in v.sizes.items() if d not in stacked)
        assert inner in shapes, (var, inner, shapes)  # one decoded object of the reference
        out[str(var)] = tuple(1 if d in stacked else n for d, n in v.sizes.items())
    return out


@pytest.mark.parametrize("name", SAMPLES)
def test_chunks_empty_dict_is_one_dask_chunk_per_storage_unit(name: str) -> None:
    for limit in ("1B", "128MiB"):  # whatever Dask's chunk size
        with (
            dask.config.set({"array.chunk-size": limit}),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("error")  # no "the specified chunks separate the stored chunks"
            ds = xr.open_dataset(xt.sample_path(name), engine="tensogram", chunks={})
        with ds:
            units = _units(name, ds)
            assert units
            for var, unit in units.items():
                assert tuple(ds[var].encoding["preferred_chunks"][d] for d in ds[var].dims) == unit
                assert ds[var].chunks == _grid(ds[var].shape, unit), var


def test_chunking_along_tiles_as_the_readme_does_gives_no_warning() -> None:
    path = xt.sample_path("sample.tet")
    with xr.open_dataset(path, engine="tensogram") as ds:
        names = list(ds.data_vars)
        recipes = {n: dict(zip(ds[n].dims, ds[n].encoding["tetr_chunk_shape"], strict=True)) for n in names}
    for n, chunks in recipes.items():
        others = [o for o in names if o != n]  # their tiles differ (and would rightly warn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with xr.open_dataset(path, engine="tensogram", chunks=chunks, drop_variables=others) as ds:
                assert ds[n].chunks == _grid(ds[n].shape, tuple(chunks.values()))


@pytest.mark.parametrize("chunks", [{"step": 1}, {"step": 2}, {"step": 1, "level": 3}])
def test_chunking_along_messages_gives_no_warning(chunks: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with xr.open_dataset(xt.sample_path("era_pl.tgm"), engine="tensogram", chunks=chunks) as ds:
            assert ds["t"].chunks is not None and set(ds["t"].chunks[0]) == {chunks["step"]}


@pytest.mark.parametrize("name", SAMPLES)
def test_chunks_auto_are_whole_units_read_by_one_task_each(name: str) -> None:
    """Dask's "auto" rule with the unit as the previous chunks: whole multiples of it, one task per chunk
    (the lazy array reads all the units of a chunk in one call: no per-unit tasks behind a rechunk)."""
    with dask.config.set({"array.chunk-size": "64KiB"}), warnings.catch_warnings():  # above every unit
        warnings.simplefilter("error")
        ds = xr.open_dataset(xt.sample_path(name), engine="tensogram", chunks="auto")
    with ds, xr.open_dataset(xt.sample_path(name), engine="tensogram") as eager:
        for var, unit in _units(name, ds).items():
            v = ds[var]
            for sizes, u in zip(v.chunks, unit, strict=True):
                assert all(c % u == 0 for c in sizes[:-1]), (var, v.chunks, unit)
            graph = v.data.__dask_graph__()
            assert len(graph) == v.data.npartitions + 1  # one task per chunk, plus the array they read
            np.testing.assert_array_equal(v.values, eager[var].values)


_PROBE = """
import json, sys
import {backend} as _
import xarray as xr
{opener}
print(json.dumps(sorted(m for m in sys.modules if m == "dask" or m.startswith("dask."))))
"""


def _dask_modules(backend: str, opener: str) -> set[str]:
    code = _PROBE.format(backend=backend, opener=opener)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_opening_without_chunks_does_not_import_dask_array(tmp_path: Path) -> None:
    """The issue's one-liner, in a fresh process: no ``dask.array``, and no more of Dask than xarray's own
    netCDF backend imports opening a file with an indexed coordinate (xarray asks ``dask.base`` whether
    an index's values are a Dask collection, whatever the backend)."""
    ours = _dask_modules(
        "xarray_tensogram",
        "import xarray_tensogram as xt\n"
        "xr.open_dataset(xt.sample_path('era_pl.tgm'), engine='tensogram')\n"
        "xr.open_dataset(xt.sample_path('sample.tet'), engine='tensogram')\n"
        "xr.open_dataset(xt.sample_path('sample.zt'), engine='tensogram')",
    )
    assert "dask.array" not in ours
    nc = tmp_path / "x.nc"
    with xr.Dataset(
        {"t": (("step", "lat"), np.zeros((2, 3)))}, coords={"step": [0, 6], "lat": [0.0, 1.0, 2.0]}
    ) as plain:
        plain.to_netcdf(nc, engine="h5netcdf")
    theirs = _dask_modules("h5netcdf", f"xr.open_dataset({str(nc)!r}, engine='h5netcdf').t.values")
    assert ours <= theirs, sorted(ours - theirs)
