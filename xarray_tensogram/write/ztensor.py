"""xarray Dataset -> zTensor v0.1 ``.zt`` file: one tensor per variable (the mirror of assemble/ztensor.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..conventions import ZTENSOR_DIM_NAMES_KEY as DIM_NAMES_KEY
from ..formats.ztensor import write_ztensor_v01
from ..formats.ztensor.compression import RAW, V01_ENCODINGS
from ..formats.ztensor.writer import RESERVED_KEYS

__all__ = ["to_ztensor"]


def _cbor_value(value: Any) -> Any:
    """Attribute values as plain CBOR-encodable Python objects."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_cbor_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _cbor_value(v) for k, v in value.items()}
    return value


def _encode(var: xr.Variable, name: Any) -> xr.Variable:
    """CF-encode like netCDF writers do (times, fill values); bool stays bool, which v0.1 stores natively."""
    if var.dtype.kind == "b":
        return var
    return xr.conventions.encode_cf_variable(var, name=name)


def _custom_fields(var: xr.Variable, name: str) -> dict[str, Any]:
    custom: dict[str, Any] = {}
    for key, value in var.attrs.items():
        if key in RESERVED_KEYS or key == DIM_NAMES_KEY:
            raise ValueError(
                f"variable {name!r}: attribute {key!r} clashes with a zTensor key; rename it before writing"
            )
        custom[str(key)] = _cbor_value(value)
    if var.dims:
        custom[DIM_NAMES_KEY] = [str(d) for d in var.dims]
    return custom


def _dataset_items(ds: xr.Dataset) -> list[tuple[str, np.ndarray, dict[str, Any]]]:
    items = []
    non_index = [str(c) for c in ds.coords if c not in ds.dims]
    for name in list(ds.data_vars) + list(ds.coords):
        var = _encode(ds.variables[name], name)
        custom = _custom_fields(var, str(name))
        if name in ds.data_vars and non_index:
            mine = [c for c in non_index if set(ds[c].dims) <= set(var.dims)]
            if mine and "coordinates" not in custom:
                custom["coordinates"] = " ".join(mine)
        items.append((str(name), np.asarray(var.values), custom))
    return items


def _as_read(variables: list[xr.Variable], key: str, valid: tuple[str, ...]) -> str | None:
    """The value the variables were read with (any of them), if the v0.1 writer can write it."""
    for var in variables:
        value = var.encoding.get(key)
        if value in valid:
            return str(value)
    return None


def _file_options(
    variables: list[xr.Variable], compression: str | None, checksum: str | None
) -> tuple[str | None, str | None]:
    """Explicit options win ("raw"/"none" for plain); else what the variables were read with."""
    compressed = tuple(name for name in V01_ENCODINGS if name != RAW)  # the format's table
    comp = _as_read(variables, "ztensor_encoding", compressed) if compression is None else compression
    check = _as_read(variables, "ztensor_checksum", ("crc32c", "sha256")) if checksum is None else checksum
    if comp not in (None, "none", *V01_ENCODINGS):
        raise ValueError(f"compression must be one of None, 'raw', 'zstd'; got {compression!r}")
    if check not in (None, "none", "crc32c", "sha256"):
        raise ValueError(f"checksum must be one of None, 'none', 'crc32c', 'sha256'; got {checksum!r}")
    return (None if comp in ("raw", "none") else comp), (None if check == "none" else check)


def to_ztensor(
    ds_or_mapping: xr.Dataset | Mapping[str, Any],
    path: str,
    *,
    compression: str | None = None,
    checksum: str | None = None,
) -> None:
    """Write a Dataset (or a mapping name -> array/DataArray) as a zTensor v0.1 (``.zt``) file.

    Dimension names go to the ``dim_names`` custom key and attrs to custom keys, so
    ``xr.open_dataset(path, engine="tensogram")`` gives the Dataset back; CF encoding (times, fill
    values) is applied as for netCDF, and non-index coordinates are listed in a CF ``coordinates``
    attribute. The reference ``ztensor`` 0.1.4 reader reads the values and ignores the extra keys.

    Parameters
    ----------
    ds_or_mapping
        A Dataset, or a mapping of names to arrays or DataArrays.
    path
        The target file (written atomically, with the permissions ``open(path, "w")`` would give).
    compression
        ``"raw"`` or ``"zstd"``, for the whole file; by default what the variables were read with
        (``encoding["ztensor_encoding"]``).
    checksum
        ``"none"``, ``"crc32c"`` or ``"sha256"``, for the whole file; by default what the variables
        were read with (``encoding["ztensor_checksum"]``).

    Raises
    ------
    ValueError
        An unknown compression or checksum (the message lists the valid ones), or an attribute that
        clashes with a zTensor key.
    """
    if isinstance(ds_or_mapping, xr.Dataset):
        items = _dataset_items(ds_or_mapping)
        variables = [ds_or_mapping.variables[n] for n in ds_or_mapping.variables]
    else:
        items = []
        variables = []
        for name, value in ds_or_mapping.items():
            if isinstance(value, (xr.DataArray, xr.Variable)):
                var = _encode(value.variable if isinstance(value, xr.DataArray) else value, name)
                variables.append(var)
                items.append((str(name), np.asarray(var.values), _custom_fields(var, str(name))))
            else:
                items.append((str(name), np.asarray(value), {}))
    compression, checksum = _file_options(variables, compression, checksum)
    write_ztensor_v01(path, items, compression=compression, checksum=checksum)
