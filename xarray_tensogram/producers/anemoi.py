"""anemoi-inference's output plugin (``tensogram-anemoi``): objects open as earthkit-data users know them.

Its layout (``TensogramOutput.write_step``, 0.24.0): one message per forecast step; in each, two
1-D grid objects named ``grid_latitude``/``grid_longitude`` (``anemoi.variable`` = ``latitude`` /
``longitude``), then one object per field named by its anemoi variable (``2t``, ``t_500``) with
``mars`` keys and ``dim_names ["values"]``; with ``stack_pressure_levels=True`` one object of shape
``(values, level)`` per pressure parameter with ``mars.levelist`` a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..layout_record import LayoutRecord
from ..mars import PRESSURE_LEVEL_ATTRS
from .interface import CoordinateRole, GridCoords, Keys, Producer

__all__ = ["AnemoiOutput"]

#: the grid objects' ``anemoi.variable`` values and the coordinate each one is (CF attributes as cfgrib's)
_GRID_DIM = "values"
_GRID = {
    name: CoordinateRole(name, (_GRID_DIM,), {"units": units, "standard_name": name, "long_name": name})
    for name, units in (("latitude", "degrees_north"), ("longitude", "degrees_east"))
}
#: keys that hold the anemoi variable name (``t_500``): the parameter and the level say it
_NAME_KEYS = ("name", "anemoi.variable")
_LEVEL_DIM = "level"


class AnemoiOutput(Producer):
    """Objects carrying an ``anemoi`` section."""

    label: ClassVar[str] = "anemoi"
    #: the level coordinate of the stacked layout comes from ``mars.levelist``, which a rewritten file
    #: keeps only as an attribute: the writer writes the coordinate itself
    writer_rederives_grid: ClassVar[bool] = False
    entry_keys: ClassVar[frozenset[str]] = frozenset({"anemoi"})

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return type(entry.get("anemoi")) is dict

    def coordinate(self, keys: Keys, shape: tuple[int, ...]) -> CoordinateRole | None:
        variable = keys.get("anemoi.variable")
        role = _GRID.get(variable) if isinstance(variable, str) else None
        return role if role is not None and len(shape) == 1 else None

    def variable_name(self, keys: Keys) -> str | None:
        param = keys.get("mars.param")
        return str(param) if isinstance(param, (str, int)) and not isinstance(param, bool) else None

    def restates(self, key: str) -> bool:
        # the per-level name (t_500) restates the parameter and the level
        return key in _NAME_KEYS

    def attributes(
        self, keys: Keys, attrs: dict[str, Any], record: LayoutRecord, stacked: Sequence[str]
    ) -> dict[str, Any]:
        """``name`` and ``anemoi.variable`` equal to the parameter (surface fields) repeat the variable's name."""
        param = self.variable_name(keys)
        return {k: v for k, v in attrs.items() if not (k in _NAME_KEYS and v == param)}

    def grid(self, keys: Keys, shape: tuple[int, ...]) -> GridCoords | None:
        levels = keys.get("mars.levelist")
        if len(shape) == 2 and isinstance(levels, tuple) and len(levels) == shape[1]:
            values = np.asarray(levels)
            attrs = dict(PRESSURE_LEVEL_ATTRS) if keys.get("mars.levtype") == "pl" else {}
            return GridCoords([_GRID_DIM, _LEVEL_DIM], {_LEVEL_DIM: ((_LEVEL_DIM,), values, attrs)})
        return None
