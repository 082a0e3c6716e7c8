"""Stage 1: collect the data objects of the selected messages with their metadata.

An object's metadata is its ``base[i]`` entry merged over the free-form params of its descriptor (where the
reference encoder puts keys given next to a descriptor): ``base[i]`` wins. The message's global metadata
(``_extra_`` and other top-level keys, never ``_reserved_``) is kept beside it with the lowest priority, so
that messages differing only in a global key can still be stacked along it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np

from ...array_spec import ArraySpec
from ...conventions import LAYOUT_KEY
from ...errors import TensogramMappingWarning, XarrayTensogramError, closest, describe
from ...formats.tensogram.objects import Message, descriptor_params_columns, is_local, pipeline_encoding
from ...formats.tensogram.scan import SCANNED
from ...producers import producer_for
from ...producers.interface import CoordinateRole, Producer
from ...producers.keys import SCALARS, hashable

__all__ = [
    "ObjectSpec",
    "TgObject",
    "apply_filter",
    "collect_objects",
    "decoded_once",
    "flat_keys",
    "select_messages",
]

#: the one empty map every message without ``_extra_`` or global keys shares (read only): two maps fewer per
#: message alive while the open runs, each counted towards the garbage collector's next pass
_NONE: dict[str, Any] = {}
#: top-level metadata keys that are not global user metadata
_FRAME_KEYS = frozenset({"base", "_extra_", "_reserved_", "version"})
_NO_SKIP: frozenset[str] = frozenset()


@dataclass(slots=True)  # 40,000 of them for an archive of 10,000 messages: no per-instance dict
class TgObject:
    """One data object with everything the later stages need (no payload is read).

    An open holds one per object until the Dataset is built, walked by every pass of the garbage collector:
    their flat key maps hold only scalars (untracked maps), and the callables that build an object's lazy
    array or its encoding are made when asked for.
    """

    msg: int
    obj: int
    #: nested metadata (base[i] over descriptor params, without _reserved_); None when :attr:`keys` gives it back
    #: (:attr:`entry` rebuilds it then): one map fewer per object for the garbage collector to walk
    nested: dict[str, Any] | None
    keys: dict[str, Any]  # ``entry`` flattened to dotted keys, hashable values (the producer's sections left out)
    global_keys: dict[str, Any]  # the message's global metadata, flattened (stacking only)
    shape: tuple[int, ...]
    dtype: np.dtype
    message: Message
    spec_options: Mapping[str, Any]  # the open's options of every lazy array (one map, shared)
    extra: dict[str, Any]  # the message's raw _extra_ (file-level hints)
    frame_hash: int | None = None  # xxh3 of the data frame when it has one (compares coordinates cheaply)
    remote_frame: int | None = None  # the data frame's length, for remote sources only
    #: the producer whose layout the object follows (None: the generic rules), see ``producer.py``
    producer: Producer | None = None
    #: every key, the producer's ``sections`` included (``keys`` leaves them out: they never make a
    #: dimension and flattening them per object is costly); None when the producer keeps none
    view: Mapping[str, Any] | None = None
    level: Any = None  # its level as its producer names it (producer.LevelInfo), computed once
    role: CoordinateRole | None = None  # a coordinate's name, dims and attributes, when its producer says them
    name: str = ""
    name_key: str | None = None
    is_coord: bool = False
    selected: bool = True
    merged: dict[str, Any] = field(default_factory=dict, repr=False)  # global keys, then own keys over them

    def __post_init__(self) -> None:
        self.merged = {**self.global_keys, **self.keys} if self.global_keys else self.keys

    @property
    def entry(self) -> dict[str, Any]:
        """The object's nested metadata: base[i] over descriptor params, without ``_reserved_``."""
        return self.nested if self.nested is not None else _rebuilt(self.keys)

    def own_value(self, key: str) -> Any:
        """``entry.get(key)`` without rebuilding the nested map, lists of scalars as the tuples :attr:`keys` holds
        (shared by the objects that have the same): asked once per object of an archive, for ``dim_names``."""
        if self.nested is not None:
            return self.nested.get(key)
        if key in self.keys:  # a flattened top-level value, as _rebuilt would give it back (but for tuples)
            return self.keys[key]
        prefix = key + "."
        return self.entry.get(key) if any(k.startswith(prefix) for k in self.keys) else None

    @property
    def spec(self) -> Callable[[], ArraySpec]:
        """What builds the object's :class:`ArraySpec` when a read first needs it."""
        return ObjectSpec(self.message, self.obj, self.spec_options)

    @property
    def pipeline(self) -> Callable[[], dict[str, Any]] | None:
        """The object's pipeline as writer options; None for remote files (a request per object's descriptor)."""
        return partial(pipeline_encoding, self.message, self.obj) if self.remote_frame is None else None

    def value(self, key: str) -> Any:
        """A dotted key's value: the object's own metadata first, then the message's global metadata."""
        value = self.merged.get(key)
        return self.view.get(key) if value is None and self.view is not None else value

    def all_keys(self) -> Mapping[str, Any]:
        """Every dotted key of the object's own metadata (its producer's sections included)."""
        return self.view if self.view is not None else self.keys


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """Builds the :class:`ArraySpec` of object ``j`` of ``message`` when a read first needs it: one small
    object per member (``options`` shared by the open) where a ``partial`` of a bound method was three, all
    kept alive with the Dataset and walked by every pass of the garbage collector."""

    message: Message
    j: int
    options: Mapping[str, Any]

    def __call__(self) -> ArraySpec:
        return self.message.array_spec(self.j, **self.options)


