"""THST history rows as the text of a netCDF ``history`` attribute, and that text back as rows.

A reader shows each row as one line, ``<at>: <op> <source>`` (Unix-second ``at`` as ISO 8601 UTC),
the way netCDF tools prepend theirs. A writer turns each line of a ``history`` text back into a row
that shows as exactly that line: the row it was read from when it is unchanged (so its ``parents``
and ``params`` survive), else a row parsed from the line, else (a free-text line such as netCDF's
``Mon Jan  1 00:00:00 2024: ncks ...``) a ``history`` row holding the line in ``params.line``, which
readers show as the line itself. Declared here, once, for the reader and the writer.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .model import LIMITS

__all__ = ["LINE_OP", "history_line", "history_rows", "history_text"]

#: the ``op`` of a row that holds a line of free text (in ``params.line``), shown as that line alone
LINE_OP = "history"
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def _shown_time(at: str) -> str:
    """Unix seconds as ISO 8601 UTC; anything else as stored."""
    try:
        return _dt.datetime.fromtimestamp(int(at), _dt.timezone.utc).strftime(_ISO)
    except (ValueError, OverflowError, OSError):
        return at


def history_line(row: Mapping[str, Any]) -> str:
    """One row as a line of a netCDF ``history`` attribute."""
    params = row.get("params") or {}
    if row.get("op") == LINE_OP and isinstance(params.get("line"), str):
        return str(params["line"])
    return f"{_shown_time(str(row['at']))}: {row['op']} {row['source']}"


def history_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as a netCDF ``history`` attribute, oldest first, one line each."""
    return "\n".join(history_line(r) for r in rows)


def _fits(text: str) -> bool:
    """A row string the reference writes: 1..1024 bytes of UTF-8."""
    return 1 <= len(text.encode("utf-8", "surrogatepass")) <= LIMITS["string"]


def _parsed(line: str, now: str) -> dict[str, Any] | None:
    """The row that shows as ``line``; None for a line no row can hold (empty, or over 1024 bytes)."""
    at, sep, rest = line.partition(": ")
    op, _, source = rest.partition(" ")
    if sep and op and source:
        try:
            seconds = str(calendar.timegm(time.strptime(at, _ISO)))
        except ValueError:
            seconds = ""
        row = {"op": op, "source": source, "at": seconds}
        if seconds and all(map(_fits, (op, source))) and history_line(row) == line:
            return row
    return {"op": LINE_OP, "source": "xarray", "at": now, "params": {"line": line}} if _fits(line) else None


def history_rows(text: str, read: Sequence[Mapping[str, Any]] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows that show as ``text`` (a ``history`` attribute), and the lines no row can hold.

    ``read`` are the rows the file was read with: a line that shows one of them unchanged gives that row
    back as it was. A new free-text line is stamped with the time of writing."""
    unused: dict[str, list[Mapping[str, Any]]] = {}
    for row in read:
        unused.setdefault(history_line(row), []).append(row)
    now = str(int(time.time()))
    # in line order: a read row shown twice is given back for its first two lines, each once
    made = [
        (line, dict(same.pop(0)) if (same := unused.get(line)) else _parsed(line, now))
        for line in text.split("\n")
        if text
    ]
    return [row for _, row in made if row is not None], [line for line, row in made if row is None]
