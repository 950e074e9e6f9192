"""The project index of one workspace root: scan, fingerprint, outline, resolve, persist.

A cold build outlines every file; a warm build loads the store and re-reads only files
whose (size, mtime) changed, re-outlining only those whose contents hash changed.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

from cache.fingerprint import digest
from cache.graph import DependencyGraph
from cache.imports import ImportResolver, read_text_under
from cache.model import FileRecord, Outline
from cache.outline import parse_outline
from cache.scan import ScannedFile, ScanSettings, scan
from cache.store import ProjectStore

log = logging.getLogger(__name__)

Job = tuple[str, str | None]
"""A file to outline: its absolute path and language."""
_SPAWN = multiprocessing.get_context("spawn")  # never fork a threaded server

Progress = Callable[[int, int], None]
"""Called with (files done, files found so far)."""


@dataclass
class IndexSummary:
    files: int = 0
    outlined: int = 0
    reused: int = 0
    rehashed: int = 0
    removed: int = 0
    edges: int = 0
    seconds: float = 0.0
    store_bytes: int = 0
    languages: Counter[str] = field(default_factory=Counter)


class ProjectIndex:
    """Everything the cache knows about the files under one workspace root."""

    def __init__(
        self,
        root: Path,
        scan_settings: ScanSettings | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.root = root.resolve()
        self.scan_settings = scan_settings or ScanSettings()
        self.store = ProjectStore(self.root, cache_dir)
        self.records: dict[str, FileRecord] = {}
        self.graph = DependencyGraph()
        self._by_directory: dict[str, list[str]] = {}

    def build(self, progress: Progress | None = None) -> IndexSummary:
        """Bring the index up to date with the disk, and persist what changed."""
        started = time.perf_counter()
        summary = IndexSummary()
        stored = self.store.load()
        found = list(scan(self.root, self.scan_settings))
        records: dict[str, FileRecord] = {}
        changed: dict[str, FileRecord] = {}
        to_outline: list[FileRecord] = []
        for file in found:
            old = stored.get(file.path)
            record = self._refresh(file, old, summary)
            if record is None:
                record = FileRecord(file.path, file.language, file.size, file.mtime_ns, "")
                to_outline.append(record)
            records[file.path] = record
            if record is not old:
                changed[file.path] = record
        for record in outline_all(self.root, to_outline, progress, len(found)):
            records[record.path] = changed[record.path] = record
        summary.outlined = len(to_outline)
        if progress is not None:
            progress(len(found), len(found))
        removed = [path for path in stored if path not in records]
        summary.removed = len(removed)
        self.records = records
        self._by_directory = {}
        for path in sorted(records):
            self._by_directory.setdefault(_directory(path), []).append(path)
        if changed or removed:
            changed.update(self._resolve_all())
        else:  # the same files with the same contents: the stored edges still hold
            self.graph = DependencyGraph()
            for path, record in records.items():
                self.graph.set_imports(path, record.depends_on)
        self.store.save(changed, removed)
        summary.files = len(records)
        summary.edges = self.graph.edge_count
        summary.languages = Counter(r.language for r in records.values() if r.language)
        summary.store_bytes = self.store.size_bytes()
        summary.seconds = time.perf_counter() - started
        return summary

    def _refresh(
        self, file: ScannedFile, old: FileRecord | None, summary: IndexSummary
    ) -> FileRecord | None:
        """The stored record if the file is unchanged (by stat, or by hash), else None:
        the file must be outlined again."""
        if old is not None and (old.size, old.mtime_ns) == (file.size, file.mtime_ns):
            summary.reused += 1
            return old
        if old is not None and old.language == file.language:
            try:
                same = digest(file.abs_path.read_bytes()) == old.digest
            except OSError:
                same = False
            if same:
                summary.rehashed += 1
                return replace(old, size=file.size, mtime_ns=file.mtime_ns)
        return None

    def _resolve_all(self) -> dict[str, FileRecord]:
        """Resolve every file's imports (cheap: no I/O but config files) and build the graph.

        Returns the records whose dependencies changed, to be saved."""
        resolver = ImportResolver(
            self.records,
            {path: record.outline for path, record in self.records.items()},
            read_text_under(self.root),
        )
        changed = {}
        graph = DependencyGraph()
        for path, record in self.records.items():
            depends_on = resolver.resolve(path, record.language)
            if depends_on != record.depends_on:
                record = replace(record, depends_on=depends_on)
                self.records[path] = changed[path] = record
            graph.set_imports(path, depends_on)
        self.graph = graph
        return changed

    def outline(self, path: str) -> Outline | None:
        """The outline of `path`, or None for a file without one or not in the index.

        Callers use this, never `FileRecord.outline`: outlines may be loaded lazily."""
        record = self.records.get(path)
        return record.outline if record is not None else None

    def related(self, path: str, limit: int = 20) -> list[str]:
        """Files most likely to matter when editing `path`, best first: the rest of its
        directory (package), its direct dependencies, second-hop dependencies, then the
        files that import it."""
        ranked: dict[str, None] = dict.fromkeys(self._by_directory.get(_directory(path), ()))
        hops = self.graph.neighbourhood(path, hops=2)
        ranked.update(dict.fromkeys(sorted(hops, key=lambda p: (hops[p], p))))
        ranked.update(dict.fromkeys(sorted(self.graph.imported_by(path))))
        ranked.pop(path, None)
        return list(ranked)[:limit]

    def close(self) -> None:
        self.store.close()


PARALLEL_FROM = 300
"""Below this many files, starting worker processes costs more than it saves."""
CHUNK = 32
INLINE_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "java", "rust", "c", "cpp", "markdown"}
)
"""Grammars trusted to run inside the server process. Some others in the pack segfault or
spin on bad input (yaml on deep nesting, v, gn), which no Python code can catch: their files
are always outlined in a worker process."""


def outline_all(
    root: Path, pending: list[FileRecord], progress: Progress | None, total: int
) -> Iterator[FileRecord]:
    """Hash and outline `pending` files. Many files, or any of an untrusted grammar, go to
    worker processes: tree-sitter holds the GIL while it parses, so threads would not help,
    and a grammar that crashes a worker costs that one file its outline, not the server."""
    jobs = [(str(root / record.path), record.language) for record in pending]
    isolate = len(jobs) >= PARALLEL_FROM or any(
        language not in INLINE_LANGUAGES for _, language in jobs if language
    )
    results = _in_workers(jobs) if isolate else map(_hash_and_outline, jobs)
    yield from _with_results(pending, results, progress, total)


def _in_workers(jobs: list[Job]) -> Iterator[tuple[str, Outline | None]]:
    """Outline in spawned workers, chunk by chunk; when a worker dies, redo the rest of the
    broken chunk one file at a time to find the file that killed it."""
    workers = max(1, min(os.cpu_count() or 1, 8))
    chunks = [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    done = 0
    while done < len(chunks):
        with ProcessPoolExecutor(workers, mp_context=_SPAWN) as pool:
            futures = [pool.submit(_hash_and_outline_many, chunk) for chunk in chunks[done:]]
            try:
                for future in futures:
                    yield from future.result()
                    done += 1
            except BrokenProcessPool:
                pass
        if done < len(chunks):
            yield from _one_by_one(chunks[done])
            done += 1


def _one_by_one(jobs: list[Job]) -> Iterator[tuple[str, Outline | None]]:
    position = 0
    while position < len(jobs):
        with ProcessPoolExecutor(1, mp_context=_SPAWN) as pool:
            try:
                for job in jobs[position:]:
                    yield pool.submit(_hash_and_outline, job).result()
                    position += 1
            except BrokenProcessPool:
                path, language = jobs[position]
                log.warning(
                    "the %s grammar crashed on %s; indexed without an outline", language, path
                )
                yield _digest_of(path), None
                position += 1


def _hash_and_outline_many(jobs: list[Job]) -> list[tuple[str, Outline | None]]:
    return [_hash_and_outline(job) for job in jobs]


def _with_results(
    pending: list[FileRecord],
    results: Iterable[tuple[str, Outline | None]],
    progress: Progress | None,
    total: int,
) -> Iterator[FileRecord]:
    done = total - len(pending)
    for record, (fingerprint, outline) in zip(pending, results, strict=True):
        done += 1
        if progress is not None and done % 500 == 0:
            progress(done, total)
        yield replace(record, digest=fingerprint, outline=outline)


def _hash_and_outline(job: Job) -> tuple[str, Outline | None]:
    path, language = job
    data = _read(path)
    return digest(data), parse_outline(data, language) if language else None


def _digest_of(path: str) -> str:
    return digest(_read(path))


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        log.debug("cannot read %s: %s", path, exc)
        return b""


def _directory(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""
