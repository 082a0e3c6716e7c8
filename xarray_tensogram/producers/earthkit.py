"""earthkit-data's tensogram encoder (``tensogram-earthkit``): one message, one object per field with ``mars`` keys.

Objects carry only the field's MARS request (no name, no grid objects): the generic rules and the parameter
table give what earthkit-data users expect, so this layout changes no answer yet; it is recognised so that
rules of its own have one place to go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .interface import Producer

__all__ = ["EarthkitEncoder"]


class EarthkitEncoder(Producer):
    """Objects of a message whose ``_extra_.encoder`` is ``tensogram-earthkit``."""

    label: ClassVar[str] = "earthkit"
    extra_keys: ClassVar[frozenset[str]] = frozenset({"encoder"})

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        return extra.get("encoder") == "tensogram-earthkit"
