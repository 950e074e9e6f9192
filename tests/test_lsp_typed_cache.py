"""End to end: typing what a shown suggestion predicted is answered by the server alone,
and anything that changes the suggestion's premise goes to the model again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from conftest import CONFIG, fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, partial_change, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient, fixture

SOURCE = """from inventory.models import Item


def report(warehouse):
    net = █
    return net


def other():
    return 1
"""
SUGGESTION = "total_value(warehouse)"
MODEL = "  # the model"
"""The model's answer elsewhere: a comment parses after anything complete."""


class Editor:
    """One open document, edited one keystroke at a time as an editor reports it."""

    def __init__(self, client: LanguageClient, path: Path, text: str) -> None:
        self.client = client
        self.text, self.position = cursor_at(text)
        self.uri = open_document(client, path, self.text)
        self.version = 1

    def _send(self, start: types.Position, end: types.Position, text: str) -> None:
        self.version += 1
        self.client.text_document_did_change(
            partial_change(self.uri, self.version, start, end, text)
        )

    def type(self, chars: str) -> None:
        """Type at the cursor, one character per didChange."""
        for char in chars:
            self._send(self.position, self.position, char)
            if char == "\n":
                self.position = types.Position(line=self.position.line + 1, character=0)
            else:
                self.position = types.Position(
                    line=self.position.line, character=self.position.character + 1
                )

    def backspace(self, count: int = 1) -> None:
        for _ in range(count):
            start = types.Position(line=self.position.line, character=self.position.character - 1)
            self._send(start, self.position, "")
            self.position = start

    def insert_line(self, line: int, text: str) -> None:
        """Insert a whole line elsewhere; the cursor moves down if it is below."""
        here = types.Position(line=line, character=0)
        self._send(here, here, text + "\n")
        if line <= self.position.line:
            self.position = types.Position(
                line=self.position.line + 1, character=self.position.character
            )

    async def ask(self) -> str:
        return await suggestion(self.client, self.uri, self.position)


@fixture(config=CONFIG)
async def debug(
    lsp_client: LanguageClient, fake: FakeBackend, workspace: Path
) -> AsyncIterator[None]:
    """A VS Code session logging at debug level, backed by the fake model."""
    settings = fast_settings(fake.url)
    settings["log"] = {"level": "debug"}
    await start_session(lsp_client, "vscode", workspace, settings)
    yield
    await lsp_client.shutdown_session()


async def shown(client: LanguageClient, fake: FakeBackend, workspace: Path) -> Editor:
    fake.script([{"match": "net = <|fim_suffix|>", "text": SUGGESTION + "\n"}], default_text=MODEL)
    editor = Editor(client, workspace / "inventory" / "report.py", SOURCE)
    assert await editor.ask() == SUGGESTION
    assert len(fake.events()) == 1
    return editor


