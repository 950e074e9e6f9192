"""Start and stop as the LSP spec says, over stdio and over TCP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from conftest import fast_settings
from fake_openai import FakeBackend
from lsp_helpers import INITIALIZE, RawPipe, spawned_server

from server.backend.local_vllm import free_port


async def request(pipe: RawPipe, msg_id: int, method: str, params: Any) -> dict[str, Any]:
    pipe.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await pipe.reply(msg_id)


async def test_shutdown_then_exit_ends_the_process_with_code_0() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        result = (await request(pipe, 1, "initialize", INITIALIZE))["result"]
        assert result["serverInfo"]["name"] == "headstart"
        capabilities = result["capabilities"]
        assert capabilities["inlineCompletionProvider"] is not None
        assert capabilities["completionProvider"] is not None
        assert capabilities["textDocumentSync"]["change"] == 2  # incremental
        pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert (await request(pipe, 2, "shutdown", None))["result"] is None
        pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 0


async def test_exit_without_shutdown_ends_the_process_with_code_1() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        await request(pipe, 1, "initialize", INITIALIZE)
        pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 1


async def test_tcp_mode_serves_a_completion(tmp_path: Path) -> None:
    port = free_port()
    with FakeBackend(default_text="total + 1\n") as fake:
        async with spawned_server("--tcp", f"127.0.0.1:{port}") as proc:
            pipe = await RawPipe.over_tcp(port)
            options = {**INITIALIZE, "initializationOptions": fast_settings(fake.url)}
            await request(pipe, 1, "initialize", options)
            pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            uri = (tmp_path / "t.py").as_uri()
            pipe.send(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": uri,
                            "languageId": "python",
                            "version": 1,
                            "text": "total = 0\nx = \n",
                        }
                    },
                }
            )
            reply = await request(
                pipe,
                2,
                "textDocument/inlineCompletion",
                {
                    "textDocument": {"uri": uri},
                    "position": {"line": 1, "character": 4},
                    "context": {"triggerKind": 2},
                },
            )
            assert [item["insertText"] for item in reply["result"]["items"]] == ["total + 1"]
            await request(pipe, 3, "shutdown", None)
            pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})
            assert await asyncio.wait_for(proc.wait(), timeout=10) == 0


SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600


def did_open(uri: str, text: str) -> dict[str, Any]:
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    params = {"textDocument": document}
    return {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": params}


def inline(uri: str, line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 2},
    }


async def test_a_request_before_initialize_gets_server_not_initialized() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        pipe.send(did_open("file:///early.py", "x = 1\n"))  # dropped, as LSP says
        reply = await request(pipe, 1, "textDocument/hover", inline("file:///early.py", 0, 0))
        assert reply["error"]["code"] == SERVER_NOT_INITIALIZED
        assert (await request(pipe, 2, "initialize", INITIALIZE))["result"]
        pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})  # without shutdown
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 1


async def test_a_second_initialize_is_refused_and_keeps_the_open_documents(
    tmp_path: Path,
) -> None:
    with FakeBackend(default_text="total + 1\n") as fake:
        async with spawned_server() as proc:
            pipe = RawPipe.of_process(proc)
            options = {**INITIALIZE, "initializationOptions": fast_settings(fake.url)}
            await request(pipe, 1, "initialize", options)
            pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            uri = (tmp_path / "t.py").as_uri()
            pipe.send(did_open(uri, "total = 0\nx = \n"))
            again = await request(pipe, 2, "initialize", options)
            assert again["error"]["code"] == INVALID_REQUEST
            assert "may only be sent once" in again["error"]["message"]
            reply = await request(pipe, 3, "textDocument/inlineCompletion", inline(uri, 1, 4))
            assert [item["insertText"] for item in reply["result"]["items"]] == ["total + 1"]
            await request(pipe, 4, "shutdown", None)


async def test_requests_after_shutdown_get_invalid_request_and_exit_still_ends() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        await request(pipe, 1, "initialize", INITIALIZE)
        pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert (await request(pipe, 2, "shutdown", None))["result"] is None
        late = await request(pipe, 3, "textDocument/hover", inline("file:///late.py", 0, 0))
        assert late["error"]["code"] == INVALID_REQUEST
        assert "after shutdown" in late["error"]["message"]
        assert (await request(pipe, 4, "shutdown", None))["error"]["code"] == INVALID_REQUEST
        pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 0