class MessageMembers(dict[int, Any]):
    """``{flat index: member}`` of a stacked variable whose members are objects of messages.

    Object ``j`` of ``messages[k]`` is held as the int ``k << 32 | j`` and made into its :class:`ObjectSpec`
    when asked for: a Dataset of 100,000 messages would otherwise hold 400,000 small objects that every pass
    of the garbage collector walks (ints are not walked). ``message`` gives message ``k``: the open's own, or
    the metadata cache's table, which parses a message when first asked for (the cache reads its entries
    back into this class)."""

    def __init__(self, message: Callable[[int], Message], options: Mapping[str, Any], items: Any = ()) -> None:
        super().__init__(items)
        self.message = message
        self.options = options

    @staticmethod
    def of(members: Mapping[int, TgObject]) -> MessageMembers | None:
        """The members of a cube of objects opened with the same options (None otherwise)."""
        options = next(iter(members.values())).spec_options
        at: dict[int, int] = {}  # message index -> its position in ``messages``
        messages: list[Message] = []
        packed = {}
        for flat, o in members.items():
            if o.spec_options is not options:
                return None
            k = at.get(o.msg)
            if k is None:
                k = at[o.msg] = len(messages)
                messages.append(o.message)
            packed[flat] = k << 32 | o.obj
        return MessageMembers(tuple(messages).__getitem__, options, packed)

    def __reduce__(self) -> tuple[Any, ...]:
        return MessageMembers, (self.message, dict(self.options), list(dict.items(self)))

    def get(self, flat: int, default: Any = None) -> Any:  # values built on access
        value = dict.get(self, flat, default)
        if type(value) is int:
            return ObjectSpec(self.message(value >> 32), value & 0xFFFFFFFF, self.options)
        return value

    def __getitem__(self, flat: int) -> Any:
        value = self.get(flat, _ABSENT)
        if value is _ABSENT:
            raise KeyError(flat)
        return value

    def values(self) -> Any:  # the members as built (a list, not a view)
        return [self[flat] for flat in self]

    def items(self) -> Any:  # the members as built (a list, not a view)
        return [(flat, self[flat]) for flat in self]


_ABSENT = object()


