"""How ``info``, ``ls`` and ``verify`` see a Tensogram file, and its format record."""

from __future__ import annotations

from functools import partial

from ...errors import MissingCodecError, MissingHashError
from ..registry import FormatSpec
from ..reports import CheckItem, Table, VerifyPlan, count, flat_keys, shape_text, short_text
from .framing import MAGIC
from .reader import Message, TensogramFile, open_tensogram, read_frame_layout

__all__ = ["FORMAT"]

_NAME_KEYS = ("name", "mars.param", "param", "mars.shortName", "shortName")
_KEY_COLUMNS = ("mars.date", "mars.time", "mars.step", "mars.levelist", "mars.number")


def info(f: TensogramFile) -> list[str]:
    versions = sorted({m.preamble.version for m in f})
    objects = sum(len(m) for m in f)
    lines = [
        f"format:   Tensogram, wire version {', '.join(map(str, versions))}",
        f"content:  {count(len(f), 'message')}, {count(objects, 'object')}",
    ]
    if f.skipped:
        lines.append(f"damaged:  {count(len(f.skipped), 'damaged byte range')} skipped (run 'verify')")
    return lines


def ls(f: TensogramFile, tiles: bool = False) -> list[Table]:
    """One row per object: position, frame, name, dtype, shape, pipeline, hash and MARS key columns."""
    entries = [
        (m, j, flat_keys({k: v for k, v in m.base[j].items() if k != "_reserved_"})) for m in f for j in range(len(m))
    ]
    keys = [k for k in _KEY_COLUMNS if any(k in e[2] for e in entries)]
    rows = []
    for m, j, flat in entries:
        ref = m.ref(j)
        lay = read_frame_layout(m.source, ref, f"message {m.index}, object {j}")
        d = lay.descriptor
        name = next((flat[k] for k in _NAME_KEYS if k in flat), f"object_{j}")
        pipeline = "+".join(d[k] for k in ("encoding", "filter", "compression") if d[k] not in ("", "none")) or "raw"
        rows.append(
            [
                m.index,
                j,
                ref.frame_offset,
                ref.frame_length,
                name,
                d["dtype"],
                shape_text(d["shape"]),
                pipeline,
                "xxh3" if lay.hash_present else "-",
            ]
            + [short_text(flat.get(k, "")) for k in keys]
        )
    headers = ["msg", "obj", "offset", "bytes", "name", "dtype", "shape", "pipeline", "hash"]
    return [
        Table(
            headers + [k.split(".")[-1] for k in keys],
            rows,
            right=(0, 1, 2, 3),
            summary=f"{count(len(f), 'message')}, {count(len(rows), 'object')}",
        )
    ]


def _check(m: Message, j: int) -> bool:
    """Verify and decode one object. The xxh3 is checked before decoding, so a MissingCodecError from a
    verified read means the hash matched: it is marked ``hash_verified`` for ``verify`` to report."""
    hashed = True
    try:
        try:
            m.read_object(j, verify_hash=True)
        except MissingHashError:
            hashed = False
            m.read_object(j)
    except MissingCodecError as exc:
        exc.hash_verified = hashed
        raise
    return hashed


def verify(f: TensogramFile) -> VerifyPlan:
    """Every object, hash checked where stored; byte ranges the scanner skipped are failures already."""
    pairs = [(m, j) for m in f for j in range(len(m))]
    items: list[CheckItem] = [(f"message {m.index}, object {j}", partial(_check, m, j)) for m, j in pairs]
    return VerifyPlan(
        items=items,
        total_bytes=sum(m.objects[j].frame_length for m, j in pairs),
        summary=f"{count(len(f), 'message')}, {count(len(pairs), 'object')}",
        unit="object",
        failures=[f"FAIL bytes {start}..{end}: skipped: {reason}" for start, end, reason in f.skipped],
    )


FORMAT = FormatSpec(
    name="tensogram",
    title="Tensogram",
    magics=(MAGIC,),
    extensions=(".tgm", ".tensogram"),
    open=open_tensogram,
    assembler="xarray_tensogram.assemble.tensogram:tensogram_groups",
    writer="xarray_tensogram.write.tensogram:to_tensogram",
    virtual_parser="xarray_tensogram.virtual.parsers:TensogramParser",
    info=info,
    ls=ls,
    verify=verify,
    magic_optional=True,
)
