"""The codec interface (as zarr-python's codecs): one small object per codec, no format knowledge.

A :class:`Codec` has a ``name``, its parameters (:class:`Param`) under its own plain names (``level``, ``rsi``),
what it can do (:class:`Capabilities`, typed, so callers never probe with ``getattr``), ``decode``, ``encode``
and what its capabilities add. Each format maps its file vocabulary (descriptor keys, codec ids) onto codec
objects and these names in one table; the registry (:mod:`.registry`) holds one object per name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError, EncodeError, UnsupportedError

__all__ = [
    "MERGE_GAP",
    "PASSTHROUGH",
    "Buffer",
    "Capabilities",
    "Codec",
    "Fetch",
    "Param",
    "Passthrough",
    "Role",
    "as_bytes",
    "check_size",
    "out_bytes",
]

#: :meth:`Codec.merge_gap` of codecs that declare none (4096 float64 values)
MERGE_GAP = 32768

#: what decoders take (a slice of a mapped file stays a memoryview) and give back
Buffer = bytes | memoryview | np.ndarray

#: reads byte spans ``(offset, length)`` of a stored stream, one buffer each (a remote source: concurrently)
Fetch = Callable[[list[tuple[int, int]]], Sequence[Buffer]]


@dataclass(frozen=True)
class Param:
    """One parameter of a codec: its type, its default (None: required, or worked out by the format) and the
    values it may take (``choices``, or an inclusive ``bounds`` range for numbers)."""

    name: str
    kind: type
    default: Any = None
    choices: tuple[Any, ...] = ()
    bounds: tuple[float, float] | None = None
    doc: str = ""
    #: worked out per payload while encoding (and recorded for the decoder)
    recorded: bool = False
    #: supplied by the format from the data (a sample width, an element size): not a writer's option
    derived: bool = False

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this parameter (None: nothing)."""
        accepted: Any = {float: (int, float, np.integer, np.floating), int: (int, np.integer)}.get(self.kind, self.kind)
        if not isinstance(value, accepted) or (isinstance(value, (bool, np.bool_)) and self.kind is not bool):
            kind = {int: "an integer", float: "a number", str: "text", bool: "true or false"}.get(self.kind, self.kind)
            return f"must be {kind}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(map(repr, self.choices))}, got {value!r}"
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            return f"must be in {self.bounds[0]:g}..{self.bounds[1]:g}, got {value!r}"
        return None


class Role(Enum):
    """Where a codec sits in a chain (zarr-python's three kinds): values to values, values to the bytes that
    hold them, bytes to bytes. A chain is array->array stages, one array->bytes stage, bytes->bytes stages."""

    ARRAY_ARRAY = "array->array"
    ARRAY_BYTES = "array->bytes"
    BYTES_BYTES = "bytes->bytes"


@dataclass(frozen=True)
class Capabilities:
    """What a codec can do beyond ``decode``/``encode``."""

    #: ``decode_into`` writes the decoded bytes into a caller's C-contiguous buffer (no intermediate array)
    decode_into: bool = False
    #: partial decode: the first bytes of the output can be decoded without the rest of the stream
    prefix_decode: bool = False
    #: decoded byte ranges are stored byte ranges (only the identity): a slice reads only its bytes
    byte_ranges: bool = False
    #: ``encode`` exists (some codecs are read-only: no library writes streams the reference reads)
    encode: bool = True
    #: decoding from a memory map pays (else the payload is better read into a buffer first)
    mapped_input: bool = True
    #: partial decode: any byte range of the output decodes from the stored bytes :meth:`Codec.stored_span`
    #: names (:meth:`Codec.decode_range`), where :meth:`Codec.decodes_range` accepts the parameters
    partial_decode: bool = False


