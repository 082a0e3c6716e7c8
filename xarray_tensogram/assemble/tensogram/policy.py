"""Hook points for format-specific mapping rules (e.g. GRIB-derived files, issue 18).

A :class:`Policy` applies to the objects whose metadata it recognises. The stages ask the first
policy that applies, in order, and fall back to the generic rules when it returns ``None``:

* stage 2 asks ``name(keys)`` for a variable name;
* stage 3 asks ``grid(keys, shape)`` for inner dim names plus the coordinates that go with them
  (e.g. ``latitude``/``longitude`` computed from ``mars.area`` and the shape);
* stage 5 passes each variable's attributes through ``attrs(keys, attrs)`` and adds the
  coordinates ``extra_coords(keys, stacked_dims)`` returns (e.g. a scalar level coordinate).

Register one with ``POLICIES.append(Policy(applies=..., name=...))``; nothing is registered here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import xarray as xr

__all__ = ["POLICIES", "Policy", "policy_for"]

Keys = Mapping[str, Any]


@dataclass(frozen=True)
class Policy:
    applies: Callable[[Keys], bool]
    name: Callable[[Keys], str | None] | None = None
    grid: Callable[[Keys, tuple[int, ...]], tuple[list[str], dict[str, xr.Variable]] | None] | None = None
    attrs: Callable[[Keys, dict[str, Any]], dict[str, Any]] | None = None
    extra_coords: Callable[[Keys, list[str]], dict[str, xr.Variable]] | None = None


POLICIES: list[Policy] = []


def policy_for(keys: Keys) -> Policy | None:
    for p in POLICIES:
        if p.applies(keys):
            return p
    return None
