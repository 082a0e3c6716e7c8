"""Codecs for chunks that standard Zarr codecs cannot decode, for Zarr v2 (numcodecs) and v3.

* :class:`TensogramFrameCodec` (``xarray_tensogram.tgm_frame``): one whole Tensogram data-object frame in, its
  values out. The frame carries its own descriptor, so objects of different pipelines (packing parameters,
  compressors, NaN masks) share one Zarr array with no per-chunk configuration.
* :class:`TetrTileCodec` (``xarray_tensogram.tet_tile``): a Tetration tile in, the tile padded to the full chunk
  out. A codec never learns which chunk it decodes, so the references give every special tile (clipped at the
  edge, or with another codec than the array's) a byte range of a length no ordinary tile has, starting
  ``skip`` bytes early; the configuration maps that length to the tile's layout.

Both decode to little-endian bytes of the array's dtype (the Zarr ``bytes`` codec does the rest), and are
registered with numcodecs (entry points, for kerchunk references: Zarr v2) and zarr-python (for Zarr v3 and
Icechunk); :func:`register` does both where the entry points are not installed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numcodecs.abc import Codec

from ..errors import CodecError, CorruptFileError
from ..formats.tensogram.zarr_layout import FRAME_CODEC_ID
from ..formats.tetr.zarr_layout import TILE_CODEC_ID

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer

# TensogramFrameZarrCodec and TetrTileZarrCodec (zarr v3 classes) are built on first access (module __getattr__)
__all__ = ["TensogramFrameCodec", "TetrTileCodec", "register"]


class _DecodingCodec(Codec):  # type: ignore[misc]  # numcodecs is untyped: Codec is Any
    """A numcodecs codec that only decodes: a chunk's referenced bytes -> its values as little-endian bytes
    (what the Zarr ``bytes`` codec with ``endian: little`` reads). Its configuration is its attributes."""

    codec_id: str
    #: the refusal to encode, naming what writes these files
    writer: str

    def get_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **{k: v for k, v in vars(self).items() if v is not None}}

    def encode(self, buf: Any) -> Any:
        raise CodecError(f"the {self.writer}")

    def values(self, data: memoryview) -> np.ndarray:
        raise NotImplementedError

    def decode(self, buf: Any, out: Any = None) -> Any:
        arr = np.ascontiguousarray(self.values(memoryview(buf).cast("B")))
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)  # no copy where it is little-endian already
        if out is None:
            return arr.tobytes()
        np.frombuffer(memoryview(out).cast("B"), dtype=np.uint8)[:] = arr.reshape(-1).view(np.uint8)
        return out


class TensogramFrameCodec(_DecodingCodec):
    """numcodecs codec: a Tensogram data-object frame -> the object's values (little-endian bytes)."""

    codec_id = FRAME_CODEC_ID  # declared by the format whose layouts name it
    writer = "Tensogram frame codec only decodes: write .tgm files with xarray_tensogram.to_tensogram"

    def __init__(self, astype: str | None = None) -> None:
        #: the dtype the values are handed out in, when it differs from the object's (a cast after decoding:
        #: integers rounded and clipped, as the backend reads them)
        self.astype = astype

    def values(self, data: memoryview) -> np.ndarray:
        """The values of one whole data-object frame (header, descriptor, payload, masks, footer)."""
        from ..array_spec import cast_values
        from ..formats.tensogram import pipeline
        from ..formats.tensogram.objects import ObjectRef, read_frame_layout
        from ..io import BytesSource

        frame, where = np.frombuffer(data, dtype=np.uint8), "virtual chunk"
        source = BytesSource(b"", name=where)  # names the chunk in errors; the bytes come from `frame`
        lay = read_frame_layout(source, ObjectRef(0, len(frame)), where, frame_bytes=frame)
        region = frame[lay.region_start : lay.region_start + lay.region_length]
        values = pipeline.decode_full(region, lay.descriptor, f"{where}: ")
        return cast_values(values, np.dtype(self.astype)) if self.astype else values


