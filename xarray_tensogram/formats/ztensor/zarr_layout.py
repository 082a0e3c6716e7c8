"""Where a zTensor tensor is stored, as Zarr v3 sees it (for the virtual Zarr parsers): one chunk per
dense tensor of one part whose encoding a standard Zarr codec decodes (also in v2 shard files)."""

from __future__ import annotations

import math

from ...array_spec import ArraySpec
from ...byte_layout import ByteLayout, ChunkRef, Unreferenced, zarr_bytes_codec
from .compression import ENCODINGS, part_chain
from .model import TensorInfo

__all__ = ["tensor_layout"]


def tensor_layout(info: TensorInfo, spec: ArraySpec) -> ByteLayout | Unreferenced:
    if info.problem is not None or info.layout != "dense" or len(info.parts) != 1:
        return Unreferenced("layout")
    part = info.main_part
    known = part.encoding in ENCODINGS
    zarr = part_chain(part.encoding, part.storage, math.prod(spec.shape)).zarr() if known else None
    if zarr is None or info.numpy_dtype != part.storage.newbyteorder("="):
        return Unreferenced("codec")
    chunk_shape = tuple(max(1, s) for s in spec.shape)
    codecs = (zarr_bytes_codec(spec.dtype, part.big_endian), *zarr)
    refs = (
        () if math.prod(spec.shape) == 0 else (ChunkRef((0,) * len(spec.shape), part.offset, part.length, part.shard),)
    )
    return ByteLayout(chunk_shape, codecs, refs)
