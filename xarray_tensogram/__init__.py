"""xarray-tensogram: open Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files with xarray and Dask."""

from __future__ import annotations

from .errors import (
    CodecError,
    CorruptFileError,
    CorruptMessageWarning,
    EncodeError,
    DimensionNameError,
    FileChangedError,
    GroupSelectionError,
    HypercubeError,
    IntegrityError,
    IsADirectoryTensorError,
    LimitExceededError,
    MetadataError,
    MissingCodecError,
    MissingHashError,
    TensogramMappingWarning,
    TetrMappingWarning,
    NoSuchDirectoryError,
    NotATensorFileError,
    StorageOptionsError,
    TruncatedFileError,
    UnsupportedError,
    UnsupportedOptionError,
    VirtualMappingWarning,
    XarrayTensogramError,
    ZTensorMappingWarning,
)

from ._version import __version__

__all__ = [
    "__version__",
    "XarrayTensogramError",
    "CorruptFileError",
    "TruncatedFileError",
    "MetadataError",
    "LimitExceededError",
    "CodecError",
    "IntegrityError",
    "MissingHashError",
    "UnsupportedError",
    "MissingCodecError",
    "FileChangedError",
    "HypercubeError",
    "GroupSelectionError",
    "EncodeError",
    "UnsupportedOptionError",
    "CorruptMessageWarning",
    "TensogramMappingWarning",
    "TetrMappingWarning",
    "VirtualMappingWarning",
    "ZTensorMappingWarning",
    "DimensionNameError",
    "NotATensorFileError",
    "IsADirectoryTensorError",
    "StorageOptionsError",
    "NoSuchDirectoryError",
]

from .formats.tensogram import open_tensogram  # noqa: E402

__all__ += ["open_tensogram"]

from .write.tensogram import to_tensogram  # noqa: E402  (also registers ds.tensogram)

__all__ += ["to_tensogram"]

from .formats.ztensor import open_ztensor  # noqa: E402
from .write.ztensor import to_ztensor  # noqa: E402

__all__ += ["open_ztensor", "to_ztensor"]

from .formats.tetr import open_tetr  # noqa: E402
from .write.tetr import to_tetr  # noqa: E402

__all__ += ["open_tetr", "to_tetr"]

from . import samples  # noqa: E402
from .samples import path as sample_path  # noqa: E402
from .samples import paths as sample_paths  # noqa: E402

__all__ += ["samples", "sample_path", "sample_paths"]
