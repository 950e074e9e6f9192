"""Prefetches back off while their suggestions go unused: a block suggestion's prefetch
pays only when the block is accepted, and for a user who seldom accepts it is load on a
shared GPU for nothing."""

from __future__ import annotations

from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import logs, open_document, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.completion.prefetch_use import PROBE_EVERY, WINDOW, PrefetchUse


def unused(use: PrefetchUse, count: int) -> None:
    for n in range(count):
        use.ready("a.py", f"suggestion {n}")
        use.moved_on("a.py")


def test_after_a_window_of_unused_prefetches_only_probes_are_sent() -> None:
    use = PrefetchUse()
    unused(use, WINDOW - 1)
    assert use.wanted() and not use.backing_off
    unused(use, 1)
    assert use.backing_off and use.state == "probing"
    asked = [use.wanted() for _ in range(3 * PROBE_EVERY)]
    assert asked.count(True) == 3 and asked[PROBE_EVERY - 1]


def test_used_prefetches_bring_them_back() -> None:
    use = PrefetchUse()
    unused(use, WINDOW)
    for _ in range(2):  # two probes accepted: 2 of the last 10 used
        use.ready("a.py", "total = 0\n")
        use.served("a.py", "total = 0\n", typed=0)
    assert not use.backing_off and use.wanted()


def test_a_prefetch_counts_as_used_only_when_its_own_suggestion_is_served() -> None:
    use = PrefetchUse()
    for _ in range(WINDOW):
        use.ready("a.py", "return total")
        use.served("a.py", "total", typed=3)  # another suggestion's rest
        use.served("b.py", "return total", typed=0)  # another document
        use.moved_on("a.py")
    assert use.backing_off
    for _ in range(2):
        use.ready("a.py", "return total")
        use.served("a.py", "total", typed=7)  # typed into this one
        use.moved_on("a.py")  # nothing waits any more
    assert not use.backing_off


async def test_block_suggestions_nobody_accepts_stop_prefetching_but_for_probes(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Fifteen block suggestions, none accepted: the first ten are each followed by a
    prefetch; then the server backs off, saying so, and of the next five only the fifth
    is followed by one."""
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, prefetch=True))
    fake.script([{"match": "", "text": "total = 0\n    return total\n\n"}])
    asks = WINDOW + PROBE_EVERY
    text = "".join(f"def f{k}(items):\n    \n\n\n" for k in range(asks))
    uri = open_document(fresh, workspace / "blocks.py", text)

    def prefetches() -> int:
        return sum(1 for event in fake.events() if event["body"].get("priority") == 2)

    for k in range(asks):
        position = types.Position(line=4 * k + 1, character=4)
        assert await suggestion(fresh, uri, position) == "total = 0\n    return total"
        expected = k + 1 if k < WINDOW else WINDOW + (k + 1 - WINDOW) // PROBE_EVERY
        # every exchange over: read to its end, or closed by the server once it had the
        # block (which on a loaded machine can come before the fake has sent the rest)
        await fake.wait_for_async(
            lambda events, n=expected: (
                prefetches() == n and all(e["closed_by"] is not None for e in events)
            )
        )

    assert prefetches() == WINDOW + 1
    assert "prefetches back off: 0 of the last 10 were used" in logs(fresh)
