"""A catalog of an opened file's metadata, kept between opens (as cfgrib's index files and earthkit-data's cache).

Opening a Tensogram archive of 100,000 messages parses every message's metadata and plans the hypercubes
in Python: seconds, on every open. What it builds (the raw groups with their lazy arrays) depends only on
the file's bytes, the open options and this package's code, so it is stored once and read back next time.

Never stale: an entry is found by a digest of the file's real path, size, ``st_mtime_ns``, inode, first and
last 64 KiB, the open options and a fingerprint of this package's sources; the lazy arrays still check size
and mtime before every read (:class:`~xarray_tensogram.io.LocalFileSource`). Entries are written to a
temporary file then renamed (concurrent writers never leave a partial one); an unreadable entry is ignored
with a :class:`MetadataCacheWarning`. Only opens that emitted no warning are stored, so a hit never hides
one. Reading unpickles, so only entries owned by the user and writable by nobody else are read; a directory
keeps the :data:`MAX_ENTRIES` most recently used. Where: see the ``metadata_cache`` open option
(:func:`default_cache_dir`, :data:`MIN_ITEMS`, :data:`MIN_BYTES`).

Compact entries: a stacked variable's members are integer arrays (message, object), not 400,000 pickled
callables, and a message is its number, parsed from its offset when a read touches it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import operator
import os
import pickle
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from ._version import __version__
from .array_spec import StackedReader
from .assemble.tensogram.collect import MessageMembers, decoded_once
from .errors import MetadataCacheWarning, UnsupportedOptionError
from .formats.base import FormatFile
from .formats.tensogram.objects import Message
from .formats.tensogram.scan import MessageScanner
from .io import ByteSource, LocalFileSource

__all__ = ["MIN_ITEMS", "CachedMessages", "default_cache_dir", "open_cached"]

#: files with fewer messages (or datasets, tensors), or fewer bytes, open fast enough: by default they
#: are neither looked up (no path of the cache directory is touched) nor stored
MIN_ITEMS = 1000
MIN_BYTES = 1 << 20
ENV_DIR = "XARRAY_TENSOGRAM_CACHE_DIR"
#: first bytes of every entry; the number changes when the entry layout does
MAGIC = b"XTGMCACHE3\n"
EDGE = 1 << 16  # bytes hashed at each end of the file

Groups = dict[str, Any]  # group path -> raw group (raw_variables.RawGroup of RawVariables)
Opened = tuple[Groups, FormatFile[Any], str]  # the groups, the open file, the format's name

#: entries kept per cache directory; beyond them the least recently used are deleted when one is stored
MAX_ENTRIES = 64

_record_lock = threading.RLock()  # re-entrant: an open inside an open (same thread) must not deadlock


def default_cache_dir() -> Path:
    """``$XARRAY_TENSOGRAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/xarray-tensogram``, else ``~/.cache/...``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get(ENV_DIR) or Path(base) / "xarray-tensogram")


def _where(option: Any) -> tuple[Path | None, bool]:
    """(directory or None, whether every file is stored) for a ``metadata_cache`` option value."""
    if option is None or option is True:
        return default_cache_dir(), option is True
    if option is False:
        return None, False
    if isinstance(option, (str, os.PathLike)):
        return Path(option), True
    raise UnsupportedOptionError(
        f"metadata_cache must be None, True, False or a directory path, got {type(option).__name__} {option!r}"
    )


@functools.cache
def _code_fingerprint() -> str:
    """Size and mtime of every source file of this package: an entry written by other code is never used."""
    h = xxhash.xxh3_64(f"{__version__} {sys.version_info[:2]}".encode())
    root = Path(__file__).parent
    for p in sorted(root.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.relative_to(root)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _entry_key(path: str, options: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]] | None:
    """The entry's file name and the identity it must hold, or None when the file cannot be read."""
    try:
        real = os.path.realpath(path)
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            head = os.pread(fd, EDGE, 0)
            tail = os.pread(fd, EDGE, max(0, st.st_size - EDGE))
        finally:
            os.close(fd)
    except OSError:
        return None
    identity = (real, st.st_size, st.st_mtime_ns, st.st_ino, _code_fingerprint(), repr(sorted(options.items())))
    h = xxhash.xxh3_128(repr(identity).encode())
    h.update(head)
    h.update(tail)
    return h.hexdigest(), identity


