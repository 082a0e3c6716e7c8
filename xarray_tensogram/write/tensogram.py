"""Dataset -> Tensogram messages: the inverse of the hypercube mapping (assemble/tensogram/).

Dims the reader built from metadata keys (each variable's :class:`~xarray_tensogram.layout_record.LayoutRecord`,
e.g. ``step`` from ``mars.step``) split the data into one message per combination of their values;
``message_dims=`` adds more. Each message has one object per variable, whose base entry carries the key values
at their dotted paths, ``dim_names``, the lifted CF attributes under ``cf`` and the other attributes.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..codecs import simple_packing
from ..codecs.bitmaps import RLE
from ..codecs.optional import available
from ..conventions import COORDINATE_ROLE_KEY, DTYPE_KEY, LAYOUT_KEY, TGM_COORDINATE_NAMES
from ..errors import TensogramMappingWarning, UnsupportedError
from ..formats.tensogram.compression import (
    float64_only,
)
from ..formats.tensogram.encode import OBJECT_DTYPES
from ..formats.tensogram.masks import DEFAULT_MASK_METHOD
from ..formats.tensogram.writer import (
    EncodedMessage,
    ObjectInput,
    encode_message,
    encode_message_parts,
    write_messages,
)
from ..io.lock import write_lock
from ..layout_record import MISSING_OBJECTS_ATTR, WIRE_VERSION_ATTR, LayoutRecord
from ..producers import dataset_writer, written_by
from ..producers.interface import Producer
from .encoding_check import warn_codecs_unused
from .prepare import (
    EncodedDataset,
    as_characters,
    as_dataset,
    check_call,
    check_dtypes,
    checked_keywords,
    encode_dataset,
    string_payload,
    typed_attrs,
)
from .tensogram_append import check_tensogram_append
from .tensogram_dims import (
    MessageDim,
    message_combos,
    message_keys,
    not_objects,
    plan_dims,
    py_attrs,
    py_value,
    set_path,
)
from .tensogram_pipeline import ENCODING, pipeline_in_effect, resolve_pipeline

__all__ = ["TensogramAccessor", "to_tensogram"]

#: attributes written under ``cf`` for Datasets that did not record which ones were lifted
CF_ATTRS = frozenset(
    {
        "units",
        "long_name",
        "standard_name",
        "calendar",
        "axis",
        "positive",
        "valid_min",
        "valid_max",
        "valid_range",
        "comment",
        "coordinates",
        "cell_methods",
        "grid_mapping",
    }
)


def _attrs_to_entry(attrs: Mapping[str, Any], cf_attrs: Sequence[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    lifted = set(cf_attrs) if cf_attrs is not None else CF_ATTRS
    for k, v in attrs.items():
        if k != MISSING_OBJECTS_ATTR:
            set_path(entry, f"cf.{k}" if k in lifted and "." not in k else k, py_value(v))
    return entry


# -- objects ------------------------------------------------------------------------------------------
def _object_values(values: np.ndarray, desc: Mapping[str, Any], entry: dict[str, Any]) -> np.ndarray:
    """Values as the pipeline takes them, marked in ``entry``: booleans as uint8 (CF ``dtype: bool``, which
    xarray decodes back), anything float64 for simple_packing and zfp (the dtype recorded as ``xarray_dtype``)."""
    if values.dtype.kind == "b":
        entry["dtype"] = "bool"
        values = values.astype(np.uint8)
    if float64_only(desc) and values.dtype != np.float64:
        entry[DTYPE_KEY] = values.dtype.name
        values = values.astype(np.float64)
    return values


@dataclass
class _Plan:
    """What every object of one write is made of (``skip``: coordinates that are no objects, :func:`.not_objects`)."""

    ds: xr.Dataset
    cf: EncodedDataset
    encoding: Mapping[str, Mapping[str, Any]]
    mdims: list[MessageDim]
    hint: dict[str, Any] | None
    skip: set[Hashable]

    @property
    def split(self) -> set[str]:
        return {m.name for m in self.mdims}

    def holds(self, var: xr.DataArray, sel: Mapping[str, int]) -> bool:
        """Whether the message at ``sel`` holds ``var``: one not along a message dim is in the first along it."""
        return all(sel[m.name] == 0 for m in self.mdims if m.name not in var.dims)


def _data_object(
    plan: _Plan, name: Any, var: xr.DataArray, sel: Mapping[str, int]
) -> tuple[dict[str, Any], ObjectInput] | None:
    """The base entry and object of a variable in the message at ``sel`` (CF-encoded); None if not held, or a hole."""
    if not plan.holds(var, sel):
        return None
    cf = plan.cf.variables[str(name)]
    where = {m.name: sel[m.name] for m in plan.mdims if m.name in var.dims}
    desc = resolve_pipeline(var.encoding, plan.encoding.get(str(name), {}))
    if cf.dtype.kind in "OUST":
        return None  # strings are kept in metadata (_string_coords)
    if var.attrs.get(MISSING_OBJECTS_ATTR):  # a hole of the hypercube read stays one: a cell all NaN, or all the
        cell, fill = np.asarray(var.isel(where).values), var.attrs.get("_FillValue")  # fill the reader put in integers
        if (cell.dtype.kind == "f" and np.isnan(cell).all()) or (fill is not None and (cell == fill).all()):
            return None
    entry = object_entry(plan, name, var, sel, desc)
    values = _object_values(np.asarray(cf.isel(where).values), desc, {})  # the marks are in the entry already
    _packing_params_from_finite(values, desc)
    desc["shape"] = list(values.shape)
    return entry, ObjectInput(values, desc)


def object_entry(
    plan: _Plan, name: Any, var: xr.DataArray, sel: Mapping[str, int], desc: Mapping[str, Any]
) -> dict[str, Any]:
    """The base entry (metadata) of one variable's object in the message at ``sel``, without its values: what
    tells its objects apart from others (an append checks them against the file's before writing)."""
    cf = plan.cf.variables[str(name)]  # of a dtype objects hold (checked by _check_storable)
    record = LayoutRecord.of(var.encoding, name)
    entry, producer = _attribute_entry(cf, record)
    _object_values(np.empty(0, cf.dtype), desc, entry)  # the marks only: no values are loaded here
    var_mdims = [m for m in plan.mdims if m.name in var.dims]
    for key, value in message_keys(plan.ds, sel, var_mdims, record):
        set_path(entry, key, value)
    if producer.finish_entry(entry, str(name)):  # False: the producer's keys give the name
        set_path(entry, record.name_key or "name", name)
    entry["dim_names"] = [d for d in var.dims if d not in {m.name for m in var_mdims}]
    if str(name).lower() in TGM_COORDINATE_NAMES:  # the reader would take it for a coordinate
        entry[COORDINATE_ROLE_KEY] = "data"
    # the coordinates it lists (as xarray's encoder wrote them) that are objects of the file, none along message dims
    listed, known = str(cf.attrs.get("coordinates", "")).split(), plan.ds.variables
    aux = [c for c in listed if c not in plan.skip and c in known and not set(known[c].dims) & plan.split]
    if aux:
        set_path(entry, "cf.coordinates", " ".join(aux))
    return entry


def _attribute_entry(cf: xr.Variable, record: LayoutRecord) -> tuple[dict[str, Any], Producer]:
    """A variable's attributes as entry paths (the ones the reader lifted back under ``cf``; the parameter
    table's and ``coordinates``, object_entry's, left out), and the producer whose layout it was read in."""
    table = record.table_attrs or {}  # units/long_name/standard_name the reader took from the parameter table
    typed = typed_attrs(cf.attrs, python_too=False)
    attrs = {k: v for k, v in typed.items() if k != "coordinates" and not (k in table and table[k] == v)}
    producer = written_by(record, attrs)
    return _attrs_to_entry(producer.entry_attrs(attrs, record), record.cf_attrs), producer


def _packing_params_from_finite(values: np.ndarray, desc: dict[str, Any]) -> None:
    """simple_packing of values with NaN/Inf: the reference encoder needs the packing parameters then, so they
    are computed from the finite values (the non-finite positions go to the object's bitmask)."""
    if desc.get("encoding") != "simple_packing" or "sp_reference_value" in desc or values.dtype.kind != "f":
        return
    finite = values[np.isfinite(values)]
    if finite.size == values.size:
        return
    bits, scale = int(desc.get("sp_bits_per_value", 16)), int(desc.get("sp_decimal_scale_factor", 0))
    reference, binary_scale = simple_packing.compute_params(finite if finite.size else np.zeros(1), bits, scale)
    desc["sp_reference_value"], desc["sp_binary_scale_factor"] = float(reference), int(binary_scale)


def _coordinate_objects(
    plan: _Plan, in_file: Collection[Hashable], only: Collection[Hashable] | None = None
) -> Iterator[tuple[dict[str, Any], ObjectInput]]:
    """Coordinates not along message dims (``only`` those, if given) as CF-encoded objects, less those ``in_file``."""
    ds, split = plan.ds, plan.split
    wanted = ds.coords if only is None else only
    for cname, coord in ds.coords.items():
        if cname in plan.skip or cname in in_file or split.intersection(coord.dims) or cname not in wanted:
            continue
        encoded = plan.cf.variables.get(str(cname), coord.variable)
        values = np.asarray(encoded.values)
        if values.dtype.kind in "OUST":
            continue  # string labels have no object form: they go into the layout hint (_string_coords)
        cf_attrs = list(LayoutRecord.of(coord.encoding, cname).cf_attrs or CF_ATTRS)
        entry = _attrs_to_entry(typed_attrs(encoded.attrs, python_too=False), [*cf_attrs, "units", "calendar"])
        values = _object_values(values, {}, entry)
        entry["name"] = cname
        if list(coord.dims) != [cname] or not any(cname in v.dims for v in ds.data_vars.values()):
            entry["dim_names"] = [str(d) for d in coord.dims]  # else the reader matches it by name
        yield entry, ObjectInput(values, {"shape": list(values.shape)})


def _string_coords(plan: _Plan) -> dict[str, Any]:
    """String variables (no object form in Tensogram) kept in metadata, in the layout hint; as characters
    (``S1``) where their encoding asks for it, as ``to_netcdf`` stores them. Object arrays of dates
    (cftime) are not strings: xarray's encoder made them numbers (``cf``), written as objects."""
    out = {}
    for cname, var in plan.ds.variables.items():
        if cname in plan.skip or plan.cf.variables[str(cname)].dtype.kind not in "OUST":
            continue
        coord = var.copy(deep=False)
        coord.encoding = {**var.encoding, **plan.encoding.get(str(cname), {})}
        coord = as_characters(coord)
        payload = string_payload(str(cname), coord)
        if np.dtype(payload["dtype"]).kind == "S" and not all(v.isascii() for v in payload["values"]):
            raise UnsupportedError(
                f"variable {cname!r}: dtype {coord.dtype} (bytes beyond ASCII) cannot be stored in a .tgm file, "
                "which keeps strings in metadata as text; decode it to str first"
            )
        out[str(cname)] = {
            "dims": payload["dims"],
            "values": np.asarray(payload["values"], dtype=str).reshape(payload["shape"]).tolist(),
            "dtype": payload["dtype"],
            "attrs": py_attrs(coord.attrs),
        }
        if cname not in plan.ds.coords:
            out[str(cname)]["role"] = "data"
    return out


def _check_append(plan: _Plan, path: str | os.PathLike[str]) -> frozenset[str]:
    """``mode="a"``: check the objects to write against the file's (no values loaded for data objects) before
    a byte is written; the coordinates the file already has unchanged, not to write again."""
    data = [
        (str(n), object_entry(plan, n, v, sel, resolve_pipeline(v.encoding, plan.encoding.get(str(n), {}))))
        for sel in message_combos(plan.ds, plan.mdims)
        for n, v in plan.ds.data_vars.items()
        if plan.cf.variables[str(n)].dtype.kind not in "OUST" and plan.holds(v, sel)
    ]
    coords = [(str(e["name"]), e, np.asarray(obj.data)) for e, obj in _coordinate_objects(plan, frozenset())]
    return check_tensogram_append(path, plan.cf.variables, plan.split, data, coords, _string_coords(plan))


def _iter_messages(plan: _Plan, in_file: frozenset[str], grid: bool, **kw: Any) -> Iterator[bytes | EncodedMessage]:
    """One message per combination of the message dims' indices, encoded only when the writer asks for it
    (so a Dask-backed Dataset is computed one message at a time); ``kw``: the encoder's keywords."""
    ds = plan.ds
    extra = _message_extra(plan)
    wrote_any = False
    for i, sel in enumerate(message_combos(ds, plan.mdims)):
        pairs = [p for n, v in ds.data_vars.items() if (p := _data_object(plan, n, v, sel)) is not None]
        pairs.extend(_message_coords(plan, sel, in_file, first=i == 0, grid=grid))
        if pairs:
            wrote_any = True
            base, objects = map(list, zip(*pairs, strict=True))
            yield encode_message_parts({"base": base, "_extra_": extra}, objects, **kw)
    if not wrote_any and all(ds.sizes[m.name] for m in plan.mdims):
        # a Dataset without variables: one message without objects keeps its attributes
        yield encode_message({"_extra_": extra}, [], **kw)


def _message_extra(plan: _Plan) -> dict[str, Any]:
    """The metadata every message repeats: the Dataset's attributes, the CF ``coordinates`` attribute, and the
    layout hint with the strings kept in metadata and each data variable's attribute names (CF-encoded): a key
    that varies along a message dim is constant in a file of one value along it, which the reader keeps so."""
    ds, cf = plan.ds, plan.cf
    extra: dict[str, Any] = {}
    for k, v in ds.attrs.items():
        if k != WIRE_VERSION_ATTR:
            set_path(extra, k, py_value(v))
    global_coords = [c for c in cf.coordinate_only if c not in plan.skip and c in ds.coords]
    if global_coords:  # coordinates no data variable names: the CF global attribute, as to_netcdf writes it
        extra["coordinates"] = " ".join(global_coords)
    hint = plan.hint
    if hint is not None:
        hint = {**hint, "attrs": {str(n): sorted(str(k) for k in cf.variables[str(n)].attrs) for n in ds.data_vars}}
    if strings := _string_coords(plan):
        hint = {**(hint or {}), "coords": {**strings, **((hint or {}).get("coords") or {})}}
    if hint is not None:
        extra[LAYOUT_KEY] = hint
    return extra


def _message_coords(
    plan: _Plan, sel: Mapping[str, int], in_file: frozenset[str], *, first: bool, grid: bool
) -> Iterator[tuple[dict[str, Any], ObjectInput]]:
    """The coordinate objects of the message at ``sel``: every coordinate not along message dims in the first
    message; with ``grid``, each message's grid again in every later one (and in an appended first message,
    even where the file has it), so that each message describes itself, as converted files do. The grid: the
    coordinates (none along a message dim) along the axes of a data variable the message holds."""
    names: set[Hashable] = set()
    if grid and plan.mdims:
        held = [set(v.dims) for v in plan.ds.data_vars.values() if plan.holds(v, sel)]
        names = {
            c
            for c, coord in plan.ds.coords.items()
            if coord.ndim and not plan.split.intersection(coord.dims) and any(set(coord.dims) <= d for d in held)
        }
    return _coordinate_objects(plan, in_file - names) if first else _coordinate_objects(plan, (), only=names)


#: the encoder's keywords for how NaN, +Inf and -Inf positions are stored
_MASK_KEYWORDS = ("nan_mask_method", "pos_inf_mask_method", "neg_inf_mask_method")


def _layout_message(
    ds: xr.Dataset, producer: Producer, encoding: Mapping[str, Mapping[str, Any]], **kw: Any
) -> Iterator[bytes | EncodedMessage]:
    """A Dataset a producer assembled whole: one message of its objects, in its layout."""
    base, objects = [], []
    for o in producer.objects(ds, py_value):
        desc = resolve_pipeline(o.encoding, encoding.get(o.name, {}))
        values = _object_values(o.values, desc, o.entry)
        desc["shape"] = list(values.shape)
        base.append(o.entry)
        objects.append(ObjectInput(values, desc))
    yield encode_message_parts({"base": base}, objects, **kw)


@checked_keywords
def to_tensogram(
    ds: xr.Dataset | xr.DataArray,
    path: str | os.PathLike[str],
    *,
    mode: str = "w",
    message_dims: Sequence[str] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    hash: str | None = "xxh3",
    layout: str = "buffered",
    reserved: Mapping[str, Any] | None = None,
    mask_method: str | None = None,
    unlimited_dims: Iterable[Hashable] | None = None,
    grid: bool = True,
) -> int:
    """Write a Dataset as Tensogram v3 messages.

    The reader's mapping inverted: metadata-key dimensions split the data into one message per combination,
    one object per variable; other coordinates go to the first message, the grid to every message.

    Parameters
    ----------
    ds
        The Dataset to write (a DataArray is written as a Dataset of one variable).
    path
        The target file (written to a temporary file next to it and renamed, so a failed write never leaves
        a half-written file), with the permissions ``open(path, "w")`` would give.
    mode
        ``"w"`` (replace) or ``"a"`` (append messages without rewriting the file).
    message_dims
        For a Dataset that did not come from a ``.tgm`` file: the dimensions that split messages.
    encoding
        ``{variable: {...}}`` pipelines: ``encoding`` (``none``, ``simple_packing``), ``filter`` (``shuffle``),
        ``compression`` (``zstd``, ``lz4``, ``szip``, ``blosc2``, ``zfp``) with their parameters (``level``...),
        and ``to_netcdf``'s CF keys, checked before anything is written. By default as each variable was read.
    hash
        ``"xxh3"`` or ``None``.
    layout
        ``"buffered"`` or ``"streaming"``.
    reserved
        Fixed provenance stamps (``{"time": ..., "uuid": ...}``), so equal inputs give equal bytes.
    mask_method
        How NaN/Inf positions are stored (``roaring``, ``rle``, ``none``, ``zstd``, ``lz4``, ``blosc2``).
    unlimited_dims
        Refused when not empty (:class:`UnsupportedError`): the format has no unlimited dimensions.
    grid
        ``False``: the grid in the first message only (smaller; later messages alone have no grid).

    Returns
    -------
    int
        The number of bytes written.

    Raises
    ------
    UnsupportedError
        An unknown ``encoding=`` key or value (naming the variable, listing the valid ones); a dtype.
    EncodeError
        A codec parameter outside its valid values (naming the variable and the parameter).
    NoSuchDirectoryError
        The target's directory does not exist.
    """
    ds = as_dataset(ds)
    check_call(mode, path, unlimited_dims, ".tgm")
    cf = encode_dataset(ds, encoding, ENCODING, default_fill=False, in_effect=pipeline_in_effect(ds))  # as to_netcdf
    _check_storable(ds, cf)
    with write_lock(path):  # other writers of this file wait from the check of the file to the commit
        mdims, hint = plan_dims(ds, message_dims)
        plan = _Plan(ds, cf, encoding or {}, mdims, hint, not_objects(ds, mdims))
        in_file = _check_append(plan, path) if mode == "a" and os.path.exists(path) else frozenset()
        mask = mask_method or (DEFAULT_MASK_METHOD if available("pyroaring") else RLE.name)  # roaring if installed
        masks = dict.fromkeys(_MASK_KEYWORDS, mask)  # objects may name their own
        kw = {"hash": hash, "layout": layout, "reserved": reserved, "allow_nan": True, "allow_inf": True, **masks}
        if message_dims is None and (whole := dataset_writer(ds)) is not None:  # read whole in a producer's layout
            return write_messages(path, _layout_message(ds, whole, encoding or {}, **kw), mode=mode)
        return write_messages(path, _iter_messages(plan, in_file, grid, **kw), mode=mode)


def _check_storable(ds: xr.Dataset, cf: EncodedDataset) -> None:
    """Refuse what a ``.tgm`` cannot hold (before a byte is written), such as a coordinate of more dims named like
    one of them (xarray's non-index coordinate ``x(t, x)``, which would not come back); warn of codecs asked for
    strings."""
    objects = [n for n in OBJECT_DTYPES if not n.startswith("complex")]  # complex refused (docs/writing.md)
    storable = [*objects, "strings (in metadata)"]  # CF booleans: uint8 objects with ``dtype: bool``
    check_dtypes(cf, ".tgm", "u1", lambda dt: dt.kind in "OUST" or dt.name in objects, storable)
    for cname, coord in ds.coords.items():  # an object named like a dim is that dim's index to the reader
        if coord.ndim > 1 and cname in coord.dims:
            raise UnsupportedError(
                f"variable {cname!r}: a {coord.ndim}-D coordinate named like its own dim {cname!r} cannot be stored "
                "in a .tgm file (an object named like a dim is read as that dim's index); rename it first"
            )
    in_metadata = [n for n, v in cf.variables.items() if v.dtype.kind in "OUST"]
    warn_codecs_unused(cf.codecs, in_metadata, "strings are kept in metadata", TensogramMappingWarning)


@xr.register_dataset_accessor("tensogram")  # type: ignore[no-untyped-call]  # unannotated in xarray
class TensogramAccessor:
    """``ds.tensogram.to_tgm(path, ...)``: the same as :func:`to_tensogram`."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_tgm(self, path: str | os.PathLike[str], **kwargs: Any) -> int:
        return to_tensogram(self._ds, path, **kwargs)
