"""Where each storage chunk of a raw variable lives, and which Zarr v3 codecs decode it.

One planner per format turns the :class:`~xarray_tensogram.catalog.ArraySpec` behind a raw
variable into a :class:`VirtualArray`: a regular chunk grid, one byte range per present chunk and a
codec pipeline shared by every chunk. Standard codecs (``bytes``, ``zstd``, ``numcodecs.shuffle``)
are used where they express the stored bytes exactly, so readers without this package can read
those arrays; the package's own codecs (``codecs.py``) only where they cannot. A planner returns
``None`` when the chunks cannot be expressed as byte ranges (e.g. sparse zTensor layouts); the
parser then inlines the decoded values.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..catalog import ArraySpec, CastReader, StackedReader, TransposedReader, chunk_counts, chunk_extent
from ..codecs import zstd
from ..codecs.base import PASSTHROUGH
from .codecs import TET_TILE_ID, TGM_FRAME_ID

__all__ = ["ChunkRef", "VirtualArray", "bytes_codec", "plan_chunks"]


@dataclass(frozen=True)
class ChunkRef:
    """One chunk: its grid coordinates and the byte range holding it (``path`` None = the parsed file)."""

    coords: tuple[int, ...]
    offset: int
    length: int
    path: str | None = None


@dataclass
class VirtualArray:
    """A Zarr array whose chunks are byte ranges of existing files."""

    shape: tuple[int, ...]
    dtype: np.dtype
    chunk_shape: tuple[int, ...]
    codecs: list[dict[str, Any]]
    refs: list[ChunkRef] = field(default_factory=list)


def bytes_codec(dtype: np.dtype, big_endian: bool = False) -> dict[str, Any]:
    if np.dtype(dtype).itemsize == 1:
        return {"name": "bytes", "configuration": {}}
    return {"name": "bytes", "configuration": {"endian": "big" if big_endian else "little"}}


#: what a format's record names as its ``virtual_planner``
Planner = Callable[[ArraySpec, Callable[[str | None], str]], "VirtualArray | None"]


def _through_transforms(planner: Planner) -> Planner:
    """A planner that also plans transformed specs from the plan of the spec they transform: a cast after
    decoding is done by the package's frame codec. A transpose is not referenced: Zarr v3's ``transpose``
    codec would express it, but kerchunk references are Zarr v2, which has none (the values are inlined)."""

    @functools.wraps(planner)
    def plan(spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | None:
        reader = spec.reader
        if isinstance(reader, TransposedReader):
            return None
        if isinstance(reader, CastReader):
            inner = plan(reader.inner, resolve)
            return None if inner is None else _cast(inner, spec)
        return planner(spec, resolve)

    return plan


def _cast(inner: VirtualArray, spec: ArraySpec) -> VirtualArray | None:
    """A cast after decoding: only the frame codec (which decodes whole objects) can apply it."""
    if not inner.codecs or inner.codecs[-1]["name"] != TGM_FRAME_ID:
        return None
    frame = {"name": TGM_FRAME_ID, "configuration": {"astype": spec.dtype.str}}
    codecs = [bytes_codec(spec.dtype), *inner.codecs[1:-1], frame]
    return VirtualArray(spec.shape, spec.dtype, inner.chunk_shape, codecs, inner.refs)


def _zarr_of(codec: Any) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] | None = codec.zarr({})
    return list(entries or [])


# -- Tensogram: one data object per chunk ---------------------------------------------------------
def _tensogram_members(spec: ArraySpec) -> tuple[tuple[int, ...], list[tuple[int, Any]]]:
    """Stack shape and the present objects' readers with their flat (C order) stack index; holes are absent.

    ``StackedReader.members`` is a tuple over the whole stack, or a dict ``{flat index: member}`` for
    sparse hypercubes."""
    reader = spec.reader
    if isinstance(reader, StackedReader):
        return reader.stack_shape, [(int(i), m.reader) for i, m in reader.present()]
    return (), [(0, reader)]


def _standard_tensogram(desc: dict[str, Any]) -> tuple[str, str] | None:
    """The standard Zarr codecs of an object (JSON, after the bytes codec) and its byte order, or None when only
    the frame codec can decode it: the codec objects of Tensogram's table say how Zarr spells them."""
    from ..formats.tensogram.compression import STAGES, codec_params

    if STAGES["encoding"].get(desc["encoding"]) is not PASSTHROUGH or desc.get("masks") or desc["dtype"] == "bitmask":
        return None
    entries: list[dict[str, Any]] = []
    for stage in ("filter", "compression"):
        codec = STAGES[stage].get(desc[stage])
        zarr = codec.zarr(codec_params(desc, codec)) if codec is not None else None
        if zarr is None:
            return None
        entries += zarr
    return json.dumps(entries), str(desc.get("byte_order", "little"))


