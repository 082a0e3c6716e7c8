"""xarray's own backend test classes (``xarray.tests.test_backends``) run against each of our writers.

The same pattern as xarray's h5netcdf/scipy/zarr backends: ``save`` writes with our writer,
``open`` reopens with ``engine="tensogram"``. Store-level tests (``create_store``) are skipped:
we have no store-level writer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import xarray as xr

pytest.importorskip("xarray.tests.test_backends")
from xarray.tests import test_backends as xb  # noqa: E402  # after the importorskip

from xarray.tests.conftest import time_unit, use_dask  # noqa: E402, F401  # fixtures the classes use

import xarray_tensogram as xt  # noqa: E402


class _TensogramWriterBase(xb.CFEncodedBase):
    engine = "tensogram"
    writer: Any = None

    @contextlib.contextmanager
    def create_store(self) -> Iterator[Any]:
        pytest.skip("no store-level writer (create_store) for this format")
        yield

    def save(self, dataset: xr.Dataset, path: str, **kwargs: Any) -> Any:
        return type(self).writer(dataset, path, **kwargs)

    @contextlib.contextmanager
    def open(self, path: str, **kwargs: Any) -> Iterator[xr.Dataset]:
        with xr.open_dataset(path, engine="tensogram", **kwargs) as ds:
            yield ds


class TestToTensogram(_TensogramWriterBase):
    writer = staticmethod(xt.to_tensogram)


class TestToTetr(_TensogramWriterBase):
    writer = staticmethod(xt.to_tetr)


class TestToZtensor(_TensogramWriterBase):
    writer = staticmethod(xt.to_ztensor)
