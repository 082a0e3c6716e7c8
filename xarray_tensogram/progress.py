"""The command line's one rule for progress bars, shared by every subcommand that draws one (tqdm, optional)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["PROG", "add_progress_flags", "progress", "show_progress"]

PROG = "xarray-tensogram"


def show_progress(enabled: bool | None, large: bool) -> bool:
    """Whether a command draws a bar: ``--progress``/``--no-progress`` decide; else only for large work on a
    terminal (without one, pipes, logs and CI, a bar would only write carriage-return noise)."""
    return enabled if enabled is not None else large and sys.stderr.isatty()


def add_progress_flags(parser: Any, default: str) -> None:
    """``--progress``/``--no-progress`` on a subcommand; ``default`` says when a bar shows without either."""
    bar = parser.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help=f"show a progress bar even when stderr is not a terminal (needs tqdm); by default {default}",
    )
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")


def progress(items: Sequence[Any], enabled: bool | None, large: bool, desc: str, unit: str) -> Iterator[Any]:
    """``items``, wrapped in a tqdm bar on stderr when :func:`show_progress` says so and tqdm is installed."""
    if show_progress(enabled, large):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if enabled:  # asked for explicitly: say why there is no bar
                print(
                    f"{PROG}: note: --progress needs tqdm (pip install tqdm); continuing without a progress bar",
                    file=sys.stderr,
                )
        else:
            yield from tqdm(list(items), desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
            return
    yield from items
