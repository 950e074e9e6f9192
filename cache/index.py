"""The project index of one workspace root: scan, fingerprint, resolve, persist, and
outlines on demand.

The index holds a small record per file (size, mtime, digest, imports, dependencies) and
the dependency graph; outlines (definitions) live in the store and in a small LRU, and are
made on demand by `outline(path)`. A cold build reads and hashes every file and finds what
it imports (Python's from the bytes, other languages' with tree-sitter); it outlines only
files whose imports need the parse anyway or whose grammar must run in a worker process.
A warm build loads the records (never the outlines), stats every file, re-reads only those
whose (size, mtime) changed, re-outlines only those whose hash changed, and re-resolves
only the files that such changes can affect. `update_file` and `remove_file` do the same
for one file while the editor works.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import logging
import multiprocessing
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

from tree_sitter import Tree

from cache import memory
from cache.fingerprint import digest
from cache.graph import DependencyGraph
from cache.imports import (
    RESOLVED_LANGUAGES,
    Everything,
    ImportResolver,
    import_facts,
    read_text_under,
)
from cache.model import FileRecord, ImportSpec, Outline
from cache.outline import parse_outline, runs_grammar, supported
from cache.python_imports import python_imports
from cache.scan import ScannedFile, ScanSettings, SkipReason, check_file, scan
from cache.secrets import FileSecrets, scan_file, warm_up
from cache.store import ProjectStore

log = logging.getLogger(__name__)

Job = tuple[str, str | None, bool]
"""A file to index: its absolute path, language, and whether to outline it now."""
Facts = tuple[str, tuple[ImportSpec, ...], str, Outline | None, FileSecrets]
"""What indexing one file gives: digest, imports, Java package, outline (None: not made)."""
_SPAWN = multiprocessing.get_context("spawn")  # never fork a threaded server

Progress = Callable[[int, int], None]
"""Called with (files done, files found so far)."""

PARALLEL_FROM = 300
"""Below this many files, starting worker processes costs more than it saves."""
CHUNK = 32
INLINE_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "java", "rust", "c", "cpp", "markdown"}
)
"""Grammars trusted to run inside the server process. Some others in the pack segfault or
spin on bad input (yaml on deep nesting, v, gn), which no Python code can catch: their files
are always outlined in a worker process."""
OUTLINE_CACHE_FILES = 256
"""Outlines kept in memory (least recently used go first); the rest stay in the store."""
OUTLINE_SAVE_BATCH = 32
"""Outlines made on demand are saved this many at a time (and at `close`)."""
FULL_RESOLVE_FROM = 2000
"""A warm build with more changed files than this re-resolves every file at once."""
_NO_OUTLINE = Outline("")
"""Cached for a file that has no outline, so that it is not tried again."""


def trusted(language: str | None) -> bool:
    """Whether outlining `language` may run in this process: a trusted grammar, or none."""
    return language is None or language in INLINE_LANGUAGES or not runs_grammar(language)


def outlined_at_build(language: str | None) -> bool:
    """Whether a build outlines files of `language` rather than leave it to `outline()`:
    when resolution needs the parse (Python's imports need none), or the grammar must run
    in a worker process, which a build has at hand and `outline()` has not."""
    if language is None or language == "python" or not supported(language):
        return False
    return language in RESOLVED_LANGUAGES or not trusted(language)


@dataclass
class IndexSummary:
    files: int = 0
    outlined: int = 0
    """Files read and indexed anew (new, or their contents changed)."""
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
        self.edits = 0
        """Counts the records put, replaced or removed (a file's contents may have changed):
        a memo made at the same count still holds without re-reading any record."""
        self.graph = DependencyGraph()
        self._by_directory: dict[str, list[str]] = {}
        self._resolver: ImportResolver | None = None
        self._outlines: OrderedDict[str, tuple[str, Outline]] = OrderedDict()
        """path -> (digest of the contents it was made from, outline): the LRU."""
        self._buffers: dict[str, Outline | None] = {}
        """Outlines of unsaved editor buffers, which win over disk and are never saved."""
        self._unsaved_outlines: list[tuple[str, str, Outline]] = []
        self._outline_lock = threading.RLock()
        self._worker: ProcessPoolExecutor | None = None
        self._closed = False

    # ------------------------------------------------------------------ build

    def build(self, progress: Progress | None = None) -> IndexSummary:
        """Bring the index up to date with the disk, and persist what changed."""
        started = time.perf_counter()
        summary = IndexSummary()
        warm_up()  # the secret rules, compiled here rather than at the first prompt
        with _gc_paused():  # ~10^5 long-lived objects: collections would find no garbage
            changed = self._build(progress, summary)
        summary.files = len(self.records)
        summary.edges = self.graph.edge_count
        summary.languages = Counter(r.language for r in self.records.values() if r.language)
        summary.store_bytes = self.store.size_bytes()
        summary.seconds = time.perf_counter() - started
        log.debug("built %s in %.2f s (%d records saved)", self.root, summary.seconds, changed)
        return summary

    def _build(self, progress: Progress | None, summary: IndexSummary) -> int:
        started = time.perf_counter()
        stored = self.store.load()
        loaded = time.perf_counter()
        found = list(scan(self.root, self.scan_settings, known=stored, ordered=False))
        scanned = time.perf_counter()
        fresh: dict[str, FileRecord] = {}
        """New or changed records: every one is saved."""
        pending: list[ScannedFile] = []
        for file in found:
            old = stored.get(file.path)
            if old is None or old.language != file.language:
                pending.append(file)
            elif (old.size, old.mtime_ns) == (file.size, file.mtime_ns):
                summary.reused += 1
            elif _digest_of(str(file.abs_path)) == old.digest:
                summary.rehashed += 1
                fresh[file.path] = replace(old, size=file.size, mtime_ns=file.mtime_ns)
            else:
                pending.append(file)
        indexed: dict[str, FileRecord] = {}
        outlines: list[tuple[str, str, Outline]] = []
        secret_files: set[str] = set()
        for file, (fingerprint, imports, package, outline, secrets) in self._index_all(
            pending, progress, len(found)
        ):
            if secrets[0] is not None:
                log.debug("%s is left out: %s", file.path, secrets[0])
                secret_files.add(file.path)
                continue
            indexed[file.path] = FileRecord(
                file.path, file.language, file.size, file.mtime_ns, fingerprint,
                None, (), imports, package, secrets[1],
            )  # fmt: skip
            if outline is not None:
                outlines.append((file.path, fingerprint, outline))
                if len(outlines) >= 256:  # to the store as they come, never all in memory
                    self.store.save({}, outlines=outlines)
                    outlines = []
        self.store.save({}, outlines=outlines)
        if progress is not None:
            progress(len(found), len(found))
        summary.outlined = len(indexed)
        present = {file.path for file in found} - secret_files
        removed = [path for path in stored if path not in present]
        summary.removed = len(removed)

        self._outlines.clear()
        self._buffers.clear()
        if not stored or len(indexed) + len(removed) > FULL_RESOLVE_FROM:
            for path in removed:
                del stored[path]
            fresh.update(indexed)
            stored.update(fresh)
            self._start_from(stored)
            fresh.update(self._resolve(Everything))
        else:  # the stored state, with the changes applied one by one
            self._start_from(stored)
            for path, record in fresh.items():
                self.records[path] = record
            self.edits += 1
            affected: set[str] | None = set()
            for path in removed:
                affected = _union(affected, self._apply(path, None))
            for path, record in indexed.items():
                affected = _union(affected, self._apply(path, record))
                fresh[path] = self.records[path]
            fresh.update(self._resolve(affected))
        resolved = time.perf_counter()
        self.store.save(fresh, removed)
        log.debug(
            "%s: store read in %.3f s, scan %.3f s, indexing and resolution %.3f s, save %.3f s",
            self.root,
            loaded - started,
            scanned - loaded,
            resolved - scanned,
            time.perf_counter() - resolved,
        )
        return len(fresh)

    def _start_from(self, records: dict[str, FileRecord]) -> None:
        """Take `records` as they are, with the graph their stored dependencies make."""
        self.records = records
        self.edits += 1
        self._resolver = None
        self.graph = DependencyGraph.from_imports(
            (path, record.depends_on) for path, record in records.items()
        )
        by_directory: dict[str, list[str]] = {}
        for path in sorted(records):
            directory = path.rpartition("/")[0]
            listing = by_directory.get(directory)
            if listing is None:
                by_directory[directory] = [path]
            else:
                listing.append(path)
        self._by_directory = by_directory

    def _index_all(
        self, pending: list[ScannedFile], progress: Progress | None, total: int
    ) -> Iterator[tuple[ScannedFile, Facts]]:
        """Read, hash and find the imports of `pending` files (outlining those that
        `outlined_at_build` says). Many files, or any of an untrusted grammar, go to worker
        processes: tree-sitter holds the GIL while it parses, so threads would not help,
        and a grammar that crashes a worker costs that one file its outline, not the
        server."""
        jobs = [
            (str(file.abs_path), file.language, outlined_at_build(file.language))
            for file in pending
        ]
        isolate = len(jobs) >= PARALLEL_FROM or any(
            now and not trusted(language) for _, language, now in jobs
        )
        results = _in_workers(jobs) if isolate else map(_index_file, jobs)
        done = total - len(pending)
        for file, facts in zip(pending, results, strict=True):
            done += 1
            if progress is not None and done % 500 == 0:
                progress(done, total)
            yield file, facts

    # ------------------------------------------------------- one file at a time

    def relative_path(self, path: Path) -> str | None:
        """The workspace-relative path (forward slashes) of the absolute `path` if it lies
        under the root and the scan rules index it (ignore files, excludes, secrets, size,
        language, binary contents), else None. A file that is in the index but no longer on
        disk (deleted, renamed) keeps its relative path, so that the change can be applied.
        """
        relative = self._under_root(path)
        if relative is None:
            return None
        checked = check_file(self.root, relative, self.scan_settings)
        if isinstance(checked, ScannedFile):
            return relative
        if relative in self.records and not os.path.lexists(self.root / relative):
            return relative
        return None

    def update_file(
        self,
        path: str,
        data: bytes | None = None,
        *,
        persist: bool = True,
        parsed: Callable[[str], Tree | None] | None = None,
    ) -> bool:
        """Index one file again, given its relative path: from disk (`data` None; a file
        missing on disk is removed), or from the editor's unsaved buffer `data`, which wins
        over disk until the next update from disk. With `persist` False nothing about it is
        saved; a buffer is saved only when it equals the disk's contents. A file the scan
        rules leave out (ignored, too large, binary, ...) is dropped from the index.
        `parsed(language)`, for an open document, is the editor's tree of these very bytes
        (or None): outlining it spares a whole parse of the file.

        Re-outlines it, re-resolves its imports, and re-resolves the files whose imports may
        now resolve differently. Returns whether its outline or dependencies changed (True
        also when the old outline was never made, so cannot be compared).
        """
        checked = check_file(self.root, path, self.scan_settings, data)
        if isinstance(checked, SkipReason):
            if path not in self.records:
                return False
            return self._remove(path, persist=persist and data is None)
        from_disk = data is None
        size, mtime_ns = checked.size, checked.mtime_ns
        if data is None:
            read = _read_with_stat(self.root / path)
            if read is None:
                return self._remove(path, persist=persist) if path in self.records else False
            data, size, mtime_ns = read
            if size > self.scan_settings.max_file_bytes:
                return self._remove(path, persist=persist) if path in self.records else False
        fingerprint = digest(data)
        language = checked.language
        saves = persist and (from_disk or self._disk_digest(path) == fingerprint)
        old = self.records.get(path)
        if old is not None and (old.digest, old.language) == (fingerprint, language):
            return self._same_contents(path, old, size, mtime_ns, saves)
        secret_file, secrets = scan_file(data, path)
        if secret_file is not None:  # a file of credentials, as `.env` by its name
            return self._remove(path, persist=saves) if path in self.records else False

        outline = self._outline_of(data, language, parsed)
        if language == "python":
            imports, package = python_imports(data), ""
        else:
            imports, package = import_facts(language, outline)
        before = self._known_outline(path, old)
        depends_before = old.depends_on if old is not None else None
        record = FileRecord(
            path, language, size, mtime_ns, fingerprint, None,
            depends_before or (), imports, package, secrets,
        )  # fmt: skip
        changed = self._resolve(self._apply(path, record))
        record = self.records[path]
        with self._outline_lock:
            if from_disk or saves:
                self._buffers.pop(path, None)
                self._remember(path, fingerprint, outline)
            else:  # an unsaved buffer: kept apart, so that it is never saved
                self._buffers[path] = outline
                self._outlines.pop(path, None)
        if saves:
            changed[path] = record
            self.store.save(
                {p: r for p, r in changed.items() if p not in self._buffers or p == path},
                outlines=[(path, fingerprint, outline)] if outline is not None else [],
            )
        return outline != before or record.depends_on != depends_before

    def remove_file(self, path: str) -> bool:
        """Forget one file (deleted, or the old name of a renamed file), in the index and the
        store; re-resolves the files whose imports may have found it. False if it was not
        in the index."""
        if path not in self.records:
            return False
        return self._remove(path, persist=True)

    def _remove(self, path: str, persist: bool) -> bool:
        changed = self._resolve(self._apply(path, None))
        with self._outline_lock:
            self._buffers.pop(path, None)
            self._outlines.pop(path, None)
        if persist:
            saved = {p: r for p, r in changed.items() if p not in self._buffers}
            self.store.save(saved, removed=[path])
        return True

    def _same_contents(
        self, path: str, old: FileRecord, size: int, mtime_ns: int, saves: bool
    ) -> bool:
        """An update whose contents the record already has (an editor opening a file, or
        saving the buffer it had sent): at most the size and mtime, or the saved state,
        change."""
        if not saves:
            return False
        with self._outline_lock:
            buffered = path in self._buffers
            outline = self._buffers.pop(path, None)
            if outline is not None:
                self._remember(path, old.digest, outline)
        if buffered or (old.size, old.mtime_ns) != (size, mtime_ns):
            record = self.records[path] = replace(old, size=size, mtime_ns=mtime_ns)
            outlines = [(path, old.digest, outline)] if outline is not None else []
            self.store.save({path: record}, outlines=outlines)
        return False

    def _apply(self, path: str, record: FileRecord | None) -> set[str] | None:
        """Put `record` in place of the record of `path` (None: remove it), in the records,
        the directory lists and the resolver's tables. Returns the files to resolve again
        (or `Everything`)."""
        old = self.records.get(path)
        resolver = self._resolver_for_updates()
        directory = _directory(path)
        if record is None:
            if old is None:
                return set()
            del self.records[path]
            self.edits += 1  # after the change: a memo made before it counts one less
            listing = self._by_directory.get(directory, [])
            with contextlib.suppress(ValueError):
                listing.remove(path)
            if not listing:
                self._by_directory.pop(directory, None)
            importers = self.graph.imported_by(path)
            self.graph.remove(path)
            return _union(resolver.file_removed(path, old), importers)
        self.records[path] = record
        self.edits += 1
        if old is None:
            bisect.insort(self._by_directory.setdefault(directory, []), path)
            return _union(resolver.file_added(path), {path})
        affected = _union(resolver.file_changed(path, old), {path})
        reexports = path.endswith("__init__.py") and record.imports != old.imports
        if affected is not None and (reexports or record.package != old.package):
            affected |= self.graph.imported_by(path)
        return affected

    def _resolve(self, paths: Collection[str] | None) -> dict[str, FileRecord]:
        """Resolve the imports of `paths` (None: of every file) again and update the graph.
        Returns the records whose dependencies changed."""
        if paths is not Everything and not paths:
            return {}
        resolver = self._resolver_for_updates()
        if paths is Everything:
            self.graph = DependencyGraph()
            paths = list(self.records)
        changed = {}
        for path in paths:
            record = self.records.get(path)
            if record is None:
                continue
            depends_on = resolver.resolve(path)
            if depends_on != record.depends_on:
                record = self.records[path] = replace(record, depends_on=depends_on)
                changed[path] = record
            self.graph.set_imports(path, depends_on)
        self.edits += 1  # the graph changed: memos of it made before are void
        return changed

    def _resolver_for_updates(self) -> ImportResolver:
        if self._resolver is None:
            self._resolver = ImportResolver(self.records, read_text_under(self.root))
        return self._resolver

    def _under_root(self, path: Path) -> str | None:
        """`path` relative to the root, in forward slashes, if it lies under it (the
        directory's links resolved, the file's own name kept: the scan rules judge links)."""
        absolute = Path(os.path.abspath(path))
        for candidate in (absolute, Path(os.path.realpath(absolute.parent)) / absolute.name):
            with contextlib.suppress(ValueError):
                relative = candidate.relative_to(self.root).as_posix()
                return relative if relative != "." else None
        return None

    def _disk_digest(self, path: str) -> str | None:
        read = _read_with_stat(self.root / path)
        return digest(read[0]) if read is not None else None

    # ------------------------------------------------------------------ queries

    def outlines_in_memory(self) -> int:
        """Outlines in the in-memory LRU and of editor buffers."""
        return len(self._outlines) + len(self._buffers)

    def outline(self, path: str) -> Outline | None:
        """The outline of `path`, or None for a file without one or not in the index.

        Callers use this, never `FileRecord.outline`: outlines are loaded lazily (from the
        editor's unsaved buffer, the in-memory LRU, the store, or made from the file)."""
        record = self.records.get(path)
        if record is None or record.language is None or not supported(record.language):
            return None
        if not runs_grammar(record.language):
            return Outline(record.language)  # html, json, ...: nothing to parse, nothing to load
        with self._outline_lock:
            if path in self._buffers:
                return self._buffers[path]
            cached = self._outlines.get(path)
            if cached is not None and cached[0] == record.digest:
                self._outlines.move_to_end(path)
                return cached[1] if cached[1] is not _NO_OUTLINE else None
            outline = self.store.load_outline(path, record.digest)
            if outline is None:
                data = _read(str(self.root / path))
                made_from = digest(data)
                outline = self._outline_of(data, record.language)
                if outline is not None and made_from == record.digest:
                    self._save_later(path, made_from, outline)
                if made_from != record.digest:
                    return outline  # the file changed since it was indexed: not cached
            self._remember(path, record.digest, outline)
            return outline

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
        """Save the outlines made on demand and let go of the store and the worker process.
        The records, graph and cached outlines stay readable."""
        with self._outline_lock:
            self._closed = True
            self._flush_outlines()
            if self._worker is not None:
                self._worker.shutdown(wait=True, cancel_futures=True)
                self._worker = None
        self.store.close()

    # ------------------------------------------------------------------ outlines

    def _outline_of(
        self,
        data: bytes,
        language: str | None,
        parsed: Callable[[str], Tree | None] | None = None,
    ) -> Outline | None:
        """The outline of `data`: here for a trusted grammar (from the editor's tree where
        `parsed` has one), else in a worker process."""
        if language is None:
            return None
        if trusted(language):
            return parse_outline(data, language, parsed(language) if parsed else None)
        with self._outline_lock:  # one worker process, whichever thread asks
            for _ in range(2):  # a worker that died (of an earlier file) is started again once
                if self._closed:
                    return None  # no worker process is started after close
                if self._worker is None:
                    self._worker = ProcessPoolExecutor(1, mp_context=_SPAWN)
                try:
                    return self._worker.submit(parse_outline, data, language).result()
                except BrokenProcessPool:
                    self._worker.shutdown(wait=False)
                    self._worker = None
        log.warning("the %s grammar crashed on a file; it has no outline", language)
        return None

    def _known_outline(self, path: str, old: FileRecord | None) -> Outline | None:
        """The outline `path` had, if it is at hand without making it."""
        if old is None:
            return None
        with self._outline_lock:
            if path in self._buffers:
                return self._buffers[path]
            cached = self._outlines.get(path)
            if cached is not None and cached[0] == old.digest:
                return cached[1] if cached[1] is not _NO_OUTLINE else None
        return self.store.load_outline(path, old.digest)

    def _remember(self, path: str, made_from: str, outline: Outline | None) -> None:
        self._outlines[path] = (made_from, outline if outline is not None else _NO_OUTLINE)
        self._outlines.move_to_end(path)
        while len(self._outlines) > OUTLINE_CACHE_FILES:
            self._outlines.popitem(last=False)

    def _save_later(self, path: str, made_from: str, outline: Outline) -> None:
        self._unsaved_outlines.append((path, made_from, outline))
        if len(self._unsaved_outlines) >= OUTLINE_SAVE_BATCH:
            self._flush_outlines()

    def _flush_outlines(self) -> None:
        if self._unsaved_outlines:
            self.store.save({}, outlines=self._unsaved_outlines)
            self._unsaved_outlines = []


def _union(affected: set[str] | None, more: Iterable[str] | None) -> set[str] | None:
    if affected is None or more is None:
        return Everything
    affected.update(more)
    return affected


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection while a build makes ~10^5 long-lived objects, and none of
    them looked at again afterwards: they are frozen (moved out of the collected
    generations). Records hold no reference cycles, so reference counting still frees the
    ones that are replaced; a collection walking them all would take ~0.1 s, at once and
    again each time they age into an older generation."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        memory.freeze(collect=False)
        if enabled:
            gc.enable()


# --------------------------------------------------------------- worker processes


def _in_workers(jobs: list[Job]) -> Iterator[Facts]:
    """Index in spawned workers, chunk by chunk; when a worker dies, redo the rest of the
    broken chunk one file at a time to find the file that killed it. A build that stops
    early (its progress callback raised) cancels the chunks not started."""
    workers = max(1, min(os.cpu_count() or 1, 8))
    chunks = [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    done = 0
    while done < len(chunks):
        pool = ProcessPoolExecutor(workers, mp_context=_SPAWN)
        try:
            futures = [pool.submit(_index_many, chunk) for chunk in chunks[done:]]
            for future in futures:
                yield from future.result()
                done += 1
        except BrokenProcessPool:
            pass
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if done < len(chunks):
            yield from _one_by_one(chunks[done])
            done += 1


def _one_by_one(jobs: list[Job]) -> Iterator[Facts]:
    position = 0
    while position < len(jobs):
        with ProcessPoolExecutor(1, mp_context=_SPAWN) as pool:
            try:
                for job in jobs[position:]:
                    yield pool.submit(_index_file, job).result()
                    position += 1
            except BrokenProcessPool:
                path, language, _ = jobs[position]
                log.warning(
                    "the %s grammar crashed on %s; indexed without an outline", language, path
                )
                yield _index_file((path, language, False))
                position += 1


def _index_many(jobs: list[Job]) -> list[Facts]:
    return [_index_file(job) for job in jobs]


def _index_file(job: Job) -> Facts:
    path, language, outline_now = job
    data = _read(path)
    fingerprint = digest(data)
    secrets = scan_file(data, path)
    if secrets[0] is not None:  # a file of credentials: it is left out whole
        return fingerprint, (), "", None, secrets
    outline = parse_outline(data, language) if outline_now and language else None
    if language == "python":
        return fingerprint, python_imports(data), "", outline, secrets
    imports, package = import_facts(language, outline)
    return fingerprint, imports, package, outline, secrets


def _digest_of(path: str) -> str:
    return digest(_read(path))


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        log.debug("cannot read %s: %s", path, exc)
        return b""


def _read_with_stat(path: Path) -> tuple[bytes, int, int] | None:
    """A file's contents with the size and mtime of what was read (fstat of the same
    descriptor), or None when it cannot be read."""
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            return file.read(), info.st_size, info.st_mtime_ns
    except OSError as exc:
        log.debug("cannot read %s: %s", path, exc)
        return None


def _directory(path: str) -> str:
    return path.rpartition("/")[0]
