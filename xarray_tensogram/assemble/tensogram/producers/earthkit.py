"""earthkit-data's tensogram encoder (``tensogram-earthkit``): one message, one object per field with ``mars`` keys.

The message's ``_extra_`` says ``encoder: tensogram-earthkit``. Objects carry only the field's
MARS request (no name, no grid objects); a level coordinate gets the pressure attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..producer import Keys, Producer

__all__ = ["EarthkitEncoder"]

_PRESSURE_ATTRS = {"long_name": "pressure", "units": "hPa", "positive": "down", "standard_name": "air_pressure"}


class EarthkitEncoder(Producer):
    """Objects of a message whose ``_extra_.encoder`` is ``tensogram-earthkit``."""

    label: ClassVar[str] = "earthkit"

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return extra.get("encoder") == "tensogram-earthkit"

    def dim_attrs(self, dim: str, source: str, keys: Keys) -> dict[str, str] | None:
        return dict(_PRESSURE_ATTRS) if source == "mars.levelist" and keys.get("mars.levtype") == "pl" else None
