"""Codec chains (as zarr-python's ``CodecPipeline``): the stages that turn stored bytes back into values.

A :class:`Chain` is what a format's table makes of one payload's file vocabulary: one array->bytes stage
(:data:`RAW` values in a byte order, or simple_packing's bit fields) and bytes->bytes stages in encode order
(a filter, a compressor); Tensogram's mask restoring stays with its format. Every read path (whole payload,
into a caller's array, an element range, ranges through a fetch) asks the chain, so a capability is added
once for every codec and every format. An element range decodes from part of the stored bytes when every
stage allows it (:attr:`Chain.partial`; :meth:`Chain.stored_span` says which bytes, so a remote read fetches
only those); otherwise the whole payload is decoded and sliced.

Bytes->bytes stages are taken to decode to the array->bytes stage's size (a filter keeps the size, and a
chain has at most one compressor), so no stage needs the sizes in between recorded.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import PASSTHROUGH, Buffer, Capabilities, Codec, Fetch, Role, check_size

__all__ = ["RAW", "Chain", "RawValues", "Stage", "native_order"]


class RawValues(Codec):
    """Values stored as they are, in the byte order of the ``dtype`` parameter (zarr's ``bytes`` codec)."""

    name = "bytes"
    role = Role.ARRAY_BYTES
    capabilities = Capabilities(partial_decode=True)

    def element_span(self, start: int, stop: int, params: Mapping[str, Any]) -> tuple[int, int, int]:
        width = np.dtype(params["dtype"]).itemsize
        return start * width, stop * width, 0

    def encoded_nbytes(self, count: int, params: Mapping[str, Any]) -> int:
        return count * int(np.dtype(params["dtype"]).itemsize)

    def decode_values(self, encoded: Buffer, count: int, params: Mapping[str, Any], bit_offset: int = 0) -> np.ndarray:
        stored = np.dtype(params["dtype"])
        arr = np.frombuffer(encoded, dtype=stored, count=count)
        native = stored.newbyteorder("=")
        if arr.dtype.isnative or stored.itemsize == 1:
            arr = arr.view(native)
            return arr if arr.flags.writeable else arr.copy()
        return arr.astype(native)


RAW = RawValues()


@dataclass(frozen=True)
class Stage:
    """One codec of a chain with the parameters the format read for it."""

    codec: Codec
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chain:
    """The stages of one payload, and what they can do together (see the module docstring)."""

    #: the array->bytes stage: values <-> the bytes holding them
    values: Stage
    #: bytes->bytes stages in encode order (the stored bytes are the last one's output)
    compressors: tuple[Stage, ...] = ()
    #: number of elements the payload holds
    count: int = 0

    @property
    def encoded_nbytes(self) -> int:
        """Bytes between the array->bytes stage and the first bytes->bytes stage."""
        return int(self.values.codec.encoded_nbytes(self.count, self.values.params))

    @functools.cached_property
    def _active(self) -> tuple[Stage, ...]:
        """The stages that change the bytes (asked on every tile of a read: worked out once)."""
        return tuple(s for s in self.compressors if s.codec is not PASSTHROUGH)

    @functools.cached_property
    def _stage(self) -> Stage:
        """The first stage that changes the bytes (a :attr:`partial` chain has at most one), else the identity."""
        return self._active[0] if self._active else Stage(PASSTHROUGH)

    @property
    def partial(self) -> bool:
        """Whether an element range decodes from part of the stored bytes (every stage allows it)."""
        active = self._active
        return (
            len(active) <= 1
            and self.values.codec.decodes_range(self.values.params, self.count)
            and all(s.codec.decodes_range(s.params, self.encoded_nbytes) for s in active)
        )

    @property
    def stored_is_encoded(self) -> bool:
        """No bytes->bytes stage changes the bytes: the stored bytes are the array->bytes stage's output."""
        return not self._active

    @property
    def prefix_stage(self) -> Stage | None:
        """The one bytes->bytes stage that changes the bytes, when it decodes a prefix of its stream without the
        rest (``capabilities.prefix_decode``): leading values then need only the stream up to them."""
        return self._stage if len(self._active) == 1 and self._stage.codec.capabilities.prefix_decode else None

    def decode_bytes(self, payload: Buffer, where: str = "") -> Buffer:
        """The array->bytes stage's input: every bytes->bytes stage undone."""
        expected = self.encoded_nbytes
        data: Buffer = payload
        for stage in reversed(self.compressors):
            data = stage.codec.decode(data, expected, stage.params, where)
        return data

    def max_output(self, stored: int) -> int | None:
        """The most bytes ``stored`` bytes decode to through the bytes->bytes stages (None: no bound)."""
        size: int | None = stored
        for stage in reversed(self.compressors):
            size = None if size is None else stage.codec.max_output(size)
        return size

    def decode_capped(self, payload: Buffer, cap: int, where: str = "") -> Buffer:
        """Like :meth:`decode_bytes` for a payload whose decoded size nobody records: at most ``cap`` bytes
        (less where a stage's :meth:`max_output` bounds it lower)."""
        data: Buffer = payload
        for stage in reversed(self.compressors):
            bound = stage.codec.max_output(len(data))
            data = stage.codec.decode_capped(data, min(cap, bound if bound is not None else cap), stage.params, where)
        return data

    def decode(self, payload: Buffer, where: str = "") -> np.ndarray:
        """All the values, flat, in native byte order."""
        return self.values.codec.decode_values(self.decode_bytes(payload, where), self.count, self.values.params)

    def decodes_into(self, dtype: np.dtype) -> bool:
        """Whether :meth:`decode_into` writes an array of ``dtype`` without a cast."""
        return self._into_dtype is not None and bool(self._into_dtype == dtype)

    @functools.cached_property
    def _direct(self) -> Stage | None:
        """The one stage that decodes raw values straight into a caller's buffer, if the chain has one."""
        direct = self.values.codec is RAW and len(self._active) == 1 and self._stage.codec.capabilities.decode_into
        return self._stage if direct else None

    @functools.cached_property
    def _into_dtype(self) -> np.dtype | None:
        """The one dtype :meth:`decode_into` writes without a cast (None: values stored in a swapped byte
        order); asked for every tile of a read, so worked out once."""
        if self.values.codec is RAW:
            stored = np.dtype(self.values.params["dtype"])
            return stored.newbyteorder("=") if stored.isnative or stored.itemsize == 1 else None
        return self._native_dtype()

    def decode_into(self, payload: Buffer, out: np.ndarray, where: str = "") -> None:
        """All the values into ``out`` (writable, of :meth:`decodes_into`'s dtype): a compressor that can
        decode into a buffer writes raw native values straight into ``out``."""
        direct = self._direct
        if direct is not None and out.flags.c_contiguous and self.decodes_into(out.dtype):
            direct.codec.decode_into(payload, out, direct.params, where)
            return
        encoded = self.decode_bytes(payload, where)
        if self.values.codec is RAW:
            check_size(encoded, out.nbytes, "payload", where)
        self.values.codec.decode_values_into(encoded, out, self.values.params)

    def zarr(self) -> list[dict[str, Any]] | None:
        """The Zarr v3 codecs after ``bytes`` that decode the stored bytes (each stage's :meth:`Codec.zarr`);
        None when Zarr cannot (a stage it has no codec for, or values not stored as they are)."""
        parts = [stage.codec.zarr(stage.params) for stage in self.compressors]
        if self.values.codec is not RAW or None in parts:
            return None
        return [entry for part in parts for entry in part or ()]

    def merge_gap(self) -> int:
        """Elements between two wanted runs below which one :meth:`decode_range` of both costs less than two
        (the bytes->bytes stage's :meth:`Codec.merge_gap`, in elements)."""
        gap = self._stage.codec.merge_gap(self._stage.params)
        return max(1, gap * self.count // max(self.encoded_nbytes, 1))

    def stored_span(self, start: int, stop: int, stored: int) -> tuple[int, int]:
        """Stored bytes ``[a, b)`` (of ``stored``) that elements ``[start, stop)`` need (:attr:`partial` only)."""
        lo, hi, _bit = self.values.codec.element_span(start, stop, self.values.params)
        return self._stage.codec.stored_span(lo, hi, self.encoded_nbytes, stored, self._stage.params)

    def decode_range(self, piece: Buffer, base: int, start: int, stop: int, where: str = "") -> np.ndarray:
        """Values ``[start, stop)``, flat, from ``piece`` (stored bytes from offset ``base``, covering
        :meth:`stored_span`); only for :attr:`partial` chains."""
        if stop <= start:
            return np.empty(0, dtype=self._native_dtype())
        lo, hi, bit = self.values.codec.element_span(start, stop, self.values.params)
        stage = self._stage
        encoded = stage.codec.decode_range(piece, base, lo, hi, self.encoded_nbytes, stage.params, where)
        check_size(encoded, hi - lo, f"{stage.codec.name} range", where)
        return self.values.codec.decode_values(encoded, stop - start, self.values.params, bit)

    def read_ranges(
        self, fetch: Fetch, runs: Sequence[tuple[int, int]], stored: int, where: str = ""
    ) -> list[np.ndarray] | None:
        """Values of each element run ``[start, stop)``, flat, read through ``fetch`` by a compressor that reads
        its own index first (:meth:`Codec.read_ranges`); None where none does (use :meth:`stored_span`)."""
        if len(self._active) != 1 or not self.partial:
            return None
        stage, values = self._stage, self.values
        spans = [values.codec.element_span(a, b, values.params) for a, b in runs]
        ranges = [(lo, hi) for lo, hi, _bit in spans]
        parts = stage.codec.read_ranges(fetch, ranges, self.encoded_nbytes, stored, stage.params, where)
        if parts is None:
            return None
        out = []
        for part, (lo, hi, bit), (a, b) in zip(parts, spans, runs, strict=True):
            check_size(part, hi - lo, stage.codec.name, where)
            out.append(values.codec.decode_values(part, b - a, values.params, bit))
        return out

    def _native_dtype(self) -> np.dtype:
        fixed = self.values.codec.decoded_dtype
        return fixed if fixed is not None else np.dtype(self.values.params["dtype"]).newbyteorder("=")


def native_order(dtype: np.dtype | str, byte_order: str) -> np.dtype:
    """``dtype`` in the byte order ``little``/``big`` (what :data:`RAW` takes as its ``dtype`` parameter)."""
    nd: np.dtype = np.dtype(dtype)
    return nd if nd.itemsize == 1 else nd.newbyteorder("<" if byte_order == "little" else ">")