async def test_typing_the_suggestion_is_answered_without_the_model(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    editor = await shown(debug, fake, workspace)
    for typed in range(1, 4):
        editor.type(SUGGESTION[typed - 1])
        assert await editor.ask() == SUGGESTION[typed:]
    assert len(fake.events()) == 1
    assert "served from the suggestion cache" in logs(debug)


async def test_a_character_off_the_suggestion_asks_the_model(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    editor = await shown(debug, fake, workspace)
    editor.type("tx")
    assert await editor.ask() == MODEL
    assert len(fake.events()) == 2


async def test_an_edit_next_to_the_cursor_invalidates_a_far_one_does_not(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    editor = await shown(debug, fake, workspace)
    editor.type("to")
    editor.insert_line(0, "import os")  # far above: the premise holds
    assert await editor.ask() == SUGGESTION[2:]
    assert len(fake.events()) == 1
    editor.insert_line(editor.position.line + 1, "    log(net)")  # the next line
    assert await editor.ask() == MODEL
    assert len(fake.events()) == 2


async def test_typing_the_whole_suggestion_leaves_nothing_stale(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    editor = await shown(debug, fake, workspace)
    editor.type(SUGGESTION)
    assert await editor.ask() == MODEL  # the model's answer, not a rest of the old one
    assert len(fake.events()) == 2


async def test_deleting_back_serves_the_earlier_suggestion_and_cancels_the_later(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    editor = await shown(debug, fake, workspace)
    fake.script([{"match": "net = x<|fim_suffix|>", "text": "y_slow\n", "first_delay_ms": 2000}])
    editor.type("x")
    slow = asyncio.ensure_future(editor.ask())
    await asyncio.to_thread(fake.wait_for, lambda events: len(events) == 2)
    editor.backspace()
    assert await editor.ask() == SUGGESTION
    assert await slow == ""  # superseded by the answer from the cache
    await asyncio.to_thread(fake.wait_for, lambda events: events[-1]["closed_by"] == "client")
    assert len(fake.events()) == 2


async def test_a_block_suggestion_continues_through_its_newline(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    body = "\n    return [i for i in items if i.quantity == 0]"
    fake.script([{"match": "def empty", "text": body + "\n\n\ndef other():\n"}])
    editor = Editor(debug, workspace / "empty.py", "def empty(items):█\n")
    assert await editor.ask() == body
    editor.type("\n    ret")
    assert await editor.ask() == "urn [i for i in items if i.quantity == 0]"
    assert len(fake.events()) == 1


async def test_the_setting_turns_reuse_off(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    options = fast_settings(fake.url, reuseTypedSuggestions=False)
    await start_session(fresh, "vscode", workspace, options)
    editor = await shown(fresh, fake, workspace)
    editor.type("tot")
    assert await editor.ask() == MODEL
    assert len(fake.events()) == 2


BLOCK_AFTER = "total_value(warehouse)\n    net += tax(net)\n    log(net)\n    return net\n"
"""The model's answer at `net = █`: the line, then the lines that follow it in the block
(its stream goes on after the one-line suggestion is shown)."""


async def test_accepting_a_line_is_followed_at_once_by_the_next(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([{"match": "net = <|fim_suffix|>", "text": BLOCK_AFTER}], default_text=MODEL)
    editor = Editor(debug, workspace / "inventory" / "report.py", SOURCE)
    assert await editor.ask() == SUGGESTION
    await wait_for_log(debug, "more lines of the suggestion, continued in the background")
    assert fake.events()[0]["completed"]  # the stream ran to the end of the block

    editor.type(SUGGESTION[:5])  # typing through the line: the rest of that line only
    assert await editor.ask() == SUGGESTION[5:]
    editor.type(SUGGESTION[5:])  # at its end: the next line
    assert await editor.ask() == "\n    net += tax(net)"
    editor.type("\n    ")  # Tab, Enter, and the editor's indentation: the rest of the block
    assert await editor.ask() == "net += tax(net)\n    log(net)"
    assert len(fake.events()) == 1


async def test_a_keystroke_off_the_suggestion_stops_the_background_stream(
    debug: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    slow = {"match": "net = <|fim_suffix|>", "text": BLOCK_AFTER, "chunk_chars": 6}
    fake.script([{**slow, "chunk_delay_ms": 150}], default_text=MODEL)
    editor = Editor(debug, workspace / "inventory" / "report.py", SOURCE)
    assert await editor.ask() == SUGGESTION
    editor.type("x")  # not what was suggested: a new request, and the old stream ends
    assert await editor.ask() == MODEL
    first = (await fake.wait_for_async(lambda events: events[0]["closed_by"] is not None))[0]
    assert first["closed_by"] == "client" and not first["completed"]


async def test_the_suggestion_after_an_accepted_block_is_ready_at_once(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A block suggestion is followed by one speculative request for the text as it will
    be once the block is accepted; accepting it (one edit, as Tab makes) is answered from
    that, with no new model request."""
    settings = fast_settings(fake.url, prefetch=True)
    settings["log"] = {"level": "debug"}
    await start_session(fresh, "vscode", workspace, settings)
    block = "total = 0\n    for item in items:\n        total += item.price"
    after = "\n    return total"
    fake.script(
        [
            {"match": "items):\n    <|fim_suffix|>", "text": block + "\n\n"},
            {"match": "item.price<|fim_suffix|>", "text": after + "\n"},
        ]
    )
    editor = Editor(fresh, workspace / "pricing.py", "def price(items):\n    █\n")
    assert await editor.ask() == block
    await wait_for_log(fresh, "the suggestion after this one is ready (prefetched)")
    assert len(fake.events()) == 2

    here = editor.position
    editor._send(here, here, block)  # Tab: the whole block in one edit
    editor.position = types.Position(
        line=here.line + 2, character=len("        total += item.price")
    )
    assert await editor.ask() == after
    assert len(fake.events()) == 2


async def test_a_line_that_does_not_end_is_answered_at_the_line_token_cap(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The request asks for a block's worth of tokens (for the background continuation),
    but a line that has not ended after `maxTokens` tokens is answered as it is, as it
    was before, and its stream closed."""
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, maxTokens=5))
    long = "a_very_long_name_that_goes_on_and_on"
    fake.script([{"text": long, "chunk_chars": 2, "chunk_delay_ms": 40}])
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "long.py", text)
    assert await suggestion(fresh, uri, position) == "a_very_lon"  # five chunks of two
    (event,) = await fake.wait_for_async(lambda events: events[0]["closed_by"] is not None)
    assert event["closed_by"] == "client" and event["max_tokens"] == 128
