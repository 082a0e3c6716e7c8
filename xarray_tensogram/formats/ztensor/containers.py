"""Parsing the three zTensor containers (spec sections 1-4) into :class:`TensorInfo` lists.

Open reads the footer and the index/manifest only. Checks that concern the whole file (magic, index length, CBOR,
required keys, offset alignment) fail the open; those that concern one tensor's bytes (bounds, sizes, unknown
dtype, encoding or layout) are deferred to reading that tensor, so one odd tensor does not hide the others.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...codecs import cbor
from ...codecs.checksums import xxh3_64
from ...errors import (
    CorruptFileError,
    IntegrityError,
    LimitExceededError,
    MetadataError,
    TruncatedFileError,
    UnsupportedError,
    byte_text,
    describe,
)
from ...io import ByteSource, LocalFileSource
from .compression import SEEKABLE_ZSTD, V01_ENCODINGS, stores_values
from .fields import MISSING, Field, Fields, is_array, is_text, is_uint, map_or_empty, maybe, one_of, uints
from .model import (
    LONG_DTYPE_NAMES,
    MAX_RANK,
    STORAGE_DTYPES,
    Part,
    TensorInfo,
    check_free_values,
    check_shape,
    logical_dtype,
)

__all__ = ["MAGIC_V01", "MAGIC_V1", "MAGIC_V2", "V01_KEYS", "Container", "parse_container"]

MAGIC_V01 = b"ZTEN0001"
MAGIC_V1 = b"ZTEN1000"
MAGIC_V2 = b"\x89ZT2\r\n\x1a\n"
MAX_MANIFEST = 1 << 30
V2_MAX_DEPTH = 32
_SHARD_NAME = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,63}")


@dataclass
class Container:
    """The parsed index of a file: tensors plus where blobs may live."""

    version: str  #: "0.1", "1" or "2"
    dialect: str | None  #: v1 manifest ``version`` ("1.0", "1.1.0", "1.2.0")
    tensors: list[TensorInfo]
    attrs: dict[str, Any]
    data_start: int
    data_end: int
    shards: dict[str, ByteSource] = field(default_factory=dict)


def parse_container(source: ByteSource) -> Container:
    """Read the footer and index of ``source`` and describe its tensors."""
    if source.size < 16:
        raise TruncatedFileError(
            f"{describe(source.name)}file truncated: a zTensor file needs at least 16 bytes, this one has {source.size}"
        )
    head = source.read(0, 8, what="magic")
    parse = {MAGIC_V01: _parse_v01, MAGIC_V1: _parse_v1, MAGIC_V2: _parse_v2}.get(bytes(head))
    if parse is not None:
        return parse(source)
    raise CorruptFileError(
        f"{describe(source.name, offset=0)}magic {byte_text(head)} is not a zTensor magic "
        "(expected ZTEN0001, ZTEN1000 or \\x89ZT2\\r\\n\\x1a\\n)"
    )


def _index_bytes(source: ByteSource, footer: int, what: str) -> tuple[bytes, int]:
    """The CBOR blob followed by ``footer`` trailing bytes, the first 8 of which are its u64 LE length."""
    size = source.size
    length = int.from_bytes(source.read(size - footer, 8, what=f"{what} length"), "little")
    room = size - footer - 8
    if length > room:
        raise TruncatedFileError(
            f"{describe(source.name, offset=size - footer)}the file is truncated or damaged: the 8 bytes here should "
            f"give the length of the {what} at the end of the file, but they read {length} bytes, more than the "
            f"{room} bytes before them ({size} bytes in all); copy or download the file again"
        )
    if length > MAX_MANIFEST:
        raise LimitExceededError(
            f"{describe(source.name, offset=size - footer)}{what} length {length} exceeds the "
            f"limit of {MAX_MANIFEST} bytes (MAX_MANIFEST)"
        )
    if length == 0:
        raise CorruptFileError(
            f"{describe(source.name, offset=size - footer)}{what} length is 0: the file "
            f"({size} bytes) is truncated or damaged; copy or download it again"
        )
    start = size - footer - length
    return source.read(start, length, what=what), start


_FILE_ATTRIBUTES = Fields(Field("attributes", map_or_empty, "file 'attributes' must be a map"))


# -- v0.1 -------------------------------------------------------------------------------------------
_V01_TEXT = "key {key!r} must be text, got {value!r}"
_V01_UINT = "key {key!r} must be an unsigned integer, got {value!r}"
_V01_FIELDS = Fields(
    Field("name", is_text, _V01_TEXT, MISSING),
    Field("offset", is_uint, _V01_UINT, MISSING, uints),
    Field("size", is_uint, _V01_UINT, MISSING, uints),
    Field("dtype", is_text, _V01_TEXT, MISSING),
    Field("shape", is_array, "key {key!r} must be an array, got {value!r}", MISSING),
    Field("encoding", is_text, _V01_TEXT, MISSING),
    Field("layout", is_text, _V01_TEXT, "dense"),
    Field("data_endianness", one_of(None, "little", "big"), "key {key!r} must be 'little' or 'big', got {value!r}"),
    Field("checksum", maybe(is_text), _V01_TEXT),
)
#: what a v0.1 tensor may hold and this reader cannot decode: a problem deferred to reading it
_V01_LAYOUTS = ("dense", "sparsecoo", "sparsecsr")
_V01_SUPPORTED = Fields(
    *(
        Field(key, one_of(*known), f"{key} {{value!r}} is not supported (v0.1 knows {', '.join(known)})", default)
        for key, known, default in (
            ("dtype", LONG_DTYPE_NAMES, None),
            ("encoding", V01_ENCODINGS, None),
            ("layout", _V01_LAYOUTS, "dense"),
        )
    )
)
#: the keys a v0.1 index entry declares; any other is a tensor's free-form (custom) field
V01_KEYS = frozenset(_V01_FIELDS.keys)


def _parse_v01(source: ByteSource) -> Container:
    if source.size < 17:
        # The 0.1.4 reader accepts 16 bytes (magic and a zero index length) as empty, but no writer makes
        # that file and any v0.1 file cut at byte 16 looks the same: report it as the truncation it may be.
        raise TruncatedFileError(
            f"{describe(source.name)}file truncated: a v0.1 file needs at least 17 bytes "
            f"(magic, CBOR index, 8-byte index length), this one has {source.size}"
        )
    raw, idx_start = _index_bytes(source, 8, "CBOR index")
    where = describe(source.name, "v0.1 index", idx_start)
    try:
        index = cbor.loads(raw, where=where)
    except MetadataError as exc:
        # v0.1 has no footer magic: a cut file or appended bytes show up as an index that does not decode
        raise type(exc)(f"{exc} (the {source.size}-byte file may be truncated or have bytes appended)") from exc
    if not isinstance(index, list):
        raise MetadataError(f"{where}the index must be a CBOR array of tensor maps, got {type(index).__name__}")
    columns = _V01_FIELDS.columns(index, lambda i: describe(source.name, f"v0.1 index entry {i}", idx_start))
    offsets, shapes = columns[1], columns[4]
    # the usual index passes these tests at once, in C; else each entry is tested in turn, the first bad one named
    placed = (
        max(map(len, shapes), default=0) <= MAX_RANK
        and uints(list(itertools.chain.from_iterable(shapes)))
        and min(offsets, default=64) >= 64
        and not any(map((63).__and__, offsets))
    )
    entry = functools.partial(_v01_entry, source, placed)
    tensors = list(map(entry, itertools.count(), index, _V01_SUPPORTED.failures(index), zip(*columns, strict=True)))
    return Container("0.1", None, tensors, {}, 64, idx_start)


def _v01_entry(
    source: ByteSource, placed: bool, i: int, entry: dict[Any, Any], problem: str | None, values: tuple[Any, ...]
) -> TensorInfo:
    """One index entry from its checked field ``values`` (``_V01_FIELDS`` order), free-form keys kept as
    attributes. Unless the whole index is known ``placed`` well, its shape and offset are checked here."""
    name, offset, size, dtype, shape, encoding, layout, endianness, checksum = values
    if not placed:  # a shape of rank <= 64, an offset past the header on a 64-byte boundary
        check_shape(shape, describe(source.name, f"tensor {i} {name!r}"))
        if offset < 64 or offset % 64:
            reason = "lies in the header (blobs start at 64 or later)" if offset < 64 else "is not a multiple of 64"
            raise CorruptFileError(f"{describe(source.name, f'tensor {i} {name!r}', offset)}offset {offset} {reason}")
    big_endian = endianness == "big" and stores_values(encoding)
    part = Part(offset, size, LONG_DTYPE_NAMES.get(dtype, "u8"), encoding, None, checksum, False, big_endian)
    custom = {} if entry.keys() <= V01_KEYS else {k: x for k, x in entry.items() if k not in V01_KEYS}
    if custom:  # described only here: messages are built for the odd entry, not for thousands of plain ones
        where = describe(source.name, f"tensor {i} {name!r}")
        if not all(type(k) is str for k in custom):
            raise MetadataError(f"{where}index keys must be text")
        check_free_values(custom, where)
    return TensorInfo(
        i, name, dtype, tuple(shape), layout, encoding, part.digest, custom, {"data": part}, problem, endianness
    )


# -- v1 ---------------------------------------------------------------------------------------------
_V1_OFFSETS = "needs unsigned 'offset' and 'length'"
_V1_COMPONENT = Fields(
    Field("offset", is_uint, _V1_OFFSETS),
    Field("length", is_uint, _V1_OFFSETS),
    Field("uncompressed_length", maybe(is_uint), "'uncompressed_length' must be an unsigned integer, got {value!r}"),
    Field("digest", maybe(is_text), "'digest' must be text, got {value!r}"),
    Field("type", maybe(is_text), "'type' must be text, got {value!r}"),
)
_V1_SUPPORTED = Fields(Field("encoding", one_of(*V01_ENCODINGS), "has unsupported encoding {value!r}", "raw"))


class _Objects(NamedTuple):
    """How one generation (v1, v2) spells an object: its keys (layout, parts, attributes) and sparse layouts."""

    fields: Fields
    sparse: Mapping[str, tuple[str, ...]]
    #: an unknown layout of one raw part of exactly the dense size reads as dense (v1)
    fallback: bool


def _objects(layout: str, parts: str, sparse: Mapping[str, tuple[str, ...]], fallback: bool) -> _Objects:
    needs = f"needs a text {layout!r} and a non-empty map {parts!r}"
    fields = Fields(
        Field(layout, is_text, needs, "dense"),
        Field(parts, lambda v: isinstance(v, dict) and bool(v), needs),
        Field("attributes", map_or_empty, "'attributes' must be a map"),
    )
    return _Objects(fields, sparse, fallback)


#: the parts of each sparse layout, as v1 names it (v2: ``zt.<name>/1``)
_SPARSE_PARTS = {"sparse_csr": ("values", "indices", "indptr"), "sparse_coo": ("values", "coords")}
_V1 = _objects("format", "components", _SPARSE_PARTS, fallback=True)
_V2 = _objects("layout", "parts", {f"zt.{k}/1": v for k, v in _SPARSE_PARTS.items()}, fallback=False)


def _parse_v1(source: ByteSource) -> Container:
    size = source.size
    footer = 16 if source.read(size - 8, 8, what="footer magic") == MAGIC_V1 else 8
    raw, start = _index_bytes(source, footer, "CBOR manifest")
    where = describe(source.name, "v1 manifest", start)
    root = cbor.loads(raw, where=where)
    check_free_values(root, where)
    if isinstance(root, list):
        raise CorruptFileError(
            f"{describe(source.name, offset=0)}magic ZTEN1000 but the index is a v0.1-style array: wrong magic"
        )
    if not isinstance(root, dict):
        raise MetadataError(f"{where}the manifest must be a CBOR map, got {type(root).__name__}")
    dialect = root.get("version")
    if not isinstance(dialect, str):
        raise MetadataError(f"{where}manifest 'version' must be text, got {dialect!r}")
    legacy = "tensors" in root and "objects" not in root
    if footer == 8 and not legacy and dialect != "1.0":
        # 1.1/1.2 writers end the file with the magic again: without it the last 8 bytes were cut off
        raise TruncatedFileError(
            f"{describe(source.name, offset=size)}file truncated: a {dialect!r} manifest is followed by the footer "
            f"magic ZTEN1000, so the file needs {size + 8} bytes, this one has {size}"
        )
    objects = root.get("tensors" if legacy else "objects")
    if not isinstance(objects, dict):
        raise MetadataError(f"{where}manifest needs a map {'tensors' if legacy else 'objects'!r} of objects")
    attrs = _FILE_ATTRIBUTES.checked(root, where)["attributes"] or {}
    infos = [_v1_object(source, name, obj, legacy, where) for name, obj in objects.items()]
    return Container("1", dialect, _ordered(infos), dict(attrs), 64, start)


def _v1_object(source: ByteSource, name: Any, obj: Any, legacy: bool, mwhere: str) -> TensorInfo:
    if not isinstance(name, str) or not isinstance(obj, dict):
        raise MetadataError(f"{mwhere}object {name!r} must be a map under a text name")
    tensor_dtype = obj.get("dtype") if legacy else None
    read_part = functools.partial(_v1_component, tensor_dtype=tensor_dtype)
    return _tensor(source, name, obj, _V1, read_part, str(tensor_dtype) if legacy else None)


def _v1_component(cname: str, comp: Any, where: str, *, tensor_dtype: Any) -> tuple[str, Part, str | None]:
    """One component as a part, and what keeps it from being decoded (None: nothing)."""
    pwhere = f"{where}component {cname!r}: "
    v = _V1_COMPONENT.checked(comp, pwhere)
    spelled = comp.get("dtype", tensor_dtype if cname in ("data", "values") else "u64")
    short = LONG_DTYPE_NAMES.get(spelled, spelled) if isinstance(spelled, str) else ""
    known = short in STORAGE_DTYPES
    problem = (None if known else f"has unknown dtype {spelled!r}") or _V1_SUPPORTED.failure(comp)
    storage = short if known else "u8"
    encoding = comp.get("encoding", "raw")
    part = Part(v["offset"], v["length"], storage, encoding, v["uncompressed_length"], v["digest"], ltype=v["type"])
    return cname, part, problem and f"component {cname!r} {problem}"


def _layout_problem(layout: str, parts: Mapping[str, Part], gen: _Objects, shape: tuple[int, ...]) -> str | None:
    """What keeps ``parts`` from making a tensor of ``layout`` in generation ``gen``."""
    sparse = gen.sparse
    if layout == "dense":
        return None if "data" in parts else "dense layout without a 'data' part"
    if layout in sparse:
        missing = [p for p in sparse[layout] if p not in parts]
        return f"layout {layout!r} lacks part(s) {', '.join(missing)}" if missing else None
    lone = next(iter(parts.values()))
    dense = len(parts) == 1 and stores_values(lone.encoding) and lone.length == math.prod(shape) * lone.storage.itemsize
    return None if gen.fallback and dense else f"layout {layout!r} is not supported (known: dense, {', '.join(sparse)})"


def _ordered(infos: list[TensorInfo]) -> list[TensorInfo]:
    """Objects in blob (insertion) order, names breaking ties; indices renumbered."""
    infos = sorted(infos, key=lambda t: (min((p.offset for p in t.parts.values()), default=0), t.name.encode()))
    for i, t in enumerate(infos):
        t.index = i
    return infos


# -- v2 ---------------------------------------------------------------------------------------------
def _v2_manifest_bytes(source: ByteSource) -> tuple[bytes, int]:
    """The manifest the 40-byte footer points at, checked against the footer's xxh3, and its offset."""
    size = source.size
    if size < 48:
        raise TruncatedFileError(
            f"{describe(source.name)}file truncated: a v2 file needs at least 48 bytes, this one has {size}"
        )
    footer = source.read(size - 40, 40, what="v2 footer")
    m_off, m_len, m_hash, version, _reserved = struct.unpack("<QQQII", footer[:32])
    fwhere = describe(source.name, "v2 footer", size - 40)
    if footer[32:] != MAGIC_V2:
        raise TruncatedFileError(
            f"{fwhere}the file does not end with the v2 magic: it is truncated or its footer damaged "
            f"(last 8 of its {size} bytes: {bytes(footer[32:])!r})"
        )
    if version != 2:
        raise UnsupportedError(f"{fwhere}footer version {version} is not supported (expected 2)")
    if m_off == 0:
        raise UnsupportedError(f"{fwhere}this is a manifest-less data shard; open the file that references it")
    if m_off < 4096 or m_off % 4096 or m_off + m_len > size - 40:
        raise CorruptFileError(
            f"{fwhere}manifest [{m_off}, {m_off + m_len}) is not an aligned blob inside [4096, {size - 40})"
        )
    if m_len > MAX_MANIFEST:
        raise LimitExceededError(
            f"{fwhere}manifest length {m_len} exceeds the limit of {MAX_MANIFEST} bytes (MAX_MANIFEST)"
        )
    raw = source.read(m_off, m_len, what="v2 manifest")
    if xxh3_64(raw) != m_hash:
        raise IntegrityError(
            f"{describe(source.name, 'v2 manifest', m_off)}manifest xxh3 {xxh3_64(raw):016x} differs from the "
            f"footer's {m_hash:016x}"
        )
    return raw, m_off


