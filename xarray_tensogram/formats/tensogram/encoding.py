"""An object's pipeline (encoding, filter, compression, parameters) read without touching its payload.

Opening a Dataset records each variable's pipeline in ``.encoding`` so that writing it again keeps the
compression. Reading the frame footer, then exactly the descriptor after the payload, keeps "open reads
metadata only" true; frames that put the descriptor first give no pipeline here.
"""

from __future__ import annotations

from typing import Any

from ...codecs import cbor
from ...errors import XarrayTensogramError
from .encode import encoding_from_descriptor
from .framing import FLAG_CBOR_AFTER_PAYLOAD, FRAME_HEADER, parse_frame_header

__all__ = ["pipeline_encoding"]

_FOOTER = 20  # cbor_offset u64, hash u64, "ENDF"


def pipeline_encoding(message: Any, j: int) -> dict[str, Any]:
    """``encoding_from_descriptor`` of object ``j`` of ``message``, or ``{}`` when it cannot be had cheaply or the
    frame is malformed (the read of the values reports that with its offset)."""
    ref = message.objects[j]
    source, off, length = message.source, ref.frame_offset, ref.frame_length
    if length < FRAME_HEADER + _FOOTER:
        return {}
    try:
        hdr = parse_frame_header(source.read(off, FRAME_HEADER, what="data frame header"))
        if not hdr.flags & FLAG_CBOR_AFTER_PAYLOAD:
            return {}
        footer = source.read(off + length - _FOOTER, _FOOTER, what="data frame footer")
        cbor_offset = int.from_bytes(footer[:8], "big")
        if not FRAME_HEADER <= cbor_offset <= length - _FOOTER:
            return {}
        raw = source.read(off + cbor_offset, length - _FOOTER - cbor_offset, what="descriptor")
        desc = cbor.loads(raw, where=f"descriptor at {off + cbor_offset}")
    except XarrayTensogramError:
        return {}
    return encoding_from_descriptor(desc) if isinstance(desc, dict) else {}
