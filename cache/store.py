"""The project cache on disk: one diskcache (SQLite) store per workspace root and schema.

A warm start reads every record back in one pass instead of re-parsing the workspace. The
store is private to the user and never trusted: a store from another schema version, root
or user, with loose permissions, or with any record that fails its checksum or does not
unpickle into a `FileRecord` is discarded and rebuilt (one warning says why). Two servers
on the same workspace may write at once: each save is one SQLite transaction.

Records are pickled by this module, not by diskcache, with a checksum in front, and read
back with an unpickler that can build only the record classes of `cache.model`.
"""

from __future__ import annotations

import contextlib
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
from dataclasses import fields
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

import diskcache
import xxhash

from cache import model
from cache.model import FileRecord

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""Bump whenever `cache.model` or the record encoding changes: old stores are then ignored."""

_SCHEMA_KEY = "meta:schema"
_ROOT_KEY = "meta:root"
_RECORD_PREFIX = "file:"
_CHECKSUM_BYTES = 8
_LOCK_TIMEOUT_S = 30.0
"""How long a save or load waits for another process's transaction before giving up."""
_INLINE_VALUE_LIMIT = 1 << 30
"""Keep every value inside the SQLite file: no side files for diskcache to read by name."""

_MODEL_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (model.FileRecord, model.Outline, model.Definition, model.ImportRef)
}


class _StoreCorrupt(Exception):
    """The store's contents are not what this module writes."""


def default_cache_root() -> Path:
    """$HEADSTART_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/headstart."""
    configured = os.environ.get("HEADSTART_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "headstart"


def project_store_dir(root: Path, cache_root: Path | None = None) -> Path:
    """<cache root>/projects/<xxh3 of the resolved root>-v<SCHEMA_VERSION>."""
    resolved = str(root.resolve()).encode("utf-8", "surrogateescape")
    name = f"{xxhash.xxh3_64_hexdigest(resolved)}-v{SCHEMA_VERSION}"
    return (cache_root or default_cache_root()) / "projects" / name


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
    """Pickles the record classes as constructor calls (see `_reduce_record`)."""

    dispatch_table = MappingProxyType({cls: _reduce_record for cls in _MODEL_CLASSES.values()})


class _RecordUnpickler(pickle.Unpickler):
    """Builds only the record classes; any other global in the data is corruption."""

    def find_class(self, module_name: str, name: str) -> type:
        if module_name == model.__name__ and name in _MODEL_CLASSES:
            return _MODEL_CLASSES[name]
        raise _StoreCorrupt(f"a record refers to {module_name}.{name}")


def _encode(record: FileRecord) -> bytes:
    """The record's pickle behind its xxh3 checksum, so any damage is seen on load."""
    buffer = io.BytesIO()
    _RecordPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(record)
    payload = buffer.getvalue()
    return xxhash.xxh3_64_digest(payload) + payload


def _decode(path: str, blob: object) -> FileRecord:
    if not isinstance(blob, bytes) or len(blob) <= _CHECKSUM_BYTES:
        raise _StoreCorrupt(f"the record of {path!r} is not an encoded record")
    payload = memoryview(blob)[_CHECKSUM_BYTES:]
    if xxhash.xxh3_64_digest(payload) != blob[:_CHECKSUM_BYTES]:
        raise _StoreCorrupt(f"the record of {path!r} fails its checksum")
    record = _RecordUnpickler(io.BytesIO(payload)).load()
    if not isinstance(record, FileRecord) or record.path != path:
        raise _StoreCorrupt(f"the record under {path!r} is not that file's record")
    return record


class _RecordDisk(diskcache.Disk):  # type: ignore[misc]
    """diskcache's serializer, refusing anything this module never writes: pickled keys or
    values (diskcache would unpickle them unchecked) and values kept in side files."""

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise _StoreCorrupt("a key is pickled")
        return super().get(key, raw)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode != diskcache.core.MODE_RAW or filename is not None:
            raise _StoreCorrupt(f"a value is stored in mode {mode}")
        return super().fetch(mode, filename, value, read)


def _is_busy(error: BaseException) -> bool:
    """Another process holds the lock too long: wait for next time, the store is fine."""
    if isinstance(error, diskcache.Timeout):
        return True
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in message or "busy" in message
    )


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
        self._cache: diskcache.Cache | None = self._open()

    @property
    def path(self) -> Path:
        return self._path

    def load(self) -> dict[str, FileRecord]:
        """Every record, by path; {} for a new, rebuilt or unusable store."""
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

    def save(self, records: Mapping[str, FileRecord], removed: Iterable[str] = ()) -> None:
        """Insert or replace `records` (keyed by their path) and delete `removed`, atomically."""
        encoded: list[tuple[str, bytes]] = []
        for path, record in records.items():
            if path != record.path:
                raise ValueError(f"record of {record.path!r} given under {path!r}")
            encoded.append((_RECORD_PREFIX + path, _encode(record)))
        removed_keys = [_RECORD_PREFIX + path for path in removed]
        with self._lock:
            cache = self._cache
            if cache is None:
                return
            try:
                self._write(cache, encoded, removed_keys)
            except _UNREADABLE as error:
                if _is_busy(error):
                    log.warning("Project cache %s is busy (%s); not saved", self._path, error)
                    return
                self._cache = self._rebuild(cache, f"it cannot be written ({error})")
                if self._cache is not None:
                    with contextlib.suppress(*_UNREADABLE):
                        self._write(self._cache, encoded, removed_keys)

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

    def _open(self) -> diskcache.Cache | None:
        try:
            cache_root = self._path.parent.parent
            cache_root.parent.mkdir(parents=True, exist_ok=True)
            _make_private_dir(cache_root)
            _make_private_dir(self._path.parent)
        except OSError as error:
            log.warning(
                "Cannot create the project cache directory %s (%s); nothing is cached",
                self._path,
                error,
            )
            return None
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
                if _is_busy(error):
                    log.warning(
                        "Project cache %s is busy (%s); nothing is cached", self._path, error
                    )
                    return None
                reason = f"it cannot be read ({error})"
        return self._rebuild(cache, reason)

    def _rebuild(self, cache: diskcache.Cache | None, reason: str) -> diskcache.Cache | None:
        """Discard the store (logging the one warning that says why) and start an empty one."""
        log.warning("Discarding the project cache at %s: %s; rebuilding it", self._path, reason)
        if cache is not None:
            with contextlib.suppress(*_UNREADABLE):
                cache.close()
        fresh = None
        try:
            _discard(self._path)
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
            disk=_RecordDisk,
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
        records: dict[str, FileRecord] = {}
        prefix_length = len(_RECORD_PREFIX)
        with cache.transact(), _gc_paused():  # one snapshot, never half of another's save
            for key in cache.iterkeys():
                if not isinstance(key, str):
                    raise _StoreCorrupt(f"unexpected key {key!r}")
                if not key.startswith(_RECORD_PREFIX):
                    if key in (_SCHEMA_KEY, _ROOT_KEY):
                        continue
                    raise _StoreCorrupt(f"unexpected key {key!r}")
                path = key[prefix_length:]
                records[path] = _decode(path, cache.get(key))
        return records

    def _write(
        self, cache: diskcache.Cache, encoded: list[tuple[str, bytes]], removed_keys: list[str]
    ) -> None:
        with cache.transact():
            for key, blob in encoded:
                cache.set(key, blob)
            for key in removed_keys:
                cache.delete(key)