def flat_keys(entry: Mapping[str, Any], prefix: str = "", skip: Collection[str] = ()) -> dict[str, Any]:
    """``{"mars": {"step": 6}}`` -> ``{"mars.step": 6}`` (hashable values; ``_reserved_`` and ``skip`` left out)."""
    out: dict[str, Any] = {}
    _flatten_into(entry, prefix, out, frozenset(skip))
    return out


def _flatten_into(entry: Mapping[str, Any], prefix: str, out: dict[str, Any], skip: frozenset[str] = _NO_SKIP) -> bool:
    """:func:`flat_keys` of ``entry`` into ``out``; whether :func:`_rebuilt` gives ``entry`` back from them (text
    keys without dots, nor ``_reserved_``; values scalars, lists of scalars or non-empty maps of the same;
    ``skip`` left out), found in the same walk (one walk per object's metadata). Every key of every object runs
    through here: written for speed."""
    names, plain, whole = _prefixed(prefix, tuple(entry), skip)
    if plain:  # text keys without dots: the usual map, its dotted names joined once per key set
        values = entry.values()
        if whole and SCALARS.issuperset(map(type, values)):
            out.update(zip(cast(tuple[str, ...], names), _shared_texts(values), strict=True))  # none skipped
            return True
        rebuildable = True
        for name, v in zip(names, values, strict=True):
            if name is None:  # a key of ``skip``
                continue
            if type(v) in SCALARS:
                out[name] = _shared_text(v)
            elif isinstance(v, dict) and v:
                rebuildable = _flatten_into(v, name + ".", out) and rebuildable and type(v) is dict
            else:
                out[name], kept = _frozen(v)
                rebuildable = rebuildable and kept
        return rebuildable
    for k, v in entry.items():  # keys that are not text, hold a dot or are ``_reserved_``: never rebuildable
        if k == "_reserved_" or k in skip:
            continue
        key = prefix + k if type(k) is str else f"{prefix}{k}"
        if type(v) in SCALARS:
            out[key] = v
        elif isinstance(v, dict) and v:
            _flatten_into(v, key + ".", out)
        else:
            out[key] = _frozen(v)[0]
    return False


def _frozen(v: Any) -> tuple[Any, bool]:
    """``hashable(v)``, and whether :func:`_rebuilt` gives ``v`` back from it: a list of scalars (dim names,
    shapes) becomes a tuple (a list again when rebuilt); a tuple of names is shared by the objects that have it."""
    types = set(map(type, v)) if type(v) is list else None
    if types is not None and SCALARS.issuperset(types):
        return (_shared_names(tuple(v)) if types == _TEXT else tuple(v)), True
    return hashable(v), False


_TEXT = {str}


@functools.lru_cache(maxsize=4096)
def _first_text(text: str) -> str:
    return text  # the first equal text seen


def _shared_text(value: Any) -> Any:
    """Text values as the first equal text seen: an archive repeats a few values (``od``, ``oper``, parameter
    names), and one text object each holds less memory and lets the plan compare its columns by identity (an
    open of 100,000 operational messages: 11.3 s of CPU without, 10.7 s with). Values that never repeat cycle
    out of the cache."""
    return _first_text(value) if type(value) is str else value


def _shared_texts(values: Iterable[Any]) -> list[Any]:
    """:func:`_shared_text` of each value, without a call per value."""
    return [_first_text(v) if type(v) is str else v for v in values]


@functools.lru_cache(maxsize=1024)
def _shared_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return names  # the first equal tuple seen (text only: (1,) and (True,) are equal keys, not equal values)


@functools.lru_cache(maxsize=4096)
def _prefixed(prefix: str, keys: tuple[Any, ...], skip: frozenset[str]) -> tuple[tuple[str | None, ...], bool, bool]:
    """The dotted keys of a map's keys under ``prefix`` (None for those in ``skip``; once per key set: a file
    repeats a few), whether the others are plain (text without dots, not ``_reserved_``; only then are the
    dotted keys used) and whether none is skipped."""
    plain = all(type(k) is str and "." not in k and k != "_reserved_" for k in keys if k not in skip)
    names = tuple(None if k in skip else prefix + k for k in keys) if plain else ()
    return names, plain, skip.isdisjoint(keys)


