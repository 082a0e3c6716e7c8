"""Tetration ``.tet`` file -> xarray Dataset: one variable per dataset (writing: ``write/tetr.py``).

Dims come from the ``dim_names`` kwarg, else the footer's ``dim_names``, else
generic names made unique where sizes clash. Footer ``coords`` labels become
coordinate variables (numeric when every label parses as a number), footer
``attrs`` become variable attrs (CF numeric keys such as ``_FillValue`` are
turned back into numbers so xarray's CF decoding works), file metadata becomes
Dataset attrs and the history rows become a netCDF ``history`` attr plus the
full rows as JSON in ``tetr_history``. The backend applies CF decoding and
``set_close``.
"""

from __future__ import annotations

import datetime as _dt
import json
import warnings
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from ..conventions import TETR_FILE_KEYS, TETR_HISTORY_ATTR
from ..errors import TetrMappingWarning
from ..formats.tetr import TetrDataset, TetrFile
from .common import (
    check_dim_names_used,
    check_requested_dims,
    generic_dim_names,
    lazy_variable,
    requested_dims,
    unique_names,
)

__all__ = ["tetr_to_dataset", "TetrMappingWarning", "HISTORY_JSON_ATTR", "FILE_KEYS"]

HISTORY_JSON_ATTR = TETR_HISTORY_ATTR
FILE_KEYS = TETR_FILE_KEYS
#: CF attributes that hold a number in the variable's dtype, stored as decimal strings in .tet
_CF_VALUE_ATTRS = ("_FillValue", "missing_value", "valid_min", "valid_max")
_CF_FLOAT_ATTRS = ("scale_factor", "add_offset")


# -- reading ----------------------------------------------------------------------------------------
def _fits(dims: Sequence[str], shape: Sequence[int], sizes: Mapping[str, int]) -> bool:
    return len(set(dims)) == len(dims) and all(sizes.get(d, n) == n for d, n in zip(dims, shape))


def _dims_for(d: TetrDataset, var: str, dim_names: Any, sizes: dict[str, int],
              source: str) -> tuple[list[str], bool]:
    """Kwarg > footer ``dim_names`` (if usable) > generic names; ``sizes`` is updated.
    The flag says whether the names were generated (so that writing back adds none)."""
    dims = requested_dims(dim_names, var, d.ndim, source)
    if dims is not None:
        check_requested_dims(dims, var, d.shape, sizes, source)
    if dims is None and d.dim_names is not None:
        if len(d.dim_names) == d.ndim and _fits(d.dim_names, d.shape, sizes):
            dims = list(d.dim_names)
        else:
            warnings.warn(f"dataset {d.name!r}: footer dim_names {d.dim_names} do not fit shape {list(d.shape)} "
                          f"or clash with other variables' sizes; using generic names", TetrMappingWarning, stacklevel=4)
    generated = dims is None
    if dims is None:
        dims = generic_dim_names(d.shape, sizes)
    sizes.update(zip(dims, d.shape))
    return dims, generated


def labels_to_values(labels: Sequence[str]) -> np.ndarray:
    """Integers if every label is an integer, floats if every label is a number, else strings."""
    try:
        ints = [int(v) for v in labels]
        if all(-(2**63) <= v < 2**63 for v in ints):
            return np.asarray(ints, dtype=np.int64)
    except ValueError:
        pass
    try:
        return np.asarray([float(v) for v in labels], dtype=np.float64)
    except ValueError:
        return np.asarray(list(labels), dtype=str)


def _coords_of(d: TetrDataset, dims: Sequence[str]) -> dict[str, xr.Variable]:
    """One coordinate variable per labelled axis whose label count matches the axis length."""
    out = {}
    for axis, dim in enumerate(dims):
        labels = d.coord_labels(axis)
        if labels is None:
            continue
        if len(labels) != d.shape[axis]:
            warnings.warn(f"dataset {d.name!r}: {len(labels)} coordinate labels for axis {axis} of length "
                          f"{d.shape[axis]}; ignored", TetrMappingWarning, stacklevel=4)
            continue
        out[dim] = xr.Variable((dim,), labels_to_values(labels))
    return out


