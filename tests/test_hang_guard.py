"""A server that stops answering: SIGUSR1 makes it print its threads' stacks and go on,
and the tests' hang guard (tests/hang_guard.py) kills it instead of waiting for good."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

import hang_guard
import pytest
from conftest import SERVER_COMMAND, server_env, start_session
from hang_guard import GuardedClient, guarded_client
from lsp_helpers import open_document
from lsprotocol import types

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGUSR1 and SIGSTOP are POSIX")


async def started(workspace: Path) -> GuardedClient:
    client = guarded_client()
    await client.start_io(*SERVER_COMMAND, env=server_env())
    await start_session(client, "vscode", workspace, {})
    return client


async def test_sigusr1_prints_every_threads_stack_and_the_server_goes_on(
    workspace: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    client = await started(workspace)
    assert client._server is not None
    os.kill(client._server.pid, signal.SIGUSR1)
    dumped = ""
    for _ in range(100):
        await asyncio.sleep(0.2)  # its stderr comes through the client's forwarder
        dumped += capfd.readouterr().err
        if "most recent call first" in dumped and 'File "' in dumped:
            break
    assert 'File "' in dumped, dumped  # a Python stack, frame by frame
    assert "in serve_lsp" in dumped  # the main thread's, where `serve` waits
    hover = hover_at(workspace)
    open_document(client, workspace / "main.py")
    assert client._server.returncode is None
    await asyncio.wait_for(client.text_document_hover_async(hover), 20)  # still answers
    await client.shutdown_session()
    await client.stop()


def hover_at(workspace: Path) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=(workspace / "main.py").as_uri()),
        position=types.Position(line=0, character=0),
    )


async def test_a_server_that_does_not_shut_down_is_killed_and_the_test_fails(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hang_guard, "SHUTDOWN_S", 1.0)
    monkeypatch.setattr(hang_guard, "DUMP_WAIT_S", 0.2)
    client = await started(workspace)
    assert client._server is not None
    os.kill(client._server.pid, signal.SIGSTOP)  # alive, and answering nothing
    with pytest.raises(pytest.fail.Exception, match="did not shut down within 1 s"):
        await asyncio.wait_for(client.shutdown_session(), 20)
    assert await asyncio.wait_for(client._server.wait(), 20) == -signal.SIGKILL
    await client.stop()
    assert "hang guard: server" in capfd.readouterr().err


async def test_the_watch_kills_a_tests_stuck_server_and_its_request_fails(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hang_guard, "DUMP_WAIT_S", 0.2)
    client = await started(workspace)
    assert client._server is not None
    os.kill(client._server.pid, signal.SIGSTOP)
    done = threading.Event()
    watch = threading.Thread(target=hang_guard._watch, args=("this test", 2.0, done))
    watch.start()  # a limit of 2 s: the servers are killed at 1 s
    try:
        with pytest.raises(RuntimeError, match="exited with return code: -9"):
            await asyncio.wait_for(client.text_document_hover_async(hover_at(workspace)), 20)
    finally:
        done.set()
        watch.join()
    await client.shutdown_session()  # nothing left to ask: returns at once
    await client.stop()


def test_a_tests_limit_is_its_timeout_mark_else_the_configured_one(
    request: pytest.FixtureRequest,
) -> None:
    assert hang_guard.limit_of(request.node) == 300.0


@pytest.mark.timeout(900)
def test_a_timeout_mark_sets_the_limit(request: pytest.FixtureRequest) -> None:
    assert hang_guard.limit_of(request.node) == 900.0
