"""Arrays joined end to end along their first axis, lazily: one variable of several converted netCDF files.

``open_mfdataset`` of monthly files concatenates along time; their conversions, concatenated into one
``.tgm``, hold one object per file and variable. :func:`concat_specs` joins their :class:`ArraySpec`
without reading them. The chunks along the joined axis are the members themselves when all but the
last have one length (files of equal length: one chunk per object, as for any object), else one row
each (a read then touches only the rows it needs, by byte range where the payload allows).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...array_spec import ArraySpec, Region
from ...outer import read_outer

__all__ = ["ConcatReader", "concat_specs"]


@dataclass(frozen=True)
class ConcatReader:
    """Members joined along axis 0; chunk ``c`` along it covers rows ``[c * rows, (c + 1) * rows)``."""

    members: tuple[ArraySpec, ...]
    starts: tuple[int, ...]  # each member's first row in the joined array
    rows: int  # chunk length along the joined axis
    inner_chunks: tuple[int, ...]

    def read_chunk(self, coords: tuple[int, ...], region: Region) -> np.ndarray:
        first = coords[0] * self.rows + region[0].start
        stop = coords[0] * self.rows + region[0].stop
        inner = tuple(
            slice(c * n + r.start, c * n + r.stop)
            for c, n, r in zip(coords[1:], self.inner_chunks, region[1:], strict=True)
        )
        parts = []
        m = bisect.bisect_right(self.starts, first) - 1
        while first < stop:
            member, start = self.members[m], self.starts[m]
            end = min(stop, start + member.shape[0])
            parts.append(read_outer(member, (slice(first - start, end - start), *inner)))
            first, m = end, m + 1
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def concat_specs(members: Sequence[ArraySpec]) -> ArraySpec:
    """Members of equal shape but for their first axis (and of one dtype), joined along it."""
    head = members[0]
    lengths = [m.shape[0] for m in members]
    *starts, total = itertools.accumulate(lengths, initial=0)
    regular = all(n == lengths[0] for n in lengths[:-1]) and lengths[-1] <= lengths[0] and lengths[0] > 0
    rows = lengths[0] if regular else 1
    inner = head.chunk_shape[1:]
    reader = ConcatReader(tuple(members), tuple(starts), rows, inner)
    return ArraySpec((total, *head.shape[1:]), head.dtype, (rows, *inner), reader, fill_value=head.fill_value)
