"""A Tensogram message's global metadata as the reference decoder gives it (spec §8.1).

Kept apart from the object readers so that scanning can check a message's metadata without holding it:
an open of an archive keeps the metadata frame's CBOR bytes per message (not containers the garbage
collector walks) and decodes them again where a stage needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...codecs import cbor
from ...errors import MetadataError

__all__ = ["message_metadata", "normalise_metadata", "with_preceders"]


class _Preceded(Protocol):
    """A data object's location (``ObjectRef``) as far as metadata is concerned: its preceder entry."""

    @property
    def preceder(self) -> dict[str, Any] | None: ...


def normalise_metadata(meta: dict[str, Any], n_objects: int) -> dict[str, Any]:
    """Apply the reference decoder's metadata rules (spec §8.1) and add ``version``; errors do not name
    the place (the caller prefixes it)."""
    out: dict[str, Any] = {}
    extra = meta.get("_extra_", {})
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise MetadataError("_extra_ is not a map")
    extra = dict(extra)
    for key, value in meta.items():
        if not isinstance(key, str):
            raise MetadataError(f"top-level metadata key {key!r} is not text")
        if key in ("base", "_extra_", "_reserved_"):
            continue
        if key in extra:
            raise MetadataError(f"ambiguous metadata: key {key!r} is both top-level and in _extra_")
        extra[key] = value
    base = meta.get("base", [])
    if base is None:
        base = []
    if not isinstance(base, list) or not all(isinstance(b, dict) for b in base):
        raise MetadataError("'base' is not a list of maps")
    if len(base) > n_objects:
        raise MetadataError(f"'base' has {len(base)} entries for {n_objects} objects")
    base = [dict(b) for b in base] + [{} for _ in range(n_objects - len(base))]
    reserved = meta.get("_reserved_", {})
    out["version"] = 3
    out["base"] = base
    out["_extra_"] = extra
    out["_reserved_"] = reserved if isinstance(reserved, dict) else {}
    return out


def message_metadata(raw: bytes, objects: Sequence[_Preceded], where: str) -> dict[str, Any]:
    """A message's metadata from its metadata frame's CBOR: normalised, preceders merged into ``base``."""
    meta = cbor.loads(raw, where=where)
    try:
        if not isinstance(meta, dict):
            raise MetadataError(f"metadata is a {type(meta).__name__}, expected a map")
        return with_preceders(normalise_metadata(meta, len(objects)), objects)
    except MetadataError as exc:
        raise type(exc)(f"{where}{exc}") from None


def with_preceders(meta: dict[str, Any], objects: Sequence[_Preceded]) -> dict[str, Any]:
    """Preceder metadata (one base entry written just before a data frame) merged over ``base``."""
    for j, ref in enumerate(objects):
        if ref.preceder:
            meta["base"][j].update(ref.preceder)
    return meta
