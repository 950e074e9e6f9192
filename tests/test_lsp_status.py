"""`$/headstart/status`: what the server tells editors' status bars about the backend."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, open_document, suggestion
from pytest_lsp import LanguageClient

from server.backend.local_vllm import free_port

STATUS = "$/headstart/status"


def collect_statuses(client: LanguageClient) -> list[dict[str, Any]]:
    """Every `$/headstart/status` the client receives from now on, as plain dicts."""
    received: list[dict[str, Any]] = []

    @client.feature(STATUS)
    def on_status(params: Any) -> None:
        received.append({k: getattr(params, k, None) for k in STATUS_KEYS})

    return received


STATUS_KEYS = ("backendOk", "backendUrl", "model", "error", "latencyMs")


async def wait_for(statuses: list[dict[str, Any]], count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(statuses) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{count} statuses expected within {timeout}s, got {statuses}")
        await asyncio.sleep(0.02)


async def test_status_says_the_backend_answers_and_how_long_a_suggestion_took(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    statuses = collect_statuses(fresh)
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))

    await wait_for(statuses, 1)  # the probe at `initialized`, before any suggestion
    assert statuses[0] == {
        "backendOk": True,
        "backendUrl": fake.url,
        "model": "fake-coder",
        "error": None,
        "latencyMs": None,
    }

    fake.script([{"match": "rate =", "text": " 0.2\n"}])
    text, position = cursor_at("rate =█\n")
    uri = open_document(fresh, workspace / "rates.py", text)
    assert await suggestion(fresh, uri, position) == " 0.2"
    await wait_for(statuses, 2)
    after = statuses[1]
    assert after["backendOk"] is True and after["error"] is None
    assert isinstance(after["latencyMs"], float) and after["latencyMs"] > 0


async def test_status_names_the_error_when_the_backend_cannot_be_reached(
    fresh: LanguageClient, workspace: Path
) -> None:
    statuses = collect_statuses(fresh)
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    await start_session(fresh, "vscode", workspace, fast_settings(url))

    await wait_for(statuses, 1)
    (status,) = statuses
    assert status["backendOk"] is False and status["backendUrl"] == url
    assert f"cannot reach {url}" in status["error"]
