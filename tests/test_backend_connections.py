"""The backend client's connections to the model, seen from the fake model's side: typing
cancels requests all the time, and neither that nor finished streams may cost a socket."""

from __future__ import annotations

import asyncio
import time

from fake_openai import FakeBackend

from server.backend.client import CompletionBackend, CompletionRequest
from server.config import BackendSettings

TEXT = "value = compute(items)\n" * 4


async def never_used_for_good(fake: FakeBackend, wait_s: float = 5.0) -> dict[str, int]:
    """The fake's connection counts once no connection is left without a request, or
    after `wait_s` (a cancelled send goes on to its response's headers meanwhile)."""
    deadline = time.monotonic() + wait_s
    while True:
        counts = await asyncio.to_thread(fake.connections)
        if counts["never_used"] == 0 or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.05)


async def test_cancelled_requests_leave_no_connection_behind(fake: FakeBackend) -> None:
    """httpcore leaks a connection (and a pool slot: 32 of them and every request waits
    for the pool in vain) when a request is cancelled between taking a new connection and
    sending on it. Requests cancelled at every moment of their life leave none open."""
    fake.script([{"match": "", "text": TEXT, "first_delay_ms": 20, "chunk_delay_ms": 2}])
    backend = CompletionBackend(BackendSettings(url=fake.url))

    async def complete(n: int) -> None:
        async for _ in backend.stream(CompletionRequest(f"x{n} = ", 32)):
            pass

    try:
        for burst in range(200):
            tasks = [asyncio.create_task(complete(burst * 8 + n)) for n in range(8)]
            for _ in range(burst % 40):  # cancelled after 0 to 39 turns of the event loop
                await asyncio.sleep(0)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        left = await never_used_for_good(fake)
        assert left["never_used"] == 0, left
        async for _ in backend.stream(CompletionRequest("y = ", 8)):
            pass  # and the next request is served
    finally:
        await backend.aclose()


async def test_a_finished_stream_leaves_its_connection_for_the_next(fake: FakeBackend) -> None:
    """Read to the end of its body, a stream's connection goes back to the pool: the next
    keystroke pays no new TCP (or TLS) handshake."""
    fake.script([{"match": "", "text": TEXT}])
    backend = CompletionBackend(BackendSettings(url=fake.url))
    before = (await asyncio.to_thread(fake.connections))["opened"]
    try:
        for n in range(5):
            text = "".join(
                [chunk async for chunk in backend.stream(CompletionRequest(f"x{n} = ", 32))]
            )
            assert text == TEXT
    finally:
        await backend.aclose()
    opened = (await asyncio.to_thread(fake.connections))["opened"] - before - 1  # this call's
    assert opened == 1, f"{opened} connections for /v1/models and 5 completions in a row"
