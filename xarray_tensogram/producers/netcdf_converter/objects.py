"""What ECMWF's netCDF converter writes, read back into its netCDF terms (``specs/tensogram-from-netcdf.md``).

Every object's ``netcdf`` map holds the variable's attributes beside the converter's own keys
(:data:`.vocabulary.NETCDF_CONVERTER_KEYS`: ``_dims``, the ``_file`` dim registry, the ``_attr_types`` CBOR
widened, the ``_global`` attributes copied into every object, ``record_index``). This module turns one object
into a :class:`NcObject` (attributes with their types restored) and groups a file's objects into the netCDF
files they came from (:class:`NcInput`): a ``.tgm`` may concatenate several conversions, and nothing but
their metadata marks where one ends. :mod:`.read_mapping` builds the raw variables from these.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import TensogramMappingWarning
from ...raw_variables import netcdf_safe_value
from .vocabulary import NETCDF_ATTR_TYPES, NETCDF_CONVERTER_KEYS, NETCDF_KEY

__all__ = [
    "NcInput",
    "NcObject",
    "NcVariable",
    "as_nc_object",
    "file_dims",
    "group_inputs",
    "netcdf_map",
    "restore_attrs",
    "unlimited_dim",
]

#: numpy dtypes of the converter's attribute type tags
_TAG_DTYPES = {tag: np.dtype(name) for tag, name in NETCDF_ATTR_TYPES.items()}


def netcdf_map(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object's ``netcdf`` map when the converter wrote it (``_dims`` a list, ``_file`` a map), else None."""
    nc = entry.get(NETCDF_KEY)
    return (
        nc if isinstance(nc, dict) and isinstance(nc.get("_dims"), list) and isinstance(nc.get("_file"), dict) else None
    )


def _restore(value: Any, tag: Any) -> Any:
    """One attribute as netCDF readers give it: NC_STRING arrays of one string (always arrays in CBOR,
    metadata.rs:41-100) as ``str``, numbers in their netCDF type (scalars as numpy scalars, arrays as
    numpy arrays, as xarray's netCDF backends give them)."""
    if tag == "string":
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            return value[0]
        return value if isinstance(value, (str, list)) else netcdf_safe_value(value)
    dtype = _TAG_DTYPES.get(tag) if isinstance(tag, str) else None
    if dtype is not None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return dtype.type(value)
        if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return np.asarray(value, dtype=dtype)
    return netcdf_safe_value(value)


def restore_attrs(values: Mapping[str, Any], types: Any) -> dict[str, Any]:
    """Attributes (``values`` minus the converter's keys) with the types ``types`` (``_attr_types``) records."""
    tags = types if isinstance(types, Mapping) else {}
    return {str(k): _restore(v, tags.get(k)) for k, v in values.items() if k not in NETCDF_CONVERTER_KEYS}


@dataclass
class NcObject:
    """One converted object in netCDF terms."""

    obj: Any  # the collect.TgObject (not imported: collect imports the producers, which import this)
    nc: dict[str, Any]
    name: str
    dims: list[str]  # ``_dims``: without the unlimited dimension for a record object
    record: int | None  # ``record_index`` (record split, record variables only)

    @property
    def attrs(self) -> dict[str, Any]:
        return restore_attrs(self.nc, self.nc.get("_attr_types"))


def as_nc_object(o: Any, name: str | None = None) -> NcObject:
    nc = netcdf_map(o.entry)
    assert nc is not None  # callers pass recognised objects only
    record = nc.get("record_index")
    return NcObject(
        o,
        nc,
        name or str(o.entry.get("name", f"object_{o.obj}")),
        [str(d) for d in nc["_dims"]],
        record if isinstance(record, int) and not isinstance(record, bool) else None,
    )


