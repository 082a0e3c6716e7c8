"""Chunk-reading toolkit shared by the format readers: row bands and raw row ranges.

Two patterns recur in every format:

- **row bands**: an array offered to the lazy array as chunks of ``rows_per_chunk``
  leading-axis rows (full extent elsewhere), read by asking the format for a row
  range (:func:`read_row_band`);
- **raw row ranges**: a C-order array stored uncompressed at a byte offset, of which
  only the bytes of some leading-axis rows are read (:func:`row_byte_span`,
  :func:`read_raw_rows`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..catalog import ArraySpec
from ..io import ByteSource

__all__ = ["read_box", "read_raw_rows", "read_row_band", "read_span", "row_byte_span", "scratch"]


def read_row_band(
    coords: Sequence[int],
    region: Sequence[slice],
    shape: Sequence[int],
    rows_per_chunk: int,
    read_all: Callable[[], np.ndarray],
    read_rows: Callable[[int, int], np.ndarray],
) -> np.ndarray:
    """``region`` of row band ``coords[0]`` of an array of ``shape`` cut into bands of ``rows_per_chunk`` rows.

    ``rows_per_chunk = 0`` means one band holding every row. The rows are asked for as one range
    (the whole array through ``read_all`` when the range covers it), the other axes are sliced after.
    """
    if not shape:
        return read_all()
    band = rows_per_chunk or shape[0] or 1
    base = coords[0] * band
    start, stop = base + region[0].start, base + region[0].stop
    block = read_all() if (start, stop) == (0, shape[0]) else read_rows(start, stop)
    rest = tuple(region[1:])
    if any(r != slice(0, n) for r, n in zip(rest, shape[1:], strict=True)):
        within = (slice(None), *rest)
        block = block[within]
    return block


def row_byte_span(start: int, stop: int, row_elements: int, bits_per_element: int) -> tuple[int, int, int]:
    """Byte range ``[lo, hi)`` holding rows ``start:stop`` of packed elements, and the bit offset of the first.

    Rows are ``row_elements`` elements of ``bits_per_element`` bits each, packed without padding
    (whole bytes for ordinary dtypes, any width for bit-packed encodings).
    """
    first, last = start * row_elements, stop * row_elements
    lo = (first * bits_per_element) // 8
    hi = (last * bits_per_element + 7) // 8
    return lo, hi, (first * bits_per_element) % 8


def read_span(source: ByteSource, offset: int, length: int, what: str, *, zero_copy: bool = True) -> bytes | memoryview:
    """The bytes ``[offset, offset + length)``: a view of the memory map when allowed and possible, else a read."""
    if length == 0:
        return b""
    if zero_copy:
        view = source.view(offset, length)
        if view is not None:
            return view
    return source.read(offset, length, what=what)


def read_raw_rows(
    source: ByteSource,
    offset: int,
    shape: Sequence[int],
    dtype: np.dtype,
    start: int,
    stop: int,
    what: str,
    *,
    zero_copy: bool = False,
) -> np.ndarray:
    """Rows ``start:stop`` of a raw C-order array of ``shape`` and ``dtype`` stored at ``offset``, reading only them.

    With ``zero_copy`` a local file gives a read-only view of its memory map; otherwise a fresh array.
    """
    dtype = np.dtype(dtype)
    rows_shape = (max(stop - start, 0), *shape[1:])
    if stop <= start:
        return np.empty(rows_shape, dtype=dtype)
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    lo, length = offset + start * row_bytes, (stop - start) * row_bytes
    if zero_copy:
        raw = np.frombuffer(read_span(source, lo, length, what), dtype=np.uint8)
    else:
        raw = source.read_array(lo, length, what=what)
    return raw.view(dtype).reshape(rows_shape)


_SCRATCH = threading.local()
#: scratch buffers above this size are not kept between calls
SCRATCH_KEEP = 16 << 20


def scratch(nbytes: int) -> np.ndarray:
    """A per-thread reusable ``uint8`` buffer of ``nbytes`` (a chunk decoded there, then copied into a
    strided destination, stays in the CPU cache and costs no allocation or page faults per chunk)."""
    buf: np.ndarray | None = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.size < nbytes:
        buf = np.empty(nbytes, dtype=np.uint8)
        if nbytes <= SCRATCH_KEEP:
            _SCRATCH.buf = buf
    return buf[:nbytes]


def read_box(spec: ArraySpec, key: tuple[Any, ...]) -> np.ndarray | None:
    """A key of integers and step-1 slices, read in one call by a reader that offers
    ``read_box_into(box, out) -> bool`` (a whole Dask task in one pass over its chunks); else None.

    Any other key, or a reader without the method, goes through :func:`read_outer`, chunk by chunk.
    """
    into = getattr(spec.reader, "read_box_into", None)
    if into is None:
        return None
    key = tuple(key) + (slice(None),) * (len(spec.shape) - len(key))
    box = []
    for k, n in zip(key, spec.shape, strict=True):
        if isinstance(k, (int, np.integer)):
            i = int(k) + n if int(k) < 0 else int(k)
            if not 0 <= i < n:
                return None  # read_outer raises the IndexError
            box.append(slice(i, i + 1))
        elif isinstance(k, slice) and k.step in (None, 1):
            start, stop, _ = k.indices(n)
            box.append(slice(start, max(start, stop)))
        else:
            return None
    try:
        out = np.empty(tuple(s.stop - s.start for s in box), dtype=spec.dtype)
    except (MemoryError, ValueError):
        return None  # read_outer reports it as a LimitExceededError
    if not into(tuple(box), out):
        return None
    kept = tuple(n for n, k in zip(out.shape, key, strict=True) if not isinstance(k, (int, np.integer)))
    return out.reshape(kept)
