"""What a format contributes to the lazy array: a chunked array description.

A format reader describes each array it serves as an :class:`ArraySpec`: shape, dtype, a regular chunk grid
(edge chunks clipped) and a picklable :class:`ChunkReader`, asked only for the chunk regions a key touches.
Nothing here imports xarray or dask.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .byte_layout import ByteLayout, Unreferenced, byte_layout, stack_layouts

__all__ = [
    "ArraySpec",
    "CastReader",
    "ChunkReader",
    "MissingChunk",
    "StackedReader",
    "TransposedReader",
    "cast_spec",
    "chunk_counts",
    "chunk_extent",
    "full_region",
    "permute_stacked",
    "read_chunk_into",
    "stack_specs",
    "transpose_spec",
    "with_leading_axis",
]

Region = tuple[slice, ...]


@runtime_checkable
class ChunkReader(Protocol):
    """Reads one chunk of a chunked array. Must be thread-safe and picklable."""

    def read_chunk(self, coords: tuple[int, ...], region: Region) -> np.ndarray:
        """``region`` (step-1 slices, local to the chunk) of the chunk at grid ``coords``, in the spec's dtype;
        a reader that can fetch only the region's bytes (rows of a raw payload) should."""
        ...


# A reader may also offer ``read_chunk_into(coords, region, out) -> bool`` (see :func:`read_chunk_into`), and
# ``byte_layout(spec)``, where its chunks are stored for the virtual Zarr parsers (:class:`ByteRangeReader`).


