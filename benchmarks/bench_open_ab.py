"""The uncached open of an operational archive, two versions of the package side by side.

Run: ``python benchmarks/bench_open_ab.py REV_A REV_B [--messages 10000,100000] [--rounds 2] [--opens 3]``.

Each revision (a commit, a branch, or a folder that holds the package) is checked out into a temporary git
worktree. Each round opens the archive ``--opens`` times in one fresh process per version, and the order of
the versions alternates between rounds. The figures are medians of the process's CPU time per open, with
``metadata_cache=False``. The archives are ``run_all.py``'s ``open-operational`` files. A run killed half-way leaves
its worktrees registered in git: ``git worktree prune`` removes them.

The children run in an empty folder and report the folder they imported the package from. Python puts the
working folder first on ``sys.path``, so a child started inside a checkout imports that checkout whatever
``PYTHONPATH`` says, and both sides would then time the same code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_all  # noqa: E402 (the benchmark files are made as run_all makes them)

CHILD = """
import gc, json, sys, time
import xarray as xr
import xarray_tensogram
path, opens = sys.argv[1], int(sys.argv[2])
def one_open():
    xr.open_dataset(path, engine="tensogram", metadata_cache=False).close()
one_open()  # warm-up: imports, the file's pages
times = []
for _ in range(opens):
    gc.collect()
    t0 = time.process_time()
    one_open()
    times.append(time.process_time() - t0)
print(json.dumps({"package": xarray_tensogram.__file__, "times": times}))
"""


@contextlib.contextmanager
def checkout(rev: str, into: Path) -> Iterator[Path]:
    """A folder holding the package at ``rev``: the folder itself when it holds one, else a git worktree."""
    if (Path(rev) / "xarray_tensogram").is_dir():
        yield Path(rev).resolve()
        return
    subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "-q", "--detach", str(into), rev], check=True)
    try:
        yield into.resolve()  # compared with the resolved path a child reports
    finally:
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(into)], check=True)


def opens_of(tree: Path, archive: Path, opens: int, cwd: Path) -> list[float]:
    """CPU seconds of ``opens`` opens in one fresh process importing the package from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(archive), str(opens)], capture_output=True, text=True, env=env, cwd=cwd
    )
    if out.returncode:
        raise SystemExit(f"the open failed with the package of {tree}:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(result["package"]).resolve().is_relative_to(tree):
        raise SystemExit(f"the child imported {result['package']}, not the package of {tree}")
    return list(result["times"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("--messages", default="10000,100000", help="archive sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--opens", type=int, default=3, help="opens per process")
    args = parser.parse_args()
    archives = [run_all.tgm_many_operational(int(n)) for n in args.messages.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        revs = (args.rev_a, args.rev_b)  # by position: the same revision twice measures the noise
        trees = [stack.enter_context(checkout(rev, Path(tmp) / f"tree{i}")) for i, rev in enumerate(revs)]
        empty = Path(tmp) / "empty"
        empty.mkdir()
        for archive in archives:
            times: list[list[float]] = [[], []]
            for r in range(args.rounds):
                for side in (0, 1) if r % 2 == 0 else (1, 0):
                    times[side] += opens_of(trees[side], archive, args.opens, empty)
            a, b = (statistics.median(t) for t in times)
            print(
                f"{archive.name}: {args.rev_a} {a:.3f} s, {args.rev_b} {b:.3f} s, b / a {b / a:.3f} "
                f"(medians of {len(times[0])} opens each)"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
