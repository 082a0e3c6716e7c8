"""Writer keywords checked as open options are: a misspelt one is an error suggesting the closest.

Python's own ``TypeError`` ("got an unexpected keyword argument 'mesage_dims'") names the typo but
not the keyword meant; :class:`UnknownOptionError` is that ``TypeError`` too, with the suggestion.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ..errors import UnknownOptionError, unknown_names

__all__ = ["checked_keywords"]

P = ParamSpec("P")
R = TypeVar("R")


def checked_keywords(func: Callable[P, R]) -> Callable[P, R]:
    """``func``, refusing a keyword it does not take before it runs, with the closest one it does take."""
    parameters = inspect.signature(func).parameters.values()
    keywords = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    shown = [p.name for p in parameters if p.kind == p.KEYWORD_ONLY] or keywords  # the options, not ds/path

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = unknown_names(kwargs, keywords, "keyword")
        if unknown:
            raise UnknownOptionError(f"{func.__name__}(): {unknown}; its keywords are: {', '.join(shown)}")
        return func(*args, **kwargs)

    return wrapper