def _rebuilt(keys: Mapping[str, Any]) -> dict[str, Any]:
    """The nested map that :func:`flat_keys` flattened into ``keys``: tuples there were lists (:func:`_frozen`)."""
    out: dict[str, Any] = {}
    for key, value in keys.items():
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[last] = list(value) if type(value) is tuple else value
    return out


def deep_merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """``high`` over ``low``, merging nested maps key by key."""
    out = dict(low)
    for k, v in high.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def select_messages(count: int, message_index: Any, merge_objects: bool) -> list[int]:
    """Indices of the messages to open (``message_index`` as the reference backend takes it)."""

    def one(i: Any) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise XarrayTensogramError(f"message_index must be an int, a list of ints or a slice, got {i!r}")
        if not -count <= int(i) < count:
            raise XarrayTensogramError(f"message_index {int(i)} is out of range: the file has {count} messages")
        return int(i) % count

    if not merge_objects:
        if message_index is not None and not isinstance(message_index, (int, np.integer)):
            raise XarrayTensogramError(
                f"merge_objects=False opens one message; message_index must be an int, got {message_index!r}"
            )
        return [one(0 if message_index is None else message_index)] if count else []
    if message_index is None or isinstance(message_index, slice):
        return list(range(count)[message_index or slice(None)])
    if isinstance(message_index, Sequence) and not isinstance(message_index, str):
        return list(dict.fromkeys(one(i) for i in message_index))
    return [one(message_index)]


def _global_keys(meta: Mapping[str, Any]) -> dict[str, Any]:
    extra: Mapping[str, Any] = meta["_extra_"] if isinstance(meta.get("_extra_"), dict) else {}
    top = {k: v for k, v in meta.items() if k not in _FRAME_KEYS and isinstance(k, str)}
    if not top and not extra:
        return _NONE
    # the writer's layout hint says how to restore the Dataset (written_layout.py): no key of the objects
    merged = deep_merge(top, {k: v for k, v in extra.items() if k not in ("dim_names", LAYOUT_KEY)})
    return flat_keys(merged)


def _unreserved(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "_reserved_"} if "_reserved_" in entry else entry


#: what flattening an object's entry leaves out: ``_reserved_`` and its producer's sections
_SKIPS: dict[tuple[str, ...], frozenset[str]] = {}
_RESERVED = frozenset({"_reserved_"})
#: each object's own entry, or its flat keys where they give it back (see _message_entries)
Owns = tuple[dict[str, Any] | tuple[dict[str, Any]], ...]


def _message_entries(msg: Message, meta: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any], Owns]:
    """A message's raw ``_extra_``, its global keys (flattened) and each object's own ``base`` entry, with the
    objects' geometries worked out while the metadata (``meta``, else decoded again) is at hand.

    An entry no producer claims and that its flat keys give back is held as those keys, any other as a 1-tuple
    of itself: the decoded metadata (25 or so maps and lists per message, what the garbage collector walked
    most) is dropped afterwards."""
    meta = msg.decoded_metadata() if meta is None else meta
    base = meta.get("base") or []
    for j in range(len(msg)):
        msg.object_geometry(j, base)
    extra = meta.get("_extra_")
    extra = extra if isinstance(extra, dict) and extra else _NONE
    return extra, _global_keys(meta), tuple(_flat_own(own, extra) for own in base)


def _flat_own(own: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any] | tuple[dict[str, Any]]:
    """An entry's flat keys where no producer claims it and they give it back, else the entry (a 1-tuple)."""
    if producer_for(own, extra) is None:
        keys: dict[str, Any] = {}
        if _flatten_into(own, "", keys, _RESERVED):
            return keys
    return (own,)


