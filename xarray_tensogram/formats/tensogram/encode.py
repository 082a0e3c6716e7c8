"""Tensogram object encoding (spec §12-§15 in reverse): values + descriptor options -> descriptor and payload region.

Order: NaN/Inf masks -> encoding (simple_packing) -> filter (shuffle) -> compression, each stage encoded by
its codec object, then the mask blobs after the payload, as the reference encoder does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...codecs import blosc2, shuffle, simple_packing, szip, zfp
from ...codecs.base import PASSTHROUGH, Buffer, Codec, Param, Role
from ...codecs.bitmaps import RLE, ROARING
from ...codecs.chain import native_order
from ...errors import EncodeError, UnsupportedError
from .compression import (
    BITMAP_OBJECTS,
    STAGES,
    codec_params,
    descriptor_key,
    lossy_refusal,
    sample_bits,
    stage_codec,
    szip_params,
)
from .dtypes import DTYPES, dtype_width, numpy_dtype
from .masks import DEFAULT_MASK_METHOD, encode_mask

__all__ = [
    "OBJECT_DTYPES",
    "PIPELINE_PARAMS",
    "PIPELINE_VALUES",
    "ObjectInput",
    "check_pipeline",
    "encode_object",
    "encoding_from_descriptor",
]

_RAW = (bytes, bytearray, memoryview)  # data given as the element bytes
#: numpy dtype names an object can hold -> the Tensogram dtype of that name (not bfloat16 or bitmask: no numpy dtype)
OBJECT_DTYPES = {name: name for name in DTYPES if name not in ("bfloat16", "bitmask")}


@dataclass
class ObjectInput:
    """One object to write: values plus descriptor options (``encoding``, ``compression``, ``sp_*`` ...)."""

    data: np.ndarray | bytes
    descriptor: dict[str, Any] = field(default_factory=dict)


#: the values each pipeline stage accepts when writing: the codecs of Tensogram's table that can encode
PIPELINE_VALUES: dict[str, tuple[str, ...]] = {
    stage: tuple(name for name, codec in table.items() if codec.capabilities.encode) for stage, table in STAGES.items()
}
#: every descriptor parameter of a codec: its key -> (codec, parameter)
_PARAMS: dict[str, tuple[Codec, Param]] = {
    descriptor_key(codec, p.name): (codec, p)
    for table in STAGES.values()
    for codec in table.values()
    for p in codec.params
}
#: descriptor keys that say how to encode, not what is worked out per object or by the format -> codec
PIPELINE_PARAMS = {
    key: codec for key, (codec, p) in _PARAMS.items() if codec.capabilities.encode and not (p.recorded or p.derived)
}


def check_pipeline(desc: Mapping[str, Any], *, types: bool = False) -> None:
    """Refuse unknown stage names and parameter values outside the codecs' choices, listing the valid ones; with
    ``types``, parameters of the wrong type or outside their bounds too (:class:`EncodeError`, spec §10.2)."""
    for stage, valid in PIPELINE_VALUES.items():
        value = desc.get(stage, "none")
        if value not in valid:
            readonly = STAGES[stage].get(value) if isinstance(value, str) else None
            extra = f" ({value} can be read but not written)" if readonly is not None else ""
            raise UnsupportedError(f"unknown {stage} {value!r}{extra}; valid values: {', '.join(valid)}")
    for key, (_codec, p) in _PARAMS.items():
        if key in desc and p.choices and desc[key] not in p.choices:
            raise UnsupportedError(f"unknown {key} {desc[key]!r}; valid values: {', '.join(map(str, p.choices))}")
    for key, (_codec, p) in _PARAMS.items() if types else ():
        if key in desc and not p.choices and (problem := p.problem(desc[key])):
            raise EncodeError(f"descriptor parameter {key!r} {problem}")


def encoding_from_descriptor(desc: Mapping[str, Any]) -> dict[str, Any]:
    """The writer options that reproduce an object's pipeline (what ``.encoding`` carries after a read). Stage
    names get a ``tensogram_`` prefix so that netCDF writers, which have their own ``compression`` encoding,
    do not mistake them for theirs; parameters keep their names."""
    out = {f"tensogram_{stage}": desc.get(stage, "none") for stage in PIPELINE_VALUES}
    out.update({k: desc[k] for k in PIPELINE_PARAMS if k in desc})
    return out


def _classify_non_finite(values: np.ndarray, dtype_name: str) -> dict[str, np.ndarray]:
    """Boolean masks of NaN, +Inf, -Inf per element (complex: NaN in either part wins, then +Inf, then -Inf);
    bfloat16 values arrive as their uint16 bit patterns."""
    if dtype_name == "bfloat16":
        bits = np.asarray(values, dtype=np.uint16).reshape(-1)
        special = (bits & 0x7F80) == 0x7F80
        nan = special & ((bits & 0x007F) != 0)
        inf = special & ((bits & 0x007F) == 0)
        return {"nan": nan, "inf+": inf & (bits < 0x8000), "inf-": inf & (bits >= 0x8000)}
    if dtype_name.startswith("complex"):
        re, im = values.real.reshape(-1), values.imag.reshape(-1)
        nan = np.isnan(re) | np.isnan(im)
        pinf = ~nan & ((re == np.inf) | (im == np.inf))
        ninf = ~nan & ~pinf & ((re == -np.inf) | (im == -np.inf))
    else:
        flat = values.reshape(-1)
        nan, pinf, ninf = np.isnan(flat), flat == np.inf, flat == -np.inf
    return {"nan": nan, "inf+": pinf, "inf-": ninf}


def _raw_bytes(data: np.ndarray | bytes, desc: Mapping[str, Any]) -> tuple[bytes, np.ndarray | None]:
    """Element bytes in the declared byte order, and the values as numpy (for NaN scans and packing), as many as
    the shape says. Raw ``bytes`` are taken as they are (the reference never converts them), viewed in the
    declared order."""
    name, given_bytes, shape = desc["dtype"], isinstance(data, _RAW), desc["shape"]
    n = math.prod(shape)
    if name == "bitmask":
        raw = bytes(data) if given_bytes else np.ascontiguousarray(data, dtype=np.uint8).tobytes()
        if len(raw) != (n + 7) // 8:
            raise EncodeError(f"bitmask of shape {shape} needs {(n + 7) // 8} bytes, got {len(raw)}")
        return raw, None
    target = native_order(numpy_dtype(name), desc["byte_order"])  # bfloat16: its bit patterns, as uint16
    if given_bytes:
        raw = bytes(data)
        if len(raw) % target.itemsize:
            raise EncodeError(f"{len(raw)} bytes are not a whole number of {name} elements")
        values = np.frombuffer(raw, dtype=target)
    else:
        values = np.ascontiguousarray(np.asarray(data))
        raw = np.ascontiguousarray(values.astype(target, copy=False)).tobytes()
    if values.size != n:
        raise EncodeError(f"shape {shape} holds {n} elements but the data has {values.size}")
    return raw, values


def encode_object(
    obj: ObjectInput, *, allow_nan: bool, allow_inf: bool, mask_methods: Mapping[str, str], small_mask_threshold: int
) -> tuple[dict[str, Any], bytes]:
    """Run the pipeline; return (descriptor, payload region)."""
    user = dict(obj.descriptor)
    user.pop("hash", None)
    override = user.pop("_mask_method", None)  # per-object choice from the xarray layer
    if override is not None:
        mask_methods = dict.fromkeys(("nan", "inf+", "inf-"), override)
    desc = _descriptor(user, obj.data)
    raw, values = _raw_bytes(obj.data, desc)
    raw, mask_bits = _mask_non_finite(raw, values, desc["dtype"], allow_nan=allow_nan, allow_inf=allow_inf)
    payload = _encode_stages(raw, desc, masked=bool(mask_bits))
    return desc, _append_masks(payload, mask_bits, desc, mask_methods, small_mask_threshold)


def _descriptor(user: dict[str, Any], data: np.ndarray | bytes) -> dict[str, Any]:
    """The full descriptor from the caller's options: dtype and shape from the data unless given, defaults filled."""
    if "dtype" not in user:
        if isinstance(data, _RAW):
            raise EncodeError("a descriptor 'dtype' is required for raw bytes")
        user["dtype"] = OBJECT_DTYPES.get(np.asarray(data).dtype.name)
        if user["dtype"] is None:
            raise UnsupportedError(f"cannot write numpy dtype {np.asarray(data).dtype}")
    name = user["dtype"]
    if name not in DTYPES:
        raise UnsupportedError(f"unknown dtype {name!r}")
    user.setdefault("shape", list(np.shape(data)))
    if not isinstance(user["shape"], (list, tuple)) or not all(
        isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0 for x in user["shape"]
    ):
        raise EncodeError(f"shape {user['shape']!r} must be a list of non-negative integers")
    shape = [int(s) for s in user["shape"]]
    check_pipeline(user, types=True)
    if user.get("byte_order", "little") not in ("little", "big"):
        raise EncodeError(f"byte_order must be 'little' or 'big', got {user['byte_order']!r}")
    desc = {"type": "ntensor", "byte_order": "little", **dict.fromkeys(STAGES, PASSTHROUGH.name), **user}
    desc.update(shape=shape, ndim=len(shape), dtype=name)
    desc["strides"] = [int(s) for s in desc.get("strides", [math.prod(shape[i + 1 :]) for i in range(len(shape))])]
    return desc


