"""An object store for virtual references that refuses bytes of a file changed since it was referenced.

A file replaced on the server after the references (or the registry) were made would give pieces of another
file as chunks. So :class:`ChangeCheckedStore` notes each file's ``ETag``, ``Last-Modified`` and size when the
registry is built (one ``HEAD`` per file) and compares every ranged ``GET``'s answer with them, raising
:class:`~xarray_tensogram.errors.FileChangedError` naming the URL. obstore retries transient faults itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FileChangedError

__all__ = ["ChangeCheckedStore"]

Stamp = dict[str, Any]


def _stamp(meta: Mapping[str, Any]) -> Stamp:
    return {"ETag": meta.get("e_tag"), "Last-Modified": meta.get("last_modified"), "size": meta.get("size")}


class ChangeCheckedStore:
    """An obstore ``store`` whose range reads check each file against what it was when first seen (all else is
    the wrapped store's); it pickles with the stamps, so Dask workers check against the same versions."""

    def __init__(self, store: Any, stamps: Mapping[str, Stamp] | None = None) -> None:
        self.store = store
        self._stamps: dict[str, Stamp] = dict(stamps or {})

    def __reduce__(self) -> tuple[Any, ...]:
        return (ChangeCheckedStore, (self.store, self._stamps))

    def __getattr__(self, name: str) -> Any:  # store and _stamps are set first: __reduce__ rebuilds through __init__
        return getattr(self.store, name)

    def remember(self, path: str) -> None:
        """Note the version of ``path`` (relative to the store) that later reads must find."""
        import obstore

        self._stamps[path] = _stamp(obstore.head(self.store, path))

    def _check(self, path: str, meta: Mapping[str, Any]) -> None:
        now = _stamp(meta)
        seen = self._stamps.setdefault(path, now)
        what = "; ".join(f"{n} {seen[n]} -> {v}" for n, v in now.items() if v != seen[n])
        if what:
            raise FileChangedError(
                f"{str(self.store.url).rstrip('/')}/{path}: the file changed since the virtual references to it "
                f"were opened ({what}); its chunks would come from another version. Make the references again"
            )

    def get_range(self, path: str, *, start: int, end: int | None = None, length: int | None = None) -> Any:
        import obstore

        result = obstore.get(self.store, path, options={"range": _span(start, end, length)})
        self._check(path, result.meta)
        return result.bytes()

    async def get_range_async(self, path: str, *, start: int, end: int | None = None, length: int | None = None) -> Any:
        import obstore

        result = await obstore.get_async(self.store, path, options={"range": _span(start, end, length)})
        self._check(path, result.meta)
        return await result.bytes_async()


def _span(start: int, end: int | None, length: int | None) -> tuple[int, int]:
    return start, end if end is not None else start + int(length or 0)
