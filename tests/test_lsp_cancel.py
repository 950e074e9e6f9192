"""End to end: a suggestion nobody will see stops costing GPU time.

When the editor cancels a request (`$/cancelRequest`) or asks again for the same
document, the server closes the upstream stream, which is what makes vLLM abort the
generation. The fake model server records when, and by which side, each stream was
closed; the requirement is that a cancelled request's stream is closed within 50 ms, or,
with `completion.joinInFlight` (the default), within 50 ms of the 0.3 s in which the next
keystroke may join it.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, send_inline, suggestion
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from server.lsp.language_server import LINGER_S

CLOSE_WITHIN_S = 0.050
"""A cancelled request closes its upstream stream within 50 ms, observed at the fake."""
HANG_GUARD_S = 5.0
"""How long a reply may take before the test fails as hung (not a speed test)."""

STALL = {"behaviour": "stall_forever", "after_chunks": 1, "text": "never_finished(1, 2)\n"}
"""One chunk, then silence: a generation that is under way when the request is cancelled."""


def patient_settings(url: str, join_in_flight: bool = True) -> dict[str, Any]:
    """Timeouts far longer than any test, so that only a cancellation can close a stalled
    stream early (a timeout firing instead would show up as a late close)."""
    return {
        "backend": {
            "url": url,
            "connectTimeoutMs": 500,
            "firstChunkTimeoutMs": 20_000,
            "chunkGapMs": 20_000,
            "totalTimeoutMs": 30_000,
        },
        "completion": {"joinInFlight": join_in_flight},
    }


@pytest.fixture
async def patient(fresh: LanguageClient, fake: FakeBackend, workspace: Path) -> LanguageClient:
    """A VS Code session whose backend timeouts never fire during a test."""
    await start_session(fresh, "vscode", workspace, patient_settings(fake.url))
    return fresh


@pytest.fixture
async def unjoined(fresh: LanguageClient, fake: FakeBackend, workspace: Path) -> LanguageClient:
    """A patient session with `completion.joinInFlight` off: every key its own request."""
    await start_session(fresh, "vscode", workspace, patient_settings(fake.url, False))
    return fresh


async def reply_of(future: asyncio.Future[Any]) -> Any:
    """The reply, failing the test if there is none within HANG_GUARD_S."""
    try:
        return await asyncio.wait_for(future, HANG_GUARD_S)
    except TimeoutError:
        pytest.fail(f"no reply within {HANG_GUARD_S} s: the request hangs")


def cancel(client: LanguageClient, msg_id: str) -> float:
    """Send `$/cancelRequest`; the wall-clock time just before it went out."""
    sent_at = time.time()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    return sent_at


def texts(result: types.InlineCompletionList | None) -> list[str]:
    items = result.items if result is not None else []
    return [item.insert_text for item in items if isinstance(item.insert_text, str)]


def type_text(
    client: LanguageClient, uri: str, at: types.Position, text: str, version: int
) -> None:
    """One keystroke: insert `text` at `at`."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=at, end=at), text=text
                )
            ],
        )
    )


def streaming(events: list[dict[str, Any]]) -> bool:
    """The first request reached the fake and its generation is under way."""
    return bool(events) and events[0]["chunks_sent"] >= 1


@pytest.mark.parametrize("join_in_flight", [False, True], ids=["alone", "joinable"])
async def test_cancel_request_closes_the_upstream_stream_within_50_ms(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, join_in_flight: bool
) -> None:
    await start_session(fresh, "vscode", workspace, patient_settings(fake.url, join_in_flight))
    fake.script([{**STALL, "times": 1}], default_text="compute_total(items)\n")
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "cancel.py", text)
    reply = send_inline(fresh, uri, position, "inline-1")
    await fake.wait_for_async(streaming)

    cancel_sent_at = cancel(fresh, "inline-1")

    with pytest.raises(JsonRpcRequestCancelled):
        await reply_of(reply)
    (event,) = await fake.wait_for_async(lambda events: events[0]["closed_by"] is not None)
    assert event["closed_by"] == "client"
    linger = LINGER_S if join_in_flight else 0.0
    assert linger <= event["closed_at"] - cancel_sent_at < linger + CLOSE_WITHIN_S
    assert not event["completed"]

    cancel(fresh, "inline-1")  # a late cancel, for a request already answered: harmless
    assert await suggestion(fresh, uri, position) == "compute_total(items)"
    assert len(fake.events()) == 2


