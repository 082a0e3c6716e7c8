"""Shared machinery of the fuzz suites: run a reader on damaged bytes and check how it fails.

Every case must end in the package's own error hierarchy (or a successful read),
never another exception type, never a hang (each case is timed) and never an
allocation beyond a small multiple of the file size plus the largest legitimate
decoded chunk (measured with tracemalloc).
"""

from __future__ import annotations

import os
import time
import tracemalloc
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from xarray_tensogram.errors import XarrayTensogramError

#: CI runs a bounded number of cases; XTGM_FUZZ_LONG=1 runs many more
LONG = os.environ.get("XTGM_FUZZ_LONG", "") not in ("", "0")
CASE_SECONDS = 5.0
ALLOC_FACTOR = 8


@dataclass
class FuzzStats:
    """What the cases of one format's fuzz suite met, for the session's closing summary (``report``)."""

    name: str
    cases: int = 0
    errors: int = 0
    successes: int = 0
    peak_ratio: float = 0.0
    peak_bytes: int = 0
    slowest: float = 0.0
    error_types: dict = field(default_factory=dict)


#: every suite's stats, by format name: printed at the end of the session by conftest's terminal summary
STATS: dict[str, FuzzStats] = {}


def fuzz_stats(name: str) -> FuzzStats:
    """The stats of the ``name`` suite (one object per name, shared by its tests)."""
    return STATS.setdefault(name, FuzzStats(name))


def report(write_line: Callable[[str], object]) -> None:
    """One line per suite that ran cases: the counts, the worst allocation ratio, the slowest case (figures
    for notes; each case is checked by ``run_case`` itself, so this is a summary, not a test)."""
    for s in STATS.values():
        if s.cases:
            write_line(
                f"[fuzz {s.name}] cases={s.cases} errors={s.errors} ok={s.successes} peak_alloc={s.peak_bytes}B "
                f"worst_ratio={s.peak_ratio:.2f} slowest={s.slowest:.3f}s {s.error_types}"
            )


def run_case(exercise: Callable[[bytes], object], data: bytes, legit_chunk: int, stats: FuzzStats, label: str) -> None:
    """Run ``exercise(data)``; fail the test on a foreign exception, a slow case or a big allocation."""
    if exercise not in _WARMED:
        # the first run in a process imports modules lazily; that is not an allocation the file caused
        _WARMED.add(exercise)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exercise(data)
        except Exception:  # judged by the traced run below
            pass
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exercise(data)
        stats.successes += 1
    except XarrayTensogramError as exc:
        stats.errors += 1
        name = type(exc).__name__
        stats.error_types[name] = stats.error_types.get(name, 0) + 1
    except Exception as exc:  # this is exactly what the suite looks for
        tracemalloc.stop()
        raise AssertionError(f"{label}: {type(exc).__name__} escaped the package's errors: {exc}") from exc
    finally:
        elapsed = time.perf_counter() - t0
        if tracemalloc.is_tracing():
            _cur, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        else:
            peak = 0
    stats.cases += 1
    stats.slowest = max(stats.slowest, elapsed)
    assert elapsed < CASE_SECONDS, f"{label}: took {elapsed:.1f}s"
    budget = ALLOC_FACTOR * len(data) + 2 * legit_chunk + (1 << 20)
    stats.peak_bytes = max(stats.peak_bytes, peak)
    stats.peak_ratio = max(stats.peak_ratio, peak / max(1, len(data) + legit_chunk))
    assert peak <= budget, f"{label}: allocated {peak} bytes for a {len(data)}-byte file (budget {budget})"


def flips(data: bytes, positions: list[int], values: list[int]) -> list[bytes]:
    out = []
    for p, v in zip(positions, values, strict=True):
        b = bytearray(data)
        b[p % len(b)] = v
        out.append(bytes(b))
    return out


def with_field(data: bytes, offset: int, width: int, value: int, byteorder: str) -> bytes:
    b = bytearray(data)
    mask = (1 << (8 * width)) - 1
    b[offset : offset + width] = (value & mask).to_bytes(width, byteorder)
    return bytes(b)


SPECIAL_VALUES = [0, 1, 2**32, 2**64 - 1]
_WARMED: set = set()
