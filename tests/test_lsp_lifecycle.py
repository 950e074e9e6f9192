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
            for _ in range(100):
                try:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("headstart serve --tcp never listened")
            pipe = RawPipe(reader, writer)
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