def _parse_v2(source: ByteSource) -> Container:
    size = source.size
    raw, m_off = _v2_manifest_bytes(source)
    where = describe(source.name, "v2 manifest", m_off)
    root = cbor.loads(raw, where=where)
    mixed = check_free_values(root, where, V2_MAX_DEPTH)
    # cbor2's canonical form (streamed, memory ~ its output) equals RFC 8949 bytewise order unless a map mixes
    # key types; only then build the bytewise encoding, which costs a bytes object per item
    if (mixed or cbor.dumps(root, canonical=True) != raw) and cbor.dumps_canonical(root) != raw:
        raise MetadataError(f"{where}manifest is not deterministic CBOR (non-canonical encoding or duplicate keys)")
    if not isinstance(root, dict) or not isinstance(root.get("objects"), dict):
        raise MetadataError(f"{where}manifest must be a map with an 'objects' map")
    attrs = _FILE_ATTRIBUTES.checked(root, where)["attributes"] or {}
    shards = _v2_shards(source, root.get("shards"), where)
    infos = [_v2_object(source, name, obj, shards, where) for name, obj in root["objects"].items()]
    _check_disjoint(source, (m_off, len(raw)), infos)
    opened = {k: v for k, v in shards.items() if v is not None}
    return Container("2", None, _ordered(infos), dict(attrs), 4096, size - 40, opened)


