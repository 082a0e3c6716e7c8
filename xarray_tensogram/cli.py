"""Command line: ``xarray-tensogram`` / ``python -m xarray_tensogram``.

Without arguments it runs the main job: open every bundled sample with xarray
and print what it contains. ``info FILE`` prints the Dataset summary with the
format and sizes; ``ls FILE`` lists messages/objects, datasets or tensors.
Errors are one clear line (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from importlib import resources
from typing import Sequence

__all__ = ["main", "sample_paths"]


def sample_paths() -> list[str]:
    """Paths of the sample files shipped inside the package."""
    folder = resources.files("xarray_tensogram") / "samples"
    return sorted(str(p) for p in folder.iterdir() if p.name.rsplit(".", 1)[-1] in ("tgm", "tet", "zt"))


def _open(path: str):  # noqa: ANN202
    import xarray as xr

    from .backend import TensogramBackendEntrypoint

    return xr.open_dataset(path, engine=TensogramBackendEntrypoint)


def _format_of(path: str) -> str:
    from .backend import sniff_format
    from .io import open_source

    with open_source(path) as src:
        return {"tensogram": "Tensogram v3", "tetr": "Tetration layout v1", "ztensor": "zTensor"}.get(
            sniff_format(src) or "", "unknown"
        )


def cmd_info(path: str) -> None:
    ds = _open(path)
    try:
        print(f"{path}: {_format_of(path)}, {os.path.getsize(path) if os.path.exists(path) else '?'} bytes on disk, "
              f"{ds.nbytes} bytes decoded")
        print(ds)
    finally:
        ds.close()


def cmd_ls(path: str) -> None:
    fmt = _format_of(path)
    if fmt == "Tensogram v3":
        from .formats.tensogram import open_tensogram

        with open_tensogram(path) as f:
            print(f"{'msg':>4} {'obj':>4} {'offset':>10} {'name':<16} {'dtype':<10} {'shape':<18} {'compression':<12}")
            for m in f:
                for j in range(len(m.objects)):
                    d = m.descriptor(j)
                    entry = m.base[j]
                    mars = entry.get("mars") if isinstance(entry.get("mars"), dict) else {}
                    name = entry.get("name") or mars.get("param") or entry.get("param") or f"object_{j}"
                    print(f"{m.index:>4} {j:>4} {m.objects[j].frame_offset:>10} {str(name):<16} {d['dtype']:<10} "
                          f"{str(d['shape']):<18} {d['compression']:<12}")
        return
    ds = _open(path)
    try:
        print(f"{'variable':<24} {'dtype':<10} {'shape':<20} {'chunks':<20}")
        for name, var in ds.data_vars.items():
            chunks = tuple(var.encoding.get("preferred_chunks", {}).values())
            print(f"{name:<24} {str(var.dtype):<10} {str(var.shape):<20} {str(chunks):<20}")
    finally:
        ds.close()


def main_job() -> None:
    """Open each bundled sample with xarray and show what it holds."""
    for path in sample_paths():
        print("=" * 78)
        cmd_info(path)
        ds = _open(path)
        try:
            for name, var in ds.data_vars.items():
                values = var.values
                if values.dtype.kind in "fiu" and values.size:
                    print(f"  {name}: min {values.min():.6g}, max {values.max():.6g}, mean {values.astype('f8').mean():.6g}")
        finally:
            ds.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xarray-tensogram", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command")
    for name, help_ in (("info", "Dataset summary, format and sizes"), ("ls", "one row per object/dataset/tensor")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("file")
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            if args.command is None:
                main_job()
            elif args.command == "info":
                cmd_info(args.file)
            elif args.command == "ls":
                cmd_ls(args.file)
    except Exception as exc:  # one clear line per error
        if args.debug:
            raise
        print(f"xarray-tensogram: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
