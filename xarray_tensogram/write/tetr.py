"""xarray Dataset -> Tetration ``.tet`` file: one dataset per variable (the mirror of assemble/tetr.py).

Every variable, coordinates included, is CF-encoded (:mod:`.prepare`) and written as one dataset with its dims
in ``dim_names`` and its attrs as footer strings (the type of each non-string value recorded under
:data:`~xarray_tensogram.conventions.ATTR_TYPES_KEY`). An index coordinate read from footer labels goes back to
labels, spelled as read, so an unchanged file is written back byte for byte. A 0-d variable is stored with one
element and marked (``xarray_scalar``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..codecs.base import PASSTHROUGH
from ..conventions import COORDINATE_ROLE_KEY, SCALAR_KEY, STRINGS_KEY, TETR_LABELS_ENCODING
from ..conventions import TETR_FILE_KEYS as FILE_KEYS
from ..conventions import TETR_HISTORY_ATTR as HISTORY_JSON_ATTR
from ..errors import TetrMappingWarning, UnsupportedError
from ..formats.tetr import CODECS, LIMITS, DatasetWrite, open_tetr, write_tetr
from ..formats.tetr.history import history_rows
from ..formats.tetr.model import CF_FLOAT64, CF_IN_DATA_DTYPE, CODEC_OBJECTS, DTYPE_CODES
from ..io.lock import write_lock
from .encoding_check import CodecKey, CodecSetting, EncodingKeys, Option, warn_codecs_unused
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

__all__ = ["to_tetr"]


def _attr_string(value: Any) -> str:
    """An attribute value as the decimal/text string .tet stores (lists and maps as compact JSON)."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()  # a 0-d array or a numpy scalar: its Python value
    if isinstance(value, str):
        return value
    if isinstance(value, float):  # whole numbers as the reference spells them ("-9999"): the type is kept apart
        return "nan" if math.isnan(value) else str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(int(value))  # booleans as 0/1
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


ChunksLike = int | Sequence[int] | Mapping[str, int] | None


def _chunk_shape(var: xr.Variable, name: str, chunks: ChunksLike) -> tuple[int, ...]:
    """Explicit ``chunks`` (int, one per axis, ``{dim: size}``) > the tile shape read > Dask chunks > one tile."""
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
    return tuple(max(c[0], 1) for c in var.chunks) if var.chunks else tuple(var.shape)


def _codec(var: xr.Variable | None, compression: str | None) -> str:
    """``compression=``, else the codec the variable was read with (of mixed tiles: the compressed one), else raw."""
    if compression is None:
        read = (var.encoding if var is not None else {}).get("tetr_codec", PASSTHROUGH.name)
        compression = CODECS[1] if read == "mixed" else read
    return _COMPRESSION.argument(compression)[0]


def _string_attrs(attrs: Mapping[str, Any], name: str) -> dict[str, str]:
    out = {str(key): text for key, value in attrs.items() if key and (text := _attr_string(value))}
    empty = f"variable {name!r}: empty attributes (.tet cannot store empty strings), not written"
    warn_dropped((k for k in attrs if str(k) not in out), empty, TetrMappingWarning)
    return out


def _history_rows(ds: xr.Dataset, history: Sequence[Any] | None) -> list[Any]:
    """``history=`` when given; else the rows that show as the Dataset's ``history`` attribute (those read
    from the file, ``tetr_history``, kept as they were where their line is unchanged); else the rows read.
    A line no row can hold (empty, over 1024 bytes) is dropped with a warning naming it."""
    if history is not None:
        return list(history)
    text = ds.attrs.get(HISTORY_JSON_ATTR)
    read = list(json.loads(text)) if isinstance(text, str) and text else []
    if "history" not in ds.attrs:
        return read
    rows, dropped = history_rows(_attr_string(ds.attrs["history"]), read)
    warn_dropped(
        dropped,
        "lines of the Dataset attribute 'history' that a .tet history row cannot hold (1 to "
        f"{LIMITS['string']} bytes), not written",
        TetrMappingWarning,
    )
    return rows