#: the dtypes whose values can be NaN or infinite
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def _mask_non_finite(
    raw: bytes, values: np.ndarray | None, name: str, *, allow_nan: bool, allow_inf: bool
) -> tuple[bytes, dict[str, np.ndarray]]:
    """NaN/+Inf/-Inf bitmaps of float values (when allowed), with those elements zeroed in ``raw``."""
    if values is None or name not in _FLOAT_DTYPES or (name != "bfloat16" and bool(np.isfinite(values).all())):
        return raw, {}  # one pass instead of three in the common case (bfloat16 values are bit patterns)
    mask_bits = {kind: bits for kind, bits in _classify_non_finite(values, name).items() if bits.any()}
    for kind, bits in mask_bits.items():
        if not (allow_nan if kind == "nan" else allow_inf):
            raise EncodeError(
                f"element {int(np.flatnonzero(bits)[0])} is {'NaN' if kind == 'nan' else kind.replace('inf', 'Inf')}; "
                f"pass allow_nan/allow_inf (or mask the values) to write it"
            )
    if mask_bits:
        zeroed = np.frombuffer(raw, dtype=np.uint8).reshape(values.size, -1).copy()
        zeroed[np.logical_or.reduce(list(mask_bits.values()))] = 0  # all-zero bytes (both parts for complex)
        raw = zeroed.tobytes()
    return raw, mask_bits


