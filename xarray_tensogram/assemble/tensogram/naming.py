"""Stage 2: name the variables and tell coordinates from data.

Coordinates are recognised by their name whatever ``variable_key`` says: an object named (by the default
chain) like a coordinate, case-insensitively, or used by other objects as a dimension name or in a
``coordinates`` attribute. ``variable_key`` then names the data objects that have it, the others keep the
default chain; a ``variable_key`` no object has is a warning listing the keys that do exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...conventions import COORDINATE_ROLE_KEY, TGM_COORDINATE_NAMES
from .collect import TgObject, warn

__all__ = ["NAME_KEYS", "name_objects"]

NAME_KEYS = ("name", "mars.param", "param", "mars.shortName", "shortName")


def _first_name(o: TgObject, keys: Sequence[str]) -> tuple[str | None, str | None]:
    for key in keys:
        value = o.keys.get(key)
        if value is None and o.view is not None:
            value = o.view.get(key)  # a key of the producer's nested sections
        if value is None and key not in NAME_KEYS:
            value = o.global_keys.get(key)  # the default chain looks at the object's own metadata only
        if value is not None and not isinstance(value, tuple):
            return str(value), key
    return None, None


def _referenced(objects: Sequence[TgObject]) -> set[str]:
    """Names that objects use as a dimension or list in a ``coordinates`` attribute."""
    names: set[str] = set()
    seen: set[tuple[str, ...]] = set()  # the objects of an archive share a few tuples of dim names
    for o in objects:
        # without the nested map, a tuple in the flat keys was a list of scalars (collect._frozen)
        dims = o.nested.get("dim_names") if o.nested is not None else o.keys.get("dim_names")
        if type(dims) is tuple:
            if dims in seen:
                dims = None
            else:
                seen.add(dims)
        if isinstance(dims, (list, tuple)):
            names.update(d for d in dims if isinstance(d, str))
        for key in ("coordinates", "cf.coordinates"):
            value = o.keys.get(key)
            if isinstance(value, str):
                names.update(value.split())
    return names


def _is_coordinate(o: TgObject, name: str | None, referenced: set[str]) -> bool:
    if name is None:
        return False
    role = o.keys.get(COORDINATE_ROLE_KEY)
    if role in ("coordinate", "data"):  # written by to_tensogram where the rules below would guess wrong
        return bool(role == "coordinate")
    if len(o.shape) == 0:
        return name in referenced  # a scalar coordinate a data object lists in ``coordinates``
    return len(o.shape) in (1, 2) and (name.lower() in TGM_COORDINATE_NAMES or name in referenced)


def name_objects(objects: Sequence[TgObject], variable_key: str | None) -> None:
    """Set ``name``, ``name_key`` and ``is_coord`` on every object."""
    referenced = _referenced(objects)
    found_key = False
    for o in objects:
        role = o.producer.coordinate(o.all_keys(), o.shape) if o.producer is not None else None
        if role is not None:  # a coordinate whatever its name says (a grid object named grid_latitude)
            o.name, o.name_key, o.is_coord, o.role = role.name, None, True, role
            continue
        default, default_key = _first_name(o, NAME_KEYS)
        o.is_coord = _is_coordinate(o, default, referenced)
        name, key = None, None
        if variable_key and not o.is_coord:
            name, key = _first_name(o, (variable_key,))
            found_key = found_key or name is not None
        if name is None and o.producer is not None and not variable_key and not o.is_coord:
            name, key = o.producer.variable_name(o.all_keys()), None  # the name the producer's users know
        if name is None:
            name, key = default, default_key
        o.name, o.name_key = (name, key) if name is not None else (f"object_{o.obj}", None)
    if variable_key and not found_key and any(not o.is_coord for o in objects):
        existing = sorted({k for o in objects if not o.is_coord for k in o.all_keys()})
        warn(
            f"variable_key={variable_key!r}: no object has this key; the default names are used. "
            f"Keys in the file: {', '.join(existing[:40])}"
        )
