"""The format contract: one set of tests over every registered format (zarr-python's ``StoreTests`` pattern).

Each registered format is exercised through the same engine with a bundled sample of it: opening,
lazy indexing of every kind (basic, outer, vectorized) against numpy on the loaded values,
``chunks={}`` against the declared storage unit, pickling, truncation and junk (package errors that
name the file), writing with the format's own writer (named in its record) and reading back, and
virtual Zarr references. A new format gets all of this by registering and shipping a sample.
"""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram import errors
from xarray_tensogram.formats import registry
from xarray_tensogram.formats.registry import FormatSpec


def _sample_of(spec: FormatSpec) -> str:
    """The first bundled sample whose extension is the format's (every format ships one)."""
    return next(p for p in xt.sample_paths() if os.path.splitext(p)[1] in spec.extensions)


FORMATS = list(registry.formats().values())
pytestmark = pytest.mark.parametrize("spec", FORMATS, ids=[s.name for s in FORMATS])


def _open(path: Any, **kwargs: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine="tensogram", **kwargs)


def _largest(ds: xr.Dataset) -> str:
    """The data variable with the most values (the indexing tests want at least two axes)."""
    return max(ds.data_vars, key=lambda n: (ds[n].ndim >= 2, ds[n].size))


def test_the_sample_is_sniffed_as_its_format(spec: FormatSpec) -> None:
    from xarray_tensogram.io import open_source

    with open_source(_sample_of(spec)) as src:
        assert registry.sniff(src) is spec


def test_open_is_lazy_and_loads_the_same_values_twice(spec: FormatSpec) -> None:
    with _open(_sample_of(spec)) as ds:
        assert ds.data_vars
        for var in ds.data_vars.values():
            assert not isinstance(var.variable._data, np.ndarray)  # nothing decoded at open
        loaded = ds.load()
    with _open(_sample_of(spec)) as again:
        xr.testing.assert_identical(loaded, again.load())


def _indexers(shape: tuple[int, ...]) -> list[Any]:
    """Basic, outer and vectorized keys over the first two axes of ``shape``."""
    a, b = shape[0], shape[1]
    return [
        (0,),
        (-1, slice(None, None, 2)),
        (slice(1, None), slice(b - 1, 0, -3)),
        (np.array([a - 1, 0]), np.array([0, b - 1, 1])),  # outer: each list along its own axis
    ]


def test_lazy_indexing_of_every_kind_equals_numpy(spec: FormatSpec) -> None:
    with _open(_sample_of(spec)) as ds:
        name = _largest(ds)
        da = ds[name]
        full = da.values
        assert da.ndim >= 2, name
        for key in _indexers(da.shape):
            np.testing.assert_array_equal(da[key].values, full[np.ix_(*key) if isinstance(key[0], np.ndarray) else key])
        d0, d1 = da.dims[:2]
        points = xr.DataArray([0, da.shape[0] - 1, 0], dims="p"), xr.DataArray([da.shape[1] - 1, 0, 1], dims="p")
        picked = da.isel({d0: points[0], d1: points[1]})  # vectorized: one point per pair
        np.testing.assert_array_equal(picked.values, full[points[0].values, points[1].values])


def test_chunks_empty_are_the_declared_preferred_chunks(spec: FormatSpec) -> None:
    with _open(_sample_of(spec)) as plain, _open(_sample_of(spec), chunks={}) as chunked:
        for name, var in chunked.data_vars.items():
            preferred = plain[name].encoding["preferred_chunks"]
            assert set(preferred) == set(var.dims), name
            for dim, sizes in zip(var.dims, var.chunks or (), strict=True):
                assert all(s == preferred[dim] for s in sizes[:-1]) and sizes[-1] <= preferred[dim], (name, dim)
            np.testing.assert_array_equal(var.values, plain[name].values)


@pytest.mark.parametrize("chunks", [None, {}])
def test_pickled_datasets_read_the_same_values(spec: FormatSpec, chunks: Any) -> None:
    with _open(_sample_of(spec), chunks=chunks) as ds:
        blob = pickle.dumps(ds)
        assert len(blob) < os.path.getsize(_sample_of(spec)) + 64 * 1024  # a path and metadata, not payloads
        back = pickle.loads(blob)
        xr.testing.assert_identical(back.load(), ds.load())
        back.close()


def _fails_cleanly(path: Path, **kwargs: Any) -> errors.XarrayTensogramError | None:
    """Open and load ``path``: None when it reads, else the package error (anything else fails the test)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _open(path, **kwargs) as ds:
                ds.load()
    except errors.XarrayTensogramError as exc:
        return exc
    return None


def test_a_truncated_file_is_a_package_error_naming_the_file(spec: FormatSpec, tmp_path: Path) -> None:
    data = Path(_sample_of(spec)).read_bytes()
    path = tmp_path / f"cut{spec.extensions[0]}"
    for cut in (0, 7, len(data) // 3, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        exc = _fails_cleanly(path, strict=True)  # strict: a damaged Tensogram message is not skipped
        assert exc is not None, cut
        assert str(path) in str(exc), (cut, str(exc))


def test_junk_is_a_package_error_naming_the_file(spec: FormatSpec, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / f"junk{spec.extensions[0]}"
    for junk in (b"hello, this is text\n" * 20, rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()):
        path.write_bytes(junk)
        exc = _fails_cleanly(path, strict=True)
        assert isinstance(exc, errors.CorruptFileError), junk[:20]
        assert str(path) in str(exc)
    magic = spec.magics[0]
    path.write_bytes(magic + rng.integers(0, 256, 200, dtype=np.uint8).tobytes())  # the magic, then junk
    exc = _fails_cleanly(path, strict=True)
    assert exc is not None and str(path) in str(exc)


def test_an_option_of_no_format_is_refused_before_reading(spec: FormatSpec) -> None:
    with pytest.raises(errors.UnknownOptionError, match=_sample_of(spec)):
        _open(_sample_of(spec), variablekey="x")


def test_write_with_the_format_writer_and_read_back(spec: FormatSpec, tmp_path: Path) -> None:
    writer = registry.load(spec.writer)
    path = tmp_path / f"back{spec.extensions[0]}"
    with _open(_sample_of(spec)) as ds:
        original = ds.load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a writer names what it leaves out; the values are what is checked
        writer(original, path)
    with _open(path) as back:
        assert set(back.data_vars) == set(original.data_vars)
        for name, var in original.data_vars.items():
            assert back[name].dims == var.dims, name
            np.testing.assert_array_equal(back[name].values, var.values)
        for name, coord in original.coords.items():
            if name in back.coords:
                np.testing.assert_array_equal(back[name].values, coord.values)


def test_virtual_references_read_the_same_values(spec: FormatSpec, tmp_path: Path) -> None:
    pytest.importorskip("virtualizarr", reason="virtual references need the 'virtual' extra")
    pytest.importorskip("kerchunk", reason="reading the references back needs kerchunk")
    from xarray_tensogram.virtual.parsers import parser_for
    from xarray_tensogram.virtual.refs import open_virtual_dataset, write_refs

    path = _sample_of(spec)
    parser = parser_for(path)
    assert type(parser).format() is spec  # the parser the record names, found from the file
    vds = open_virtual_dataset(path, parser=parser)
    write_refs(vds, tmp_path / "refs.json")
    with (
        _open(path) as ds,
        xr.open_dataset(str(tmp_path / "refs.json"), engine="kerchunk", decode_timedelta=True) as refs,
    ):
        assert set(refs.variables) == set(ds.variables)
        for name in ds.variables:
            np.testing.assert_array_equal(refs[name].values, ds[name].values)
