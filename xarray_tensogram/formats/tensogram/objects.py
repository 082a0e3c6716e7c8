"""Tensogram object reading: data frame layout, lazy per-object readers and the message view.

Descriptors are read on first use and cached; an object's payload is read only when its values
are asked for, and for uncompressed pipelines only the byte range of the requested rows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...array_spec import ArraySpec
from ...byte_layout import ByteLayout
from ...codecs import cbor
from ...codecs.chain import Chain
from ...codecs.checksums import xxh3_64
from ...errors import (
    CorruptFileError,
    IntegrityError,
    LimitExceededError,
    MetadataError,
    MissingHashError,
    XarrayTensogramError,
    describe,
)
from ...io import ByteSource, RangeColumns
from .._chunks import read_row_band
from . import pipeline
from .compression import STAGES, chain_of
from .dtypes import DTYPES, numpy_dtype
from .encode import encoding_from_descriptor
from .framing import (
    DATA_FRAME,
    FLAG_CBOR_AFTER_PAYLOAD,
    FLAG_HASH_PRESENT,
    FRAME_END,
    FRAME_HEADER,
    FRAME_START,
    Preamble,
    parse_frame_header,
)
from .metadata import message_metadata
from .zarr_layout import object_layout


@dataclass(slots=True)  # one per object of an archive: no per-instance dict
class ObjectRef:
    """Where one data object lives: its data frame (absolute offset, length) and any preceder entry."""

    frame_offset: int
    frame_length: int
    preceder: dict[str, Any] | None = None


@dataclass
class FrameLayout:
    """What a data frame's header, footer and descriptor say (read once, then cached)."""

    descriptor: dict[str, Any]
    region_start: int  # absolute offset of the payload region
    region_length: int
    hash_present: bool

    @functools.cached_property
    def chain(self) -> Chain:
        """The descriptor's codec chain, worked out once per object."""
        return chain_of(self.descriptor)


def _where(msg_index: int, obj: int | None = None) -> str:
    return f"message {msg_index}" + (f", object {obj}" if obj is not None else "")


def read_frame_layout(
    source: ByteSource, ref: ObjectRef, where: str, frame_bytes: bytes | np.ndarray | None = None
) -> FrameLayout:
    """Read a data frame's header and footer and parse its descriptor."""
    off, length = ref.frame_offset, ref.frame_length

    def at(offset: int) -> str:
        """The place an error names: the file, the object and frame byte ``offset``."""
        return describe(source.name, where, off + offset)

    if length < 36:
        raise CorruptFileError(f"{at(0)}data frame length {length} is below the minimum 36")
    if frame_bytes is None and length <= 8192:  # header and tail in one read when the frame is small
        frame_bytes = source.read(off, length, what="data frame")
    whole = frame_bytes

    def part(lo: int, hi: int, what: str) -> bytes:
        """Frame bytes ``[lo, hi)``: from the frame when it was read, else read."""
        return bytes(whole[lo:hi]) if whole is not None else source.read(off + lo, hi - lo, what=what)

    tail_start = length - min(length - FRAME_HEADER, 4096)  # frame-relative offset of tail[0]
    hdr = parse_frame_header(part(0, FRAME_HEADER, "data frame header"))
    tail = part(tail_start, length, "data frame footer")
    if hdr.marker != FRAME_START or hdr.frame_type != DATA_FRAME:
        raise CorruptFileError(f"{at(0)}expected a data frame (FR, type 9), found {hdr.marker!r} type {hdr.frame_type}")
    if hdr.length != length:
        raise CorruptFileError(f"{at(0)}data frame header says {hdr.length} bytes, the index says {length}")
    if tail[-4:] != FRAME_END:
        raise CorruptFileError(f"{at(length - 4)}data frame does not end with ENDF")
    cbor_offset = int.from_bytes(tail[-20:-12], "big")
    if not 16 <= cbor_offset <= length - 20:
        raise CorruptFileError(f"{at(length - 20)}cbor_offset {cbor_offset} outside [16, {length - 20}]")
    if hdr.flags & FLAG_CBOR_AFTER_PAYLOAD:
        lo, hi = cbor_offset, length - 20
        raw = tail[lo - tail_start : hi - tail_start] if lo >= tail_start else part(lo, hi, "descriptor")
        descriptor = cbor.loads(raw, where=at(lo))
        region_start, region_length = off + 16, cbor_offset - 16
    else:
        body = part(16, length - 20, "frame body")
        descriptor, used = cbor.loads_prefix(body, where=at(16))
        region_start, region_length = off + 16 + used, length - 36 - used
    descriptor = pipeline.validate_descriptor(descriptor, at(0))
    return FrameLayout(descriptor, region_start, region_length, bool(hdr.flags & FLAG_HASH_PRESENT))