def file_dims(file_map: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of a ``_file`` dimension registry (each a map with a ``name``); others are left out with a
    warning that names them (the registry only adds lengths and unlimited flags to the objects' own dims)."""
    dims = file_map.get("dims")
    if not isinstance(dims, list):
        if dims is not None:
            warnings.warn(
                f"netcdf._file.dims is a {type(dims).__name__}, not a list of dimensions; ignored",
                TensogramMappingWarning,
                stacklevel=2,
            )
        return []
    named = [isinstance(d, dict) and isinstance(d.get("name"), str) for d in dims]
    if damaged := [d for d, ok in zip(dims, named, strict=True) if not ok]:
        listed = ", ".join(map(repr, damaged[:3]))
        warnings.warn(
            f"netcdf._file.dims: {len(damaged)} entries without a text name ignored ({listed})",
            TensogramMappingWarning,
            stacklevel=2,
        )
    return [d for d, ok in zip(dims, named, strict=True) if ok]


def unlimited_dim(file_map: Mapping[str, Any]) -> str | None:
    """The first unlimited dimension (the one the record split splits, converter.rs:586-594)."""
    return next((str(d["name"]) for d in file_dims(file_map) if d.get("unlimited") is True), None)


@dataclass
class NcVariable:
    """One netCDF variable of one input: a whole object, or its records in order."""

    name: str
    objects: list[NcObject]

    @property
    def first(self) -> NcObject:
        return self.objects[0]


@dataclass
class NcInput:
    """The objects of one converted netCDF file (or of several, once :mod:`.read_mapping` combined them)."""

    file_map: dict[str, Any]
    variables: dict[str, NcVariable] = field(default_factory=dict)
    last_record: int = -1

    @property
    def unlimited(self) -> str | None:
        return unlimited_dim(self.file_map)

    @property
    def dim_sizes(self) -> dict[str, int]:
        return {str(d["name"]): int(d["len"]) for d in file_dims(self.file_map) if isinstance(d.get("len"), int)}

    @property
    def global_attrs(self) -> dict[str, Any]:
        nc = self.first_object.nc
        values = nc.get("_global")
        return restore_attrs(values, nc.get("_global_types")) if isinstance(values, dict) else {}

    @property
    def first_object(self) -> NcObject:
        return next(iter(self.variables.values())).first

    def takes(self, message: Sequence[NcObject]) -> bool:
        """Whether ``message`` continues this input: same file metadata, and no variable (or record) again."""
        if not _same_file(message[0].nc, self.first_object.nc):
            return False
        records = {o.record for o in message if o.record is not None}
        if records:
            return min(records) > self.last_record and all(
                o.record is not None or o.name not in self.variables or same_object(self.variables[o.name].first, o)
                for o in message
            )
        return not any(o.name in self.variables for o in message)

    def add(self, message: Sequence[NcObject]) -> None:
        for o in message:
            var = self.variables.get(o.name)
            if var is None:
                self.variables[o.name] = NcVariable(o.name, [o])
            elif o.record is not None:
                var.objects.append(o)
            if o.record is not None:
                self.last_record = max(self.last_record, o.record)


def _same_file(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The same dimension registry and global attributes (compared as decoded, without copies: once per
    message). A NaN global attribute compares unequal to itself, so its messages count as separate inputs,
    which the combine step joins again."""
    return all(a.get(k) == b.get(k) for k in ("_file", "_global", "_global_types"))


def same_object(a: NcObject, b: NcObject) -> bool:
    """The same values (by frame hash when both frames have one, else by value: coordinates are small)."""
    x, y = a.obj, b.obj
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.frame_hash is not None and y.frame_hash is not None:
        return bool(x.frame_hash == y.frame_hash)
    if x.remote_frame is not None and x.remote_frame == y.remote_frame and x.entry == y.entry:
        return True  # remote: equal frames with equal metadata, without reading two payloads
    from ...outer import read_outer

    return bool(np.array_equal(read_outer(x.spec(), ()), read_outer(y.spec(), ()), equal_nan=x.dtype.kind in "fc"))


def group_inputs(objects: Iterable[NcObject]) -> list[NcInput]:
    """The objects of the file by input netCDF file, in file order.

    Conversions concatenated into one ``.tgm`` leave no mark between them (CLI:61-66), so a message starts a
    new input when its ``_file``/``_global`` differ from the current input's, or when it repeats what the input
    holds: a variable again, a record number not after the last one, or a static variable with other values
    (a record split repeats static variables in every message, C:622-636).
    """
    by_message: dict[int, list[NcObject]] = {}
    for o in objects:
        by_message.setdefault(o.obj.msg, []).append(o)
    inputs: list[NcInput] = []
    for message in by_message.values():
        if not inputs or not inputs[-1].takes(message):
            inputs.append(NcInput(dict(message[0].nc["_file"])))
        inputs[-1].add(message)
    return inputs