def _is_empty(own: dict[str, Any] | tuple[dict[str, Any]]) -> bool:
    return not (_unreserved(own[0]) if isinstance(own, tuple) else own)


class _Scanned(dict[Message, int]):
    """What the scan handed over (:func:`decoded_once`): message -> where its ``_extra_``, global keys and own
    entries start in one list (a tuple per message, holding maps, would stay tracked by the garbage collector)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[Any] = []

    def record(self, msg: Message, meta: dict[str, Any]) -> None:
        try:
            extra, gkeys, owns = _message_entries(msg, meta)
        except XarrayTensogramError:  # (a descriptor that cannot be read): collected from a new decode
            return
        self[msg] = len(self.cells)
        self.cells += (extra, gkeys, *owns)

    __call__ = record  # what the scan calls (:data:`SCANNED`)

    def entries(self, msg: Message) -> tuple[dict[str, Any], dict[str, Any], Owns] | None:
        k = self.pop(msg, None)
        return None if k is None else (self.cells[k], self.cells[k + 1], tuple(self.cells[k + 2 : k + 2 + len(msg)]))


@contextmanager
def decoded_once() -> Iterator[None]:
    """Within it, the scan of a Tensogram file hands each message's decoded metadata to this stage, which keeps
    what it needs until :func:`collect_objects` asks: every message's CBOR is decoded once per open, not twice."""
    token = SCANNED.set(_Scanned())
    try:
        yield
    finally:
        SCANNED.reset(token)


def _entries(msg: Message) -> tuple[dict[str, Any], dict[str, Any], Owns]:
    """:func:`_message_entries` of a message, as its scan handed them over where it did."""
    scanned = SCANNED.get()
    return (scanned.entries(msg) if isinstance(scanned, _Scanned) else None) or _message_entries(msg)


def collect_objects(
    tfile: Any, messages: Sequence[int], *, verify_hash: bool, range_threshold: float
) -> list[TgObject]:
    """Every object of the selected messages, with metadata merged as the module docstring says.

    The loop runs once per object, so it skips work that is usually void (no merge when a descriptor has no
    params, no copy of absent global keys). Local files always read the descriptor params; remote files only
    where ``base[i]`` holds nothing, so that opening stays a few requests per message.
    """
    held = [tfile[m] for m in messages]
    local = bool(held) and is_local(held[0].source)
    spec_options = {"verify_hash": verify_hash, "range_threshold": range_threshold}
    # the objects whose descriptor params are read, in one batch: two rounds of reads (footers, then
    # descriptors), not two per message, answered in the order asked. Local files: every object, each
    # message's entries taken when its objects are built
    entries: Iterable[tuple[dict[str, Any], dict[str, Any], Owns]] = map(_entries, held)
    if local:
        wanted = [msg for msg in held for _j in range(len(msg))], [j for msg in held for j in range(len(msg))]
    else:
        entries = list(entries)
        wanted = (
            [msg for msg, e in zip(held, entries, strict=True) for own in e[2] if _is_empty(own)],
            [j for e in entries for j, own in enumerate(e[2]) if _is_empty(own)],
        )
    params_column, hashes_column = descriptor_params_columns(*wanted)
    del wanted
    objects: list[TgObject] = []
    found = 0
    for m, msg, (extra, gkeys, owns) in zip(messages, held, entries, strict=True):
        for j, own in enumerate(owns):
            # a damaged frame gives no params: its values report the damage when read
            params: dict[str, Any] | None = None
            frame_hash: int | None = None
            if local or _is_empty(own):
                params, frame_hash = params_column[found], hashes_column[found]
                found += 1
            objects.append(_collected(m, msg, j, own, params, frame_hash, extra, gkeys, spec_options, local=local))
    return objects


