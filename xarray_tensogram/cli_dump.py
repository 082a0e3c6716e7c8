"""``xarray-tensogram dump FILE VAR``: the values of one variable, optionally selected by position
(``--isel DIM=A:B``) or by coordinate label (``--sel DIM=LABEL``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .errors import closest

__all__ = ["CliError", "cmd_dump"]


class CliError(Exception):
    """A problem reported as one line: a usage error (exit status 2) unless ``status`` says otherwise."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _parse_isel(items: Sequence[str]) -> dict[str, Any]:
    """``["step=0:4", "latitude=10", "longitude=::2"]`` -> ``{"step": slice(0, 4), ...}``."""
    out: dict[str, Any] = {}
    for item in items:
        dim, sep, spec = item.partition("=")
        if not sep or not dim:
            raise CliError(f"--isel {item!r}: expected DIM=INDEX or DIM=START:STOP[:STEP]")
        try:
            if ":" in spec:  # slice() refuses more than three parts (a TypeError)
                out[dim] = slice(*[int(p) if p.strip() else None for p in spec.split(":")])
            else:
                indices = [int(p) for p in spec.split(",")]
                out[dim] = indices if "," in spec else indices[0]
        except (ValueError, TypeError):
            raise CliError(
                f"--isel {item!r}: {spec!r} is not an integer, a list a,b,c or a slice start:stop:step"
            ) from None
    return out


def _parse_sel(items: Sequence[str]) -> dict[str, list[str]]:
    """``["level=500", "step=6h,12h"]`` -> ``{"level": ["500"], "step": ["6h", "12h"]}`` (text labels)."""
    out: dict[str, list[str]] = {}
    for item in items:
        dim, sep, spec = item.partition("=")
        if not sep or not dim or not spec:
            raise CliError(f"--sel {item!r}: expected DIM=VALUE or DIM=VALUE1,VALUE2")
        out[dim] = [p.strip() for p in spec.split(",")]
    return out


def _no_dimension(da: Any, dim: str) -> CliError:
    close = closest(dim, map(str, da.dims))
    hint = f" (did you mean {close!r}?)" if close else ""
    dims = ", ".join(map(str, da.dims)) or "none"
    return CliError(f"{da.name!r} has no dimension {dim!r}{hint}; its dimensions: {dims}")


def _check_isel(da: Any, selection: dict[str, Any]) -> None:
    """Each ``--isel`` dimension exists and each index is inside it (slices always are), said in words."""
    for dim, index in selection.items():
        if dim not in da.dims:
            raise _no_dimension(da, dim)
        n = da.sizes[dim]
        bad = [i for i in (index if isinstance(index, list) else [index]) if isinstance(i, int) and not -n <= i < n]
        if bad:
            where = f"0..{n - 1} or {-n}..-1" if n else "none: the dimension is empty"
            raise CliError(
                f"--isel {dim}={bad[0]}: out of range: {dim} of {da.name!r} has {n} elements (indices {where})"
            )


def _label(coord: Any, text: str, dim: str) -> Any:
    """One ``--sel`` label converted to the coordinate's type (numbers, dates, time deltas, text)."""
    kind = coord.dtype.kind
    try:
        if kind in "iu":
            value = float(text)
            return int(value) if value.is_integer() else value
        if kind == "f":
            return float(text)
        if kind == "M":
            return np.datetime64(pd.Timestamp(text).tz_localize(None), "ns")
        if kind == "m":
            return np.timedelta64(pd.Timedelta(text if not text.lstrip("-").isdigit() else f"{text}h"), "ns")
    except ValueError:
        raise CliError(f"--sel {dim}={text}: not a label of {dim!r} (dtype {coord.dtype})") from None
    return text


def _select_labels(da: Any, sel: dict[str, list[str]]) -> Any:
    """``da.sel`` by label: exact for integers, text, dates and time deltas, nearest for floats."""
    for dim, texts in sel.items():
        if dim not in da.dims:
            raise _no_dimension(da, dim)
        if dim not in da.coords:
            raise CliError(f"--sel {dim}=...: {dim!r} has no coordinate labels; use --isel {dim}=INDEX")
        coord = da.coords[dim]
        labels = [_label(coord, t, dim) for t in texts]
        method = "nearest" if coord.dtype.kind == "f" else None
        try:
            da = da.sel({dim: labels[0] if len(labels) == 1 else labels}, method=method)
        except KeyError:
            shown = ", ".join(str(v) for v in np.asarray(_readable(coord.values[:8])).tolist())  # plain values
            raise CliError(
                f"--sel {dim}={','.join(texts)}: no such label; {dim} has {shown}{' ...' if coord.size > 8 else ''}"
            ) from None
    return da


def cmd_dump(args: argparse.Namespace) -> None:
    """The values of ``args.variable`` in ``args.file``, after its ``--isel`` and ``--sel`` selections."""
    from .backend import TensogramBackendEntrypoint

    path, var = args.file, args.variable
    selection = _parse_isel(args.isel)
    labels = _parse_sel(args.sel)
    ds = xr.open_dataset(
        path, engine=TensogramBackendEntrypoint, storage_options=args.storage_options or None, group=args.group or None
    )
    try:
        if var not in ds.variables:
            raise CliError(f"{path}: no variable {var!r}; variables: {', '.join(map(str, ds.variables))}")
        da = ds[var]
        _check_isel(da, selection)
        da = _select_labels(da.isel(selection), labels)
        values = da.values
        dims = ", ".join(f"{d}: {n}" for d, n in da.sizes.items()) or "scalar"
        print(f"{var} ({dims}) {values.dtype}")
        for name, coord in da.coords.items():
            if coord.ndim == 0:
                print(f"  {name} = {np.asarray(_readable(coord.values))[()]}")
            elif coord.ndim == 1 and name in da.dims:
                text = np.array2string(
                    _readable(coord.values),
                    threshold=12,
                    edgeitems=3,
                    max_line_width=100,
                    formatter={"numpystr": str, "object": str},
                )
                print(f"  {name}: {text}")
        opts: dict[str, Any] = {"threshold": sys.maxsize} if args.full else {"threshold": 1000, "edgeitems": 3}
        with np.printoptions(linewidth=120, **opts):
            print(values)
    finally:
        ds.close()


def _readable(values: Any) -> Any:
    """Dates and time deltas as text (numpy prints timedelta64[ns] as bare integers)."""
    values = np.asarray(values)
    if values.dtype.kind == "M":
        return np.datetime_as_string(values, unit="s")
    if values.dtype.kind == "m":
        return np.asarray([str(pd.Timedelta(v)) for v in values.ravel()], dtype=object).reshape(values.shape)
    return values