async def test_a_newer_request_for_the_document_supersedes_the_older_one(
    unjoined: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The user types a character while a suggestion streams: the older request gets an
    empty result and its stream is closed; the newer one gets its suggestion."""
    patient = unjoined
    fake.script(
        [
            {**STALL, "match": "x = <|fim_suffix|>"},
            {"match": "x = c<|fim_suffix|>", "text": "ompute_total(items)\n"},
        ]
    )
    text, position = cursor_at("x = █\n")
    uri = open_document(patient, workspace / "typing.py", text)
    older = send_inline(patient, uri, position, "inline-1")
    await fake.wait_for_async(streaming)

    type_text(patient, uri, position, "c", version=2)
    newer_sent_at = time.time()
    newer = send_inline(patient, uri, types.Position(line=0, character=5), "inline-2")

    assert texts(await reply_of(newer)) == ["ompute_total(items)"]
    assert texts(await reply_of(older)) == []
    events = await fake.wait_for_async(
        lambda events: len(events) == 2 and events[0]["closed_by"] is not None
    )
    assert events[0]["closed_by"] == "client"
    assert 0 <= events[0]["closed_at"] - newer_sent_at < CLOSE_WITHIN_S
    assert events[1]["completed"]


async def test_requests_for_different_documents_do_not_cancel_each_other(
    patient: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script(
        [
            {"match": "alpha = ", "text": "compute_total(items)\n", "first_delay_ms": 400},
            {"match": "beta = ", "text": "2\n"},
        ]
    )
    text_a, position_a = cursor_at("alpha = █\n")
    text_b, position_b = cursor_at("beta = █\n")
    uri_a = open_document(patient, workspace / "a.py", text_a)
    uri_b = open_document(patient, workspace / "b.py", text_b)

    reply_a = send_inline(patient, uri_a, position_a, "inline-a")
    await fake.wait_for_async(lambda events: len(events) == 1)
    reply_b = send_inline(patient, uri_b, position_b, "inline-b")

    assert texts(await reply_of(reply_b)) == ["2"]
    assert texts(await reply_of(reply_a)) == ["compute_total(items)"]
    event_a, event_b = fake.events()
    assert event_b["received_at"] < event_a["first_chunk_at"]  # b came while a streamed
    assert event_a["completed"] and event_a["closed_by"] == "server"
    assert event_b["completed"] and event_b["closed_by"] == "server"


async def test_a_burst_of_keystrokes_leaves_no_stream_open_and_the_server_healthy(
    patient: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """One request per typed character, each sent without waiting for the last: every
    request but the last is superseded, whatever stage it had reached (model lookup,
    connecting, streaming), and no upstream stream stays open."""
    fake.script(
        [
            {"match": "x = compute<|fim_suffix|>", "text": "_total(items)\n"},
            {**STALL, "match": ""},
        ]
    )
    uri = open_document(patient, workspace / "burst.py", "x = \n")
    replies = []
    for column, char in enumerate("compute", start=4):
        type_text(patient, uri, types.Position(line=0, character=column), char, column)
        here = types.Position(line=0, character=column + 1)
        replies.append(send_inline(patient, uri, here, f"inline-{column}"))
        if column % 2:  # some requests reach the fake, some are superseded before
            await asyncio.sleep(0.01)

    results = [texts(reply) for reply in await reply_of(asyncio.gather(*replies))]

    assert results == [[]] * 6 + [["_total(items)"]]
    events = await fake.wait_for_async(
        lambda events: all(event["closed_by"] is not None for event in events)
    )
    *superseded, last = events
    assert last["completed"] and last["prompt"].endswith(
        "x = compute<|fim_suffix|>\n<|fim_middle|>"
    )
    assert all(event["closed_by"] == "client" for event in superseded)
    assert "Traceback" not in logs(patient)
    assert not [m for m in patient.log_messages if m.type == types.MessageType.Error]

    fake.script([], default_text="_total(items)\n")
    assert await suggestion(patient, uri, types.Position(line=0, character=11)) == "_total(items)"


async def test_the_global_limit_queues_requests_of_other_documents(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """With one request slot, a second document's request waits until the first one's
    stream ends; both are answered, and the wait shows as the `queue` stage."""
    settings = fast_settings(fake.url, maxConcurrentRequests=1)
    settings["log"] = {"level": "debug"}
    await start_session(fresh, "vscode", workspace, settings)
    fake.script([{"text": "slow_answer()\n", "first_delay_ms": 400}])
    text, position = cursor_at("x = █\n")
    first = open_document(fresh, workspace / "first.py", text)
    second = open_document(fresh, workspace / "second.py", text)

    answers = await asyncio.gather(
        suggestion(fresh, first, position), suggestion(fresh, second, position)
    )

    assert answers == ["slow_answer()", "slow_answer()"]
    one, two = sorted(fake.events(), key=lambda event: event["received_at"])
    assert two["received_at"] >= one["closed_at"]  # never two streams at once
    queued = [float(ms) for ms in re.findall(r"queue ([0-9.]+) ms", logs(fresh))]
    assert len(queued) == 2 and max(queued) >= 300
