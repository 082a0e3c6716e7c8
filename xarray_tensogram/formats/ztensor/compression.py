"""zTensor's one table from its ``encoding`` vocabulary (a component's ``encoding``) to codec objects, and
the chain a part's encoding makes (what every read path asks)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...codecs import zstd
from ...codecs.base import PASSTHROUGH, Codec
from ...codecs.chain import RAW as RAW_VALUES
from ...codecs.chain import Chain, Stage
from ...errors import UnsupportedError

__all__ = ["ENCODINGS", "RAW", "SEEKABLE_ZSTD", "V01_ENCODINGS", "part_chain", "stores_values"]

RAW = "raw"
#: the v1 reference's seekable zstd: frames of one stream plus a skippable seek table
SEEKABLE_ZSTD = "zt.zstd-seekable/1"

#: a component's ``encoding`` -> the codec that decodes it
ENCODINGS: dict[str, Codec] = {RAW: PASSTHROUGH, zstd.CODEC.name: zstd.CODEC, SEEKABLE_ZSTD: zstd.CODEC}
#: what v0.1 files (and v1 components) may name
V01_ENCODINGS = (RAW, zstd.CODEC.name)


def part_chain(encoding: str, dtype: np.dtype, count: int, where: str = "") -> Chain:
    """The chain of a part of ``count`` elements of ``dtype`` (in the part's byte order) stored with
    ``encoding``; an encoding outside :data:`ENCODINGS` is refused naming the known ones."""
    if not isinstance(encoding, str) or encoding not in ENCODINGS:
        raise UnsupportedError(f"{where}encoding {encoding!r} is not supported (known: {', '.join(ENCODINGS)})")
    return _chain(encoding, np.dtype(dtype), count)


@lru_cache(maxsize=1024)
def _chain(encoding: str, dtype: np.dtype, count: int) -> Chain:
    """One chain per part geometry (an open asks one for each of thousands of tensors)."""
    return Chain(Stage(RAW_VALUES, {"dtype": dtype}), (Stage(ENCODINGS[encoding]),), count)


#: the encodings whose parts hold their values as they are (byte ranges of them read directly)
_AS_STORED = frozenset(word for word in ENCODINGS if part_chain(word, np.dtype("u1"), 0).stored_is_encoded)


def stores_values(encoding: object) -> bool:
    """Whether parts of ``encoding`` hold their values as they are (byte ranges of them read directly)."""
    return isinstance(encoding, str) and encoding in _AS_STORED