def open_cached(
    filename_or_obj: Any, option: Any, options: Mapping[str, Any], open_now: Callable[[], Opened]
) -> Opened:
    """``open_now()``, or what it returned for this file and these options before (see the module docstring)."""
    folder, always = _where(option)
    local = isinstance(filename_or_obj, (str, os.PathLike)) and os.path.isfile(filename_or_obj)
    if local and not always and os.path.getsize(filename_or_obj) < MIN_BYTES:
        folder = None  # by default small files never touch the cache directory
    key = _entry_key(os.fspath(filename_or_obj), options) if folder is not None and local else None
    if folder is None or key is None:
        if always and not local:
            warnings.warn(
                f"metadata_cache applies to local files only; {filename_or_obj!r} was opened without it",
                MetadataCacheWarning,
                stacklevel=5,
            )
        with decoded_once():  # a Tensogram file's scan hands its decoded metadata to the assembly
            return open_now()
    entry = folder / f"{key[0]}.pkl"
    found = _load(entry, key[1])
    if found is not None:
        return found
    with _recorded() as seen, decoded_once():
        groups, f, name = open_now()
    if not seen and (always or len(f) >= MIN_ITEMS) and isinstance(f.source, LocalFileSource) and _same(key[1]):
        _store(entry, key[1], (groups, f, name))
    return groups, f, name


def _same(identity: tuple[Any, ...]) -> bool:
    """Whether the file still has the size and mtime it had before the open (else it changed meanwhile)."""
    try:
        st = os.stat(identity[0])
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns, st.st_ino) == identity[1:4]


