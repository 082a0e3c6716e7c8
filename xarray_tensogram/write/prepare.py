"""What every writer does before its format sees a variable, the way ``to_netcdf`` does it.

Misspelt keywords are refused with the closest one, names checked as xarray's netCDF writers check them, a
MultiIndex refused, the user's ``encoding=`` checked (:mod:`.encoding_check`), and every variable goes through
xarray's own CF encoder (``encode_dataset_coordinates`` + ``cf_encoder``: times, fills, packing, ``_Unsigned``,
``coordinates`` attributes). Each format then checks that it can hold every encoded variable before it writes a
byte, and with ``mode="a"`` that the new variables fit beside the file's.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.coding import strings
from xarray.coding.common import SerializationWarning
from xarray.coding.strings import check_vlen_dtype
from xarray.core.common import contains_cftime_datetimes

from ..conventions import ATTR_TYPES_KEY, COORDINATE_ROLE_KEY, NONE_VAR_NAME
from ..errors import (
    InvalidNameError,
    UnknownOptionError,
    UnsupportedError,
    XarrayTensogramError,
    unknown_names,
    user_stacklevel,
)
from ..io import check_target
from .encoding_check import CodecSetting, EncodingKeys, InEffect, check_encoding

__all__ = [
    "EncodedDataset",
    "as_dataset",
    "check_append",
    "check_call",
    "check_dtypes",
    "checked_keywords",
    "encode_dataset",
    "kept_once",
]

#: encoding keys that describe how a variable was read, not how to write it (ignored when not given by the user)
_PROVENANCE_KEYS = frozenset({"source", "original_shape", "preferred_chunks", "chunks", "coordinates"})


def check_call(mode: str, path: str | os.PathLike[str], unlimited_dims: Iterable[Any] | None, fmt: str) -> None:
    """The mode, a target a file can be written to, and no ``unlimited_dims=``: checked before anything is encoded.

    ``unlimited_dims=`` (a ``to_netcdf`` argument) is refused: every dim of ``fmt`` has a fixed size. A Dataset's
    own ``encoding["unlimited_dims"]`` (how a netCDF source was read) is no request: it is written all the same."""
    if mode not in ("w", "a"):
        raise XarrayTensogramError(f"mode must be one of ['w', 'a'], got {mode!r}")
    check_target(path)
    dims = [str(d) for d in unlimited_dims or ()]
    if dims:
        raise UnsupportedError(
            f"unlimited_dims={dims}: {fmt} files have no unlimited dimensions (every dim has a fixed size); "
            "leave unlimited_dims out" + (", and grow a .tgm with mode='a'" if fmt == ".tgm" else "")
        )


def check_append(
    path: str, names: Iterable[str], sizes: Mapping[str, int], variables: Mapping[str, xr.Variable]
) -> None:
    """Refuse, before writing, a dim whose size clashes (first, as netCDF does) or a variable the file already has."""
    for name, var in variables.items():
        for dim, size in zip(var.dims, var.shape, strict=True):
            if sizes.get(str(dim), size) != size:
                raise XarrayTensogramError(
                    f"{path!r}: mode='a' cannot add variable {name!r}: Unable to update size for existing "
                    f"dimension {dim!r} ({dim!r} has size {size}, the file's has size {sizes[str(dim)]})"
                )
    existing = set(names)
    for name in variables:
        if name in existing:
            raise XarrayTensogramError(
                f"{path!r}: mode='a' cannot add variable {name!r}: the file already has it "
                f"(write the whole Dataset with mode='w' to replace it)"
            )


def kept_once(
    path: str,
    old: Mapping[str, tuple[Any, Any]],
    new: Mapping[str, tuple[Any, Any]],
    sizes: Mapping[str, int],
    variables: Mapping[str, xr.Variable],
) -> set[str]:
    """The names of the ``new`` units (``name -> (values, metadata)``) the file's ``old`` ones hold unchanged (NaN
    equal to NaN), such as a shared coordinate, kept once; the other ``variables`` go through :func:`check_append`."""
    same = set()
    for name, (values, meta) in new.items():
        if name in old and old[name][1] == meta:
            a, b = np.asarray(old[name][0]), np.asarray(values)
            if a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                same.add(name)
    check_append(path, old, sizes, {k: v for k, v in variables.items() if k not in same})
    return same


P = ParamSpec("P")
R = TypeVar("R")


def checked_keywords(func: Callable[P, R]) -> Callable[P, R]:
    """``func``, refusing a keyword it does not take before it runs with :class:`UnknownOptionError` (a
    ``TypeError``) naming the closest one it does take, which Python's own error does not."""
    parameters = inspect.signature(func).parameters.values()
    keywords = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    shown = [p.name for p in parameters if p.kind == p.KEYWORD_ONLY] or keywords  # the options, not ds/path

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = unknown_names(kwargs, keywords, "keyword")
        if unknown:
            raise UnknownOptionError(f"{func.__name__}(): {unknown}; its keywords are: {', '.join(shown)}")
        return func(*args, **kwargs)

    return wrapper


