"""xarray Dataset -> Tetration ``.tet`` file: one dataset per data variable (the mirror of assemble/tetr.py)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..conventions import TETR_FILE_KEYS as FILE_KEYS
from ..conventions import TETR_HISTORY_ATTR as HISTORY_JSON_ATTR
from ..errors import TetrMappingWarning
from ..formats.tetr import CODECS, LIMITS, DatasetWrite, write_tetr

__all__ = ["to_tetr"]


def _attr_string(value: Any) -> str:
    """An attribute value as the decimal/text string .tet stores (lists and maps as compact JSON)."""
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.ndim else value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _label(value: Any) -> str:
    if isinstance(value, np.datetime64):
        return str(np.datetime_as_string(value))
    return _attr_string(value)


ChunksLike = int | Sequence[int] | Mapping[str, int] | None


def _chunk_shape(var: xr.Variable, name: str, chunks: ChunksLike) -> tuple[int, ...]:
    """Explicit ``chunks`` (an int for every axis, a tuple per axis, or ``{dim: size}``) > the tile shape
    it was read with > its Dask chunks > one tile."""
    if isinstance(chunks, bool):
        raise TypeError(f"chunks must be an int, a tuple or a {{dim: size}} mapping, got {chunks!r}")
    if isinstance(chunks, int):
        return tuple(min(chunks, n) for n in var.shape)
    if isinstance(chunks, Mapping):
        return tuple(int(chunks.get(str(d), n)) for d, n in zip(var.dims, var.shape, strict=True))
    if chunks is not None:
        sizes = tuple(int(c) for c in chunks)
        if len(sizes) != var.ndim:
            raise ValueError(
                f"chunks {tuple(chunks)} has {len(sizes)} sizes but variable {name!r} has dims "
                f"{list(var.dims)}; give one size per axis or a {{dim: size}} mapping"
            )
        return sizes
    enc = var.encoding.get("tetr_chunk_shape")
    if enc is not None and len(enc) == var.ndim:
        return tuple(int(c) for c in enc)
    if var.chunks:
        return tuple(max(c[0], 1) for c in var.chunks)
    return tuple(var.shape)


def _codec(var: xr.Variable, compression: str | None) -> str:
    """``compression`` when given, else the codec the variable was read with, else raw."""
    if compression is None:
        compression = var.encoding.get("tetr_codec", "raw")
    codec = {"none": "raw", **{name: name for name in CODECS.values()}}.get(str(compression))  # the format's table
    if codec is None:
        raise ValueError(f"compression must be one of None, 'raw', 'zstd'; got {compression!r}")
    return codec


def _values(var: xr.Variable) -> Any:
    """Dask-backed values stay lazy (the format writer computes one tile at a time); others are loaded."""
    return var.data if var.chunks is not None else np.asarray(var.values)


def _dim_names(source: xr.Variable, dims: list[str]) -> list[str] | None:
    """The dims, unless they are the generic names the reader made up for a file that had none."""
    return None if source.encoding.get("tetr_generated_dims") == dims else dims


def _string_attrs(var: xr.Variable, name: str) -> dict[str, str]:
    out = {}
    for key, value in var.attrs.items():
        text = _attr_string(value)
        if not key or not text:
            warnings.warn(
                f"variable {name!r}: attribute {key!r} is empty; .tet cannot store empty strings, dropped",
                TetrMappingWarning,
                stacklevel=4,
            )
            continue
        out[str(key)] = text
    return out


def _labels(ds: xr.Dataset, dim: str) -> list[str] | None:
    """String labels of an index coordinate, if it fits the format's limits (else dropped with a warning)."""
    if dim not in ds.coords or ds[dim].ndim != 1:
        return None
    values = ds[dim].values
    if len(values) > LIMITS["labels"]:
        warnings.warn(
            f"coordinate {dim!r} has {len(values)} values; .tet stores at most {LIMITS['labels']} labels "
            f"per axis, so it is not written",
            TetrMappingWarning,
            stacklevel=4,
        )
        return None
    return [_label(v) for v in values]


