"""One runner for the performance targets: ours against the hardware, every format, one table.

Every row compares xarray-tensogram with a reference point measured in the same run, on the same
files, ours and the reference alternated (A, B, A, B, ...) so that machine load hits both alike;
figures are medians. The reference points are:

- full loads (``ds.load()``, no Dask): the **bare decoder** on the same payloads, already in
  memory, writing into freshly allocated numpy arrays of the Dataset's variable shapes:
  ``zstandard`` for zstd, ``np.copyto`` for raw, our own unpack for simple_packing (``decode_into`` the
  destination, the fastest form we have), ``lz4`` for lz4;
- Dask (``chunks={}`` and ``chunks="auto"``, threaded scheduler, 2 workers): the same bare decoder
  on 2 threads;
- Dask scaling (``bench_scaling.py``): the bare decoder on the same number of threads, 1, 2 and 16 where
  the machine has them, and the share of each task spent outside the decoder (holding the GIL);
- opening a ``.tgm`` of N messages x 4 small objects: a linear budget of N x 100 us (1 s for 10k), and
  again from the metadata cache (the opens after the first): 1 s;
- the first open of a bundled sample in a fresh process: the second open of it plus 50 ms (no Dask import);
- opening a ``.zt`` v0.1 of 200 tensors: ``ztensor`` 0.1.4's ``Reader`` listing names and shapes, and
  a no-op backend handing the same 200 lazy variables through xarray's store and CF decoding;
- peak RSS of ``ds.load()`` (in a fresh child process): the budget 1.1 x decoded + 64 MiB;
- ``open_mfdataset`` over 100 files then a reduction with ``chunks={}``: a budget of a quarter of
  the decoded total (memory must stay bounded, not grow with the files);
- ``to_tensogram`` of the ERA cube without compression: ``tensogram.encode`` plus writing the same
  bytes (and fsync, as our atomic writer does).

Before every timed full-load and Dask step, both sides alike, 3 x the decoded size is touched and
freed, so that every step starts from the same warm memory (see ``_warm``: on the benchmark VM freed
memory goes back to the host after about 2 s and costs about 2.3 ms/MiB to touch again).

The ``ratio`` column is always "higher is better": reference time / our time (throughput ratio),
budget / measured for memory and open-time budgets. The ``target`` column is the project's bar.

Files are written once into ``benchmarks/_data/`` (gitignored; delete to regenerate).
Run::

    python benchmarks/run_all.py                  # default sizes (>= 256 MiB decoded per full load)
    python benchmarks/run_all.py --quick          # small sizes, a quick look
    python benchmarks/run_all.py --only full,open --repeat 7 --png docs/img/perf_ratios.png
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
MIB = 1 << 20


# ================================================================================================
# sizes
# ================================================================================================
@dataclass(frozen=True)
class Sizes:
    """Every size the runner uses; defaults meet the issue (>= 256 MiB decoded per full load)."""

    steps: int = 24  # ERA cube: steps x 4 params x 721 x 1440 float32 (398 MB, simple_packing 797 MB)
    ny: int = 721
    nx: int = 1440
    tet_side: int = 8192  # .tet: side x side float32 (256 MiB) in 256 x 256 tiles
    tet_tile: int = 256
    zt_tensors: int = 200  # .zt v0.1: 200 tensors totalling zt_mib
    zt_mib: int = 256
    open_counts: tuple[int, ...] = (1000, 10000, 50000, 100000)  # .tgm messages x 4 small objects
    scaling_mib: int = 256  # bench_scaling.py: decoded MiB per file (the 16-core figures: 512)
    mf_files: int = 100  # open_mfdataset
    mf_side: int = 512
    repeat: int = 5

    @staticmethod
    def quick() -> Sizes:
        return Sizes(steps=4, tet_side=2048, zt_mib=32, open_counts=(1000, 5000), scaling_mib=32, mf_files=20, repeat=3)


# ================================================================================================
# the table
# ================================================================================================
class Row(NamedTuple):
    fmt: str
    codec: str
    operation: str
    ours: str
    reference: str
    ratio: float
    target: float
    note: str = ""


def seconds(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def mib(n: float) -> str:
    return f"{n / MIB:.0f} MiB"


def print_table(rows: Sequence[Row], file: Any = None) -> None:
    head = ("format", "codec", "operation", "ours", "reference or bare decoder", "ratio", "target", "")
    cells = [head] + [
        (
            r.fmt,
            r.codec,
            r.operation,
            r.ours,
            r.reference,
            f"{r.ratio:.2f}",
            f">= {r.target:.2f}" if r.target > 0 else "-",
            ("ok" if r.ratio >= r.target else "MISS") + (f" ({r.note})" if r.note else "") if r.target > 0 else r.note,
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    for k, c in enumerate(cells):
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip(), file=file)
        if k == 0:
            print("  ".join("-" * w for w in widths), file=file)


def markdown_table(rows: Sequence[Row]) -> str:
    """The README form: ratios and targets only (absolute times depend on the machine)."""
    out = ["| format | codec | operation | ratio | target |", "|---|---|---|---|---|"]
    for r in rows:
        flag = "" if r.ratio >= r.target else " (missed)"
        target = f"≥ {r.target:.2f}" if r.target > 0 else "none (reference point)"
        out.append(f"| {r.fmt} | {r.codec} | {r.operation} | {r.ratio:.2f}{flag} | {target} |")
    return "\n".join(out)


def plot(rows: Sequence[Row], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.fmt} {r.codec} · {r.operation}" for r in rows]
    ratios = [r.ratio for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.4))
    y = np.arange(len(rows))[::-1]
    colors = ["#7f8c8d" if r.target <= 0 else "#3a7d44" if r.ratio >= r.target else "#c0392b" for r in rows]
    ax.barh(y, ratios, color=colors, height=0.7)
    for yi, r in zip(y, rows, strict=True):
        if r.target > 0:  # reference points (grey) have no target
            ax.plot([r.target, r.target], [yi - 0.4, yi + 0.4], color="black", lw=1.5)
        ax.text(r.ratio, yi, f" {r.ratio:.2f}", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.axvline(1.0, color="grey", lw=0.8, ls=":")
    # log scale: the cached opens are hundreds of times their budget, the rest sit around 1
    ax.set_xscale("log")
    ax.set_xlim(min(0.05, min(ratios) / 2), max(2.0, max(ratios) * 3))
    ax.set_xlabel("ratio to the reference point, log scale (higher is better, tick = target)", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ================================================================================================
# timing
# ================================================================================================
Step = tuple[Callable[[Any], object], Callable[[], Any] | None]  # (timed fn(setup result), untimed setup)


#: bytes touched (then freed) before every timed step of the full-load and Dask sections, see ``_warm``
WARM_BYTES = 0


def _warm() -> None:
    """Give both sides of a comparison the same memory state: warm, as a running process has.

    On the benchmark VM, memory freed for about 2 s goes back to the host (virtio-balloon free page
    reporting), and touching it again costs about 2.3 ms/MiB (``bench_dask_floor.py`` measures it). A
    step run after a pause would pay that for its whole result while the other side, run right after,
    would not. Touching and freeing 3 x the decoded size first makes every step reuse backed pages.
    """
    if WARM_BYTES:
        np.ones(WARM_BYTES, np.uint8)


def _once(fn: Callable[[Any], object], setup: Callable[[], Any] | None) -> float:
    return _once_with_cpu(fn, setup)[0]


def _once_with_cpu(fn: Callable[[Any], object], setup: Callable[[], Any] | None) -> tuple[float, float]:
    """Wall time and the process's CPU time (all threads) of ``fn(setup())``, setup and warming not counted.

    On one thread the CPU time is what the step costs without the waits other jobs on a shared machine
    impose (the wall time's noise), so ratios of CPU times compare the work of both sides."""
    arg = setup() if setup else None
    gc.collect()
    _warm()
    c0 = time.process_time()
    t0 = time.perf_counter()
    result = fn(arg)
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    del result, arg
    return dt, cpu


def alternate(ours: Step, ref: Step, repeat: int) -> tuple[float, float]:
    """Medians of ours and the reference, one warm-up each, then run alternately ``repeat`` times."""
    _once(*ours)
    _once(*ref)
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a.append(_once(*ours))
        b.append(_once(*ref))
    return statistics.median(a), statistics.median(b)


# ================================================================================================
# bare decoders: payloads in memory -> fresh arrays of the Dataset's variable shapes
# ================================================================================================
@dataclass
class Payload:
    """One stored chunk, in memory, and where its decoded values land."""

    var: str
    slot: tuple[Any, ...]  # index into the variable's array
    codec: str  # "raw", "zstd", "lz4", "sp16"
    data: bytes
    shape: tuple[int, ...]
    dtype: np.dtype
    params: dict[str, Any] | None = None  # simple_packing parameters


def _decode_into(dst: np.ndarray, p: Payload) -> None:
    if p.codec == "raw":
        np.copyto(dst, np.frombuffer(p.data, p.dtype).reshape(p.shape))
    elif p.codec == "zstd":
        import zstandard

        nbytes = int(np.prod(p.shape)) * p.dtype.itemsize
        if dst.flags.c_contiguous:
            view = memoryview(dst.reshape(-1).view(np.uint8))
            with zstandard.ZstdDecompressor().stream_reader(p.data, read_across_frames=True) as r:
                got = 0
                while got < nbytes:
                    n = r.readinto(view[got:])
                    if not n:
                        break
                    got += n
        else:
            raw = zstandard.ZstdDecompressor().decompress(p.data, max_output_size=nbytes)
            np.copyto(dst, np.frombuffer(raw, p.dtype).reshape(p.shape))
    elif p.codec == "lz4":
        import lz4.block

        raw = lz4.block.decompress(p.data[4:], uncompressed_size=int(np.prod(p.shape)) * p.dtype.itemsize)
        np.copyto(dst, np.frombuffer(raw, p.dtype).reshape(p.shape))
    elif p.codec == "sp16":
        from xarray_tensogram.codecs import simple_packing

        q = p.params or {}
        simple_packing.decode_into(
            dst, p.data, 16, q["reference_value"], q["binary_scale_factor"], q["decimal_scale_factor"]
        )
    else:  # pragma: no cover
        raise ValueError(p.codec)


def bare_decode(
    payloads: Sequence[Payload], shapes: dict[str, tuple[tuple[int, ...], np.dtype]], threads: int = 1
) -> dict[str, np.ndarray]:
    """Decode every payload into fresh arrays (allocated here, so their page faults are paid here too)."""
    out = {name: np.empty(shape, dtype) for name, (shape, dtype) in shapes.items()}

    def one(p: Payload) -> None:
        _decode_into(out[p.var][p.slot], p)

    if threads == 1:
        for p in payloads:
            one(p)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, payloads))
    return out


