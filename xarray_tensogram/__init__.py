"""xarray-tensogram: open Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files with xarray and Dask."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors, samples
from ._version import __version__
from .errors import *  # noqa: F403 - every exception and warning class is exported (errors.__all__)
from .formats.tensogram import open_tensogram
from .formats.tetr import open_tetr
from .formats.ztensor import open_ztensor
from .samples import path as sample_path
from .samples import paths as sample_paths
from .write.tensogram import to_tensogram  # importing it also registers the ds.tensogram accessor
from .write.tetr import to_tetr
from .write.ztensor import to_ztensor

if TYPE_CHECKING:
    from .zarr_store import TensogramStore

__all__ = [
    *errors.__all__,
    "TensogramStore",
    "__version__",
    "open_tensogram",
    "open_tetr",
    "open_ztensor",
    "sample_path",
    "sample_paths",
    "samples",
    "to_tensogram",
    "to_tetr",
    "to_ztensor",
]


def __getattr__(name: str) -> Any:
    # the Zarr store needs zarr (an optional extra): imported on first use, not with the package
    if name == "TensogramStore":
        from .zarr_store import TensogramStore

        return TensogramStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