def _history_rows(ds: xr.Dataset, history: Sequence[Any] | None) -> list[Any]:
    if history is not None:
        return list(history)
    text = ds.attrs.get(HISTORY_JSON_ATTR)
    return list(json.loads(text)) if isinstance(text, str) and text else []


def _file_metadata(ds: xr.Dataset) -> dict[str, str] | None:
    meta = {k: _attr_string(ds.attrs[k]) for k in FILE_KEYS if k in ds.attrs}
    dropped = [k for k in ds.attrs if k not in FILE_KEYS and k not in ("history", HISTORY_JSON_ATTR)]
    if dropped:
        warnings.warn(
            f"Dataset attributes {dropped} have no place in a .tet file and are not written",
            TetrMappingWarning,
            stacklevel=3,
        )
    return meta or None


def _encode(var: xr.Variable, name: Any) -> xr.Variable:
    """CF-encode like netCDF writers, minus what .tet cannot use.

    No default ``_FillValue: nan`` for floats unless the variable asked for one, and
    booleans (CF: int8 with ``dtype: bool``) are stored as u8, which xarray decodes back.
    """
    explicit_fill = "_FillValue" in var.encoding or "_FillValue" in var.attrs
    out = xr.conventions.encode_cf_variable(var, name=name)
    if not explicit_fill and "_FillValue" in out.attrs:
        out = out.copy(deep=False)
        out.attrs.pop("_FillValue")
    if out.attrs.get("dtype") == "bool" and out.dtype == np.int8:
        out = out.astype("u1")
    return out


def to_tetr(
    ds: xr.Dataset,
    path: Any,
    *,
    chunks: ChunksLike = None,
    compression: str | None = None,
    history: Sequence[Any] | None = None,
) -> None:
    """Write every data variable of ``ds`` as a dataset of a Tetration (``.tet``) file.

    Dims go to the footer's ``dim_names`` (unless they are the generic names given to a file without
    any), 1-D index coordinates (up to 64 values) to ``coords`` labels, attrs to string ``attrs``
    (CF-encoded first, like netCDF writers), ``tool``/``library_version``/``created_at`` Dataset attrs
    to the file metadata. A Dataset read from a ``.tet`` file and left unchanged is written back byte
    for byte. Large metadata is spilled as the format prescribes.

    Parameters
    ----------
    ds
        The Dataset to write.
    path
        The target file (written atomically, with the permissions ``open(path, "w")`` would give).
    chunks
        The tile shape: one size for every axis (int), one per axis (tuple), or ``{dim: size}``. By
        default the tile shape the variable was read with, else its Dask chunks, else one tile.
    compression
        ``"raw"`` or ``"zstd"``; by default the codec the variable was read with, else raw.
    history
        History rows (dicts or ``(op, source, at)``); by default the rows read from the file
        (``tetr_history``).

    Raises
    ------
    TypeError
        ``chunks`` is not an int, a tuple or a mapping.
    ValueError
        ``chunks`` has the wrong length for a variable, or ``compression`` is not one of the valid
        values (the message lists them).
    """
    writes = []
    for name in ds.data_vars:
        source = ds.variables[name]
        var = _encode(source, name)
        dims = [str(d) for d in var.dims]
        coords = {d: labels for d in dims if (labels := _labels(ds, d)) is not None}
        tiles = _chunk_shape(source, str(name), chunks)
        writes.append(
            DatasetWrite(
                str(name),
                _values(var),
                tiles,
                _codec(source, compression),
                dim_names=_dim_names(source, dims),
                coords=coords or None,
                attrs=_string_attrs(var, str(name)) or None,
            )
        )
    execution = ds.encoding.get("tetr_execution") or {}
    write_tetr(
        path,
        writes,
        history=_history_rows(ds, history),
        file_metadata=_file_metadata(ds),
        execution=(int(execution.get("memory_budget_percent_bps", 0)), int(execution.get("memory_budget_bytes", 0))),
    )
