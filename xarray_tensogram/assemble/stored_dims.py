"""A variable's dims where its file may store dim names beside its values (Tetration's footer ``dim_names``,
zTensor's ``dim_names`` key): one rule for both assemblers, so the two formats cannot drift apart."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from ..dim_names import check_requested_dims, generic_dim_names

__all__ = ["fits", "stored_dims"]


def fits(dims: Sequence[str], shape: Sequence[int], sizes: Mapping[str, int]) -> bool:
    """Distinct names that agree with the sizes earlier variables gave them."""
    return len(set(dims)) == len(dims) and all(sizes.get(d, n) == n for d, n in zip(dims, shape, strict=False))


def stored_dims(
    requested: list[str] | None,
    stored: Sequence[str] | None,
    var: str,
    shape: Sequence[int],
    sizes: dict[str, int],
    source: str,
    what: str,
    category: type[Warning],
) -> tuple[list[str], bool]:
    """The dims asked for (checked against ``sizes``), else those the file stores (``what`` names them in the
    warning where they do not fit ``shape`` and ``sizes``), else generic names; and whether the names were
    generated (so that writing back adds none). ``sizes`` is updated."""
    if requested is not None:
        check_requested_dims(requested, var, shape, sizes, source)
    elif stored is not None and len(stored) == len(shape) and fits(stored, shape, sizes):
        requested = list(stored)
    elif stored is not None:
        warnings.warn(
            f"{what} {list(stored)} do not fit shape {list(shape)} or clash with other variables' sizes; "
            "using generic names",
            category,
            stacklevel=3,
        )
    dims = requested if requested is not None else generic_dim_names(shape, sizes)
    sizes.update(zip(dims, shape, strict=False))
    return dims, requested is None
