"""``mode="a"``: what every writer checks before it adds variables to an existing file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import xarray as xr

from ..errors import XarrayTensogramError
from ..io import check_target

__all__ = ["MODES", "check_append", "check_mode"]

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