def _number(text: str, dtype: np.dtype | None) -> Any:
    """A decimal string as a number (in ``dtype`` when given), or the string itself when it is not one."""
    try:
        value: Any = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return text
    if dtype is None:
        return float(value)
    try:
        return np.asarray(value).astype(dtype).item() if dtype.kind in "iu" and not isinstance(value, int) \
            else np.dtype(dtype).type(value)
    except (OverflowError, ValueError):
        return value


def _attrs_of(d: TetrDataset) -> dict[str, Any]:
    """Footer attrs (all strings on disk); CF numeric attributes become numbers again."""
    attrs: dict[str, Any] = dict(d.attrs)
    for key in _CF_VALUE_ATTRS:
        if key in attrs:
            attrs[key] = _number(attrs[key], d.dtype)
    for key in _CF_FLOAT_ATTRS:
        if key in attrs:
            attrs[key] = _number(attrs[key], None)
    return attrs


def _history_line(row: Mapping[str, Any]) -> str:
    """``time: op source``; Unix-second timestamps are shown as ISO 8601 UTC."""
    at = row["at"]
    try:
        at = _dt.datetime.fromtimestamp(int(at), _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):
        pass
    return f"{at}: {row['op']} {row['source']}"


def _dataset_attrs(tfile: TetrFile) -> dict[str, Any]:
    attrs: dict[str, Any] = dict(tfile.metadata)
    if tfile.history:
        attrs["history"] = "\n".join(_history_line(r) for r in tfile.history)
        attrs[HISTORY_JSON_ATTR] = json.dumps(tfile.history, ensure_ascii=False, separators=(",", ":"))
    return attrs


def _add_coords(coords: dict[str, xr.Variable], new: Mapping[str, xr.Variable], var: str) -> None:
    """Keep the first coordinate of a dim; a different one from a later variable is dropped with a warning."""
    for dim, c in new.items():
        if dim not in coords:
            coords[dim] = c
        elif not coords[dim].equals(c):
            warnings.warn(f"variable {var!r}: coordinate labels of {dim!r} differ from an earlier variable's; "
                          f"keeping the first", TetrMappingWarning, stacklevel=3)


def tetr_to_dataset(tfile: TetrFile, *, drop_variables: frozenset[str] | set[str] = frozenset(),
                    dim_names: Sequence[str] | Mapping[str, Sequence[str]] | None = None) -> xr.Dataset:
    """A raw Dataset of lazy variables, one per dataset (no CF decoding applied here).

    Chunks: ``encoding["preferred_chunks"]`` is the tile shape, so ``chunks={}`` gives the tile grid.
    """
    names = unique_names(d.name for d in tfile.datasets)
    renamed = [(d.name, n) for d, n in zip(tfile.datasets, names) if d.name != n]
    if renamed:
        warnings.warn(f"{tfile.name!r}: duplicate dataset names renamed: "
                      + ", ".join(f"{a!r} -> {b!r}" for a, b in renamed), TetrMappingWarning, stacklevel=2)
    check_dim_names_used(dim_names, {var: d.ndim for d, var in zip(tfile.datasets, names)}, tfile.name)
    sizes: dict[str, int] = {}
    variables: dict[str, xr.Variable] = {}
    coords: dict[str, xr.Variable] = {}
    for d, var in zip(tfile.datasets, names):
        if var in drop_variables:
            continue
        dims, generated = _dims_for(d, var, dim_names, sizes, tfile.name)
        _add_coords(coords, _coords_of(d, dims), var)
        encoding = {"tetr_codec": d.codec, "tetr_chunk_shape": d.chunk_shape, "tetr_dtype": d.dtype_code}
        if generated:
            encoding["tetr_generated_dims"] = list(dims)
        variables[var] = lazy_variable(dims, tfile.array_spec(d.dataset_id), _attrs_of(d), encoding)
    coords = {k: v for k, v in coords.items() if k not in variables and k not in drop_variables}
    ds = xr.Dataset(variables, coords=coords, attrs=_dataset_attrs(tfile))
    ds.encoding["tetr_layout_version"] = tfile.layout_version
    ds.encoding["tetr_execution"] = dict(tfile.execution)
    return ds
<<<<<<< HEAD
=======


# -- writing ----------------------------------------------------------------------------------------
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


