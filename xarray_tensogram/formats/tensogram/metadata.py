"""A Tensogram message's global metadata as the reference decoder gives it (spec §8.1).

Apart from the object readers so that scanning checks a message's metadata without holding it: an open keeps
each metadata frame's CBOR bytes (not containers the garbage collector walks) and decodes them where needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...codecs import cbor
from ...errors import MetadataError

__all__ = ["check_metadata", "message_metadata", "normalise_metadata"]


class _Preceded(Protocol):
    """A data object's location (``ObjectRef``) as far as metadata is concerned: its preceder entry."""

    @property
    def preceder(self) -> dict[str, Any] | None: ...


def check_metadata(meta: dict[str, Any], n_objects: int) -> None:
    """Raise what :func:`normalise_metadata` raises for ``meta``, without building the normalised copy: the
    scan checks every message this way and keeps only its CBOR bytes (errors do not name the place)."""
    extra = meta.get("_extra_", {})
    if extra is not None and not isinstance(extra, dict):
        raise MetadataError("_extra_ is not a map")
    for key in meta:
        if not isinstance(key, str):
            raise MetadataError(f"top-level metadata key {key!r} is not text")
        if key in ("base", "_extra_", "_reserved_"):
            continue
        if extra and key in extra:
            raise MetadataError(f"ambiguous metadata: key {key!r} is both top-level and in _extra_")
    base = meta.get("base", [])
    if base is None:
        return
    if not isinstance(base, list) or not all(isinstance(b, dict) for b in base):
        raise MetadataError("'base' is not a list of maps")
    if len(base) > n_objects:
        raise MetadataError(f"'base' has {len(base)} entries for {n_objects} objects")


def normalise_metadata(meta: dict[str, Any], n_objects: int) -> dict[str, Any]:
    """Apply the reference decoder's metadata rules (spec §8.1) and add ``version``; errors do not name the place
    (the caller prefixes it). ``meta`` was just decoded and is nobody else's: its ``base`` maps are taken as is."""
    check_metadata(meta, n_objects)
    extra = dict(meta.get("_extra_") or {})
    for key, value in meta.items():
        if key not in ("base", "_extra_", "_reserved_"):
            extra[key] = value
    base = meta.get("base") or []
    base = list(base) + [{} for _ in range(n_objects - len(base))]
    reserved = meta.get("_reserved_", {})
    return {
        "version": 3,
        "base": base,
        "_extra_": extra,
        "_reserved_": reserved if isinstance(reserved, dict) else {},
    }


def message_metadata(raw: bytes, objects: Sequence[_Preceded], where: str) -> dict[str, Any]:
    """A message's metadata from its metadata frame's CBOR: normalised, preceders merged over ``base``."""
    meta = cbor.loads(raw, where=where)
    try:
        if not isinstance(meta, dict):
            raise MetadataError(f"metadata is a {type(meta).__name__}, expected a map")
        meta = normalise_metadata(meta, len(objects))
    except MetadataError as exc:
        raise type(exc)(f"{where}{exc}") from None
    return with_preceders(meta, objects)


def with_preceders(meta: dict[str, Any], objects: Sequence[_Preceded]) -> dict[str, Any]:
    """Preceder metadata (one base entry written just before a data frame) merged over ``base``."""
    for j, ref in enumerate(objects):
        if ref.preceder:
            meta["base"][j].update(ref.preceder)
    return meta
