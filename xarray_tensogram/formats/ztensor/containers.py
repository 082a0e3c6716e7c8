"""Parsing the three zTensor containers (spec sections 1-4) into :class:`TensorInfo` lists.

Open reads the footer and the index/manifest only. Checks that concern the
whole file (magic, index length, CBOR, required keys, offset alignment) fail
the open; checks that concern one tensor's bytes (bounds, sizes, unknown dtype,
encoding or layout) are deferred to reading that tensor, so one odd tensor does
not hide the others.
"""

from __future__ import annotations

import itertools
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
from .compression import V01_ENCODINGS
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
_V01_REQUIRED: dict[str, type] = {"name": str, "offset": int, "size": int, "dtype": str, "shape": list, "encoding": str}
_V01_STANDARD = frozenset(
    {"name", "offset", "size", "dtype", "layout", "shape", "encoding", "data_endianness", "checksum"}
)
_V01_LAYOUTS = ("dense", "sparsecoo", "sparsecsr")


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


def _u64(data: bytes) -> int:
    value: int = struct.unpack("<Q", data)[0]
    return value


def _index_bytes(source: ByteSource, footer: int, what: str) -> tuple[bytes, int]:
    """The CBOR blob followed by ``footer`` trailing bytes, the first 8 of which are its u64 LE length."""
    size = source.size
    length = _u64(source.read(size - footer, 8, what=f"{what} length"))
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


# -- v0.1 -------------------------------------------------------------------------------------------
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
    """One index entry. The happy path does a handful of type tests; messages are built only on failure."""
    if type(entry) is not dict:
        raise MetadataError(f"{describe(source.name, f'v0.1 index entry {i}', idx_start)}expected a map with text keys")
    try:
        name, offset, size = entry["name"], entry["offset"], entry["size"]
        dtype, shape, encoding = entry["dtype"], entry["shape"], entry["encoding"]
    except KeyError as exc:
        raise MetadataError(
            f"{describe(source.name, f'v0.1 index entry {i}', idx_start)}required key {exc.args[0]!r} is missing"
        ) from None
    if not (
        type(name) is str
        and type(offset) is int
        and type(size) is int
        and type(dtype) is str
        and type(shape) is list
        and type(encoding) is str
        and offset >= 0
        and size >= 0
    ):
        _v01_type_error(source, i, entry, idx_start)
    if len(shape) > MAX_RANK or not all(type(s) is int and s >= 0 for s in shape):
        check_shape(shape, describe(source.name, f"tensor {i} {name!r}"))
    if offset < 64 or offset % 64:
        reason = "lies in the header (blobs start at 64 or later)" if offset < 64 else "is not a multiple of 64"
        raise CorruptFileError(f"{describe(source.name, f'tensor {i} {name!r}', offset)}offset {offset} {reason}")
    layout = entry.get("layout", "dense")
    endianness = entry.get("data_endianness")
    checksum = entry.get("checksum")
    if (
        type(layout) is not str
        or endianness not in (None, "little", "big")
        or not (checksum is None or type(checksum) is str)
    ):
        raise MetadataError(
            f"{describe(source.name, f'tensor {i} {name!r}')}layout and checksum must be text and data_endianness "
            f"'little' or 'big'; got {layout!r}, {checksum!r}, {endianness!r}"
        )
    problem = None
    if dtype not in LONG_DTYPE_NAMES:
        problem = f"dtype {dtype!r} is not a v0.1 dtype ({', '.join(LONG_DTYPE_NAMES)})"
    elif encoding not in V01_ENCODINGS:
        problem = f"encoding {encoding!r} is not supported (v0.1 knows {' and '.join(V01_ENCODINGS)})"
    elif layout not in _V01_LAYOUTS:
        problem = f"layout {layout!r} is not supported (v0.1 knows dense, sparsecoo and sparsecsr)"
    part = Part(
        offset,
        size,
        LONG_DTYPE_NAMES.get(dtype, "u8"),
        encoding,
        digest=checksum,
        big_endian=(endianness == "big" and encoding == "raw"),
    )
    custom = {} if entry.keys() <= _V01_STANDARD else {k: v for k, v in entry.items() if k not in _V01_STANDARD}
    if custom:
        if not all(type(k) is str for k in custom):
            raise MetadataError(f"{describe(source.name, f'tensor {i} {name!r}')}index keys must be text")
        check_free_values(custom, describe(source.name, f"tensor {i} {name!r}"))
    return TensorInfo(
        i,
        name,
        dtype,
        tuple(shape),
        layout,
        encoding,
        checksum,
        custom,
        {"data": part},
        problem=problem,
        data_endianness=endianness,
    )


