"""The workspace's project cache, built off the event loop while the editor works.

Indexing starts at `initialized` and reports work-done progress; requests are answered
meanwhile with whatever is ready.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from cache.index import IndexSummary, ProjectIndex
from cache.queue import FileQueue

log = logging.getLogger(__name__)

Report = Callable[[str, int], None]
"""Progress for the editor: a message and a percentage."""


class ProjectCache:
    """One ProjectIndex per workspace root, and its queue of files kept warm."""

    def __init__(self) -> None:
        self.indexes: dict[Path, ProjectIndex] = {}
        self.queues: dict[Path, FileQueue] = {}
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
            self.indexes[root] = index
            self.queues[root] = FileQueue(index)
            log.info(
                "indexed %s: %d files, %d import edges, %d outlined, %d unchanged, in %.2f s",
                root,
                summary.files,
                summary.edges,
                summary.outlined,
                summary.reused,
                summary.seconds,
            )
        self.ready.set()
        if self.active is not None:
            self.activate(self.active)

    def locate(self, path: Path) -> tuple[ProjectIndex, FileQueue, str] | None:
        """The index and queue of the root holding `path`, and its path relative to it."""
        for candidate in (path, path.resolve()):
            for root, index in self.indexes.items():
                if candidate.is_relative_to(index.root):
                    relative = candidate.relative_to(index.root).as_posix()
                    return index, self.queues[root], relative
        return None

    def activate(self, path: Path) -> None:
        """Make `path` the active file: its root's queue is re-ranked around it."""
        self.active = path
        found = self.locate(path)
        if found is not None:
            _, queue, relative = found
            queue.activate(relative)

    def stop(self) -> None:
        """Make a build in progress give up at its next progress report."""
        self._stopping.set()

    def close(self) -> None:
        for index in self.indexes.values():
            index.close()


class IndexingStopped(Exception):
    pass


def _build(
    root: Path, cache_dir: Path | None, progress: Callable[[int, int], None]
) -> tuple[ProjectIndex, IndexSummary]:
    index = ProjectIndex(root, cache_dir=cache_dir)
    return index, index.build(progress)