@contextmanager
def _recorded() -> Iterator[list[warnings.WarningMessage]]:
    """Record the warnings of an open, then emit them again as they were: an open that warned is not stored."""
    with _record_lock, warnings.catch_warnings(record=True) as seen:
        yield seen
    for w in seen:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _load(entry: Path, identity: tuple[Any, ...]) -> Opened | None:
    try:
        with open(entry, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError:
        return None  # no entry yet (or an unreadable one: the open goes on as without a cache)
    try:
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            # unpickling runs code: only entries that no other user could have written are read
            raise PermissionError("the entry is not owned by you alone (another user could have written it)")
        if not data.startswith(MAGIC):
            raise ValueError("not a metadata cache entry of this version")
        stored, groups, f, name = pickle.loads(memoryview(data)[len(MAGIC) :])
        if stored != identity:
            raise ValueError("the entry belongs to another file")
    except Exception as exc:  # a broken entry of any kind must only cost a slower open
        warnings.warn(
            f"ignored the metadata cache entry {str(entry)!r} ({type(exc).__name__}: {exc}); the file is "
            "opened without it and the entry rewritten",
            MetadataCacheWarning,
            stacklevel=5,
        )
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used: kept longest when the directory is pruned
    return groups, f, name


def _prune(folder: Path) -> None:
    """Delete the least recently used entries beyond :data:`MAX_ENTRIES` (entries of files that changed
    or were deleted are never used again; this keeps the directory from growing without bound)."""
    with contextlib.suppress(OSError):
        entries = []
        for p in folder.glob("*.pkl"):
            with contextlib.suppress(OSError):
                entries.append((p.stat().st_mtime_ns, p))
        for _, p in sorted(entries)[: max(0, len(entries) - MAX_ENTRIES)]:
            with contextlib.suppress(OSError):
                p.unlink()


def _store(entry: Path, identity: tuple[Any, ...], opened: Opened) -> None:
    groups, f, name = opened
    buf = io.BytesIO()
    buf.write(MAGIC)
    table = CachedMessages.of(f)
    try:
        _Pickler(buf, table).dump((identity, groups, table if table is not None else f, name))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:  # something of this file does not pickle
        warnings.warn(f"{f.name!r} cannot be kept in the metadata cache ({exc})", MetadataCacheWarning, stacklevel=5)
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=entry.name, suffix=".tmp", dir=entry.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(buf.getbuffer())
            os.replace(tmp, entry)  # atomic: a reader sees the old entry, the new one, or none
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(entry.parent)
    except OSError as exc:
        warnings.warn(
            f"could not write the metadata cache entry {str(entry)!r} ({exc}); opens of this file stay uncached "
            f"(choose another directory with metadata_cache=... or ${ENV_DIR}, or turn it off with False)",
            MetadataCacheWarning,
            stacklevel=5,
        )


# -- compact entries for Tensogram files ------------------------------------------------------------
class CachedMessages(FormatFile[Message]):
    """A Tensogram file known from the cache: message offsets only; a message is parsed when first asked for."""

    item_kind = "message"

    def __init__(self, source: ByteSource, offsets: np.ndarray) -> None:
        self.source = source
        self.name = source.name
        self.offsets = offsets
        self._messages: dict[int, Message] = {}

    @staticmethod
    def of(f: FormatFile[Any]) -> CachedMessages | None:
        messages = getattr(f, "messages", None)
        if not isinstance(messages, list) or set(map(type, messages)) - {Message}:
            return None
        return CachedMessages(f.source, np.fromiter(map(_offset_of, messages), np.int64, len(messages)))

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "offsets": self.offsets, "_messages": {}}

    def message(self, index: int) -> Message:
        found = self._messages.get(index)
        if found is None:  # a race parses it twice, harmlessly
            found = MessageScanner(self.source).parse_at(int(self.offsets[index]), index)
            self._messages[index] = found
        return found

    def _items(self) -> list[Message]:
        return [self.message(i) for i in range(len(self.offsets))]


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, table: CachedMessages | None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.table = table
        #: the last stack's messages and their numbers: the variables of an archive mostly share one list
        self.numbered: tuple[list[Any], np.ndarray | None] = ([], None)

    def reducer_override(self, obj: Any) -> Any:
        table = self.table
        if table is None:
            return NotImplemented
        if type(obj) is Message and obj.source is table.source:
            return CachedMessages.message, (table, obj.index)
        if type(obj) is StackedReader and type(obj.members) is MessageMembers:
            return self._packed_stack(table, obj.stack_shape, obj.members) or NotImplemented
        return NotImplemented

    def _numbers(self, members: MessageMembers, count: int) -> np.ndarray | None:
        """The file numbers of a stack's first ``count`` messages (None: one is not a scanned message)."""
        messages = list(map(members.message, range(count)))
        if messages != self.numbered[0]:  # equal lists of the same objects compare by identity: fast
            ok = set(map(type, messages)) == {Message}
            self.numbered = messages, np.fromiter(map(_index_of, messages), np.int64, count) if ok else None
        return self.numbered[1]

    def _packed_stack(self, table: CachedMessages, stack_shape: tuple[int, ...], members: MessageMembers) -> Any:
        """A stack of members an open packed as ints (every member an object of a message) as integer arrays,
        the message number and object of each member, and the members' positions unless they are 0, 1, 2...:
        read back as columns, without building each member's spec (None: another kind of member is there,
        and the stack pickles as it is)."""
        if not members or set(map(type, dict.values(members))) != {int}:
            return None
        packed = np.fromiter(dict.values(members), np.int64, len(members))
        positions = packed >> 32
        index = self._numbers(members, int(positions.max()) + 1)
        if index is None:
            return None
        flats = np.fromiter(dict.keys(members), np.int64, len(members))
        pairs = _narrow(np.stack([index[positions], packed & 0xFFFFFFFF], axis=1))
        in_order = np.array_equal(flats, np.arange(len(flats)))
        return _stack, (stack_shape, table, None if in_order else _narrow(flats), pairs, dict(members.options))


_index_of = operator.attrgetter("index")
_offset_of = operator.attrgetter("offset")


def _narrow(ints: np.ndarray) -> np.ndarray:
    """Non-negative ints in the smallest unsigned type that holds them: a smaller entry to write and read."""
    return ints.astype(np.min_scalar_type(int(ints.max()))) if ints.size else ints


def _stack(
    stack_shape: tuple[int, ...],
    table: CachedMessages,
    flats: np.ndarray | None,
    pairs: np.ndarray,
    options: dict[str, Any],
) -> StackedReader:
    pairs = pairs.astype(np.int64)
    packed = (pairs[:, 0] << 32) | pairs[:, 1]
    keys = range(len(pairs)) if flats is None else flats.tolist()
    members = MessageMembers(table.message, options, zip(keys, packed.tolist(), strict=True))
    return StackedReader(stack_shape, members)