class TetrTileCodec(_DecodingCodec):
    """numcodecs codec: a Tetration tile (raw or zstd, possibly clipped) -> the full chunk (little-endian bytes).
    ``special`` maps the length of a special tile's byte range (a string: JSON keys) to ``[skip, stored, raw,
    codec, clipped_shape]``; any other length is an ordinary full tile of the default ``codec`` (0 raw, 1 zstd)."""

    codec_id = TILE_CODEC_ID
    writer = "Tetration tile codec only decodes: write .tet files with xarray_tensogram.to_tetr"

    def __init__(
        self, dtype: str, chunk_shape: list[int], codec: int = 0, special: dict[str, list[Any]] | None = None
    ) -> None:
        self.dtype = str(np.dtype(dtype).str)
        self.chunk_shape = [int(c) for c in chunk_shape]
        self.codec = int(codec)
        self.special = {str(k): list(v) for k, v in (special or {}).items()}

    def values(self, data: memoryview) -> np.ndarray:
        from ..formats.tetr.model import tile_chain

        dtype = np.dtype(self.dtype)
        full_bytes = int(np.prod(self.chunk_shape, dtype=np.int64)) * dtype.itemsize
        ordinary = [0, len(data), full_bytes, self.codec, self.chunk_shape]
        skip, stored, raw, codec, shape = self.special.get(str(len(data)), ordinary)
        payload = data[skip : skip + stored]
        where = f"Tetration tile of {len(data)} referenced bytes: "
        count, odd = divmod(int(raw), dtype.itemsize)
        flat = payload if odd else tile_chain(int(codec), dtype, count).decode_bytes(payload, where)
        if odd or len(flat) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise CorruptFileError(f"{where}{len(flat)} bytes do not fill a tile of shape {list(shape)} ({dtype})")
        tile: np.ndarray = np.frombuffer(flat, dtype=dtype).reshape(shape)
        if list(shape) == self.chunk_shape:
            return tile
        padded = np.zeros(self.chunk_shape, dtype=dtype)  # the padding lies outside the array: never seen
        padded[tuple(slice(0, n) for n in shape)] = tile
        return padded


# -- Zarr v3 ------------------------------------------------------------------------------------------
def _zarr_codec_class(numcodec: type[Codec]) -> type:
    """A zarr-python v3 bytes-to-bytes codec delegating to the numcodecs codec ``numcodec``; VirtualiZarr writes
    its ``codec_config`` (the numcodecs form) into kerchunk references, so a chunk decodes through either."""
    from zarr.abc.codec import BytesBytesCodec
    from zarr.core.buffer.cpu import as_numpy_array_wrapper

    name = numcodec.codec_id

    @dataclass(frozen=True)
    class _Codec(BytesBytesCodec):  # type: ignore[misc, unused-ignore]  # Any where zarr is not installed
        is_fixed_size = False
        configuration: dict[str, Any]

        def __init__(self, **configuration: Any) -> None:
            object.__setattr__(self, "configuration", dict(configuration))

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Any:
            return cls(**dict(data.get("configuration") or {}))

        def to_dict(self) -> dict[str, Any]:
            return {"name": name, "configuration": dict(self.configuration)}

        @property
        def codec_config(self) -> dict[str, Any]:
            return {"id": name, **self.configuration}

        async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
            decode = numcodec(**self.configuration).decode
            return await asyncio.to_thread(as_numpy_array_wrapper, decode, chunk_bytes, chunk_spec.prototype)

        async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
            raise CodecError(f"{name} only decodes")

        def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
            raise NotImplementedError

    _Codec.__name__ = _Codec.__qualname__ = numcodec.__name__.replace("Codec", "ZarrCodec")
    return _Codec


#: the zarr-python class of each numcodecs codec, by the name this module gives it
_ZARR_CLASSES: dict[str, type[_DecodingCodec]] = {
    "TensogramFrameZarrCodec": TensogramFrameCodec,
    "TetrTileZarrCodec": TetrTileCodec,
}


def __getattr__(name: str) -> Any:
    # the zarr classes are built on first use, so importing this module does not import zarr
    if name not in _ZARR_CLASSES:
        raise AttributeError(name)
    cls = globals()[name] = _zarr_codec_class(_ZARR_CLASSES[name])
    return cls


def register() -> None:
    """Register both codecs with numcodecs and zarr-python (the entry points do this when installed)."""
    import numcodecs
    from zarr.registry import get_codec_class, register_codec

    for attr, codec in _ZARR_CLASSES.items():
        numcodecs.register_codec(codec)
        try:
            get_codec_class(codec.codec_id)
        except KeyError:
            register_codec(codec.codec_id, __getattr__(attr))
