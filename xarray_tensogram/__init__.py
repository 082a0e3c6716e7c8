"""xarray-tensogram: open Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files with xarray and Dask."""

from __future__ import annotations

from . import samples
from ._version import __version__
from .errors import (
    CodecError,
    CorruptFileError,
    CorruptMessageWarning,
    DimensionNameError,
    EncodeError,
    FileChangedError,
    GroupSelectionError,
    HypercubeError,
    IntegrityError,
    InvalidNameError,
    IsADirectoryTensorError,
    LimitExceededError,
    MetadataError,
    MissingCodecError,
    MissingHashError,
    NoSuchDirectoryError,
    NoSuchVariableError,
    NotATensorFileError,
    RemoteReadError,
    StorageOptionsError,
    TensogramMappingWarning,
    TetrMappingWarning,
    TruncatedFileError,
    UnknownOptionError,
    UnsupportedError,
    UnsupportedOptionError,
    VirtualMappingWarning,
    WriteLockTimeoutError,
    XarrayTensogramError,
    ZTensorMappingWarning,
)
from .formats.tensogram import open_tensogram
from .formats.tetr import open_tetr
from .formats.ztensor import open_ztensor
from .samples import path as sample_path
from .samples import paths as sample_paths
from .write.tensogram import to_tensogram  # importing it also registers the ds.tensogram accessor
from .write.tetr import to_tetr
from .write.ztensor import to_ztensor

__all__ = [
    "CodecError",
    "CorruptFileError",
    "CorruptMessageWarning",
    "DimensionNameError",
    "EncodeError",
    "FileChangedError",
    "GroupSelectionError",
    "HypercubeError",
    "IntegrityError",
    "InvalidNameError",
    "IsADirectoryTensorError",
    "LimitExceededError",
    "MetadataError",
    "MissingCodecError",
    "MissingHashError",
    "NoSuchDirectoryError",
    "NoSuchVariableError",
    "NotATensorFileError",
    "RemoteReadError",
    "StorageOptionsError",
    "TensogramMappingWarning",
    "TetrMappingWarning",
    "TruncatedFileError",
    "UnknownOptionError",
    "UnsupportedError",
    "UnsupportedOptionError",
    "VirtualMappingWarning",
    "WriteLockTimeoutError",
    "XarrayTensogramError",
    "ZTensorMappingWarning",
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