def _encode_stages(raw: bytes, desc: dict[str, Any], *, masked: bool) -> bytes:
    """The stages in turn, each codec given its descriptor parameters and what :data:`_PREPARE` decides beyond
    them (refusing what the reference could not read back); what a codec works out is recorded in ``desc``."""
    data: Buffer = raw
    for stage in STAGES:
        codec = stage_codec(stage, desc[stage])  # a codec that can be written: checked with the descriptor
        if codec is PASSTHROUGH:
            continue
        if codec.role is Role.ARRAY_BYTES:  # it takes the values, in their declared byte order
            data = np.frombuffer(data, dtype=native_order(numpy_dtype(desc["dtype"]), desc["byte_order"]))
        params = codec_params(desc, codec)
        prepare = _PREPARE.get(codec)
        if prepare is not None:
            params = prepare(data, desc, params, masked)
        data, recorded = BITMAP_OBJECTS.get(codec, codec).encode(data, params)
        desc.update({descriptor_key(codec, name): value for name, value in recorded.items()})
    return bytes(data)


def _append_masks(
    payload: bytes,
    mask_bits: Mapping[str, np.ndarray],
    desc: dict[str, Any],
    mask_methods: Mapping[str, str],
    small_mask_threshold: int,
) -> bytes:
    """The payload region: the payload, then one blob per mask kind, recorded in ``desc["masks"]``."""
    if not mask_bits:
        return payload
    parts, masks = [payload], {}
    for kind, bits in mask_bits.items():  # nan, inf+, inf-: the reference's order
        blob, method, params = encode_mask(bits, mask_methods.get(kind, DEFAULT_MASK_METHOD), small_mask_threshold)
        masks[kind] = {
            "offset": sum(map(len, parts)),
            "length": len(blob),
            "method": method,
            **({"params": params} if params else {}),
        }
        parts.append(blob)
    desc["masks"] = masks
    return b"".join(parts)


