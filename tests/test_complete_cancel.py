"""A cancelled completion stops streaming even when the cancellation is lost below it.

In CI a `$/cancelRequest` once left a 3,000-token vLLM stream running to its end: the
CancelledError never surfaced in the server's own code. Whatever swallowed it, the
task still counts the cancel request, and the completer checks that count at every
chunk. Here an HTTP layer that swallows the cancellation stands in for the culprit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fake_openai import FakeBackend

from server.backend.client import CompletionBackend
from server.completion.request import (
    MAX_CANCELS,
    Completer,
    CursorContext,
    Joined,
    LatestOnly,
    Suggestion,
)
from server.config import BackendSettings, CompletionSettings

BLOCK = "def totals(items):\n    █\n"
LINES = "".join(f"total_{n} = compute(items, {n})\n" for n in range(60))
"""A long block: streamed to its end, it takes a few seconds through the slow layer."""


class SwallowedCancelStream(httpx.AsyncByteStream):
    """The response body, handed over a chunk at a time after a wait that catches a
    CancelledError and goes on, as a misbehaving library would."""

    def __init__(self, body: list[bytes]) -> None:
        self.body = body
        self.handed_over = asyncio.Event()
        self.swallowed = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.body:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                self.swallowed += 1
            yield chunk
            self.handed_over.set()


class CompletionBodyTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, with each completion's body replaced by what `wrap` makes of
    the response (`streams` keeps them)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.streams: list[Any] = []

    async def wrap(self, response: httpx.Response) -> httpx.AsyncByteStream:
        raise NotImplementedError

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if not request.url.path.endswith("/completions"):
            return response
        stream = await self.wrap(response)
        self.streams.append(stream)
        return httpx.Response(response.status_code, headers=response.headers, stream=stream)

    async def aclose(self) -> None:
        await self.inner.aclose()


class SwallowingTransport(CompletionBodyTransport):
    """Each completion body replayed by SwallowedCancelStream (the body is read whole
    first, so that the only waits are the swallowing ones)."""

    async def wrap(self, response: httpx.Response) -> httpx.AsyncByteStream:
        body = [chunk async for chunk in response.stream]  # type: ignore[union-attr]
        await response.aclose()
        return SwallowedCancelStream(body)


def cursor(text: str) -> CursorContext:
    """`text` with the cursor at its █, in shop/totals.py."""
    return CursorContext(text.replace("█", ""), text.index("█"), "totals.py", "shop")


async def complete_block(
    backend: CompletionBackend, transport: CompletionBodyTransport
) -> tuple[asyncio.Task[Suggestion], Any]:
    """A block completion under way, and the body it is streaming (once it has one)."""
    settings = CompletionSettings(max_lines=100, multiline_max_tokens=2000)
    job = asyncio.create_task(Completer(backend).complete(cursor(BLOCK), settings))
    while not transport.streams:
        await asyncio.sleep(0.01)
    (stream,) = transport.streams
    return job, stream


async def test_a_cancel_lost_below_the_completer_still_stops_the_stream(
    fake: FakeBackend,
) -> None:
    fake.script([{"text": LINES}])
    transport = SwallowingTransport()
    backend = CompletionBackend(BackendSettings(url=fake.url), transport=transport)
    try:
        job, stream = await complete_block(backend, transport)
        await asyncio.wait_for(stream.handed_over.wait(), 5)

        job.cancel()

        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(job, 1.0)  # the whole stream would take ~3 s
        assert stream.swallowed == 1  # the CancelledError itself never reached the completer
    finally:
        await backend.aclose()


class StubbornJob:
    """A job that swallows the first CancelledError and hides it from `cancelling()`, as
    a library's own cancel scope can: only a second cancel ends it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.task: asyncio.Task[object] | None = None
        self.swallowed = 0

    async def run(self) -> str:
        self.task = asyncio.current_task()
        self.started.set()
        while True:
            try:
                await asyncio.sleep(30)
                return "finished"
            except asyncio.CancelledError:
                if self.swallowed:
                    raise
                self.swallowed += 1
                self.task.uncancel()  # type: ignore[union-attr]


