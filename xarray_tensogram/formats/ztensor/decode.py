"""Turning stored parts into arrays: checksums, zstd, byte order, sparse assembly, row ranges.

Raw little-endian dense tensors are served as read-only numpy views over the memory map of a local file (no
copy), or as a byte-range read of only the rows asked for. Everything else is decoded whole, with the output size
bounded by what the metadata promises, never by what a stream claims.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...array_spec import ArraySpec
from ...byte_layout import ByteLayout, ChunkRef, Unreferenced, zarr_bytes_codec
from ...codecs.chain import Chain, native_order
from ...codecs.checksums import crc32c, sha256_hex, xxh3_64
from ...errors import (
    CodecError,
    CorruptFileError,
    IntegrityError,
    LimitExceededError,
    MetadataError,
    MissingHashError,
    UnsupportedError,
)
from ...io import ByteSource
from .._chunks import compressed_payload, read_raw_rows, read_row_band, read_span
from .compression import ENCODINGS, part_chain, stores_values
from .model import Part, TensorInfo, logical_dtype

__all__ = [
    "DIGESTS",
    "MAX_SPARSE_DENSE_BYTES",
    "ROW_BAND_TARGET",
    "ROW_BAND_THRESHOLD",
    "TensorReader",
    "auto_rows_per_chunk",
    "verify_digest",
]

#: a sparse tensor is densified; refuse beyond this many bytes rather than exhaust memory
MAX_SPARSE_DENSE_BYTES = 4 << 30
#: raw tensors larger than this are offered as row bands of about ROW_BAND_TARGET bytes
ROW_BAND_THRESHOLD = 256 << 20
ROW_BAND_TARGET = 64 << 20

_LITTLE = sys.byteorder == "little"
_SPARSE_CSR = ("sparse_csr", "zt.sparse_csr/1")
_SPARSE_COO = ("sparse_coo", "zt.sparse_coo/1")
_SPARSE = ("sparsecoo", "sparsecsr", *_SPARSE_CSR, *_SPARSE_COO)


#: a digest's algorithm -> (the digest of some bytes as the file spells it, whether hex text of that value can
#: be such a digest)
DIGESTS: dict[str, tuple[Callable[[Any], str], Callable[[str, int], bool]]] = {
    "crc32c": (lambda buf: f"0x{crc32c(buf):08X}", lambda text, value: 0 <= value <= 0xFFFFFFFF),
    "sha256": (sha256_hex, lambda text, value: len(text) == 64),
    "xxh3": (lambda buf: f"{xxh3_64(buf):016x}", lambda text, value: True),
}


def verify_digest(digest: str, data: bytes | memoryview | np.ndarray, where: str) -> None:
    """Check ``data`` against a ``crc32c:0x..``, ``sha256:..`` or ``xxh3:..`` string; the hex is compared
    without regard to case, as the reference readers do (one that cannot be parsed: :class:`MetadataError`)."""
    algo, _, hexpart = digest.partition(":")
    algo = algo.lower()
    if algo not in DIGESTS:
        raise UnsupportedError(f"{where}unknown checksum algorithm {algo!r} in {digest!r}")
    show, fits = DIGESTS[algo]
    try:
        expected = int(hexpart, 16)  # crc32c's "0x" prefix included
        if not fits(hexpart, expected):
            raise ValueError(hexpart)
    except ValueError:
        raise MetadataError(
            f"{where}checksum {digest!r} is malformed: expected {algo}: followed by hex digits"
        ) from None
    shown = show(np.ascontiguousarray(data).data.cast("B") if isinstance(data, np.ndarray) else data)
    if int(shown, 16) != expected:
        raise IntegrityError(f"{where}checksum mismatch: the file says {digest}, the bytes give {algo}:{shown}")


def _decoded_size(part: Part, stored: int, expected: int | None, where: str) -> tuple[Chain, int | None]:
    """``part``'s chain as bytes (what the stored bytes decode to before they are viewed as its dtype) and the
    bytes it decodes to (None: unknown, capped while decoding); refused, before anything is allocated, where
    that contradicts the ``expected`` size or exceeds what ``stored`` bytes can give."""
    chain = part_chain(part.encoding, np.dtype("u1"), 0, where)
    size: int | None = stored
    if chain.stored_is_encoded:  # stored as they are
        wrong = f"stored size is {stored} bytes, the shape and dtype need {expected}"
    else:
        size = part.decoded_length if part.decoded_length is not None else expected
        wrong = f"declared decoded length {size} differs from the {expected} bytes the shape needs"
    if size is not None and expected is not None and size != expected:
        raise CorruptFileError(where + wrong)
    bound = chain.max_output(stored)
    if size is not None and bound is not None and size > bound:
        names = "+".join(s.codec.name for s in chain.compressors)
        raise LimitExceededError(f"{where}{stored} {names} bytes cannot decode to the {size} bytes declared")
    return chain, size


@dataclass
class TensorReader:
    """Picklable, thread-safe reader of one tensor; the lazy array's chunk reader for zTensor. ``sources`` maps
    ``None`` to the file itself and v2 shard names to their files; ``data_end`` bounds blobs of the main file."""

    sources: Mapping[str | None, ByteSource]
    info: TensorInfo
    data_end: int
    data_start: int = 64
    verify: bool = False
    rows_per_chunk: int = 0

    @functools.cached_property
    def _where(self) -> str:
        """What messages name (file and tensor): made on first use, not for each tensor of every open."""
        return self.info.where(self.sources[None].name)

    def _check_bounds(self, part: Part, name: str) -> None:
        src = self.sources[part.shard]
        start, end = (self.data_start, self.data_end) if part.shard is None else (0, src.size)
        if part.length and (part.offset < start or part.offset + part.length > end):
            raise CorruptFileError(
                f"{self.info.where(src.name, part.offset)}part {name!r} spans [{part.offset}, "
                f"{part.offset + part.length}), outside the data area [{start}, {end}) of a {src.size}-byte file"
            )

    def _decode_part(self, name: str, expected: int | None, cap: int, *, zero_copy: bool = False) -> np.ndarray:
        """The decoded bytes of part ``name`` as a storage-dtype 1-D array (native byte order)."""
        part = self.info.parts[name]
        where = f"{self._where}part {name!r}: "
        self._check_bounds(part, name)
        what = f"tensor {self.info.name!r} part {name!r}"
        stored = read_span(self.sources[part.shard], part.offset, part.length, what, zero_copy=zero_copy)
        if self.verify and part.digest is None:
            raise MissingHashError(f"{where}verification requested but the part carries no checksum")
        digest = part.digest if self.verify else None
        if digest is not None and not part.digest_of_decoded:
            verify_digest(digest, stored, where)
        chain, size = _decoded_size(part, len(stored), expected, where)
        if size is None:
            decoded = chain.decode_capped(stored, cap, where)
        else:
            decoded = replace(chain, count=size).decode_bytes(stored, where)
        raw = np.frombuffer(decoded, np.uint8)
        if digest is not None and part.digest_of_decoded:
            verify_digest(digest, raw, where)
        if len(raw) % part.storage.itemsize:
            raise CorruptFileError(f"{where}{len(raw)} bytes is not a whole number of {part.storage} elements")
        values = raw.view(native_order(part.storage, "big" if part.big_endian else "little"))
        return values if values.dtype.isnative else values.astype(values.dtype.newbyteorder("="))

    def _geometry(self) -> tuple[np.dtype, int | None]:
        """The dtype values come out in, and the bytes the tensor's one part decodes to (None: a sparse tensor,
        refused here where its dense form would exceed the limit); raises where the tensor cannot be read."""
        info, main = self.info, self.info.main_part
        if info.problem is not None:
            raise UnsupportedError(f"{self._where}{info.problem}")
        out_dtype, ratio, _ = logical_dtype(main.dtype, main.ltype)
        if info.layout != "dense" and (len(info.parts) != 1 or info.layout in _SPARSE):
            nbytes = info.size * out_dtype.itemsize
            if nbytes > MAX_SPARSE_DENSE_BYTES:
                raise LimitExceededError(
                    f"{self._where}the dense form of this sparse tensor needs {nbytes} bytes, more than the "
                    f"limit of {MAX_SPARSE_DENSE_BYTES} (MAX_SPARSE_DENSE_BYTES)"
                )
            return out_dtype, None
        return out_dtype, info.size * ratio * main.storage.itemsize

    def read(self) -> np.ndarray:
        """The whole tensor, dense, in C order (a read-only mmap view for raw little-endian tensors)."""
        info = self.info
        out_dtype, expected = self._geometry()
        if expected is not None:
            flat = self._decode_part(next(iter(info.parts)), expected, expected, zero_copy=True)
            return self._to_logical(flat, out_dtype, info.main_part).reshape(info.shape)
        if info.layout in ("sparsecoo", "sparsecsr"):
            return self._v01_sparse(out_dtype)
        return self._csr(out_dtype) if info.layout in _SPARSE_CSR else self._coo(out_dtype)

    def _to_logical(self, flat: np.ndarray, out_dtype: np.dtype, part: Part) -> np.ndarray:
        if out_dtype.kind == "b":
            if part.ltype == "bool" and flat.size and flat.max() > 1:
                raise CodecError(f"{self._where}bool tensor holds bytes other than 0 and 1")
            return flat.astype(bool)
        return flat if flat.dtype == out_dtype else flat.view(out_dtype)

    def _values(self, nnz: int, out_dtype: np.dtype) -> np.ndarray:
        part = self.info.parts["values"]
        itemsize = part.storage.itemsize * logical_dtype(part.dtype, part.ltype)[1]
        return self._to_logical(self._decode_part("values", nnz * itemsize, nnz * itemsize), out_dtype, part)

    def _index_part(self, name: str, count: int | None, cap_count: int) -> np.ndarray:
        part = self.info.parts[name]
        if part.dtype not in ("u64", "u32"):
            raise MetadataError(
                f"{self._where}sparse index part {name!r} has dtype {part.dtype!r}, expected u32 or u64"
            )
        size = None if count is None else count * part.storage.itemsize
        return self._decode_part(name, size, cap_count * part.storage.itemsize)

    def _rows_cols(self, label: str) -> tuple[int, int]:
        shape = self.info.shape
        if len(shape) != 2:
            raise CorruptFileError(f"{self._where}{label} needs a rank-2 shape, got {list(shape)}")
        return shape[0], shape[1]

    def _csr(self, out_dtype: np.dtype) -> np.ndarray:
        rows, cols = self._rows_cols("CSR")
        indptr = self._index_part("indptr", rows + 1, rows + 1).astype(np.int64)
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] > rows * cols:
            raise CorruptFileError(
                f"{self._where}CSR indptr must start at 0, not decrease and end at nnz <= {rows * cols}"
            )
        nnz = int(indptr[-1])
        indices = self._index_part("indices", nnz, nnz)
        rows_of = np.repeat(np.arange(rows), np.diff(indptr))
        return self._scatter("CSR", (rows_of, indices), self._values(nnz, out_dtype), out_dtype)

    def _coo(self, out_dtype: np.dtype) -> np.ndarray:
        shape = self.info.shape
        ndim = max(len(shape), 1)
        coords = self._index_part("coords", None, self.info.size * ndim)
        if coords.size % ndim:
            raise CorruptFileError(f"{self._where}COO coords hold {coords.size} indices, not a multiple of rank {ndim}")
        nnz = coords.size // ndim
        return self._scatter("COO", coords.reshape(ndim, nnz), self._values(nnz, out_dtype), out_dtype)

    def _scatter(
        self, label: str, coords: Sequence[np.ndarray] | np.ndarray, values: np.ndarray, out_dtype: np.dtype
    ) -> np.ndarray:
        """The dense tensor holding ``values`` at ``coords`` (an index array per axis), zero elsewhere."""
        shape = self.info.shape
        dense = np.zeros(shape, dtype=out_dtype)
        if not len(values):
            return dense
        if not shape:
            dense[()] = values[-1]
        elif any(np.any(c.astype(np.uint64) >= n) for c, n in zip(coords, shape, strict=True)):
            raise CorruptFileError(f"{self._where}{label} coordinate out of range for shape {list(shape)}")
        else:
            dense[tuple(c.astype(np.intp) for c in coords)] = values
        return dense

    def _v01_sparse(self, out_dtype: np.dtype) -> np.ndarray:
        """v0.1 ``sparsecoo``/``sparsecsr``: the sparse structure packed into the single blob (spec 1.9)."""
        part, shape = self.info.parts["data"], self.info.shape
        cap = part.length if stores_values(part.encoding) else max(self.info.size * 8 * max(len(shape), 1), 64)
        blob, item = self._decode_part("data", None, cap).view(np.uint8), part.storage
        if self.info.layout == "sparsecoo":
            ndim = len(shape)
            rec = np.dtype([("c", "<u8", (ndim,)), ("v", item)])
            if len(blob) % rec.itemsize:
                raise CorruptFileError(
                    f"{self._where}sparsecoo blob of {len(blob)} bytes is not whole records of {rec.itemsize}"
                )
            records = blob.view(rec)
            values = self._to_logical(np.ascontiguousarray(records["v"]), out_dtype, part)
            return self._scatter("sparsecoo", np.ascontiguousarray(records["c"]).T.reshape(ndim, -1), values, out_dtype)
        rows, _ = self._rows_cols("sparsecsr")
        head = (rows + 1) * 8
        if len(blob) < head:
            raise CorruptFileError(f"{self._where}sparsecsr blob of {len(blob)} bytes is shorter than its indptr")
        indptr = blob[:head].view("<u8").astype(np.int64)
        nnz = int(indptr[-1])
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or len(blob) != head + nnz * (8 + item.itemsize):
            raise CorruptFileError(f"{self._where}sparsecsr blob does not hold indptr, {nnz} indices and {nnz} values")
        indices = blob[head : head + 8 * nnz].view("<u8")
        values = self._to_logical(blob[head + 8 * nnz :].view(item), out_dtype, part)
        return self._scatter("sparsecsr", (np.repeat(np.arange(rows), np.diff(indptr)), indices), values, out_dtype)

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of the leading axis, reading only their bytes when the tensor is raw."""
        info = self.info
        if not info.is_dense_raw or self.verify or not info.shape:
            return self.read()[start:stop] if info.shape else self.read()
        main = info.main_part
        out_dtype, expected = self._dense_part()
        grid = (info.shape[0], expected // main.storage.itemsize // info.shape[0] if info.shape[0] else 0)
        what = f"tensor {info.name!r} rows {start}:{stop}"
        flat = read_raw_rows(self.sources[main.shard], main.offset, grid, main.storage, start, stop, what)
        return self._to_logical(flat.reshape(-1), out_dtype, main).reshape((stop - start, *info.shape[1:]))

    def read_chunk_into(self, coords: tuple[int, ...], region: tuple[slice, ...], out: np.ndarray) -> bool:
        """Decode a dense one-part tensor (or a row band of a raw one) straight into ``out``: raw little-endian
        values by one ``preadv`` of the band's bytes, others decoded whole into ``out`` when it is contiguous.
        Anything else (sparse, logical dtypes, verification, big-endian data) returns False (:meth:`read_chunk`)."""
        info, main = self.info, self.info.main_part
        plain = _LITTLE and not self.verify and not main.big_endian and main.ltype is None and main.storage == out.dtype
        if not (plain and info.is_dense and info.shape) or region[1:] != tuple(slice(0, n) for n in info.shape[1:]):
            return False
        first = coords[0] * (self.rows_per_chunk or info.shape[0])
        start, stop = first + region[0].start, first + region[0].stop
        expected = self._dense_part()[1]
        where = f"{self._where}part 'data': "
        chain = part_chain(main.encoding, main.storage, info.size, where)
        source = self.sources[main.shard]
        if chain.stored_is_encoded and stop > start:
            source.read_into(main.offset + start * (expected // info.shape[0]), out, what=f"tensor {info.name!r}")
            return True
        if (start, stop) != (0, info.shape[0]) or not out.flags.c_contiguous:
            return False
        codec = chain.compressors[-1].codec  # how it takes its input (a memory map or a read buffer)
        payload, mapped = compressed_payload(source, main.offset, main.length, codec, f"tensor {info.name!r}")
        try:
            chain.decode_into(payload, out, where)
        finally:
            del payload
            if mapped:
                source.release(main.offset, main.length)
        return True

    def _dense_part(self) -> tuple[np.dtype, int]:
        """The dtype and decoded bytes of a dense tensor of one part, its stored size and bounds checked."""
        out_dtype, expected = self.check_geometry()
        assert expected is not None  # a dense tensor
        self._check_bounds(self.info.main_part, "data")
        return out_dtype, expected

    def byte_layout(self, spec: ArraySpec) -> ByteLayout | Unreferenced:
        """Where the tensor is stored, as Zarr v3 sees it (for the virtual Zarr parsers): one chunk per dense
        tensor of one part whose encoding a standard Zarr codec decodes (also in v2 shard files)."""
        info, part, size = self.info, self.info.main_part, math.prod(spec.shape)
        if not info.is_dense:
            return Unreferenced("layout")
        zarr = part_chain(part.encoding, part.storage, size).zarr() if part.encoding in ENCODINGS else None
        if zarr is None or info.numpy_dtype != part.storage.newbyteorder("="):
            return Unreferenced("codec")
        refs = (ChunkRef((0,) * len(spec.shape), part.offset, part.length, part.shard),) if size else ()
        codecs = (zarr_bytes_codec(spec.dtype, part.big_endian), *zarr)
        return ByteLayout(tuple(max(1, s) for s in spec.shape), codecs, refs)

    def read_chunk(self, coords: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        return read_row_band(coords, region, self.info.shape, self.rows_per_chunk, self.read, self.read_rows)

    def check_geometry(self) -> tuple[np.dtype, int | None]:
        """:meth:`_geometry`, raising where the shape cannot come from the stored bytes, without reading them:
        the lazy array allocates its output before asking for chunks, so a shape the payload cannot fill (raw
        length, declared or possible zstd output, sparse dense limit) is refused here, not by a huge allocation."""
        out_dtype, expected = self._geometry()
        if expected is not None:
            main = self.info.main_part
            _decoded_size(main, main.length, expected, f"{self._where}part {next(iter(self.info.parts))!r}: ")
        return out_dtype, expected

    def spec(self) -> ArraySpec:
        info = self.info
        dtype = self.check_geometry()[0]
        chunks = (self.rows_per_chunk or info.shape[0] or 1, *info.shape[1:]) if info.shape else ()
        return ArraySpec(info.shape, dtype, chunks, self)


def auto_rows_per_chunk(info: TensorInfo) -> int:
    """Row bands for large raw tensors (about ROW_BAND_TARGET bytes each), else 0 = one chunk."""
    if not info.is_dense_raw or not info.shape or info.shape[0] < 2:
        return 0
    nbytes = info.size * logical_dtype(info.main_part.dtype, info.main_part.ltype)[0].itemsize
    row_bytes = max(1, nbytes // info.shape[0])
    return 0 if nbytes <= ROW_BAND_THRESHOLD else max(1, min(info.shape[0], ROW_BAND_TARGET // row_bytes))
