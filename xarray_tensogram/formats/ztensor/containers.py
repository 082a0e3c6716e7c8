"""Parsing the three zTensor containers (spec sections 1-4) into :class:`TensorInfo` lists.

Open reads the footer and the index/manifest only. Checks that concern the
whole file (magic, index length, CBOR, required keys, offset alignment) fail
the open; checks that concern one tensor's bytes (bounds, sizes, unknown dtype,
encoding or layout) are deferred to reading that tensor, so one odd tensor does
not hide the others.
"""

from __future__ import annotations

import itertools
import math
import operator
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
from .model import (
    LONG_DTYPE_NAMES,
    MAX_RANK,
    STORAGE_DTYPES,
    Part,
    TensorInfo,
    check_free_values,
    check_shape,
    decode_cbor,
    logical_dtype,
)

__all__ = ["MAGIC_V01", "MAGIC_V1", "MAGIC_V2", "Container", "detect_version", "parse_container"]

MAGIC_V01 = b"ZTEN0001"
MAGIC_V1 = b"ZTEN1000"
MAGIC_V2 = b"\x89ZT2\r\n\x1a\n"
MAX_MANIFEST = 1 << 30
V2_MAX_DEPTH = 32
_SHARD_NAME = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,63}")
_MISSING: Any = object()
_call: Callable[[Callable[[Any], bool], Any], bool] = getattr(operator, "call", lambda test, value: test(value))


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


def detect_version(head: bytes) -> str | None:
    return {MAGIC_V01: "0.1", MAGIC_V1: "1", MAGIC_V2: "2"}.get(bytes(head[:8]))


def parse_container(source: ByteSource) -> Container:
    """Read the footer and index of ``source`` and describe its tensors."""
    if source.size < 16:
        raise TruncatedFileError(
            f"{describe(source.name)}file truncated: a zTensor file needs at least 16 bytes, this one has {source.size}"
        )
    head = source.read(0, 8, what="magic")
    version = detect_version(head)
    if version == "0.1":
        return _parse_v01(source)
    if version == "1":
        return _parse_v1(source)
    if version == "2":
        return _parse_v2(source)
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


def _is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


#: tests run in C (``isinstance`` and tuple membership): large indexes are checked key by key
_is_text: Callable[[Any], bool] = str.__instancecheck__
_is_array: Callable[[Any], bool] = list.__instancecheck__


