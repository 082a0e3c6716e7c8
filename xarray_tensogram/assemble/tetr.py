"""Tetration ``.tet`` file -> raw group: one variable per dataset (writing: ``write/tetr.py``).

Dims: the ``dim_names`` kwarg > the footer's ``dim_names`` > generic names. Footer ``coords`` labels become
coordinate variables; footer ``attrs`` become variable attrs, CF numeric keys (``_FillValue``...) numbers
again so that xarray's CF decoding works; the history rows become a netCDF ``history`` attr plus the full
rows as JSON in ``tetr_history``. The backend applies CF decoding and ``set_close``.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..conventions import (
    COORDINATE_ROLE_KEY,
    SCALAR_KEY,
    STRINGS_KEY,
    TETR_HISTORY_ATTR,
    TETR_LABELS_ENCODING,
)
from ..dim_names import check_dim_names, requested_dims, unique_names
from ..errors import TetrMappingWarning
from ..formats.tetr import TetrDataset, TetrFile
from ..formats.tetr.history import history_text
from ..formats.tetr.model import CF_FLOAT64, CF_IN_DATA_DTYPE
from ..raw_variables import (
    RawGroup,
    RawVariable,
    array_variable,
    lazy_variable,
    strings_from_payload,
    typed_attrs,
    with_cf_coordinates,
)
from .stored_dims import stored_dims

__all__ = ["TetrMappingWarning", "tetr_group"]


def _warn(text: str) -> None:
    warnings.warn(text, TetrMappingWarning, stacklevel=4)  # the caller of tetr_group


_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?)?$")


def labels_to_values(labels: Sequence[str]) -> np.ndarray:
    """Integers if every label is an integer, floats if every label is a number, datetime64 if every label
    is an ISO 8601 date or time, else strings (the labels as spelled are kept in the coordinate's encoding)."""
    if labels and all(_ISO_TIME.match(v) for v in labels):
        with contextlib.suppress(ValueError):
            return np.asarray([np.datetime64(v.replace(" ", "T"), "ns") for v in labels])
    with contextlib.suppress(ValueError, OverflowError):  # (an integer beyond int64 overflows)
        return np.asarray([int(v) for v in labels], dtype=np.int64)
    with contextlib.suppress(ValueError):
        return np.asarray([float(v) for v in labels], dtype=np.float64)
    return np.asarray(list(labels), dtype=str)


def _add_coords(coords: dict[str, RawVariable], d: TetrDataset, dims: Sequence[str], var: str) -> None:
    """One coordinate variable per labelled axis whose label count matches the axis length; the first of a dim
    is kept, a different one from a later variable dropped with a warning."""
    for axis, dim in enumerate(dims):
        labels = d.coord_labels(axis)
        if labels is None:
            continue
        if len(labels) != (n := d.shape[axis]):
            _warn(f"dataset {d.name!r}: {len(labels)} coordinate labels for axis {axis} of length {n}; ignored")
            continue
        new = array_variable((dim,), labels_to_values(labels))
        new.encoding[TETR_LABELS_ENCODING] = list(labels)
        if dim not in coords:
            coords[dim] = new
        elif not coords[dim].equals(new):
            _warn(f"variable {var!r}: coordinate labels of {dim!r} differ from an earlier variable's; first kept")


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
    with contextlib.suppress(OverflowError, ValueError):  # (a float for an integer dtype is truncated)
        return (
            np.asarray(value).astype(dtype).item() if dtype.kind in "iu" and type(value) is float else dtype.type(value)
        )
    return value


def _attrs_of(d: TetrDataset) -> dict[str, Any]:
    """Footer attrs (all strings on disk); CF numeric attributes become numbers again."""
    numeric = {**dict.fromkeys(CF_FLOAT64), **dict.fromkeys(CF_IN_DATA_DTYPE, d.dtype)}  # key -> dtype
    return {k: _number(v, numeric[k]) if k in numeric else v for k, v in d.attrs.items()}


def _dataset_attrs(tfile: TetrFile) -> dict[str, Any]:
    attrs: dict[str, Any] = dict(tfile.metadata)
    if tfile.history:
        attrs["history"] = history_text(tfile.history)
        attrs[TETR_HISTORY_ATTR] = json.dumps(tfile.history, ensure_ascii=False, separators=(",", ":"))
    return attrs


def _hosted_strings(attrs: dict[str, Any], coord_names: set[str], host: str) -> dict[str, RawVariable]:
    """The string variables ``to_tetr`` kept as JSON in ``host``'s footer attrs, popped (malformed: warned, skipped)."""
    out = {}
    for key in [k for k in attrs if k.startswith(STRINGS_KEY + ":")]:
        name = key[len(STRINGS_KEY) + 1 :]
        try:
            spec = json.loads(attrs.pop(key))
            dims, values = strings_from_payload(spec)
            var_attrs = dict(spec.get("attrs") or {})
            out[name] = array_variable(dims, values, typed_attrs(var_attrs))  # (its role popped)
            if var_attrs.get(COORDINATE_ROLE_KEY) == "coordinate":
                coord_names.add(name)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            _warn(f"dataset {host!r}: string variable {name!r} kept in its footer is malformed ({exc}); skipped")
    return out


def tetr_group(
    tfile: TetrFile,
    *,
    drop_variables: frozenset[str] | set[str] = frozenset(),
    dim_names: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
) -> RawGroup:
    """The raw group of lazy variables, one per dataset (no CF decoding applied here).

    Chunks: ``encoding["preferred_chunks"]`` is one tile (``encoding["tetr_chunk_shape"]``, see
    :func:`~xarray_tensogram.raw_variables.lazy_variable`).
    """
    names = unique_names((d.name for d in tfile.datasets), tfile.name, "dataset", TetrMappingWarning)
    # a dataset whose stored dim name is its own name is a dimension coordinate: a list of dim_names is not for it
    coord_ranks = {var: 1 for d, var in zip(tfile.datasets, names, strict=True) if list(d.dim_names or ()) == [var]}
    ranks = {var: d.ndim for d, var in zip(tfile.datasets, names, strict=True) if var not in coord_ranks}
    check_dim_names(dim_names, ranks, tfile.name, coord_ranks)
    sizes: dict[str, int] = {}
    variables: dict[str, RawVariable] = {}
    coords: dict[str, RawVariable] = {}
    coord_names: set[str] = set()
    strings: dict[str, RawVariable] = {}
    for d, var in zip(tfile.datasets, names, strict=True):
        if var in drop_variables:
            continue
        requested = requested_dims(dim_names, var, d.ndim, coordinate=list(d.dim_names or ()) == [var])
        what = f"dataset {d.name!r}: footer dim_names"
        dims, generated = stored_dims(requested, d.dim_names, var, d.shape, sizes, tfile.name, what, TetrMappingWarning)
        _add_coords(coords, d, dims, var)
        encoding: dict[str, Any] = {
            "tetr_codec": d.codec,
            "tetr_chunk_shape": d.chunk_shape,
            "tetr_dtype": d.dtype_code,
        }
        if generated:
            encoding["tetr_generated_dims"] = list(dims)
        attrs = _attrs_of(d)
        strings.update(_hosted_strings(attrs, coord_names, d.name))
        if attrs.pop(COORDINATE_ROLE_KEY, None) == "coordinate":
            coord_names.add(var)
        scalar = attrs.pop(SCALAR_KEY, None) == "1" and d.shape == (1,)
        variables[var] = lazy_variable(dims, tfile.array_spec(d.dataset_id), attrs, encoding)
        if scalar:  # a 0-d variable, stored with one element: its element, selected lazily
            variables[var] = replace(variables[var], dims=(), index=(0,), encoding=encoding)
    variables.update({k: v for k, v in strings.items() if k not in drop_variables})
    coords = {k: v for k, v in coords.items() if k not in variables and k not in drop_variables}
    attrs = with_cf_coordinates(_dataset_attrs(tfile), coord_names & set(variables))
    group = RawGroup.of(variables, coords, attrs)
    group.encoding.update(tetr_layout_version=tfile.layout_version, tetr_execution=dict(tfile.execution))
    return group