def _check_disjoint(source: ByteSource, manifest: tuple[int, int], infos: list[TensorInfo]) -> None:
    """The manifest and the blobs of this file lie in [4096, size-40) and are identical or disjoint (spec 3.1)."""
    size = source.size
    blobs = [manifest, *((p.offset, p.length) for t in infos for p in t.parts.values() if p.shard is None)]
    spans = sorted({(o, n) for o, n in blobs if n})
    for o, n in spans:
        if o < 4096 or o + n > size - 40:
            raise CorruptFileError(
                f"{describe(source.name, 'v2 blob', o)}blob of {n} bytes lies outside [4096, {size - 40})"
            )
    for (o1, n1), (o2, n2) in itertools.pairwise(spans):
        if o2 < o1 + n1:
            raise CorruptFileError(
                f"{describe(source.name, 'v2 blob', o2)}blobs [{o1}, {o1 + n1}) and [{o2}, {o2 + n2}) overlap"
            )


def _v2_shards(source: ByteSource, table: Any, where: str) -> dict[str, ByteSource | None]:
    """Open shard files named in the manifest, only as plain names next to this file (of a non-local source:
    None, their parts unreadable)."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise MetadataError(f"{where}'shards' must be a map")
    out: dict[str, ByteSource | None] = {}
    for name, entry in table.items():
        if not isinstance(name, str) or not _SHARD_NAME.fullmatch(name):  # ASCII, 1..64, not "." or ".."
            raise MetadataError(
                f"{where}shard name {name!r} is not a plain file name ([A-Za-z0-9._-], not starting with '.')"
            )
        if not isinstance(entry, dict) or not is_uint(entry.get("size")):
            raise MetadataError(f"{where}shard {name!r} needs an unsigned 'size'")
        if not isinstance(source, LocalFileSource):
            out[name] = None
            continue
        directory = os.path.dirname(os.path.abspath(source.path))
        path = os.path.join(directory, name)
        # belt and braces after the name check; realpath: a symlink named like a shard must not lead elsewhere
        if os.path.dirname(os.path.realpath(path)) != os.path.realpath(directory):
            raise MetadataError(f"{where}shard {name!r} resolves outside {directory!r}")
        try:
            shard = LocalFileSource(path)
        except OSError as exc:
            raise CorruptFileError(f"{where}shard {name!r} cannot be opened: {exc}") from None
        if shard.size != entry["size"]:
            raise CorruptFileError(f"{where}shard {name!r} is {shard.size} bytes, the manifest says {entry['size']}")
        out[name] = shard
    return out


_V2_PRESENCE = "'decoded_length' must be present exactly when 'encoding' is"
_V2_DTYPES = tuple(d for d in STORAGE_DTYPES if d != "bool")
_DIGEST = re.compile(r"(xxh3:[0-9a-f]{16}|sha256:[0-9a-f]{64})")
_V2_PART = Fields(
    Field(
        "blob",
        lambda b: is_array(b) and len(b) == 2 and all(map(is_uint, b)),
        "'blob' must be [offset, length], got {value!r}",
    ),
    Field("dtype", lambda d: d in _V2_DTYPES, "dtype {value!r} is not a v2 storage dtype"),
    Field("decoded_length", maybe(is_uint), _V2_PRESENCE),
    Field(
        "digest",
        maybe(lambda d: is_text(d) and _DIGEST.fullmatch(d) is not None),
        "digest {value!r} is not xxh3:<16 hex> or sha256:<64 hex>",
    ),
    Field("shard", maybe(is_text), "shard {value!r} is not in the manifest's shard table"),
    Field("type", maybe(is_text), "'type' must be text"),
)
_V2_SUPPORTED = Fields(Field("encoding", one_of(None, SEEKABLE_ZSTD), "has unsupported encoding {value!r}"))


def _v2_object(
    source: ByteSource, name: Any, obj: Any, shards: Mapping[str, ByteSource | None], mwhere: str
) -> TensorInfo:
    if not isinstance(name, str) or not name or "\x00" in name or len(name.encode()) > 1024:
        raise MetadataError(f"{mwhere}object name {name!r} must be non-empty UTF-8 of at most 1024 bytes without NUL")
    if not isinstance(obj, dict):
        raise MetadataError(f"{describe(source.name, f'object {name!r}')}must be a map")
    return _tensor(source, name, obj, _V2, functools.partial(_v2_part, shards=shards))


def _v2_part(
    pname: str, p: Any, where: str, *, shards: Mapping[str, ByteSource | None]
) -> tuple[str, Part, str | None]:
    """One part, and what keeps it from being decoded (None: nothing)."""
    pwhere = f"{where}part {pname!r}: "
    v = _V2_PART.checked(p, pwhere)
    encoding, shard = p.get("encoding"), v["shard"]
    if (encoding is None) != (v["decoded_length"] is None):
        raise MetadataError(pwhere + _V2_PRESENCE)
    if shard is not None and shard not in shards:
        raise MetadataError(f"{pwhere}shard {shard!r} is not in the manifest's shard table")
    unreadable = shard is not None and shards[shard] is None
    problem = _V2_SUPPORTED.failure(p) or (
        f"lives in shard {shard!r}, which can only be opened next to a local file" if unreadable else None
    )
    offset, length = v["blob"]
    part = Part(
        offset, length, v["dtype"], encoding or "raw", v["decoded_length"], v["digest"], True, False, shard, v["type"]
    )
    return pname, part, problem and f"part {pname!r} {problem}"


def _tensor(
    source: ByteSource,
    name: str,
    obj: dict[Any, Any],
    gen: _Objects,
    read_part: Callable[[str, Any, str], tuple[str, Part, str | None]],
    dtype: str | None = None,
) -> TensorInfo:
    """A v1 or v2 object from its map, each part read by ``read_part(name, map, where)`` as (name, part,
    problem). Its main part names its encoding and digest, and its dtype unless ``dtype`` does."""
    where = describe(source.name, f"object {name!r}")
    shape = check_shape(obj.get("shape"), where)
    layout, found, attrs = gen.fields.checked(obj, where).values()
    read = [read_part(str(pname), p, where) for pname, p in found.items()]
    parts = {pname: part for pname, part, _ in read}
    problem = next((p for _, _, p in read if p), None) or _layout_problem(layout, parts, gen, shape)
    main = parts.get("data") or parts.get("values") or next(iter(parts.values()))
    if problem is None:
        try:
            logical_dtype(main.dtype, main.ltype)
        except UnsupportedError as exc:
            problem = str(exc)
    attrs = dict(attrs or {})
    return TensorInfo(0, name, dtype or main.dtype, shape, layout, main.encoding, main.digest, attrs, parts, problem)
