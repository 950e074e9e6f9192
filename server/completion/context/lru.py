"""A small LRU cache (`_Lru`), bounded by entries: what the builder and the modules of
this package memoise (outlines arranged for lookups, rendered snippets, token sets,
counts, chunk indexes) is kept in one, so a long session's memory stays bounded."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """No lock: each `OrderedDict` call is atomic, and a key evicted between the two
        by another thread's `put` is simply not moved (a build makes ~100 lookups)."""
        value = self._items.get(key)
        if value is not None:
            try:  # noqa: SIM105 (a `with suppress` costs more than the lookup)
                self._items.move_to_end(key)
            except KeyError:
                pass
        return value

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
