"""Tensogram v3 framing constants and fixed-size structures (spec §2-§4)."""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = [
    "BODY_TYPES",
    "DATA_FRAME",
    "END_MAGIC",
    "FOOTER_TYPES",
    "FRAME_END",
    "FRAME_HEADER",
    "FRAME_RULES",
    "FRAME_START",
    "HEADER_TYPES",
    "MAGIC",
    "POSTAMBLE",
    "PREAMBLE",
    "PRECEDER_FRAME",
    "FrameHeader",
    "Preamble",
    "align8",
    "parse_frame_header",
    "parse_preamble",
    "unpack_frame_header",
]

MAGIC = b"TENSOGRM"
END_MAGIC = b"39277777"
FRAME_START = b"FR"
FRAME_END = b"ENDF"
PREAMBLE = 24
POSTAMBLE = 24
FRAME_HEADER = 16
MIN_MESSAGE = PREAMBLE + POSTAMBLE

HEADER_METADATA, HEADER_INDEX, HEADER_HASH = 1, 2, 3
FOOTER_HASH, FOOTER_INDEX, FOOTER_METADATA = 5, 6, 7
PRECEDER_FRAME, DATA_FRAME = 8, 9
HEADER_TYPES = frozenset({HEADER_METADATA, HEADER_INDEX, HEADER_HASH})
BODY_TYPES = frozenset({PRECEDER_FRAME, DATA_FRAME})
FOOTER_TYPES = frozenset({FOOTER_HASH, FOOTER_INDEX, FOOTER_METADATA})
METADATA_TYPES = frozenset({1, 7})
INDEX_TYPES = frozenset({2, 6})

FLAG_CBOR_AFTER_PAYLOAD = 0x1
FLAG_HASH_PRESENT = 0x2

_PRE = struct.Struct(">8sHHIQ")
_HDR = struct.Struct(">2sHHHQ")
_POST = struct.Struct(">QQ8s")


def align8(n: int) -> int:
    return (n + 7) & ~7


#: each valid frame type's phase in a message (0 header, 1 body, 2 footer) and minimum length in bytes
FRAME_RULES = {
    t: (phase, 36 if t == DATA_FRAME else 28)
    for phase, types in enumerate((HEADER_TYPES, BODY_TYPES, FOOTER_TYPES))
    for t in types
}


class Preamble(NamedTuple):
    magic: bytes
    version: int
    flags: int
    reserved: int
    total_length: int


class FrameHeader(NamedTuple):
    marker: bytes
    frame_type: int
    version: int
    flags: int
    length: int


def parse_preamble(b: bytes) -> Preamble:
    return Preamble._make(_PRE.unpack_from(b))


#: a frame header's fields at ``b[at:]`` as a plain tuple (a scan parses thousands)
unpack_frame_header = _HDR.unpack_from


def parse_frame_header(b: bytes, at: int = 0) -> FrameHeader:
    """The frame header at ``b[at:]``."""
    return FrameHeader._make(unpack_frame_header(b, at))


#: a postamble's (first footer offset, total length, end magic)
parse_postamble = _POST.unpack_from
