"""The files kept warm for the active file: a ranked, bounded queue with preloaded text.

Order (DESIGN.md): the active file's directory, its direct dependencies, second-hop
dependencies and importers (`ProjectIndex.related`), then recently used files. Bounded in
files and bytes; the text of every queued file is held in memory so that building a prompt
never waits on the disk. Re-ranked when the active file changes.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from cache.index import ProjectIndex

log = logging.getLogger(__name__)


class FileQueue:
    def __init__(
        self,
        index: ProjectIndex,
        max_files: int = 64,
        max_bytes: int = 4_000_000,
        max_recent: int = 32,
    ) -> None:
        self.index = index
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.max_recent = max_recent
        self.recent: OrderedDict[str, None] = OrderedDict()
        self.order: list[str] = []
        self.texts: dict[str, str] = {}

    def activate(self, path: str) -> list[str]:
        """Make `path` the active file: re-rank, trim to the bounds, preload; the new order."""
        self.recent.pop(path, None)
        self.recent[path] = None
        while len(self.recent) > self.max_recent:
            self.recent.popitem(last=False)
        ranked = dict.fromkeys(self.index.related(path, limit=self.max_files))
        ranked.update(dict.fromkeys(p for p in reversed(self.recent) if p != path))
        self.order, total = [], 0
        for candidate in ranked:
            record = self.index.records.get(candidate)
            if record is None or total + record.size > self.max_bytes:
                continue
            if len(self.order) == self.max_files:
                break
            self.order.append(candidate)
            total += record.size
        self._preload()
        return list(self.order)

    def _preload(self) -> None:
        for gone in set(self.texts) - set(self.order):
            del self.texts[gone]
        for path in self.order:
            if path not in self.texts:
                try:
                    self.texts[path] = (self.index.root / path).read_text(errors="replace")
                except OSError as exc:
                    log.debug("cannot preload %s: %s", path, exc)
