"""The GRIB converter's layout written back: the inverse of :mod:`.cfgrib_rules`.

cfgrib-style attributes go back to their metadata paths (``GRIB_X`` -> ``grib_repro.X``), a level dim's values
to ``grib_repro.level`` (and ``mars.levelist``), and the ``grib_repro`` keys that follow from each object's MARS
date, time, step and level are derived again, so that the reference's GRIB export takes the file as converted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...mars import mars_datetime_seconds
from .cfgrib_rules import GRIB_PREFIXES, variable_name

__all__ = ["derived_name", "entry_paths", "level_keys", "refresh_repro"]

_REPRO, _GRIB = GRIB_PREFIXES


def entry_paths(attrs: Mapping[str, Any], recorded: Mapping[str, str] | None) -> dict[str, Any]:
    """The inverse of :func:`cf_attributes`: attributes keyed by their recorded metadata paths, else ``GRIB_X``
    as ``grib_repro.X`` and ``GRIB_<ns>.X`` as ``grib.<ns>.X``; ``units``/``long_name`` beside ``GRIB_units``/
    ``GRIB_name`` are not written twice."""
    recorded = dict(recorded or {})
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if key in recorded:
            out[recorded[key]] = value
        elif key.startswith("GRIB_"):
            rest = key[len("GRIB_") :]
            out[(_GRIB if "." in rest else _REPRO) + rest] = value
        elif key in ("units", "long_name") and ("GRIB_units" in attrs or "GRIB_name" in attrs):
            continue
        else:
            out[key] = value
    return out


def _as_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def level_keys(value: Any, levelist: bool) -> list[tuple[str, Any]]:
    """Metadata paths a value of a GRIB level dimension stands for (``grib_repro.level``, ``mars.levelist``)."""
    number = _as_int(float(value))
    return [("grib_repro.level", number)] + ([("mars.levelist", number)] if levelist else [])


def derived_name(entry: Mapping[str, Any]) -> str | None:
    """The name :func:`variable_name` gives a converter-shaped base entry (nested dicts), else ``None``."""
    grib = entry.get("grib")
    parameter = grib.get("parameter") if isinstance(grib, Mapping) else None
    parts = {"mars": entry.get("mars"), "grib_repro": entry.get("grib_repro"), "grib.parameter": parameter}
    flat = {f"{s}.{k}": v for s, part in parts.items() if isinstance(part, Mapping) for k, v in part.items()}
    return variable_name(flat) if any(not k.startswith("mars.") for k in flat) else None  # a GRIB key: its name


def refresh_repro(entry: dict[str, Any]) -> None:
    """Give an entry's ``grib_repro`` the keys that follow from its ``mars`` date/time/step/level (in place).

    Keys that vary with step and level are no attributes of the opened Dataset, so they are derived again for
    each object; keys present (constant attributes) are kept. Steps only in hours of instantaneous fields.
    """
    repro = entry.get("grib_repro")
    mars = entry.get("mars")
    if not isinstance(repro, dict) or not isinstance(mars, dict):
        return
    for key in ("levelist", "step", "date", "time"):
        if key in mars:
            mars[key] = _as_int(mars[key])
    if "level" in repro:
        repro["level"] = _as_int(repro["level"])
    elif "levelist" in mars:
        repro["level"] = mars["levelist"]
    derived: dict[str, Any] = {}
    if "level" in repro:
        derived.update(topLevel=repro["level"], bottomLevel=repro["level"])
    if "date" in mars:
        derived.update(dataDate=mars["date"], dataTime=mars.get("time", 0))
    step = mars.get("step")
    if isinstance(step, int) and repro.get("stepType", "instant") == "instant" and repro.get("stepUnits", 1) == 1:
        derived.update(startStep=step, endStep=step, stepRange=str(step))
        start = mars_datetime_seconds(mars.get("date"), mars.get("time", 0))
        if start is not None:
            days, rest = divmod(start + 3600 * step, 86400)
            date = np.datetime64("1970-01-01", "D") + np.timedelta64(days, "D")
            derived.update(
                validityDate=int(str(date).replace("-", "")), validityTime=rest // 3600 * 100 + rest % 3600 // 60
            )
    for key, value in derived.items():
        repro.setdefault(key, value)
