"""``mode="a"``: what every writer checks before it adds variables to an existing file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import xarray as xr

from ..errors import XarrayTensogramError

__all__ = ["MODES", "check_append", "check_mode"]

MODES = ("w", "a")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise XarrayTensogramError(f"mode must be one of {list(MODES)}, got {mode!r}")


def check_append(
    path: str, names: Iterable[str], sizes: Mapping[str, int], variables: Mapping[str, xr.Variable]
) -> None:
    """Refuse, before a byte is written, a variable the file already has or a dim whose size clashes."""
    existing = set(names)
    for name, var in variables.items():
        if name in existing:
            raise XarrayTensogramError(
                f"{path!r}: mode='a' cannot add variable {name!r}: the file already has it "
                f"(write the whole Dataset with mode='w' to replace it)"
            )
        for dim, size in zip(var.dims, var.shape, strict=True):
            if sizes.get(str(dim), size) != size:
                raise XarrayTensogramError(
                    f"{path!r}: mode='a' cannot add variable {name!r}: its dim {dim!r} has size {size}, "
                    f"the file's has size {sizes[str(dim)]}"
                )