async def test_a_cancelled_caller_is_answered_at_once_and_its_job_cancelled_until_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest = LatestOnly(retry_s=0.1)
    job = StubbornJob()
    caller = asyncio.create_task(latest.run("a.py", job.run()))
    await asyncio.wait_for(job.started.wait(), 5)

    with caplog.at_level(logging.WARNING, logger="server.completion.request"):
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(caller, 1.0)  # the job alone would take 30 s
        assert job.task is not None
        await asyncio.wait_for(asyncio.wait({job.task}), 2.0)

    assert job.task.cancelled() and job.swallowed == 1
    (warning,) = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
    assert "StubbornJob.run" in warning and "sleep" in warning  # where it waited


async def test_a_newer_job_supersedes_the_older_for_the_same_key_only() -> None:
    latest = LatestOnly()
    release = asyncio.Event()

    async def job(answer: str) -> str:
        await release.wait()
        return answer

    older = asyncio.create_task(latest.run("a.py", job("old")))
    other = asyncio.create_task(latest.run("b.py", job("other")))
    await asyncio.sleep(0.01)
    newer = asyncio.create_task(latest.run("a.py", job("new")))
    await asyncio.sleep(0.01)
    release.set()

    assert await asyncio.wait_for(asyncio.gather(older, other, newer), 2) == [
        None,
        "other",
        "new",
    ]


