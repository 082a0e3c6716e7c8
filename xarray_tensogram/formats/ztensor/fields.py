"""The keys an index or manifest map may hold, declared as tables, and the one path that checks them.

Each container generation declares its maps' keys (:class:`Field`: the test a value must pass, what to
say when it does not, its default); :class:`Fields` reads and checks them. Large v0.1 indexes (thousands of
tensors) are checked a field at a time across all entries, in C, and messages are built only on failure.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ...errors import MetadataError

__all__ = ["MISSING", "Field", "Fields", "is_array", "is_text", "is_uint", "map_or_empty", "maybe", "one_of", "uints"]

MISSING: Any = object()
_call: Callable[[Callable[[Any], bool], Any], bool] = getattr(operator, "call", lambda test, value: test(value))


def is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


#: tests run in C (``isinstance`` and tuple membership): large indexes are checked key by key
is_text: Callable[[Any], bool] = str.__instancecheck__
is_array: Callable[[Any], bool] = list.__instancecheck__


def uints(values: list[Any]) -> bool:
    """All plain non-negative ints (a whole index column or a shape, tested in C)."""
    return set(map(type, values)) <= {int} and min(values, default=0) >= 0


def _all_pass(test: Callable[[Any], bool]) -> Callable[[list[Any]], bool]:
    return lambda values: all(map(test, values))


def maybe(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``test``, or the key absent (None)."""
    return lambda v: v is None or test(v)


def one_of(*values: Any) -> Callable[[Any], bool]:
    return values.__contains__


def map_or_empty(v: Any) -> bool:
    """``attributes``: a map, or anything false (read as no attributes)."""
    return isinstance(v or {}, dict)


class Field(NamedTuple):
    """One key of an index or manifest map: the test its value must pass, and what to say when it does not."""

    key: str
    ok: Callable[[Any], bool]
    message: str  #: formatted with ``key`` and ``value``
    default: Any = None  #: ``MISSING``: the key is required
    #: the test on one field's values across a whole index at once (None: ``ok`` on each)
    column_ok: Callable[[list[Any]], bool] | None = None


class Fields:
    """The keys one container generation declares for one kind of map: :meth:`checked` fails the open,
    :meth:`failure` gives a tensor's deferred problem."""

    def __init__(self, *fields: Field) -> None:
        self.fields = fields
        self.keys = tuple(f.key for f in fields)
        self.defaults = tuple(f.default for f in fields)
        self.tests = tuple(f.ok for f in fields)
        self.column_tests = tuple(f.column_ok or _all_pass(f.ok) for f in fields)

    def columns(self, entries: list[Any], where: Callable[[int], str]) -> list[list[Any]]:
        """Each field's values across ``entries``, in declaration order (defaults where absent). The tests run
        per field across all entries, in C; only when one fails are entries read one by one, to name the
        first bad one in a MetadataError (``where(i)`` prefixes it)."""
        if set(map(type, entries)) <= {dict}:
            columns = self._columns(entries)
            if all(map(_call, self.column_tests, columns)):
                return columns
        rows = []
        for i, entry in enumerate(entries):  # one failed: read them in order to name the first bad one
            rows.append(tuple(self.checked(entry, where(i)).values()))
        return list(map(list, zip(*rows, strict=True)))

    def failures(self, entries: list[dict[Any, Any]]) -> list[str | None]:
        """:meth:`failure` of each entry, tested per field across all entries first (the usual: none fails)."""
        if all(map(_call, self.column_tests, self._columns(entries))):
            return [None] * len(entries)
        return [self.failure(entry) for entry in entries]

    def _columns(self, entries: list[dict[Any, Any]]) -> list[list[Any]]:
        n = len(entries)
        return [
            list(map(dict.get, entries, itertools.repeat(key, n), itertools.repeat(default, n)))
            for key, default in zip(self.keys, self.defaults, strict=True)
        ]

    def failure(self, entry: Mapping[Any, Any]) -> str | None:
        """The message of the first field whose value in ``entry`` fails its test, else None."""
        return self._message(list(map(entry.get, self.keys, self.defaults)))

    def checked(self, entry: Any, where: str) -> dict[str, Any]:
        """The values of the fields in map ``entry`` (their defaults when absent); MetadataError for the first bad
        one, or when ``entry`` is not a map."""
        if type(entry) is not dict:
            raise MetadataError(f"{where}expected a map, got {type(entry).__name__}")
        values = list(map(entry.get, self.keys, self.defaults))
        message = self._message(values)
        if message is not None:
            raise MetadataError(where + message)
        return dict(zip(self.keys, values, strict=True))

    def _message(self, values: list[Any]) -> str | None:
        if all(map(_call, self.tests, values)):
            return None
        key, value, message = next(
            (f.key, v, f.message) for f, v in zip(self.fields, values, strict=True) if not f.ok(v)
        )
        return (message if value is not MISSING else "required key {key!r} is missing").format(key=key, value=value)
