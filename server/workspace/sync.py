"""Keeps the project cache in step with the editor and the disk.

Every event — a buffer opened, edited, saved or closed, a file created, changed or
deleted on disk — comes down to one question about one path: what is its content now?
An open buffer wins over the disk (its unsaved outline is never persisted); otherwise the
disk decides, and a file gone from the disk leaves the index. So events are not replayed:
each marks its path stale, and a refresh reads the current truth. Buffer edits are
debounced, so typing re-parses a file at most every `debounce_s`.

Events that arrive while the start-up index is being built are held and applied once it
is ready: the index is only ever touched from the event loop after that.

A refresh runs on the event loop, so a keystroke that comes meanwhile waits for it. An open
document's outline is therefore made from its tree in `DocumentTrees`, re-parsed
incrementally (~1 ms after a key on a 100 KB file), not from a whole parse (~10 ms).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Tree

from cache.index import ProjectIndex
from server.completion.trees import DocumentTrees
from server.workspace.project import ProjectCache

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
"""How long a buffer must be still before its outline is rebuilt."""


class WorkspaceSync:
    def __init__(
        self,
        project: ProjectCache,
        debounce_s: float = DEBOUNCE_S,
        trees: DocumentTrees | None = None,
    ) -> None:
        self.project = project
        self.debounce_s = debounce_s
        self.buffers = project.buffers
        self.trees = trees
        self._uris: dict[Path, str] = {}
        """Each open buffer's document URI: its tree in `trees`, if one is kept (a
        document too large or private to parse has none), goes by it."""
        self._timers: dict[Path, asyncio.TimerHandle] = {}
        self._held: set[Path] = set()
        self._waiting: asyncio.Task[None] | None = None
        self._gone_roots: set[Path] = set()

    def opened(self, path: Path, text: str, uri: str) -> None:
        self.buffers[path] = text
        self._uris[path] = uri
        self._stale(path)
        self.project.activate(path, prepare=True)

    def changed(self, path: Path, text: str, uri: str) -> None:
        self.buffers[path] = text
        self._uris[path] = uri
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._timers[path] = loop.call_later(self.debounce_s, self._stale, path)

    def saved(self, path: Path) -> None:
        self._stale(path)

    def closed(self, path: Path) -> None:
        """The buffer is gone: the disk decides again (unsaved edits are dropped)."""
        self.buffers.pop(path, None)
        self._uris.pop(path, None)
        self._stale(path)
        place = self.project.locate(path)
        if place is not None:
            place.root.builder.forget(place.relative)

    def disk_changed(self, paths: list[Path]) -> None:
        """Files created, changed or deleted outside the editor (watched-file events)."""
        for path in paths:
            self._stale(path)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._waiting is not None:
            self._waiting.cancel()

    def _stale(self, path: Path) -> None:
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        if self.project.ready.is_set():
            self.refresh(path)
            return
        self._held.add(path)
        if self._waiting is None:
            self._waiting = asyncio.get_running_loop().create_task(self._apply_held())

    async def _apply_held(self) -> None:
        await self.project.ready.wait()
        held, self._held = sorted(self._held), set()
        for path in held:
            self.refresh(path)
        if held:
            log.debug("applied %d file changes held during indexing", len(held))

    def refresh(self, path: Path) -> None:
        """Bring the index's view of `path` up to date with the buffer or the disk."""
        place = self.project.locate(path)
        if place is None:
            return
        self._check_root(place.root.path)
        try:
            self._refresh_in(place.root.index, path, place.relative)
        except Exception:  # one bad file must not stop the others
            log.exception("could not update the cache for %s", path)

    def _check_root(self, root: Path) -> None:
        """Say once that a workspace folder is gone from the disk (renamed or deleted), and
        again if it comes back."""
        if root.is_dir():
            if root in self._gone_roots:
                self._gone_roots.discard(root)
                log.info("workspace folder %s is back", root)
        elif root not in self._gone_roots:
            self._gone_roots.add(root)
            log.warning(
                "workspace folder %s is gone from the disk (renamed or deleted?): its files "
                "leave the index as the editor reports them; open documents still get "
                "completions",
                root,
            )

    def _refresh_in(self, index: ProjectIndex, path: Path, relative: str) -> None:
        exists = path.exists()
        if path.is_dir() or (not exists and relative not in index.records):
            # VS Code reports a deleted or moved folder, not the files in it
            self._refresh_folder(index, relative)
            return
        if exists and index.relative_path(path) is None:
            self._forget(index, relative)  # the scan rules exclude it (ignored, too big, ...)
            return
        buffer = self.buffers.get(path)
        started = time.perf_counter()
        tree = _TreeOf(self.trees, self._uris.get(path), buffer)
        if buffer is None:
            changed = index.update_file(relative)  # gone from the disk: removed
            source = "disk"
        else:
            data = buffer.encode("utf-8", "surrogatepass")
            persist = _same_as_disk(path, data)
            changed = index.update_file(
                relative, None if persist else data, persist=persist, parsed=tree
            )
            source = "disk" if persist else "unsaved buffer"
        record = index.records.get(relative)
        if changed and record is None:
            log.debug("cache: %s removed", relative)
        elif changed and record is not None:
            log.debug(
                "cache: %s updated from the %s; imports: %s (%.1f ms%s)",
                relative,
                source,
                ", ".join(record.depends_on) or "none in the project",
                (time.perf_counter() - started) * 1000,
                ", outlined from the open document's tree" if tree.used else "",
            )

    def _refresh_folder(self, index: ProjectIndex, folder: str) -> None:
        prefix = folder.rstrip("/") + "/"
        for relative in [p for p in index.records if p.startswith(prefix)]:
            self.refresh(index.root / relative)

    def _forget(self, index: ProjectIndex, relative: str) -> None:
        if index.remove_file(relative):
            log.debug("cache: %s removed", relative)


def _same_as_disk(path: Path, data: bytes) -> bool:
    """Whether the file on disk holds exactly `data` (a saved buffer)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


@dataclass
class _TreeOf:
    """For the index: the open document's tree of `buffer` in a language, where `trees`
    keeps one (the same bytes when the buffer is saved: `_same_as_disk` compared them)."""

    trees: DocumentTrees | None
    uri: str | None
    buffer: str | None
    used: bool = False

    def __call__(self, language: str) -> Tree | None:
        if self.trees is None or self.uri is None or self.buffer is None:
            return None
        tree = self.trees.kept(self.uri, self.buffer, language)
        self.used = tree is not None
        return tree
