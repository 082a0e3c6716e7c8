"""zTensor's one table from its ``encoding`` vocabulary (a component's ``encoding``) to codec objects."""

from __future__ import annotations

from ...codecs import zstd
from ...codecs.base import PASSTHROUGH, Codec

__all__ = ["ENCODINGS", "RAW", "SEEKABLE_ZSTD", "V01_ENCODINGS"]

RAW = "raw"
#: the v1 reference's seekable zstd: frames of one stream plus a skippable seek table
SEEKABLE_ZSTD = "zt.zstd-seekable/1"

#: a component's ``encoding`` -> the codec that decodes it
ENCODINGS: dict[str, Codec] = {RAW: PASSTHROUGH, zstd.CODEC.name: zstd.CODEC, SEEKABLE_ZSTD: zstd.CODEC}
#: what v0.1 files (and v1 components) may name
V01_ENCODINGS = (RAW, zstd.CODEC.name)
