"""The project cache on disk: one diskcache (SQLite) store per workspace root and schema.

Two kinds of entries: records (`FileRecord` without the outline: a few hundred bytes per
file, what a warm start needs), grouped in 1,024 buckets by a hash of their path, and outlines
(definitions, one entry per file, kept under the digest of the contents they were made
from). A warm start reads the 1,024 buckets and no outline; outlines are read on demand.

diskcache is used through its public API only: `Cache.get`/`set`/`delete` inside
`Cache.transact`, settings that keep every entry (`eviction_policy="none"`, `cull_limit=0`)
inside the SQLite file (`disk_min_file_size`), and a `Disk` subclass for serialization, the
extension point diskcache documents (as its `JSONDisk`). Records are bucketed because the
public API reads one key at a time: one entry per file (schema 4) needed a private SQL query
over diskcache's table (`cache._sql`) to load 27k records in one pass, since `iterkeys` plus
a `get` per key took 4x as long. 1,024 `get`s of buckets load faster than that query did
(22k records: p50 344 against 415 ms); a save rewrites the buckets it touches (~25 records
each at 27k files: one record's save p50 0.29 ms against 0.08). `benchmarks/cache/store_bench.py`
measures both stores.

The store is private to the user and never trusted: a store from another schema version,
root or user, with loose permissions, or with any entry that fails its checksum or does not
unpickle into what this module writes is discarded and rebuilt (one warning says why). Two
servers on the same workspace may write at once: each save is one SQLite transaction.

Values are pickled by `_EntryDisk` with a checksum in front, and read back by an unpickler
that can build only the outline classes of `cache.model`; diskcache's own pickles are never
read. A bucket holds plain tuples only, each field checked for its type.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import io
import logging
import os
import pickle
import shutil
import sqlite3
import stat
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from itertools import chain
from operator import attrgetter, itemgetter
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

import diskcache
import xxhash

from cache import model
from cache.model import FileRecord, Outline
from cache.user_dirs import project_cache_root

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5
"""Bump whenever `cache.model` or the record encoding changes: old stores are then removed
(one log line each) and the workspace is indexed again. 5: records in buckets."""

_SCHEMA_KEY = "meta:schema"
_ROOT_KEY = "meta:root"
_BUCKET_PREFIX = "records:"
_BUCKET_BITS = 10
_BUCKET_KEYS = tuple(f"{_BUCKET_PREFIX}{n:03x}" for n in range(1 << _BUCKET_BITS))
_OUTLINE_PREFIX = "outline:"
_RECORD_FIELDS = 8
_CHECKSUM_BYTES = 8
_LOCK_TIMEOUT_S = 30.0
"""How long a save or load waits for another process's transaction before giving up."""
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_INLINE_VALUE_LIMIT = 1 << 30
"""Keep every value inside the SQLite file: no side files for diskcache to read by name."""

_MODEL_CLASSES: dict[str, type] = {
    cls.__name__: cls for cls in (model.Outline, model.Definition, model.ImportRef)
}


class _StoreCorrupt(Exception):
    """The store's contents are not what this module writes."""


def project_store_dir(root: Path, cache_root: Path | None = None) -> Path:
    """<cache root>/projects/<xxh3 of the resolved root>-v<SCHEMA_VERSION>."""
    resolved = str(root.resolve()).encode("utf-8", "surrogateescape")
    name = f"{xxhash.xxh3_64_hexdigest(resolved)}-v{SCHEMA_VERSION}"
    return (cache_root or project_cache_root()) / "projects" / name


def _reduce_record(obj: Any) -> tuple[type, tuple[Any, ...]]:
    """Pickle a model dataclass as a constructor call: ~2x faster to load than its state."""
    return type(obj), _FIELD_GETTERS[type(obj)](obj)


def _field_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    names = [f.name for f in fields(cls)]
    getter = attrgetter(*names)
    if len(names) == 1:
        return lambda obj: (getter(obj),)
    return getter


_FIELD_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    cls: _field_getter(cls) for cls in _MODEL_CLASSES.values()
}


class _RecordPickler(pickle.Pickler):
    """Pickles the outline classes as constructor calls (see `_reduce_record`)."""

    dispatch_table = MappingProxyType({cls: _reduce_record for cls in _MODEL_CLASSES.values()})