def _v01_type_error(source: ByteSource, i: int, entry: dict[str, Any], idx_start: int) -> None:
    where = describe(source.name, f"v0.1 index entry {i}", idx_start)
    for key, typ in _V01_REQUIRED.items():
        value = entry[key]
        if type(value) is not typ or (typ is int and isinstance(value, int) and value < 0):
            raise MetadataError(
                f"{where}key {key!r} must be {'an unsigned integer' if typ is int else typ.__name__}, got {value!r}"
            )


# -- v1 ---------------------------------------------------------------------------------------------
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
    attrs = root.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise MetadataError(f"{where}file 'attributes' must be a map")
    infos = [_v1_object(source, name, obj, legacy, where) for name, obj in objects.items()]
    return Container("1", dialect, _ordered(infos), dict(attrs), 64, start)


def _v1_object(source: ByteSource, name: Any, obj: Any, legacy: bool, mwhere: str) -> TensorInfo:
    if not isinstance(name, str) or not isinstance(obj, dict):
        raise MetadataError(f"{mwhere}object {name!r} must be a map under a text name")
    where = describe(source.name, f"object {name!r}")
    shape = check_shape(obj.get("shape"), where)
    fmt = obj.get("format", "dense")
    components = obj.get("components")
    if not isinstance(fmt, str) or not isinstance(components, dict) or not components:
        raise MetadataError(f"{where}needs a text 'format' and a non-empty map 'components'")
    tensor_dtype = obj.get("dtype") if legacy else None
    parts: dict[str, Part] = {}
    problem = None
    for cname, comp in components.items():
        if not isinstance(comp, dict) or not _is_uint(comp.get("offset")) or not _is_uint(comp.get("length")):
            raise MetadataError(f"{where}component {cname!r} needs unsigned 'offset' and 'length'")
        spelled = comp.get("dtype", tensor_dtype if cname in ("data", "values") else "u64")
        short = LONG_DTYPE_NAMES.get(spelled, spelled) if isinstance(spelled, str) else None
        if short not in STORAGE_DTYPES:
            problem = problem or f"component {cname!r} has unknown dtype {spelled!r}"
            short = "u8"
        encoding = comp.get("encoding", "raw")
        if encoding not in V01_ENCODINGS:
            problem = problem or f"component {cname!r} has unsupported encoding {encoding!r}"
        ulen = comp.get("uncompressed_length")
        digest = comp.get("digest")
        if (ulen is not None and not _is_uint(ulen)) or (digest is not None and not isinstance(digest, str)):
            raise MetadataError(f"{where}component {cname!r}: bad 'uncompressed_length' or 'digest'")
        ltype = comp.get("type")
        if ltype is not None and not isinstance(ltype, str):
            raise MetadataError(f"{where}component {cname!r}: 'type' must be text, got {ltype!r}")
        parts[str(cname)] = Part(comp["offset"], comp["length"], short, encoding, ulen, digest, ltype=ltype)
    problem = problem or _layout_problem(
        fmt, parts, {"sparse_csr": ("values", "indices", "indptr"), "sparse_coo": ("values", "coords")}
    )
    if problem is None and fmt not in ("dense", "sparse_csr", "sparse_coo"):
        problem = _single_part_fallback(fmt, parts, shape)
    main = parts.get("data") or parts.get("values") or next(iter(parts.values()))
    if problem is None:
        problem = _dtype_problem(main)
    attrs = obj.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise MetadataError(f"{where}'attributes' must be a map")
    spelled = tensor_dtype if legacy else main.dtype
    return TensorInfo(
        0,
        name,
        str(spelled),
        shape,
        fmt,
        main.encoding,
        main.digest,
        attrs,
        parts,
        logical_type=main.ltype,
        problem=problem,
    )


def _layout_problem(layout: str, parts: Mapping[str, Part], needed: Mapping[str, tuple[str, ...]]) -> str | None:
    if layout == "dense" and "data" not in parts:
        return "dense layout without a 'data' part"
    missing = [p for p in needed.get(layout, ()) if p not in parts]
    return f"layout {layout!r} lacks part(s) {', '.join(missing)}" if missing else None