def pipeline_encoding(message: Message, j: int) -> dict[str, Any]:
    """The writer options that reproduce object ``j``'s pipeline (:func:`.encode.encoding_from_descriptor`), for
    ``.encoding`` at open, so that writing the Dataset again keeps the compression. Only the frame header, footer
    and the descriptor after the payload are read (an open reads metadata only); ``{}`` where that cannot be had
    (descriptor first) or the frame is malformed (the read of the values reports that with its offset)."""
    source, (off, length) = message.source, message.frame(j)
    if length < FRAME_HEADER + 20:  # footer: cbor_offset u64, hash u64, "ENDF"
        return {}
    try:
        hdr = parse_frame_header(source.read(off, FRAME_HEADER, what="data frame header"))
        if not hdr.flags & FLAG_CBOR_AFTER_PAYLOAD:
            return {}
        cbor_offset = int.from_bytes(source.read(off + length - 20, 8, what="data frame footer"), "big")
        if not FRAME_HEADER <= cbor_offset <= length - 20:
            return {}
        raw = source.read(off + cbor_offset, length - 20 - cbor_offset, what="descriptor")
        desc = cbor.loads(raw, where=f"descriptor at {off + cbor_offset}")
    except XarrayTensogramError:
        return {}
    return encoding_from_descriptor(desc) if isinstance(desc, dict) else {}


