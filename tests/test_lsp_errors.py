"""Errors reach the client as JSON-RPC errors with one log line each: no traceback outside
the debug log, no pop-up for what the user cannot act on; and text the backend's encoder
cannot take is sent with replacement characters instead of failing the request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeBackend
from lsp_helpers import INITIALIZE, RawPipe, open_document, spawned_server, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient

INVALID_PARAMS = -32602

pytestmark = pytest.mark.timeout(60)


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_client_mistakes_get_one_line_each_and_no_pop_up(tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.log"
    uri = (tmp_path / "never_opened.py").as_uri()
    with stderr_path.open("wb") as stderr:
        async with spawned_server(stderr=stderr) as proc:
            pipe = RawPipe.of_process(proc)
            pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
            await pipe.reply(1)
            pipe.send(notification("initialized", {}))
            pipe.send(notification("$/cancelRequest", {"id": {"not": "an id"}}))
            change = {
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "text": "x",
            }
            pipe.send(
                notification(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]},
                )
            )
            document = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
            pipe.send(notification("textDocument/didOpen", {"textDocument": document}))
            past = {
                "textDocument": {"uri": uri},
                "position": {"line": 0, "character": 99},
                "context": {"triggerKind": 2},
            }
            pipe.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "textDocument/inlineCompletion",
                    "params": past,
                }
            )
            error = (await pipe.reply(2))["error"]
            assert (
                error["code"] == INVALID_PARAMS and "past the end of the line" in error["message"]
            )
            pipe.send({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
            assert (await pipe.reply(3))["result"] is None
            assert pipe.shown_errors() == []
    text = stderr_path.read_text()
    assert "Traceback" not in text and "KeyError" not in text, text
    assert text.count("no JSON-RPC id: ignored") == 1, text
    assert text.count("which is not open, ignored") == 1, text
    assert text.count("past the end of the line") == 1, text


async def test_a_lone_surrogate_goes_to_the_model_as_a_replacement_character(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Half an emoji (an editor may hold one) made every completion in the document fail
    with a UnicodeEncodeError from the backend request's encoder."""
    fake.script([{"text": "2\n"}])
    uri = open_document(vscode, workspace / "half.py", "s = '\ud83d'\nvalue = ")
    position = types.Position(line=1, character=8)
    assert await suggestion(vscode, uri, position) == "2"
    assert "s = '\ufffd'\nvalue = " in fake.events()[-1]["prompt"]