# ================================================================================================
# data: written once into benchmarks/_data
# ================================================================================================
PARAMS = ("2t", "msl", "10u", "10v")


def smooth_field(ny: int, nx: int, seed: int) -> np.ndarray:
    """A smooth field plus a little noise, rounded: compresses like model output (2-3x), not like zeros."""
    y = np.linspace(0, 8 * np.pi, ny, dtype=np.float32)[:, None]
    x = np.linspace(0, 6 * np.pi, nx, dtype=np.float32)[None, :]
    noise = np.random.default_rng(seed).normal(0, 0.05, size=(ny, nx)).astype(np.float32)
    return np.round(280 + 15 * np.sin(y + seed) * np.cos(x) + noise, 2).astype(np.float32)


def _atomic(path: Path, write: Callable[[Path], None]) -> Path:
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        t0 = time.perf_counter()
        write(tmp)
        os.replace(tmp, path)
        print(
            f"  wrote {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s", flush=True
        )
    return path


def tgm_cube(sz: Sizes, codec: str) -> Path:
    """ERA-like cube written by the reference encoder: one message per step, 4 fields + lat/lon."""
    import tensogram

    def write(tmp: Path) -> None:
        lat = np.linspace(90.0, -90.0, sz.ny)
        lon = np.linspace(0.0, 360.0, sz.nx, endpoint=False)
        with open(tmp, "wb") as f:
            for s in range(sz.steps):
                base: list[dict[str, Any]] = []
                objs: list[tuple[dict[str, Any], np.ndarray]] = []
                for k, param in enumerate(PARAMS):
                    values = smooth_field(sz.ny, sz.nx, 7 * s + k)
                    desc: dict[str, Any] = {"type": "ntensor", "shape": [sz.ny, sz.nx], "dtype": "float32"}
                    if codec in ("zstd", "lz4"):
                        desc["compression"] = codec
                    elif codec == "sp16":
                        values = values.astype(np.float64)
                        desc.update(dtype="float64", encoding="simple_packing")
                        desc.update(tensogram.compute_packing_params(values.ravel(), 16, 0))
                    objs.append((desc, values))
                    base.append(
                        {
                            "mars": {"param": param, "date": 20240101, "time": 0, "step": 6 * s},
                            "dim_names": ["latitude", "longitude"],
                        }
                    )
                for name, values in (("latitude", lat), ("longitude", lon)):
                    objs.append(({"type": "ntensor", "shape": [values.size], "dtype": "float64"}, values))
                    base.append({"name": name})
                f.write(bytes(tensogram.encode({"base": base}, objs)))

    return _atomic(DATA / f"era_{sz.steps}x{sz.ny}x{sz.nx}_{codec}.tgm", write)