_COMPRESSION = CodecKey("compression", CODEC_OBJECTS)
#: ``encoding=`` for .tet beside the CF keys every writer takes: the codec with its parameters, the tile shape
ENCODING = EncodingKeys(
    ".tet",
    (_COMPRESSION,),
    {"chunks": Option("the tile shape (one size per axis)"), "chunksizes": Option("netCDF's name for `chunks`")},
)
_DTYPES = frozenset(dt for _, dt in DTYPE_CODES.values())
_DTYPE_NAMES = [name for name, _ in DTYPE_CODES.values()] + ["bool"]


def _label_coords(ds: xr.Dataset, encoded: EncodedDataset) -> dict[str, list[str]]:
    """Index coordinates written as labels: those read from labels and unchanged (spelled as read), and string ones."""
    used = {d for name, v in encoded.variables.items() for d in v.dims if name not in ds.dims}
    out = {}
    for dim in ds.dims:
        if dim not in ds.coords or ds[dim].ndim != 1 or str(dim) not in used:
            continue
        values = ds[dim].values
        read: list[str] = list(ds[dim].encoding.get(TETR_LABELS_ENCODING) or [])
        spelled = [str(np.datetime_as_string(v)) if isinstance(v, np.datetime64) else _attr_string(v) for v in values]
        same = bool(read) and len(read) == len(values)
        if same and (spelled == read if values.dtype.kind != "M" else _same_times(read, values)):
            out[str(dim)] = [str(x) for x in read]
            continue
        if _is_text(values) and 0 < len(values) <= LIMITS["labels"] and all(spelled) and not ds[dim].attrs:
            out[str(dim)] = spelled
    return out


def _is_text(values: np.ndarray) -> bool:
    """Strings (not cftime dates, which xarray's encoder makes numbers with a calendar)."""
    return values.dtype.kind in "US" or (values.dtype.kind == "O" and all(isinstance(v, str) for v in values))


def _same_times(labels: Sequence[str], values: np.ndarray) -> bool:
    try:
        return bool((np.asarray([np.datetime64(x) for x in labels]).astype(values.dtype) == values).all())
    except ValueError:
        return False


def _typed_attrs(attrs: Mapping[str, Any], stored: np.dtype) -> dict[str, Any]:
    """``attrs`` with the types the footer's strings lose recorded, except where the reader restores them."""
    in_data = dict.fromkeys(CF_IN_DATA_DTYPE, (stored.str, stored.newbyteorder("<").str))
    return typed_attrs(attrs, python_too=True, restored={**dict.fromkeys(CF_FLOAT64, ("<f8", "py:float")), **in_data})


def _host_strings(writes: list[DatasetWrite], strings: Mapping[str, xr.Variable]) -> None:
    """String variables kept in the footer: one JSON attr (:data:`STRINGS_KEY`, then ``:name``) on the first
    dataset whose dims include theirs (else the first dataset)."""
    for name, var in strings.items():
        payload = string_payload(name, var)
        payload["attrs"] = {str(k): _attr_string(v) for k, v in _typed_attrs(var.attrs, np.dtype("U")).items()}
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        host = next(
            (w for w in writes if set(map(str, var.dims)) <= set(w.dim_names or ())), writes[0] if writes else None
        )
        if host is None or len(text.encode()) > LIMITS["string"] or len(host.attrs or {}) >= LIMITS["attrs"]:
            raise UnsupportedError(
                f"variable {name!r}: dtype {var.dtype} (strings) cannot be stored in this .tet file: strings go in "
                f"a footer attribute of another variable (at most {LIMITS['string']} bytes of JSON, {LIMITS['attrs']} "
                "attributes), or as the labels of a 1-D index coordinate of at most "
                f"{LIMITS['labels']} values; supported dtypes: {', '.join(_DTYPE_NAMES)}"
            )
        host.attrs = {**(host.attrs or {}), f"{STRINGS_KEY}:{name}": text}


