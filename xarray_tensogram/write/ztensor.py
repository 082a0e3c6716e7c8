"""xarray Dataset -> zTensor v0.1 ``.zt`` file: one tensor per variable (the mirror of assemble/ztensor.py).

Every variable, coordinates included, is CF-encoded (:mod:`.prepare`) and written as one tensor: dims in the
``dim_names`` custom key, attrs as custom keys (one named like a v0.1 key, such as the ``dtype`` xarray's
encoder adds for booleans, under ``cf.``, which the reader lifts back). Strings have no v0.1 dtype: they are
kept in metadata, on a zero-size ``uint8`` placeholder (:data:`~xarray_tensogram.conventions.STRINGS_KEY`).
v0.1 has no file-level metadata: Dataset attributes are dropped with a warning naming them.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..codecs import cbor
from ..codecs.base import PASSTHROUGH
from ..conventions import COORDINATE_ROLE_KEY, STRINGS_KEY
from ..conventions import ZTENSOR_DIM_NAMES_KEY as DIM_NAMES_KEY
from ..errors import UnsupportedError, XarrayTensogramError, ZTensorMappingWarning
from ..formats.ztensor import open_ztensor, write_ztensor_v01
from ..formats.ztensor.compression import ENCODINGS, V01_ENCODINGS
from ..formats.ztensor.containers import V01_KEYS
from ..formats.ztensor.writer import v01_dtype_name
from ..io.lock import write_lock
from ..zarr_meta import json_attr
from .encoding_check import CodecKey, EncodingKeys, Option
from .prepare import (
    EncodedDataset,
    as_dataset,
    check_call,
    check_dtypes,
    checked_keywords,
    encode_dataset,
    kept_once,
    role_marked,
    string_payload,
    typed_attrs,
    warn_dropped,
)

__all__ = ["to_ztensor"]

#: the format's table (``formats/ztensor/compression.py``): what v0.1 can write; raw is stored as no compression
_COMPRESSION = CodecKey(
    "compression",
    {n: ENCODINGS[n] for n in V01_ENCODINGS},
    readable=tuple(n for n in ENCODINGS if n not in V01_ENCODINGS),
)
_COMPRESSED = tuple(n for n, c in _COMPRESSION.codecs.items() if c is not PASSTHROUGH)
_CHECKSUMS = {None: None, "none": None, "crc32c": "crc32c", "sha256": "sha256"}
#: ``encoding=`` for .zt beside the CF keys every writer takes: the tensor's codec with its parameters, its checksum
ENCODING = EncodingKeys(".zt v0.1", (_COMPRESSION,), {"checksum": Option("the tensor's checksum", tuple(_CHECKSUMS))})


def _stored(dtype: np.dtype) -> bool:
    try:
        return dtype.kind in "USOT" or bool(v01_dtype_name(dtype))  # strings: kept in metadata
    except TypeError:
        return False


def _item(name: str, var: xr.Variable) -> tuple[str, np.ndarray, dict[str, Any]]:
    reserved = {*V01_KEYS, DIM_NAMES_KEY, STRINGS_KEY}  # attributes named like them go under ``cf.``
    custom = {  # plain values, as CBOR holds them
        (f"cf.{k}" if k in reserved else str(k)): json_attr(v)
        for k, v in typed_attrs(var.attrs, python_too=False).items()
    }
    if var.dtype.kind in "USOT":  # kept in metadata, on a zero-size placeholder
        return name, np.zeros(0, np.uint8), {**custom, STRINGS_KEY: string_payload(name, var)}
    return name, np.asarray(var.values), {**custom, DIM_NAMES_KEY: [str(d) for d in var.dims]} if var.dims else custom


def _per_tensor(encoded: EncodedDataset) -> dict[str, dict[str, Any]]:
    """What ``encoding=`` chose per tensor: its compression with the codec's parameters, its checksum."""
    out: dict[str, dict[str, Any]] = {}
    for name, settings in encoded.codecs.items():
        if (s := settings.get(_COMPRESSION.key)) is not None:  # raw: the v0.1 writer's compression None
            out[name] = {"compression": None if s.codec is PASSTHROUGH else s.vocabulary, "params": dict(s.params)}
    for name, options in encoded.options.items():
        if options.get("checksum", "") in _CHECKSUMS:
            out.setdefault(name, {})["checksum"] = _CHECKSUMS[options["checksum"]]
    return out


