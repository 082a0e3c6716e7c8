"""NaN/Inf companion masks (Tensogram spec §15): a mask's ``method`` and blob <-> a boolean mask of n elements.

The methods are the codecs of :data:`~.compression.MASK_METHODS` (Tensogram's one table), applied to the
MSB-first packed bitmap; the codecs themselves are format-free (:mod:`xarray_tensogram.codecs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...codecs import bitmaps, blosc2
from ...codecs.base import PASSTHROUGH, Codec
from .compression import MASK_METHODS, stage_codec

__all__ = ["DEFAULT_MASK_METHOD", "MASK_METHODS", "decode_mask", "encode_mask"]

#: the reference encoder's default method for NaN/Inf masks
DEFAULT_MASK_METHOD = bitmaps.ROARING.name

_INNER = blosc2.CODEC.param("codec").default
#: what a mask's codec is given beyond the bit count, and the ``params`` the reference records for the mask
_WRITTEN_WITH: dict[Codec, tuple[dict[str, Any], dict[str, Any]]] = {
    blosc2.CODEC: ({"codec": _INNER, "clevel": 5, "bitshuffle": True}, {"codec": _INNER, "level": 5}),
}


def _bits_param(codec: Codec, n: int) -> dict[str, Any]:
    return {"bits": n} if any(p.name == "bits" for p in codec.params) else {}


def decode_mask(
    method: str, blob: bytes | memoryview, n: int, params: Mapping[str, Any] | None = None, where: str = ""
) -> np.ndarray:
    """Decode one mask blob into a boolean array of ``n`` elements."""
    codec = stage_codec("mask method", method, where)
    if codec is PASSTHROUGH:
        return bitmaps.unpack(bytes(blob), n, where)
    packed = codec.decode(blob, (n + 7) // 8, _bits_param(codec, n), where)
    return bitmaps.unpack(np.asarray(packed, dtype=np.uint8) if isinstance(packed, np.ndarray) else packed, n, where)


def encode_mask(bits: np.ndarray, method: str, small_threshold: int) -> tuple[bytes, str, dict[str, Any] | None]:
    """The blob of a boolean mask, the method it was written with (``none`` when the packed bitmap is at most
    ``small_threshold`` bytes) and the ``params`` to record."""
    packed = np.packbits(bits).tobytes()
    codec = PASSTHROUGH if small_threshold and len(packed) <= small_threshold else stage_codec("mask method", method)
    given, recorded = _WRITTEN_WITH.get(codec, ({}, None))
    blob, _ = codec.encode(packed, {**_bits_param(codec, bits.size), **given})
    return blob, codec.name, recorded
