"""A client that answers oddly: `workspace/configuration` answered with null, an error or
never, and `window/workDoneProgress/create` refused. The server carries on with the
settings it has, indexes the workspace, completes, and says once what it did.

The client is raw frames over the server's pipes (pytest-lsp's client fails a test on any
error its own handlers answer with, which is the point here)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import fast_settings
from fake_openai import FakeBackend
from lsp_helpers import RawPipe, spawned_server

Answer = Callable[[dict[str, Any]], dict[str, Any] | None]
"""How the client answers a request of the server: the reply's fields, None for none."""

NULL: Answer = lambda request: {"result": None}  # noqa: E731
NO_SETTINGS: Answer = lambda request: {"result": [None]}  # noqa: E731
"""What VS Code answers for a section it has no settings for."""
REFUSED: Answer = lambda request: {"error": {"code": -32603, "message": "not here"}}  # noqa: E731
NEVER: Answer = lambda request: None  # noqa: E731


class OddClient:
    """Answers the server's requests as told, and keeps its notifications."""

    def __init__(self, pipe: RawPipe, answers: dict[str, Answer]) -> None:
        self.pipe = pipe
        self.answers = answers
        self.replies: dict[int, dict[str, Any]] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            message = await self.pipe.frame()
            if "method" not in message:
                self.replies[message["id"]] = message
            elif "id" in message:  # a request of the server's
                usual = NO_SETTINGS if message["method"] == "workspace/configuration" else NULL
                fields = self.answers.get(message["method"], usual)(message)
                if fields is not None:
                    self.pipe.send({"jsonrpc": "2.0", "id": message["id"], **fields})
            else:
                self.pipe.notifications.append(message)

    def logs(self) -> str:
        return "\n".join(
            n["params"]["message"]
            for n in self.pipe.notifications
            if n["method"] == "window/logMessage"
        )

    async def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.logs():
            assert time.monotonic() < deadline, f"{text!r} not logged; log:\n{self.logs()}"
            await asyncio.sleep(0.05)
        return self.logs()

    async def request(self, msg_id: int, method: str, params: Any) -> dict[str, Any]:
        self.pipe.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + 10
        while msg_id not in self.replies:
            assert time.monotonic() < deadline, f"no reply to {method}"
            await asyncio.sleep(0.02)
        return self.replies.pop(msg_id)

    def notify(self, method: str, params: Any) -> None:
        self.pipe.send({"jsonrpc": "2.0", "method": method, "params": params})


async def session_completes(
    fake: FakeBackend, workspace: Path, answers: dict[str, Answer]
) -> OddClient:
    """initialize (a client with workspace/configuration and progress), wait for the
    index, then ask for an inline completion; the client, for what it was told."""
    fake.script([{"match": "total = ", "text": "price * count\n"}])
    async with spawned_server() as proc:
        client = OddClient(RawPipe.of_process(proc), answers)
        capabilities = {
            "workspace": {"configuration": True, "workspaceFolders": True},
            "window": {"workDoneProgress": True},
            "textDocument": {"inlineCompletion": {}},
        }
        uri = workspace.as_uri()
        await client.request(1, "initialize", {
            "processId": None, "rootUri": uri, "capabilities": capabilities,
            "workspaceFolders": [{"uri": uri, "name": workspace.name}],
            "initializationOptions": fast_settings(fake.url),
        })  # fmt: skip
        client.notify("initialized", {})
        await client.wait_for_log("indexed ")
        document = (workspace / "odd.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": document, "languageId": "python", "version": 1, "text": "total = \n",
        }})  # fmt: skip
        reply = await client.request(2, "textDocument/inlineCompletion", {
            "textDocument": {"uri": document}, "position": {"line": 0, "character": 8},
            "context": {"triggerKind": 2},
        })  # fmt: skip
        items = reply["result"]["items"] if isinstance(reply["result"], dict) else reply["result"]
        assert [item["insertText"] for item in items] == ["price * count"]
        await client.request(3, "shutdown", None)
        client.reader.cancel()
        return client


@pytest.mark.parametrize("answer", [NULL, REFUSED, NEVER], ids=["null", "error", "never"])
async def test_an_odd_configuration_answer_leaves_the_server_working(
    fake: FakeBackend, workspace: Path, answer: Answer
) -> None:
    client = await session_completes(fake, workspace, {"workspace/configuration": answer})

    said = [line for line in client.logs().splitlines() if "workspace/configuration" in line]
    assert len(said) == 1 and "initializationOptions" in said[0], client.logs()
    assert "Traceback" not in client.logs()


async def test_a_refused_progress_token_leaves_indexing_working(
    fake: FakeBackend, workspace: Path
) -> None:
    client = await session_completes(fake, workspace, {"window/workDoneProgress/create": REFUSED})

    assert "Traceback" not in client.logs()
