"""The byte source interface every reader is written against."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO, Union

import numpy as np

from ..errors import TruncatedFileError, describe

SourceLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO, "ByteSource"]


class RangeColumns(Sequence[tuple[int, int]]):
    """``(offset, length)`` ranges for :meth:`ByteSource.read_ranges` kept as two columns of ints; each pair is
    made when it is read, so that a batch of thousands of ranges (an open reads two per object) is two lists,
    not thousands of tuples alive at once that count towards the garbage collector's next pass."""

    __slots__ = ("lengths", "offsets")

    def __init__(self, offsets: list[int], lengths: list[int]) -> None:
        self.offsets = offsets
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i: Any) -> Any:  # an int gives a pair, a slice a list of pairs (as a list's would)
        if isinstance(i, slice):
            return list(zip(self.offsets[i], self.lengths[i], strict=True))
        return self.offsets[i], self.lengths[i]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.offsets, self.lengths, strict=True)


class ByteSource(ABC):
    """Random-access, thread-safe, picklable bytes. ``bytes_read`` and ``read_calls`` count what this instance
    fetched: the benchmarks and tests use them to prove that an open reads metadata only."""

    name: str
    size: int

    def __init__(self) -> None:
        self.bytes_read = 0
        self.read_calls = 0

    @abstractmethod
    def _read(self, offset: int, length: int) -> bytes:
        """Return up to ``length`` bytes at ``offset`` (fewer only at end of file)."""

    def check_range(self, offset: int, length: int, what: str) -> None:
        """Raise :class:`TruncatedFileError` unless ``length`` bytes at ``offset`` lie inside the source."""
        if length < 0 or offset < 0 or offset + length > self.size:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{what} needs {length} bytes at this offset "
                f"but the file is {self.size} bytes long"
            )

    def read(self, offset: int, length: int, *, what: str = "data") -> bytes:
        """Return exactly ``length`` bytes at ``offset`` or raise :class:`TruncatedFileError`."""
        self.check_range(offset, length, what)
        if length == 0:
            return b""
        data = self._read(offset, length)
        self.bytes_read += len(data)
        self.read_calls += 1
        if len(data) != length:
            raise TruncatedFileError(
                f"{describe(self.name, offset=offset)}{what}: expected {length} bytes, got {len(data)}"
            )
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, what: str = "data") -> list[bytes]:
        """Read several ``(offset, length)`` ranges; remote sources fetch them concurrently."""
        return [self.read(o, n, what=what) for o, n in ranges]

    def read_array(self, offset: int, length: int, *, what: str = "data") -> np.ndarray:
        """Like :meth:`read` but into a new writable ``uint8`` array, filled by :meth:`read_into`."""
        self.check_range(offset, length, what)  # before allocating: a negative or huge length is refused
        out = np.empty(length, dtype=np.uint8)
        self.read_into(offset, out, what=what)
        return out

    def read_into(self, offset: int, out: np.ndarray, *, what: str = "data") -> None:
        """Fill ``out`` (any dtype and layout, C order of its elements) with its ``nbytes`` bytes at ``offset``:
        raw payloads go straight into the caller's final array (local files: ``preadv``, no intermediate buffer)."""
        data = np.frombuffer(self.read(offset, out.nbytes, what=what), dtype=out.dtype)
        np.copyto(out, data.reshape(out.shape))

    def release(self, offset: int, length: int) -> None:  # noqa: B027 - optional hook: only mapped sources act
        """Say that a :meth:`view` of these bytes is no longer needed (local files unmap their pages from
        this process's resident set, so file pages read once do not count against its memory)."""

    def view(self, offset: int, length: int) -> memoryview | None:
        """A zero-copy read-only view of the bytes, or ``None`` when the source cannot map."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook: a source without handles has nothing to release
        """Release handles; the source reopens lazily if it is read again."""

    def check_unchanged(self) -> None:  # noqa: B027 - optional hook: in-memory sources cannot change
        """Raise :class:`FileChangedError` if the underlying file changed since it was opened."""

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
