"""The formats this package reads, one record each, and how a file is matched to one.

A record (:class:`FormatSpec`) says what a format is called, how its files start, how to open one, how
``ls``, ``info`` and ``verify`` see it, and by import path (loaded only when used) its assembly function,
writer and virtual Zarr parser. The open options a format honours are the keywords its reader and assembly
function take (``options.py``). The backend and the CLI dispatch through :func:`get`, :func:`sniff` and
:func:`from_bytes`, never by name. Adding a format: its folder under ``formats/`` with a ``FORMAT`` record,
and one line in :data:`_MODULES`. Nothing here imports ``assemble/`` or the backend.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..io import ByteSource, SourceLike
from .base import FormatFile
from .reports import Table, VerifyPlan

__all__ = ["FormatSpec", "formats", "from_bytes", "from_extension", "get", "load", "sniff"]


@dataclass(frozen=True)
class FormatSpec:
    """One file format: identification, opening and inspection."""

    #: short key used everywhere (``"tensogram"``, ``"tetr"``, ``"ztensor"``)
    name: str
    #: human name for messages ("Tensogram", "Tetration layout", "zTensor")
    title: str
    #: byte strings one of which starts every file of the format
    magics: tuple[bytes, ...]
    #: lower-case file name endings, with the dot
    extensions: tuple[str, ...]
    #: ``open(source, storage_options=..., **options)`` -> the open file (``options``: those it takes as keywords)
    open: Callable[..., FormatFile[Any]]
    #: ``"module:function"`` assembling the open file; its keywords are the open options the format honours
    assembler: str
    #: ``"module:function"`` writing a Dataset as a file of this format (``writer(ds, path, ...)``)
    writer: str
    #: ``"module:class"`` of the VirtualiZarr parser (the ``virtual`` extra)
    virtual_parser: str
    #: lines for ``info`` (format version, counts), from metadata only
    info: Callable[[Any], list[str]]
    #: tables for ``ls``; the flag asks for per-tile detail where the format has tiles
    ls: Callable[[Any, bool], list[Table]]
    #: the units ``verify`` decodes and checks
    verify: Callable[[Any], VerifyPlan]
    #: files may start with bytes the reader skips, so a readable file without magic may still be one
    magic_optional: bool = False


#: one line per format: the module holding its ``FORMAT`` record (the first: the fallback when nothing decides)
_MODULES = (
    "xarray_tensogram.formats.tensogram.record",
    "xarray_tensogram.formats.tetr",
    "xarray_tensogram.formats.ztensor.record",
)
_REGISTRY: dict[str, FormatSpec] = {}


def formats() -> dict[str, FormatSpec]:
    """Every registered format by name, in registration order (loaded on first use)."""
    if not _REGISTRY:
        for module in _MODULES:
            spec: FormatSpec = importlib.import_module(module).FORMAT
            _REGISTRY[spec.name] = spec
    return _REGISTRY


def get(name: str) -> FormatSpec:
    try:
        return formats()[name]
    except KeyError:
        raise KeyError(f"unknown format {name!r}; known: {', '.join(formats())}") from None


def default() -> FormatSpec:
    """The format tried when nothing identifies a file (Tensogram: its scanner skips leading junk)."""
    return next(iter(formats().values()))


def from_bytes(head: bytes) -> FormatSpec | None:
    """The format whose magic starts ``head``, else None."""
    return next((s for s in formats().values() if head.startswith(s.magics)), None)


def from_extension(name: Any) -> FormatSpec | None:
    """The format owning the file name's extension, else None (also for names that are not paths)."""
    try:
        ext = os.path.splitext(os.fspath(name))[1].lower()
    except TypeError:
        return None
    return next((s for s in formats().values() if ext in s.extensions), None)


def magic_length() -> int:
    return max(len(m) for s in formats().values() for m in s.magics)


def sniff(source: ByteSource) -> FormatSpec | None:
    """Format from the magic bytes at offset 0, else from the extension, else None."""
    n = min(magic_length(), source.size)
    head = source.read(0, n, what="magic") if n else b""
    return from_bytes(head) or from_extension(source.name)


#: files of other formats that reach this engine by mistake: magic, what the file is, what opens it
_OTHER_FORMATS = (
    (b"CDF\x01", "a netCDF-3 file", 'engine="netcdf4" or engine="scipy"'),
    (b"CDF\x02", "a netCDF-3 (64-bit offset) file", 'engine="netcdf4" or engine="scipy"'),
    (b"CDF\x05", "a netCDF-3 (64-bit data) file", 'engine="netcdf4"'),
    (b"\x89HDF\r\n\x1a\n", "a netCDF-4/HDF5 file", 'engine="netcdf4" or engine="h5netcdf"'),
    (b"GRIB", "a GRIB file", 'engine="cfgrib" (or convert it to .tgm with tensogram convert-grib)'),
)


def other_format(source: ByteSource) -> str | None:
    """``"it is a netCDF-4/HDF5 file: open it with engine=..."`` when the magic of a file none of the
    formats reads is one a user would hand to this engine by mistake, else None."""
    n = min(max(len(m) for m, _, _ in _OTHER_FORMATS), source.size)
    head = source.read(0, n, what="magic") if n else b""
    for magic, what, engine in _OTHER_FORMATS:
        if head.startswith(magic):
            return f"it is {what}; open it with {engine}"
    return None


def open_file(
    spec: FormatSpec, source: SourceLike, *, storage_options: Mapping[str, Any] | None = None, **options: Any
) -> FormatFile[Any]:
    """Open ``source`` as ``spec``; ``options``: the open options its reader takes as keywords."""
    return spec.open(source, storage_options=storage_options, **options)


def load(ref: str) -> Any:
    """The object a record names as ``"module:attribute"`` (imported on first use: the records name
    layers above ``formats/`` without importing them)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
