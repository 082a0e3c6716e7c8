"""ECMWF parameters: units, long name and CF standard name by ``paramId`` or MARS ``param``.

cfgrib takes these from ecCodes; producers that write only MARS keys (anemoi-inference, earthkit-data) leave
them out of the file. ``params.tsv`` (made by ``tools/make_param_table.py`` from ecCodes' definitions, whose
version its first line records) covers IFS, ERA5 and AIFS outputs; read on first use. A MARS ``param`` is a
``paramId`` (``130``, ``"130"``), ``<code>.<table>`` (``"228.228"`` -> 228228) or a short name (``"t"``); a
short name of several ids means the lowest (``tp`` is 228, not 228228), as MARS does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .mars import as_int

__all__ = ["Param", "lookup", "table_attributes", "table_version"]

#: the attributes the table provides, in the order they are added
TABLE_ATTRS = ("units", "long_name", "standard_name")


@dataclass(frozen=True)
class Param:
    """One row of the table (``standard_name`` is empty where CF has none)."""

    param_id: int
    short_name: str
    units: str
    long_name: str
    standard_name: str

    def attributes(self) -> dict[str, str]:
        return {k: v for k in TABLE_ATTRS if (v := getattr(self, k))}


@functools.cache
def _table() -> tuple[str, dict[int, Param], dict[str, Param]]:
    """The table's version, its rows by ``paramId`` and by short name."""
    lines = resources.files(__package__).joinpath("params.tsv").read_text(encoding="utf-8").splitlines()
    by_id: dict[int, Param] = {}
    by_short: dict[str, Param] = {}
    for line in lines[2:]:
        pid, short, *rest = line.split("\t")
        p = by_id[int(pid)] = Param(int(pid), short, *rest)
        if short not in by_short or p.param_id < by_short[short].param_id:
            by_short[short] = p
    return lines[0].lstrip("# ").strip(), by_id, by_short


def table_version() -> str:
    """Where the table's facts come from (the ecCodes version)."""
    return _table()[0]


def _as_id(value: Any) -> int | None:
    """A paramId from an int, a whole float or text; ``"130.128"``-style text names its table (128 is
    the default table, others give ``table * 1000 + number`` as ecCodes numbers them)."""
    if isinstance(value, str):
        code, _, table = value.strip().partition(".")
        if code.isdigit() and (not table or table.isdigit()):
            number, table_number = int(code), int(table) if table else 128
            return number if table_number == 128 else table_number * 1000 + number
        return None
    return as_int(value)


def lookup(param: Any) -> Param | None:
    """The table's row for a ``paramId`` or MARS ``param`` (None when unknown)."""
    _, by_id, by_short = _table()
    pid = _as_id(param)
    if pid is not None:
        return by_id.get(pid)
    return by_short.get(param) if isinstance(param, str) else None


#: metadata keys that name a parameter, most specific first
_PARAM_KEYS = ("paramId", "mars.paramId", "grib_repro.paramId", "mars.param", "param")


def table_attributes(keys: Mapping[str, Any]) -> dict[str, str]:
    """``units``/``long_name``/``standard_name`` for the parameter an object's dotted keys name, or ``{}``."""
    found = (lookup(keys[k]) for k in _PARAM_KEYS if keys.get(k) is not None)
    return next((p.attributes() for p in found if p is not None), {})
