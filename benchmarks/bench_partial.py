"""Point series, small windows and whole objects: ours against the reference ``tensogram`` decoder.

Data: 24 messages of one 721x1440 float64 field each, written by the reference encoder ``tensogram==0.24``
into a temporary directory (deleted afterwards), one file per pipeline. Nothing is asserted; a table is
printed (``--markdown`` for docs/performance.md).

1. Point series ``ds["t"][:, 360, 720]`` through ``xr.open_dataset(engine="tensogram")`` (the dataset opened
   once) against the reference's ``file_decode_range`` per message (its own file handle opened once; its
   xarray backend cannot stack packed fields whose descriptors differ per message). Then a 10x10 window
   ``ds["t"][:, 355:365, 715:725]`` against ``file_decode_range`` of the window's 10 row runs per message.
   Ours decodes only the blocks holding the selection where the codec chain allows partial decode.
2. Whole-object decode, one thread: ``read_object`` of each message against the reference's
   ``file_decode_object(threads=0)``.

Each pair is timed alternately (ours, reference, ours, ...) ``--repeat`` times after a warm-up, and the
figure is the median; the ratio is reference time / our time (above 1: ours is faster).

Run: ``python benchmarks/bench_partial.py [--repeat 9] [--markdown]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensogram  # the reference: writes the data and is the speed reference
import xarray as xr

from xarray_tensogram import open_tensogram

SHAPE = (721, 1440)
STEPS = 24
POINT = (360, 720)
WINDOW = (slice(355, 365), slice(715, 725))

SZIP = {"compression": "szip", "szip_rsi": 128, "szip_block_size": 16, "szip_flags": 8}
#: pipeline name -> descriptor keys (the issue's four point-series pipelines first)
PIPELINES: dict[str, dict] = {
    "simple_packing 24 + szip": {"encoding": "simple_packing", "sp_bits_per_value": 24, **SZIP},
    "blosc2": {"compression": "blosc2", "blosc2_codec": "lz4"},
    "zfp fixed_rate 16": {"compression": "zfp", "zfp_mode": "fixed_rate", "zfp_rate": 16.0},
    "simple_packing 16 + zstd": {"encoding": "simple_packing", "sp_bits_per_value": 16, "compression": "zstd"},
    "none": {},
    "simple_packing 24": {"encoding": "simple_packing", "sp_bits_per_value": 24},
    "zstd": {"compression": "zstd"},
    "lz4": {"compression": "lz4"},
    "shuffle + zstd": {"filter": "shuffle", "shuffle_element_size": 8, "compression": "zstd"},
}
POINT_PIPELINES = list(PIPELINES)[:4]


def field(seed: int) -> np.ndarray:
    """A smooth 721x1440 field (a temperature-like ramp plus noise), so compressors behave as on real data."""
    rng = np.random.default_rng(seed)
    lat = np.linspace(-90, 90, SHAPE[0])[:, None]
    lon = np.linspace(0, 360, SHAPE[1], endpoint=False)[None, :]
    base = 280 + 30 * np.cos(np.radians(lat)) + 5 * np.sin(np.radians(3 * lon))
    return base + np.cumsum(rng.normal(0, 0.05, size=SHAPE), axis=1)


def write(path: Path, pipe: dict) -> None:
    with tensogram.TensogramFile.create(str(path)) as f:
        for step in range(STEPS):
            values = field(step)
            desc = {"type": "ntensor", "shape": list(SHAPE), "dtype": "float64", **pipe}
            if pipe.get("encoding") == "simple_packing":
                desc.update(tensogram.compute_packing_params(values.ravel(), pipe["sp_bits_per_value"], 0))
            f.append({"base": [{"mars": {"param": "t", "step": step}}]}, [(desc, values)])


def alternate(ours: Callable[[], object], ref: Callable[[], object] | None, repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` alternated runs (one warm-up of each first); NaN where there is no reference."""
    ours()
    if ref is not None:
        ref()
    a, b = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        ours()
        a.append(time.perf_counter() - t)
        if ref is not None:
            t = time.perf_counter()
            ref()
            b.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b) if b else float("nan")


def _ref_ranges(f: Any, ranges: list[tuple[int, int]]) -> Callable[[], object]:
    def run() -> object:
        return [f.file_decode_range(i, 0, ranges, join=True) for i in range(STEPS)]

    return run


def selections(path: Path, repeat: int) -> list[tuple[str, float, float]]:
    """Point series and 10x10 window series: ours and the reference, with a value check."""
    rows = []
    point = [(POINT[0] * SHAPE[1] + POINT[1], 1)]
    window = [(r * SHAPE[1] + WINDOW[1].start, 10) for r in range(WINDOW[0].start, WINDOW[0].stop)]
    with xr.open_dataset(path, engine="tensogram") as ds, tensogram.TensogramFile.open(str(path)) as f:
        var = ds["t"]
        for what, key, ranges in (
            ("point series", (slice(None), *POINT), point),
            ("10x10 window", (slice(None), *WINDOW), window),
        ):
            try:
                expected = np.stack([np.asarray(f.file_decode_range(i, 0, ranges, join=True)) for i in range(STEPS)])
                ref: Callable[[], object] | None = _ref_ranges(f, ranges)
            except ValueError:  # the reference decodes ranges of block-structured codecs only
                expected, ref = None, None
            got = var[key].values
            if expected is not None and got.reshape(STEPS, -1).tobytes() != expected.tobytes():
                raise AssertionError(f"{path.name} {what}: values differ from the reference decoder's")
            ours_t, ref_t = alternate(lambda key=key: var[key].values, ref, repeat)
            rows.append((what, ours_t, ref_t))
    return rows


def whole(path: Path, repeat: int) -> tuple[float, float]:
    """One whole object per call (message 5), read by both with their files opened once."""
    with open_tensogram(path) as ours_f, tensogram.TensogramFile.open(str(path)) as ref_f:
        msg = ours_f[5]
        got = msg.read_object(0)
        expected = np.asarray(ref_f.file_decode_object(5, 0, threads=0)["data"])
        if got.tobytes() != expected.reshape(got.shape).tobytes():
            raise AssertionError(f"{path.name}: whole object differs from the reference decoder's")
        return alternate(lambda: msg.read_object(0), lambda: ref_f.file_decode_object(5, 0, threads=0), repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated pipeline names")
    args = ap.parse_args()
    names = [n for n in PIPELINES if not args.only or n in args.only.split(",")]
    table: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = Path(tmp) / f"{name.replace(' ', '_').replace('+', '')}.tgm"
            write(path, PIPELINES[name])
            if name in POINT_PIPELINES:
                table += [(name, what, a, b) for what, a, b in selections(path, args.repeat)]
            a, b = whole(path, args.repeat)
            table.append((name, "whole object", a, b))
            path.unlink()
    head = ("pipeline", "read", "reference", "ours", "ours vs reference")
    lines = [(n, w, _ms(b), _ms(a), f"{b / a:.2f}x" if b == b else "—") for n, w, a, b in table]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        print("\n".join("| " + " | ".join(line) + " |" for line in lines))
    else:
        widths = [max(len(str(r[i])) for r in [head, *lines]) for i in range(len(head))]
        for r in [head, *lines]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


def _ms(t: float) -> str:
    return "—" if t != t else f"{t * 1e3:.2f} ms"


if __name__ == "__main__":
    main()
