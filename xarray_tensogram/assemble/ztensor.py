"""zTensor file -> raw group: one variable per tensor (writing: ``write/ztensor.py``).

Names are the tensor names (dots kept; duplicates, legal in v0.1, get ``_1`` suffixes with a warning). Dims:
the ``dim_names`` kwarg > the tensor's ``dim_names`` custom key/attribute > generic names made unique where
sizes clash. Custom keys (v0.1) and attributes (v1, v2) become netCDF-safe attrs. The backend applies CF
decoding and ``set_close``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..conventions import COORDINATE_ROLE_KEY, STRINGS_KEY
from ..conventions import ZTENSOR_DIM_NAMES_KEY as DIM_NAMES_KEY
from ..dim_names import check_dim_names, requested_dims, unique_names
from ..errors import XarrayTensogramError, ZTensorMappingWarning
from ..formats.ztensor import ZTensorFile
from ..formats.ztensor.model import TensorInfo
from ..raw_variables import (
    RawGroup,
    RawVariable,
    array_variable,
    flatten_attrs,
    lazy_variable,
    strings_from_payload,
    typed_attrs,
    with_cf_coordinates,
)
from .stored_dims import fits, stored_dims

__all__ = ["ztensor_to_dataset"]


def _warn(text: str) -> None:
    warnings.warn(text, ZTensorMappingWarning, stacklevel=4)  # the caller of ztensor_to_dataset


def _file_dims(info: TensorInfo, quiet: bool = False) -> list[str] | None:
    """The tensor's stored dim names where they are distinct strings, one per axis (else a warning unless quiet)."""
    value = info.attrs.get(DIM_NAMES_KEY)
    names = isinstance(value, list) and all(isinstance(d, str) for d in value)
    if value is None or (names and len(info.shape) == len(value) == len(set(value))):
        return value
    if not quiet:
        _warn(f"tensor {info.name!r}: ignoring dim_names {value!r} (need {len(info.shape)} distinct strings)")
    return None


def _attrs(info: TensorInfo) -> dict[str, Any]:
    """netCDF-safe attrs: custom keys/attributes flattened, ``cf.*`` lifted to plain CF names."""
    raw = {k: v for k, v in info.attrs.items() if k not in (DIM_NAMES_KEY, STRINGS_KEY, COORDINATE_ROLE_KEY)}
    attrs = flatten_attrs(raw)
    for key in [k for k in attrs if k.startswith("cf.")]:
        attrs.setdefault(key[3:], attrs.pop(key))
    attrs.update(info.dtype_attrs)
    return attrs


def _strings(info: TensorInfo, sizes: dict[str, int]) -> RawVariable | None:
    """A string variable ``to_ztensor`` kept in metadata (on a zero-size placeholder tensor), or None."""
    spec = info.attrs.get(STRINGS_KEY)
    if not isinstance(spec, Mapping):
        return None
    try:
        dims, values = strings_from_payload(spec)  # (as many dims as axes, else ValueError)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problem = f"malformed {STRINGS_KEY!r} ({exc}); read as the placeholder tensor"
    else:
        if fits(dims, values.shape, sizes):
            sizes.update(zip(dims, values.shape, strict=True))
            return array_variable(dims, values, typed_attrs(_attrs(info)))
        problem = f"string values of shape {values.shape} do not fit dims {dims}; read as the placeholder"
    _warn(f"tensor {info.name!r}: {problem}")
    return None


def ztensor_to_dataset(
    zfile: ZTensorFile,
    *,
    drop_variables: frozenset[str] | set[str] = frozenset(),
    verify_hash: bool,
    dim_names: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
) -> RawGroup:
    """The raw group of lazy variables, one per tensor (no CF decoding); its keywords are zTensor's open options."""
    names = unique_names((t.name for t in zfile.tensors), zfile.name, "tensor", ZTensorMappingWarning)
    ranks = {var: len(t.shape) for t, var in zip(zfile.tensors, names, strict=True)}
    # a tensor whose stored dim name is its own name is a dimension coordinate: a list of dim_names is not for it
    coords = {var: 1 for t, var in zip(zfile.tensors, names, strict=True) if _file_dims(t, quiet=True) == [var]}
    check_dim_names(dim_names, {v: r for v, r in ranks.items() if v not in coords}, zfile.name, coords)
    sizes: dict[str, int] = {}
    variables: dict[str, RawVariable] = {}
    coord_names: set[str] = set()
    for info, var in zip(zfile.tensors, names, strict=True):
        if var in drop_variables:
            continue
        if info.problem is not None:
            _warn(f"{zfile.name!r}: skipping tensor {info.name!r}: {info.problem}")
            continue
        if info.attrs.get(COORDINATE_ROLE_KEY) == "coordinate":
            coord_names.add(var)
        strings = _strings(info, sizes)
        if strings is not None:
            variables[var] = strings
            continue
        try:
            spec = zfile.array_spec(info.index, verify=verify_hash)
        except XarrayTensogramError as exc:  # a shape its stored bytes cannot fill: skip it, keep the others
            _warn(f"{zfile.name!r}: skipping tensor {info.name!r}: {exc}")
            continue
        requested = requested_dims(dim_names, var, len(info.shape), coordinate=var in coords)
        stored = _file_dims(info) if requested is None else None
        what = f"tensor {info.name!r}: dim_names"
        dims = stored_dims(requested, stored, var, info.shape, sizes, zfile.name, what, ZTensorMappingWarning)[0]
        encoding = {
            "ztensor_dtype": info.dtype,
            "ztensor_encoding": info.encoding,
            "ztensor_layout": info.layout,
            "ztensor_checksum": info.checksum.split(":", 1)[0] if info.checksum else None,
        }
        variables[var] = lazy_variable(dims, spec, _attrs(info), encoding)
    attrs = with_cf_coordinates(flatten_attrs(zfile.attrs), coord_names & set(variables))
    group = RawGroup.of(variables, {}, attrs)
    group.encoding["ztensor_version"] = zfile.version if zfile.dialect is None else f"{zfile.version} ({zfile.dialect})"
    return group
