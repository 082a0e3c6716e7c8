"""xarray backend speed: xarray-tensogram against the reference backend ``tensogram-xarray==0.24.0``.

Run it with a virtual environment that has BOTH backends (the reference must not go
into the development venv, since it claims the same engine name ``tensogram``)::

    python3 -m venv /tmp/venv-ref
    /tmp/venv-ref/bin/pip install -q tensogram-xarray==0.24.0 tensogram==0.24.0 -e .
    /tmp/venv-ref/bin/python benchmarks/bench_backend.py [--repeat 5] [--profile OP]

Both backends run in one process, side by side, on the same files and the same warm
page cache: each entrypoint class is passed directly as ``engine=`` so the name clash
does not matter.

File: 24 messages x 4 objects (2t, msl, 10u, 10v) of 721x1440,
base entries ``{"mars": {param, date, time, step}, "dim_names": ["latitude", "longitude"]}``
plus latitude/longitude coordinate objects in every message, in three variants:
``none`` (raw float32), ``zstd`` (float32 + zstd) and ``packed`` (float64 fields,
simple_packing 16 bits + zstd). The files are written with ``tensogram.encode`` and
cached in ``benchmarks/_data/`` (gitignored; delete it to regenerate).

How the reference maps the cube: with its defaults it opens only message 0; with
``merge_objects=True, variable_key="mars.param"`` it stacks the 24 messages along a
dimension named ``mars`` whose coordinate values are dicts (``{"date": ..., "step": ...}``),
where we give ``step`` (timedelta64) plus scalar ``time`` and ``valid_time``. The
shapes agree (24, 721, 1440), so the equivalent operations are the same positional
selections (``ds["2t"][:, 360, 720]``); "open" is ``merge_objects=True`` for the reference.
The reference returns an integer-indexed stacked axis unsqueezed (``b["msl"][5].values``
has shape (1, 721, 1440)); the sanity check reshapes it. On the packed file the reference
merge cannot stack (the per-object packing parameters differ, so it logs "cannot form a
hypercube" and keeps only the first object of each variable): there the equivalent is what
its user must do, 24 single-message opens (``message_index=i``), a point read in each and
a load of each.

Measured (medians after a warm-up, ours and the reference timed alternately so both see
the same machine load; each ``load`` on a freshly opened Dataset, open time excluded):

- open: ``xr.open_dataset`` (index + Dataset build) then close;
- point: ``ds["2t"][:, 360, 720].values`` on an open Dataset;
- load: ``ds.load()`` (all four variables);
- threads: ours with ``chunks={}`` on Dask's threaded scheduler, 2 workers, against ours
  with ``chunks={}`` on the synchronous scheduler;
- bytes: what ``ds["2t"][0, :10].values`` reads on the raw file, counted by our
  ``LocalFileSource.bytes_read`` (every source the backend creates is tracked), against
  10 rows (10*1440*4 bytes) plus the metadata read at open. For the reference we show the
  bytes its process read through system calls (``/proc/self/io`` rchar), for information.

Columns: wall-clock medians and their ratio (what the targets are about), then the
process-CPU-time medians and their ratio. On a shared machine (load average above the
number of CPUs) wall times swing by 2-4x between runs; the CPU columns move much less and
show what each side costs. For the threads row the CPU columns are only informative, and
the threads ratio itself means something only when 2 CPUs are idle for this process.

``--profile OP`` (``open``, ``point``, ``load``, ``threads``) prints the cProfile top
entries of our side of that operation on each variant.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

try:
    from tensogram_xarray.backend import TensogramBackendEntrypoint as RefEntrypoint
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit(
        "bench_backend.py needs the reference backend tensogram-xarray==0.24.0, which is not installed here.\n"
        "Do not install it in the development venv (it claims the engine name 'tensogram'); use a separate one:\n"
        "    python3 -m venv /tmp/venv-ref\n"
        "    /tmp/venv-ref/bin/pip install -q tensogram-xarray==0.24.0 tensogram==0.24.0 -e /path/to/xarray-tensogram\n"
        "    /tmp/venv-ref/bin/python benchmarks/bench_backend.py"
    )

import dask
import tensogram
import xarray as xr

from xarray_tensogram import io as xt_io
from xarray_tensogram.backend import TensogramBackendEntrypoint as OursEntrypoint

NY, NX, STEPS = 721, 1440, 24
PARAMS = ("2t", "msl", "10u", "10v")
VARIANTS = ("none", "zstd", "packed")
DATA_DIR = Path(__file__).resolve().parent / "_data"
REF_KW = {"merge_objects": True, "variable_key": "mars.param"}
ROW_BYTES = NX * 4


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------


def _fields(step: int, lat2: np.ndarray, lon2: np.ndarray, noise: np.ndarray) -> dict[str, np.ndarray]:
    rlat, rlon = np.radians(lat2), np.radians(lon2)
    return {
        "2t": 288.0 - 30.0 * np.abs(np.sin(rlat)) + 3.0 * np.cos(rlon - np.radians(15 * step)) + noise,
        "msl": 101325.0 + 800.0 * np.sin(2 * rlat) * np.cos(rlon + np.radians(10 * step)) + 50.0 * noise,
        "10u": 10.0 * np.cos(rlat) * np.sin(rlon + np.radians(step)) + noise,
        "10v": 5.0 * np.sin(3 * rlat) + np.cos(rlon - np.radians(step)) + noise,
    }


def make_file(path: Path, compression: str) -> None:
    """Write the ERA-like cube with the reference encoder (``tensogram.encode``)."""
    lat = np.linspace(90.0, -90.0, NY)
    lon = np.linspace(0.0, 360.0, NX, endpoint=False)
    lon2, lat2 = np.meshgrid(lon, lat)
    noise = (0.5 * np.random.default_rng(0).standard_normal((NY, NX))).astype("f4")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        for s in range(STEPS):
            step = 6 * s
            base: list[dict[str, Any]] = []
            objects: list[tuple[dict[str, Any], np.ndarray]] = []
            for param, field_ in _fields(step, lat2, lon2, noise).items():
                desc: dict[str, Any] = {"type": "ntensor", "shape": [NY, NX], "dtype": "float32"}
                values = np.ascontiguousarray(field_, dtype="f4")
                if compression == "zstd":
                    desc["compression"] = "zstd"
                elif compression == "packed":  # simple_packing needs float64 input
                    values = values.astype("f8")
                    desc.update(dtype="float64", encoding="simple_packing", compression="zstd")
                    desc.update(tensogram.compute_packing_params(values.ravel(), 16, 0))
                objects.append((desc, values))
                base.append(
                    {
                        "mars": {"param": param, "date": 20240101, "time": 0, "step": step},
                        "dim_names": ["latitude", "longitude"],
                    }
                )
            for name, values, units in (("latitude", lat, "degrees_north"), ("longitude", lon, "degrees_east")):
                objects.append(({"type": "ntensor", "shape": [values.size], "dtype": "float64"}, values))
                base.append({"name": name, "cf": {"units": units}})
            f.write(bytes(tensogram.encode({"base": base, "_extra_": {"title": "bench ERA-like cube"}}, objects)))
    os.replace(tmp, path)


def data_file(compression: str) -> Path:
    path = DATA_DIR / f"era_{STEPS}x{len(PARAMS)}x{NY}x{NX}_{compression}_tg{tensogram.__version__}.tgm"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        make_file(path, compression)
        print(
            f"  wrote {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s", flush=True
        )
    return path


# ------------------------------------------------------------------------------------------
# timing helpers
# ------------------------------------------------------------------------------------------

Timed = tuple[Callable[..., object], Callable[[], Any] | None]  # (fn, setup or None)


def _once(fn: Callable[..., object], setup: Callable[[], Any] | None) -> tuple[float, float]:
    """(wall, process CPU) seconds of one call; ``setup()`` runs untimed and feeds ``fn``."""
    arg = setup() if setup else None
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    fn(arg) if setup else fn()
    return time.perf_counter() - t0, time.process_time() - c0


@dataclass
class Pair:
    """Medians of two alternately timed calls: wall and process-CPU seconds."""

    a: float
    b: float
    cpu_a: float
    cpu_b: float


def median_pair(a: Timed, b: Timed, repeat: int, *, budget: float = 8.0) -> Pair:
    """Medians of ``a`` and ``b`` timed alternately (a, b, a, b, ...) after one warm-up of each.

    Alternating makes both sides see the same machine load, so the ratio holds up on a
    busy machine better than the absolute times; the process CPU time is kept too (it
    hardly depends on other processes, and neither backend uses threads outside Dask).
    Pairs under 10 ms get 10x more runs; slow pairs stop after ``budget`` seconds (at
    least 3 runs each).
    """
    first = _once(*a)[0] + _once(*b)[0]  # warm-up: page faults on first touch, imports, caches
    n = repeat * 10 if first < 0.01 else repeat
    ta: list[tuple[float, float]] = []
    tb: list[tuple[float, float]] = []
    start = time.perf_counter()
    for _ in range(n):
        ta.append(_once(*a))
        tb.append(_once(*b))
        if len(ta) >= 3 and time.perf_counter() - start > budget:
            break

    def med(xs: Any, i: int) -> float:
        return statistics.median(x[i] for x in xs)

    return Pair(med(ta, 0), med(tb, 0), med(ta, 1), med(tb, 1))


def profile(label: str, fn: Callable[[], object], top: int = 25) -> None:
    fn()  # warm
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("cumulative").print_stats(top)
    print(f"\n===== cProfile (ours): {label} =====")
    print(out.getvalue())


def rchar() -> int:
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


class SourceTracker:
    """Track every ``LocalFileSource`` the backend creates, to sum their ``bytes_read``."""

    def __init__(self) -> None:
        self.sources: list[xt_io.LocalFileSource] = []
        self._orig = xt_io.LocalFileSource.__init__

    def __enter__(self) -> SourceTracker:
        orig, sources = self._orig, self.sources

        def init(src: xt_io.LocalFileSource, *a: Any, **kw: Any) -> None:
            orig(src, *a, **kw)
            sources.append(src)

        xt_io.LocalFileSource.__init__ = init  # type: ignore[method-assign]  # counts the sources opened
        return self

    def __exit__(self, *exc: object) -> None:
        xt_io.LocalFileSource.__init__ = self._orig  # type: ignore[method-assign]  # restored

    def total(self) -> tuple[int, int]:
        return sum(s.bytes_read for s in self.sources), sum(s.read_calls for s in self.sources)


# ------------------------------------------------------------------------------------------
# benchmark
# ------------------------------------------------------------------------------------------


def open_ours(path: Path, **kw: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine=OursEntrypoint, **kw)


def open_ref(path: Path) -> xr.Dataset:
    return xr.open_dataset(str(path), engine=RefEntrypoint, **REF_KW)


class RefCube:
    """The reference's equivalent of our (step, latitude, longitude) cube.

    ``stacked``: one ``merge_objects=True`` Dataset (dims ``mars`` of dicts, latitude, longitude).
    Otherwise (the packed file, whose per-object packing parameters differ, so the reference
    merge keeps only the first object of each variable and drops 23): one Dataset per
    message (``message_index=i``), as a user of the reference would have to do.
    """

    def __init__(self, path: Path, stacked: bool) -> None:
        self.path, self.stacked = path, stacked

    def open(self) -> Any:
        if self.stacked:
            return open_ref(self.path)
        return [xr.open_dataset(str(self.path), engine=RefEntrypoint, message_index=i) for i in range(STEPS)]

    def close(self, h: Any) -> None:
        for ds in [h] if self.stacked else h:
            ds.close()

    def point(self, h: Any) -> np.ndarray:
        if self.stacked:
            return np.asarray(h["2t"][:, 360, 720].values).reshape(STEPS)
        return np.array([ds["2t"][360, 720].values for ds in h])

    def field(self, h: Any, name: str, i: int) -> np.ndarray:
        # the reference returns an integer-indexed stacked axis unsqueezed: (1, 721, 1440)
        return np.asarray(h[name][i].values if self.stacked else h[i][name].values).reshape(NY, NX)

    def load(self, h: Any) -> None:
        for ds in [h] if self.stacked else h:
            ds.load()

    def describe(self) -> str:
        return "merge_objects=True stack" if self.stacked else f"{STEPS} single-message Datasets"


def check_equivalent(path: Path, ref: RefCube) -> None:
    """The two mappings hold the same values at the same positions (one point series + one field)."""
    h = ref.open()
    try:
        with open_ours(path) as a:
            assert a["2t"].shape == (STEPS, NY, NX), a["2t"].shape
            np.testing.assert_array_equal(a["2t"][:, 360, 720].values, ref.point(h))
            np.testing.assert_array_equal(a["msl"][5].values, ref.field(h, "msl", 5))
    finally:
        ref.close(h)


def bench_variant(comp: str, path: Path, repeat: int, rows: list[list[str]], prof: str | None) -> None:
    ref = RefCube(path, stacked=comp != "packed")
    check_equivalent(path, ref)
    print(f"  reference mapping: {ref.describe()}", flush=True)

    def add(op: str, m: Pair, target: float | None) -> None:
        ratio = m.b / m.a
        ok = "-" if target is None else ("yes" if ratio >= target else "MISSED")
        rows.append(
            [
                comp,
                op,
                fmt(m.a),
                fmt(m.b),
                f"{ratio:.1f}x",
                "-" if target is None else f">={target:g}x",
                ok,
                fmt(m.cpu_a),
                fmt(m.cpu_b),
                f"{m.cpu_b / m.cpu_a:.1f}x",
            ]
        )

    # open --------------------------------------------------------------------------------
    add("open", median_pair((lambda: open_ours(path).close(), None), (lambda: ref.close(ref.open()), None), repeat), 10)

    # point time series ---------------------------------------------------------------------
    h = ref.open()
    with open_ours(path) as a:
        m = median_pair((lambda: a["2t"][:, 360, 720].values, None), (lambda: ref.point(h), None), repeat)
    ref.close(h)
    add("point 2t[:,360,720]", m, {"none": 20, "zstd": 3}.get(comp))

    def ref_open_point() -> None:
        h = ref.open()
        ref.point(h)
        ref.close(h)

    add(
        "open + point",
        median_pair((lambda: open_ours(path)["2t"][:, 360, 720].values, None), (ref_open_point, None), repeat),
        None,
    )

    # full load -----------------------------------------------------------------------------
    m = median_pair((lambda ds: ds.load(), lambda: open_ours(path)), (ref.load, ref.open), repeat)
    add("load()", m, {"none": 5, "zstd": 2}.get(comp))

    # threaded vs synchronous, ours ---------------------------------------------------------
    def load_with(scheduler: str, **cfg: Any) -> Callable[[xr.Dataset], object]:
        def run(ds: xr.Dataset) -> object:
            with dask.config.set(scheduler=scheduler, **cfg):
                return ds.load()

        return run

    chunked = partial(open_ours, path, chunks={})
    m = median_pair((load_with("threads", num_workers=2), chunked), (load_with("synchronous"), chunked), repeat)
    ratio = m.b / m.a
    ok = ("yes" if ratio >= 1.5 else "MISSED") if comp == "zstd" else "-"
    rows.append(
        [
            comp,
            "ours chunks={}: threads(2) | sync",
            fmt(m.a),
            fmt(m.b) + " (sync)",
            f"{ratio:.2f}x",
            ">=1.5x" if comp == "zstd" else "-",
            ok,
            fmt(m.cpu_a),
            fmt(m.cpu_b) + " (sync)",
            "-",
        ]
    )

    if prof:
        ops = {
            "open": lambda: open_ours(path).close(),
            "point": lambda: open_ours(path)["2t"][:, 360, 720].values,
            "load": lambda: open_ours(path).load(),
            "threads": lambda: load_with("threads", num_workers=2)(open_ours(path, chunks={})),
        }
        profile(f"{prof} [{comp}]", ops[prof])


def bench_bytes(path: Path, rows: list[list[str]]) -> None:
    """Bytes read by ``ds["2t"][0, :10].values`` on the uncompressed file."""
    payload = 10 * ROW_BYTES
    with SourceTracker() as tr:
        ds = open_ours(path)
        meta, meta_calls = tr.total()
        _ = ds["2t"][0, :10].values
        total, calls = tr.total()
        ds.close()
    sel = total - meta
    r0 = rchar()
    with open_ref(path) as b:
        r1 = rchar()
        _ = b["2t"][0, :10].values
        r2 = rchar()
    ok = "yes" if sel <= 2 * payload + 2 * meta else "MISSED"
    rows.append(
        [
            "none",
            "bytes: open (metadata)",
            f"{meta:,} B / {meta_calls} reads",
            f"{r1 - r0:,} B (rchar)",
            "-",
            "-",
            "-",
            "",
            "",
            "",
        ]
    )
    rows.append(
        [
            "none",
            "bytes: 2t[0,:10] after open",
            f"{sel:,} B / {calls - meta_calls} reads",
            f"{r2 - r1:,} B (rchar)",
            f"{sel / payload:.2f}x rows",
            f"<=2x({payload:,}+meta)",
            ok,
            "",
            "",
            "",
        ]
    )


def fmt(v: float) -> str:
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.2f} s"


def print_table(rows: list[list[str]]) -> None:
    head = ["file", "operation", "ours", "reference", "ratio", "target", "met", "ours cpu", "ref cpu", "cpu ratio"]
    widths = [max(len(str(r[i])) for r in [*rows, head]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    print("\n" + line + "\n" + "-" * len(line))
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            print()
        last = r[0]
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of none,zstd,packed")
    parser.add_argument("--profile", choices=["open", "point", "load", "threads"], default=None)
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]

    import tensogram_xarray

    print(
        f"xarray {xr.__version__}, dask {dask.__version__}, tensogram {tensogram.__version__}, "
        f"tensogram-xarray {getattr(tensogram_xarray, '__version__', '0.24.0')}, cpus {os.cpu_count()}"
    )
    print(
        f"file: {STEPS} messages x {len(PARAMS)} objects of {NY}x{NX} + latitude/longitude; "
        f"medians of {args.repeat} runs (x10 for sub-10 ms calls) after a warm-up"
    )
    paths = {v: data_file(v) for v in variants}
    for v, p in paths.items():
        print(f"  {v:6s} {p.stat().st_size / 1e6:7.1f} MB  {p}")
    print(
        "reference opened with",
        REF_KW,
        "-> dims (mars: 24 dicts, latitude, longitude); ours -> (step, latitude, longitude)",
    )

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    rows: list[list[str]] = []
    for v in variants:
        print(f"running {v} ...", flush=True)
        bench_variant(v, paths[v], args.repeat, rows, args.profile)
        if v == "none":
            bench_bytes(paths[v], rows)
    print_table(rows)
    print(
        f"\nbenchmark time {time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f} "
        f"(before: {load0:.1f}) on {os.cpu_count()} cpus"
    )
    if max(load0, os.getloadavg()[0]) > (os.cpu_count() or 1):
        print("warning: other processes were using the CPUs; ratios (threads above all) are noisy")


if __name__ == "__main__":
    main()