class _RecordUnpickler(pickle.Unpickler):
    """Builds only the outline classes; any other global in the data is corruption."""

    def find_class(self, module_name: str, name: str) -> type:
        if module_name == model.__name__ and name in _MODEL_CLASSES:
            return _MODEL_CLASSES[name]
        raise _StoreCorrupt(f"an entry refers to {module_name}.{name}")


def _checksummed(payload: bytes) -> bytes:
    return xxhash.xxh3_64_digest(payload) + payload


def _encode(value: object) -> bytes:
    """A value as a pickle (outline classes as constructor calls) behind its checksum."""
    buffer = io.BytesIO()
    _RecordPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return _checksummed(buffer.getvalue())


def _decode(blob: bytes) -> object:
    """What `_encode` wrote; any damage raises _StoreCorrupt."""
    if len(blob) <= _CHECKSUM_BYTES:
        raise _StoreCorrupt("a value is not an encoded entry")
    payload = memoryview(blob)[_CHECKSUM_BYTES:]
    if xxhash.xxh3_64_digest(payload) != blob[:_CHECKSUM_BYTES]:
        raise _StoreCorrupt("a value fails its checksum")
    return _RecordUnpickler(io.BytesIO(payload)).load()


class _EntryDisk(diskcache.Disk):  # type: ignore[misc]
    """diskcache's serializer for this store. Strings and integers are kept as diskcache
    keeps them; anything else is written by `_encode`. Reading refuses what this module
    never writes: diskcache's own pickles (it would unpickle them unchecked) and values kept
    in side files."""

    def store(self, value: Any, read: bool, key: Any = diskcache.UNKNOWN) -> Any:
        if type(value) not in (str, int):
            value = _encode(value)
        return super().store(value, read, key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode != diskcache.core.MODE_RAW or filename is not None or read:
            raise _StoreCorrupt(f"a value is stored in mode {mode}")
        value = super().fetch(mode, filename, value, read)
        return _decode(value) if type(value) is bytes else value


def _bucket_key(path: str) -> str:
    hashed = xxhash.xxh3_64_intdigest(path.encode("utf-8", "surrogateescape"))
    return _BUCKET_KEYS[hashed >> (64 - _BUCKET_BITS)]


def _record_state(record: FileRecord) -> tuple[Any, ...]:
    """The record without its path and outline, as a tuple of plain values."""
    return (
        record.language,
        record.size,
        record.mtime_ns,
        record.digest,
        record.depends_on,
        record.imports,
        record.package,
        record.secrets,
    )


def _check_bucket(key: str, bucket: object) -> dict[str, tuple[Any, ...]]:
    """A bucket's {path: state}, checked for its shape (the fields' types: `_well_typed`)."""
    if (
        type(bucket) is not dict
        or not _types(bucket) <= {str}
        or not _types(bucket.values()) <= {tuple}
        or not set(map(len, bucket.values())) <= {_RECORD_FIELDS}
    ):
        raise _StoreCorrupt(f"{key} is not a record bucket")
    return bucket


def _records(states: dict[str, Any]) -> dict[str, FileRecord]:
    """The records of checked states. Every field of every record is checked for its type,
    in C-speed passes over all records at once (checking each record in Python cost half of
    a warm start's load)."""
    if states and not _well_typed(list(states.values())):
        raise _StoreCorrupt("a record is not a record")
    return {
        path: FileRecord(path, s[0], s[1], s[2], s[3], None, s[4], s[5], s[6], s[7])
        for path, s in states.items()
    }


def _check_outline(path: str, entry: object) -> tuple[str, Outline]:
    """(digest of the contents it was made from, outline), checked for its shape."""
    if (
        type(entry) is not tuple
        or len(entry) != 2
        or type(entry[0]) is not str
        or not isinstance(entry[1], Outline)
    ):
        raise _StoreCorrupt(f"the outline under {path!r} is not an outline")
    return entry[0], entry[1]


@dataclass
class _Changes:
    """One save: record states (None: removed) by bucket, outline entries to set or delete."""

    buckets: dict[str, dict[str, tuple[Any, ...] | None]] = field(default_factory=dict)
    outlines: list[tuple[str, tuple[str, Outline]]] = field(default_factory=list)
    removed_outlines: list[str] = field(default_factory=list)

    def bucket(self, path: str) -> dict[str, tuple[Any, ...] | None]:
        return self.buckets.setdefault(_bucket_key(path), {})

    def __bool__(self) -> bool:
        return bool(self.buckets or self.outlines or self.removed_outlines)


def _well_typed(states: list[tuple[Any, ...]]) -> bool:
    """Whether the decoded states are all (language, size, mtime_ns, digest, depends_on,
    imports, package, secrets) of the types `FileRecord` says."""
    languages, sizes, mtimes, digests, depends, imports, packages, secrets = zip(
        *states, strict=True
    )
    spans = list(chain.from_iterable(secrets))
    if not (
        _types(secrets) <= {tuple}
        and _types(spans) <= {tuple}
        and set(map(len, spans)) <= {3}
        and _types(chain.from_iterable(spans)) <= {int}
    ):
        return False
    if not (
        _types(languages) <= {str, type(None)}
        and _types(sizes) <= {int}
        and _types(mtimes) <= {int}
        and _types(digests) <= {str}
        and _types(packages) <= {str}
        and _types(depends) <= {tuple}
        and _types(chain.from_iterable(depends)) <= {str}
        and _types(imports) <= {tuple}
    ):
        return False
    specs = list(chain.from_iterable(imports))
    return not specs or (
        _types(specs) <= {tuple}
        and set(map(len, specs)) == {2}
        and _types(map(_FIRST, specs)) <= {str}
        and _types(map(_SECOND, specs)) <= {tuple}
        and _types(chain.from_iterable(map(_SECOND, specs))) <= {str}
    )


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def _is_busy(error: BaseException) -> bool:
    """Another process holds the lock too long: wait for next time, the store is fine."""
    if isinstance(error, diskcache.Timeout):
        return True
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in message or "busy" in message
    )