class Codec:
    """Base of every codec object. Subclasses set the class attributes and override what they support."""

    name: ClassVar[str]
    role: ClassVar[Role] = Role.BYTES_BYTES
    params: ClassVar[tuple[Param, ...]] = ()
    capabilities: ClassVar[Capabilities] = Capabilities()
    #: largest decoded/stored ratio the codec reaches on real data, generously (None: no useful bound)
    max_ratio: ClassVar[int | None] = None
    #: what an array->bytes codec decodes to whatever the stored dtype (None: the stored dtype itself)
    decoded_dtype: ClassVar[np.dtype | None] = None

    def param(self, name: str) -> Param:
        return {p.name: p for p in self.params}[name]

    def resolve(self, given: Mapping[str, Any], *, what: str = "") -> dict[str, Any]:
        """``given`` checked against the declared parameters, defaults filled in (unknown names refused)."""
        known = {p.name: p for p in self.params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise EncodeError(
                f"{what}{self.name} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters: {', '.join(known) or 'none'}"
            )
        for p in self.params:
            if p.name in given and (problem := p.problem(given[p.name])):
                raise EncodeError(f"{what}{self.name} parameter {p.name!r} {problem}")
        return {p.name: given.get(p.name, p.default) for p in self.params if p.name in given or p.default is not None}

    def check_ratio(self, payload_len: int, expected: int, where: str = "") -> None:
        """Refuse ``expected`` decoded bytes that ``payload_len`` stored bytes cannot produce (before allocating)."""
        if self.max_ratio is not None and expected > self.max_ratio * max(payload_len, 1) + 4096:
            raise CodecError(
                f"{where}{self.name} payload of {payload_len} bytes cannot decode to the {expected} bytes "
                f"promised (more than {self.max_ratio}:1)"
            )

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        """Decode ``payload`` into exactly ``expected`` bytes (never allocating more)."""
        raise NotImplementedError

    def decode_into(self, payload: Buffer, out: np.ndarray, params: Mapping[str, Any], where: str = "") -> None:
        """Decode into ``out`` (writable, C-contiguous), which the stream must fill exactly."""
        raise UnsupportedError(f"{where}{self.name} cannot decode into a given buffer")

    def decode_prefix(
        self, payload: Buffer, prefix: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        """The first ``prefix`` of ``total`` decoded bytes, without decoding the rest (``prefix_decode``)."""
        raise UnsupportedError(f"{where}{self.name} cannot decode a prefix of its stream")

    def max_output(self, stored: int) -> int | None:
        """The most decoded bytes ``stored`` bytes can give, known before reading them (None: no bound)."""
        return None if self.max_ratio is None else self.max_ratio * max(stored, 1) + 4096

    def fits_output(self, decoded: np.ndarray, stored: np.ndarray) -> np.ndarray:
        """``decoded <= max_output(stored)`` over ``uint64`` arrays: an index's sizes checked before allocating."""
        bounds = [self.max_output(int(s)) for s in stored]
        return np.array([b is None or int(d) <= b for d, b in zip(decoded, bounds, strict=True)], dtype=bool)

    def decode_capped(self, payload: Buffer, cap: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        """A stream whose decoded size nobody recorded, refused past ``cap`` bytes."""
        raise UnsupportedError(f"{where}{self.name} needs its decoded size")

    # array->bytes codecs (values <-> the bytes holding them) also answer these four

    def encoded_nbytes(self, count: int, params: Mapping[str, Any]) -> int:
        raise UnsupportedError(f"{self.name} is not an array->bytes codec")

    def element_span(self, start: int, stop: int, params: Mapping[str, Any]) -> tuple[int, int, int]:
        """Bytes ``[lo, hi)`` holding values ``[start, stop)``, and the bit offset of the first in byte ``lo``."""
        raise UnsupportedError(f"{self.name} is not an array->bytes codec")

    def decode_values(self, encoded: Buffer, count: int, params: Mapping[str, Any], bit_offset: int = 0) -> np.ndarray:
        """``count`` values, flat and in native byte order, from bytes starting ``bit_offset`` bits in."""
        raise UnsupportedError(f"{self.name} is not an array->bytes codec")

    def decode_values_into(self, encoded: Buffer, out: np.ndarray, params: Mapping[str, Any]) -> None:
        out[...] = self.decode_values(encoded, out.size, params).reshape(out.shape)

    def decodes_range(self, params: Mapping[str, Any], total: int) -> bool:
        """Whether this stream decodes in part (some codecs need recorded offsets or a mode for it)."""
        return self.capabilities.partial_decode

    def stored_span(self, lo: int, hi: int, total: int, stored: int, params: Mapping[str, Any]) -> tuple[int, int]:
        """The stored bytes ``[a, b)`` (of ``stored``) that decoded bytes ``[lo, hi)`` (of ``total``) need."""
        return 0, stored

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        """Decoded bytes ``[lo, hi)`` of a stream that decodes to ``total`` bytes, from ``piece``: its stored
        bytes from offset ``base`` on, covering :meth:`stored_span` (``capabilities.partial_decode``)."""
        raise UnsupportedError(f"{where}{self.name} cannot decode part of its stream")

    def read_ranges(
        self,
        fetch: Fetch,
        ranges: Sequence[tuple[int, int]],
        total: int,
        stored: int,
        params: Mapping[str, Any],
        where: str = "",
    ) -> list[Buffer] | None:
        """Decoded byte ``ranges`` of a stream of ``stored`` bytes (decoding to ``total``) read through ``fetch`` in
        dependent steps, index first, where :meth:`stored_span` would name the whole stream (None: no index)."""
        return None

    def merge_gap(self, params: Mapping[str, Any]) -> int:
        """Decoded bytes between two wanted ranges below which one partial decode of both costs less than two
        (a restart decodes from the start of a block again, and pays a call into the library)."""
        return MERGE_GAP

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """Encode ``data``; return the bytes and the parameters worked out while encoding (to be recorded)."""
        raise UnsupportedError(f"writing {self.name} is not supported")

    def zarr(self, params: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The Zarr v3 codec entries (after the bytes codec) that decode these bytes; None when Zarr cannot."""
        return None


def as_bytes(data: Buffer) -> bytes | memoryview:
    """``data`` as bytes a library reads in place (an array's own buffer, not copied)."""
    return data.data.cast("B") if isinstance(data, np.ndarray) else data


def out_bytes(out: np.ndarray) -> np.ndarray:
    """The bytes of ``out``, flat, for a decoder to write into (ValueError unless writable and C-contiguous)."""
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("decompress_into needs a writable C-contiguous output array")
    return out.reshape(-1).view(np.uint8)


def check_size(data: Buffer, expected: int, codec: str, where: str = "") -> None:
    """Raise :class:`CodecError` unless ``data`` holds exactly ``expected`` bytes."""
    n = data.nbytes if isinstance(data, np.ndarray) else len(data)
    if n != expected:
        raise CodecError(f"{where}{codec} payload decodes to {n} bytes, expected {expected}")


class Passthrough(Codec):
    """No compression: the stored bytes are the decoded bytes (a slice of them is a byte range)."""

    name = "none"
    capabilities = Capabilities(prefix_decode=True, byte_ranges=True, partial_decode=True)

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        check_size(payload, expected, "uncompressed", where)
        return payload

    def max_output(self, stored: int) -> int | None:
        return stored

    def stored_span(self, lo: int, hi: int, total: int, stored: int, params: Mapping[str, Any]) -> tuple[int, int]:
        return lo, hi

    def decode_range(
        self, piece: Buffer, base: int, lo: int, hi: int, total: int, params: Mapping[str, Any], where: str = ""
    ) -> Buffer:
        view = memoryview(as_bytes(piece))
        if base > lo or len(view) < hi - base:
            raise CodecError(f"{where}stored bytes {base}..{base + len(view)} do not hold bytes {lo}..{hi}")
        return view[lo - base : hi - base]

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        return bytes(data), {}

    def zarr(self, params: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        return []  # the bytes codec alone


PASSTHROUGH = Passthrough()
