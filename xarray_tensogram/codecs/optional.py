"""Lazy import of optional codec packages with an install hint."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from ..errors import MissingCodecError, install_hint

#: module name -> (pip package, extra that provides it), where the package is not named as its top module
#: or comes with another extra than ``codecs``
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "google_crc32c": ("google-crc32c", "codecs"),
    "ml_dtypes": ("ml-dtypes", "ml"),
}


@cache
def _import(module: str) -> ModuleType:
    return importlib.import_module(module)


def require(module: str, what: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingCodecError` naming the extra that provides it."""
    try:
        return _import(module)
    except ImportError as exc:
        package, extra = OPTIONAL_MODULES.get(module, (module.split(".")[0], "codecs"))
        raise MissingCodecError(
            f"{what} needs the optional package {package!r}, which is not installed; {install_hint(extra)}"
        ) from exc


def available(module: str) -> bool:
    """True when ``module`` can be imported (used to pick faster optional paths)."""
    try:
        _import(module)
        return True
    except ImportError:
        return False
