"""`cache.memory.freeze`: what a freeze caught alive and later died in a reference cycle
(a request's task, connection or exception) is collected by a later full collection."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from cache import memory


class Node:
    """An object in a reference cycle, as an asyncio task and its future are."""

    def __init__(self) -> None:
        self.itself = self


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_cyclic_garbage_frozen_alive_waits_for_the_next_full_collection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "FULL_COLLECTION_EVERY_S", 3600.0)
    in_flight = Node()
    alive = weakref.ref(in_flight)
    memory.freeze()  # a document opened while the request was in flight
    del in_flight  # the request ends
    memory.freeze()  # another document opened: a young collection cannot see it
    assert alive() is not None

    monkeypatch.setattr(memory, "FULL_COLLECTION_EVERY_S", 0.0)
    memory.freeze()  # the full collection is due
    assert alive() is None


def test_a_full_collection_freezes_what_is_alive_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the unfreeze and the full collection, what is alive goes back out of the
    collected generations, so the next collections do not walk the caches."""
    monkeypatch.setattr(memory, "FULL_COLLECTION_EVERY_S", 0.0)
    kept = Node()
    memory.freeze()
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # frozen: collections skip it
    assert kept.itself is kept
