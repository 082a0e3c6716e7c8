"""One interface for the layouts of the producers that write ``.tgm`` files (DESIGN.md "Files from real producers").

Each producer lays its objects out in its own way, and its users expect what they know from its world
(names, levels, a grid coordinate, ...). A producer is recognised from an object's metadata (and its
message's ``_extra_``); the mapping stages then ask it questions, each answered "nothing special" here
(DESIGN.md's generic rules) unless the producer overrides it. Who asks what:

- stage 1 (:mod:`.collect`): :meth:`~Producer.recognises`, :attr:`~Producer.sections` (kept nested,
  read through :meth:`~Producer.keys_view`), :meth:`~Producer.level`;
- stage 2 (:mod:`.naming`): :meth:`~Producer.variable_name`, :meth:`~Producer.coordinate`;
- stage 3 (:mod:`.dims`, via ``__init__``): :meth:`~Producer.grid`;
- stage 4 (:mod:`.hypercube`): :meth:`~Producer.restates`, :meth:`~Producer.level_order`,
  :attr:`~Producer.dependent_coordinates`;
- stage 5 (:mod:`.build`): :meth:`~Producer.dim_attrs`, :meth:`~Producer.attributes`,
  :meth:`~Producer.scalar_coordinates`;
- stages 2-5 at once: :meth:`~Producer.assemble`, for a layout that says everything the stages would
  guess, when every object of the file is its own (:attr:`~Producer.assembles`);
- writing (``write/tensogram.py``), the layout put back: :meth:`~Producer.writes`,
  :meth:`~Producer.entry_attrs`, :meth:`~Producer.source_keys`, :meth:`~Producer.finish_entry`, and for
  a whole Dataset in one message :meth:`~Producer.writes_dataset`, :meth:`~Producer.objects`.

A new producer is one module or folder in :mod:`xarray_tensogram.producers` with a subclass of
:class:`Producer`, plus one line in its ``REGISTERED`` tuple (asked in order: the first wins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from ..layout_record import LayoutRecord
from ..raw_variables import RawGroup, RawVariable, array_variable

__all__ = ["LEVEL_PREFIX", "CoordinateRole", "GridCoords", "LevelInfo", "Producer", "WrittenObject", "derived"]

Keys = Mapping[str, Any]
#: the stacking source of a producer's levels: ``level:<LevelInfo.name>`` (one per kind of level)
LEVEL_PREFIX = "level:"


@dataclass(frozen=True)
class LevelInfo:
    """One object's vertical level, named after its kind (``isobaricInhPa``, 850.0)."""

    name: str
    value: float