def _collected(
    m: int,
    msg: Message,
    j: int,
    own: dict[str, Any] | tuple[dict[str, Any]],
    params: dict[str, Any] | None,
    frame_hash: int | None,
    extra: dict[str, Any],
    gkeys: dict[str, Any],
    spec_options: Mapping[str, Any],
    *,
    local: bool,
) -> TgObject:
    """Object ``j`` of message ``m``: its own entry over its descriptor's params (None: none, or a damaged
    frame, whose values report the damage when read), flattened, with its producer's view and level."""
    shape, dtype = msg.object_geometry(j)  # worked out in _message_entries
    producer: Producer | None = None
    nested = view = None
    if not isinstance(own, tuple) and not params:  # flattened already: no producer, the keys give the entry back
        keys = own
    else:
        whole = own[0] if isinstance(own, tuple) else _rebuilt(own)
        entry = deep_merge(params, _unreserved(whole)) if params else whole  # ``_reserved_`` left out when flattened
        producer = producer_for(entry, extra)
        sections = producer.sections if producer is not None else ()
        skip = _SKIPS.get(sections) or _SKIPS.setdefault(sections, frozenset({*sections, "_reserved_"}))
        keys = {}
        rebuildable = _flatten_into(entry, "", keys, skip)
        # a producer's view reads its sections from the nested map: kept then (copied only then)
        nested = _unreserved(entry) if producer is not None or not rebuildable else None
        view = producer.keys_view(keys, nested) if producer is not None and sections and nested is not None else None
    level = producer.level(view if view is not None else keys) if producer is not None else None
    remote_frame = None if local else msg.ref(j).frame_length
    # positional: built once per object of an archive (a keyword call costs twice as much)
    return TgObject(
        m,
        j,
        nested,
        keys,
        gkeys,
        shape,
        dtype,
        msg,
        spec_options,
        extra,
        frame_hash or None,
        remote_frame,
        producer,
        view,
        level,
    )


def _matches(value: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
    return any(value == w or (value is not None and str(value) == str(w)) for w in options)


def _filter_value(o: TgObject, key: str) -> Any:
    """An object's producer may answer keys of its own world (cfgrib's ``typeOfLevel``, ``shortName``)."""
    value = o.value(key)
    return o.producer.filter_value(o.all_keys(), key) if value is None and o.producer is not None else value


def apply_filter(objects: Sequence[TgObject], filter_by_keys: Mapping[str, Any] | None, name: str) -> None:
    """Mark the data objects ``filter_by_keys`` keeps; none kept is an error listing each key's values in the file."""
    if not filter_by_keys:
        return
    data = [o for o in objects if not o.is_coord]
    for o in data:
        o.selected = all(_matches(_filter_value(o, k), v) for k, v in filter_by_keys.items())
    if data and not any(o.selected for o in data):
        parts, unknown = [], False
        existing = sorted({k for o in data for k in o.all_keys()})
        for k, v in filter_by_keys.items():
            values = sorted({str(got) for o in data if (got := _filter_value(o, k)) is not None})
            if values:
                parts.append(f"{k!r}={v!r}: the file has {', '.join(values[:20])}")
                continue
            unknown = True
            close = _closest_key(k, existing)
            parts.append(f"{k!r}={v!r}: no object has this key" + (f" (did you mean {close!r}?)" if close else ""))
        listing = f". The objects' keys: {', '.join(existing[:40])}{' ...' if len(existing) > 40 else ''}"
        raise XarrayTensogramError(
            f"{describe(name)}filter_by_keys matches no object ({'; '.join(parts)})" + (listing if unknown else "")
        )


def _closest_key(key: str, existing: Sequence[str]) -> str | None:
    """The existing dotted key nearest a misspelt one, whole or by its last part (``levelst`` -> ``mars.levelist``)."""
    whole = closest(key, existing, cutoff=0.75)
    if whole:
        return whole
    last = {k.rsplit(".", 1)[-1]: k for k in existing}
    part = closest(key.rsplit(".", 1)[-1], last, cutoff=0.75)
    return last[part] if part else None


def warn(text: str) -> None:
    warnings.warn(text, TensogramMappingWarning, stacklevel=4)