@dataclass
class ObjectReader:
    """Picklable, thread-safe reader of one object; the lazy array's chunk reader for Tensogram. Its chunks are
    row bands of ``rows_per_chunk`` leading-axis rows (0 or ``shape[0]``: one chunk per object)."""

    source: ByteSource
    ref: ObjectRef
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    rows_per_chunk: int = 0
    verify_hash: bool = False
    #: a read covering less than this fraction of the leading axis reads part of the object when the pipeline
    #: allows it (0: always whole; 1: exactly the rows asked for); the ``range_threshold`` open option sets it
    range_threshold: float = 1.0
    _layout: FrameLayout | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_layout"] = None
        return state

    def layout(self, frame: np.ndarray | None = None) -> FrameLayout:
        """The frame's layout, read once (again from ``frame``, the whole frame, when the caller read it)."""
        lay = self._layout
        if lay is None or frame is not None:
            lay = read_frame_layout(self.source, self.ref, self.where, frame_bytes=frame)
            self._check_geometry(lay.descriptor)
            self._layout = lay
        return lay

    def _check_geometry(self, desc: Mapping[str, Any]) -> None:
        shape, decoded = Message._geometry_of(desc)
        fixed = STAGES["encoding"][desc["encoding"]].decoded_dtype  # simple_packing: float64 whatever the dtype
        if shape != self.shape or (decoded != self.dtype and fixed is None):
            raise MetadataError(
                f"{describe(self.source.name, self.where)}descriptor says shape {list(desc['shape'])} dtype "
                f"{desc['dtype']}, the metadata promised {list(self.shape)} {self.dtype}"
            )

    def _fetch(self, offset: int, length: int, what: str) -> np.ndarray:
        """Bytes as uint8: a read-only view of a local file's memory map (decoders copy out of it, so compressed
        payloads are never copied twice), else a fresh buffer."""
        view = self.source.view(offset, length)
        if view is not None:
            return np.frombuffer(view, dtype=np.uint8)
        return self.source.read_array(offset, length, what=what)

    def _read_frame(self) -> np.ndarray:
        """Read the whole data frame; with ``verify_hash``, check its xxh3 before anything in it is trusted."""
        off, length = self.ref.frame_offset, self.ref.frame_length
        frame = self._fetch(off, length, "data frame")
        if not self.verify_hash:
            return frame
        w = describe(self.source.name, self.where, off)
        if length < 36:
            raise CorruptFileError(f"{w}data frame length {length} is below the minimum 36")
        flags = int.from_bytes(bytes(frame[6:8]), "big")
        if not flags & FLAG_HASH_PRESENT:
            raise MissingHashError(f"{w}verify_hash requested but the data frame carries no hash")
        expected = int.from_bytes(bytes(frame[length - 12 : length - 4]), "big")
        actual = xxh3_64(frame.data[16 : length - 20])
        if actual != expected:
            raise IntegrityError(f"{w}xxh3 mismatch: frame says {expected:016x}, body hashes to {actual:016x}")
        return frame

    def read(self, rows: slice | None = None) -> np.ndarray:
        """The object's values, or only rows ``rows`` of its leading axis."""
        try:
            return self._read(rows)
        except MemoryError:
            raise self._too_big() from None

    def _read(self, rows: slice | None = None) -> np.ndarray:
        self.source.check_unchanged()
        if rows is not None and not (self.shape and self._wants_partial(rows)):
            return self._read(None)[rows]
        if self.verify_hash or (self._layout is None and rows is None and self.ref.frame_length <= (64 << 20)):
            # first touch (or verification): one read of the whole frame gives descriptor and payload together
            frame = self._read_frame()
            lay = self.layout(frame)
            region = frame[lay.region_start - self.ref.frame_offset :][: lay.region_length]
        elif rows is not None and (block := self._decode_rows(rows)) is not None:
            return block
        else:
            lay = self.layout()
            region = self._fetch(lay.region_start, lay.region_length, "payload")
        out = pipeline.decode_full(region, lay.descriptor, describe(self.source.name, self.where))
        return out if rows is None else out[rows]

    def _decode_rows(self, rows: slice) -> np.ndarray | None:
        """Rows ``rows`` decoded from only the stored bytes they need (their elements, or the stream up to the
        last of them) where the chain allows; None: the whole payload has to be decoded."""
        desc = self.layout().descriptor
        start, stop, step = rows.indices(desc["shape"][0]) if desc["shape"] else (0, 0, 0)
        if step <= 0 or stop <= start:
            return None
        box = (slice(start, stop), *(slice(0, n) for n in desc["shape"][1:]))
        if (block := self._decode_box(box, 1.0)) is not None:
            return block[::step]
        if step != 1:
            return None
        region = self._fetch(self.layout().region_start, self.layout().region_length, "payload")
        return pipeline.decode_leading_rows(region, desc, start, stop, describe(self.source.name, self.where))

    def _decode_box(self, box: tuple[slice, ...], fraction: float) -> np.ndarray | None:
        """The box decoded from its elements' stored bytes alone (:func:`.pipeline.decode_box`), or None."""
        lay = self.layout()
        start = lay.region_start

        def fetch(spans: list[tuple[int, int]]) -> list[Any]:  # a local file's map, else one ranged request
            views = [self.source.view(start + o, n) for o, n in spans]
            if all(v is not None for v in views):
                return views
            return list(self.source.read_ranges([(start + o, n) for o, n in spans], what="payload elements"))

        where, remote = describe(self.source.name, self.where), not is_local(self.source)
        return pipeline.decode_box(lay.descriptor, box, lay.region_length, fetch, fraction, where, lay.chain, remote)

    def _too_big(self) -> LimitExceededError:
        needs = f"decoding shape {list(self.shape)} ({self.dtype}) needs more memory than is available"
        return LimitExceededError(describe(self.source.name, self.where, self.ref.frame_offset) + needs)

    def _wants_partial(self, rows: slice) -> bool:
        """A range read pays off only below ``range_threshold`` of the object's leading axis."""
        start, stop, _step = rows.indices(self.shape[0])
        fraction = max(0, stop - start) / max(1, self.shape[0])
        return self.range_threshold > 0 and fraction < self.range_threshold

    def read_chunk_into(self, coords: tuple[int, ...], region: tuple[slice, ...], out: np.ndarray) -> bool:
        """Decode the whole object straight into ``out`` where its pipeline allows (no intermediate array)."""
        if self.verify_hash or any(coords) or tuple(r.stop - r.start for r in region) != self.shape:
            return False
        if self._layout is None and type(self.source).view is ByteSource.view:
            return False  # remote: read_chunk gets descriptor and payload in one request; here it would take two
        lay = self.layout()
        if not pipeline.decodes_into(lay.descriptor, out.dtype):
            return False
        self.source.check_unchanged()
        try:
            where = describe(self.source.name, self.where)
            pipeline.decode_into(self.source, lay.region_start, lay.region_length, lay.descriptor, out, where)
        except MemoryError:
            raise self._too_big() from None
        return True

    def byte_layout(self, spec: ArraySpec) -> ByteLayout:
        """This object as one Zarr chunk (:mod:`.zarr_layout`)."""
        lay, frame = self.layout(), (self.ref.frame_offset, self.ref.frame_length)
        return object_layout(spec, lay.descriptor, frame, (lay.region_start, lay.region_length))

    def read_chunk(self, coords: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        """A box narrower than the object decodes only its elements where the chain allows; rows use :meth:`read`."""
        narrow = len(self.shape) > 1 and any(r != slice(0, n) for r, n in zip(region[1:], self.shape[1:], strict=True))
        if narrow and not self.verify_hash and self.range_threshold > 0:
            first = coords[0] * (self.rows_per_chunk or self.shape[0])
            self.source.check_unchanged()
            box = (slice(first + region[0].start, first + region[0].stop), *region[1:])
            if (block := self._decode_box(box, self.range_threshold)) is not None:
                return block
        rows = self.rows_per_chunk
        return read_row_band(coords, region, self.shape, rows, self.read, lambda a, b: self.read(slice(a, b)))


@functools.lru_cache(maxsize=4096)
def _reserved_geometry(dtype: str, shape: tuple[Any, ...]) -> tuple[tuple[int, ...], np.dtype] | None:
    """Shape and dtype from ``_reserved_.tensor``, or None when they are not valid there (objects of one
    dtype and shape share the answer: it is worked out once)."""
    if len(shape) > pipeline.MAX_RANK or not all(isinstance(s, int) and s >= 0 for s in shape):
        return None
    return Message._geometry_of({"shape": list(shape), "dtype": dtype})


def is_local(source: ByteSource) -> bool:
    """Sources where a small read costs a system call, not a network round trip."""
    return type(source).__name__ in ("LocalFileSource", "BytesSource")


class Message:
    """One Tensogram message: metadata, object locations and lazy access to descriptors and values."""

    def __init__(
        self,
        source: ByteSource,
        index: int,
        offset: int,
        length: int,
        preamble: Preamble,
        objects: Sequence[ObjectRef],
        metadata_cbor: bytes,
    ) -> None:
        self.source = source
        self.index = index
        self.offset = offset
        self.length = length
        # an open of an archive keeps per message few containers the garbage collector walks: the preamble as a
        # tuple, the metadata as its CBOR bytes, the objects' locations as tuples; readers and geometries lazily
        self._preamble = (preamble.magic, preamble.version, preamble.flags, preamble.reserved, preamble.total_length)
        self._metadata: dict[str, Any] | None = None  # decoded on first use
        self._metadata_cbor = metadata_cbor
        self._refs = tuple((r.frame_offset, r.frame_length, r.preceder) for r in objects)
        self._readers: list[ObjectReader | None] | None = None
        self._geometry: dict[int, tuple[tuple[int, ...], np.dtype]] | None = None

    def __repr__(self) -> str:
        return f"<tensogram Message {self.index} at {self.offset} ({self.length} bytes, {len(self._refs)} objects)>"

    @property
    def preamble(self) -> Preamble:
        return Preamble(*self._preamble)

    @property
    def objects(self) -> list[ObjectRef]:
        """Where each data object lives (made from the tuples the message keeps)."""
        return [ObjectRef(*t) for t in self._refs]

    def ref(self, j: int) -> ObjectRef:
        """Where data object ``j`` lives."""
        return ObjectRef(*self._refs[j])

    def frame(self, j: int) -> tuple[int, int]:
        """Data object ``j``'s frame as (absolute offset, length): :meth:`ref` without building it."""
        offset, length, _preceder = self._refs[j]
        return offset, length

    @property
    def metadata(self) -> dict[str, Any]:
        """Global metadata (``version``, ``base``, ``_extra_``, ``_reserved_``) after preceder merge."""
        if self._metadata is None:
            self._metadata = self.decoded_metadata()
        return self._metadata

    def decoded_metadata(self) -> dict[str, Any]:
        """:attr:`metadata`, decoded from its CBOR bytes without holding it (an open walks every message's
        metadata once: kept, it would weigh on every garbage collection)."""
        if self._metadata is not None:
            return self._metadata
        return message_metadata(self._metadata_cbor, self.objects, _where(self.index))

    def release_metadata(self) -> None:
        """Drop the decoded metadata (decoded again if asked for): an open Dataset holds its messages, and every
        garbage collection would walk their metadata's maps and lists."""
        self._metadata = None

    @property
    def base(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.metadata["base"]
        return entries

    def __len__(self) -> int:
        return len(self._refs)

    def _check_index(self, j: int) -> None:
        if not 0 <= j < len(self._refs):
            raise IndexError(f"message {self.index} has {len(self._refs)} objects, no object {j}")

    def _reader(self, j: int) -> ObjectReader:
        self._check_index(j)
        if self._readers is None:
            self._readers = [None] * len(self._refs)
        r = self._readers[j]
        if r is None:
            shape, dtype = self.object_geometry(j)
            # the low-level API reads exactly the rows asked for (range_threshold 1)
            r = ObjectReader(self.source, self.ref(j), _where(self.index, j), shape, dtype, range_threshold=1.0)
            self._readers[j] = r
        return r

    def object_geometry(self, j: int, base: Sequence[Any] | None = None) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of object ``j`` as decoded, from ``_reserved_.tensor`` when the encoder wrote it;
        ``base``: the message's ``base`` entries when the caller holds them (see :meth:`decoded_metadata`)."""
        if self._geometry is None:
            self._geometry = {}
        geometry = self._geometry.get(j)
        if geometry is None:
            geometry = self._geometry[j] = self._object_geometry(j, self.base if base is None else base)
        return geometry

    def _object_geometry(self, j: int, base: Sequence[Any]) -> tuple[tuple[int, ...], np.dtype]:
        tensor = (base[j].get("_reserved_") or {}).get("tensor") if j < len(base) else None
        if isinstance(tensor, dict) and isinstance(tensor.get("shape"), list) and tensor.get("dtype") in DTYPES:
            try:
                geometry = _reserved_geometry(tensor["dtype"], tuple(tensor["shape"]))
            except TypeError:  # a list inside the shape: not valid, the descriptor decides
                geometry = None
            if geometry is not None:
                return geometry
        return self._geometry_of(self.descriptor(j))

    @staticmethod
    def _geometry_of(desc: Mapping[str, Any]) -> tuple[tuple[int, ...], np.dtype]:
        shape = tuple(int(s) for s in desc["shape"])
        if desc["dtype"] == "bitmask":
            return ((math.prod(shape) + 7) // 8,), np.dtype(np.uint8)
        if (fixed := getattr(STAGES["encoding"].get(str(desc.get("encoding"))), "decoded_dtype", None)) is not None:
            return shape, fixed  # what the encoding stage decodes to (simple_packing: float64)
        return shape, numpy_dtype(desc["dtype"])

    def descriptor(self, j: int) -> dict[str, Any]:
        """Descriptor of object ``j`` (read from its data frame on first use)."""
        self._check_index(j)
        r = self._readers[j] if self._readers is not None else None
        if r is not None:
            return r.layout().descriptor
        return read_frame_layout(self.source, self.ref(j), _where(self.index, j)).descriptor

    @property
    def descriptors(self) -> list[dict[str, Any]]:
        """All descriptors (reads each data frame's footer and descriptor once)."""
        return [self.descriptor(j) for j in range(len(self._refs))]

    def read_object(self, j: int, *, verify_hash: bool = False, rows: slice | None = None) -> np.ndarray:
        """Decode object ``j`` (native byte order, NaN/Inf restored), or only ``rows`` of its leading axis
        (reading only their bytes where the pipeline allows). ``verify_hash=True`` reads the whole frame
        and checks its xxh3 first, even for a row range."""
        r = self._reader(j)
        if verify_hash:
            r = ObjectReader(r.source, r.ref, r.where, r.shape, r.dtype, verify_hash=True, range_threshold=1.0)
        return r.read(rows)

    def array_spec(
        self, j: int, *, range_threshold: float, verify_hash: bool = False, rows_per_chunk: int = 0
    ) -> ArraySpec:
        """Lazy description of object ``j`` for the shared lazy array."""
        shape, dtype = self.object_geometry(j)
        reader = ObjectReader(
            self.source,
            self.ref(j),
            _where(self.index, j),
            shape,
            dtype,
            rows_per_chunk=rows_per_chunk,
            verify_hash=verify_hash,
            range_threshold=range_threshold,
        )
        chunks = (rows_per_chunk or shape[0] or 1, *shape[1:]) if shape else ()
        return ArraySpec(shape, dtype, chunks, reader)


def descriptor_params_columns(
    messages: Sequence[Message], js: Sequence[int]
) -> tuple[list[dict[str, Any] | None], list[int | None]]:
    """The free-form params of the descriptors of objects ``js[i]`` of ``messages[i]`` (where the reference encoder
    puts metadata given next to a descriptor; None: none) and their frames' xxh3 (0: none; None: a damaged frame,
    which reading its values reports), in two batched reads (footers, descriptors).

    An open does this for every object, so the per-object work is the footer check and a lookup of descriptors
    known to be plain, and the answer two columns of scalars, not a pair per object for the garbage collector.
    """
    # frames and ranges as columns of ints: a tuple per object would be thousands of containers alive at once
    offsets: list[int] = []
    lengths: list[int] = []
    for msg, j in zip(messages, js, strict=True):
        msg._check_index(j)
        offset, length = msg.frame(j)
        offsets.append(offset)
        lengths.append(length)
    params: list[dict[str, Any] | None] = [None] * len(offsets)
    hashes: list[int | None] = [None] * len(offsets)
    if not offsets:
        return params, hashes
    source = messages[0].source
    footers = RangeColumns([o + max(n, 20) - 20 for o, n in zip(offsets, lengths, strict=True)], [20] * len(offsets))
    tails = source.read_ranges(footers, what="data frame footer")
    del footers
    wanted = RangeColumns([], [])  # descriptors to read (offsets and lengths), with their objects' positions
    positions: list[int] = []
    for i, (off, length, tail) in enumerate(zip(offsets, lengths, tails, strict=True)):
        cbor_offset = int.from_bytes(tail[:8], "big")
        if length < 36 or tail[-4:] != FRAME_END or not 16 <= cbor_offset <= length - 20:
            continue  # a damaged frame
        if cbor_offset == 16:  # descriptor before the payload: its length is only known by decoding it
            try:
                desc = read_frame_layout(source, messages[i].ref(js[i]), _where(messages[i].index, js[i])).descriptor
            except XarrayTensogramError:
                continue
            found, hashes[i] = pipeline.params_of(desc, tail)
            params[i] = found or None
        else:
            positions.append(i)
            wanted.offsets.append(off + cbor_offset)
            wanted.lengths.append(length - 20 - cbor_offset)
    raws = source.read_ranges(wanted, what="descriptor")
    plain = pipeline.PLAIN_DESCRIPTORS
    for i, raw in zip(positions, raws, strict=True):
        if raw in plain:  # seen before, no params: skip the decode
            hashes[i] = int.from_bytes(tails[i][8:16], "big")
            continue
        try:
            # only the free-form params are used here (the frame is fully checked when it is read)
            found, hashes[i] = pipeline.params_of(cbor.loads(raw), tails[i], raw)
            params[i] = found or None
        except MetadataError:
            pass  # a damaged descriptor
    return params, hashes
