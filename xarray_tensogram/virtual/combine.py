"""Whether virtual datasets of several files can be combined, said before xarray tries.

Virtual variables hold byte ranges, not values, so xarray can only place whole files side by side, not realign
or reindex them. Files on different grids, or with nothing to order them by, would otherwise fail deep inside
xarray ("fancy indexing is not supported"); here the error names the files, the dimension and what to do.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..errors import XarrayTensogramError

__all__ = ["check_combinable", "concat_hint"]


def _name(path: str | os.PathLike[str]) -> str:
    return os.path.basename(os.fspath(path).rstrip("/")) or os.fspath(path)


def _values(ds: xr.Dataset, dim: str) -> np.ndarray | None:
    """A dim's index values (None when the dim has no index)."""
    index = ds.indexes.get(dim)
    return None if index is None else np.asarray(index)


def _summary(values: np.ndarray | None, size: int) -> str:
    """``37 values (90.0 to -90.0)`` with plain Python numbers (never numpy reprs)."""
    if values is None or not values.size:
        return f"{size} values"
    first, last = values[0].item(), values[-1].item()
    return f"{size} values ({first} to {last})" if size > 1 else f"1 value ({first})"


def _disjoint(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Two files' labels of one dim can be concatenated (no label in both)."""
    return a is not None and b is not None and not np.intersect1d(a, b).size


def check_combinable(
    paths: Sequence[str | os.PathLike[str]], datasets: Sequence[xr.Dataset], concat_dim: str | None
) -> None:
    """Raise :class:`XarrayTensogramError` when the files cannot be combined without copying."""
    seen = [os.path.abspath(os.fspath(p)) if "://" not in os.fspath(p) else os.fspath(p) for p in paths]
    twice = next((p for i, p in enumerate(paths) if seen[i] in seen[:i]), None)
    if twice is not None:
        raise XarrayTensogramError(f"file {_name(twice)!r} is given more than once; give each file once")
    first, ref = datasets[0], paths[0]
    ordering = False
    for path, ds in zip(paths[1:], datasets[1:], strict=True):
        for dim in sorted(set(first.sizes) & set(ds.sizes), key=str):
            if dim == concat_dim:
                continue
            a, b = _values(first, str(dim)), _values(ds, str(dim))
            same = first.sizes[dim] == ds.sizes[dim] and (a is None or b is None or np.array_equal(a, b))
            if same:
                continue
            if concat_dim is None and _disjoint(a, b):
                ordering = True  # combined along this dim, in the order of its labels
                continue
            raise XarrayTensogramError(
                f"files {_name(ref)!r} and {_name(path)!r} are on different grids: {dim!r} has "
                f"{_summary(a, first.sizes[dim])} in {_name(ref)!r} and {_summary(b, ds.sizes[dim])} in "
                f"{_name(path)!r}. One set of references holds files on one grid: write one per grid"
            )
    if concat_dim is None and not ordering:
        raise XarrayTensogramError(
            f"files {', '.join(repr(_name(p)) for p in paths[:3])}{' ...' if len(paths) > 3 else ''} share every "
            f"dimension's labels, so nothing orders them. {concat_hint(datasets)}"
        )


def concat_hint(datasets: Sequence[xr.Dataset]) -> str:
    """What to pass to concatenate files that differ only in scalar coordinates (one step per file ...)."""
    scalars = [str(n) for n, c in datasets[0].coords.items() if c.ndim == 0]
    differing = [n for n in scalars if not all(_same_scalar(ds, datasets[0], n) for ds in datasets[1:])]
    candidates = differing or scalars
    if not candidates:
        return "Concatenate them along a new dimension: concat_dim='NAME' (--concat-dim NAME on the command line)."
    name = next((n for n in ("step", "time", "valid_time", "number") if n in candidates), candidates[0])
    how = f"e.g. concat_dim={name!r} (--concat-dim {name} on the command line)."
    if differing:
        plural = "s" if len(differing) > 1 else ""
        return f"They differ in the scalar coordinate{plural} {', '.join(differing)}: concatenate along one, {how}"
    return f"Concatenate them along a scalar coordinate ({', '.join(candidates)}), {how}"


def _same_scalar(ds: xr.Dataset, first: xr.Dataset, name: str) -> bool:
    """Whether two files hold the same value of a scalar coordinate (unknown when it is not loaded: True)."""
    if name not in ds.coords:
        return False
    a: Any = first.coords[name].variable.data  # a ManifestArray (not loaded) or numpy (inlined)
    b: Any = ds.coords[name].variable.data
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
        return True
    return bool(np.array_equal(a, b))
