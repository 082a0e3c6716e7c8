"""Safe CBOR decoding for metadata read from files.

Tags that build objects are refused while decoding (no datetime, Decimal, regex, UUID, set ... is ever built
from a file), nesting depth is bounded by the decoder, and every decoder failure becomes a
:class:`MetadataError` naming where the item came from. Bignums, string references, the self-describe tag and
simple values other than false/true/null (inert objects that attributes carry as text) are accepted.
"""

from __future__ import annotations

import functools
from typing import Any

import cbor2

from ..errors import LimitExceededError, MetadataError

__all__ = [
    "MAX_DEPTH",
    "PLAIN_NATIVE_TAGS",
    "REFUSED_NATIVE_TAGS",
    "dumps",
    "dumps_canonical",
    "head",
    "loads",
    "loads_prefix",
]

MAX_DEPTH = 64

#: tags cbor2 (6.3) decodes by itself into objects that are not plain CBOR values, refused while decoding:
#: date/times (0, 1, 100, 1004), decimal fractions and bigfloats (4, 5), shared references (28, 29), rationals
#: (30), regexes (35), MIME (36), UUIDs (37), IP addresses and networks (52, 54, 260, 261), sets (258).
#: tests/test_codecs_shared.py checks it against every tag the installed cbor2 decodes natively.
REFUSED_NATIVE_TAGS = (0, 1, 4, 5, 28, 29, 30, 35, 36, 37, 52, 54, 100, 258, 260, 261, 1004)
#: native tags that decode to plain values: bignums (int), string references (str), self-describe
PLAIN_NATIVE_TAGS = (2, 3, 25, 256, 55799)


def _refuse(number: int, *_args: Any) -> Any:
    raise MetadataError(f"CBOR tag {number} is not allowed in metadata")


def _refuse_tag(tag: Any, immutable: bool) -> Any:
    """Every tag cbor2 does not decode natively (cbor2 6 calls this with the tag and a flag)."""
    return _refuse(tag.tag)


_SEMANTIC = {number: functools.partial(_refuse, number) for number in REFUSED_NATIVE_TAGS}


def loads(data: bytes | memoryview, *, where: str = "") -> Any:
    """Decode exactly one CBOR item occupying all of ``data`` (tags refused and nesting bounded while decoding,
    so there is no second walk over the decoded item)."""
    obj, used = loads_prefix(data, where=where)
    if used != len(data):
        raise MetadataError(f"{where}{len(data) - used} unexpected bytes after the CBOR item")
    return obj


def loads_prefix(data: bytes | memoryview, *, where: str = "") -> tuple[Any, int]:
    """Decode one CBOR item at the start of ``data``; return it and its encoded length."""
    import io

    buf = io.BytesIO(bytes(data))
    try:
        # nesting: MAX_DEPTH levels below the top item; tags: refused as they are met
        decoder = cbor2.CBORDecoder(buf, tag_hook=_refuse_tag, semantic_decoders=_SEMANTIC, max_depth=MAX_DEPTH + 1)
        obj = decoder.decode()
    except MetadataError as exc:
        raise MetadataError(f"{where}{exc}") from None
    except RecursionError:
        raise LimitExceededError(f"{where}metadata nesting is too deep") from None
    except (
        cbor2.CBORDecodeError,
        ValueError,
        TypeError,
        OverflowError,
        MemoryError,
        EOFError,
        UnicodeDecodeError,
    ) as exc:
        if isinstance(exc.__cause__, MetadataError):  # a refused tag, wrapped by the decoder
            raise MetadataError(f"{where}{exc.__cause__}") from None
        if "nesting depth" in str(exc):  # cbor2's own container depth limit
            raise LimitExceededError(
                f"{where}metadata nesting is too deep: nested deeper than {MAX_DEPTH} levels ({exc})"
            ) from None
        raise MetadataError(f"{where}invalid CBOR: {exc}") from None
    return obj, buf.tell()


def dumps(obj: Any, *, canonical: bool = False) -> bytes:
    """cbor2's encoding (``canonical``: shortest numbers, maps in cbor2's length-first key order)."""
    out: bytes = cbor2.dumps(obj, canonical=canonical)
    return out


def head(major: int, n: int) -> bytes:
    """A CBOR item head (major type and argument ``n``) with the shortest argument encoding."""
    if n < 24:
        return bytes([(major << 5) | n])
    for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < (1 << (8 * width)):
            return bytes([(major << 5) | info]) + n.to_bytes(width, "big")
    raise ValueError("CBOR length too large")


def dumps_canonical(obj: Any) -> bytes:
    """Deterministic CBOR exactly as the Tensogram reference writes it (spec §7): maps sorted by the bytewise
    order of their encoded keys (cbor2's length-first order differs when integer and text keys are mixed),
    leaves in cbor2's canonical form (shortest integers and floats)."""
    if isinstance(obj, dict):
        items = sorted(((dumps_canonical(k), v) for k, v in obj.items()), key=lambda kv: kv[0])
        return head(5, len(items)) + b"".join(k + dumps_canonical(v) for k, v in items)
    if isinstance(obj, (list, tuple)):
        return head(4, len(obj)) + b"".join(dumps_canonical(v) for v in obj)
    return cbor2.dumps(obj, canonical=True)
