"""The first ``xr.open_dataset`` in a fresh process: the engine class against ``engine="tensogram"``.

Passing the class skips xarray's engine discovery; naming the engine makes xarray list every installed
backend's entry point first (and, with ``tensogram-xarray`` installed, ``"tensogram"`` is that package's
engine: ``engine="xtensogram"`` is ours under a name nobody else registers). Each sample is opened in
``--repeat`` fresh processes per way, the two ways alternating; the figures are medians of the first open
(the import of xarray_tensogram not counted, ``import xarray`` done before the clock starts).

Run: ``python benchmarks/bench_first_open.py [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = ("era_pl.tgm", "sample.tet", "sample.zt")
WAYS = {"class": "engine=TensogramBackendEntrypoint", "name": 'engine="tensogram"', "alias": 'engine="xtensogram"'}

CHILD = """
import json, sys, time
import xarray as xr
import xarray_tensogram as xt
from xarray_tensogram.backend import TensogramBackendEntrypoint
engine = {"class": TensogramBackendEntrypoint, "name": "tensogram", "alias": "xtensogram"}[sys.argv[2]]
t0 = time.perf_counter()
xr.open_dataset(xt.sample_path(sys.argv[1]), engine=engine).close()
print(json.dumps({"first": time.perf_counter() - t0, "dask": "dask" in sys.modules}))
"""


def first_open(sample: str, way: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, sample, way], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repeat} fresh processes, ways alternating")
    for sample in SAMPLES:
        times: dict[str, list[float]] = {w: [] for w in WAYS}
        for i in range(args.repeat):
            order = list(WAYS) if i % 2 == 0 else list(reversed(WAYS))
            for way in order:
                times[way].append(first_open(sample, way)["first"])
        text = ", ".join(f"{WAYS[w]} {1000 * statistics.median(t):.1f} ms" for w, t in times.items())
        print(f"{sample}: {text}")


if __name__ == "__main__":
    main()
