"""End to end: every model request says what it is for, and speculative work backs off
while the backend is slow (a shared GPU under load)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import (
    Reports,
    cursor_at,
    inline_params,
    logs,
    open_document,
    suggestion,
    wait_for_log,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.backend.client import Priority
from server.completion.throttle import CALM_REQUESTS, BackgroundThrottle
from server.features.refactor import request_for
from server.lsp.protocol import COMPLETION_REPORT

BLOCK = "total = 0\n    for item in items:\n        total += item.price"


async def test_keystrokes_and_prefetches_carry_their_priorities(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, prefetch=True))
    fake.script(
        [
            {"match": "items):\n    <|fim_suffix|>", "text": BLOCK + "\n\n"},
            {"match": "item.price<|fim_suffix|>", "text": "\n    return total\n"},
        ]
    )
    text, position = cursor_at("def price(items):\n    █\n")
    uri = open_document(fresh, workspace / "pricing.py", text)

    assert await suggestion(fresh, uri, position) == BLOCK
    keystroke, prefetch = await fake.wait_for_async(lambda events: len(events) == 2)

    assert keystroke["body"]["priority"] == Priority.KEYSTROKE == 0
    assert prefetch["body"]["priority"] == Priority.PREFETCH
    assert prefetch["prompt"].endswith("item.price<|fim_suffix|>\n<|fim_middle|>")


def test_a_refactoring_outranks_a_prefetch_but_not_a_keystroke() -> None:
    request = request_for("prompt", max_tokens=32, temperature=0.0)

    assert request.priority == Priority.REFACTOR
    assert Priority.KEYSTROKE < request.priority < Priority.PREFETCH


async def test_a_backend_that_refuses_priorities_is_asked_again_without_them(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([{"match": "tax = ", "text": "amount * RATE\n"}], refuse_fields=["priority"])
    text, position = cursor_at("tax = █\n")
    uri = open_document(vscode, workspace / "tax.py", text)

    assert await suggestion(vscode, uri, position) == "amount * RATE"
    refused, answered = fake.events()
    assert refused["status"] == 400 and refused["body"]["priority"] == 0
    assert answered["status"] == 200 and "priority" not in answered["body"]
    await wait_for_log(vscode, "the backend refuses request priorities")

    text, position = cursor_at("total_tax = █\n")
    uri = open_document(vscode, workspace / "total.py", text)
    assert await suggestion(vscode, uri, position) == "amount * RATE"
    assert len(fake.events()) == 3 and "priority" not in fake.events()[2]["body"]
    assert logs(vscode).count("the backend refuses request priorities") == 1


async def test_background_work_pauses_while_first_chunks_are_slow_and_resumes_after(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A one-line suggestion's request asks for a block's worth of tokens while the
    background continuation is on (128) and for a line's (64) while it is paused. With
    `contextTokensUnderLoad` off the prompts stay full, and the report says so."""
    reports = Reports(fresh)
    settings = fast_settings(fake.url, backgroundThrottleMs=100, contextTokensUnderLoad=0)
    settings["log"] = {"completionReports": "timings"}
    await start_session(fresh, "vscode", workspace, settings)
    slow = {"match": "<|fim_suffix|>", "text": "1\n", "first_delay_ms": 250, "times": 8}
    fake.script([slow, {"match": "<|fim_suffix|>", "text": "2\n"}])

    async def keystroke(n: int) -> dict[str, Any]:
        text, position = cursor_at(f"value_{n} = █\n")
        uri = open_document(fresh, workspace / f"v{n}.py", text)
        await suggestion(fresh, uri, position)
        return fake.events()[-1]

    slow_requests = [await keystroke(n) for n in range(8)]
    assert [event["max_tokens"] for event in slow_requests] == [128] * 8
    await wait_for_log(fresh, "background work paused")
    eighth = await reports.nth(8)
    assert eighth["background"] == "paused" and eighth["prompts"] == "full"

    fast_requests = [await keystroke(n) for n in range(8, 16)]
    assert fast_requests[0]["max_tokens"] == 64  # paused: the line only
    await wait_for_log(fresh, "background work resumed")
    assert fast_requests[-1]["max_tokens"] == 128
    assert (await reports.nth(16))["background"] == "on"


