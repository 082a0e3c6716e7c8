"""Tetration inspection for the CLI (info, ls, verify) and the format record the registry reads."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..registry import FormatSpec
from ..reports import CheckItem, Table, VerifyPlan, count, shape_text
from .model import CODECS, MAGIC
from .reader import TetrFile, TetrTileReader, open_tetr


def _info(f: TetrFile) -> list[str]:
    tiles = sum(len(d.entries) for d in f.datasets)
    return [
        f"format:   Tetration layout v{f.layout_version}",
        f"content:  {count(len(f.datasets), 'dataset')}, {count(tiles, 'tile')}, "
        f"footer {'present' if f.footer_present else 'absent'}",
    ]


def _ls(f: TetrFile, tiles: bool = False) -> list[Table]:
    """One row per dataset (tile grid, codec, dims); with ``tiles``, one row per tile too."""
    rows: list[list[Any]] = [
        [
            d.dataset_id,
            d.name,
            str(d.dtype.newbyteorder("=")),
            *map(shape_text, (d.shape, d.chunk_shape, d.grid)),
            len(d.entries),
            d.codec,
            ",".join(d.dim_names or []) or "-",
        ]
        for d in f.datasets
    ]
    summary = f"{count(len(f.datasets), 'dataset')}, Tetration layout v{f.layout_version}"
    headers = ["id", "dataset", "dtype", "shape", "tile", "grid", "tiles", "codec", "dims"]
    tables = [Table(headers, rows, right=(0, 6), summary=summary)]
    if tiles:  # codes were checked on opening
        tile_rows: list[list[Any]] = [
            [d.name, ",".join(map(str, c)), int(e["offset"]), int(e["stored"]), int(e["raw"]), CODECS[int(e["codec"])]]
            for d in f.datasets
            for c, e in zip(np.ndindex(*d.grid), d.entries[d.table.reshape(-1)], strict=True)
        ]
        tables.append(Table(["dataset", "tile", "offset", "stored", "raw", "codec"], tile_rows, right=(2, 3, 4)))
    return tables


def _decode_tile(reader: TetrTileReader, coords: tuple[int, ...]) -> bool:
    reader.read_chunk(coords)
    return False  # decoded; there is no checksum to verify


def _verify(f: TetrFile) -> VerifyPlan:
    """Every tile decoded: layout v1 stores no checksums, so decoding is the whole check."""
    items: list[CheckItem] = [
        (f"dataset {d.name!r} tile {list(coords)}", partial(_decode_tile, reader, tuple(coords)))
        for d in f.datasets
        for reader in [f.tile_reader(d.dataset_id)]
        for coords in np.ndindex(*d.grid)
    ]
    return VerifyPlan(
        items=items,
        total_bytes=sum(int(d.entries["stored"].sum()) for d in f.datasets),
        summary=f"{count(len(f.datasets), 'dataset')}, {count(len(items), 'tile')}",
        unit="tile",
        checksums=False,
    )


FORMAT = FormatSpec(
    name="tetr",
    title="Tetration layout",
    magics=(MAGIC,),
    extensions=(".tet",),
    open=open_tetr,
    assembler="xarray_tensogram.assemble.tetr:tetr_group",
    writer="xarray_tensogram.write.tetr:to_tetr",
    virtual_parser="xarray_tensogram.virtual.parsers:TetrParser",
    info=_info,
    ls=_ls,
    verify=_verify,
)
