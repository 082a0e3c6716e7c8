"""Tensogram core read speed: what an open reads, and decode cost against baselines.

All data is written by the reference encoder ``tensogram==0.24.0`` into a temporary
directory (deleted afterwards); nothing is asserted, a table is printed.

1. Open cost. A file of 100 messages x 4 objects (64x64 float32, per-object ``mars``
   metadata). ``open_tensogram`` must read only preambles/postambles and the metadata,
   index and hash frames. Those bytes are computed independently here by walking every
   message's frames with ``struct`` (not with the package's parser), and compared with
   ``ByteSource.bytes_read`` / ``read_calls`` after the open.
2. ``read_object`` against a plain baseline, on a 721x1440 float32 field:
   uncompressed object vs ``numpy.fromfile`` of the same payload bytes (target <= 1.5x);
   zstd object vs ``zstandard`` decompressing the in-memory payload alone (target <= 1.3x).
   Two variants: *fresh* (open + read_object each repetition) and *warm* (file opened once,
   its descriptor cached after the first read, then only read_object). Each is timed
   alternately with its baseline, and the ratio is the median of the paired ratios.
3. simple_packing decode throughput (MB/s of decoded float64 output) at 12, 16 and 24 bits
   on a 721x1440 float64 field: our ``read_object`` (fresh/warm), the pure vectorised
   ``xarray_tensogram.codecs.simple_packing.decode`` on the payload bytes, and the reference
   ``tensogram.decode`` of the same message (from bytes in memory).

Timings are medians of ``--repeat`` runs (default 15, the minimum) after warm-up runs, with
the page cache warm (every file has just been written and read). Both wall time and process
CPU time are reported: on a shared, loaded machine wall times swing widely, and the CPU
time of these single-threaded operations is the steadier figure.

Run: ``python benchmarks/bench_tensogram_core.py [--repeat 21]``.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import cbor2
import numpy as np
import tensogram  # the reference, used only to write the data and as a speed reference
import zstandard

from xarray_tensogram import open_tensogram
from xarray_tensogram.codecs import simple_packing

SHAPE = (721, 1440)
PRE = struct.Struct(">8sHHIQ")  # magic, version, flags, reserved, total_length
HDR = struct.Struct(">2sHHHQ")  # "FR", type, version, flags, length
POST = struct.Struct(">QQ8s")  # first_footer_offset, total_length, end magic
FRAME_NAMES = {1: "metadata", 2: "index", 3: "hash", 5: "hash", 6: "index", 7: "metadata", 8: "preceder", 9: "data"}


# ----------------------------------------------------------------------------------------- helpers
class Timing(NamedTuple):
    wall: float  # seconds, time.perf_counter
    cpu: float  # seconds of this process's CPU, time.process_time (robust to other load on the machine)


def _once(fn: Callable[[], object]) -> Timing:
    gc.collect()
    gc.disable()
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        return Timing(time.perf_counter() - w0, time.process_time() - c0)
    finally:
        gc.enable()


def _median(samples: list[Timing]) -> Timing:
    return Timing(statistics.median(t.wall for t in samples), statistics.median(t.cpu for t in samples))


def median_time(fn: Callable[[], object], repeat: int, warmup: int = 2) -> Timing:
    """Median wall and CPU time of ``repeat`` calls after ``warmup`` calls (GC collected before, disabled during)."""
    for _ in range(warmup):
        fn()
    return _median([_once(fn) for _ in range(repeat)])


def paired(
    baseline: Callable[[], object], candidate: Callable[[], object], repeat: int, warmup: int = 2
) -> tuple[Timing, Timing, Timing]:
    """Alternate baseline and candidate runs so both see the same machine load.

    Returns (median baseline, median candidate, median of the per-pair candidate/baseline ratios).
    """
    for _ in range(warmup):
        baseline()
        candidate()
    tb, tc = [], []
    for _ in range(repeat):
        tb.append(_once(baseline))
        tc.append(_once(candidate))
    ratios = [
        Timing(c.wall / b.wall, c.cpu / b.cpu if b.cpu > 0 else float("nan")) for b, c in zip(tb, tc, strict=True)
    ]
    return _median(tb), _median(tc), _median(ratios)


def descriptor(dtype: str, **kw: object) -> dict:
    d = {
        "type": "ntensor",
        "shape": list(SHAPE),
        "dtype": dtype,
        "byte_order": "little",
        "encoding": "none",
        "filter": "none",
        "compression": "none",
    }
    d.update(kw)
    return d


def field(dtype: str, seed: int = 0) -> np.ndarray:
    """A smooth temperature-like field with a little noise (compresses like real data, not like zeros)."""
    rng = np.random.default_rng(seed)
    lat = np.linspace(90, -90, SHAPE[0])[:, None]
    lon = np.linspace(0, 359.75, SHAPE[1])[None, :]
    v = 273.15 + 30 * np.cos(np.radians(lat)) + 5 * np.sin(np.radians(3 * lon)) * np.cos(np.radians(2 * lat))
    v = v + rng.normal(0, 0.05, SHAPE)
    return v.astype(dtype)


def walk_message(buf: bytes | memoryview, pos: int) -> tuple[int, dict[str, int], list[tuple[int, int, int]]]:
    """Independent frame walk of the message at ``pos``.

    Returns (message end, {category: bytes}, [(data frame offset, length, flags)]).
    Categories: 'preamble+postamble', 'metadata', 'index', 'hash', 'preceder', 'data', 'padding'.
    """
    magic, version, _flags, _res, total = PRE.unpack_from(buf, pos)
    assert magic == b"TENSOGRM" and version == 3 and total, "benchmark files are buffered v3 messages"
    cats = {"preamble+postamble": PRE.size + POST.size}
    data_frames = []
    cur, body_end = pos + PRE.size, pos + total - POST.size
    while cur + HDR.size <= body_end:
        marker, ftype, _v, fflags, length = HDR.unpack_from(buf, cur)
        if marker != b"FR":
            cur += 1
            continue
        name = FRAME_NAMES[ftype]
        cats[name] = cats.get(name, 0) + length
        if ftype == 9:
            data_frames.append((cur, length, fflags))
        nxt = pos + ((cur + length - pos + 7) & ~7)
        cats["padding"] = cats.get("padding", 0) + (nxt - cur - length)
        cur = nxt
    return pos + total, cats, data_frames


def payload_range(buf: bytes, frame_off: int, length: int, flags: int) -> tuple[int, int]:
    """(absolute offset, length) of the payload region of a data frame, found without the package."""
    cbor_offset = struct.unpack_from(">Q", buf, frame_off + length - 20)[0]
    if flags & 0x1:  # CBOR descriptor after the payload
        return frame_off + 16, cbor_offset - 16
    body = io.BytesIO(buf[frame_off + 16 : frame_off + length - 20])
    cbor2.CBORDecoder(body).decode()
    used = body.tell()
    return frame_off + 16 + used, length - 36 - used


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    print()


def verdict(ratio: float, target: float) -> str:
    return f"{ratio:.2f}x ({'met' if ratio <= target else 'NOT met'}, target <= {target}x)"


# ----------------------------------------------------------------------------------------- part 1
def bench_open(tmp: Path, repeat: int) -> None:
    n_msg, n_obj = 100, 4
    params = ["2t", "10u", "10v", "msl"]
    rng = np.random.default_rng(1)
    parts = []
    for m in range(n_msg):
        base = [
            {
                "name": params[j],
                "mars": {
                    "class": "od",
                    "stream": "oper",
                    "type": "fc",
                    "expver": "0001",
                    "levtype": "sfc",
                    "date": 20260101,
                    "time": 0,
                    "step": m * 6,
                    "param": params[j],
                    "grid": "0.25/0.25",
                    "domain": "g",
                },
                "units": "K" if j == 0 else "m s-1",
            }
            for j in range(n_obj)
        ]
        objs = [
            (descriptor("float32", shape=[64, 64]), rng.standard_normal((64, 64)).astype(np.float32))
            for _ in range(n_obj)
        ]
        meta = {"base": base, "title": "benchmark forecast", "institution": "bench", "step_hours": m * 6}
        parts.append(bytes(tensogram.encode(meta, objs)))
    buf = b"".join(parts)
    path = tmp / "open_100x4.tgm"
    path.write_bytes(buf)

    cats: dict[str, int] = {}
    pos = msgs = 0
    while pos < len(buf):
        pos, c, _ = walk_message(buf, pos)
        msgs += 1
        for k, v in c.items():
            cats[k] = cats.get(k, 0) + v
    structural = sum(v for k, v in cats.items() if k not in ("data", "padding"))

    with open_tensogram(path) as f:
        assert len(f) == msgs and all(len(m) == n_obj for m in f)
        read, calls = f.source.bytes_read, f.source.read_calls
    t_open = median_time(lambda: open_tensogram(path).close(), max(5, repeat // 3), warmup=1)

    print(f"1. open_tensogram on {msgs} messages x {n_obj} objects (64x64 float32, per-object mars metadata)")
    rows = [
        ["file size", fmt_bytes(len(buf)), f"{len(buf):,}", "100.0%"],
        [
            "  data frames (skipped by the open)",
            fmt_bytes(cats.get("data", 0)),
            f"{cats.get('data', 0):,}",
            f"{100 * cats.get('data', 0) / len(buf):.1f}%",
        ],
    ]
    for k in ("preamble+postamble", "metadata", "index", "hash", "preceder", "padding"):
        if cats.get(k):
            rows.append([f"  {k}", fmt_bytes(cats[k]), f"{cats[k]:,}", f"{100 * cats[k] / len(buf):.2f}%"])
    rows.append(
        [
            "preambles+postambles+metadata+index+hash",
            fmt_bytes(structural),
            f"{structural:,}",
            f"{100 * structural / len(buf):.2f}%",
        ]
    )
    rows.append(["bytes read by open_tensogram", fmt_bytes(read), f"{read:,}", f"{100 * read / len(buf):.2f}%"])
    table(["", "size", "bytes", "of file"], rows)
    extra = read - structural
    print(
        f"   read calls at open: {calls} ({calls / msgs:.1f} per message); bytes read - structural bytes = "
        f"{extra:,} ({extra / msgs:.0f} per message: re-read frame headers and each first data frame header)"
    )
    print(
        f"   open time: {t_open.wall * 1e3:.2f} ms wall, {t_open.cpu * 1e3:.2f} ms CPU (median; "
        f"{t_open.cpu / msgs * 1e6:.0f} us CPU per message)\n"
    )


# ----------------------------------------------------------------------------------------- part 2
def bench_read_object(tmp: Path, repeat: int) -> list[tuple[str, float, float]]:
    n = SHAPE[0] * SHAPE[1]
    a32 = field("float32")
    raw_buf = bytes(tensogram.encode({"base": [{"name": "2t"}]}, [(descriptor("float32"), a32)]))
    zst_buf = bytes(
        tensogram.encode({"base": [{"name": "2t"}]}, [(descriptor("float32", compression="zstd", zstd_level=3), a32)])
    )
    raw_path, zst_path = tmp / "raw_f32.tgm", tmp / "zstd_f32.tgm"
    raw_path.write_bytes(raw_buf)
    zst_path.write_bytes(zst_buf)
    _, _, [(fo, fl, ff)] = walk_message(raw_buf, 0)
    raw_off, raw_len = payload_range(raw_buf, fo, fl, ff)
    assert raw_len == n * 4
    _, _, [(fo, fl, ff)] = walk_message(zst_buf, 0)
    z_off, z_len = payload_range(zst_buf, fo, fl, ff)
    z_payload = zst_buf[z_off : z_off + z_len]
    dctx = zstandard.ZstdDecompressor()

    # correctness of the baselines and of our reads (not timed)
    assert np.array_equal(np.fromfile(raw_path, dtype="<f4", count=n, offset=raw_off).reshape(SHAPE), a32)
    assert np.array_equal(np.frombuffer(dctx.decompress(z_payload, max_output_size=n * 4), "<f4").reshape(SHAPE), a32)
    for p in (raw_path, zst_path):
        with open_tensogram(p) as f:
            assert np.array_equal(f[0].read_object(0), a32)

    def fresh(p: Path) -> Callable[[], object]:
        def run() -> object:
            with open_tensogram(p) as f:
                return f[0].read_object(0)

        return run

    np_read = partial(np.fromfile, raw_path, dtype="<f4", count=n, offset=raw_off)
    z_read = partial(dctx.decompress, z_payload, max_output_size=n * 4)
    t_np_mem = median_time(lambda: np.frombuffer(raw_buf, "<f4", count=n, offset=raw_off).copy(), repeat)
    t_z_file = median_time(
        lambda: dctx.decompress(Path(zst_path).read_bytes()[z_off : z_off + z_len], max_output_size=n * 4), repeat
    )
    t_np, t_raw_fresh, r_raw_fresh = paired(np_read, fresh(raw_path), repeat)
    t_z, t_z_fresh, r_z_fresh = paired(z_read, fresh(zst_path), repeat)
    with open_tensogram(raw_path) as fr, open_tensogram(zst_path) as fz:
        mr, mz = fr[0], fz[0]
        t_np2, t_raw_warm, r_raw_warm = paired(np_read, lambda: mr.read_object(0), repeat)
        t_z2, t_z_warm, r_z_warm = paired(z_read, lambda: mz.read_object(0), repeat)
    t_np = Timing(*(statistics.median(x) for x in zip(t_np, t_np2, strict=True)))
    t_z = Timing(*(statistics.median(x) for x in zip(t_z, t_z2, strict=True)))

    mb = n * 4 / 1e6
    print(
        f"2. read_object of a {SHAPE[0]}x{SHAPE[1]} float32 object ({mb:.2f} MB decoded; zstd level 3 payload "
        f"{z_len / 1e6:.2f} MB, ratio {n * 4 / z_len:.2f}); medians of {repeat} runs; each of ours is run "
        f"alternately with its baseline and its ratio is the median of the paired ratios"
    )

    def row(label: str, t: Timing, ratio: Timing | None) -> list[str]:
        r = ["1.00x", "1.00x"] if ratio is None else [f"{ratio.wall:.2f}x", f"{ratio.cpu:.2f}x"]
        return [label, f"{t.wall * 1e3:.3f}", f"{t.cpu * 1e3:.3f}", f"{mb / t.cpu:.0f}", *r]

    rows = [
        row("uncompressed: numpy.fromfile(path, '<f4', count, offset)", t_np, None),
        row(
            "  (info) numpy.frombuffer(bytes in memory).copy()",
            t_np_mem,
            Timing(t_np_mem.wall / t_np.wall, t_np_mem.cpu / t_np.cpu),
        ),
        row("  open_tensogram + read_object (fresh)", t_raw_fresh, r_raw_fresh),
        row("  read_object on an open file (warm)", t_raw_warm, r_raw_warm),
        row("zstd: ZstdDecompressor.decompress(payload in memory)", t_z, None),
        row(
            "  (info) same, payload read from the file first",
            t_z_file,
            Timing(t_z_file.wall / t_z.wall, t_z_file.cpu / t_z.cpu),
        ),
        row("  open_tensogram + read_object (fresh)", t_z_fresh, r_z_fresh),
        row("  read_object on an open file (warm)", t_z_warm, r_z_warm),
    ]
    table(["", "wall ms", "CPU ms", "MB/s (CPU)", "ratio (wall)", "ratio (CPU)"], rows)
    results = [
        ("uncompressed, fresh", r_raw_fresh, 1.5),
        ("uncompressed, warm", r_raw_warm, 1.5),
        ("zstd, fresh", r_z_fresh, 1.3),
        ("zstd, warm", r_z_warm, 1.3),
    ]
    return results


# ----------------------------------------------------------------------------------------- part 3
def bench_simple_packing(tmp: Path, repeat: int) -> None:
    n = SHAPE[0] * SHAPE[1]
    mb = n * 8 / 1e6
    a64 = field("float64", seed=3)
    print(
        f"3. simple_packing decode of a {SHAPE[0]}x{SHAPE[1]} float64 field, no compression "
        f"(MB/s of decoded float64 output, {mb:.2f} MB); medians of {repeat} runs"
    )
    rows = []
    for bits in (12, 16, 24):
        buf = bytes(
            tensogram.encode(
                {"base": [{"name": "2t"}]},
                [(descriptor("float64", encoding="simple_packing", sp_bits_per_value=bits), a64)],
            )
        )
        path = tmp / f"sp{bits}.tgm"
        path.write_bytes(buf)
        _, _, [(fo, fl, ff)] = walk_message(buf, 0)
        off, length = payload_range(buf, fo, fl, ff)
        payload = buf[off : off + length]
        with open_tensogram(path) as f:
            d = f[0].descriptor(0)
            ours = f[0].read_object(0)
        ref = tensogram.decode(buf).objects[0][1]
        assert np.array_equal(ours, ref) and d["sp_bits_per_value"] == bits
        args = (
            n,
            bits,
            float(d["sp_reference_value"]),
            int(d["sp_binary_scale_factor"]),
            int(d.get("sp_decimal_scale_factor", 0)),
        )
        assert np.array_equal(simple_packing.decode(payload, *args).reshape(SHAPE), ref)

        def fresh(path: Path = path) -> object:
            with open_tensogram(path) as f:
                return f[0].read_object(0)

        t_pure = median_time(partial(simple_packing.decode, payload, *args), repeat)
        t_fresh = median_time(fresh, repeat)
        with open_tensogram(path) as f:
            m = f[0]
            t_warm = median_time(partial(m.read_object, 0), repeat)
        t_bytes = median_time(lambda buf=buf: open_tensogram(buf)[0].read_object(0), repeat)
        t_ref = median_time(partial(tensogram.decode, buf), repeat)

        def rate(t: Timing) -> str:
            return f"{mb / t.wall:.0f} / {mb / t.cpu:.0f}"

        rows.append(
            [
                f"{bits} bits (payload {length / 1e6:.2f} MB)",
                rate(t_pure),
                rate(t_warm),
                rate(t_fresh),
                rate(t_bytes),
                rate(t_ref),
                f"{t_warm.cpu / t_ref.cpu:.2f}x",
            ]
        )
    table(
        [
            "MB/s: wall / CPU",
            "pure decode",
            "read_object warm",
            "fresh (path)",
            "fresh (bytes)",
            "reference decode",
            "warm/reference CPU time",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per measurement (>= 15)")
    args = parser.parse_args()
    repeat = max(15, args.repeat)
    t0 = time.perf_counter()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(
        f"numpy {np.__version__}, zstandard {zstandard.__version__}, reference tensogram {tensogram.__version__}; "
        f"{os.cpu_count()} CPUs, load average {load} (a busy machine makes every figure noisier)\n"
    )
    with tempfile.TemporaryDirectory(prefix="bench_tensogram_") as d:
        tmp = Path(d)
        bench_open(tmp, repeat)
        results = bench_read_object(tmp, repeat)
        bench_simple_packing(tmp, repeat)
    print("targets:")
    for name, ratio, target in results:
        print(f"  read_object {name:<20} wall {verdict(ratio.wall, target)}; CPU {verdict(ratio.cpu, target)}")
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