def _file_option(variables: Mapping[Hashable, xr.Variable], key: str, valid: tuple[str, ...]) -> str | None:
    """The value the variables were read with (any of them), if the v0.1 writer can write it."""
    return next((str(v.encoding[key]) for v in variables.values() if v.encoding.get(key) in valid), None)


@checked_keywords
def to_ztensor(
    ds: xr.Dataset | xr.DataArray | Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    mode: str = "w",
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    compression: str | None = None,
    checksum: str | None = None,
    unlimited_dims: Iterable[Hashable] | None = None,
) -> int:
    """Write a Dataset (or a mapping name -> array/DataArray) as a zTensor v0.1 (``.zt``) file.

    Every variable, coordinates included, becomes one tensor, CF-encoded as ``to_netcdf`` encodes it,
    so ``xr.open_dataset(path, engine="tensogram")`` gives the Dataset back. The reference ``ztensor``
    0.1.4 reader reads the values and ignores the extra keys.

    Parameters
    ----------
    ds
        A Dataset, a DataArray, or a mapping of names to arrays or DataArrays (a checkpoint of unrelated
        tensors: each plain array is written with its own shape and dims ``<name>.dim_0``, ...).
    path
        The target file (written atomically, with the permissions ``open(path, "w")`` would give).
    mode
        ``"w"`` (replace) or ``"a"`` (add variables to an existing v0.1 file; a variable that exists
        or a dim whose size clashes is refused before anything is written).
    encoding
        ``{variable: {...}}``: the CF keys of ``to_netcdf``, ``compression`` (``"raw"``/``"zstd"``) with its
        parameters (zstd ``level``) and ``checksum`` per tensor, checked before anything is written.
    compression
        ``"raw"`` or ``"zstd"`` for every tensor; by default what the variables were read with.
    checksum
        ``"none"``, ``"crc32c"`` or ``"sha256"``; by default what the variables were read with.
    unlimited_dims
        Refused when not empty (:class:`UnsupportedError`): the format has no unlimited dimensions.

    Returns
    -------
    int
        The size of the file written.

    Raises
    ------
    UnsupportedError
        A dtype v0.1 cannot hold (complex, ...), an unknown encoding key or value (valid ones listed), a MultiIndex.
    EncodeError
        A codec parameter outside its valid values (naming the variable and the parameter).
    """
    ds = as_dataset(_from_mapping(ds))
    check_call(mode, path, unlimited_dims, ".zt v0.1")
    comp, check = _file_codecs(ds.variables, compression, checksum)
    encoded = encode_dataset(ds, encoding, ENCODING, in_effect=lambda name, enc: {_COMPRESSION.key: comp})
    check_dtypes(encoded, ".zt v0.1", "bool", _stored, ["float16/32/64", "bfloat16", "(u)int8..64", "bool", "strings"])
    items = [_item(name, var) for name, var in role_marked(encoded).items()]
    per_tensor = _per_tensor(encoded)
    warn_dropped(
        encoded.attrs,
        f"{os.fspath(path)!r}: zTensor v0.1 has no file-level metadata; Dataset attributes not written",
        ZTensorMappingWarning,
    )
    with write_lock(path):  # other writers of this file wait from the read of the file to the commit
        if mode == "a" and os.path.exists(path):
            items, per_tensor = _with_existing(path, encoded, items, per_tensor)
        write_ztensor_v01(path, items, compression=comp, checksum=_CHECKSUMS[check], per_tensor=per_tensor)
        return os.path.getsize(path)


