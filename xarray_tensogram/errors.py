"""The package's exception hierarchy.

Every class is also a subclass of the builtin a caller would naturally catch (``ValueError`` for bad
content, ``NotImplementedError`` for unsupported features, ``ImportError`` for a missing optional package),
as in zarr-python. Messages name the file, the unit and the byte offset, and say what was expected.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Sequence


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

    #: set by verification: ``True`` when the object's hash matched before its codec was found missing
    hash_verified: bool | None = None


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


class UnknownOptionError(UnsupportedOptionError, TypeError):
    """A keyword argument that is no open option (a typo): also the ``TypeError`` Python would raise."""


class DimensionNameError(XarrayTensogramError):
    """The ``dim_names`` argument does not fit the file (wrong type or count, repeated names, clashing sizes,
    unknown variables): a user's mistake rather than damage, so not a :class:`MetadataError`."""


class InvalidNameError(XarrayTensogramError, TypeError):
    """A variable or attribute name a writer cannot store (not a string), refused as ``to_netcdf`` refuses it."""


class NotATensorFileError(CorruptFileError):
    """The input is not a Tensogram, Tetration or zTensor file at all: empty, text, random bytes."""


class _PlainText:
    """Mixin: show the message as given (OSError would format it errno-style, KeyError as a repr)."""

    def __str__(self) -> str:
        args = getattr(self, "args", ())
        return str(args[0]) if args else ""


class NoSuchVariableError(_PlainText, XarrayTensogramError, KeyError):
    """A writer option names a variable the Dataset does not have (a ``KeyError`` too, as in ``to_netcdf``)."""


class IsADirectoryTensorError(_PlainText, NotATensorFileError, IsADirectoryError):
    """The path names a directory; also an :class:`IsADirectoryError` for callers that catch OS errors."""


class StorageOptionsError(XarrayTensogramError, TypeError):
    """fsspec rejected the ``storage_options`` given for a URL (an unknown or mistyped option)."""


class NoSuchDirectoryError(_PlainText, XarrayTensogramError, FileNotFoundError):
    """A writer's target lies in a directory that does not exist; also a :class:`FileNotFoundError`."""


class RemoteReadError(_PlainText, XarrayTensogramError, OSError):
    """A remote byte range could not be read: a fault that persisted through every retry, or one not worth
    retrying (a 4xx answer). Also an :class:`OSError`, as the network errors it replaces are."""


class WriteLockTimeoutError(_PlainText, XarrayTensogramError, TimeoutError):
    """Another writer held the file's lock for longer than the writer would wait; also a :class:`TimeoutError`."""


# -- warnings: reading went on, but something was skipped, renamed or ignored -----------------------
class CorruptMessageWarning(UserWarning):
    """A damaged message was skipped while scanning; the messages around it were kept."""


class TetrMappingWarning(UserWarning):
    """Something in the file (or Dataset) could not be mapped as is (renamed, skipped, dropped)."""


class ZTensorMappingWarning(UserWarning):
    """Something in the file could not be mapped as is (renamed, skipped, ignored)."""


class TensogramMappingWarning(UserWarning):
    """A Tensogram hint was ignored, a ``variable_key`` matched nothing, or objects were duplicates."""


class IgnoredOptionWarning(UserWarning):
    """An open option was given that has no effect on this source (``storage_options`` or ``retries`` for a
    local file): the open went on without it."""


class MetadataCacheWarning(UserWarning):
    """A metadata cache entry was unreadable and ignored, or could not be written (the open went on without it)."""


def describe(source: str | None, where: str | None = None, offset: int | None = None) -> str:
    """Build the common prefix of an error message: ``file 'x', message 2, byte 1234: ``."""
    parts = (f"file {source!r}" if source else "", where, None if offset is None else f"byte {offset}")
    text = ", ".join(p for p in parts if p)
    return f"{text}: " if text else ""


class ZarrMappingWarning(UserWarning):
    """A name was changed so that Zarr can hold it (in the Zarr store of a file)."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (empty for none), for one-line reports that name it."""
    return next(iter(str(exc).strip().splitlines()), "")


def byte_text(data: bytes) -> str:
    """Bytes as a message shows them, without Python's ``b'...'`` literal: ``'THST'`` when they are
    printable ASCII, else their hex digits (``hex 89 48 44 46``)."""
    if data and all(32 <= c < 127 for c in data):
        return repr(data.decode("ascii"))
    return f"hex {data.hex(' ')}" if data else "no bytes"


def closest(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate nearest a misspelt ``name`` (for "did you mean ...?"), or None; every suggestion of the
    package comes from here. difflib decides which are near enough; among those the fewest edits win, a swap
    of neighbours counting as one: ``mars.stpe`` is nearer ``mars.step`` than ``mars.type`` (difflib alone
    ranks them equal)."""
    pool = list(dict.fromkeys(candidates))
    near = difflib.get_close_matches(name, pool, n=max(1, len(pool)), cutoff=cutoff)
    return min(near, key=lambda c: _edits(name, c)) if near else None  # ties keep difflib's order


def unknown_names(given: Iterable[str], valid: Sequence[str], noun: str) -> str | None:
    """``unknown options 'a' (did you mean 'b'?), 'c'``: the names of ``given`` not in ``valid``, each with
    the closest valid one; None when all are valid."""
    unknown = [k for k in given if k not in valid]
    if not unknown:
        return None
    hints = [f"{k!r} (did you mean {close!r}?)" if (close := closest(k, valid)) else repr(k) for k in unknown]
    return f"unknown {noun}{'s' if len(unknown) > 1 else ''} {', '.join(hints)}"


def _edits(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of neighbours turning ``a`` into ``b``."""
    previous, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if previous is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous[j - 2] + 1)
        previous, row = row, current
    return row[len(b)]


def user_stacklevel() -> int:
    """The ``stacklevel`` for the caller's ``warnings.warn`` that points at the first frame outside this
    package, however many of its frames lie between (as pandas' ``find_stack_level``)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def install_hint(extra: str) -> str:
    """How to install one of the package's extras: from a checkout or a built wheel, since the package is on
    no package index (an install by name finds nothing)."""
    return (
        f'install the {extra!r} extra of xarray-tensogram: pip install ".[{extra}]" in a checkout of its '
        f'sources, or pip install "<path to the xarray_tensogram wheel>[{extra}]"'
    )


class VirtualMappingWarning(UserWarning):
    """A variable could not be represented in Zarr and was left out of a virtual dataset."""


#: the exception and warning classes (the package exports each); the helpers above are for its own modules
__all__ = sorted(
    n for n, v in dict(globals()).items() if isinstance(v, type) and issubclass(v, (XarrayTensogramError, Warning))
)