def tgm_payloads(path: Path, codec: str) -> list[Payload]:
    """The stored payload of every field object, located with our frame parser (not timed)."""
    from xarray_tensogram import open_tensogram
    from xarray_tensogram.formats.tensogram.reader import read_frame_layout

    out = []
    with open_tensogram(path) as f:
        for s, msg in enumerate(f):
            for j, base in enumerate(msg.base):
                if "mars" not in base:
                    continue
                lay = read_frame_layout(f.source, msg.objects[j], "bench")
                desc = lay.descriptor
                data = f.source.read(lay.region_start, lay.region_length, what="bench")
                dtype = np.dtype(np.float64 if codec == "sp16" else np.float32)
                params = (
                    {
                        k: desc.get("sp_" + k, 0)
                        for k in ("reference_value", "binary_scale_factor", "decimal_scale_factor")
                    }
                    if codec == "sp16"
                    else None
                )
                out.append(
                    Payload(base["mars"]["param"], (s,), codec, bytes(data), tuple(desc["shape"]), dtype, params)
                )
    return out


def tet_file(sz: Sizes, codec: str) -> Path:
    from xarray_tensogram.formats.tetr import DatasetWrite, write_tetr

    def write(tmp: Path) -> None:
        values = smooth_field(sz.tet_side, sz.tet_side, 1)
        write_tetr(tmp, [DatasetWrite("field", values, (sz.tet_tile, sz.tet_tile), codec, dim_names=["y", "x"])])

    return _atomic(DATA / f"field_{sz.tet_side}_{sz.tet_tile}_{codec}.tet", write)


def tet_payloads(path: Path) -> list[Payload]:
    from xarray_tensogram.formats.tetr import open_tetr

    out = []
    with open_tetr(path) as f:
        for ds in f:
            for coords in np.ndindex(*ds.grid):
                e = ds.entries[int(ds.table[coords])]
                start = [c * t for c, t in zip(coords, ds.chunk_shape, strict=True)]
                shape = tuple(min(t, n - a) for t, n, a in zip(ds.chunk_shape, ds.shape, start, strict=True))
                slot = tuple(slice(a, a + n) for a, n in zip(start, shape, strict=True))
                data = f.source.read(int(e["offset"]), int(e["stored"]), what="bench")
                out.append(Payload(ds.name, slot, "zstd" if int(e["codec"]) else "raw", bytes(data), shape, ds.dtype))
    return out


