"""xarray's own backend test classes (``xarray.tests.test_backends``) run against each of our writers.

The same pattern as xarray's h5netcdf/scipy/zarr backends: ``save`` writes with our writer,
``open`` reopens with ``engine="tensogram"``. Store-level tests (``create_store``) are skipped:
we have no store-level writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("xarray.tests.test_backends")
from xarray.tests import test_backends as xb  # imported after the importorskip
from xarray.tests.conftest import time_unit, use_dask  # noqa: F401  # fixtures the classes use

import xarray_tensogram as xt
from xarray_tensogram.errors import UnsupportedError, XarrayTensogramError

#: ``raises`` of a format limit: the writer refuses, with a package error naming the variable
LIMIT = UnsupportedError


#: Dataset attributes the reader adds to say what it read (docs/mapping.md), not part of the data written
PROVENANCE_ATTRS = ("tensogram_wire_version",)


class _TensogramWriterBase(xb.CFEncodedBase):
    engine = "tensogram"
    writer: Any = None
    #: what xarray's classes read to know which dtypes the format stores: "NETCDF4" stores every integer
    #: width, uint8 included, as all three formats do (None would mean netCDF-3 and skip the uint8 cases)
    file_format = "NETCDF4"

    @contextlib.contextmanager
    def create_store(self) -> Iterator[Any]:
        pytest.skip("no store-level writer (create_store) for this format")
        yield

    def save(self, dataset: xr.Dataset, path: str, **kwargs: Any) -> Any:
        return type(self).writer(dataset, path, **kwargs)

    @contextlib.contextmanager
    def open(self, path: str, **kwargs: Any) -> Iterator[xr.Dataset]:
        with xr.open_dataset(path, engine="tensogram", **kwargs) as ds:
            for name in PROVENANCE_ATTRS:  # the reader's documented provenance attributes
                ds.attrs.pop(name, None)
            yield ds

    def test_load_async(self) -> None:
        """xarray's own ``test_load_async`` (``await ds.load_async()``), run in an event loop of its own:
        the test suite has no asyncio plugin, and the test needs nothing else."""
        asyncio.run(xb.CFEncodedBase.test_load_async(self))


def _expect(cls: type, known: Mapping[str, tuple[str, type[BaseException] | None]]) -> type:
    """Mark inherited tests of ``cls`` as expected to fail: with ``raises`` a format limit met by a package
    error (the test then checks that error is what fails it), without it a gap still open (not strict)."""
    for name, (reason, raises) in known.items():
        base: Callable[..., Any] = getattr(cls, name)

        @functools.wraps(base)
        def wrapper(self: Any, *args: Any, __base: Callable[..., Any] = base, **kwargs: Any) -> Any:
            return __base(self, *args, **kwargs)

        wrapper.__dict__.pop("pytestmark", None)
        marks = getattr(base, "pytestmark", [])
        mark = pytest.mark.xfail(reason=reason, raises=raises, strict=raises is not None)
        wrapper.pytestmark = [*marks, mark.mark]  # type: ignore[attr-defined]  # pytest's mark storage
        setattr(cls, name, wrapper)
    return cls


_STRINGS = "strings not held by the variables of the Dataset: .tet keeps them in another variable's footer"
_INT8 = "int8 (the packed dtype of some parameters): .tet has no int8"
_APPEND = ("mode='a' refuses a variable the file has (netCDF overwrites it)", XarrayTensogramError)
_TGM_STRINGS = ("mode='a' refuses new string variables: .tgm keeps them in its first message's metadata", LIMIT)
_UNLIMITED = ("no unlimited dimensions in these formats: unlimited_dims= is refused", LIMIT)
_MIXED = ("object arrays mixing numbers, str, bytes or NaN are refused, not turned into text", LIMIT)


class TestToTensogram(_TensogramWriterBase):
    writer = staticmethod(xt.to_tensogram)


_expect(
    TestToTensogram,
    {
        "test_roundtrip_object_dtype": _MIXED,
        "test_roundtrip_stringdtype_nulls": ("StringDType with None: refused (no null strings)", LIMIT),
        "test_roundtrip_boolean_dtype": ("a 2-D coordinate named like its own dim: refused", LIMIT),
        "test_roundtrip_bytes_with_fill_value": ("bytes with NaN: refused", LIMIT),
        "test_encoding_unlimited_dims": _UNLIMITED,
        "test_append_overwrite_values": _APPEND,
        "test_append_write": _TGM_STRINGS,
    },
)


class TestToTetr(_TensogramWriterBase):
    writer = staticmethod(xt.to_tetr)

    @functools.wraps(xb.CFEncodedBase.test_roundtrip_mask_and_scale)  # its parametrization too
    def test_roundtrip_mask_and_scale(self, decoded_fn: Any, encoded_fn: Any, dtype: Any) -> None:
        """The cases packed into int8 meet a .tet limit (no int8): refused naming the variable; the rest pass."""
        decoded = decoded_fn(dtype)
        if np.dtype(decoded["x"].encoding["dtype"]) == np.int8:
            refused = pytest.raises(LIMIT, match=r"variable 'x': dtype int8 cannot be stored in a \.tet file")
            with refused, self.roundtrip(decoded):
                pass
        else:
            super().test_roundtrip_mask_and_scale(decoded_fn, encoded_fn, dtype)


_expect(
    TestToTetr,
    {
        "test_roundtrip_object_dtype": _MIXED,
        "test_roundtrip_string_data": (_STRINGS, LIMIT),
        "test_roundtrip_stringdtype_data": (_STRINGS, LIMIT),
        "test_roundtrip_stringdtype_nulls": ("StringDType with None: refused (no null strings)", LIMIT),
        "test_roundtrip_stringdtype_with_na_object": (_STRINGS, LIMIT),
        "test_roundtrip_string_encoded_characters": (_STRINGS, LIMIT),
        "test_roundtrip_bytes_with_fill_value": (_STRINGS, LIMIT),
        "test_roundtrip_empty_vlen_string_array": (_STRINGS, LIMIT),
        "test_roundtrip_unsigned": (_INT8, LIMIT),
        "test_encoding_unlimited_dims": _UNLIMITED,
        "test_encoding_kwarg_fixed_width_string": (_STRINGS, LIMIT),
        "test_append_overwrite_values": _APPEND,
        "test_string_object_warning": (_STRINGS, LIMIT),  # warned as to_netcdf warns, then refused
        "test_indexing_roundtrip": (_STRINGS + " (at most 1024 bytes of JSON)", LIMIT),
    },
)


class TestToZtensor(_TensogramWriterBase):
    writer = staticmethod(xt.to_ztensor)


_expect(
    TestToZtensor,
    {
        "test_roundtrip_object_dtype": _MIXED,
        "test_roundtrip_stringdtype_nulls": ("StringDType with None: refused (no null strings)", LIMIT),
        "test_encoding_unlimited_dims": _UNLIMITED,
        "test_append_overwrite_values": _APPEND,
    },
)