def _maybe(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``test``, or the key absent (None)."""
    return lambda v: v is None or test(v)


def _one_of(*values: Any) -> Callable[[Any], bool]:
    return values.__contains__


def _map_or_empty(v: Any) -> bool:
    """``attributes``: a map, or anything false (read as no attributes)."""
    return isinstance(v or {}, dict)


class _Field(NamedTuple):
    """One key of an index or manifest map: the test its value must pass, and what to say when it does not."""

    key: str
    ok: Callable[[Any], bool]
    message: str  #: formatted with ``key`` and ``value``
    default: Any = None  #: ``_MISSING``: the key is required


class _Fields:
    """The keys one container generation declares for one kind of map, and the one path that checks them.

    :meth:`checked` fails the open; :meth:`failure` gives a tensor's deferred problem. The happy path runs
    the tests in C (``map``); messages are built only on failure, which keeps large indexes fast to open.
    """

    def __init__(self, *fields: _Field) -> None:
        self.fields = fields
        self.keys = tuple(f.key for f in fields)
        self.defaults = tuple(f.default for f in fields)
        self.tests = tuple(f.ok for f in fields)

    def read(self, entry: Mapping[Any, Any]) -> tuple[dict[str, Any], str | None]:
        """The values of the fields in ``entry`` (their defaults when absent), and the message of the first
        that fails its test (None: all pass)."""
        values = list(map(entry.get, self.keys, self.defaults))
        return dict(zip(self.keys, values, strict=True)), self._message(values)

    def failure(self, entry: Mapping[Any, Any]) -> str | None:
        """The message of the first field whose value in ``entry`` fails its test, else None."""
        return self.read(entry)[1]

    def checked(self, entry: Mapping[Any, Any], where: str) -> dict[str, Any]:
        """The values of the fields in ``entry`` (their defaults when absent); MetadataError for the first bad one."""
        values, message = self.read(entry)
        if message is not None:
            raise MetadataError(where + message)
        return values

    def _message(self, values: list[Any]) -> str | None:
        if all(map(_call, self.tests, values)):
            return None
        key, value, message = next(
            (f.key, v, f.message) for f, v in zip(self.fields, values, strict=True) if not f.ok(v)
        )
        return (message if value is not _MISSING else "required key {key!r} is missing").format(key=key, value=value)


_FILE_ATTRIBUTES = _Fields(_Field("attributes", _map_or_empty, "file 'attributes' must be a map"))


# -- v0.1 -------------------------------------------------------------------------------------------
_V01_TEXT = "key {key!r} must be text, got {value!r}"
_V01_UINT = "key {key!r} must be an unsigned integer, got {value!r}"
_V01_FIELDS = _Fields(
    _Field("name", _is_text, _V01_TEXT, _MISSING),
    _Field("offset", _is_uint, _V01_UINT, _MISSING),
    _Field("size", _is_uint, _V01_UINT, _MISSING),
    _Field("dtype", _is_text, _V01_TEXT, _MISSING),
    _Field("shape", _is_array, "key {key!r} must be an array, got {value!r}", _MISSING),
    _Field("encoding", _is_text, _V01_TEXT, _MISSING),
    _Field("layout", _is_text, _V01_TEXT, "dense"),
    _Field("data_endianness", _one_of(None, "little", "big"), "key {key!r} must be 'little' or 'big', got {value!r}"),
    _Field("checksum", _maybe(_is_text), _V01_TEXT),
)
#: what a v0.1 tensor may hold and this reader cannot decode: a problem deferred to reading it
_V01_LAYOUTS = ("dense", "sparsecoo", "sparsecsr")
_V01_SUPPORTED = _Fields(
    *(
        _Field(key, _one_of(*known), f"{key} {{value!r}} is not supported (v0.1 knows {', '.join(known)})")
        for key, known in (("dtype", LONG_DTYPE_NAMES), ("encoding", V01_ENCODINGS), ("layout", _V01_LAYOUTS))
    )
)
_V01_STANDARD = frozenset(_V01_FIELDS.keys)


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
        index = decode_cbor(raw, where)
    except MetadataError as exc:
        # v0.1 has no footer magic: a cut file or appended bytes show up as an index that does not decode
        raise type(exc)(f"{exc} (the {source.size}-byte file may be truncated or have bytes appended)") from exc
    if not isinstance(index, list):
        raise MetadataError(f"{where}the index must be a CBOR array of tensor maps, got {type(index).__name__}")
    tensors = [_v01_entry(source, i, e, idx_start) for i, e in enumerate(index)]
    return Container("0.1", None, tensors, {}, 64, idx_start)


def _v01_entry(source: ByteSource, i: int, entry: Any, idx_start: int) -> TensorInfo:
    """One index entry, free-form keys kept as attributes; messages are built only on failure (large indexes)."""
    v, message = _V01_FIELDS.read(entry) if type(entry) is dict else ({}, "expected a map with text keys")
    if message is not None:
        raise MetadataError(describe(source.name, f"v0.1 index entry {i}", idx_start) + message)
    name, offset, encoding, endianness, shape = v["name"], v["offset"], v["encoding"], v["data_endianness"], v["shape"]
    if len(shape) > MAX_RANK or not all(map(_is_uint, shape)):
        check_shape(shape, describe(source.name, f"tensor {i} {name!r}"))
    if offset < 64 or offset % 64:
        reason = "lies in the header (blobs start at 64 or later)" if offset < 64 else "is not a multiple of 64"
        raise CorruptFileError(f"{describe(source.name, f'tensor {i} {name!r}', offset)}offset {offset} {reason}")
    big_endian = endianness == "big" and stores_values(encoding)
    part = Part(
        offset, v["size"], LONG_DTYPE_NAMES.get(v["dtype"], "u8"), encoding, None, v["checksum"], False, big_endian
    )
    custom = {} if entry.keys() <= _V01_STANDARD else {k: x for k, x in entry.items() if k not in _V01_STANDARD}
    if custom and not all(type(k) is str for k in custom):
        raise MetadataError(f"{describe(source.name, f'tensor {i} {name!r}')}index keys must be text")
    if custom:
        check_free_values(custom, describe(source.name, f"tensor {i} {name!r}"))
    problem, dtype, layout = _V01_SUPPORTED.failure(v), v["dtype"], v["layout"]
    return TensorInfo(
        i, name, dtype, tuple(shape), layout, encoding, part.digest, custom, {"data": part}, None, problem, endianness
    )


# -- v1 ---------------------------------------------------------------------------------------------
_V1_NEEDS = "needs a text 'format' and a non-empty map 'components'"
_V1_OBJECT = _Fields(
    _Field("format", _is_text, _V1_NEEDS, "dense"),
    _Field("components", lambda v: isinstance(v, dict) and bool(v), _V1_NEEDS),
    _Field("attributes", _map_or_empty, "'attributes' must be a map"),
)
_V1_OFFSETS = "needs unsigned 'offset' and 'length'"
_V1_COMPONENT = _Fields(
    _Field("offset", _is_uint, _V1_OFFSETS),
    _Field("length", _is_uint, _V1_OFFSETS),
    _Field("uncompressed_length", _maybe(_is_uint), "'uncompressed_length' must be an unsigned integer, got {value!r}"),
    _Field("digest", _maybe(_is_text), "'digest' must be text, got {value!r}"),
    _Field("type", _maybe(_is_text), "'type' must be text, got {value!r}"),
)
_V1_SUPPORTED = _Fields(_Field("encoding", _one_of(*V01_ENCODINGS), "has unsupported encoding {value!r}", "raw"))
_V1_SPARSE = {"sparse_csr": ("values", "indices", "indptr"), "sparse_coo": ("values", "coords")}


def _parse_v1(source: ByteSource) -> Container:
    size = source.size
    footer = 16 if source.read(size - 8, 8, what="footer magic") == MAGIC_V1 else 8
    raw, start = _index_bytes(source, footer, "CBOR manifest")
    where = describe(source.name, "v1 manifest", start)
    root = decode_cbor(raw, where)
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
    where = describe(source.name, f"object {name!r}")
    shape = check_shape(obj.get("shape"), where)
    v = _V1_OBJECT.checked(obj, where)
    tensor_dtype = obj.get("dtype") if legacy else None
    read = [_v1_component(str(cname), comp, where, tensor_dtype) for cname, comp in v["components"].items()]
    dtype = str(tensor_dtype) if legacy else None
    return _tensor(name, dtype, shape, v["format"], read, v["attributes"], _V1_SPARSE, fallback=True)


def _v1_component(cname: str, comp: Any, where: str, tensor_dtype: Any) -> tuple[str, Part, str | None]:
    """One component as a part, and what keeps it from being decoded (None: nothing)."""
    pwhere = f"{where}component {cname!r}: "
    if not isinstance(comp, dict):
        raise MetadataError(pwhere + _V1_OFFSETS)
    v = _V1_COMPONENT.checked(comp, pwhere)
    spelled = comp.get("dtype", tensor_dtype if cname in ("data", "values") else "u64")
    short = LONG_DTYPE_NAMES.get(spelled, spelled) if isinstance(spelled, str) else ""
    known = short in STORAGE_DTYPES
    problem = (None if known else f"has unknown dtype {spelled!r}") or _V1_SUPPORTED.failure(comp)
    storage = short if known else "u8"
    encoding = comp.get("encoding", "raw")
    part = Part(v["offset"], v["length"], storage, encoding, v["uncompressed_length"], v["digest"], ltype=v["type"])
    return cname, part, problem and f"component {cname!r} {problem}"


def _layout_problem(
    layout: str,
    parts: Mapping[str, Part],
    sparse: Mapping[str, tuple[str, ...]],
    shape: tuple[int, ...],
    fallback: bool,
) -> str | None:
    """What keeps ``parts`` from making a tensor of ``layout``. With ``fallback`` (v1), an unknown layout made
    of one raw part of exactly the dense size reads as dense."""
    if layout == "dense":
        return None if "data" in parts else "dense layout without a 'data' part"
    if layout in sparse:
        missing = [p for p in sparse[layout] if p not in parts]
        return f"layout {layout!r} lacks part(s) {', '.join(missing)}" if missing else None
    lone = next(iter(parts.values()))
    if (
        fallback
        and len(parts) == 1
        and stores_values(lone.encoding)
        and lone.length == math.prod(shape) * lone.storage.itemsize
    ):
        return None
    return f"layout {layout!r} is not supported (known: dense, {', '.join(sparse)})"


def _dtype_problem(part: Part) -> str | None:
    try:
        logical_dtype(part.dtype, part.ltype)
    except UnsupportedError as exc:
        return str(exc)
    return None


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
    root = decode_cbor(raw, where)
    check_free_values(root, where, V2_MAX_DEPTH)
    # cbor2's canonical form (streamed, memory ~ its output) equals RFC 8949 bytewise order unless a map mixes
    # key types; only then build the bytewise encoding, which costs a bytes object per item
    if (cbor.dumps(root, canonical=True) != raw or _mixed_keys(root)) and cbor.dumps_canonical(root) != raw:
        raise MetadataError(f"{where}manifest is not deterministic CBOR (non-canonical encoding or duplicate keys)")
    if not isinstance(root, dict) or not isinstance(root.get("objects"), dict):
        raise MetadataError(f"{where}manifest must be a map with an 'objects' map")
    attrs = _FILE_ATTRIBUTES.checked(root, where)["attributes"] or {}
    shards = _v2_shards(source, root.get("shards"), where)
    infos = [_v2_object(source, name, obj, shards, where) for name, obj in root["objects"].items()]
    _check_disjoint(
        source,
        [(m_off, len(raw))] + [(p.offset, p.length) for t in infos for p in t.parts.values() if p.shard is None],
        size,
    )
    opened = {k: v for k, v in shards.items() if v is not None}
    return Container("2", None, _ordered(infos), dict(attrs), 4096, size - 40, opened)


def _mixed_keys(obj: Any) -> bool:
    """Whether some map in ``obj`` has keys of different CBOR major types (e.g. text and integers)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if len({(type(k), type(k) is int and k < 0) for k in item}) > 1:  # negative ints: major type 1
                return True
            stack.extend(v for v in item.values() if type(v) in (dict, list))
        elif type(item) is list:
            stack.extend(v for v in item if type(v) in (dict, list))
    return False


def _check_disjoint(source: ByteSource, blobs: list[tuple[int, int]], size: int) -> None:
    """Blobs lie in [4096, size-40) and are identical or disjoint (spec 3.1)."""
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
    """Open shard files named in the manifest, only as plain names next to this file.

    Shards of a non-local source map to None: their parts become unreadable.
    """
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise MetadataError(f"{where}'shards' must be a map")
    out: dict[str, ByteSource | None] = {}
    for name, entry in table.items():
        if (
            not isinstance(name, str)
            or len(name.encode()) > 64
            or not _SHARD_NAME.fullmatch(name)
            or name in (".", "..")
        ):
            raise MetadataError(
                f"{where}shard name {name!r} is not a plain file name ([A-Za-z0-9._-], not starting with '.')"
            )
        if not isinstance(entry, dict) or not _is_uint(entry.get("size")):
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


_V2_SPARSE = {"zt.sparse_csr/1": ("values", "indices", "indptr"), "zt.sparse_coo/1": ("values", "coords")}
_V2_NEEDS = "needs a text 'layout' and a non-empty map 'parts'"
_V2_OBJECT = _Fields(
    _Field("layout", _is_text, _V2_NEEDS, "dense"),
    _Field("parts", lambda v: isinstance(v, dict) and bool(v), _V2_NEEDS),
    _Field("attributes", _map_or_empty, "'attributes' must be a map"),
)
_V2_PRESENCE = "'decoded_length' must be present exactly when 'encoding' is"
_V2_DTYPES = tuple(d for d in STORAGE_DTYPES if d != "bool")
_DIGEST = re.compile(r"(xxh3:[0-9a-f]{16}|sha256:[0-9a-f]{64})")
_V2_PART = _Fields(
    _Field(
        "blob",
        lambda b: _is_array(b) and len(b) == 2 and all(map(_is_uint, b)),
        "'blob' must be [offset, length], got {value!r}",
    ),
    _Field("dtype", lambda d: d in _V2_DTYPES, "dtype {value!r} is not a v2 storage dtype"),
    _Field("decoded_length", _maybe(_is_uint), _V2_PRESENCE),
    _Field(
        "digest",
        _maybe(lambda d: _is_text(d) and _DIGEST.fullmatch(d) is not None),
        "digest {value!r} is not xxh3:<16 hex> or sha256:<64 hex>",
    ),
    _Field("shard", _maybe(_is_text), "shard {value!r} is not in the manifest's shard table"),
    _Field("type", _maybe(_is_text), "'type' must be text"),
)
_V2_SUPPORTED = _Fields(_Field("encoding", _one_of(None, SEEKABLE_ZSTD), "has unsupported encoding {value!r}"))


def _v2_object(
    source: ByteSource, name: Any, obj: Any, shards: Mapping[str, ByteSource | None], mwhere: str
) -> TensorInfo:
    if not isinstance(name, str) or not name or "\x00" in name or len(name.encode()) > 1024:
        raise MetadataError(f"{mwhere}object name {name!r} must be non-empty UTF-8 of at most 1024 bytes without NUL")
    where = describe(source.name, f"object {name!r}")
    if not isinstance(obj, dict):
        raise MetadataError(f"{where}must be a map")
    shape = check_shape(obj.get("shape"), where)
    v = _V2_OBJECT.checked(obj, where)
    read = [_v2_part(str(pname), p, where, shards) for pname, p in v["parts"].items()]
    return _tensor(name, None, shape, v["layout"], read, v["attributes"], _V2_SPARSE, fallback=False)


def _v2_part(pname: str, p: Any, where: str, shards: Mapping[str, ByteSource | None]) -> tuple[str, Part, str | None]:
    """One part, and what keeps it from being decoded (None: nothing)."""
    pwhere = f"{where}part {pname!r}: "
    if not isinstance(p, dict):
        raise MetadataError(f"{pwhere}must be a map")
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
    name: str,
    dtype: str | None,
    shape: tuple[int, ...],
    layout: str,
    read: list[tuple[str, Part, str | None]],
    attrs: Any,
    sparse: Mapping[str, tuple[str, ...]],
    fallback: bool,
) -> TensorInfo:
    """A v1 or v2 object from its parts as read (name, part, problem). Its main part names its encoding and
    digest, and its dtype unless ``dtype`` does."""
    parts = {pname: part for pname, part, _ in read}
    problem = next((p for _, _, p in read if p), None) or _layout_problem(layout, parts, sparse, shape, fallback)
    main = parts.get("data") or parts.get("values") or next(iter(parts.values()))
    problem, dtype = problem or _dtype_problem(main), dtype or main.dtype
    return TensorInfo(
        0, name, dtype, shape, layout, main.encoding, main.digest, dict(attrs or {}), parts, main.ltype, problem
    )
