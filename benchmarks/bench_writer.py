"""Tensogram write speed: xarray-tensogram against the reference encoder ``tensogram==0.24.0``.

The ERA-like cube: 24 steps x 4 variables of 721 x 1440 float32 (~400 MB), plus
latitude/longitude, written as one message per step (4 objects each; the coordinates go in the
first message). Three pipelines: none, zstd (level 3), and simple_packing 16 bits + zstd.
All in one run, same arrays, same metadata, hashing on (xxh3, the default of both):

- ``ref encode``: ``tensogram.encode`` of every message (bytes in memory; the target baseline);
- ``ref encode+write``: the same plus writing the bytes to a file and fsync (what a file costs);
- ``ours encode_message``: ``encode_message`` of the same arrays and metadata (bytes in memory);
- ``ours to_tensogram``: ``to_tensogram`` of the in-memory Dataset to a file (atomic write, fsync).

simple_packing needs float64 input: both encoders get the same pre-converted float64 arrays;
``to_tensogram`` starts from the float32 Dataset and converts inside (part of its time).
Timings are medians of ``--repeat`` rounds after one warm-up; the four variants run round robin
in every round, so that changes in machine load affect them alike. Ratios are ours / ``ref encode``;
targets: within 1.5x for none and zstd, 2x for simple_packing. ``to_tgm/ref_wr`` compares
``to_tensogram`` with the reference encoding *and writing* the same file: with ``none`` the time is
mostly disk I/O (400 MB written and fsynced), which varies from run to run on a shared machine.

Run: ``python benchmarks/bench_writer.py [--steps 24] [--params 4] [--ny 721] [--nx 1440] [--repeat 3]
[--configs none,zstd,sp16zstd] [--profile sp16zstd]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensogram
import xarray as xr

from xarray_tensogram import to_tensogram
from xarray_tensogram.formats.tensogram.writer import encode_message

PARAMS = ["t", "u", "v", "q", "z", "r", "w", "vo"]
CONFIGS = {
    # name: (to_tensogram encoding, reference descriptor keys, target ratio)
    "none": ({}, {}, 1.5),
    "zstd": ({"compression": "zstd"}, {"compression": "zstd"}, 1.5),
    "sp16zstd": (
        {"encoding": "simple_packing", "bits_per_value": 16, "compression": "zstd"},
        {"encoding": "simple_packing", "sp_bits_per_value": 16, "compression": "zstd"},
        2.0,
    ),
}


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """One warm-up of each, then ``repeat`` rounds running every variant once (round robin, so that a
    change in machine load hits all of them alike); medians per variant."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def make_dataset(steps: int, params: int, ny: int, nx: int) -> xr.Dataset:
    """Smooth fields with a little noise (compress like real analyses: zstd ~1.1-1.3x on float32)."""
    rng = np.random.default_rng(0)
    lat = np.linspace(90, -90, ny)
    lon = np.linspace(0, 360, nx, endpoint=False)
    base = (250 + 40 * np.cos(np.deg2rad(lat))[:, None] + 5 * np.sin(np.deg2rad(3 * lon))[None, :]).astype(np.float32)
    noise = rng.normal(0, 0.5, size=(ny, nx)).astype(np.float32)
    data_vars = {}
    for p in range(params):
        cube = np.empty((steps, ny, nx), np.float32)
        for s in range(steps):
            cube[s] = base * (1 + 0.01 * p) + np.roll(noise, 37 * s + 101 * p, axis=1) + 0.1 * s
        data_vars[PARAMS[p]] = (("step", "latitude", "longitude"), cube, {"units": "K", "long_name": PARAMS[p]})
    coords = {
        "step": ("step", np.arange(steps, dtype=np.int64) * 6, {"long_name": "step"}),
        "latitude": ("latitude", lat, {"units": "degrees_north"}),
        "longitude": ("longitude", lon, {"units": "degrees_east"}),
    }
    return xr.Dataset(data_vars, coords=coords, attrs={"title": "ERA-like benchmark cube"})


def messages_inputs(ds: xr.Dataset, ref_keys: dict, float64: bool) -> list[tuple[dict, list]]:
    """Per step: (metadata, [(descriptor, array)]) as the reference takes them; same content as to_tensogram."""
    out = []
    for s in range(ds.sizes["step"]):
        base, objs = [], []
        for name, var in ds.data_vars.items():
            a = var.values[s]
            if float64:
                a = a.astype(np.float64)
            base.append(
                {
                    "name": name,
                    "step": int(ds.step.values[s]),
                    "dim_names": ["latitude", "longitude"],
                    "cf": {"units": "K", "long_name": name},
                }
            )
            objs.append(({"type": "ntensor", "shape": list(a.shape), "dtype": a.dtype.name, **ref_keys}, a))
        if s == 0:
            for c in ("latitude", "longitude"):
                v = ds[c].values
                base.append({"name": c, "cf": {"units": ds[c].attrs["units"]}})
                objs.append(({"type": "ntensor", "shape": [v.size], "dtype": "float64"}, v))
        out.append(({"base": base, "_extra_": {"title": ds.attrs["title"]}}, objs))
    return out


