"""Safe CBOR decoding for metadata read from files.

Tags are refused (they could construct arbitrary objects), nesting depth and
item counts are bounded, and every decoder failure becomes a
:class:`MetadataError` naming where the item came from.
"""

from __future__ import annotations

import re
from typing import Any

import cbor2

from ..errors import LimitExceededError, MetadataError

__all__ = ["MAX_DEPTH", "check_values", "dumps", "dumps_canonical", "head", "loads", "loads_prefix"]

MAX_DEPTH = 64

#: initial bytes of tags (major type 6) and of simple values other than false/true/null and floats.
#: Without any such byte in an item, no value in it can come from a tag or be an odd simple value, and
#: the value walk is skipped (the decoder already bounds the nesting); a match (it may also be a byte
#: inside a number or a non-ASCII string) costs the walk, as before.
_MAYBE_TAGGED = re.compile(rb"[\xc0-\xdb\xe0-\xf3\xf7\xf8]")


def _refuse_tag(decoder: Any, tag: Any) -> Any:
    raise MetadataError(f"CBOR tag {tag.tag} is not allowed in metadata")


_SCALARS = frozenset({str, bytes, int, float, bool, type(None)})


def _depth(obj: Any, limit: int, depth: int = 0) -> None:
    """Refuse values built from tags (datetime, Decimal, ...) and nesting deeper than ``limit``.

    Recursive over containers only, with ``limit`` bounding the recursion; a container whose items
    are all scalars (most metadata maps and lists) is checked by one set operation in C.
    """
    scalars = _SCALARS
    t = type(obj)
    if t is dict:
        if not scalars.issuperset(map(type, obj.values())):
            if depth >= limit:
                raise LimitExceededError(f"metadata nesting deeper than {limit} levels")
            for v in obj.values():
                if type(v) not in scalars:
                    _depth(v, limit, depth + 1)
        if not scalars.issuperset(map(type, obj)):
            if depth >= limit:
                raise LimitExceededError(f"metadata nesting deeper than {limit} levels")
            for k in obj:
                if type(k) not in scalars:
                    _depth(k, limit, depth + 1)
    elif t is list or t is tuple or t is frozenset:
        if not scalars.issuperset(map(type, obj)):
            if depth >= limit:
                raise LimitExceededError(f"metadata nesting deeper than {limit} levels")
            for v in obj:
                if type(v) not in scalars:
                    _depth(v, limit, depth + 1)
    elif t not in scalars:
        raise MetadataError(f"CBOR value of type {t.__name__} (from a tag) is not allowed in metadata")


def loads(data: bytes | memoryview, *, where: str = "", check: bool = True) -> Any:
    """Decode exactly one CBOR item occupying all of ``data``.

    ``check=False`` skips the walk over the decoded values (tags are still refused while
    decoding); for readers that type-check their known keys themselves and only need to
    check free-form values.
    """
    obj, used = loads_prefix(data, where=where, check=check)
    if used != len(data):
        raise MetadataError(f"{where}{len(data) - used} unexpected bytes after the CBOR item")
    return obj


def check_values(obj: Any, *, where: str = "") -> None:
    """The value walk ``loads`` does by default, for a part of an item decoded with ``check=False``."""
    _depth_checked(obj, where, MAX_DEPTH)


def _depth_checked(obj: Any, where: str, max_depth: int) -> None:
    try:
        _depth(obj, max_depth)
    except LimitExceededError as exc:
        raise LimitExceededError(f"{where}{exc}") from None
    except MetadataError as exc:
        raise MetadataError(f"{where}{exc}") from None


def loads_prefix(data: bytes | memoryview, *, where: str = "", check: bool = True) -> tuple[Any, int]:
    """Decode one CBOR item at the start of ``data``; return it and its encoded length."""
    import io

    raw = bytes(data)
    buf = io.BytesIO(raw)
    try:
        # the decoder bounds the nesting itself (MAX_DEPTH nested levels below the top, as the walk counts)
        obj = cbor2.CBORDecoder(buf, tag_hook=_refuse_tag, max_depth=MAX_DEPTH + 1).decode()
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
        if "nesting depth" in str(exc):  # cbor2's own container depth limit
            raise LimitExceededError(
                f"{where}metadata nesting is too deep: nested deeper than {MAX_DEPTH} levels ({exc})"
            ) from None
        raise MetadataError(f"{where}invalid CBOR: {exc}") from None
    used = buf.tell()
    if check and _MAYBE_TAGGED.search(raw, 0, used) is not None:
        _depth_checked(obj, where, MAX_DEPTH)
    return obj, used


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
    """Deterministic CBOR exactly as the Tensogram reference writes it (spec §7).

    Maps are sorted by the bytewise order of their encoded keys (which for text keys
    equals cbor2's length-first canonical order, but differs when integer and text keys
    are mixed); leaves use cbor2's canonical form (shortest integers and floats).
    """
    if isinstance(obj, dict):
        items = sorted(((dumps_canonical(k), v) for k, v in obj.items()), key=lambda kv: kv[0])
        return head(5, len(items)) + b"".join(k + dumps_canonical(v) for k, v in items)
    if isinstance(obj, (list, tuple)):
        return head(4, len(obj)) + b"".join(dumps_canonical(v) for v in obj)
    return cbor2.dumps(obj, canonical=True)
