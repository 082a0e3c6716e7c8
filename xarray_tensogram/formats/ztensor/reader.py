"""``open_ztensor``: the low-level reader of all three zTensor generations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...array_spec import ArraySpec
from ...io import ByteSource, SourceLike
from ..base import FormatFile
from .containers import parse_container
from .decode import TensorReader, auto_rows_per_chunk
from .model import TensorInfo

__all__ = ["ZTensorFile", "open_ztensor"]


class ZTensorFile(FormatFile[TensorInfo]):
    """An open ``.zt`` file: ``.version``, ``.tensors``, ``.read(name_or_index)``, ``.array_spec(i)``.

    Opening reads the footer and the index only. Use it as a context manager, or call :meth:`close`; arrays
    :meth:`read` returns for raw tensors are read-only views of the file's memory map, valid after closing.
    """

    item_kind = "tensor"

    def _parse(self) -> None:
        c = parse_container(self.source)
        self.version: str = c.version
        #: v1 manifest dialect ("1.0", "1.1.0", "1.2.0"); None for v0.1 and v2
        self.dialect: str | None = c.dialect
        #: file-level attributes (v1, v2)
        self.attrs: dict[str, Any] = c.attrs
        self.tensors: list[TensorInfo] = c.tensors
        self._sources: dict[str | None, ByteSource] = {None: self.source}
        self._sources.update(c.shards)
        self._data_start, self._data_end = c.data_start, c.data_end

    def _items(self) -> list[TensorInfo]:
        return self.tensors

    def tensor(self, key: str | int) -> TensorInfo:
        """Tensor by index, or by name (the first of duplicates, like the reference reader)."""
        return self[key]

    def reader(self, key: str | int, *, verify: bool = False, rows_per_chunk: int = 0) -> TensorReader:
        return TensorReader(
            self._sources,
            self.tensor(key),
            self._data_end,
            self._data_start,
            verify=verify,
            rows_per_chunk=rows_per_chunk,
        )

    def read(self, key: str | int, *, verify: bool = False) -> np.ndarray:
        """The tensor's values, dense and in C order (raw little-endian ones: a read-only view of the memory map).

        ``verify=True`` checks the stored checksum first (crc32c/sha256 over stored bytes in v0.1/v1, xxh3/sha256
        over decoded bytes in v2) and raises :class:`MissingHashError` when there is none.
        """
        return self.reader(key, verify=verify).read()

    def array_spec(self, key: str | int, *, verify: bool = False, rows_per_chunk: int | None = None) -> ArraySpec:
        """Lazy description for the shared lazy array: one chunk per tensor, or row bands (``rows_per_chunk=None``:
        about 64 MiB each for raw tensors over 256 MiB; 0: one chunk)."""
        rows = auto_rows_per_chunk(self.tensor(key)) if rows_per_chunk is None else rows_per_chunk
        return self.reader(key, verify=verify, rows_per_chunk=rows).spec()

    def close(self) -> None:
        for src in self._sources.values():
            src.close()

    def __repr__(self) -> str:
        return f"<ZTensorFile {self.name!r}: zTensor v{self.version}, {len(self.tensors)} tensors>"


def open_ztensor(source: SourceLike, *, storage_options: Mapping[str, Any] | None = None) -> ZTensorFile:
    """Open a zTensor file of any generation (v0.1 ``ZTEN0001``, v1 ``ZTEN1000``, v2) without xarray.

    Opening reads the index (or manifest) only; tensors are read by :meth:`ZTensorFile.read`.

    Parameters
    ----------
    source : str, os.PathLike, bytes or binary file object
        A local path, an fsspec URL, the bytes of a file, or an open binary file object.
    storage_options : mapping, optional
        Passed to fsspec when ``source`` is a URL.

    Returns
    -------
    ZTensorFile
        A context manager with ``version``, ``tensors`` (name, dtype, shape, encoding, layout,
        checksum, attrs) and ``read(name_or_index, verify=False)``.

    Raises
    ------
    CorruptFileError
        If the magic, index or manifest is damaged.

    Examples
    --------
    >>> import xarray_tensogram as xt
    >>> with xt.open_ztensor(xt.sample_path("sample.zt")) as z:
    ...     print(z.version, z.read("t2m").shape)
    0.1 (16, 24)
    """
    return ZTensorFile(source, storage_options=storage_options)
