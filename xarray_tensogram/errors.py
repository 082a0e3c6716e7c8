"""The package's exception hierarchy.

Every class is also a subclass of the builtin a caller would naturally catch
(``ValueError`` for bad content, ``NotImplementedError`` for unsupported
features, ``ImportError`` for a missing optional package), following the
zarr-python pattern. Messages name the file, the unit (message/object,
dataset/chunk, tensor) and the byte offset, and say what was expected.
"""

from __future__ import annotations

__all__ = [
    "XarrayTensogramError",
    "CorruptFileError",
    "TruncatedFileError",
    "MetadataError",
    "CodecError",
    "IntegrityError",
    "MissingHashError",
    "UnsupportedError",
    "MissingCodecError",
    "FileChangedError",
    "LimitExceededError",
    "HypercubeError",
    "GroupSelectionError",
    "EncodeError",
    "UnsupportedOptionError",
    "CorruptMessageWarning",
    "TetrMappingWarning",
    "ZTensorMappingWarning",
    "describe",
]


class XarrayTensogramError(ValueError):
    """Base class of every error raised by xarray-tensogram."""


class CorruptFileError(XarrayTensogramError):
    """The framing of the file is broken: bad magic, markers, lengths or offsets."""


class TruncatedFileError(CorruptFileError, EOFError):
    """The file ends before a structure it declares."""


class MetadataError(XarrayTensogramError):
    """Metadata (CBOR/JSON index, descriptors, footers) is malformed or inconsistent."""


class LimitExceededError(MetadataError):
    """A value in the file exceeds a safety limit (size, nesting depth, rank, ...)."""


class CodecError(XarrayTensogramError):
    """A payload could not be decoded (corrupt stream, wrong decoded size, ...)."""


class IntegrityError(XarrayTensogramError):
    """A hash or checksum does not match the bytes read."""


class MissingHashError(IntegrityError):
    """Verification was requested but the file carries no hash for this unit."""


class UnsupportedError(XarrayTensogramError, NotImplementedError):
    """A valid feature this package does not implement (unknown codec, dtype, version)."""


class MissingCodecError(UnsupportedError, ImportError):
    """An optional package needed to decode this payload is not installed."""


class FileChangedError(XarrayTensogramError):
    """The file was modified on disk after it was opened."""


class HypercubeError(XarrayTensogramError):
    """Objects cannot be arranged into one hypercube (duplicates, conflicts)."""


class GroupSelectionError(XarrayTensogramError):
    """The file holds several incompatible groups and none was selected."""


class EncodeError(XarrayTensogramError):
    """The inputs cannot be encoded (bad parameters, NaN without a mask, ...)."""


class UnsupportedOptionError(XarrayTensogramError):
    """An open option was given that does not apply to the format being opened."""


# -- warnings: reading went on, but something was skipped, renamed or ignored -----------------------
class CorruptMessageWarning(UserWarning):
    """A damaged message was skipped while scanning; the messages around it were kept."""


class TetrMappingWarning(UserWarning):
    """Something in the file (or Dataset) could not be mapped as is (renamed, skipped, dropped)."""


class ZTensorMappingWarning(UserWarning):
    """Something in the file could not be mapped as is (renamed, skipped, ignored)."""


def describe(source: str | None, where: str | None = None, offset: int | None = None) -> str:
    """Build the common prefix of an error message: ``file 'x', message 2, byte 1234: ``."""
    parts = []
    if source:
        parts.append(f"file {source!r}")
    if where:
        parts.append(where)
    if offset is not None:
        parts.append(f"byte {offset}")
    return (", ".join(parts) + ": ") if parts else ""
