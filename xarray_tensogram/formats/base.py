"""What every open file of every format offers, written down once: a byte source and a list of items
(messages, datasets, tensors) behind one protocol (``len(f)``, iteration, ``f[i]`` or ``f["name"]``,
``f.names``, ``close()``, a context manager), so that the CLI and the backend treat any format alike.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar, overload

from ..io import ByteSource, SourceLike, open_source

__all__ = ["FormatFile"]

ItemT = TypeVar("ItemT")
FileT = TypeVar("FileT", bound="FormatFile[Any]")


class FormatFile(Generic[ItemT]):
    """An open file of one format: a byte source and an ordered list of items.

    Subclasses implement :meth:`_parse` (read the layout at open) and :meth:`_items` and, when their items
    carry no ``name`` attribute, :meth:`_item_name`.
    """

    #: what one item is called in messages ("message", "dataset", "tensor")
    item_kind: ClassVar[str] = "item"
    source: ByteSource
    name: str

    def __init__(self, source: SourceLike, *, storage_options: Mapping[str, Any] | None = None) -> None:
        """Open ``source`` and read its layout (:meth:`_parse`); the source is closed again when that fails."""
        self.source = open_source(source, storage_options)
        self.name = self.source.name
        try:
            self._parse()
        except BaseException:
            self.source.close()
            raise

    def _parse(self) -> None:
        raise NotImplementedError

    def _items(self) -> Sequence[ItemT]:
        raise NotImplementedError

    def _item_name(self, item: ItemT) -> str | None:
        name = getattr(item, "name", None)
        return name if isinstance(name, str) else None

    # -- lookup -----------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Names of the items that have one, in file order (duplicates kept)."""
        return [n for n in map(self._item_name, self._items()) if n is not None]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[ItemT]:
        return iter(self._items())

    @overload
    def __getitem__(self, key: int | str) -> ItemT: ...

    @overload
    def __getitem__(self, key: slice) -> list[ItemT]: ...

    def __getitem__(self, key: int | str | slice) -> ItemT | list[ItemT]:
        """Item by position (negative from the end) or by name (the first carrying it); a slice gives a list."""
        items = self._items()
        if isinstance(key, slice):
            return list(items[key])
        if isinstance(key, str):
            for item in items:
                if self._item_name(item) == key:
                    return item
            raise KeyError(f"{self.name!r} has no {self.item_kind} named {key!r}; {self.item_kind}s: {self.names}")
        if isinstance(key, bool):
            raise TypeError(f"{self.item_kind} index must be an integer or a name, not a bool")
        return items[operator.index(key)]

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the file (idempotent); arrays already read stay valid."""
        self.source.close()

    def __enter__(self: FileT) -> FileT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