@dataclass
class EncodedDataset:
    """A Dataset as CF-encoded variables, ready for one format's writer.

    Per variable, ``options`` holds the writer's own options left after CF encoding (given, or as read), and
    ``codecs`` the codecs its ``encoding=`` entry chose, by codec key. ``coordinate_only``: the coordinates no
    data variable's ``coordinates`` attribute names, which formats without Dataset attributes mark on the
    variable itself (:data:`~xarray_tensogram.conventions.COORDINATE_ROLE_KEY`).
    """

    variables: dict[str, xr.Variable]
    attrs: dict[str, Any]
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    coordinate_only: list[str] = field(default_factory=list)
    codecs: dict[str, dict[str, CodecSetting]] = field(default_factory=dict)


def as_dataset(obj: xr.Dataset | xr.DataArray) -> xr.Dataset:
    """A DataArray is written as a Dataset of one variable (named ``data`` when it has no name); a variable
    named ``None`` as :data:`~xarray_tensogram.conventions.NONE_VAR_NAME`, as xarray's netCDF writers do."""
    if isinstance(obj, xr.DataArray):
        return obj.to_dataset(name=obj.name if obj.name is not None else "data")
    if not isinstance(obj, xr.Dataset):
        raise TypeError(f"expected an xarray Dataset or DataArray, got {type(obj).__name__}")
    if None in obj.variables:  # stored under xarray's own placeholder name, read back as None
        if NONE_VAR_NAME in obj.variables:
            raise InvalidNameError(f"variables named None and {NONE_VAR_NAME!r} cannot both be written")
        renamed: xr.Dataset = obj.rename_vars({None: NONE_VAR_NAME})
        return renamed
    return obj


def _check_names(ds: xr.Dataset) -> None:
    """Variable names must be non-empty strings or ``None``, as for ``to_netcdf``."""
    for name in ds.variables:
        if isinstance(name, str):
            if not name:
                raise XarrayTensogramError(
                    f"Invalid name {name!r} for DataArray or Dataset key: string must be length 1 or greater"
                )
        elif name is not None:
            raise InvalidNameError(
                f"Invalid name {name!r} for DataArray or Dataset key: must be either a string or None"
            )
    for key in ds.attrs:
        if not isinstance(key, str) or not key:
            raise InvalidNameError(f"Invalid name for Dataset attribute {key!r}: must be a non-empty string")


def _warn_dask_objects(ds: xr.Dataset) -> None:
    """Warn as ``to_netcdf`` of Dask object arrays computed to find a dtype (not cftime: those become numbers)."""
    for name, var in ds.variables.items():
        if var.dtype.kind != "O" or var.chunks is None or contains_cftime_datetimes(var):
            continue
        if check_vlen_dtype(var.dtype) is None:  # type: ignore[no-untyped-call]  # unannotated in xarray
            warnings.warn(
                f"variable {name} has data in the form of a dask array with dtype=object, which means it is being "
                "loaded into memory to determine a data type that can be safely stored on disk. To avoid this, "
                "coerce this variable to a fixed-size dtype with astype() before saving it.",
                SerializationWarning,
                stacklevel=user_stacklevel(),
            )