def _packing_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    """simple_packing: float64 values, a bit width, and R and E given together or worked out from the values."""
    if desc["dtype"] != "float64":
        raise EncodeError("simple_packing needs float64 values")
    bits = params.get("bits_per_value")
    if not isinstance(bits, int) or not 0 <= bits <= 64:
        raise EncodeError(f"sp_bits_per_value must be an integer in 0..64, got {bits!r}")
    params["decimal_scale_factor"] = desc.setdefault("sp_decimal_scale_factor", 0)
    if ("reference_value" in params) != ("binary_scale_factor" in params):
        raise EncodeError("give both sp_reference_value and sp_binary_scale_factor, or neither")
    if "reference_value" not in params:
        if masked:
            raise EncodeError("simple_packing cannot compute parameters from data with NaN/Inf")
        R, E = simple_packing.compute_params(np.asarray(data), bits, int(params["decimal_scale_factor"]))
        params["reference_value"] = desc["sp_reference_value"] = float(R)
        params["binary_scale_factor"] = desc["sp_binary_scale_factor"] = int(E)
    if not math.isfinite(float(params["reference_value"])):
        raise EncodeError(f"sp_reference_value must be finite, got {params['reference_value']!r}")
    if abs(int(params["binary_scale_factor"])) > 256:
        raise EncodeError(f"sp_binary_scale_factor {params['binary_scale_factor']} is outside -256..256")
    return params


def _shuffle_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    """shuffle: the element size of the dtype unless given."""
    key = descriptor_key(shuffle.CODEC, "element_size")
    size = desc.setdefault(key, dtype_width(desc["dtype"]) or 1)
    if not isinstance(size, int):
        raise EncodeError(f"{key} {size!r} does not divide the {len(data)}-byte payload")
    return {"element_size": size}


def _szip_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    for name in ("rsi", "block_size", "flags"):
        if name not in params:
            raise EncodeError(f"szip needs {descriptor_key(szip.CODEC, name)}")
    return szip_params(desc)


def _blosc2_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    return {**params, "typesize": max(1, (sample_bits(desc) + 7) // 8)}


def _zfp_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    mode = params.get("mode")
    if mode not in zfp.MODES or zfp.MODES[mode] not in params:
        raise EncodeError(f"zfp needs zfp_mode and its parameter, got {mode!r}")
    refusal = lossy_refusal(desc, zfp.CODEC.name)  # None: float64 values in native order, whole doubles
    if refusal:  # the reference writes such objects, and every decoder then returns unrelated values
        raise EncodeError(f"not written: {refusal}")
    return params


def _bitmask_params(data: Buffer, desc: dict[str, Any], params: dict[str, Any], masked: bool) -> dict[str, Any]:
    if desc["dtype"] != "bitmask":
        raise EncodeError(f"{desc['compression']} compression applies to bitmask objects only")
    return params


#: what the descriptor decides for a codec beyond its parameters (given its input and whether there are masks)
_PREPARE: dict[Codec, Callable[[Buffer, dict[str, Any], dict[str, Any], bool], dict[str, Any]]] = {
    simple_packing.CODEC: _packing_params,
    shuffle.CODEC: _shuffle_params,
    szip.CODEC: _szip_params,
    blosc2.CODEC: _blosc2_params,
    zfp.CODEC: _zfp_params,
    RLE: _bitmask_params,
    ROARING: _bitmask_params,
}
