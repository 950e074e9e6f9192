"""Backends that misbehave beyond a dropped stream: one that streams forever, one that
sends a 100 MB event, one that sends bytes that are not UTF-8, and a proxy's HTML error
page sent as a 200 stream. Each costs bounded time and memory, says what happened in the
log, and the next request works."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, inline_items, open_document, suggestion, wait_for_log
from pytest_lsp import LanguageClient

MISBEHAVIOURS = {
    "endless": "inline completion in",  # cut at the line's token cap, as any long line
    "huge_line": "an event longer than 1 MB",
    "bad_utf8": "corrupt text in the stream",
    "html_200": "not an SSE data line",
}


@pytest.mark.parametrize("behaviour", sorted(MISBEHAVIOURS))
async def test_a_misbehaving_backend_costs_bounded_time_and_the_next_request_works(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, behaviour: str
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    fake.script(
        [
            {"match": "broken = ", "text": "aaaa", "behaviour": behaviour, "chunk_delay_ms": 5},
            {"match": "fine = ", "text": "works()\n"},
        ]
    )
    text, position = cursor_at("broken = █\n")
    uri = open_document(fresh, workspace / "bad.py", text)

    started = time.monotonic()
    items = await inline_items(fresh, uri, position)
    assert time.monotonic() - started < 5  # the total timeout is 3 s
    assert all("x" * 1000 not in str(item.insert_text) for item in items)
    await wait_for_log(fresh, MISBEHAVIOURS[behaviour])

    text, position = cursor_at("fine = █\n")
    uri = open_document(fresh, workspace / "fine.py", text)
    assert await suggestion(fresh, uri, position) == "works()"


async def test_a_backend_restarted_with_another_model_is_asked_again(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A shared vLLM restarted with another model answers 404 for the one the server
    learned at start; that keystroke fails with the backend's message, and the next asks
    /v1/models again and gets the new model's suggestion (no server restart)."""
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    fake.script([], default_text="first()\n")
    text, position = cursor_at("value = █\n")
    uri = open_document(fresh, workspace / "swap.py", text)
    assert await suggestion(fresh, uri, position) == "first()"

    fake.script([], default_text="second()\n", serve_model="another-coder")
    text, position = cursor_at("other = █\n")
    uri = open_document(fresh, workspace / "swapped.py", text)
    assert await inline_items(fresh, uri, position) == []
    await wait_for_log(fresh, "no longer serves fake-coder")
    assert await suggestion(fresh, uri, position) == "second()"

    first, refused, answered = fake.events()
    assert first["model"] == refused["model"] == "fake-coder" and refused["status"] == 404
    assert answered["model"] == "another-coder"