def _cf_encode(
    ds: xr.Dataset, user: Mapping[str, Mapping[str, Any]], default_fill: bool
) -> tuple[dict[str, xr.Variable], dict[Hashable, Any]]:
    """The variables (by name) and attributes as xarray's CF encoder makes them for ``to_netcdf``, its
    failures raised as ours; ``default_fill``: see :func:`encode_dataset`."""
    try:
        variables, attrs = conventions.encode_dataset_coordinates(ds)
        for name, enc in user.items():
            variables[name].encoding = dict(enc)
        variables, attrs = conventions.cf_encoder(variables, attrs)
    except XarrayTensogramError:
        raise
    except NotImplementedError as exc:  # a MultiIndex, as to_netcdf refuses it
        raise UnsupportedError(f"{exc}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise XarrayTensogramError(f"CF encoding failed: {exc}") from exc
    names = {str(k): as_characters(v) for k, v in variables.items()}
    for name, var in names.items():
        if not default_fill and _default_nan_fill(ds.variables.get(name), var.attrs.get("_FillValue")):
            var.attrs = {k: v for k, v in var.attrs.items() if k != "_FillValue"}
    return names, dict(attrs)  # xarray's encoder may hand back ds.attrs itself: popping must not change it


def _default_nan_fill(source: xr.Variable | None, fill: Any) -> bool:
    """Whether ``fill`` is the NaN xarray adds to a float read from a file that asked for no fill."""
    if source is None or "_FillValue" in source.encoding or "_FillValue" in source.attrs:
        return False  # asked for (or a variable the encoder made)
    # the encoding keys a reader leaves on the variables it read (ours, and xarray's for netCDF and Zarr)
    read = any(
        k in ("preferred_chunks", "source", "original_shape") or str(k).startswith(("tensogram_", "tetr_", "ztensor_"))
        for k in source.encoding
    )
    return read and isinstance(fill, (float, np.floating)) and bool(np.isnan(fill))


def encode_dataset(
    ds: xr.Dataset,
    encoding: Mapping[Any, Any] | None,
    keys: EncodingKeys,
    *,
    default_fill: bool = True,
    in_effect: InEffect,
) -> EncodedDataset:
    """Check names and ``encoding=`` (against ``keys``: :func:`~.encoding_check.check_encoding`), then CF-encode
    every variable with xarray's own encoder. ``default_fill=False`` leaves out the ``_FillValue: NaN`` xarray
    adds to floats read from a file that asked for none, so that a file read and written back unchanged keeps
    its bytes; a Dataset built in memory gets the default fill as with ``to_netcdf``."""
    _check_names(ds)
    if encoding is not None and None in encoding:
        encoding = {(NONE_VAR_NAME if k is None else k): v for k, v in encoding.items()}
    user, codecs = check_encoding(ds, encoding, keys, in_effect)
    _warn_dask_objects(ds)
    names, attrs = _cf_encode(ds, user, default_fill)
    global_coords = str(attrs.pop("coordinates", "") or "").split()
    options = {  # a provenance key (``chunks`` as read) counts only when the user gave it
        name: {
            k: v
            for k, v in var.encoding.items()
            if k in keys.options and (k not in _PROVENANCE_KEYS or k in user.get(name, {}))
        }
        for name, var in names.items()
    }
    return EncodedDataset(names, {str(k): v for k, v in attrs.items()}, options, global_coords, codecs)


def as_characters(var: xr.Variable) -> xr.Variable:
    """A string variable asked to be stored as characters (``dtype: S1``) as ``to_netcdf`` stores it (a trailing
    character dim, ``_Encoding`` for text), which xarray's decoder joins back on read, as for a netCDF file."""
    if var.dtype.kind not in "USOT" or np.dtype(var.encoding.get("dtype", "O")) != np.dtype("S1"):
        return var
    coder = strings.EncodedStringCoder(allows_unicode=False)  # type: ignore[no-untyped-call]  # unannotated in xarray
    encoded: xr.Variable = coder.encode(var)
    chars: xr.Variable = strings.CharacterArrayCoder().encode(encoded)  # type: ignore[no-untyped-call]  # unannotated in xarray
    return chars


def check_dtypes(
    encoded: EncodedDataset, fmt: str, bools: str, supported: Callable[[np.dtype], bool], names: Iterable[str]
) -> None:
    """CF-encoded booleans (``int8`` with ``dtype: bool``) recast as ``bools``: ``"bool"`` for formats with a
    boolean type (the attribute dropped), ``"u1"`` for formats without ``int8`` (the attribute kept, so xarray
    decodes them back). Then refuse, before a byte is written, the first variable whose dtype ``fmt`` cannot
    hold (``names``: the dtypes it can)."""
    for name, var in encoded.variables.items():
        if var.dtype == np.int8 and var.attrs.get("dtype") == "bool":
            var = encoded.variables[name] = var.astype(bools)
            if bools == "bool":
                var.attrs = {k: v for k, v in var.attrs.items() if k != "dtype"}
        if not supported(var.dtype):
            raise UnsupportedError(
                f"variable {name!r}: dtype {var.dtype} cannot be stored in a {fmt} file; "
                f"supported dtypes: {', '.join(names)}"
            )


def role_marked(encoded: EncodedDataset) -> dict[str, xr.Variable]:
    """Variables with the coordinates no data variable names marked as such, for formats without Dataset attrs."""
    out = dict(encoded.variables)
    for name in encoded.coordinate_only:
        if name in out:
            var = out[name].copy(deep=False)
            var.attrs = {**var.attrs, COORDINATE_ROLE_KEY: "coordinate"}
            out[name] = var
    return out


def warn_dropped(items: Iterable[str], what: str, category: type[Warning]) -> None:
    """One warning naming every dropped item (never silently), at the user's call."""
    dropped = list(items)
    if dropped:
        warnings.warn(f"{what}: {dropped}", category, stacklevel=user_stacklevel())


def typed_attrs(
    attrs: Mapping[Any, Any], *, python_too: bool, restored: Mapping[str, tuple[str, ...]] | None = None
) -> dict[Any, Any]:
    """``attrs`` with :data:`ATTR_TYPES_KEY` (JSON text: never flattened) recording the type of each value a
    format would lose: numpy scalars and arrays (their dtype), bytes (a bytes ``_FillValue`` must stay bytes for
    xarray's mask to apply) and, with ``python_too`` (formats that store text), Python numbers, booleans and lists
    too; less the types in ``restored`` (key -> types), which the format's reader gives back itself."""
    out: dict[str, str] = {}
    for key, value in attrs.items():
        if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind in "biuf":
            if value.dtype not in (np.dtype("float64"), np.dtype("int64")) or python_too:
                out[str(key)] = value.dtype.str
        elif isinstance(value, bytes):  # read back as hex text where the reader flattens attrs for netCDF
            out[str(key)] = "py:bytes"
        elif python_too and isinstance(value, (int, float)):
            out[str(key)] = "py:bool" if isinstance(value, bool) else "py:int" if isinstance(value, int) else "py:float"
        elif python_too and isinstance(value, (list, tuple)):
            with contextlib.suppress(TypeError, ValueError):
                out[str(key)] = np.asarray(value).dtype.str
    types = {k: t for k, t in out.items() if t not in (restored or {}).get(k, ())}
    return {**attrs, ATTR_TYPES_KEY: json.dumps(types, separators=(",", ":"))} if types else dict(attrs)


def string_payload(name: str, var: xr.Variable) -> dict[str, Any]:
    """A string variable as metadata (``dims``, ``shape``, numpy ``dtype``, flat ``values``), for formats that
    keep strings beside the payload. Bytes are spelled as Latin-1 text; an object array must hold only
    ``str`` or only ``bytes`` (anything else is refused, naming the variable, rather than turned into text)."""
    values = np.asarray(var.values)
    flat = values.reshape(-1).tolist()
    if values.dtype.kind in "OT":
        kind = next((t for t in (str, bytes) if all(isinstance(v, t) for v in flat)), None) if flat else "<U1"
        if kind is None:
            raise UnsupportedError(
                f"variable {name!r}: dtype {var.dtype} holds values that are neither all str nor all bytes "
                f"({sorted({type(v).__name__ for v in flat})}); convert it to strings or numbers before writing"
            )
        values = np.asarray(flat, dtype=kind).reshape(values.shape)
    text = [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values.reshape(-1).tolist()]
    return {"dims": [str(d) for d in var.dims], "shape": list(values.shape), "dtype": values.dtype.str, "values": text}