def chunk_counts(shape: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    """Number of chunks along each axis (0 along an empty axis)."""
    return tuple((s + c - 1) // c if c else 0 for s, c in zip(shape, chunk_shape, strict=True))


def chunk_extent(shape: Sequence[int], chunk_shape: Sequence[int], coords: Sequence[int]) -> tuple[int, ...]:
    """Clipped extent of the chunk at ``coords`` (edge chunks are smaller, never padded)."""
    return tuple(min(c, s - i * c) for s, c, i in zip(shape, chunk_shape, coords, strict=True))


def full_region(extent: Sequence[int]) -> Region:
    return tuple(slice(0, n) for n in extent)


@dataclass(frozen=True)
class ArraySpec:
    """A lazily readable N-d array: geometry plus the reader of its chunks."""

    shape: tuple[int, ...]
    dtype: np.dtype
    chunk_shape: tuple[int, ...]
    reader: ChunkReader
    #: value used where a reader reports a missing chunk (hypercube holes)
    fill_value: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "chunk_shape", tuple(max(1, int(c)) for c in self.chunk_shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if len(self.shape) != len(self.chunk_shape):
            raise ValueError("shape and chunk_shape must have the same rank")


class MissingChunk(Exception):
    """Raised by a reader for a chunk that does not exist (filled with ``fill_value``)."""


#: a member given as a zero-argument callable is built on first read (see :func:`stack_specs`)
Member = ArraySpec | Callable[[], ArraySpec]


@dataclass(frozen=True)
class StackedReader:
    """Equally shaped member arrays stacked along new leading axes (hypercubes), chunked 1 along each.

    ``members`` is flat, in C order over ``stack_shape``: a tuple with ``None`` for holes, or a dict ``{flat
    index: member}`` for sparse cubes. A member given as a zero-argument callable is built when a read first
    touches it (once; the built spec keeps its reader's caches), so an open of many objects builds none.
    """

    stack_shape: tuple[int, ...]
    members: tuple[Member | None, ...] | dict[int, Member]
    _built: dict[int, ArraySpec] = field(default_factory=dict, repr=False, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return StackedReader, (self.stack_shape, self.members)  # what was built is built again where it is read

    def member_at(self, flat: int) -> ArraySpec | None:
        """The member at a flat stack index (built now if it was given lazily), or None for a hole."""
        found = self._built.get(flat)
        if found is not None:
            return found
        members = self.members
        m = members.get(flat) if isinstance(members, dict) else members[flat]
        if m is None or isinstance(m, ArraySpec):
            return m
        spec = m()
        self._built[flat] = spec  # a race builds it twice, harmlessly
        return spec

    def byte_layout(self, spec: ArraySpec) -> ByteLayout | Unreferenced:
        """The members' byte layouts, one stacked axis more each (a hole is a missing chunk)."""
        members = self.members
        parts = []
        for flat in sorted(members) if isinstance(members, dict) else range(len(members)):
            member = self.member_at(flat)
            if member is None:
                continue
            layout = byte_layout(member)
            if isinstance(layout, Unreferenced):
                return layout
            parts.append((tuple(int(c) for c in np.unravel_index(flat, self.stack_shape)), layout))
        return stack_layouts(parts, len(self.stack_shape))

    def _present(self, coords: tuple[int, ...]) -> tuple[int, ArraySpec]:
        """The number of stacked axes and the member holding the chunk at ``coords`` (:class:`MissingChunk`: none)."""
        k = len(self.stack_shape)
        flat = int(np.ravel_multi_index(coords[:k], self.stack_shape)) if k else 0
        member = self.member_at(flat)
        if member is None:
            raise MissingChunk(coords)
        return k, member

    def read_chunk(self, coords: tuple[int, ...], region: Region) -> np.ndarray:
        k, member = self._present(coords)
        inner = member.reader.read_chunk(coords[k:], region[k:])
        return inner.reshape((1,) * k + inner.shape)

    def read_chunk_into(self, coords: tuple[int, ...], region: Region, out: np.ndarray) -> bool:
        """Forward to the member's :func:`read_chunk_into` (``out`` without the stacked axes)."""
        k, member = self._present(coords)
        return read_chunk_into(member.reader, coords[k:], region[k:], out.reshape(out.shape[k:]) if k else out)


def read_chunk_into(reader: Any, coords: tuple[int, ...], region: Region, out: np.ndarray) -> bool:
    """Let ``reader`` decode ``region`` of chunk ``coords`` straight into ``out`` (a writable view of the final
    array); False when it cannot, and nothing was written. Readers opt in with a method of the same name: a
    full load then costs one decode (or ``preadv``) per chunk, with no intermediate array to fault in and copy."""
    into = getattr(reader, "read_chunk_into", None)
    return bool(into(coords, region, out)) if into is not None else False


def stack_specs(
    stack_shape: Sequence[int],
    members: Sequence[Member | None] | Mapping[int, Member],
    fill_value: Any = None,
    template: ArraySpec | None = None,
) -> ArraySpec:
    """The :class:`ArraySpec` of ``members`` stacked along new leading axes (see :class:`StackedReader`).

    ``template`` (a spec of every member's shape, dtype and chunks) stands in for members given as callables;
    without one, every member must be a built spec, and they are checked against each other.
    """
    if template is None:
        present = [m for m in (members.values() if isinstance(members, Mapping) else members) if m is not None]
        specs = [m for m in present if isinstance(m, ArraySpec)]
        if not present:
            raise ValueError("cannot stack an empty set of arrays")
        if len(specs) != len(present):
            raise ValueError("members given lazily need a template spec")
        template = specs[0]
        geometry = (template.shape, template.dtype, template.chunk_shape)
        if any((m.shape, m.dtype, m.chunk_shape) != geometry for m in specs):
            raise ValueError("stacked members must share shape, dtype and chunk shape")
    elif not (members if isinstance(members, Mapping) else any(m is not None for m in members)):
        raise ValueError("cannot stack an empty set of arrays")  # members given lazily: none is built here
    stack_shape = tuple(int(s) for s in stack_shape)
    held: tuple[Member | None, ...] | dict[int, Member]
    if isinstance(members, Mapping):  # a dict of its own kind (members packed, built when read) is kept as it is
        held = members if isinstance(members, dict) and type(members) is not dict else dict(members)
    else:
        held = tuple(members)
    return ArraySpec(
        shape=stack_shape + template.shape,
        dtype=template.dtype,
        chunk_shape=(1,) * len(stack_shape) + template.chunk_shape,
        reader=StackedReader(stack_shape, held),
        fill_value=fill_value,
    )


def with_leading_axis(spec: ArraySpec) -> ArraySpec:
    """``spec`` with a new leading axis of length 1 (a message dim that held one value); a stack stays one
    stack (its members keep their flat indices), so the virtual parsers still see one object per chunk."""
    reader = spec.reader
    if isinstance(reader, CastReader):  # casts stay outermost (above the stack): cast(stack) = stack of casts
        return cast_spec(with_leading_axis(reader.inner), reader.dtype)
    if isinstance(reader, StackedReader):
        stacked = StackedReader((1, *reader.stack_shape), reader.members, reader._built)
        return replace(spec, shape=(1, *spec.shape), chunk_shape=(1, *spec.chunk_shape), reader=stacked)
    return stack_specs((1,), [spec], fill_value=spec.fill_value)


def cast_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` in ``dtype``; integers rounded to nearest and clipped to the type's range, not truncated."""
    if dtype.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(dtype)
        values = np.clip(np.rint(values), info.min, info.max)
    out: np.ndarray = values.astype(dtype)
    return out


@dataclass(frozen=True)
class CastReader:
    """The chunks of ``inner`` handed out in ``dtype`` (a dtype cast after decoding, e.g. float32 values
    written through a float64-only codec)."""

    inner: ArraySpec
    dtype: np.dtype

    def byte_layout(self, spec: ArraySpec) -> ByteLayout | Unreferenced:
        """The inner layout whose last codec casts (itself or its general form), set to cast to ``dtype``."""
        inner = byte_layout(self.inner)
        if isinstance(inner, Unreferenced):
            return inner
        for candidate in (inner, inner.general):
            if candidate is not None and candidate.casts:
                return candidate.astype(self.dtype)
        return Unreferenced("cast")

    def read_chunk(self, coords: tuple[int, ...], region: Region) -> np.ndarray:
        return cast_values(np.asarray(self.inner.reader.read_chunk(coords, region)), self.dtype)


def cast_spec(spec: ArraySpec, dtype: Any) -> ArraySpec:
    """``spec`` read in its own dtype and handed out in ``dtype`` (same grid, same chunks)."""
    dtype = np.dtype(dtype)
    return replace(spec, dtype=dtype, reader=CastReader(spec, dtype))


def permute_stacked(spec: ArraySpec, axis: int, order: Sequence[int]) -> ArraySpec | None:
    """``spec`` with stacked axis ``axis`` put in ``order`` (new position i holds old ``order[i]``): the members
    are renumbered, nothing is read. None when ``axis`` is not a stacked axis of a stack."""
    reader = spec.reader
    if isinstance(reader, CastReader):
        inner = permute_stacked(reader.inner, axis, order)
        return None if inner is None else cast_spec(inner, reader.dtype)
    if not isinstance(reader, StackedReader) or not 0 <= axis < len(reader.stack_shape):
        return None
    flat = np.arange(math.prod(reader.stack_shape)).reshape(reader.stack_shape)
    old_of_new = np.take(flat, list(order), axis=axis).reshape(-1)
    members = reader.members
    moved: tuple[Member | None, ...] | dict[int, Member]
    if isinstance(members, dict):  # a dict of its own kind (members packed, built when read) stays one
        moved = copy.copy(members)
        moved.clear()
        moved.update((i, dict.__getitem__(members, int(o))) for i, o in enumerate(old_of_new) if int(o) in members)
    else:
        moved = tuple(members[int(o)] for o in old_of_new)
    return replace(spec, reader=StackedReader(reader.stack_shape, moved))


@dataclass(frozen=True)
class TransposedReader:
    """The chunks of ``inner`` with their axes in ``order`` (axis i of this array is axis ``order[i]`` of inner)."""

    inner: ArraySpec
    order: tuple[int, ...]

    def _inner(self, key: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(key[b] for b in np.argsort(self.order))

    def byte_layout(self, spec: ArraySpec) -> Unreferenced:
        """Not referenced: Zarr v3's ``transpose`` codec would express it, but kerchunk references are Zarr v2."""
        return Unreferenced("transposed")

    def read_chunk(self, coords: tuple[int, ...], region: Region) -> np.ndarray:
        block = self.inner.reader.read_chunk(self._inner(coords), self._inner(region))
        moved: np.ndarray = np.asarray(block).transpose(self.order)
        return moved


def transpose_spec(spec: ArraySpec, order: Sequence[int]) -> ArraySpec:
    """``spec`` with its axes in ``order`` (as ``numpy.transpose``): a view of the same chunks."""
    order = tuple(int(o) for o in order)
    if order == tuple(range(len(order))):
        return spec
    return replace(
        spec,
        shape=tuple(spec.shape[o] for o in order),
        chunk_shape=tuple(spec.chunk_shape[o] for o in order),
        reader=TransposedReader(spec, order),
    )
