"""MARS date/time/step keys -> CF-encoded ``time``, ``step`` and ``valid_time`` (as cfgrib users know them).

CF-encoded (numbers with ``units``), so xarray's own decoder makes them datetime64/timedelta64, honouring
``decode_times``, ``decode_timedelta`` and ``use_cftime``.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from .conventions import STEP_UNITS, STEP_UNITS_DTYPE, TIME_UNITS

__all__ = [
    "NUMBER_ATTRS",
    "PRESSURE_LEVEL_ATTRS",
    "STEP_UNITS",
    "STEP_UNITS_DTYPE",
    "TIME_UNITS",
    "mars_datetime_seconds",
    "step_hours",
]

#: cfgrib's attributes of the ensemble member coordinate (MARS ``number``)
NUMBER_ATTRS = {"units": "1", "standard_name": "realization", "long_name": "ensemble member numerical id"}
#: MARS ``levelist`` of ``levtype`` ``pl``: pressure in hPa (cfgrib's and earthkit-data's attributes)
PRESSURE_LEVEL_ATTRS = {"long_name": "pressure", "units": "hPa", "positive": "down", "standard_name": "air_pressure"}
_EPOCH = dt.datetime(1970, 1, 1)


def as_int(value: Any) -> int | None:
    """An integer MARS value given as int, whole float or digits (None otherwise; never a bool)."""
    if isinstance(value, int):
        return None if isinstance(value, bool) else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return int(value) if isinstance(value, str) and value.strip().removeprefix("-").isdecimal() else None


def mars_datetime_seconds(date: Any, time: Any = 0) -> int | None:
    """Seconds since 1970 for MARS ``date`` (YYYYMMDD or ISO text) and ``time`` (HHMM or HH:MM); called for
    every object with few distinct values, so each distinct (date, time) is converted once."""
    try:
        return _datetime_seconds(date, time)
    except TypeError:  # an unhashable value: convert it directly
        return _datetime_seconds.__wrapped__(date, time)


@functools.lru_cache(maxsize=65536, typed=True)  # typed: 1, 1.0 and True convert differently
def _datetime_seconds(date: Any, time: Any) -> int | None:
    d = as_int(date)
    try:
        if d is not None:
            day = dt.datetime(d // 10000, d // 100 % 100, d % 100)
        elif isinstance(date, str):
            day = dt.datetime.fromisoformat(date.strip())
        else:
            return None
    except ValueError:
        return None
    if isinstance(time, str) and ":" in time:
        hh, mm = time.split(":")[:2]
        t = int(hh) * 100 + int(mm)
    else:
        t = as_int(time) or 0
    if t < 100 and isinstance(time, int) and 0 != time <= 24:
        t = t * 100  # time given in hours
    hours, minutes = divmod(t, 100)
    stamp = day + dt.timedelta(hours=hours, minutes=minutes)
    return int((stamp - _EPOCH).total_seconds())


def step_hours(step: Any) -> float | None:
    """MARS ``step`` in hours (ints, numeric text, or ``"6h"``/``"30m"``)."""
    if isinstance(step, (int, float)):
        return None if isinstance(step, bool) else float(step)
    if not isinstance(step, str):
        return None
    s = step.strip().lower()
    unit = s[-1:] if s.endswith(("h", "m")) else ""
    try:
        return float(s[: len(s) - len(unit)]) / (60.0 if unit == "m" else 1.0)
    except ValueError:
        return None
