"""Hashable metadata values, and a view of an object's dotted keys that leaves big sections nested.

Shared by stage 1 (``assemble/tensogram/collect.py``, which flattens every object's metadata) and the producers
(:mod:`xarray_tensogram.producers`) whose objects carry sections of many keys that never make a dimension.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

__all__ = ["SCALARS", "SectionKeys", "hashable"]

#: value types kept as they are when metadata is flattened
SCALARS = frozenset({int, float, str, bool, type(None)})


def hashable(v: Any) -> Any:
    """A metadata value that can key a dict or a set (lists as tuples, maps as sorted pairs)."""
    if isinstance(v, list):
        flat = tuple(v)
        try:
            hash(flat)  # a list of scalars (dim names, shapes, areas): the common case, without recursion
        except TypeError:
            return tuple(hashable(x) for x in v)
        return flat
    if isinstance(v, dict):
        return tuple(sorted((str(k), hashable(x)) for k, x in v.items()))
    return v


class SectionKeys(Mapping[str, Any]):
    """One object's dotted keys, as ``collect.flat_keys`` would give them, with ``sections`` left nested.

    A GRIB converter object carries some 50 ``grib_repro``/``grib`` keys that never make a dimension, of which
    the mapping reads a few per object; flattening them all was most of the extra cost of opening a converted
    file. So ``flat`` holds the other keys flattened (``mars.*``), and a key under one of the ``sections`` is
    looked up in the nested ``entry`` on demand (lists as tuples). Iterating flattens all: only errors do that.
    """

    __slots__ = ("entry", "flat")
    #: the sections left nested, and their dotted prefixes (a subclass per producer sets both)
    sections: ClassVar[tuple[str, ...]] = ()
    prefixes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, flat: Mapping[str, Any], entry: Mapping[str, Any]) -> None:
        self.flat = flat
        self.entry = entry

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        if not key.startswith(self.prefixes):
            if key not in self.sections:
                return self.flat.get(key, default)
            value = hashable(_nested(self.entry, key))  # a section that is empty or not a map is a key of its own
        else:
            section, _, rest = key.partition(".")
            node = self.entry.get(section)
            value = node.get(rest, _MISSING) if type(node) is dict else _MISSING
            if type(value) not in SCALARS:  # absent, nested deeper, or a list: the general walk
                value = hashable(_nested(node, rest))
        return default if value is _MISSING else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        yield from self.flat
        for section in self.sections:
            node = self.entry.get(section, _MISSING)
            if isinstance(node, Mapping) and node:
                yield from _dotted(node, section + ".")
            elif node is not _MISSING:
                yield section

    def __len__(self) -> int:
        return sum(1 for _ in self)


_MISSING: Any = object()


def _nested(node: Any, rest: str) -> Any:
    """``rest`` (``"parameter.shortName"``) under a nested map; a key may itself hold a dot."""
    if not isinstance(node, Mapping):
        return _MISSING
    if rest in node:
        value = node[rest]
        return _MISSING if isinstance(value, Mapping) and value else value
    dot = rest.find(".")
    while dot > 0:
        child = node.get(rest[:dot])
        if isinstance(child, Mapping):
            value = _nested(child, rest[dot + 1 :])
            if value is not _MISSING:
                return value
        dot = rest.find(".", dot + 1)
    return _MISSING


def _dotted(node: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for k, v in node.items():
        if k == "_reserved_":
            continue
        if isinstance(v, Mapping) and v:
            yield from _dotted(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}"
