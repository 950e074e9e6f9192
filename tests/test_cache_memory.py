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


def test_objects_alive_stay_alive_and_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "FULL_COLLECTION_EVERY_S", 0.0)
    kept = Node()
    memory.freeze()
    assert gc.get_freeze_count() > 0
    assert kept.itself is kept
