"""Where a lazy array's chunks are stored, as the virtual Zarr parsers need it: byte ranges and codecs.

A chunk reader that can say where its chunks lie offers ``byte_layout(spec)`` (:class:`ByteRangeReader`): a
regular grid, one byte range per stored chunk and the Zarr v3 codec chain decoding them (:class:`ByteLayout`),
or why Zarr cannot express them (:class:`Unreferenced`). Nothing here imports xarray or dask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "UNREFERENCED",
    "ByteLayout",
    "ByteRangeReader",
    "ChunkRef",
    "Described",
    "Unreferenced",
    "byte_layout",
    "stack_layouts",
    "zarr_bytes_codec",
]


class Described(Protocol):
    """What :func:`byte_layout` reads of a spec (``array_spec.ArraySpec``): its chunk reader."""

    @property
    def reader(self) -> Any: ...


#: why a variable is not referenced but inlined by the virtual Zarr parsers (key: what the parsers report in
#: ``inline_reasons``; ``docs/virtual.md`` lists every key, which a test checks)
UNREFERENCED: dict[str, str] = {
    "coordinate": "a dimension coordinate: every open loads it for its index anyway",
    "no-storage": "values built from metadata or held in memory at open: no bytes of the file hold them",
    "empty": "a zero-size array: VirtualiZarr cannot write references to it",
    "transposed": "stored with its dims in another order: a transpose, which Zarr v2 (kerchunk) has no codec for",
    "layout": "a tensor whose layout is not one byte range (sparse or multi-part zTensor, or damaged)",
    "codec": "an encoding no Zarr codec decodes (a zTensor encoding without one, or a stored dtype that differs)",
    "mixed": "chunks that need different codecs, with no one codec chain that decodes them all",
    "cast": "a dtype restored after decoding by a codec chain that cannot cast",
    "reader": "its reader does not describe byte ranges",
}


@dataclass(frozen=True)
class Unreferenced:
    """A variable the virtual parsers cannot reference: ``reason`` is a key of :data:`UNREFERENCED`."""

    reason: str

    def __post_init__(self) -> None:
        if self.reason not in UNREFERENCED:
            raise ValueError(f"undeclared reason {self.reason!r}: add it to UNREFERENCED and docs/virtual.md")


@dataclass(frozen=True)
class ChunkRef:
    """One stored chunk: its grid coordinates and byte range (``path``: a shard file's name next to the file,
    None for the file itself)."""

    coords: tuple[int, ...]
    offset: int
    length: int
    path: str | None = None


def zarr_bytes_codec(dtype: Any, big_endian: bool = False) -> dict[str, Any]:
    """Zarr v3's ``bytes`` codec for ``dtype`` (single-byte types take no byte order)."""
    endian = {} if np.dtype(dtype).itemsize == 1 else {"endian": "big" if big_endian else "little"}
    return {"name": "bytes", "configuration": endian}


@dataclass(frozen=True)
class ByteLayout:
    """An array's stored chunks as Zarr v3 sees them: a regular grid, a byte range per present chunk and the
    codec chain (``bytes`` first) that decodes every chunk."""

    chunk_shape: tuple[int, ...]
    codecs: tuple[dict[str, Any], ...]
    refs: tuple[ChunkRef, ...]
    #: the same chunks through a chain every chunk of the format shares (a package codec that decodes a
    #: whole stored object), for stacks whose members need different standard chains; None when none
    general: ByteLayout | None = None
    #: whether the last codec takes an ``astype`` setting (a dtype cast after decoding)
    casts: bool = False

    def astype(self, dtype: Any) -> ByteLayout:
        """This layout handing its values out in ``dtype`` (only for layouts whose last codec casts)."""
        last = self.codecs[-1]
        cast = {"name": last["name"], "configuration": {**last.get("configuration", {}), "astype": np.dtype(dtype).str}}
        codecs = (zarr_bytes_codec(dtype), *self.codecs[1:-1], cast)
        return ByteLayout(self.chunk_shape, codecs, self.refs, None, True)


@runtime_checkable
class ByteRangeReader(Protocol):
    """A :class:`ChunkReader` that can say where its chunks are stored (for the virtual Zarr parsers)."""

    def byte_layout(self, spec: Any) -> ByteLayout | Unreferenced:
        """The stored chunks of ``spec`` (whose reader this is), or why Zarr cannot reference them."""
        ...


def byte_layout(spec: Described) -> ByteLayout | Unreferenced:
    """Where the chunks of ``spec`` are stored and how Zarr decodes them, or why it cannot."""
    reader = spec.reader
    if isinstance(reader, ByteRangeReader):
        return reader.byte_layout(spec)
    return Unreferenced("reader")


def stack_layouts(
    parts: Sequence[tuple[tuple[int, ...], ByteLayout]], k: int, fallback: bool = True
) -> ByteLayout | Unreferenced:
    """Member layouts (each with its coordinates along ``k`` stacked axes) as one: their chains must agree,
    else (``fallback``) their general chains, a layout without one being its own."""
    if not parts:
        return Unreferenced("empty")
    first = parts[0][1]
    if any(lay.codecs != first.codecs or lay.chunk_shape != first.chunk_shape for _, lay in parts):
        if not fallback:
            return Unreferenced("mixed")
        return stack_layouts([(c, lay.general or lay) for c, lay in parts], k, fallback=False)
    refs = tuple(ChunkRef(c + r.coords, r.offset, r.length, r.path) for c, lay in parts for r in lay.refs)
    general = None
    if all(lay.general is not None for _, lay in parts):
        merged = stack_layouts([(c, lay.general) for c, lay in parts if lay.general is not None], k, fallback=False)
        general = merged if isinstance(merged, ByteLayout) else None
    return ByteLayout((1,) * k + first.chunk_shape, first.codecs, refs, general, first.casts)