def _is_full(error: BaseException) -> bool:
    """The disk (or the user's quota) is full: the store is fine, it cannot grow for now."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(error, sqlite3.OperationalError) and "full" in str(error).lower()


_UNREADABLE: tuple[type[BaseException], ...] = (
    sqlite3.Error,
    diskcache.Timeout,
    _StoreCorrupt,
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    KeyError,
    OSError,
)
"""What reading or writing a damaged store can raise."""


def _current_uid() -> int | None:
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid is not None else None


def _make_private_dir(path: Path) -> None:
    """mkdir with mode 0700 whatever the umask; an existing directory is left as it is."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)


def _distrust(path: Path) -> str | None:
    """Why an existing store directory cannot be trusted, or None (also when it is absent)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"it cannot be inspected ({error})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    uid = _current_uid()
    if uid is not None and info.st_uid != uid:
        return f"it is owned by uid {info.st_uid}, not by this user (uid {uid})"
    if os.name == "posix" and info.st_mode & 0o077:
        return f"its permissions are {stat.S_IMODE(info.st_mode):#o}, not 0o700"
    return None


def _discard(path: Path) -> None:
    """Move the directory aside first, so that another process never opens half of it."""
    aside = path.with_name(f"{path.name}.discarded-{uuid.uuid4().hex}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    except OSError:
        aside = path
    shutil.rmtree(aside, ignore_errors=True)
    if os.path.lexists(path):
        raise OSError(f"cannot remove {path}")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Building ~10^5 small objects triggers repeated full collections that would triple the
    time of a load; none of them can be garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ProjectStore:
    """The records of one workspace root, kept between sessions.

    `cache_dir` is the cache root (the `cacheDir` setting); the store lives in
    `project_store_dir(root, cache_dir)`. A store that cannot be used at all (no writable
    cache directory) logs why and acts empty: `load` returns {} and `save` does nothing.
    """

    def __init__(self, root: Path, cache_dir: Path | None = None) -> None:
        self._root = str(root.resolve())
        self._path = project_store_dir(root, cache_dir)
        self._lock = threading.RLock()
        self._disk_full = False
        """A save failed for want of room: said once, and again when a save succeeds."""
        self._cache: diskcache.Cache | None = self._open()

    @property
    def path(self) -> Path:
        return self._path

    def load(self) -> dict[str, FileRecord]:
        """Every record (outline None), by path; {} for a new, rebuilt or unusable store."""
        with self._lock:
            cache = self._cache
            if cache is None:
                return {}
            try:
                return self._read_all(cache)
            except _UNREADABLE as error:
                if _is_busy(error):
                    log.warning("Project cache %s is busy (%s); not loaded", self._path, error)
                    return {}
                self._cache = self._rebuild(cache, f"it cannot be read ({error})")
                return {}

    def load_outline(self, path: str, digest: str) -> Outline | None:
        """The stored outline of `path` if it was made from contents with this digest."""
        with self._lock:
            cache = self._cache
            if cache is None:
                return None
            try:
                entry = cache.get(_OUTLINE_PREFIX + path)
                if entry is None:
                    return None
                made_from, outline = _check_outline(path, entry)
            except _UNREADABLE as error:
                if not _is_busy(error):
                    self._cache = self._rebuild(cache, f"it cannot be read ({error})")
                return None
            return outline if made_from == digest else None

    def save(
        self,
        records: Mapping[str, FileRecord],
        removed: Iterable[str] = (),
        outlines: Iterable[tuple[str, str, Outline]] = (),
    ) -> None:
        """Insert or replace `records` (keyed by their path) and `outlines` (path, digest of
        the contents it was made from, outline), and delete `removed` with their outlines,
        all in one transaction. A record's own `outline`, when set, is saved with it."""
        changes = _Changes()
        for path, record in records.items():
            if path != record.path:
                raise ValueError(f"record of {record.path!r} given under {path!r}")
            changes.bucket(path)[path] = _record_state(record)
            if record.outline is not None:
                changes.outlines.append((_OUTLINE_PREFIX + path, (record.digest, record.outline)))
        for path, digest, outline in outlines:
            changes.outlines.append((_OUTLINE_PREFIX + path, (digest, outline)))
        for path in removed:
            changes.bucket(path)[path] = None
            changes.removed_outlines.append(_OUTLINE_PREFIX + path)
        if not changes:
            return
        with self._lock:
            cache = self._cache
            if cache is None:
                return
            try:
                self._write(cache, changes)
            except _UNREADABLE as error:
                if _is_busy(error):
                    log.warning("Project cache %s is busy (%s); not saved", self._path, error)
                    return
                if _is_full(error):
                    self._note_disk_full(error)
                    return
                self._cache = self._rebuild(cache, f"it cannot be written ({error})")
                if self._cache is not None:
                    with contextlib.suppress(*_UNREADABLE):
                        self._write(self._cache, changes)
                return
            if self._disk_full:
                self._disk_full = False
                log.info("Project cache %s is saved again: the disk has room", self._path)

    def _note_disk_full(self, error: BaseException) -> None:
        """Keep the store as it is (what was not saved is hashed again at the next start)."""
        if not self._disk_full:
            self._disk_full = True
            log.warning(
                "The disk holding the project cache %s is full (%s); the index in memory "
                "stays current, and changes are saved once there is room",
                self._path,
                error,
            )

    def size_bytes(self) -> int:
        """Bytes on disk (the SQLite file and its journal)."""
        total = 0
        for folder, _, names in os.walk(self._path):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
        return total

    def close(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None

    def __enter__(self) -> ProjectStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _make_parents(self) -> None:
        """The cache root and its projects folder, private; what is above them, as usual."""
        cache_root = self._path.parent.parent
        cache_root.parent.mkdir(parents=True, exist_ok=True)
        _make_private_dir(cache_root)
        _make_private_dir(self._path.parent)

    def _open(self) -> diskcache.Cache | None:
        try:
            self._make_parents()
        except OSError as error:
            log.warning(
                "Cannot create the project cache directory %s (%s); nothing is cached",
                self._path,
                error,
            )
            return None
        self._discard_older_schemas()
        cache = None
        reason = _distrust(self._path)
        if reason is None:
            try:
                _make_private_dir(self._path)
                cache = self._connect()
                reason = self._claim(cache)
                if reason is None:
                    return cache
            except _UNREADABLE as error:
                if _is_busy(error) or _is_full(error):
                    what = "busy" if _is_busy(error) else "on a full disk"
                    log.warning(
                        "Project cache %s is %s (%s); nothing is cached", self._path, what, error
                    )
                    if cache is not None:
                        with contextlib.suppress(*_UNREADABLE):
                            cache.close()
                    return None
                reason = f"it cannot be read ({error})"
        return self._rebuild(cache, reason)

    def _discard_older_schemas(self) -> None:
        """Stores of this root under an older schema are never opened again: remove them
        (a v1 store of a large workspace held 236 MB), one log line each."""
        stem, _, _ = self._path.name.rpartition("-v")
        try:
            siblings = list(os.scandir(self._path.parent))
        except OSError:
            return
        for entry in siblings:
            name, _, version = entry.name.rpartition("-v")
            if name != stem or not version.isdigit() or int(version) >= SCHEMA_VERSION:
                continue
            if _distrust(Path(entry.path)) is not None:
                continue  # not ours to remove
            log.warning(
                "Removing the project cache %s of an older schema (v%s); the workspace is "
                "indexed again into %s",
                entry.path,
                version,
                self._path,
            )
            with contextlib.suppress(OSError):
                _discard(Path(entry.path))

    def _rebuild(self, cache: diskcache.Cache | None, reason: str) -> diskcache.Cache | None:
        """Discard the store (logging the one warning that says why) and start an empty one."""
        log.warning("Discarding the project cache at %s: %s; rebuilding it", self._path, reason)
        if cache is not None:
            with contextlib.suppress(*_UNREADABLE):
                cache.close()
        fresh = None
        try:
            _discard(self._path)
            self._make_parents()  # the whole cache folder may have been deleted
            _make_private_dir(self._path)
            fresh = self._connect()
            problem = self._claim(fresh)
            if problem is None:
                return fresh
            raise _StoreCorrupt(problem)
        except _UNREADABLE as error:
            log.error(
                "Cannot rebuild the project cache at %s (%s); nothing is cached", self._path, error
            )
            if fresh is not None:
                with contextlib.suppress(*_UNREADABLE):
                    fresh.close()
            return None

    def _connect(self) -> diskcache.Cache:
        return diskcache.Cache(
            str(self._path),
            timeout=_LOCK_TIMEOUT_S,
            disk=_EntryDisk,
            eviction_policy="none",
            cull_limit=0,
            statistics=0,
            tag_index=0,
            disk_min_file_size=_INLINE_VALUE_LIMIT,
        )

    def _claim(self, cache: diskcache.Cache) -> str | None:
        """Mark a new store as ours, or say why an existing one is not."""
        with cache.transact():
            schema = cache.get(_SCHEMA_KEY)
            root = cache.get(_ROOT_KEY)
            if schema is None and root is None:
                if len(cache):
                    return "it has records but no schema version"
                cache.set(_SCHEMA_KEY, SCHEMA_VERSION)
                cache.set(_ROOT_KEY, self._root)
                return None
        if schema != SCHEMA_VERSION:
            return f"it has schema version {schema!r}, not {SCHEMA_VERSION}"
        if root != self._root:
            return f"it belongs to {root!r}, not {self._root!r}"
        return None

    def _read_all(self, cache: diskcache.Cache) -> dict[str, FileRecord]:
        """Every record: the buckets, read in one transaction (one snapshot, never half of
        another process's save)."""
        states: dict[str, tuple[Any, ...]] = {}
        with cache.transact(), _gc_paused():
            for key in _BUCKET_KEYS:
                bucket = cache.get(key)
                if bucket is not None:
                    states.update(_check_bucket(key, bucket))
            return _records(states)

    def _write(self, cache: diskcache.Cache, changes: _Changes) -> None:
        with cache.transact():
            for key, updates in changes.buckets.items():
                stored = cache.get(key)
                bucket = {} if stored is None else _check_bucket(key, stored)
                for path, state in updates.items():
                    if state is None:
                        bucket.pop(path, None)
                    else:
                        bucket[path] = state
                if bucket:
                    cache.set(key, bucket)
                else:
                    cache.delete(key)
            for key, outline in changes.outlines:
                cache.set(key, outline)
            for key in changes.removed_outlines:
                cache.delete(key)