def _chunk_shape(var: xr.Variable, chunks: Mapping[str, int] | int | None) -> tuple[int, ...]:
    """Explicit ``chunks`` > the tile shape it was read with > its Dask chunks > one tile."""
    if isinstance(chunks, int):
        return tuple(min(chunks, n) for n in var.shape)
    if chunks is not None:
        return tuple(int(chunks.get(d, n)) for d, n in zip(var.dims, var.shape))
    enc = var.encoding.get("tetr_chunk_shape")
    if enc is not None and len(enc) == var.ndim:
        return tuple(int(c) for c in enc)
    if var.chunks:
        return tuple(max(c[0], 1) for c in var.chunks)
    return tuple(var.shape)


def _string_attrs(var: xr.Variable, name: str) -> dict[str, str]:
    out = {}
    for key, value in var.attrs.items():
        text = _attr_string(value)
        if not key or not text:
            warnings.warn(f"variable {name!r}: attribute {key!r} is empty; .tet cannot store empty strings, dropped",
                          TetrMappingWarning, stacklevel=4)
            continue
        out[str(key)] = text
    return out


def _labels(ds: xr.Dataset, dim: str) -> list[str] | None:
    """String labels of an index coordinate, if it fits the format's limits (else dropped with a warning)."""
    if dim not in ds.coords or ds[dim].ndim != 1:
        return None
    values = ds[dim].values
    if len(values) > LIMITS["labels"]:
        warnings.warn(f"coordinate {dim!r} has {len(values)} values; .tet stores at most {LIMITS['labels']} labels "
                      f"per axis, so it is not written", TetrMappingWarning, stacklevel=4)
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
        warnings.warn(f"Dataset attributes {dropped} have no place in a .tet file and are not written",
                      TetrMappingWarning, stacklevel=3)
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


def to_tetr(ds: xr.Dataset, path: Any, *, chunks: Mapping[str, int] | int | None = None,
            compression: str | None = None, history: Sequence[Any] | None = None) -> None:
    """Write every data variable of ``ds`` as a dataset of a Tetration layout v1 file.

    Dims go to the footer's ``dim_names``, 1-D index coordinates (up to 64 values) to
    ``coords`` labels, attrs to string ``attrs`` (CF-encoded first, like netCDF writers),
    ``tool``/``library_version``/``created_at`` Dataset attrs to the file metadata. Large
    metadata is spilled as the format prescribes; other Dataset attrs are dropped with a warning.

    Parameters
    ----------
    ds : xarray.Dataset
        What to write.
    path : str or os.PathLike
        The output file.
    chunks : int or mapping of str to int, optional
        The tile size: one for every axis, or ``{dim: size}``. Default: the tile shape the
        variable was read with, else its Dask chunks, else one tile.
    compression : {None, "zstd"}, default None
        ``None`` writes raw tiles.
    history : sequence, optional
        History rows (dicts or ``(op, source, at)`` tuples). Default: the rows read from the
        file (the ``tetr_history`` attr).

    Returns
    -------
    None

    Raises
    ------
    ValueError
        For an unknown ``compression``.
    UnsupportedError
        For a dtype the format has no code for (strings, complex, ...).

    Examples
    --------
    >>> import xarray as xr
    >>> import xarray_tensogram as xt
    >>> ds = xr.open_dataset(xt.sample_path("sample.tet"), engine="tensogram")
    >>> xt.to_tetr(ds, "copy.tet", chunks={"lat": 3, "lon": 4}, compression="zstd")  # doctest: +SKIP
    """
    codec = {None: "raw", "raw": "raw", "zstd": "zstd"}.get(compression)
    if codec is None:
        raise ValueError(f"compression must be None or 'zstd', got {compression!r}")
    writes = []
    for name in ds.data_vars:
        var = _encode(ds.variables[name], name)
        dims = [str(d) for d in var.dims]
        coords = {d: labels for d in dims if (labels := _labels(ds, d)) is not None}
        tiles = _chunk_shape(ds.variables[name], chunks)
        writes.append(DatasetWrite(str(name), np.asarray(var.values), tiles, codec,
                                   dim_names=dims, coords=coords or None, attrs=_string_attrs(var, str(name)) or None))
    write_tetr(path, writes, history=_history_rows(ds, history), file_metadata=_file_metadata(ds))
>>>>>>> 71bf884 (Numpydoc sections on the public open_*/to_* functions)