def run_config(name: str, ds: xr.Dataset, repeat: int, tmp: Path) -> dict[str, float]:
    enc, ref_keys, _target = CONFIGS[name]
    inputs = messages_inputs(ds, ref_keys, float64="encoding" in ref_keys)
    encoding = dict.fromkeys(ds.data_vars, enc)
    path_ref, path_ours = tmp / "ref.tgm", tmp / "ours.tgm"

    def ref_encode():  # each message is dropped after encoding, as when streaming to a file
        for meta, objs in inputs:
            tensogram.encode(meta, objs)

    def ref_encode_write():
        with open(path_ref, "wb") as f:
            for meta, objs in inputs:
                f.write(tensogram.encode(meta, objs))
            f.flush()
            os.fsync(f.fileno())

    def ours_encode():
        for meta, objs in inputs:
            encode_message(meta, objs)

    def ours_to_tensogram():
        to_tensogram(ds, path_ours, message_dims=["step"], encoding=encoding)

    # sanity: our file decodes in the reference to what the reference encodes
    ours_to_tensogram()
    data = path_ours.read_bytes()
    spans = tensogram.scan(data)
    assert len(spans) == ds.sizes["step"], spans
    ref0 = tensogram.decode(tensogram.encode(*inputs[0]))
    ours0 = tensogram.decode(data[spans[0][0] : spans[0][0] + spans[0][1]], verify_hash=True)
    for (_, a), (_, b) in zip(ours0.objects, ref0.objects, strict=True):
        np.testing.assert_array_equal(a, b)
    sizes = {"ours MB": len(data) / 1e6}
    del data
    out = interleaved_medians(
        {
            "ref encode": ref_encode,
            "ref encode+write": ref_encode_write,
            "ours encode_message": ours_encode,
            "ours to_tensogram": ours_to_tensogram,
        },
        repeat,
    )
    out.update(sizes)
    return out


def profile(name: str, ds: xr.Dataset, tmp: Path, top: int = 25) -> str:
    enc = CONFIGS[name][0]
    prof = cProfile.Profile()
    prof.enable()
    to_tensogram(ds, tmp / "prof.tgm", message_dims=["step"], encoding=dict.fromkeys(ds.data_vars, enc))
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--params", type=int, default=4)
    parser.add_argument("--ny", type=int, default=721)
    parser.add_argument("--nx", type=int, default=1440)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", default="none,zstd,sp16zstd")
    parser.add_argument("--profile", default="", help="comma-separated configs to profile (cProfile, to_tensogram)")
    parser.add_argument("--dir", default=None, help="directory for the temporary files (default: system temp)")
    args = parser.parse_args()

    ds = make_dataset(args.steps, args.params, args.ny, args.nx)
    mb = sum(v.nbytes for v in ds.data_vars.values()) / 1e6
    print(
        f"cube: {args.steps} steps x {args.params} variables of {args.ny}x{args.nx} float32 = {mb:.0f} MB; "
        f"tensogram {tensogram.__version__ if hasattr(tensogram, '__version__') else '0.24.0'}; "
        f"median of {args.repeat} interleaved rounds after a warm-up; load average {os.getloadavg()[0]:.1f}"
    )
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        for name in args.configs.split(","):
            r = run_config(name, ds, args.repeat, tmp)
            rows.append((name, r))
            print(f"  {name}: done", flush=True)
        header = (
            f"{'pipeline':<10} {'ref encode':>11} {'ref enc+wr':>11} {'ours enc_msg':>13} {'ours to_tgm':>12} "
            f"{'enc_msg/ref':>12} {'to_tgm/ref':>11} {'to_tgm/ref_wr':>14} {'target':>7} {'file MB':>8}"
        )
        print(header)
        print("-" * len(header))
        for name, r in rows:
            target = CONFIGS[name][2]
            ra = r["ours encode_message"] / r["ref encode"]
            rb = r["ours to_tensogram"] / r["ref encode"]
            rc = r["ours to_tensogram"] / r["ref encode+write"]
            flag = "ok" if max(ra, rb) <= target else "MISS"
            print(
                f"{name:<10} {r['ref encode']:>10.2f}s {r['ref encode+write']:>10.2f}s "
                f"{r['ours encode_message']:>12.2f}s {r['ours to_tensogram']:>11.2f}s {ra:>11.2f}x {rb:>10.2f}x "
                f"{rc:>13.2f}x {target:>5.1f}x {r['ours MB']:>8.0f}  {flag}"
            )
        for name in filter(None, args.profile.split(",")):
            print(f"\n--- cProfile of to_tensogram, {name} ---")
            print(profile(name, ds, tmp))


if __name__ == "__main__":
    main()
