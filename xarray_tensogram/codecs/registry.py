"""The one codec registry: every codec object of the package, by name. Adding a codec is a module here defining
its :class:`~.base.Codec` subclass and a ``CODEC`` instance, plus one line in :data:`_REGISTERED`; a format that
uses it names it in its own table from file vocabulary to codec objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UnsupportedError
from . import bitmaps, blosc2, lz4, shuffle, simple_packing, sz3, szip, zfp, zstd
from .base import PASSTHROUGH, Codec
from .chain import RAW

__all__ = ["CODECS", "codec", "resolve_params"]

_REGISTERED: tuple[Codec, ...] = (
    PASSTHROUGH,
    RAW,
    zstd.CODEC,
    lz4.CODEC,
    szip.CODEC,
    blosc2.CODEC,
    zfp.CODEC,
    sz3.CODEC,
    bitmaps.RLE,
    bitmaps.ROARING,
    shuffle.CODEC,
    simple_packing.CODEC,
)

#: every codec by name
CODECS: Mapping[str, Codec] = {c.name: c for c in _REGISTERED}


def codec(name: str, *, where: str = "") -> Codec:
    """The codec called ``name``; an :class:`UnsupportedError` listing the known ones otherwise."""
    try:
        return CODECS[name]
    except (KeyError, TypeError):
        raise UnsupportedError(f"{where}unknown codec {name!r} (known: {', '.join(CODECS)})") from None


def resolve_params(name: str, params: Mapping[str, Any], *, what: str = "") -> dict[str, Any]:
    """Check a variable's codec parameters (``encoding=`` of a writer) against what codec ``name`` declares:
    unknown names, wrong types and values outside the valid ones raise an :class:`~..errors.EncodeError`
    that starts with ``what`` (e.g. the variable); returns them with the defaults filled in."""
    return codec(name, where=what).resolve(params, what=what)