@_through_transforms
def plan_tensogram(spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | None:
    from ..formats.tensogram.objects import ObjectReader

    stack_shape, present = _tensogram_members(spec)
    if not all(isinstance(r, ObjectReader) for _, r in present):
        return None
    layouts = [r.layout() for _, r in present]
    inner = spec.shape[len(stack_shape) :]
    chunk_shape = (1,) * len(stack_shape) + tuple(max(1, s) for s in inner)
    sigs = {_standard_tensogram(lay.descriptor) for lay in layouts}
    grid_coords = [tuple(int(c) for c in np.unravel_index(i, stack_shape)) if stack_shape else () for i, _ in present]
    pad = (0,) * len(inner)
    sig = next(iter(sigs)) if len(sigs) == 1 else None
    if sig is not None:
        entries, order = sig
        codecs = [bytes_codec(spec.dtype, order == "big"), *json.loads(entries)]
        refs = [
            ChunkRef(c + pad, lay.region_start, lay.region_length) for c, lay in zip(grid_coords, layouts, strict=True)
        ]
    else:
        codecs = [bytes_codec(spec.dtype), {"name": TGM_FRAME_ID, "configuration": {}}]
        refs = [
            ChunkRef(c + pad, r.ref.frame_offset, r.ref.frame_length)
            for c, (_, r) in zip(grid_coords, present, strict=True)
        ]
    return VirtualArray(spec.shape, spec.dtype, chunk_shape, codecs, refs)


# -- Tetration: one tile per chunk ----------------------------------------------------------------
def _unique_ranges(
    tiles: list[tuple[tuple[int, ...], int, int, int, int, bool]], default: int
) -> tuple[list[ChunkRef], dict[str, list[Any]]]:
    """Byte ranges for every tile; special tiles get a range length no other tile has (see codecs.py)."""
    ordinary = {stored for (_c, _o, stored, _r, codec, clipped) in tiles if not clipped and codec == default}
    taken = set(ordinary)
    refs, special = [], {}
    for coords, offset, stored, raw, codec, clipped in tiles:
        if not clipped and codec == default:
            refs.append(ChunkRef(coords, offset, stored))
            continue
        skip = 0
        while stored + skip in taken or offset - skip < 0:
            skip += 1
        taken.add(stored + skip)
        refs.append(ChunkRef(coords, offset - skip, stored + skip))
        special[str(stored + skip)] = [skip, stored, raw, codec, None]
    return refs, special


@_through_transforms
def plan_tetr(spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | None:
    from ..formats.tetr import TetrTileReader

    reader = spec.reader
    if not isinstance(reader, TetrTileReader):
        return None
    grid = chunk_counts(spec.shape, spec.chunk_shape)
    tiles, shapes = [], {}
    for coords in np.ndindex(*grid):
        offset, stored, raw, codec = reader.tile_range(coords)
        extent = chunk_extent(spec.shape, spec.chunk_shape, coords)
        tiles.append((tuple(coords), offset, stored, raw, codec, extent != spec.chunk_shape))
        shapes[tuple(coords)] = list(extent)
    full_codecs = Counter(t[4] for t in tiles if not t[5]) or Counter(t[4] for t in tiles)
    default = full_codecs.most_common(1)[0][0] if full_codecs else 0
    if all(not t[5] and t[4] == default for t in tiles):
        codecs = [bytes_codec(spec.dtype)] + (_zarr_of(zstd.CODEC) if default == 1 else [])
        refs = [ChunkRef(t[0], t[1], t[2]) for t in tiles]
        return VirtualArray(spec.shape, spec.dtype, spec.chunk_shape, codecs, refs)
    refs, special = _unique_ranges(tiles, default)
    for ref in refs:
        entry = special.get(str(ref.length))
        if entry is not None and entry[4] is None:
            entry[4] = shapes[ref.coords]
    config = {"dtype": spec.dtype.str, "chunk_shape": list(spec.chunk_shape), "codec": default, "special": special}
    codecs = [bytes_codec(spec.dtype), {"name": TET_TILE_ID, "configuration": config}]
    return VirtualArray(spec.shape, spec.dtype, spec.chunk_shape, codecs, refs)


# -- zTensor: one tensor per chunk ----------------------------------------------------------------
@_through_transforms
def plan_ztensor(spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | None:
    from ..formats.ztensor.compression import ENCODINGS
    from ..formats.ztensor.decode import TensorReader

    reader = spec.reader
    if not isinstance(reader, TensorReader):
        return None
    info = reader.info
    if info.problem is not None or info.layout != "dense" or len(info.parts) != 1:
        return None
    part = info.main_part
    codec = ENCODINGS.get(part.encoding)
    zarr = codec.zarr({}) if codec is not None else None
    if zarr is None or info.numpy_dtype != part.storage.newbyteorder("="):
        return None
    chunk_shape = tuple(max(1, s) for s in spec.shape)
    codecs = [bytes_codec(spec.dtype, part.big_endian), *zarr]
    refs = (
        []
        if math.prod(spec.shape) == 0
        else [ChunkRef((0,) * len(spec.shape), part.offset, part.length, resolve(part.shard) if part.shard else None)]
    )
    return VirtualArray(spec.shape, spec.dtype, chunk_shape, codecs, refs)


def plan_chunks(fmt: str, spec: ArraySpec, resolve: Callable[[str | None], str]) -> VirtualArray | None:
    """The virtual array of ``spec`` in format ``fmt`` (the planner its record names); ``resolve(shard)``
    gives a shard file's URL."""
    from ..formats import registry

    planner: Planner = registry.load(registry.get(fmt).virtual_planner)
    return planner(spec, resolve)