def _dataset_write(
    name: str,
    var: xr.Variable,
    source_ds: xr.Dataset,
    encoded: EncodedDataset,
    chunks: ChunksLike,
    compression: str | None,
    labels: Mapping[str, list[str]],
) -> DatasetWrite:
    """One variable as a dataset: its codec what its ``encoding=`` entry chose, else the one in effect."""
    source, options = source_ds.variables.get(name, var), encoded.options.get(name, {})
    vocabulary = _codec(source_ds.variables.get(name), compression)
    in_effect = CodecSetting(vocabulary, CODEC_OBJECTS[vocabulary], {})  # default parameters
    codec = encoded.codecs.get(name, {}).get(_COMPRESSION.key, in_effect)
    if 0 in var.shape:
        raise UnsupportedError(f"variable {name!r}: shape {var.shape} has an empty axis, which .tet cannot store")
    attrs = dict(var.attrs)  # booleans are uint8 already (check_dtypes)
    if var.dtype.byteorder == ">":  # stored little-endian: the attribute types are checked against it
        var = var.astype(var.dtype.newbyteorder("<"))
    dims = [str(d) for d in var.dims]
    if var.ndim == 0:
        # .tet has rank 1..8: one element, marked so the reader squeezes it
        var = xr.Variable(("_scalar",), np.asarray(var.values).reshape(1))
        attrs[SCALAR_KEY] = "1"
    typed = _typed_attrs(attrs, var.dtype)
    tile_source = source if source.ndim == var.ndim else var
    given = options.get("chunks", options.get("chunksizes"))
    dim_names = dims if dims and source.encoding.get("tetr_generated_dims") != dims else None  # not made up on read
    return DatasetWrite(
        name,
        var.data if var.chunks is not None else np.asarray(var.values),  # Dask: computed one tile at a time
        _chunk_shape(tile_source, name, given if given is not None else chunks),
        codec.vocabulary,
        dim_names=dim_names,
        # labels keyed by dim name, or by axis number where no dim_names are written
        coords={(d if dim_names else str(i)): labels[d] for i, d in enumerate(dims) if d in labels} or None,
        attrs=_string_attrs(typed, name) or None,
        codec_params=dict(codec.params) or None,
    )


@checked_keywords
def to_tetr(
    ds: xr.Dataset | xr.DataArray,
    path: Any,
    *,
    mode: str = "w",
    encoding: Mapping[Any, Mapping[str, Any]] | None = None,
    chunks: ChunksLike = None,
    compression: str | None = None,
    history: Sequence[Any] | None = None,
    unlimited_dims: Iterable[Hashable] | None = None,
) -> int:
    """Write every variable of ``ds`` (coordinates included) as a dataset of a Tetration (``.tet``) file.

    Dims go to the footer's ``dim_names``, attrs (CF-encoded) to footer strings, index coordinates read from
    labels (and string ones) to labels, ``tool``/``library_version``/``created_at`` to the file metadata and
    ``history`` to history rows; other Dataset attrs have no place in the format (a warning names them). A
    Dataset read from a ``.tet`` file and left unchanged is written back byte for byte.

    Parameters
    ----------
    ds
        The Dataset (or DataArray) to write.
    path
        The target file (written atomically, with the permissions ``open(path, "w")`` would give).
    mode
        ``"w"`` (replace) or ``"a"`` (add variables, rewriting the file atomically; a variable that exists or
        a dim whose size clashes is refused before anything is written).
    encoding
        ``{variable: {...}}``: the CF keys of ``to_netcdf``, ``compression`` (``"raw"``/``"zstd"``) with its
        parameters (zstd ``level``) and ``chunks`` (the tile shape), checked before anything is written.
    chunks
        The tile shape: one size for every axis (int), one per axis (tuple), or ``{dim: size}``. By
        default the tile shape the variable was read with, else its Dask chunks, else one tile.
    compression
        ``"raw"`` or ``"zstd"``; by default the codec the variable was read with, else raw.
    history
        History rows (dicts or ``(op, source, at)``); by default one per line of the ``history`` attribute
        (the row read where its line is unchanged), so an edited history is written as edited.
    unlimited_dims
        Refused when not empty (:class:`UnsupportedError`): the format has no unlimited dimensions.

    Returns
    -------
    int
        The size of the file written.

    Raises
    ------
    UnsupportedError
        What the format cannot hold (strings other than labels, complex, int8, an empty axis), an unknown
        encoding key (listing the accepted ones), a MultiIndex.
    EncodeError
        A codec parameter outside its valid values (naming the variable and the parameter).
    """
    check_call(mode, path, unlimited_dims, ".tet")
    source_ds = as_dataset(ds)
    _codec(None, compression)  # the file-wide choice is checked before anything else

    def in_effect(name: str, enc: Mapping[str, Any]) -> dict[str, str]:  # no codec named: compression=, else as read
        return {_COMPRESSION.key: _codec(source_ds.variables.get(name), compression)}

    encoded = encode_dataset(source_ds, encoding, ENCODING, default_fill=False, in_effect=in_effect)
    storable = [*_DTYPE_NAMES, "strings (as labels)"]
    check_dtypes(encoded, ".tet", "u1", lambda dt: dt.kind in "USOTb" or dt.newbyteorder("<") in _DTYPES, storable)
    writes = _dataset_writes(source_ds, encoded, chunks, compression)
    hist = _history_rows(source_ds, history)
    attrs = encoded.attrs
    dropped = [k for k in attrs if k not in FILE_KEYS and k not in ("history", HISTORY_JSON_ATTR)]
    warn_dropped(dropped, "Dataset attributes that have no place in a .tet file, not written", TetrMappingWarning)
    meta = {k: _attr_string(attrs[k]) for k in FILE_KEYS if k in attrs} or None
    execution = source_ds.encoding.get("tetr_execution") or {}  # the TIDX execution hint read ((0, 0): none)
    hint = int(execution.get("memory_budget_percent_bps", 0)), int(execution.get("memory_budget_bytes", 0))
    with write_lock(path):  # other writers of this file wait from the read of the file to the commit
        if mode == "a" and os.path.exists(path):
            writes, hist, meta = _with_existing(path, writes, encoded, hist, meta)
        write_tetr(path, writes, history=hist, file_metadata=meta, execution=hint)
        return os.path.getsize(path)