def _single_part_fallback(fmt: str, parts: Mapping[str, Part], shape: tuple[int, ...]) -> str | None:
    """Unknown v1 formats: expose a lone raw component when it has exactly the dense size."""
    if len(parts) == 1:
        part = next(iter(parts.values()))
        count = 1
        for s in shape:
            count *= s
        if part.encoding == "raw" and part.length == count * part.storage.itemsize:
            return None
    return f"format {fmt!r} is not supported (known: dense, sparse_csr, sparse_coo)"


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
def _parse_v2(source: ByteSource) -> Container:
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
    where = describe(source.name, "v2 manifest", m_off)
    if xxh3_64(raw) != m_hash:
        raise IntegrityError(f"{where}manifest xxh3 {xxh3_64(raw):016x} differs from the footer's {m_hash:016x}")
    root = decode_cbor(raw, where)
    check_free_values(root, where, V2_MAX_DEPTH)
    # cbor2's canonical form (streamed, memory ~ its output) equals RFC 8949 bytewise order unless a map mixes
    # key types; only then build the bytewise encoding, which costs a bytes object per item
    if (cbor.dumps(root, canonical=True) != raw or _mixed_keys(root)) and cbor.dumps_canonical(root) != raw:
        raise MetadataError(f"{where}manifest is not deterministic CBOR (non-canonical encoding or duplicate keys)")
    if not isinstance(root, dict) or not isinstance(root.get("objects"), dict):
        raise MetadataError(f"{where}manifest must be a map with an 'objects' map")
    attrs = root.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise MetadataError(f"{where}file 'attributes' must be a map")
    shards = _v2_shards(source, root.get("shards"), where)
    infos = [_v2_object(source, name, obj, shards, where) for name, obj in root["objects"].items()]
    _check_disjoint(
        source,
        [(m_off, m_len)] + [(p.offset, p.length) for t in infos for p in t.parts.values() if p.shard is None],
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


_V2_LAYOUTS = {"zt.sparse_csr/1": ("values", "indices", "indptr"), "zt.sparse_coo/1": ("values", "coords")}


def _v2_object(
    source: ByteSource, name: Any, obj: Any, shards: Mapping[str, ByteSource | None], mwhere: str
) -> TensorInfo:
    if not isinstance(name, str) or not name or "\x00" in name or len(name.encode()) > 1024:
        raise MetadataError(f"{mwhere}object name {name!r} must be non-empty UTF-8 of at most 1024 bytes without NUL")
    where = describe(source.name, f"object {name!r}")
    if not isinstance(obj, dict):
        raise MetadataError(f"{where}must be a map")
    shape = check_shape(obj.get("shape"), where)
    layout = obj.get("layout", "dense")
    parts_in = obj.get("parts")
    if not isinstance(layout, str) or not isinstance(parts_in, dict) or not parts_in:
        raise MetadataError(f"{where}needs a text 'layout' and a non-empty map 'parts'")
    parts: dict[str, Part] = {}
    problem = None
    for pname, p in parts_in.items():
        pwhere = f"{where}part {pname!r}: "
        if not isinstance(p, dict):
            raise MetadataError(f"{pwhere}must be a map")
        blob = p.get("blob")
        if not (isinstance(blob, list) and len(blob) == 2 and all(_is_uint(b) for b in blob)):
            raise MetadataError(f"{pwhere}'blob' must be [offset, length], got {blob!r}")
        dtype = p.get("dtype")
        if not isinstance(dtype, str) or dtype not in STORAGE_DTYPES or dtype == "bool":
            raise MetadataError(f"{pwhere}dtype {dtype!r} is not a v2 storage dtype")
        encoding = p.get("encoding")
        dlen = p.get("decoded_length")
        if (encoding is None) != (dlen is None) or (dlen is not None and not _is_uint(dlen)):
            raise MetadataError(f"{pwhere}'decoded_length' must be present exactly when 'encoding' is")
        if encoding is not None and encoding != "zt.zstd-seekable/1":
            problem = problem or f"part {pname!r} has unsupported encoding {encoding!r}"
        digest = p.get("digest")
        if digest is not None and (
            not isinstance(digest, str) or not re.fullmatch(r"(xxh3:[0-9a-f]{16}|sha256:[0-9a-f]{64})", digest)
        ):
            raise MetadataError(f"{pwhere}digest {digest!r} is not xxh3:<16 hex> or sha256:<64 hex>")
        shard = p.get("shard")
        if shard is not None:
            if not isinstance(shard, str) or shard not in shards:
                raise MetadataError(f"{pwhere}shard {shard!r} is not in the manifest's shard table")
            if shards[shard] is None:
                problem = (
                    problem or f"part {pname!r} lives in shard {shard!r}, which can only be opened next to a local file"
                )
        ltype = p.get("type")
        if ltype is not None and not isinstance(ltype, str):
            raise MetadataError(f"{pwhere}'type' must be text")
        parts[str(pname)] = Part(
            blob[0], blob[1], dtype, encoding or "raw", dlen, digest, True, shard=shard, ltype=ltype
        )
    problem = problem or _layout_problem(layout, parts, _V2_LAYOUTS)
    if problem is None and layout != "dense" and layout not in _V2_LAYOUTS:
        problem = f"layout profile {layout!r} is not supported (known: dense, {', '.join(_V2_LAYOUTS)})"
    main = parts.get("data") or parts.get("values") or next(iter(parts.values()))
    problem = problem or _dtype_problem(main)
    attrs = obj.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise MetadataError(f"{where}'attributes' must be a map")
    return TensorInfo(
        0,
        name,
        main.dtype,
        shape,
        layout,
        main.encoding,
        main.digest,
        attrs,
        parts,
        logical_type=main.ltype,
        problem=problem,
    )
