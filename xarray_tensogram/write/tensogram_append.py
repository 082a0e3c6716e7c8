"""``to_tensogram(mode="a")``: what appended messages are checked against in the file, before a byte is written.

A ``.tgm`` grows by appending messages, such as a new step of a variable the file has (objects whose metadata
differ from the file's). What cannot stack is refused: a dim of another size, and objects that duplicate the
file's (same name and metadata), which the reader could only keep along an extra ``message`` dim. A coordinate
the file already has, unchanged, is not written again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..conventions import LAYOUT_KEY
from ..errors import UnsupportedError, XarrayTensogramError
from ..formats.tensogram import open_tensogram
from .prepare import check_append

__all__ = ["check_tensogram_append"]


def _identity(entry: Any) -> str:
    """An entry as comparable text (numpy scalars as Python ones, NaN equal, key order ignored), less ``_reserved_``."""
    return json.dumps(
        {k: v for k, v in entry.items() if k != "_reserved_"},
        sort_keys=True,
        default=lambda o: o.item() if isinstance(o, np.generic) else repr(o),
    )


def check_tensogram_append(
    path: str | os.PathLike[str],
    variables: dict[str, xr.Variable],
    split: set[str],
    data_entries: Sequence[tuple[str, dict[str, Any]]],
    coord_objects: Sequence[tuple[str, dict[str, Any], np.ndarray]],
    strings: Mapping[str, Mapping[str, Any]],
) -> frozenset[str]:
    """Refuse a clashing size or an object the file already has; return the coordinates not to write again.

    ``variables``: the CF-encoded variables (sized without the message dims in ``split``); ``data_entries``: the
    new data objects' entries; ``strings``: the string variables (the reader takes them from the first message)."""
    where = os.fspath(path)
    sizes: dict[str, int] = {}
    seen: dict[str, tuple[int, int]] = {}
    with open_tensogram(path) as tf:
        for i, msg in enumerate(tf.messages):
            for j, entry in enumerate(msg.base):
                dims = entry.get("dim_names")
                if isinstance(dims, list) and j < len(msg):
                    shape = msg.object_geometry(j)[0]
                    sizes.update(zip(map(str, dims), shape[len(shape) - len(dims) :], strict=False))
                seen.setdefault(_identity(entry), (i, j))
        first = tf.messages[0].metadata.get("_extra_") if tf.messages else None
        _check_strings(where, strings, first if isinstance(first, Mapping) else {})
        inner = {n: v.isel({d: 0 for d in v.dims if d in split}) for n, v in variables.items()}
        check_append(where, (), sizes, inner)  # sizes only: the same name is refused below, by its metadata
        unchanged = set()
        for name, entry, values in coord_objects:
            at = seen.get(_identity(entry))
            if at is None:
                continue
            old = np.asarray(tf.messages[at[0]].read_object(at[1]))
            if old.shape == values.shape and np.array_equal(old, values, equal_nan=values.dtype.kind in "fc"):
                unchanged.add(name)  # a shared coordinate, written once
            else:
                raise XarrayTensogramError(
                    f"{where!r}: mode='a' cannot add coordinate {name!r}: the file already has it (message {at[0]}, "
                    "object {at[1]}) with other values; write the whole Dataset with mode='w' to replace it"
                )
    for name, entry in data_entries:
        at = seen.get(_identity(entry))
        if at is not None:
            raise XarrayTensogramError(
                f"{where!r}: mode='a' cannot add variable {name!r}: the file already has it with the same "
                f"metadata (message {at[0]}, object {at[1]}); append objects that differ (another step or "
                "member, see message_dims=), or write the whole Dataset with mode='w' to replace it"
            )
    return frozenset(unchanged)


def _check_strings(where: str, strings: Mapping[str, Mapping[str, Any]], extra: Mapping[str, Any]) -> None:
    """Strings live in the first message's hint, all the reader reads: an append may repeat them, not add or change."""
    hint = extra.get(LAYOUT_KEY)
    had = hint.get("coords") if isinstance(hint, Mapping) else None
    had = had if isinstance(had, Mapping) else {}
    for name, spec in strings.items():
        old = had.get(name)
        if not isinstance(old, Mapping) or old.get("values") != spec.get("values"):
            raise UnsupportedError(
                f"{where!r}: mode='a' cannot add string variable {name!r}: a .tgm keeps strings in the metadata of "
                "its first message, so only strings the file already has can be appended again; write the whole "
                "Dataset with mode='w'"
            )