async def test_a_job_that_ignores_every_cancel_is_left_with_an_error_not_retried_forever(
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest = LatestOnly(retry_s=0.01)
    release = asyncio.Event()
    cancels = 0
    jobs: list[asyncio.Task[object]] = []

    async def deaf() -> str:
        nonlocal cancels
        jobs.append(asyncio.current_task())  # type: ignore[arg-type]
        while not release.is_set():
            try:
                await asyncio.sleep(0.005)
            except asyncio.CancelledError:
                cancels += 1
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
        return "done"

    caller = asyncio.create_task(latest.run("a.py", deaf()))
    await asyncio.sleep(0.01)
    with caplog.at_level(logging.WARNING, logger="server.completion.request"):
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        for _ in range(200):
            if not latest._stopping:
                break
            await asyncio.sleep(0.01)
    assert not latest._stopping and cancels == MAX_CANCELS + 1  # the first, then the retries
    assert any("ignored" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    release.set()
    assert await asyncio.wait_for(jobs[0], 1) == "done"  # still running until it chose to end


async def test_a_joiner_gets_the_end_of_the_running_job_and_keeps_it_alive() -> None:
    """A caller cancelled leaves its job running for `linger_s`; a joiner that came in
    that time keeps it running to its end; a job nobody joins is cancelled."""
    latest = LatestOnly()
    release = asyncio.Event()

    async def job() -> str:
        await release.wait()
        return "done"

    owner = asyncio.create_task(latest.run("a.py", job(), tag="x = ", linger_s=0.2))
    await asyncio.sleep(0.01)
    owner.cancel()
    joiner = asyncio.create_task(latest.join("a.py", lambda tag: tag == "x = ", 5.0, 0.2))
    await asyncio.sleep(0.4)  # past the linger: the joiner still waits, so the job runs
    release.set()
    assert await asyncio.wait_for(joiner, 2) is Joined.ENDED

    stopped = asyncio.Event()

    async def endless() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()

    alone = asyncio.create_task(latest.run("b.py", endless(), linger_s=1.0))
    await asyncio.sleep(0.01)
    alone.cancel()
    await asyncio.sleep(0.05)
    assert not stopped.is_set()  # lingering
    await asyncio.wait_for(stopped.wait(), 5)  # nobody joined: cancelled


async def test_a_join_is_declined_timed_out_or_overtaken() -> None:
    latest = LatestOnly()
    owner = asyncio.create_task(latest.run("a.py", asyncio.sleep(30), tag="x = "))
    await asyncio.sleep(0.01)

    assert await latest.join("a.py", lambda tag: tag == "y = ", 5.0) is Joined.NONE
    assert await latest.join("other.py", lambda tag: True, 5.0) is Joined.NONE
    assert await latest.join("a.py", lambda tag: True, 0.05) is Joined.TIMED_OUT
    older = asyncio.create_task(latest.join("a.py", lambda tag: True, 5.0))
    await asyncio.sleep(0.01)
    newer = asyncio.create_task(latest.join("a.py", lambda tag: True, 0.05))
    assert await newer is Joined.TIMED_OUT
    assert not older.done()  # a newer joiner does not end the older one's wait...
    latest.cancel("a.py")
    assert await asyncio.wait_for(older, 2) is Joined.SUPERSEDED  # ...but it has lost
    assert await asyncio.gather(owner) == [None]


async def test_a_lingering_job_that_fails_is_logged_not_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest = LatestOnly()
    release = asyncio.Event()

    async def failing() -> str:
        await release.wait()
        raise RuntimeError("broken after its caller left")

    owner = asyncio.create_task(latest.run("a.py", failing(), linger_s=5.0))
    await asyncio.sleep(0.01)
    owner.cancel()
    with caplog.at_level(logging.WARNING, logger="server.completion.request"):
        release.set()
        await asyncio.sleep(0.05)
    assert "broken after its caller left" in caplog.text


async def test_a_continuation_cancelled_before_it_runs_closes_its_stream(
    fake: FakeBackend,
) -> None:
    """A one-line suggestion hands its stream, still open, to a background task that
    continues it; a keystroke may cancel that task before it ever ran. The stream, and
    its connection to the model, is closed all the same."""
    fake.script([{"text": "compute(items)\n" + LINES, "chunk_delay_ms": 20}])
    backend = CompletionBackend(BackendSettings(url=fake.url))
    ctx = cursor("def totals(items):\n    value = █\n")
    try:
        suggestion = await Completer(backend).complete(ctx, CompletionSettings())
        assert suggestion.text == "compute(items)" and suggestion.more is not None
        suggestion.more.cancel()  # before the event loop ran it once
        kept = [suggestion]  # what holds it (the editor's state) does not drop it
        (event,) = await fake.wait_for_async(lambda e: e[0]["closed_by"] is not None, timeout=3)
        assert event["closed_by"] == "client" and not event["completed"], event
        assert kept[0].more is not None and kept[0].more.cancelled()
    finally:
        await backend.aclose()


class SlowCloseStream(httpx.AsyncByteStream):
    """A response body whose close takes a while (a TLS close on a slow network, or a
    busy event loop): `closed` is set once it has really closed."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self.inner = inner
        self.closing = asyncio.Event()
        self.closed = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            yield chunk

    async def aclose(self) -> None:
        self.closing.set()
        await asyncio.sleep(0.3)
        await self.inner.aclose()
        self.closed.set()


class SlowCloseTransport(CompletionBodyTransport):
    async def wrap(self, response: httpx.Response) -> httpx.AsyncByteStream:
        return SlowCloseStream(response.stream)  # type: ignore[arg-type]


async def test_a_completion_cancelled_again_while_closing_its_stream_still_closes_it(
    fake: FakeBackend,
) -> None:
    """A cancelled completion that has not ended is cancelled again (`LatestOnly`, every
    `retry_s`); if that lands while it closes its stream, the close still runs to its end.
    Cut short, it left the HTTP response open: the connection busy for good, and the
    backend generating to the end for nobody."""
    fake.script([{"text": LINES, "chunk_delay_ms": 20}])
    transport = SlowCloseTransport()
    backend = CompletionBackend(BackendSettings(url=fake.url), transport=transport)
    try:
        job, stream = await complete_block(backend, transport)
        await asyncio.sleep(0.1)  # streaming
        job.cancel()
        await asyncio.wait_for(stream.closing.wait(), 2)
        job.cancel()  # again, while the stream closes

        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(job, 1.0)
        await asyncio.wait_for(stream.closed.wait(), 2)
    finally:
        await backend.aclose()
