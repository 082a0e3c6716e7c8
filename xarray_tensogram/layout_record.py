"""What a reader learned about a ``.tgm`` file's layout, for the writer: one typed record per variable.

Assembly fills a :class:`LayoutRecord` per variable and ``to_tensogram`` reads it back with
:meth:`LayoutRecord.of`, so a Dataset read from a file is written back as the file was. It rides in
``encoding`` (the one thing xarray keeps through selections, concatenation and copies) as one plain entry
per field, ``encoding["tensogram_<field>"]``: it pickles, netCDF writers drop it, and users can read and set
entries by hand (``tensogram_message_keys``). The names are made only here (:meth:`LayoutRecord.to_encoding`);
an entry of the wrong type is an :class:`~xarray_tensogram.errors.EncodeError` naming the variable and entry.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .errors import EncodeError

__all__ = ["LAYOUT_PREFIX", "MISSING_OBJECTS_ATTR", "WIRE_VERSION_ATTR", "LayoutRecord"]

#: prefix of the ``encoding`` entries the reader leaves for the writer (netCDF writers do not take them)
LAYOUT_PREFIX = "tensogram_"
#: Dataset attribute: the wire version of the file read
WIRE_VERSION_ATTR = LAYOUT_PREFIX + "wire_version"
#: variable attribute: how many cells of the variable's hypercube no message holds (read as NaN or fill)
MISSING_OBJECTS_ATTR = LAYOUT_PREFIX + "missing_objects"


@dataclass
class LayoutRecord:
    """One variable's layout as read; ``None``: the reader said nothing (the writer's defaults apply).

    A mutable record: assembly fills it stage by stage (the producer adds its own fields), then stores it
    once with :meth:`to_encoding`.
    """

    #: dims stacked from messages -> the metadata key each one stands for (``step`` -> ``mars.step``)
    message_keys: dict[str, str] | None = None
    #: scalar coordinates the reader made of a constant key (``time`` -> ``mars.date+mars.time``)
    scalar_keys: dict[str, str] | None = None
    #: coordinates along stacked dims made of a key that varies with them -> that key
    dependent_keys: dict[str, str] | None = None
    #: the metadata key that named the variable (``mars.param``; default ``name``)
    name_key: str | None = None
    #: the attributes the reader lifted from ``cf.*`` (written back under ``cf``)
    cf_attrs: list[str] | None = None
    #: attributes the reader added from the parameter table (not the file's: the writer leaves them out)
    table_attrs: dict[str, Any] | None = None
    #: GRIB converter: attribute -> the metadata path it came from
    attr_paths: dict[str, str] | None = None
    #: GRIB converter: the level dim also stands for ``mars.levelist``
    grib_levelist: bool | None = None
    #: a coordinate computed from metadata (a grid, a level): not written as an object
    derived: bool | None = None
    #: netCDF converter: the file's dimension registry and whether it wrote ``cf`` maps
    netcdf: dict[str, Any] | None = None

    def to_encoding(self) -> dict[str, Any]:
        """The ``encoding`` entries of the fields set (see the module's docstring for why several entries)."""
        return {LAYOUT_PREFIX + f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def of(cls, encoding: Mapping[Any, Any], name: Any = None) -> LayoutRecord:
        """The record a variable's ``encoding`` carries (empty for a variable no reader made); an
        :class:`EncodeError` naming the variable and the entry when one holds the wrong type."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = encoding.get(LAYOUT_PREFIX + f.name)
            if value is None:
                continue
            kind = _KINDS[f.name]
            if not isinstance(value, kind) or (isinstance(value, dict) and not all(isinstance(k, str) for k in value)):
                raise EncodeError(
                    f"variable {name!r}: encoding[{LAYOUT_PREFIX + f.name!r}] must be a {_KIND_WORDS[kind]}, got "
                    f"{value!r}; remove it (the writer then takes message_dims= and its defaults)"
                )
            values[f.name] = value
        return cls(**values)


#: the type each field holds in ``encoding`` (checked by :meth:`LayoutRecord.of`), from the declaration above:
#: ``dict`` for ``dict[str, str] | None``
_KINDS: dict[str, type] = {
    name: typing.get_origin(arg) or arg
    for name, hint in typing.get_type_hints(LayoutRecord).items()
    for arg in typing.get_args(hint)
    if arg is not type(None)
}
_KIND_WORDS = {dict: "dict with string keys", str: "string", list: "list", bool: "bool"}
