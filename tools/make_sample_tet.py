"""Generate the bundled Tetration sample ``xarray_tensogram/samples/sample.tet``.

Two datasets with footer ``dim_names``, ``coords`` labels and ``attrs``, tiled so
that edge tiles are clipped, one raw and one zstd-compressed, plus a history row
and file metadata. Deterministic: running it again gives the same bytes.

    python tools/make_sample_tet.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xarray_tensogram import __version__
from xarray_tensogram.formats.tetr import DatasetWrite, write_tetr

OUT = Path(__file__).resolve().parent.parent / "xarray_tensogram" / "samples" / "sample.tet"


def build() -> list[DatasetWrite]:
    times = ["2024-01-01T00:00", "2024-01-01T06:00", "2024-01-01T12:00", "2024-01-01T18:00"]
    lat = np.linspace(60.0, 35.0, 6)
    lon = np.linspace(-10.0, 25.0, 8)
    t = np.arange(len(times))[:, None, None]
    temperature = (
        280.0
        + 10 * np.cos(np.deg2rad(lat))[None, :, None]
        + 2 * np.sin(lon / 7)[None, None, :]
        + 1.5 * np.sin(t * np.pi / 2)
    ).astype("float32")
    precip = np.round(np.abs(np.sin(lat[:, None] / 5) * np.cos(lon[None, :] / 9)) * 4, 2)
    coords = {"lat": [f"{v:g}" for v in lat], "lon": [f"{v:g}" for v in lon]}
    return [
        DatasetWrite(
            "t2m",
            temperature,
            (2, 4, 5),
            "zstd",
            dim_names=["time", "lat", "lon"],
            coords={"time": times, **coords},
            attrs={"units": "K", "long_name": "2 metre temperature", "_FillValue": "nan"},
        ),
        DatasetWrite(
            "tp",
            precip,
            (4, 8),
            "raw",
            dim_names=["lat", "lon"],
            coords=coords,
            attrs={"units": "mm", "long_name": "total precipitation (6 h)"},
        ),
    ]


def main() -> None:
    write_tetr(
        OUT,
        build(),
        history=[{"op": "write", "source": "tools/make_sample_tet.py", "at": "1704067200"}],
        file_metadata={"tool": "xarray-tensogram", "library_version": __version__, "created_at": "1704067200"},
    )
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