def _from_mapping(ds: xr.Dataset | xr.DataArray | Mapping[str, Any]) -> xr.Dataset | xr.DataArray:
    """A mapping of names to arrays (an ML checkpoint: unrelated tensors) as a Dataset. A plain array gets
    dims of its own, ``<name>.dim_0``, ``<name>.dim_1``, ..., so tensors of any shapes sit side by side
    (shared generic names would have to agree in size); a DataArray keeps the dims it names."""
    if isinstance(ds, (xr.Dataset, xr.DataArray)):
        return ds
    variables = {
        str(k): v if isinstance(v, (xr.DataArray, xr.Variable)) else ([f"{k}.dim_{i}" for i in range(np.ndim(v))], v)
        for k, v in ds.items()
    }
    try:
        return xr.Dataset(variables)
    except ValueError as exc:  # DataArrays that name one dim with two sizes
        raise XarrayTensogramError(
            f"the tensors {list(variables)} cannot be written as one file: {exc}; give the DataArrays "
            "distinct dim names, or pass plain arrays (each gets dims of its own)"
        ) from None


def _file_codecs(
    source: Mapping[Hashable, xr.Variable], compression: str | None, checksum: str | None
) -> tuple[str | None, str | None]:
    """The compression (None: raw) and checksum of every tensor: as given, else what the variables were read with."""
    if checksum not in _CHECKSUMS:
        raise UnsupportedError(f"checksum must be one of None, 'none', 'crc32c', 'sha256'; got {checksum!r}")
    if compression is None:
        comp = _file_option(source, "ztensor_encoding", _COMPRESSED)
    else:
        vocabulary, codec = _COMPRESSION.argument(compression)
        comp = None if codec is PASSTHROUGH else vocabulary
    check = _file_option(source, "ztensor_checksum", ("crc32c", "sha256")) if checksum is None else checksum
    return comp, check


Item = tuple[str, Any, dict[str, Any]]


def _units(items: list[Item]) -> dict[str, tuple[Any, bytes]]:
    """Each tensor's values and custom keys (canonical CBOR: NaN equals NaN), less the role mark, which varies."""
    return {n: (v, cbor.dumps({k: c[k] for k in c if k != COORDINATE_ROLE_KEY}, canonical=True)) for n, v, c in items}


def _with_existing(
    path: str | os.PathLike[str], encoded: EncodedDataset, new: list[Item], per_tensor: dict[str, dict[str, Any]]
) -> tuple[list[Item], dict[str, dict[str, Any]]]:
    """The file's tensors (each with its stored compression and checksum; no zstd level is recorded), then the new
    ones, checked to fit beside them first (one written again unchanged, such as a shared coordinate, kept once)."""
    with open_ztensor(path) as zf:
        if not str(zf.version).startswith("0.1"):
            raise UnsupportedError(f"{os.fspath(path)!r}: mode='a' appends to v0.1 files only, not {zf.version}")
        dims: dict[str, int] = {}
        for t in zf.tensors:
            spec = t.attrs.get(STRINGS_KEY)
            names = spec.get("dims") if isinstance(spec, Mapping) else t.attrs.get(DIM_NAMES_KEY)
            shape = spec.get("shape") if isinstance(spec, Mapping) else t.shape
            if isinstance(names, list) and isinstance(shape, (list, tuple)):
                dims.update(zip(map(str, names), map(int, shape), strict=False))
        old = [(t.name, zf.read(t.index), dict(t.attrs)) for t in zf.tensors]
        kept_once(os.fspath(path), _units(old), _units(new), dims, encoded.variables)
        as_stored = {
            t.name: {
                "compression": t.encoding if t.encoding in _COMPRESSED else None,
                "checksum": _CHECKSUMS.get((t.checksum or "none").partition(":")[0]),
            }
            for t in zf.tensors
        }
        return old + [item for item in new if item[0] not in as_stored], {**per_tensor, **as_stored}
