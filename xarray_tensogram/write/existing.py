"""``mode="a"``: what every writer checks before it adds variables to an existing file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..errors import XarrayTensogramError
from ..io import check_target

__all__ = ["MODES", "check_append", "check_mode", "kept_once"]

MODES = ("w", "a")


def check_mode(mode: str, path: str | os.PathLike[str]) -> None:
    """The mode, and a target a file can be written to: checked before anything is encoded."""
    if mode not in MODES:
        raise XarrayTensogramError(f"mode must be one of {list(MODES)}, got {mode!r}")
    check_target(path)


def check_append(
    path: str, names: Iterable[str], sizes: Mapping[str, int], variables: Mapping[str, xr.Variable]
) -> None:
    """Refuse, before a byte is written, a dim whose size clashes (first, as netCDF does) or a variable the file
    already has."""
    for name, var in variables.items():
        for dim, size in zip(var.dims, var.shape, strict=True):
            if sizes.get(str(dim), size) != size:
                raise XarrayTensogramError(
                    f"{path!r}: mode='a' cannot add variable {name!r}: Unable to update size for existing "
                    f"dimension {dim!r} ({dim!r} has size {size}, the file's has size {sizes[str(dim)]})"
                )
    existing = set(names)
    for name in variables:
        if name in existing:
            raise XarrayTensogramError(
                f"{path!r}: mode='a' cannot add variable {name!r}: the file already has it "
                f"(write the whole Dataset with mode='w' to replace it)"
            )


def kept_once(
    path: str,
    old: Mapping[str, tuple[Any, Any]],
    new: Mapping[str, tuple[Any, Any]],
    sizes: Mapping[str, int],
    variables: Mapping[str, xr.Variable],
) -> set[str]:
    """The names of the ``new`` units (``name -> (values, metadata)``) that the file's ``old`` ones hold unchanged:
    same values (NaN equal to NaN), dtype and metadata, such as a shared coordinate, kept once; the other
    ``variables`` are checked to fit beside the file's (:func:`check_append`) first."""
    same = set()
    for name, (values, meta) in new.items():
        if name in old and old[name][1] == meta:
            a, b = np.asarray(old[name][0]), np.asarray(values)
            if a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                same.add(name)
    check_append(path, old, sizes, {k: v for k, v in variables.items() if k not in same})
    return same
