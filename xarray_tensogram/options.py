"""The open options, declared once: name, default, type, documentation and which formats take them.

Everything that lists the keyword arguments of ``open_dataset`` derives from :data:`OPTIONS`: the backend's
signature (xarray's ``open_dataset_parameters``, ``help()``), the misspelt-keyword and wrong-format checks,
the keywords handed to each format's reader and assembler, the Zarr views' options and (checked by
``tests/test_single_declaration.py``) the README's kwargs table. A format takes a :attr:`Scope.FORMAT`
option when its reader or assembly function has a keyword of that name, so a Tensogram-only option is one
entry below plus that keyword. This module imports nothing of the package but the error classes.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import UnknownOptionError, unknown_names

__all__ = ["OPTIONS", "OpenOption", "Scope", "check_names", "numpydoc_entries", "resolve", "signature"]


class Scope(enum.Enum):
    """Who honours an option."""

    #: every format (the option means the same for each; a format that is always strict ignores ``strict``)
    EVERY_FORMAT = "every format"
    #: the formats whose reader or assembler takes a keyword of this name; an error for the others
    FORMAT = "format"
    #: the backend itself (which group, where the bytes are, what not to open)
    BACKEND = "backend"
    #: xarray's own CF decoding, applied through ``xarray.conventions.decode_cf_variables``
    XARRAY = "xarray"


@dataclass(frozen=True)
class OpenOption:
    """One keyword argument of ``open_dataset`` / ``open_datatree`` / ``open_groups``."""

    name: str
    default: Any
    #: the type as written in the signature (text, as ``from __future__ import annotations`` keeps it)
    annotation: str
    doc: str
    scope: Scope


#: the CF decoding switches, typed as xarray types them
_DECODE_FLAG = "bool | Mapping[str, bool] | None"

OPTIONS: tuple[OpenOption, ...] = (
    OpenOption(
        "drop_variables",
        None,
        "str | Iterable[str] | None",
        "variables not to open",
        Scope.EVERY_FORMAT,
    ),
    OpenOption(
        "variable_key",
        None,
        "str | None",
        "dotted metadata key naming Tensogram variables (default: the first of ``name``, ``mars.param``, "
        "``param``, ``mars.shortName``, ``shortName``, else ``object_<i>``)",
        Scope.FORMAT,
    ),
    OpenOption(
        "dim_names",
        None,
        "Sequence[str] | Mapping[str, Sequence[str]] | None",
        "names for the stored axes of every data variable (a list: each data variable must have that many "
        "axes; coordinates keep their names), or ``{variable: [names]}`` for some variables",
        Scope.EVERY_FORMAT,
    ),
    OpenOption(
        "filter_by_keys",
        None,
        "Mapping[str, Any] | None",
        "``{dotted key: value or [values]}``: keep only the matching Tensogram objects",
        Scope.FORMAT,
    ),
    OpenOption(
        "group",
        None,
        "str | None",
        "the group to open when a file holds objects that cannot share one Dataset",
        Scope.BACKEND,
    ),
    OpenOption(
        "verify_hash",
        False,
        "bool",
        "check each stored hash or checksum when values are read",
        Scope.FORMAT,
    ),
    OpenOption(
        "strict",
        False,
        "bool",
        "raise on a damaged Tensogram message instead of skipping it with a warning (the other formats always raise)",
        Scope.EVERY_FORMAT,
    ),
    OpenOption(
        "storage_options",
        None,
        "Mapping[str, Any] | None",
        "passed to fsspec for remote URLs",
        Scope.BACKEND,
    ),
    OpenOption(
        "retries",
        None,
        "int | Mapping[str, float] | None",
        "remote files: how often a byte range is asked for again after a transient fault (5xx, 429, a reset, "
        "a short body), or a mapping of ``retries`` (default 4), ``backoff`` (0.2 s, doubled each time), "
        "``max_delay`` (10 s) and ``timeout`` (60 s per range in all); 0 never retries",
        Scope.BACKEND,
    ),
    OpenOption(
        "message_index",
        None,
        "int | Sequence[int] | slice | None",
        "open only these Tensogram messages: an int (negative from the end), a list of ints or a slice",
        Scope.FORMAT,
    ),
    OpenOption(
        "merge_objects",
        True,
        "bool",
        "``False`` opens only the Tensogram message at ``message_index`` (default 0) instead of stacking them",
        Scope.FORMAT,
    ),
    OpenOption(
        "range_threshold",
        0.5,
        "float",
        "0 to 1: a read covering less than this fraction of a Tensogram object uses a partial read when "
        "its pipeline allows one (0: always decode whole objects)",
        Scope.FORMAT,
    ),
    OpenOption(
        "metadata_cache",
        None,
        "bool | str | os.PathLike[str] | None",
        "keep what opening a local file builds, for the next open of the same unchanged file with the same "
        "options: ``None`` for files of 1,000 messages and 1 MiB or more, in the user's cache directory "
        "(``$XARRAY_TENSOGRAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/xarray-tensogram``); ``True`` for any file; "
        "a directory path; ``False`` never",
        Scope.BACKEND,
    ),
    OpenOption("mask_and_scale", None, _DECODE_FLAG, "as in every xarray backend", Scope.XARRAY),
    OpenOption("decode_times", None, _DECODE_FLAG, "as in every xarray backend", Scope.XARRAY),
    OpenOption(
        "decode_timedelta",
        None,
        _DECODE_FLAG,
        "as in every xarray backend; defaults to ``decode_times`` (forecast steps are time deltas)",
        Scope.XARRAY,
    ),
    OpenOption("use_cftime", None, _DECODE_FLAG, "as in every xarray backend", Scope.XARRAY),
    OpenOption(
        "decode_coords", None, 'bool | Literal["coordinates", "all"] | None', "as in every xarray backend", Scope.XARRAY
    ),
    OpenOption("concat_characters", None, _DECODE_FLAG, "as in every xarray backend", Scope.XARRAY),
)

_BY_NAME = {o.name: o for o in OPTIONS}
#: the scopes of the options taken where no CF decoding follows (the raw groups, the Zarr store: xarray decodes)
NOT_XARRAY = (Scope.EVERY_FORMAT, Scope.FORMAT, Scope.BACKEND)


def names(*scopes: Scope) -> tuple[str, ...]:
    """Option names in declaration order, only those of ``scopes`` when given."""
    return tuple(o.name for o in OPTIONS if not scopes or o.scope in scopes)


def check_names(given: Iterable[str], where: str, allowed: Iterable[str] | None = None) -> None:
    """A keyword that is not an option is an :class:`UnknownOptionError` suggesting the closest one; ``where``
    names what was being opened, ``allowed`` narrows the valid names (no CF switches for the Zarr views)."""
    valid = list(allowed) if allowed is not None else list(_BY_NAME)
    unknown = unknown_names(given, valid, "option")
    if unknown:
        raise UnknownOptionError(f"{where}: {unknown}; the options are: {', '.join(valid)}")


def resolve(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option with its value: the given ones, the declared default for the others."""
    return {o.name: given.get(o.name, o.default) for o in OPTIONS}


