"""End to end: a keystroke that types on at the cursor of a model request still running
joins that request instead of cancelling it and sending its own (`completion.joinInFlight`).

Under load a request takes longer than the gap between two keys, so without joining each
key cancels the request before it and none is answered; joined, the first request's answer
serves the later keys whose typed characters it predicted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, send_inline
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_cancel import (
    STALL,
    cancel,
    patient_settings,
    reply_of,
    texts,
    type_text,
)

from server.lsp.language_server import JOIN_WAIT_S

SLOW = {"match": "x = <|fim_suffix|>", "text": "compute_total(items)\n", "first_delay_ms": 400}
"""The first key's request: slower than the next key comes."""
AFTER_Z = {"match": "x = z<|fim_suffix|>", "text": "ero()\n"}


async def start(client: LanguageClient, fake: FakeBackend, workspace: Path, join: bool) -> None:
    settings = patient_settings(fake.url, join)
    settings["log"] = {"level": "debug"}
    await start_session(client, "vscode", workspace, settings)


async def next_key_while_the_first_runs(
    client: LanguageClient, fake: FakeBackend, workspace: Path, char: str
) -> tuple[asyncio.Future[object], asyncio.Future[object]]:
    """Ask at `x = `, and once the request reaches the fake, cancel it and type `char`
    (as VS Code does on a keystroke), then ask again: both replies' futures."""
    text, position = cursor_at("x = █\n")
    uri = open_document(client, workspace / "join.py", text)
    first = send_inline(client, uri, position, "inline-1")
    await fake.wait_for_async(lambda events: len(events) == 1)
    cancel(client, "inline-1")
    type_text(client, uri, position, char, version=2)
    second = send_inline(client, uri, types.Position(line=0, character=5), "inline-2")
    return first, second


async def test_a_key_that_types_the_running_suggestion_is_answered_by_it(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start(fresh, fake, workspace, join=True)
    fake.script([SLOW, AFTER_Z])
    _, second = await next_key_while_the_first_runs(fresh, fake, workspace, "c")

    assert texts(await reply_of(second)) == ["ompute_total(items)"]
    (event,) = fake.events()  # one request for both keys
    assert event["completed"]
    assert "from the running request it joined" in logs(fresh)


async def test_a_key_off_the_running_suggestion_sends_its_own_request(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start(fresh, fake, workspace, join=True)
    fake.script([SLOW, AFTER_Z])
    _, second = await next_key_while_the_first_runs(fresh, fake, workspace, "z")

    assert texts(await reply_of(second)) == ["ero()"]
    first, own = fake.events()
    assert first["completed"]  # joined, then found not to start with "z"
    assert own["received_at"] >= first["closed_at"]
    assert "join_wait" in logs(fresh)  # the time spent on the join shows in the timings


async def test_without_joining_the_next_key_cancels_the_running_request(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start(fresh, fake, workspace, join=False)
    fake.script([SLOW, {"match": "x = c<|fim_suffix|>", "text": "ompute_total(items)\n"}])
    _, second = await next_key_while_the_first_runs(fresh, fake, workspace, "c")

    assert texts(await reply_of(second)) == ["ompute_total(items)"]
    first, own = await fake.wait_for_async(
        lambda events: len(events) == 2 and events[0]["closed_by"] is not None
    )
    assert first["closed_by"] == "client" and not first["completed"]
    assert own["completed"]


async def test_a_stalled_running_request_is_given_up_after_the_join_wait(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start(fresh, fake, workspace, join=True)
    fake.script(
        [
            {**STALL, "match": "x = <|fim_suffix|>"},
            {"match": "x = c<|fim_suffix|>", "text": "ab()\n"},
        ]
    )
    _, second = await next_key_while_the_first_runs(fresh, fake, workspace, "c")

    assert texts(await reply_of(second)) == ["ab()"]
    stalled, own = await fake.wait_for_async(
        lambda events: len(events) == 2 and events[0]["closed_by"] is not None
    )
    assert stalled["closed_by"] == "client" and not stalled["completed"]
    assert own["received_at"] - stalled["received_at"] >= JOIN_WAIT_S


async def test_of_two_keys_joining_one_request_only_the_newer_is_answered(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Keys `c` and `co` both join the request made at `x = `; `c`'s editor request was
    not cancelled, yet it gets nothing: a newer key came while it waited."""
    await start(fresh, fake, workspace, join=True)
    fake.script([SLOW])
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "join.py", text)
    first = send_inline(fresh, uri, position, "inline-1")
    await fake.wait_for_async(lambda events: len(events) == 1)
    type_text(fresh, uri, position, "c", version=2)
    older = send_inline(fresh, uri, types.Position(line=0, character=5), "inline-2")
    await asyncio.sleep(0.05)
    type_text(fresh, uri, types.Position(line=0, character=5), "o", version=3)
    newer = send_inline(fresh, uri, types.Position(line=0, character=6), "inline-3")

    assert texts(await reply_of(newer)) == ["mpute_total(items)"]
    assert texts(await reply_of(older)) == []
    assert texts(await reply_of(first)) == ["compute_total(items)"]  # never cancelled
    assert len(fake.events()) == 1
