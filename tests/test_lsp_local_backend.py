"""`backend.mode: local` in the editor: the server starts the shared vLLM when the
settings ask for it (off the event loop, with work-done progress), completes against it
once it answers, and a second window's server shares it instead of starting another.
tests/fake_vllm.py stands in for `vllm serve`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

from conftest import FAKE_VLLM, SERVER_COMMAND, guarded_config, server_env, start_session
from lsp_helpers import logs, open_document, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from server.backend.launch_plan import COMMAND_ENV
from server.backend.process import check_health

TEXT = "total = 0\nx = \n"
CURSOR = types.Position(line=1, character=4)


def local_settings(model_dir: Path) -> dict[str, Any]:
    """Local mode with the short timeouts of the other LSP tests; `backend.url` is left
    at its default, where nothing listens, so a suggestion proves the local URL is used."""
    return {
        "backend": {
            "mode": "local",
            "local": {"model": str(model_dir)},
            "connectTimeoutMs": 500,
            "firstChunkTimeoutMs": 1000,
            "chunkGapMs": 500,
            "totalTimeoutMs": 3000,
        }
    }


def editor_window(home: Path, **env: str) -> ClientServerConfig:
    environment = server_env(HEADSTART_HOME=str(home), **{COMMAND_ENV: FAKE_VLLM}, **env)
    return guarded_config(SERVER_COMMAND, environment)


def progress_of(client: LanguageClient, title: str) -> list[Any]:
    """The begin/report/end values of the work-done progress with `title`."""
    for values in client.progress_reports.values():
        if values and getattr(values[0], "title", None) == title:
            return values
    raise AssertionError(f"no progress titled {title!r}: {client.progress_reports}")


async def close(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


async def test_the_server_starts_the_local_vllm_and_a_second_window_shares_it(
    backend_home: Path, model_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"
    window = editor_window(
        backend_home,
        FAKE_VLLM_ARGS_FILE=str(args_file),
        FAKE_VLLM_LOAD_S="2",
        FAKE_VLLM_TEXT="total + 1\n",
    )
    first = await window.start()
    try:
        await start_session(first, "vscode", workspace, local_settings(model_dir))
        uri = open_document(first, workspace / "t.py", TEXT)

        # while vLLM loads, completions wait without an error
        assert await suggestion(first, uri, CURSOR) == ""
        await wait_for_log(first, "no completions until the local vLLM answers: it is starting")

        await wait_for_log(first, "local vLLM ready at", timeout=60)
        state = json.loads((backend_home / "backend" / "state.json").read_text())
        assert f"local vLLM ready at {state['url']}, serving Qwen2.5-Coder-1.5B" in logs(first)
        assert "started by" not in logs(first)  # this window started it
        assert state["started_by"].startswith("the language server of ")
        assert await suggestion(first, uri, CURSOR) == "total + 1"
        progress = progress_of(first, "Headstart: starting vLLM")
        messages = [value.message or "" for value in progress[1:-1]]
        assert messages[0].startswith("starting the command in HEADSTART_VLLM_COMMAND")
        assert any(
            message.startswith("loading, ") and " s: INFO Loading weights" in message
            for message in messages
        )  # vLLM's last log line, every second
        assert progress[-1].message == "ready: Qwen2.5-Coder-1.5B"

        other = Path(shutil.copytree(workspace, tmp_path / "other_project"))
        second = await window.start()
        try:
            await start_session(second, "vscode", other, local_settings(model_dir))
            await wait_for_log(second, "local vLLM ready at", timeout=30)
            assert f"sharing the local vLLM at {state['url']} (pid {state['pid']}" in logs(second)
            other_uri = open_document(second, other / "t.py", TEXT)
            assert await suggestion(second, other_uri, CURSOR) == "total + 1"
        finally:
            await close(second)
        assert len(args_file.read_text().splitlines()) == 1  # one vLLM for both windows
    finally:
        await close(first)

    # the windows are closed; the vLLM stays for the next one (backend_home stops it)
    assert check_health(state["url"]).ready


async def shown_errors(client: LanguageClient, timeout: float = 5.0) -> list[str]:
    """The error messages shown to the user, once there is one (or after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = [m.message for m in client.messages if m.type == types.MessageType.Error]
        if shown or time.monotonic() > deadline:
            return shown
        await asyncio.sleep(0.02)


async def test_a_vllm_that_does_not_start_is_reported_in_the_editor(
    backend_home: Path, model_dir: Path, workspace: Path
) -> None:
    failure = "ValueError: No supported config format found in " + str(model_dir)
    client = await editor_window(backend_home, FAKE_VLLM_FAIL=failure).start()
    try:
        await start_session(client, "vscode", workspace, local_settings(model_dir))

        await wait_for_log(client, "the local vLLM did not start", timeout=60)

        assert failure in logs(client)  # the log's tail
        shown = await shown_errors(client)  # window/showMessage may come after the log line
        assert shown == [
            "Headstart: the local vLLM did not start: vLLM exited with code 1 during "
            "start-up (the Headstart log has vLLM's last lines)"
        ]
        uri = open_document(client, workspace / "t.py", TEXT)
        assert await suggestion(client, uri, CURSOR) == ""
        await wait_for_log(client, "no completions until the local vLLM answers: it did not start")
        assert progress_of(client, "Headstart: starting vLLM")[-1].message == "failed"
    finally:
        await close(client)
