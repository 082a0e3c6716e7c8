"""A test-side emulation of ECMWF's ``tensogram convert-netcdf`` (crate ``tensogram-netcdf`` 0.24.0).

The Rust converter is not installable here (the Python wheel is built without it), so the tests build
its layout with the reference encoder (``tensogram.encode``) exactly as ``specs/tensogram-from-netcdf.md``
describes it. Every rule cites the spec's source reference: ``C`` = converter.rs, ``M`` = metadata.rs,
``P`` = tensogram/src/pipeline.rs, ``CLI`` = convert_netcdf.rs. Nothing here imports xarray-tensogram:
the layout comes from the spec, the bytes from the reference encoder, the netCDF facts from scipy
(netCDF-3) and h5netcdf/h5py (netCDF-4), the readers libnetcdf's own files are written with.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensogram

#: M:14-31, the attributes ``--cf`` lifts into ``base[i]["cf"]``
CF_ATTRIBUTES = (
    "standard_name",
    "long_name",
    "units",
    "calendar",
    "cell_methods",
    "coordinates",
    "axis",
    "positive",
    "valid_min",
    "valid_max",
    "valid_range",
    "bounds",
    "grid_mapping",
    "ancillary_variables",
    "flag_values",
    "flag_meanings",
)
#: C:202-210, removed from an unpacked variable's attributes and ``_attr_types``
CF_PACKING_ATTRS = (
    "scale_factor",
    "add_offset",
    "_FillValue",
    "missing_value",
    "valid_min",
    "valid_max",
    "valid_range",
)
#: M:111-141, the type tag of each numeric attribute type
_TAGS = {
    "f8": "double",
    "f4": "float",
    "i4": "int",
    "u4": "uint",
    "i2": "short",
    "u2": "ushort",
    "i8": "int64",
    "u8": "uint64",
    "i1": "byte",
    "u1": "ubyte",
}
#: C:383-393, the attribute types ``get_f64_attr`` reads (others are ignored for unpacking)
_UNPACK_TAGS = frozenset({"double", "float", "int", "short", "int64"})


@dataclass
class NcAttr:
    value: Any  # str (NC_CHAR), list[str] (NC_STRING) or a numpy array (numeric)
    tag: str


@dataclass
class NcVar:
    name: str
    dims: list[str]
    raw: np.ndarray | None  # None: a char/string variable (skipped)
    attrs: dict[str, NcAttr]


@dataclass
class NcFile:
    dims: list[tuple[str, int, bool]]  # (name, len, unlimited) in dimension-id order
    variables: list[NcVar]
    attrs: dict[str, NcAttr]
    has_groups: bool = False


def _numeric(value: Any) -> NcAttr:
    arr = np.atleast_1d(np.asarray(value))
    return NcAttr(arr, _TAGS[arr.dtype.str[1:]])


def _read_nc3(path: Path) -> NcFile:
    from scipy.io import netcdf_file

    def attr(v: Any) -> NcAttr:
        if isinstance(v, bytes):
            return NcAttr(v.decode("utf-8").split("\0")[0], "string")  # NC_CHAR: one string, cut at NUL
        return _numeric(v)

    with netcdf_file(path, "r", mmap=False, maskandscale=False) as f:
        recs = int(f._recs)
        dims = [(n, recs if size is None else int(size), size is None) for n, size in f.dimensions.items()]
        variables = []
        for name, var in f.variables.items():
            raw = None if var.data.dtype.kind == "S" else np.array(var.data).astype(var.data.dtype.newbyteorder("="))
            variables.append(NcVar(name, list(var.dimensions), raw, {k: attr(v) for k, v in var._attributes.items()}))
        return NcFile(dims, variables, {k: attr(v) for k, v in f._attributes.items()})


def _h5_attr(h5attrs: Any, name: str, value: Any) -> NcAttr:
    import h5py

    info = h5py.check_string_dtype(h5attrs.get_id(name).dtype)
    if info is not None:
        if info.length is None:  # NC_STRING: always an array of strings (nc value(): Strs)
            return NcAttr([str(s) for s in np.atleast_1d(value)], "string")
        text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        return NcAttr(text.split("\0")[0], "string")  # NC_CHAR: one string, cut at its first NUL
    return _numeric(value)


def _user_or_text_type(dtype: np.dtype) -> bool:
    """char/string and the user types (compound, opaque, enum, vlen): skipped by the converter (C:309-345)."""
    import h5py

    return (
        dtype.kind in "OSUV"
        or dtype.names is not None
        or h5py.check_enum_dtype(dtype) is not None
        or h5py.check_vlen_dtype(dtype) is not None
    )


def _read_nc4(path: Path) -> NcFile:
    import h5netcdf

    with h5netcdf.File(path, "r") as f:
        dims = [(n, int(d.size), bool(d.isunlimited())) for n, d in f.dimensions.items()]
        variables = []
        for name, var in f.variables.items():
            raw = None if _user_or_text_type(var._h5ds.dtype) else np.asarray(var[...])
            attrs = {k: _h5_attr(var._h5ds.attrs, k, v) for k, v in var.attrs.items()}
            variables.append(NcVar(name, list(var.dimensions), raw, attrs))
        gattrs = {k: _h5_attr(f._h5file.attrs, k, v) for k, v in f.attrs.items()}
        return NcFile(dims, variables, gattrs, has_groups=bool(f.groups))


def read_netcdf(path: str | Path) -> NcFile:
    """What libnetcdf reports of the root group (C:133-147): dims, variables in id order, attributes."""
    path = Path(path)
    return _read_nc3(path) if path.read_bytes()[:3] == b"CDF" else _read_nc4(path)


def attr_to_cbor(a: NcAttr) -> Any:
    """M:41-100: length-1 numeric -> scalar (floats widened to f64, ints to CBOR ints), else a list."""
    if isinstance(a.value, (str, list)):
        return a.value
    items = [float(v) if a.value.dtype.kind == "f" else int(v) for v in a.value.tolist()]
    return items[0] if len(items) == 1 else items


def _scalar_f64(attrs: dict[str, NcAttr], name: str) -> float | None:
    """C:383-393 ``get_f64_attr``: a scalar double, float, int, short or int64, else None."""
    a = attrs.get(name)
    if a is None or a.tag not in _UNPACK_TAGS or isinstance(a.value, (str, list)) or a.value.size != 1:
        return None
    return float(a.value[0])


def _unpack(v: NcVar) -> np.ndarray:
    """C:350-379 ``read_and_unpack``: f64, the fill (missing_value first) -> NaN, then scale, then offset."""
    assert v.raw is not None
    vals = v.raw.astype(np.float64)
    scale, offset = _scalar_f64(v.attrs, "scale_factor"), _scalar_f64(v.attrs, "add_offset")
    fill = _scalar_f64(v.attrs, "missing_value")
    fill = _scalar_f64(v.attrs, "_FillValue") if fill is None else fill
    is_fill = np.abs(vals - fill) < np.finfo(np.float64).eps * max(abs(fill), 1.0) if fill is not None else None
    if scale is not None:
        vals = vals * scale
    if offset is not None:
        vals = vals + offset
    if is_fill is not None:
        vals[is_fill] = np.nan
    return vals


@dataclass
class Pipeline:
    """P:132-276 for the flags the tests use: ``--filter shuffle --compression zstd`` (level 3)."""

    filter: str = "none"
    compression: str = "none"

    def descriptor(self, values: np.ndarray) -> dict[str, Any]:
        desc: dict[str, Any] = {
            "type": "ntensor",
            "shape": list(values.shape),
            "dtype": values.dtype.name,
            "byte_order": "little",
            "encoding": "none",
            "filter": self.filter,
            "compression": self.compression,
        }
        if self.filter == "shuffle":
            desc["shuffle_element_size"] = values.dtype.itemsize
        if self.compression == "zstd":
            desc["zstd_level"] = 3
        return desc


@dataclass
class _Extracted:
    name: str
    values: np.ndarray
    entry: dict[str, Any] = field(default_factory=dict)


def _file_meta(nc: NcFile) -> dict[str, Any]:
    """C:395-423: every root dimension in id order with its length and whether it is unlimited."""
    return {"dims": [{"name": n, "len": size, "unlimited": unl} for n, size, unl in nc.dims]}


def _entry(nc: NcFile, v: NcVar, dims: list[str], cf: bool, unpacked: bool, record: int | None) -> dict[str, Any]:
    """C:87-106, 223-272, 670-744: the ``base[i]`` entry of one variable (or one record of it)."""
    attrs = {k: a for k, a in v.attrs.items() if not (unpacked and k in CF_PACKING_ATTRS)}
    netcdf: dict[str, Any] = {k: attr_to_cbor(a) for k, a in attrs.items()}
    netcdf["_dims"] = dims
    netcdf["_file"] = _file_meta(nc)
    if record is not None:
        netcdf["record_index"] = record
    if attrs:
        netcdf["_attr_types"] = {k: a.tag for k, a in attrs.items()}
    if nc.attrs:
        netcdf["_global"] = {k: attr_to_cbor(a) for k, a in nc.attrs.items()}
        netcdf["_global_types"] = {k: a.tag for k, a in nc.attrs.items()}
    entry: dict[str, Any] = {"name": v.name, "netcdf": netcdf}
    cf_map = {k: attr_to_cbor(a) for k, a in v.attrs.items() if k in CF_ATTRIBUTES}  # from all attributes (M:170-190)
    if cf and cf_map:
        entry["cf"] = cf_map
    return entry


def _whole(nc: NcFile, v: NcVar, cf: bool) -> _Extracted:
    """C:212-272 ``extract_variable``: packed variables unpacked to f64, others raw."""
    assert v.raw is not None
    packed = "scale_factor" in v.attrs or "add_offset" in v.attrs
    values = _unpack(v) if packed else v.raw
    return _Extracted(v.name, np.array(values), _entry(nc, v, list(v.dims), cf, packed, None))


def _convertible(nc: NcFile, path: Path) -> list[NcVar]:
    if nc.has_groups:  # C:133-139
        warnings.warn(f"{path}: sub-groups found; only root-group variables are converted", stacklevel=3)
    out = []
    for v in nc.variables:
        if v.raw is None:  # C:309-345
            warnings.warn(f"skipping variable '{v.name}': Char variables are not supported", stacklevel=3)
            continue
        out.append(v)
    if not out:
        raise ValueError("no variables found in input")  # C:164-166
    return out


def _messages(path: Path, split_by: str, cf: bool) -> list[list[_Extracted]]:
    nc = read_netcdf(path)
    variables = _convertible(nc, path)
    if split_by == "file":
        return [[_whole(nc, v, cf) for v in variables]]
    if split_by == "variable":
        return [[_whole(nc, v, cf)] for v in variables]
    unlimited = [(n, size) for n, size, unl in nc.dims if unl]
    if not unlimited:
        raise ValueError(f"--split-by=record requires an unlimited dimension, none found in {path}")
    udim, count = unlimited[0]  # C:586-594: the first unlimited dimension
    out = []
    for r in range(count):  # C:612-656
        msg = []
        for v in variables:
            if udim not in v.dims:
                msg.append(_whole(nc, v, cf))  # static: whole, as in file mode, in every message
                continue
            assert v.raw is not None
            axis = v.dims.index(udim)
            dims = [d for d in v.dims if d != udim]
            values = np.array(np.take(v.raw, r, axis=axis))  # native dtype, never unpacked
            msg.append(_Extracted(v.name, values, _entry(nc, v, dims, cf, False, r)))
        out.append(msg)
    return out


def convert(
    paths: str | Path | Sequence[str | Path],
    out: str | Path,
    *,
    split_by: str = "file",
    cf: bool = False,
    pipeline: Pipeline | None = None,
) -> Path:
    """``tensogram convert-netcdf --split-by SPLIT [--cf] PATHS... -o OUT``: the messages of every input,
    file after file (CLI:61-66), each encoded by the reference with ``allow_nan`` (C:186-190)."""
    pipeline = pipeline or Pipeline()
    inputs = [paths] if isinstance(paths, (str, Path)) else list(paths)
    blobs = []
    for p in inputs:
        for msg in _messages(Path(p), split_by, cf):
            objects = [(pipeline.descriptor(e.values), e.values) for e in msg]
            blobs.append(tensogram.encode({"base": [e.entry for e in msg]}, objects, hash="xxh3", allow_nan=True))
    out = Path(out)
    out.write_bytes(b"".join(blobs))
    return out
