"""GRIB-style simple packing (Tensogram ``encoding: simple_packing``), spec §12.1: values are
``v = R + (2**E * 10**-D) * q`` for unsigned ``B``-bit integers ``q``, decoded and encoded vectorised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .base import Buffer, Capabilities, Codec, Param, Role
from .bits import pack_fields, unpack_fields

__all__ = ["CODEC", "compute_params", "decode", "decode_into", "encode"]


def decode(
    payload: bytes | memoryview | np.ndarray,
    count: int,
    bits: int,
    reference: float,
    binary_scale: int,
    decimal_scale: int,
    bit_offset: int = 0,
) -> np.ndarray:
    """Unpack ``count`` values into float64."""
    out = np.empty(count, dtype=np.float64)
    decode_into(out, payload, bits, reference, binary_scale, decimal_scale, bit_offset)
    return out


def decode_into(
    out: np.ndarray,
    payload: bytes | memoryview | np.ndarray,
    bits: int,
    reference: float,
    binary_scale: int,
    decimal_scale: int,
    bit_offset: int = 0,
) -> None:
    """Unpack ``out.size`` values into the float64 array ``out`` (any layout), with no intermediate array for
    whole-byte widths: ``R + factor * q`` computed as ``q * factor`` then ``+ R``, as the reference does."""
    count = out.size
    if bits == 0:
        out[...] = float(reference)
        return
    factor = (2.0**binary_scale) * (10.0 ** (-decimal_scale))
    raw = np.frombuffer(payload, dtype=np.uint8) if not isinstance(payload, np.ndarray) else payload.view(np.uint8)
    if bit_offset == 0 and bits in (8, 16, 32):
        q: np.ndarray = raw[: count * (bits // 8)].view(f">u{bits // 8}").reshape(out.shape)
    elif bit_offset == 0 and bits == 24 and raw.size >= 3 * count:
        # GRIB's usual width: three byte columns shifted together (no per-position loop, no uint64 step)
        b = raw[: 3 * count].reshape(count, 3)
        q = ((b[:, 0].astype(np.uint32) << 16) | (b[:, 1].astype(np.uint32) << 8) | b[:, 2]).reshape(out.shape)
    else:
        q = unpack_fields(raw, count, bits, bit_offset).reshape(out.shape)
    np.multiply(q, factor, out=out, casting="unsafe")  # integers below 2**53 convert to float64 exactly
    out += float(reference)


def compute_params(values: np.ndarray, bits: int, decimal_scale: int = 0) -> tuple[float, int]:
    """Reference value R and binary scale factor E, as the reference computes them."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0 or bits == 0:
        return (float(values[0]) if values.size else 0.0), 0
    if not np.all(np.isfinite(values)):
        raise ValueError("simple_packing cannot compute parameters for NaN or Inf values")
    # the first minimum in order, as the reference scans (keeps the sign of a leading -0.0)
    vmin, vmax = float(values[int(np.argmin(values))]), float(values.max())
    rng = (vmax - vmin) * 10.0**decimal_scale
    maxp = float(2**bits - 1)
    E = 0 if rng == 0 else math.ceil(math.log2(rng / maxp))
    return vmin, E


def encode(values: np.ndarray, bits: int, reference: float, binary_scale: int, decimal_scale: int) -> bytes:
    """Pack float64 values into ``ceil(n*bits/8)`` bytes (round half away from zero, clamped)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if bits == 0:
        return b""
    scale = 10.0**decimal_scale * 2.0 ** (-binary_scale)
    x = (values - reference) * scale
    # round half away from zero without x + 0.5 (which rounds wrongly above 2**52)
    a = np.abs(x)
    fl = np.floor(a)
    q = np.copysign(fl + (a - fl >= 0.5), x)
    maxp = float(2**bits - 1)
    q = np.clip(q, 0.0, maxp)
    # above 53 bits a float64 cannot hold 2**bits - 1 exactly: clamp each value as a Python int
    qi = np.array([min(int(v), 2**bits - 1) for v in q], dtype=np.uint64) if bits >= 53 else q.astype(np.uint64)
    return pack_fields(qi, bits)


class SimplePacking(Codec):
    """GRIB simple packing of float64 values into ``bits_per_value``-bit integers: an array->bytes codec whose
    runs of values decode from the bits that hold them alone (partial decode over the bit range)."""

    name = "simple_packing"
    role = Role.ARRAY_BYTES
    decoded_dtype = np.dtype(np.float64)
    params = (
        Param("bits_per_value", int, 16, bounds=(0, 64), doc="bits per packed value"),
        Param("decimal_scale_factor", int, 0, bounds=(-308, 308), doc="D of v = R + 2**E * 10**-D * q"),
        Param("reference_value", float, doc="R (worked out from the values)", recorded=True),
        Param("binary_scale_factor", int, bounds=(-256, 256), doc="E (worked out from the values)", recorded=True),
    )
    capabilities = Capabilities(decode_into=True, partial_decode=True)

    @staticmethod
    def _packing(params: Mapping[str, Any]) -> tuple[int, float, int, int]:
        return (
            int(params["bits_per_value"]),
            float(params["reference_value"]),
            int(params["binary_scale_factor"]),
            int(params.get("decimal_scale_factor", 0)),
        )

    def decode(self, payload: Buffer, expected: int, params: Mapping[str, Any], where: str = "") -> Buffer:
        return self.decode_values(payload, expected // 8, params)

    def decode_into(self, payload: Buffer, out: np.ndarray, params: Mapping[str, Any], where: str = "") -> None:
        self.decode_values_into(payload, out, params)

    def encoded_nbytes(self, count: int, params: Mapping[str, Any]) -> int:
        return (count * int(params["bits_per_value"]) + 7) // 8

    def element_span(self, start: int, stop: int, params: Mapping[str, Any]) -> tuple[int, int, int]:
        bits = int(params["bits_per_value"])
        return start * bits // 8, (stop * bits + 7) // 8, start * bits % 8

    def decode_values(self, encoded: Buffer, count: int, params: Mapping[str, Any], bit_offset: int = 0) -> np.ndarray:
        return decode(encoded, count, *self._packing(params), bit_offset)

    def decode_values_into(self, encoded: Buffer, out: np.ndarray, params: Mapping[str, Any]) -> None:
        decode_into(out, encoded, *self._packing(params))

    def encode(self, data: Buffer, params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
        values = np.frombuffer(data, dtype=np.float64) if not isinstance(data, np.ndarray) else data
        bits, decimal = int(params.get("bits_per_value", 16)), int(params.get("decimal_scale_factor", 0))
        recorded: dict[str, Any] = {}
        if "reference_value" not in params:
            reference, binary = compute_params(values, bits, decimal)
            recorded = {"reference_value": float(reference), "binary_scale_factor": int(binary)}
        p = {**params, **recorded}
        return encode(values, bits, float(p["reference_value"]), int(p["binary_scale_factor"]), decimal), recorded


CODEC = SimplePacking()