async def test_prompts_get_the_smaller_budget_while_the_backend_is_overloaded(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A long file: its prompts fill `contextTokens` (4096). Once the first chunks are slow
    enough to pause background work, the prompts get `contextTokensUnderLoad` (1024)
    instead, keeping the lines nearest the cursor, and keep it for CALM_REQUESTS requests
    after background work resumed (each switch costs a prompt computed cold)."""
    reports = Reports(fresh)
    settings = fast_settings(fake.url, backgroundThrottleMs=100, contextTokensUnderLoad=1024)
    settings["log"] = {"completionReports": "timings"}
    await start_session(fresh, "vscode", workspace, settings)
    slow = {"match": "<|fim_suffix|>", "text": "1\n", "first_delay_ms": 250, "times": 8}
    fake.script([slow, {"match": "<|fim_suffix|>", "text": "2\n"}])
    body = "".join(f"def helper_{i}(items):\n    return sum(items) * {i}\n\n" for i in range(400))
    opened = 0

    async def prompt_chars() -> int:
        nonlocal opened
        opened += 1
        text, position = cursor_at(f"{body}value_{opened} = █\n")
        uri = open_document(fresh, workspace / f"long{opened}.py", text)
        await suggestion(fresh, uri, position)
        prompt: str = fake.events()[-1]["prompt"]
        assert prompt.endswith(f"value_{opened} = <|fim_suffix|>\n<|fim_middle|>")
        return len(prompt)

    full = [await prompt_chars() for _ in range(8)]
    await wait_for_log(fresh, "background work paused")
    small = [await prompt_chars() for _ in range(5)]  # fast again: 5 resume it
    await wait_for_log(fresh, "background work resumed")
    thirteenth = await reports.nth(13)
    assert thirteenth["prompts"] == "small" and thirteenth["background"] == "on"
    small += [await prompt_chars() for _ in range(CALM_REQUESTS - 1)]
    assert (await reports.nth(13 + CALM_REQUESTS - 1))["prompts"] == "full"  # the next one's
    again = await prompt_chars()

    assert min(full) > 3 * max(small)
    assert again > 3 * max(small)
    assert "prompts get completion.contextTokens again: 32 requests" in logs(fresh)


async def test_a_stream_that_ends_with_no_event_does_not_resume_background_work(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A stream that brings no chunk has no first-chunk time: it must not count as a fast one."""
    await start_session(
        fresh, "vscode", workspace, fast_settings(fake.url, backgroundThrottleMs=100)
    )
    slow = {"match": "<|fim_suffix|>", "text": "1\n", "first_delay_ms": 250, "times": 8}
    fake.script([slow, {"match": "<|fim_suffix|>", "behaviour": "empty"}])
    for n in range(16):
        text, position = cursor_at(f"value_{n} = █\n")
        uri = open_document(fresh, workspace / f"v{n}.py", text)
        await suggestion(fresh, uri, position)
    await wait_for_log(fresh, "background work paused")

    assert [event["max_tokens"] for event in fake.events()[8:]] == [64] * 8  # still paused
    assert "background work resumed" not in logs(fresh)


async def test_a_throttle_of_zero_never_pauses(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, backgroundThrottleMs=0))
    fake.script([{"match": "<|fim_suffix|>", "text": "1\n", "first_delay_ms": 150}])
    for n in range(10):
        text, position = cursor_at(f"value_{n} = █\n")
        uri = open_document(fresh, workspace / f"v{n}.py", text)
        assert await suggestion(fresh, uri, position) == "1"
    assert [event["max_tokens"] for event in fake.events()] == [128] * 10
    assert "background work paused" not in logs(fresh)


