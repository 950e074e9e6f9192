"""End to end through vllm-router: the real router binary (PyPI `vllm-router`, Rust) in
front of two fake replicas, the language server pointed at the router's URL.

- Affinity: every request carries `X-Session-ID` (a hash of its document's name), and the
  router's `consistent_hash` policy sends one document's requests to one replica.
- Resume across replicas: the replica serving a stream is killed mid-stream; the resume
  goes through the router to the other replica and the suggestion is the one the unbroken
  stream gives (the fake replicas share one vocabulary, as vLLM replicas of one model do).

The router runs with the flags docs/team.md gives it (`--cb-failure-threshold 2`: a dead
replica is taken out after two failed requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Literal

import httpx
import pytest
import pytest_lsp
from conftest import CONFIG, fast_settings, require_router, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, partial_change, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.backend.client import CompletionBackend, CompletionRequest
from server.backend.local_vllm import free_port
from server.backend.router import router_command
from server.config import BackendSettings

Affinity = Literal["document", "workspace", "off"]


class Router:
    """vllm-router in its own process, in front of `workers` (base URLs, no /v1), started
    with the command line `headstart backend start --replicas` uses."""

    def __init__(self, workers: list[str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        command = router_command(
            require_router(), "127.0.0.1", self.port, free_port(), workers, startup_timeout_s=60
        )
        command += ("--log-level", "warning")
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._wait_until_up(60.0)

    def _wait_until_up(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"vllm-router exited ({self.proc.returncode}):\n{self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=2, trust_env=False).status_code == 200:
                    return
            time.sleep(0.1)
        pytest.fail(f"vllm-router did not answer /v1/models in {timeout_s} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def replicas() -> Iterator[tuple[FakeBackend, FakeBackend]]:
    with FakeBackend() as first, FakeBackend() as second:
        yield first, second


@pytest.fixture
def router(replicas: tuple[FakeBackend, FakeBackend], tmp_path: Path) -> Iterator[Router]:
    started = Router([fake.url.removesuffix("/v1") for fake in replicas], tmp_path / "router.log")
    try:
        yield started
    finally:
        started.stop()


@pytest_lsp.fixture(config=CONFIG)
async def routed(
    lsp_client: LanguageClient, router: Router, workspace: Path
) -> AsyncIterator[None]:
    """A server session whose backend is the router (the default affinity: documents)."""
    options = fast_settings(router.url)
    options["backend"] = {**options["backend"], "totalTimeoutMs": 10_000}  # type: ignore[dict-item]
    await start_session(lsp_client, "vscode", workspace, options)
    yield
    await lsp_client.shutdown_session()


async def session_ids(
    fake: FakeBackend, affinity: Affinity, documents: list[str]
) -> list[str | None]:
    """The `X-Session-ID` of a request for each document, with `affinity`."""
    fake.script([{"text": "1\n"}])
    backend = CompletionBackend(BackendSettings(url=fake.url, affinity=affinity))
    try:
        for document in documents:
            async for _ in backend.stream(CompletionRequest("x = ", 4, document=document)):
                pass
    finally:
        await backend.aclose()
    return [event["headers"].get("x-session-id") for event in fake.events()]


async def test_the_session_key_is_a_hash_of_the_document_or_workspace(fake: FakeBackend) -> None:
    documents = ["shop/cart.py", "shop/cart.py", "shop/tax.py", "blog/cart.py"]
    by_document = await session_ids(fake, "document", documents)
    assert by_document[0] == by_document[1] and len(set(by_document)) == 3
    assert all(key is not None and re.fullmatch("[0-9a-f]{16}", key) for key in by_document)
    fake.reset()
    by_workspace = await session_ids(fake, "workspace", documents)
    assert by_workspace[0] == by_workspace[1] == by_workspace[2] != by_workspace[3]
    fake.reset()
    assert await session_ids(fake, "off", documents) == [None] * 4


DOCUMENTS = 16
"""Where the router's hash ring puts each document depends on the replicas' ports, which
change from run to run: with 6 documents all landed on one replica in about 3% of runs,
with 16 in 1 of 30,000."""


async def test_one_documents_requests_go_to_one_replica(
    routed: LanguageClient,
    replicas: tuple[FakeBackend, FakeBackend],
    router: Router,
    workspace: Path,
) -> None:
    for name, fake in zip(("first", "second"), replicas, strict=True):
        fake.script([{"text": f"from_{name}()\n"}])
    served: dict[str, set[str]] = {}
    for n in range(DOCUMENTS):
        uri = open_document(routed, workspace / f"module_{n}.py", "x = \n")
        line = "x = "
        for version in (2, 3):
            # another name before the cursor: each request misses the suggestion cache
            start, end = types.Position(line=0, character=0), types.Position(0, len(line))
            line = f"v{version} = "
            routed.text_document_did_change(partial_change(uri, version, start, end, line))
            got = await suggestion(routed, uri, types.Position(line=0, character=len(line)))
            served.setdefault(uri, set()).add(got)
    assert all(len(answers) == 1 and "" not in answers for answers in served.values()), (
        served,
        logs(routed),
        router.output(),
    )
    assert {answer for (answer,) in served.values()} == {"from_first()", "from_second()"}, served
    keys = {e["headers"].get("x-session-id") for fake in replicas for e in fake.events()}
    assert len(keys) == DOCUMENTS and all(key and len(key) == 16 for key in keys), keys
    sent = [e for fake in replicas for e in fake.events()]
    assert len(sent) == 2 * DOCUMENTS, "a request for each document and name"
    assert not any("module_" in str(e["headers"]) for e in sent), "a file name left in a header"


BLOCK = "def total(items):█\n"
BODY = "\n" + "".join(f"    step_{n}(items)\n" for n in range(8)) + "    return items\n"
"""Block mode: 9 lines, 44 chunks of 4 characters (the vocabulary's compact ids, which the
router's 32-bit prompt ids take), 40 ms apart: the stream lasts about 2 s."""


async def streaming_replica(
    replicas: tuple[FakeBackend, FakeBackend], chunks_sent: int
) -> FakeBackend:
    """The replica that has sent `chunks_sent` chunks of a stream."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for fake in replicas:
            events = await asyncio.to_thread(fake.events)
            if events and events[-1]["chunks_sent"] >= chunks_sent:
                return fake
        await asyncio.sleep(0.01)
    pytest.fail(f"no replica sent {chunks_sent} chunks in 10 s")


async def test_a_replica_killed_mid_stream_is_resumed_on_the_other(
    routed: LanguageClient,
    replicas: tuple[FakeBackend, FakeBackend],
    router: Router,
    workspace: Path,
) -> None:
    for fake in replicas:
        fake.script([{"text": BODY, "chunk_chars": 4, "chunk_delay_ms": 40}])
    text, position = cursor_at(BLOCK)
    uri = open_document(routed, workspace / "resumed.py", text)
    reply = asyncio.ensure_future(suggestion(routed, uri, position))
    serving = await streaming_replica(replicas, chunks_sent=10)
    serving.proc.kill()  # type: ignore[union-attr]
    (other,) = [fake for fake in replicas if fake is not serving]

    assert await reply == BODY.rstrip("\n"), (logs(routed), router.output())
    assert "resuming after" in logs(routed)
    (continued,) = [e for e in other.events() if e["completed"]]
    assert isinstance(continued["prompt"], list), "continued from token ids"
