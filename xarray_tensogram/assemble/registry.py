"""How the backend runs a format's assembly: the function its record names, with the options it takes.

No table here: each format's record (``formats/<name>/``) names its assembly function, and the
keywords that function takes are the open options the format honours (with those its reader takes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..formats.registry import FormatSpec, load
from ..options import keywords_of
from ..raw_variables import RawGroup

__all__ = ["assemble", "options_taken"]


def options_taken(spec: FormatSpec) -> frozenset[str]:
    """The open options a format honours: the keywords of its assembly function and of its reader."""
    return keywords_of(load(spec.assembler)) | keywords_of(spec.open)


def assemble(spec: FormatSpec, f: Any, values: Mapping[str, Any]) -> dict[str, RawGroup]:
    """Raw (CF-encoded) groups of ``f`` by path; the assembly function gets the open options of ``values`` it takes."""
    function = load(spec.assembler)
    kwargs = {k: values[k] for k in keywords_of(function) if k in values}
    if kwargs.get("drop_variables", ()) is None:
        kwargs["drop_variables"] = frozenset()
    out = function(f, **kwargs)  # a RawGroup, or a dict of them by group path
    return out if isinstance(out, dict) else {"/": out}