def test_one_slow_request_among_fast_ones_pauses_nothing() -> None:
    throttle = BackgroundThrottle(budget_ms=100)
    for ms in (20, 30, 900, 25, 30, 20, 2_000, 30):
        throttle.observe(ms)
    assert not throttle.paused

    for ms in (150, 200, 180, 400, 160):  # the median passes the budget
        throttle.observe(ms)
    assert throttle.paused
    throttle.observe(80)  # under the budget, not yet under 70% of it: still paused
    assert throttle.paused

    throttle.budget_ms = 0  # the setting switched off
    throttle.observe(500)
    assert not throttle.paused


def test_prompts_stay_small_through_a_flapping_backend_until_it_is_calm() -> None:
    throttle = BackgroundThrottle(budget_ms=100)
    for _ in range(8):
        throttle.observe(300)
    assert throttle.paused and throttle.small_prompts
    for _ in range(5):
        throttle.observe(20)  # resumed at the fifth
    assert not throttle.paused and throttle.small_prompts
    for _ in range(8):
        throttle.observe(300)  # paused again: the count starts over
    for _ in range(5 + CALM_REQUESTS - 2):
        throttle.observe(20)
    assert throttle.small_prompts
    throttle.observe(20)
    assert not throttle.small_prompts

    throttle.observe(300)
    throttle.budget_ms = 0  # the setting switched off: nothing is ever paused or small
    throttle.observe(500)
    assert not throttle.paused and not throttle.small_prompts


async def test_the_report_says_how_many_stream_events_the_answer_waited_for(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The bench's floor stops its copy of the request there (server/bench/floor.py)."""
    reports = Reports(fresh)
    settings = fast_settings(fake.url, continueInBackground=True)
    settings["log"] = {"completionReports": "requests"}
    await start_session(fresh, "vscode", workspace, settings)
    rest = "".join(f"    step_{n}()\n" for n in range(30))
    fake.script([{"match": "<|fim_suffix|>", "text": "abc\n" + rest, "chunk_chars": 1}])
    text, position = cursor_at("def run():\n    value = █\n")
    uri = open_document(fresh, workspace / "run.py", text)

    assert await suggestion(fresh, uri, position) == "abc"
    (event,) = await fake.wait_for_async(lambda events: len(events) == 1 and events[0]["closed_at"])
    assert (await reports.nth(1))["chunks"] == 4  # a, b, c, then the line's end
    assert event["chunks_sent"] > 4  # the stream went on for the block


async def test_the_report_comes_after_the_reply_it_reports_on(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """A report with the request in it is tens of KB: written before the reply, the editor
    would read it before the suggestion it waits for, and the bench would count it in the
    round trip. The client marks each message as it reads it, in the order it came."""
    read: list[str] = []
    fresh.feature(COMPLETION_REPORT)(lambda params: read.append(f"report {params.line}"))
    settings = fast_settings(fake.url)
    settings["log"] = {"completionReports": "requests"}
    await start_session(fresh, "vscode", workspace, settings)
    fake.script([{"match": "<|fim_suffix|>", "text": "compute(x)\n"}])
    body = "".join(f"def helper_{i}(items):\n    return sum(items) * {i}\n\n" for i in range(300))
    text, position = cursor_at(f"{body}value = █\n")
    uri = open_document(fresh, workspace / "long.py", text)
    reply = fresh.protocol.send_request(
        types.TEXT_DOCUMENT_INLINE_COMPLETION,
        inline_params(uri, position),
        callback=lambda result: read.append(f"reply {result.items[0].insert_text}"),
    )
    await asyncio.wrap_future(reply)
    async with asyncio.timeout(5):
        while len(read) < 2:
            await asyncio.sleep(0.01)

    assert read == ["reply compute(x)", f"report {position.line}"]
