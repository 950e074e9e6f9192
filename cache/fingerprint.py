"""Content digests and the cheap (size, mtime) check that decides whether to re-read a file.

A warm start stats every file but re-reads and re-hashes only those whose size or
modification time differ from their record; xxh3 makes the re-hash itself cheap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import xxhash

from cache.model import FileRecord

_READ_CHUNK_BYTES = 1 << 20


def digest(data: bytes) -> str:
    """xxh3-64 of the contents as 16 hex digits: the `FileRecord.digest` of those bytes."""
    return xxhash.xxh3_64_hexdigest(data)


def digest_file(path: Path) -> str:
    """`digest` of a file's contents, read in chunks so a large file is never held whole."""
    hasher = xxhash.xxh3_64()
    with path.open("rb") as file:
        while chunk := file.read(_READ_CHUNK_BYTES):
            hasher.update(chunk)
    return hasher.hexdigest()


class SizeAndMtime(Protocol):
    """Anything that knows a file's size and mtime: a `FileStat`, a scanned file, a record."""

    @property
    def size(self) -> int: ...

    @property
    def mtime_ns(self) -> int: ...


@dataclass(frozen=True, slots=True)
class FileStat:
    """The two numbers of `os.stat` that tell whether a file may have changed."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, result: os.stat_result) -> FileStat:
        return cls(size=result.st_size, mtime_ns=result.st_mtime_ns)

    @classmethod
    def from_path(cls, path: Path) -> FileStat:
        """Stat `path` (following links); raises OSError like `os.stat`."""
        return cls.of(os.stat(path))


def changed(record: FileRecord, stat: SizeAndMtime) -> bool:
    """Whether the file may differ from its record: its size or mtime moved.

    Equal numbers are trusted (the file is not re-read). A write within the file system's
    timestamp granularity that keeps the size is missed, as git's "racy" case; callers that
    care re-hash files whose mtime is very close to when the record was made.
    """
    return record.size != stat.size or record.mtime_ns != stat.mtime_ns