def _dataset_writes(
    source_ds: xr.Dataset, encoded: EncodedDataset, chunks: ChunksLike, compression: str | None
) -> list[DatasetWrite]:
    """One dataset per variable, each with its own codec and parameters; strings in labels or footer attrs."""
    labels = _label_coords(source_ds, encoded)
    variables = {k: v for k, v in role_marked(encoded).items() if k not in labels}
    strings = {k: v for k, v in variables.items() if v.dtype.kind in "USOT"}
    writes = [
        _dataset_write(name, var, source_ds, encoded, chunks, compression, labels)
        for name, var in variables.items()
        if name not in strings
    ]
    _host_strings(writes, strings)
    where = "strings are kept in the footer (labels or an attribute), which is not compressed"
    warn_codecs_unused(encoded.codecs, [*labels, *strings], where, TetrMappingWarning)
    return writes


def _with_existing(
    path: Any, writes: list[DatasetWrite], encoded: EncodedDataset, hist: list[Any], meta: dict[str, str] | None
) -> tuple[list[DatasetWrite], list[Any], dict[str, str] | None]:
    """The file's datasets, then the new ones checked to fit (one written again unchanged is kept once)."""
    with open_tetr(path) as tf:
        sizes = {n: s for d in tf.datasets for n, s in zip(d.dim_names or (), d.shape, strict=False)}
        old = [
            DatasetWrite(
                d.name,
                tf.read(d.dataset_id),
                d.chunk_shape,
                d.codec if d.codec != "mixed" else CODECS[1],  # mixed tiles: the compressed codec
                dim_names=d.dim_names,
                coords=d.coords,
                attrs=d.attrs or None,
            )
            for d in tf.datasets
        ]
        same = kept_once(os.fspath(path), _units(old), _units(writes), sizes, encoded.variables)
        writes = [w for w in writes if w.name not in same]
        return old + writes, list(tf.history) + hist, {**tf.metadata, **(meta or {})} or None


def _units(writes: list[DatasetWrite]) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """Each dataset's values and what it says besides (not the role mark: it depends on what else is written)."""
    out = {}
    for w in writes:
        attrs = {k: v for k, v in (w.attrs or {}).items() if k != COORDINATE_ROLE_KEY}
        out[w.name] = (w.data, (attrs, list(w.dim_names or []), dict(w.coords or {})))
    return out
