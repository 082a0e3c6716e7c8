"""Chunk-reading toolkit shared by the format readers: row bands (:func:`read_row_band`), raw row ranges
(:func:`read_raw_rows`), the element runs of a box (:func:`box_runs`, :func:`gather_runs`) and payload reads."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..codecs.base import Codec
from ..io import ByteSource, LocalFileSource
from ..io.local import scratch_buffer

__all__ = [
    "READ_MAX",
    "box_runs",
    "compressed_payload",
    "gather_runs",
    "read_raw_rows",
    "read_row_band",
    "read_span",
]


def read_row_band(
    coords: Sequence[int],
    region: Sequence[slice],
    shape: Sequence[int],
    rows_per_chunk: int,
    read_all: Callable[[], np.ndarray],
    read_rows: Callable[[int, int], np.ndarray],
) -> np.ndarray:
    """``region`` of row band ``coords[0]`` of an array of ``shape`` cut into bands of ``rows_per_chunk`` rows
    (0: one band). The rows are read as one range (``read_all`` when it covers them), other axes sliced after."""
    if not shape:
        return read_all()
    band = rows_per_chunk or shape[0] or 1
    base = coords[0] * band
    start, stop = base + region[0].start, base + region[0].stop
    block = read_all() if (start, stop) == (0, shape[0]) else read_rows(start, stop)
    if any(r != slice(0, n) for r, n in zip(region[1:], shape[1:], strict=True)):
        within = (slice(None), *region[1:])  # a name: mypy reads a starred subscript as 3.11 syntax
        block = block[within]
    return block


def box_runs(shape: Sequence[int], box: Sequence[slice], merge_gap: int, max_runs: int) -> list[tuple[int, int]] | None:
    """The C-order element runs ``[start, stop)`` of a box (step-1 slices) of an array of ``shape``, runs less
    than ``merge_gap`` elements apart joined; None for a scalar or a box of more than ``max_runs`` rows."""
    if not shape:
        return None
    spans = [s.indices(n)[:2] for s, n in zip(box, shape, strict=True)]
    if any(b <= a for a, b in spans):
        return []
    rows = math.prod(b - a for a, b in spans[:-1])
    if rows > max_runs:
        return None
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    if rows == 1:  # a point, or a run along the last axis
        first = sum(a * s for (a, _b), s in zip(spans, strides, strict=True))
        return [(first, first + spans[-1][1] - spans[-1][0])]
    starts = np.zeros(1, dtype=np.int64)
    for (a, b), stride in zip(spans[:-1], strides[:-1], strict=True):
        starts = (starts[:, None] + np.arange(a, b, dtype=np.int64) * stride).reshape(-1)
    starts += spans[-1][0]
    length = spans[-1][1] - spans[-1][0]
    cut = np.flatnonzero(starts[1:] - (starts[:-1] + length) >= merge_gap) + 1
    firsts = np.concatenate(([0], cut))
    lasts = np.concatenate((cut - 1, [starts.size - 1]))
    return [(int(starts[f]), int(starts[e]) + length) for f, e in zip(firsts, lasts, strict=True)]


def gather_runs(
    shape: Sequence[int], box: Sequence[slice], runs: Sequence[tuple[int, int]], values: Sequence[np.ndarray]
) -> np.ndarray:
    """The box of an array of ``shape`` from the decoded ``values`` of its :func:`box_runs`."""
    spans = [s.indices(n)[:2] for s, n in zip(box, shape, strict=True)]
    box_shape = tuple(max(0, b - a) for a, b in spans)
    if not runs:
        return np.empty(box_shape, dtype=values[0].dtype if values else np.float64)
    if len(runs) == 1:
        if runs[0][1] - runs[0][0] == math.prod(box_shape):
            return values[0].reshape(box_shape)  # the run is the box
        if (strided := _strided_box(shape, spans, runs[0][0], values[0])) is not None:
            return strided
    flat = np.ravel_multi_index(np.ix_(*(np.arange(a, b) for a, b in spans)), tuple(shape)).reshape(-1)
    firsts = np.array([r[0] for r in runs], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([r[1] - r[0] for r in runs])))[:-1]
    which = np.searchsorted(firsts, flat, side="right") - 1
    joined = values[0] if len(values) == 1 else np.concatenate(values)
    block: np.ndarray = joined[offsets[which] + flat - firsts[which]].reshape(box_shape)
    return block


def _strided_box(
    shape: Sequence[int], spans: Sequence[tuple[int, int]], first: int, run: np.ndarray
) -> np.ndarray | None:
    """The box ``spans`` copied out of one decoded run from element ``first`` that holds it whole: the box is
    a strided view of the run (no index arrays); None where the run does not reach the box's last element."""
    strides = [math.prod(shape[i + 1 :]) * run.itemsize for i in range(len(shape))]
    start = sum(a * s for (a, _b), s in zip(spans, strides, strict=True)) // run.itemsize - first
    last = start + sum((b - a - 1) * s for (a, b), s in zip(spans, strides, strict=True)) // run.itemsize
    if start < 0 or last >= run.size:  # as_strided must read no further than the run
        return None
    view = np.lib.stride_tricks.as_strided(run[start:], tuple(b - a for a, b in spans), strides, writeable=False)
    copied: np.ndarray = view.copy()
    return copied


def read_span(source: ByteSource, offset: int, length: int, what: str, *, zero_copy: bool = True) -> bytes | memoryview:
    """The bytes ``[offset, offset + length)``: a view of the memory map when allowed and possible, else a read."""
    if length == 0:
        return b""
    if zero_copy:
        view = source.view(offset, length)
        if view is not None:
            return view
    return source.read(offset, length, what=what)


#: payloads (up to READ_MAX bytes) of codecs without ``mapped_input`` a local file hands over in a per-thread
#: ``preadv`` buffer, not the memory map: page faults and the ``madvise`` giving pages back (a TLB flush on every
#: core running a thread of the process) cost more, and vary more with load and threads, than copying the bytes
READ_MAX = 16 << 20


def compressed_payload(
    source: ByteSource, offset: int, length: int, codec: Codec, what: str = "payload"
) -> tuple[bytes | memoryview, bool]:
    """The stored payload of a chunk to decode, and whether it is a view of the memory map (then to be given
    back with ``source.release(offset, length)`` once decoded). The buffer of a local file read is this
    thread's scratch buffer: valid until the thread's next read."""
    if not codec.capabilities.mapped_input and isinstance(source, LocalFileSource) and length <= READ_MAX:
        buf = scratch_buffer(length)
        source.read_into(offset, buf, what=what)
        return buf.data, False
    return read_span(source, offset, length, what), True


def read_raw_rows(
    source: ByteSource,
    offset: int,
    shape: Sequence[int],
    dtype: np.dtype,
    start: int,
    stop: int,
    what: str,
) -> np.ndarray:
    """Rows ``start:stop`` of a raw C-order array of ``shape`` and ``dtype`` stored at ``offset``, reading only
    them: a read-only view of a local file's memory map (a read of other sources)."""
    dtype = np.dtype(dtype)
    rows_shape = (max(stop - start, 0), *shape[1:])
    if stop <= start:
        return np.empty(rows_shape, dtype=dtype)
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    lo, length = offset + start * row_bytes, (stop - start) * row_bytes
    return np.frombuffer(read_span(source, lo, length, what), dtype=dtype).reshape(rows_shape)
