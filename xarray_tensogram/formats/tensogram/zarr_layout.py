"""Where a Tensogram data object is stored, as Zarr v3 sees it (for the virtual Zarr parsers).

An object is one chunk. Where standard codecs express its payload exactly (raw, zstd, shuffle+zstd, no
masks), the chunk is the payload's byte range with those codecs, so readers without this package read it;
its general form (every object has one) is the whole frame through the package's frame codec
(:data:`FRAME_CODEC_ID`), which decodes any pipeline and can cast after decoding.
"""

from __future__ import annotations

from typing import Any

from ...array_spec import ArraySpec
from ...byte_layout import ByteLayout, ChunkRef, zarr_bytes_codec
from .compression import chain_gives_values, chain_of

__all__ = ["FRAME_CODEC_ID", "object_layout"]

#: the numcodecs/zarr id of the package's codec decoding a whole data-object frame (``virtual/codecs.py``)
FRAME_CODEC_ID = "xarray_tensogram.tgm_frame"


def object_layout(
    spec: ArraySpec, descriptor: dict[str, Any], frame: tuple[int, int], payload: tuple[int, int]
) -> ByteLayout:
    """An object as one Zarr chunk (the whole object, whatever its row bands), from its descriptor and the
    ``(offset, length)`` of its frame and of its payload."""
    coords = (0,) * len(spec.shape)
    chunk_shape = tuple(max(1, s) for s in spec.shape)
    frame_codecs = (zarr_bytes_codec(spec.dtype), {"name": FRAME_CODEC_ID, "configuration": {}})
    whole = ByteLayout(chunk_shape, frame_codecs, (ChunkRef(coords, *frame),), casts=True)
    # the standard Zarr codecs after ``bytes``: what the object's chain says Zarr spells them
    standard = chain_of(descriptor).zarr() if chain_gives_values(descriptor) else None
    if standard is None:
        return whole
    big = str(descriptor.get("byte_order", "little")) == "big"
    codecs = (zarr_bytes_codec(spec.dtype, big), *standard)
    return ByteLayout(chunk_shape, codecs, (ChunkRef(coords, *payload),), general=whole)