@functools.cache
def keywords_of(function: Callable[..., Any]) -> frozenset[str]:
    """The option names ``function`` takes as keyword arguments (how a format says which options it honours;
    read once per function)."""
    params = inspect.signature(function).parameters
    return frozenset(n for n, p in params.items() if n in _BY_NAME and p.kind is not inspect.Parameter.POSITIONAL_ONLY)


def signature(
    *scopes: Scope,
    first: str = "filename_or_obj: Any",
    returns: str = "xr.Dataset",
    extra: Iterable[inspect.Parameter] = (),
) -> inspect.Signature:
    """``(self, filename_or_obj, *, <every option of scopes>=<its default>, *extra)``: the backend's methods and
    the Zarr store present this signature, so xarray (which reads it to know the backend's parameters),
    ``help()`` and IDEs see every option once declared here. ``first`` is ``"name: annotation"``."""
    P = inspect.Parameter
    name, _, annotation = first.partition(": ")
    params = [P("self", P.POSITIONAL_OR_KEYWORD), P(name, P.POSITIONAL_OR_KEYWORD, annotation=annotation)]
    params += [
        P(o.name, P.KEYWORD_ONLY, default=o.default, annotation=o.annotation)
        for o in OPTIONS
        if not scopes or o.scope in scopes
    ]
    return inspect.Signature([*params, *extra], return_annotation=returns)


def numpydoc_entries(indent: str = "") -> str:
    """The declared options as numpydoc ``Parameters`` entries, for a docstring (and the API page) built
    from the declaration rather than a ``**options`` line."""
    return "\n".join(f"{indent}{o.name} : {o.annotation}, default {o.default!r}\n{indent}    {o.doc}" for o in OPTIONS)
