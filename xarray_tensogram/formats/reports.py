"""Format-neutral shapes of what ``ls``, ``info`` and ``verify`` report, and small text helpers.

Each format builds these from its open file (it returns data, prints nothing); the CLI only renders them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CheckItem", "Table", "VerifyPlan", "count", "flat_keys", "shape_text", "short_text"]


@dataclass
class Table:
    """One table of ``ls``: a header row, rows of cells, right-aligned columns and a summary line."""

    headers: list[str]
    rows: list[list[Any]]
    right: tuple[int, ...] = ()
    summary: str | None = None


#: one unit that ``verify`` checks: a label and a function that decodes it (raising on damage) and
#: returns True when a stored hash/checksum was verified, False when there was none to verify
CheckItem = tuple[str, Callable[[], bool]]


@dataclass
class VerifyPlan:
    """What ``verify`` walks through for one open file."""

    items: list[CheckItem]
    #: stored bytes the items cover (decides whether a progress bar is worth showing)
    total_bytes: int
    #: what the file holds, e.g. "2 messages, 8 objects"
    summary: str
    #: the unit counted when the format stores no checksums at all (e.g. "tile")
    unit: str = "item"
    #: False when the format stores no checksums, so decoding is the whole check
    checksums: bool = True
    #: damage found before any item is checked (e.g. byte ranges the scanner skipped)
    failures: list[str] = field(default_factory=list)


def count(n: int, word: str, plural: str | None = None) -> str:
    """``count(1, "tile")`` -> "1 tile", ``count(2, "hash", "hashes")`` -> "2 hashes"."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def shape_text(shape: Iterable[int]) -> str:
    return "x".join(str(int(s)) for s in shape) or "scalar"


def short_text(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def flat_keys(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level of dotted keys: ``{"mars": {"step": 6}}`` -> ``{"mars.step": 6}``."""
    out: dict[str, Any] = {}
    for k, v in d.items() if isinstance(d, dict) else ():
        out.update(flat_keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out