def zt_file(sz: Sizes, codec: str) -> Path:
    from xarray_tensogram.formats.ztensor import write_ztensor_v01

    rows = max(1, sz.zt_mib * MIB // sz.zt_tensors // 4 // 512)

    def write(tmp: Path) -> None:
        base = smooth_field(rows, 512, 3)
        tensors = ((f"layer.{i:03d}.weight", base + np.float32(i)) for i in range(sz.zt_tensors))
        write_ztensor_v01(tmp, tensors, compression="zstd" if codec == "zstd" else None)

    return _atomic(DATA / f"model_{sz.zt_tensors}x{rows}x512_{codec}.zt", write)


def zt_payloads(path: Path) -> list[Payload]:
    from xarray_tensogram.formats.ztensor import open_ztensor

    out = []
    with open_ztensor(path) as f:
        for t in f.tensors:
            part = t.main_part
            data = f.source.read(part.offset, part.length, what="bench")
            out.append(Payload(t.name, (), part.encoding, bytes(data), t.shape, np.dtype(t.numpy_dtype)))
    return out


def tgm_many(n: int) -> Path:
    """n messages x 4 small objects (16 x 16 float32) with MARS metadata: one hypercube along step."""
    import tensogram

    def write(tmp: Path) -> None:
        values = np.arange(256, dtype=np.float32).reshape(16, 16)
        desc = {"type": "ntensor", "shape": [16, 16], "dtype": "float32"}
        with open(tmp, "wb") as f:
            for s in range(n):
                base = [{"mars": {"param": p, "date": 20240101, "time": 0, "step": s}} for p in PARAMS]
                f.write(bytes(tensogram.encode({"base": base}, [(desc, values)] * 4)))

    return _atomic(DATA / f"many_{n}x4.tgm", write)


def operational_base(step: int) -> list[dict[str, Any]]:
    """One message's ``base`` as operational files carry it: per object 8 MARS keys and ``dim_names``."""
    return [
        {
            "mars": {
                "class": "od",
                "type": "fc",
                "stream": "oper",
                "expver": "0001",
                "date": 20240101,
                "time": 0,
                "step": step,
                "param": p,
            },
            "dim_names": ["latitude", "longitude"],
        }
        for p in PARAMS
    ]


def tgm_many_operational(n: int) -> Path:
    """n messages x 4 small objects (16 x 16 float32), each object with 8 MARS keys and ``dim_names``, as
    operational files are made (the reference encoder, one message per step): one hypercube along step."""
    import tensogram

    def write(tmp: Path) -> None:
        values = np.arange(256, dtype=np.float32).reshape(16, 16)
        desc = {"type": "ntensor", "shape": [16, 16], "dtype": "float32"}
        with open(tmp, "wb") as f:
            for s in range(n):
                f.write(bytes(tensogram.encode({"base": operational_base(s)}, [(desc, values)] * 4)))

    return _atomic(DATA / f"many_{n}x4_operational.tgm", write)


# ================================================================================================
# sections
# ================================================================================================
FULL_CASES = [
    ("tgm", "raw"),
    ("tgm", "zstd"),
    ("tgm", "sp16"),
    ("tgm", "lz4"),
    ("tet", "raw"),
    ("tet", "zstd"),
    ("zt", "raw"),
    ("zt", "zstd"),
]
CODEC_LABEL = {"raw": "raw", "zstd": "zstd", "sp16": "simple_packing 16", "lz4": "lz4"}


def case_file(sz: Sizes, fmt: str, codec: str) -> Path:
    if fmt == "tgm":
        return tgm_cube(sz, "none" if codec == "raw" else codec)
    if fmt == "tet":
        return tet_file(sz, codec)
    return zt_file(sz, codec)


def case_payloads(path: Path, fmt: str, codec: str) -> list[Payload]:
    if fmt == "tgm":
        return tgm_payloads(path, codec)
    return tet_payloads(path) if fmt == "tet" else zt_payloads(path)


def open_xr(path: Path, **kw: Any) -> Any:
    import xarray as xr

    return xr.open_dataset(path, engine="tensogram", **kw)


def var_shapes(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    with open_xr(path) as ds:
        return {k: (v.shape, v.dtype) for k, v in ds.data_vars.items()}


def check_same(path: Path, payloads: Sequence[Payload], shapes: dict[str, Any]) -> None:
    """Our load and the bare decode give the same values (else the comparison means nothing)."""
    bare = bare_decode(payloads, shapes)
    with open_xr(path) as ds:
        for name, arr in bare.items():
            np.testing.assert_array_equal(ds[name].values, arr, err_msg=f"{path.name}: {name}")


def _bare_step(payloads: Sequence[Payload], shapes: dict[str, Any], threads: int, _setup: Any) -> object:
    return bare_decode(payloads, shapes, threads=threads)


def section_full(sz: Sizes, rows: list[Row]) -> None:
    for fmt, codec in FULL_CASES:
        path = case_file(sz, fmt, codec)
        payloads = case_payloads(path, fmt, codec)
        shapes = var_shapes(path)
        check_same(path, payloads, shapes)
        decoded = sum(int(np.prod(s)) * d.itemsize for s, d in shapes.values())
        _set_warm(3 * decoded)
        ours, ref = alternate(
            (lambda ds: ds.load(), partial(open_xr, path)), (partial(_bare_step, payloads, shapes, 1), None), sz.repeat
        )
        _set_warm(0)
        rows.append(
            Row(
                f".{fmt}",
                CODEC_LABEL[codec],
                f"ds.load() {mib(decoded)}",
                seconds(ours),
                seconds(ref),
                ref / ours,
                0.85,
            )
        )
        print(f"  full {fmt} {codec}: ours {seconds(ours)}, bare {seconds(ref)}", flush=True)
        del payloads
        gc.collect()


def _set_warm(n: int) -> None:
    global WARM_BYTES
    WARM_BYTES = n


def section_dask(sz: Sizes, rows: list[Row]) -> None:
    import dask

    for fmt in ("tgm", "tet", "zt"):
        path = case_file(sz, fmt, "zstd")
        payloads = case_payloads(path, fmt, "zstd")
        shapes = var_shapes(path)
        _set_warm(3 * sum(int(np.prod(s)) * d.itemsize for s, d in shapes.values()))
        for chunks in ({}, "auto"):

            def load(ds: Any) -> Any:
                with dask.config.set(scheduler="threads", num_workers=2):
                    return ds.load()

            ours, ref = alternate(
                (load, partial(open_xr, path, chunks=chunks)),
                (partial(_bare_step, payloads, shapes, 2), None),
                sz.repeat,
            )
            with open_xr(path, chunks=chunks) as ds:
                n = max(len(v.data.to_delayed().ravel()) for v in ds.data_vars.values())
            rows.append(
                Row(
                    f".{fmt}",
                    "zstd",
                    f"dask 2 threads chunks={chunks!r} ({n} tasks/var)",
                    seconds(ours),
                    seconds(ref),
                    ref / ours,
                    0.75,
                )
            )
            print(f"  dask {fmt} {chunks!r}: ours {seconds(ours)}, bare x2 {seconds(ref)}", flush=True)
        _set_warm(0)
        del payloads
        gc.collect()


def section_scaling(sz: Sizes, rows: list[Row]) -> None:
    """``bench_scaling.py``'s rows: Dask on 1, 2 (and 16 where the machine has them) threads against the bare
    decoder, ``chunks={}`` and ``"auto"``, and the share of each task spent outside the decoder (GIL held)."""
    sys.path.insert(0, str(HERE))
    import bench_scaling

    cores = os.cpu_count() or 1
    counts = [n for n in (1, 2, 16) if n <= cores]
    result = bench_scaling.run(sz.scaling_mib, ("tgm", "tet", "zt"), counts, sz.repeat)
    targets = {1: 0.95, 2: 0.8, 16: 0.75}
    for r in result["rows"]:
        for chunks in ("{}", "auto"):
            # .tet's 256 KiB tiles: the targets are for chunks="auto" (whole tiles, one pass per task)
            bound = chunks == "auto" if r["format"] == "tet" else chunks == "{}"
            ours = r[f"ours {chunks}"]
            rows.append(
                Row(
                    f".{r['format']}",
                    "zstd",
                    f"dask {r['threads']} thread{'s' if r['threads'] > 1 else ''} chunks={chunks} "
                    f"({r['tasks'][chunks]} tasks, {r['decoded_mib']:.0f} MiB)",
                    seconds(ours),
                    seconds(r["bare"]) + f" (bare x{r['threads']})",
                    r["bare"] / ours,
                    targets[r["threads"]] if bound else 0.0,
                    "" if bound else "reference point",
                )
            )
    for g in result["gil"]:
        o = g["ours"]
        # the bar: our Python around each chunk at most 5 % of its decode time; Dask's share apart
        rows.append(
            Row(
                f".{g['format']}",
                "zstd",
                "our reader's Python per task vs decoding (1 thread, chunks={})",
                f"{o['reader_held_ms']:.2f} ms (+{o['read_ms']:.2f} ms preadv, {o['dask_ms']:.2f} ms Dask, "
                f"{o['dask_copy_ms']:.2f} its final copy)",
                f"{o['decoder_ms']:.2f} ms decoding",
                o["decoder_ms"] / (o["decoder_ms"] + o["reader_held_ms"]),
                1 / 1.05,
            )
        )


def section_open(sz: Sizes, rows: list[Row], timeout: float) -> None:
    for n in sz.open_counts:
        path = tgm_many(n)
        # in a child process: a super-linear open must not hang the runner; first without the metadata
        # cache, then the opens after the first one that stores it (a fresh cache directory)
        t = child(["open", str(path), str(max(1, sz.repeat // 2))], timeout * max(1, n // 25000))
        budget = n * 1e-4
        label = f"open {n} msgs x 4 obj"
        if t is None:
            rows.append(
                Row(".tgm", "raw", label, f"> {timeout:.0f} s", seconds(budget), budget / timeout, 1.0, "timed out")
            )
            continue
        rows.append(Row(".tgm", "raw", label, seconds(t["open"]), seconds(budget), budget / t["open"], 1.0))
        print(f"  open {n}: {rows[-1].ours}, RSS held {t['rss_per_object']:.0f} B per object", flush=True)
        if t["cached"] is not None:
            rows.append(
                Row(".tgm", "raw", f"{label}, metadata cache", seconds(t["cached"]), "1.00 s", 1 / t["cached"], 1.0)
            )
            print(f"  open {n} from the metadata cache: {rows[-1].ours}", flush=True)
    section_open_operational(sz, rows, timeout)
    section_first_open(sz, rows, timeout)
    import ztensor

    zsz = Sizes(zt_mib=sz.zt_mib, zt_tensors=200)
    path = zt_file(zsz, "raw")

    def ref_open(_: Any) -> None:
        with ztensor.Reader(str(path)) as r:
            [(m.name, m.shape, m.dtype_str) for m in r]

    ours, ref = alternate((lambda _: open_xr(path).close(), None), (ref_open, None), sz.repeat * 4)
    rows.append(Row(".zt", "raw", "open 200 tensors", seconds(ours), seconds(ref) + " (ztensor)", ref / ours, 0.5))
    # the same open without xarray (what ztensor's Reader does), and xarray's own cost for 200 variables
    from xarray_tensogram import open_ztensor

    def lib_open(_: Any) -> None:
        with open_ztensor(path) as z:
            [(t.name, t.shape, t.dtype) for t in z.tensors]

    ours, ref = alternate((lib_open, None), (ref_open, None), sz.repeat * 4)
    rows.append(
        Row(".zt", "raw", "open 200 tensors, no xarray", seconds(ours), seconds(ref) + " (ztensor)", ref / ours, 0.5)
    )
    template = _template(path)
    floor, ours = alternate(
        (lambda _: _null_open(template).close(), None), (lambda _: open_xr(path).close(), None), sz.repeat * 4
    )
    rows.append(
        Row(
            ".zt",
            "raw",
            "open 200 tensors: xarray floor",
            seconds(ours),
            seconds(floor) + " (no-op store backend)",
            floor / ours,
            1 / 1.5,
        )
    )


FIRST_OPEN_SAMPLES = ("era_pl.tgm", "sample.tet", "sample.zt")


def section_open_operational(sz: Sizes, rows: list[Row], timeout: float) -> None:
    """Archives made the way operational files are (8 MARS keys and ``dim_names`` per object): our uncached
    open, the open that writes the metadata cache, the cached open, and the reference's metadata walk
    (``TensogramFile`` + ``file_decode_metadata`` of every message, in Rust), each in child processes
    alternated twice (medians of the child's runs, CPU time). Budgets: 1 s per 10,000 messages, linear."""
    for n in sz.open_counts:
        path = tgm_many_operational(n)
        per = timeout * max(1, n // 25000)
        ours: list[dict[str, Any]] = []
        ref: list[float] = []
        for r in range(2):
            for kind in ("open", "refwalk") if r % 2 == 0 else ("refwalk", "open"):
                got = child([kind, str(path), str(max(1, sz.repeat // 2))], per)
                if got is not None and kind == "open":
                    ours.append(got)
                elif got is not None:
                    ref.append(got["walk"])
        label = f"open {n} msgs x 4 obj, 8 MARS keys + dim_names"
        budget = n * 1e-4
        if not ours or not ref:
            rows.append(Row(".tgm", "raw", label, f"> {per:.0f} s", seconds(budget), 0.0, 1.0, "timed out"))
            continue
        walk = statistics.median(ref)
        for what, key in (("", "open"), (", writing the metadata cache", "writing"), (", metadata cache", "cached")):
            t = statistics.median(o[key] for o in ours)
            note = f"reference metadata walk {seconds(walk)}"
            rows.append(Row(".tgm", "raw", label + what, seconds(t), seconds(budget), budget / t, 1.0, note))
            print(f"  {label}{what}: {seconds(t)} ({note})", flush=True)


def _reference_walk(path: Path, repeat: int) -> dict[str, Any]:
    """The reference's metadata walk: every message's metadata decoded in Rust, its ``base`` made Python maps."""
    import tensogram

    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        with tensogram.TensogramFile.open(str(path)) as f:
            for i in range(len(f)):
                f.file_decode_metadata(i).base  # noqa: B018 - the maps the walk hands to Python
        times.append(time.process_time() - t0)
    return {"walk": statistics.median(times)}


def section_first_open(sz: Sizes, rows: list[Row], timeout: float) -> None:
    """The first open in a fresh process against the second (what a user's first cell pays once): within 50 ms.

    Each sample in ``sz.repeat`` fresh processes (medians); the engine class is passed, so xarray's discovery
    of other packages' engines is not counted. The note says whether the open imported Dask."""
    for name in FIRST_OPEN_SAMPLES:
        runs = [child(["first", name], timeout) for _ in range(max(3, sz.repeat))]
        done = [r for r in runs if r is not None]
        if not done:
            rows.append(Row(name[name.rfind(".") :], "-", f"first open of {name}", "timed out", "-", 0.0, 1.0))
            continue
        first = statistics.median(r["first"] for r in done)
        second = statistics.median(r["second"] for r in done)
        dask = "imports Dask" if any(r["dask"] for r in done) else "no Dask import"
        rows.append(
            Row(
                name[name.rfind(".") :],
                "-",
                f"first open of {name} (fresh process)",
                seconds(first),
                f"{seconds(second)} (second open) + 50 ms",
                (second + 0.05) / first,
                1.0,
                dask,
            )
        )
        print(f"  first open of {name}: {seconds(first)}, second {seconds(second)}, {dask}", flush=True)


def _first_open_child(name: str) -> dict[str, Any]:
    """In a fresh process: the first and the second ``xr.open_dataset`` of a bundled sample, and whether Dask
    was imported."""
    import xarray as xr

    import xarray_tensogram as xt
    from xarray_tensogram.backend import TensogramBackendEntrypoint

    path = xt.sample_path(name)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        xr.open_dataset(path, engine=TensogramBackendEntrypoint).close()
        times.append(time.perf_counter() - t0)
    return {"first": times[0], "second": times[1], "dask": "dask" in sys.modules}


Template = list[tuple[str, tuple[str, ...], tuple[int, ...], np.dtype, dict[str, Any]]]


def _template(path: Path) -> Template:
    """Names, dims, shapes, dtypes and attributes of every variable our open gives (for the no-op backend)."""
    with open_xr(path) as ds:
        return [(str(k), tuple(map(str, v.dims)), v.shape, v.dtype, dict(v.attrs)) for k, v in ds.variables.items()]


def _null_open(template: Template) -> Any:
    """``xr.open_dataset`` through a backend that reads nothing and hands the same lazy variables as ours
    (names, dims, shapes, dtypes, attributes) through xarray's store and CF decoding, as ours does: the
    least any backend's open of these variables costs in xarray."""
    import xarray as xr
    from xarray.backends import BackendEntrypoint
    from xarray.backends.common import AbstractDataStore
    from xarray.backends.store import StoreBackendEntrypoint
    from xarray.core.indexing import LazilyIndexedArray

    class Store(AbstractDataStore):
        def get_variables(self) -> dict[str, xr.Variable]:
            return {
                name: xr.Variable(dims, LazilyIndexedArray(np.broadcast_to(np.zeros((), dtype), shape)), attrs)
                for name, dims, shape, dtype, attrs in template
            }

        def get_attrs(self) -> dict[str, Any]:
            return {}

        def get_dimensions(self) -> dict[str, int]:
            return {d: n for _, dims, shape, _, _ in template for d, n in zip(dims, shape, strict=True)}

    class NoOp(BackendEntrypoint):
        def open_dataset(self, filename_or_obj: Any, *, drop_variables: Any = None) -> xr.Dataset:
            return StoreBackendEntrypoint().open_dataset(Store(), drop_variables=drop_variables)

    return xr.open_dataset("no-op", engine=NoOp)


def section_memory(sz: Sizes, rows: list[Row], timeout: float) -> None:
    for fmt, codec in FULL_CASES:
        path = case_file(sz, fmt, codec)
        r = child(["rss", str(path)], timeout)
        if r is None:
            continue
        budget = 1.1 * r["decoded"] + 64 * MIB
        rows.append(
            Row(
                f".{fmt}",
                CODEC_LABEL[codec],
                f"peak RSS of ds.load() ({mib(r['decoded'])} decoded)",
                mib(r["peak"]),
                mib(budget) + " budget",
                budget / r["peak"],
                1.0,
            )
        )
        print(f"  rss {fmt} {codec}: +{mib(r['peak'])} for {mib(r['decoded'])}", flush=True)
    paths = mf_files(sz)
    r = child(["mf", str(paths[0].parent), str(len(paths))], timeout)
    if r is not None:
        budget = r["decoded"] / 4
        rows.append(
            Row(
                ".tgm",
                "zstd",
                f"open_mfdataset {len(paths)} files + mean ({mib(r['decoded'])})",
                mib(r["peak"]),
                mib(budget) + " budget",
                budget / r["peak"],
                1.0,
            )
        )


def mf_files(sz: Sizes) -> list[Path]:
    import tensogram

    folder = DATA / f"mf_{sz.mf_files}x{sz.mf_side}"
    paths = [folder / f"f{i:03d}.tgm" for i in range(sz.mf_files)]
    if not all(p.exists() for p in paths):
        folder.mkdir(parents=True, exist_ok=True)
        desc = {"type": "ntensor", "shape": [sz.mf_side, sz.mf_side], "dtype": "float32", "compression": "zstd"}
        for i, p in enumerate(paths):
            base = [
                {"mars": {"param": q, "date": 20240101, "time": 0, "step": i}, "dim_names": ["y", "x"]} for q in PARAMS
            ]
            objs = [(desc, smooth_field(sz.mf_side, sz.mf_side, 4 * i + k)) for k in range(4)]
            p.write_bytes(bytes(tensogram.encode({"base": base}, objs)))
    return paths


def section_writer(sz: Sizes, rows: list[Row]) -> None:
    import tempfile

    import tensogram

    sys.path.insert(0, str(HERE))
    from bench_writer import make_dataset, messages_inputs

    from xarray_tensogram import to_tensogram

    ds = make_dataset(sz.steps, 4, sz.ny, sz.nx)
    inputs = messages_inputs(ds, {}, float64=False)
    with tempfile.TemporaryDirectory(dir=DATA) as d:
        ref_path, our_path = Path(d) / "ref.tgm", Path(d) / "ours.tgm"

        def ref(_: Any) -> None:
            with open(ref_path, "wb") as f:
                for meta, objs in inputs:
                    f.write(tensogram.encode(meta, objs))
                f.flush()
                os.fsync(f.fileno())

        ours, reft = alternate(
            (lambda _: to_tensogram(ds, our_path, message_dims=["step"]), None), (ref, None), sz.repeat
        )
    nbytes = sum(v.nbytes for v in ds.data_vars.values())
    rows.append(
        Row(
            ".tgm",
            "raw",
            f"to_tensogram ERA cube ({mib(nbytes)})",
            seconds(ours),
            seconds(reft) + " (encode+write)",
            reft / ours,
            1 / 1.3,
        )
    )


# ================================================================================================
# child processes (fresh memory accounting, timeouts)
# ================================================================================================
def child(args: list[str], timeout: float) -> dict[str, Any] | None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as exc:
        print(exc.stderr, file=sys.stderr)
        raise
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak() -> int:
    """Peak resident memory of this process (VmHWM: unlike ru_maxrss, it does not inherit the parent's peak
    through fork + exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> None:
    """Start the peak over from the current RSS (Linux: ``5`` into clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def run_child(args: list[str]) -> dict[str, Any]:
    kind = args[0]
    if kind == "first":
        return _first_open_child(args[1])
    if kind == "open":
        import tempfile

        path, repeat = Path(args[1]), int(args[2])
        import xarray as xr

        xr.backends.list_engines()  # imports and engine discovery warmed before timing

        times = []  # CPU time of the process: steadier than wall time on a machine shared with other jobs
        held = 0.0
        for k in range(repeat):
            gc.collect()
            before = _rss()
            t0 = time.process_time()
            ds = open_xr(path, metadata_cache=False)
            times.append(time.process_time() - t0)
            if k == 0:  # the memory the first open holds, per object (variables are (step, y, x))
                gc.collect()
                held = (_rss() - before) / sum(int(np.prod(v.shape[:-2])) for v in ds.data_vars.values())
            ds.close()
            del ds
        writing = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as fresh:  # the open that stores an entry
                gc.collect()
                t0 = time.process_time()
                ds = open_xr(path, metadata_cache=fresh)
                writing.append(time.process_time() - t0)  # timed as the uncached open: close and free after
                ds.close()
                del ds
        with tempfile.TemporaryDirectory() as cache:
            open_xr(path, metadata_cache=cache).close()  # stores the entry
            cached = []
            for _ in range(repeat):
                t0 = time.process_time()
                ds = open_xr(path, metadata_cache=cache)
                cached.append(time.process_time() - t0)
                ds.close()
                del ds
        return {
            "open": statistics.median(times),
            "writing": statistics.median(writing),
            "cached": statistics.median(cached),
            "rss_per_object": held,
        }
    if kind == "refwalk":
        return _reference_walk(Path(args[1]), int(args[2]))
    if kind == "rss":
        ds = open_xr(Path(args[1]))
        decoded = sum(v.nbytes for v in ds.data_vars.values())
        gc.collect()
        _reset_peak()
        before = _rss()
        ds.load()
        return {"peak": _peak() - before, "decoded": decoded}
    if kind == "mf":
        import dask
        import xarray as xr

        paths = sorted(Path(args[1]).glob("*.tgm"))[: int(args[2])]
        ds = xr.open_mfdataset(paths, engine="tensogram", chunks={}, combine="nested", concat_dim="step")
        decoded = sum(v.nbytes for v in ds.data_vars.values())
        gc.collect()
        _reset_peak()
        before = _rss()
        with dask.config.set(scheduler="threads", num_workers=2):
            ds.mean().compute()
        return {"peak": _peak() - before, "decoded": decoded}
    raise SystemExit(f"unknown child task {kind}")


# ================================================================================================
def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (not what the targets are about)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per side (median)")
    parser.add_argument("--only", default="full,dask,scaling,open,memory,writer", help="sections to run")
    parser.add_argument("--png", default=None, help="bar chart of the ratios (PNG)")
    parser.add_argument("--markdown", default=None, help="write the README table (ratios) to this file")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per child process")
    parser.add_argument("--open-counts", default=None, help="messages of the open rows, e.g. 1000,10000")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child)))
        return
    sz = Sizes.quick() if args.quick else Sizes()
    if args.repeat:
        sz = Sizes(**{**sz.__dict__, "repeat": args.repeat})
    if args.open_counts:
        sz = Sizes(**{**sz.__dict__, "open_counts": tuple(int(n) for n in args.open_counts.split(","))})
    load0 = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} CPUs, load average {load0:.1f} at start; medians of {sz.repeat} alternated runs"
        f"{' (quick sizes)' if args.quick else ''}",
        flush=True,
    )
    rows: list[Row] = []
    sections = {
        "full": lambda: section_full(sz, rows),
        "dask": lambda: section_dask(sz, rows),
        "scaling": lambda: section_scaling(sz, rows),
        "open": lambda: section_open(sz, rows, args.timeout),
        "open-operational": lambda: section_open_operational(sz, rows, args.timeout),
        "memory": lambda: section_memory(sz, rows, args.timeout),
        "writer": lambda: section_writer(sz, rows),
    }
    for name in args.only.split(","):
        sections[name]()
    load1 = os.getloadavg()[0]
    print(f"\nload average {load0:.1f} at start, {load1:.1f} at end")
    print_table(rows)
    title = f"xarray-tensogram vs the hardware (2 cores, load {load0:.0f}-{load1:.0f})"
    if args.png:
        plot(rows, Path(args.png), title)
        print(f"chart: {args.png}")
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(rows) + "\n")


if __name__ == "__main__":
    main()