@dataclass
class GridCoords:
    """Dims of the object's own axes and the coordinates computed for them (dims, values, attrs)."""

    dims: list[str]
    coords: dict[str, tuple[tuple[str, ...], np.ndarray, dict[str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinateRole:
    """An object that is a coordinate: its name, dims, and attributes its own metadata lacks (the file's win)."""

    name: str
    dims: tuple[str, ...]
    attrs: Mapping[str, str] = field(default_factory=dict)


def derived(dims: Sequence[str], values: Any, attrs: Mapping[str, Any]) -> RawVariable:
    """A coordinate computed from metadata (a grid, a level): the writer does not write it as an object."""
    var = array_variable(tuple(dims), values, dict(attrs))
    var.encoding = LayoutRecord(derived=True).to_encoding()
    return var


class Producer:
    """The generic answers; a producer's subclass overrides what its layout changes."""

    #: short label, used in messages
    label: ClassVar[str] = "generic"
    #: :meth:`recognises` is asked only for objects whose entry has one of these top-level keys, or
    #: whose message's ``_extra_`` has one of ``extra_keys`` (so most files pay one set test per object)
    entry_keys: ClassVar[frozenset[str]] = frozenset()
    extra_keys: ClassVar[frozenset[str]] = frozenset()
    #: top-level metadata sections kept nested per object (many keys that never make a dimension)
    sections: ClassVar[tuple[str, ...]] = ()
    #: whether keys that vary with the stacked dims become coordinates (``False``: they are dropped)
    dependent_coordinates: ClassVar[bool] = True
    #: the metadata key a level dimension (:meth:`level`) stands for when the writer writes it back
    level_source: ClassVar[str] = "mars.levelist"
    #: whether :meth:`grid`'s coordinates follow again from a written file's metadata (``mars.area``): not written
    writer_rederives_grid: ClassVar[bool] = True
    #: stacking sources that are no metadata key (levels of its own): the writer asks :meth:`source_keys`
    own_sources: ClassVar[frozenset[str]] = frozenset()
    #: whether :meth:`assemble` builds the Datasets of a file whose objects are all this producer's
    assembles: ClassVar[bool] = False

    def recognises(self, entry: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
        """Whether an object (its nested ``base[i]`` entry, its message's ``_extra_``) is this producer's. Asked
        once per object of the file: keep it to a few dictionary lookups."""
        return False

    def keys_view(self, flat: dict[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
        """Every dotted key of the object, :attr:`sections` included (``flat`` leaves them out)."""
        return flat

    def level(self, keys: Keys) -> LevelInfo | None:
        """The object's level as a dimension named after its kind (None: ``mars.levelist`` as any key)."""
        return None

    def variable_name(self, keys: Keys) -> str | None:
        """The variable name when no ``variable_key`` is given (None: the default chain)."""
        return None

    def coordinate(self, keys: Keys, shape: tuple[int, ...]) -> CoordinateRole | None:
        """The object's coordinate role, when its name does not say it (None: decided by name)."""
        return None

    def grid(self, keys: Keys, shape: tuple[int, ...]) -> GridCoords | None:
        """Dims of the object's own axes and computed coordinates (None: the generic dim rules)."""
        return None

    def restates(self, key: str) -> bool:
        """Whether a dotted key only restates others (the level in a name): never a dim or coordinate."""
        return False

    def level_order(self, name: str, values: Sequence[float]) -> list[float]:
        """The order of a level dimension's values (increasing unless the producer's users expect otherwise)."""
        return sorted(values)

    def dim_attrs(self, dim: str, source: str, keys: Keys) -> dict[str, str] | None:
        """Attributes of the coordinate of a stacked dim (``source``: the key or level it stacks)."""
        return None

    def attributes(
        self, keys: Keys, attrs: dict[str, Any], record: LayoutRecord, stacked: Sequence[str]
    ) -> dict[str, Any]:
        """A variable's attributes (and the producer's fields of its layout ``record``), from its first object;
        ``stacked``: the metadata keys (stacking sources, :data:`LEVEL_PREFIX` for levels) of its dims."""
        return attrs

    def scalar_coordinates(self, keys: Keys, level: LevelInfo | None, dims: Sequence[str]) -> dict[str, RawVariable]:
        """Scalar coordinates of a variable (none named like its stacked ``dims``): a Dataset keeps one where every
        variable that has it agrees on its value; where they differ, each variable's attributes hold it."""
        return {}

    def filter_value(self, keys: Keys, key: str) -> Any:
        """The value ``filter_by_keys`` compares for a key the object does not have under that name."""
        return None

    def assemble(self, objects: Sequence[Any], **options: Any) -> dict[str, RawGroup] | None:
        """The raw (CF-encoded) groups of a file whose objects (``collect.TgObject``) are all this producer's,
        ``{"/": group}`` or one per group; ``options``: ``file_name``, ``variable_key``, ``dim_names``,
        ``filter_by_keys``, ``drop_variables``. None: the generic stages build them."""
        return None

    # -- writing: a Dataset read through this producer, written back in its layout ------------------------------

    def writes(self, record: LayoutRecord, attrs: Mapping[str, Any]) -> bool:
        """Whether a variable (its layout ``record`` as read, its CF-encoded ``attrs``) is written in this layout."""
        return False

    def entry_attrs(self, attrs: Mapping[str, Any], record: LayoutRecord) -> dict[str, Any]:
        """A variable's attributes keyed by the metadata paths they are written at (inverse of :meth:`attributes`)."""
        return dict(attrs)

    def source_keys(self, source: str, value: Any, record: LayoutRecord) -> list[tuple[str, Any]]:
        """The (dotted key, value) pairs a value of a stacking ``source`` of :attr:`own_sources` stands for."""
        raise NotImplementedError(f"the {self.label} producer has no stacking source of its own")

    def finish_entry(self, entry: dict[str, Any], name: str) -> bool:
        """Complete an object's base entry (in place) once its keys are set, with the keys that follow from
        them; whether the variable's ``name`` must still be written (False: the entry's keys give it)."""
        return True

    def writes_dataset(self, ds: xr.Dataset) -> bool:
        """Whether ``ds`` was read whole through :meth:`assemble`, and is written back as one message of objects
        in this layout (:meth:`objects`) unless the caller asks for message dims."""
        return False

    def objects(self, ds: xr.Dataset, plain: Callable[[Any], Any]) -> list[WrittenObject]:
        """Every variable of ``ds`` as an object of this layout (``plain``: numpy values to what CBOR holds)."""
        raise NotImplementedError(f"the {self.label} producer writes no whole Dataset")


@dataclass
class WrittenObject:
    """One variable as a producer's object (:meth:`Producer.objects`): its base entry and encoded values."""

    name: str
    entry: dict[str, Any]
    values: np.ndarray
    encoding: Mapping[str, Any]  # the variable's encoding as read (its pipeline)
