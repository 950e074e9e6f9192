"""The workspace's project cache, built off the event loop while the editor works.

Indexing starts at `initialized` and reports work-done progress; requests are answered
meanwhile with whatever is ready. Each workspace root gets its index, the queue of files
kept warm for the active file, and the context builder that reads both.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from cache import memory
from cache.index import IndexSummary, ProjectIndex
from cache.queue import FileQueue
from server.completion import contracts
from server.completion.context import ContextBuilder

log = logging.getLogger(__name__)

Report = Callable[[str, int], None]
"""Progress for the editor: a message and a percentage."""


@dataclass(frozen=True)
class Root:
    """One indexed workspace root and what is kept for it."""

    path: Path
    index: ProjectIndex
    queue: FileQueue
    builder: ContextBuilder


@dataclass(frozen=True)
class Place:
    """Where a file lives: its root, and its path relative to it (forward slashes)."""

    root: Root
    relative: str


class BufferFirst(Mapping[str, str]):
    """A root's file texts for the context builder: an open buffer's text (unsaved edits
    win), else the queue's preloaded copy of the disk."""

    def __init__(self, root: Path, buffers: Mapping[Path, str], queue: FileQueue) -> None:
        self.root, self.buffers, self.queue = root, buffers, queue

    def __getitem__(self, relative: str) -> str:
        buffer = self.buffers.get(self.root / relative)
        return buffer if buffer is not None else self.queue.texts[relative]

    def __contains__(self, relative: object) -> bool:
        if not isinstance(relative, str):
            return False
        return self.root / relative in self.buffers or relative in self.queue.texts

    def __iter__(self) -> Iterator[str]:
        return iter(self.queue.texts)

    def __len__(self) -> int:
        return len(self.queue.texts)


def refused_contract(path: Path, text: str, root: Path) -> str | None:
    """The first `$ref` of a workspace's OpenAPI document that the editor does not follow
    (outside `root`, or a URL), as one line; None when it follows them all."""
    from server.aiapi.local_refs import refused_references, workspace_policy

    policy = workspace_policy(root)
    refused = refused_references(path, policy, text)
    if not refused:
        return None
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    return refused[0].message(policy) + more


class ProjectCache:
    """Every workspace root's index, queue and context builder, and the open buffers."""

    def __init__(self) -> None:
        contracts.check_references_with(refused_contract)
        self.roots: dict[Path, Root] = {}
        self.buffers: dict[Path, str] = {}
        """The text of every open document with a local path, by absolute path."""
        self.active: Path | None = None
        self.ready = asyncio.Event()
        self._stopping = threading.Event()

    async def build(self, roots: list[Path], cache_dir: Path | None, report: Report) -> None:
        """Index every root in a worker thread; one summary log line per root."""
        loop = asyncio.get_running_loop()
        for number, root in enumerate(roots, 1):
            prefix = f"{root.name} ({number}/{len(roots)})" if len(roots) > 1 else root.name

            def progress(done: int, total: int, prefix: str = prefix) -> None:
                if self._stopping.is_set():  # shutting down: end the worker thread early
                    raise IndexingStopped
                percent = 100 * done // max(total, 1)
                loop.call_soon_threadsafe(report, f"{prefix}: {done}/{total} files", percent)

            try:
                index, summary = await asyncio.to_thread(_build, root, cache_dir, progress)
            except IndexingStopped:
                return
            except Exception:
                log.exception("indexing %s failed; completions go on without it", root)
                continue
            queue = FileQueue(index)
            texts = BufferFirst(root, self.buffers, queue)
            builder = ContextBuilder(index, texts, queue.recent)
            self.roots[root] = Root(root, index, queue, builder)
            # OpenAPI documents are parsed now, in the indexing thread, not on a keystroke.
            await asyncio.to_thread(contracts.index_for(builder).refresh)
            log.info(
                "indexed %s: %d files, %d import edges, %d new or changed, %d unchanged, in %.2f s",
                root,
                summary.files,
                summary.edges,
                summary.outlined,
                summary.reused,
                summary.seconds,
            )
        memory.freeze(collect=False)  # the index's objects: keep collections from walking them
        self.ready.set()
        if self.active is not None:
            self.activate(self.active, prepare=True)

    @property
    def indexes(self) -> dict[Path, ProjectIndex]:
        return {path: root.index for path, root in self.roots.items()}

    def locate(self, path: Path) -> Place | None:
        """The indexed root holding `path`, and its path relative to that root. Called on
        every request, so the path is resolved (a syscall per component) only when it is
        not under a root as given."""
        return self._place(path) or self._place(path.resolve())

    def _place(self, path: Path) -> Place | None:
        for root in self.roots.values():
            for base in (root.path, root.index.root):
                if path.is_relative_to(base):
                    return Place(root, path.relative_to(base).as_posix())
        return None

    def activate(self, path: Path, prepare: bool = False) -> None:
        """Make `path` the active file: its root's queue is re-ranked around it, and with
        `prepare` the builder renders the related files' outlines ahead of the first
        request."""
        self.active = path
        place = self.locate(path)
        if place is not None:
            place.root.queue.activate(place.relative)
            if prepare:
                place.root.builder.prepare(place.relative)

    def stop(self) -> None:
        """Make a build in progress give up at its next progress report."""
        self._stopping.set()

    def close(self) -> None:
        for root in self.roots.values():
            root.index.close()


class IndexingStopped(Exception):
    pass


def _build(
    root: Path, cache_dir: Path | None, progress: Callable[[int, int], None]
) -> tuple[ProjectIndex, IndexSummary]:
    index = ProjectIndex(root, cache_dir=cache_dir)
    return index, index.build(progress)
