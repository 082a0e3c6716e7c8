"""zTensor's one table from its ``encoding`` vocabulary (a component's ``encoding``) to codec objects, and
the chain a part's encoding makes (what every read path asks)."""

from __future__ import annotations

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
    codec = ENCODINGS.get(encoding)
    if codec is None:
        raise UnsupportedError(f"{where}encoding {encoding!r} is not supported (known: {', '.join(ENCODINGS)})")
    return Chain(Stage(RAW_VALUES, {"dtype": dtype}), (Stage(codec),), count)


def stores_values(encoding: str) -> bool:
    """Whether parts of ``encoding`` hold their values as they are (byte ranges of them read directly)."""
    return encoding in ENCODINGS and part_chain(encoding, np.dtype("u1"), 0).stored_is_encoded
