"""How ``info``, ``ls`` and ``verify`` see a zTensor file, and its format record."""

from __future__ import annotations

from functools import partial

from ...errors import MissingHashError
from ..registry import FormatSpec
from ..reports import CheckItem, Table, VerifyPlan, count, shape_text, short_text
from .containers import MAGIC_V01, MAGIC_V1, MAGIC_V2
from .reader import ZTensorFile, open_ztensor

__all__ = ["FORMAT"]


def info(f: ZTensorFile) -> list[str]:
    dialect = f" (manifest {f.dialect})" if f.dialect else ""
    return [f"format:   zTensor v{f.version}{dialect}", f"content:  {count(len(f.tensors), 'tensor')}"]


def ls(f: ZTensorFile, tiles: bool = False) -> list[Table]:
    """One row per tensor: dtype, shape, layout, encoding, where its bytes are, checksum, first attributes."""
    rows = [
        [
            t.index,
            t.name,
            t.dtype,
            shape_text(t.shape),
            t.layout,
            t.encoding,
            (t.parts.get("data") or next(iter(t.parts.values()))).offset,  # every tensor has a part
            sum(p.length for p in t.parts.values()),
            (t.checksum or "-").split(":")[0],
            ", ".join(f"{k}={short_text(v, 20)}" for k, v in list(t.attrs.items())[:3]) or "-",
        ]
        for t in f.tensors
    ]
    headers = ["#", "tensor", "dtype", "shape", "layout", "encoding", "offset", "bytes", "checksum", "attributes"]
    return [Table(headers, rows, right=(0, 6, 7), summary=f"{count(len(f.tensors), 'tensor')}, zTensor v{f.version}")]


def _check(f: ZTensorFile, index: int) -> bool:
    try:
        f.read(index, verify=True)
    except MissingHashError:
        f.read(index)
        return False
    return True


def verify(f: ZTensorFile) -> VerifyPlan:
    """Every tensor, its checksum verified where one is stored."""
    items: list[CheckItem] = [(f"tensor {t.index} {t.name!r}", partial(_check, f, t.index)) for t in f.tensors]
    return VerifyPlan(
        items=items,
        total_bytes=sum(p.length for t in f.tensors for p in t.parts.values()),
        summary=count(len(f.tensors), "tensor"),
        unit="tensor",
    )


FORMAT = FormatSpec(
    name="ztensor",
    title="zTensor",
    magics=(MAGIC_V01, MAGIC_V1, MAGIC_V2),
    extensions=(".zt",),
    open=open_ztensor,
    assembler="xarray_tensogram.assemble.ztensor:ztensor_to_dataset",
    writer="xarray_tensogram.write.ztensor:to_ztensor",
    virtual_parser="xarray_tensogram.virtual.parsers:ZTensorParser",
    info=info,
    ls=ls,
    verify=verify,
)
