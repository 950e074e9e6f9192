"""End to end: bad input gets a clear error in the reply or the log, and the server keeps
running without losing state.

After each bad input, a normal inline completion on a document opened before it still
returns the fake model's scripted text (`still_serving`). Malformed JSON-RPC, which no
LSP client library will send, goes over a raw stdio pipe instead of pytest-lsp.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from conftest import server_env, server_with_env, start_session
from fake_openai import FakeBackend
from lsp_helpers import (
    HEADER,
    RawPipe,
    cursor_at,
    inline_items,
    logs,
    open_document,
    partial_change,
    spawned_server,
    suggestion,
    wait_for_log,
    wait_for_shown,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

CANARY = "  # still here"
"""A comment: it parses after any complete statement, so the parse filter keeps it."""
CANARY_DOC = "value = 1█\n"
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
SERVER_NOT_INITIALIZED = -32002

pytestmark = pytest.mark.timeout(60)  # a server that stops answering fails, not hangs


async def open_canary(client: LanguageClient, fake: FakeBackend, workspace: Path) -> str:
    """Script the fake to answer CANARY and open a small document to ask it on."""
    fake.script([], default_text=CANARY + "\n")
    text, _ = cursor_at(CANARY_DOC)
    return open_document(client, workspace / "canary.py", text)


async def still_serving(client: LanguageClient, uri: str) -> None:
    """A normal completion on the canary document still gets the model's text."""
    _, position = cursor_at(CANARY_DOC)
    assert await suggestion(client, uri, position) == CANARY


def inline_params(uri: str, position: dict[str, Any]) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": position,
        "context": {"triggerKind": types.InlineCompletionTriggerKind.Invoked.value},
    }


async def raw_request(client: LanguageClient, method: str, params: object) -> Any:
    """Send a request as plain JSON, for params that lsprotocol refuses to build
    (negative positions); the reply's error is raised as a JsonRpcException."""
    msg_id = f"raw-{uuid.uuid4()}"
    reply: Future[Any] = Future()
    client.protocol._request_futures[msg_id] = reply
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(reply), timeout=5)


# --------------------------------------------------------------------------- positions

SHORT = "def f():\n    return 1\n"  # two lines of 8 and 12 characters, then an empty one
CRLF = "a = f\r\nb = 2\r\n"  # the canary after `f` still parses: "a = fstill_here()"


async def test_positions_outside_the_document_get_an_error_naming_the_position(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    uri = open_document(vscode, workspace / "short.py", SHORT)
    crlf = open_document(vscode, workspace / "crlf.py", CRLF)
    bad = [
        (uri, 2, 1, "position 2:1 is past the end"),  # just past the last line: only 0 is valid
        (uri, 3, 0, "position 3:0 is outside the document (2 lines)"),
        (uri, 7_000_000, 0, "position 7000000:0 is outside the document"),
        (uri, 0, 9, "position 0:9 is past the end of the line (8 characters)"),
        (uri, 1, 13, "position 1:13 is past the end of the line (12 characters)"),
        (crlf, 0, 6, "position 0:6 is past the end of the line (5 characters)"),  # \r is no column
    ]
    for doc, line, character, expected in bad:
        with pytest.raises(JsonRpcInvalidParams) as error:
            await inline_items(vscode, doc, types.Position(line=line, character=character))
        assert error.value.code == INVALID_PARAMS
        assert expected in error.value.message
        await still_serving(vscode, canary)

    # lsprotocol will not even build these; sent as raw JSON they fail validation
    for line, character, field, value in [
        (-1, 0, "line", -1),
        (0, -4, "character", -4),
        (2**31, 0, "line", 2**31),
    ]:
        params = inline_params(uri, {"line": line, "character": character})
        with pytest.raises(JsonRpcInvalidParams) as error:
            await raw_request(vscode, "textDocument/inlineCompletion", params)
        assert error.value.code == INVALID_PARAMS
        assert "@ $.params.position" in error.value.message
        assert f"Position.{field} should be in range" in error.value.message
        assert f"but was {value}" in error.value.message
        await still_serving(vscode, canary)

    # only the canary reached the model (its repeats come from the suggestion cache)
    assert len(fake.events()) == 1

    # the edges themselves are valid: end of a line, and column 0 of the line after the last
    assert await suggestion(vscode, uri, types.Position(line=0, character=8)) == CANARY
    assert fake.events()[-1]["prompt"].endswith(
        "def f():<|fim_suffix|>\n    return 1\n<|fim_middle|>"
    )
    assert await suggestion(vscode, uri, types.Position(line=2, character=0)) == CANARY
    assert fake.events()[-1]["prompt"].endswith("return 1\n<|fim_suffix|><|fim_middle|>")
    assert await suggestion(vscode, crlf, types.Position(line=0, character=5)) == CANARY
    assert "a = f<|fim_suffix|>\r\nb = 2" in fake.events()[-1]["prompt"]


# --------------------------------------------------------------------------- documents


async def test_a_document_that_is_not_open_gets_an_error_saying_so(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    never = (workspace / "never_opened.py").as_uri()
    closed = open_document(vscode, workspace / "closed.py", "x = 1\n")
    vscode.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=closed))
    )
    for uri in (never, closed):
        with pytest.raises(JsonRpcInvalidParams) as error:
            await inline_items(vscode, uri, types.Position(line=0, character=0))
        assert error.value.code == INVALID_PARAMS
        assert f"document {uri} is not open" in error.value.message
        await still_serving(vscode, canary)
    assert len(fake.events()) == 1  # the canary, once: its repeat came from the cache


async def test_an_open_document_with_an_escaped_uri_is_found(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """VS Code percent-escapes URIs (a space is %20); pygls files documents under the
    unescaped URI, so looking them up by the raw one said "not open"."""
    folder = workspace / "my notes"
    folder.mkdir()
    text, position = cursor_at("total = █\n")
    uri = open_document(vscode, folder / "a b.py", text)
    assert "%20" in uri
    fake.script([], default_text=CANARY + "\n")
    assert await suggestion(vscode, uri, position) == CANARY
    assert "<|file_sep|>my notes/a b.py\n<|fim_prefix|>total = " in fake.events()[-1]["prompt"]


def python_source(size: int) -> tuple[str, int]:
    """About `size` characters of Python and its number of lines."""
    block = "def function_{0}(value):\n    return value + {0}\n\n\n"
    parts, total, count = [], 0, 0
    while total < size:
        part = block.format(count)
        parts.append(part)
        total += len(part)
        count += 1
    return "".join(parts) + "TAIL = 1\n", count * 4 + 1


def insert(uri: str, version: int, line: int, text: str) -> types.DidChangeTextDocumentParams:
    here = types.Position(line=line, character=0)
    return partial_change(uri, version, here, here, text)


async def test_a_10_mb_document_gets_no_completion_and_one_log_line(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    text, lines = python_source(10_000_000)
    uri = open_document(vscode, workspace / "huge.py", text)
    vscode.text_document_did_change(insert(uri, 2, 0, "HEAD = 0\n"))
    vscode.text_document_did_change(insert(uri, 3, lines // 2, "MIDDLE = 5\n"))
    vscode.text_document_did_change(insert(uri, 4, lines + 1, "END = 9\n"))  # before TAIL

    for _ in range(2):
        assert await inline_items(vscode, uri, types.Position(line=0, character=8)) == []
    reason = f"no completions for {uri}: larger than 2000000 characters"
    assert logs(vscode).count(reason) == 1  # once per document, not once per keystroke
    assert fake.events() == []
    await still_serving(vscode, canary)

    # the edits were applied where they were made: cut it down to its first and last lines
    start, end = types.Position(line=1, character=0), types.Position(line=lines + 1, character=0)
    vscode.text_document_did_change(partial_change(uri, 5, start, end, ""))
    assert await suggestion(vscode, uri, types.Position(line=2, character=8)) == CANARY
    assert fake.events()[-1]["prompt"].endswith(
        "<|fim_prefix|>HEAD = 0\nEND = 9\nTAIL = 1<|fim_suffix|>\n<|fim_middle|>"
    )


async def test_binary_content_gets_no_completion_and_a_log_line(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    blob = "PK\x03\x04\x14\x00\x00\x00\x08\x00x = 1\n\x00\x00\xff\xfe\n"
    uri = open_document(vscode, workspace / "archive.py", blob)
    assert await inline_items(vscode, uri, types.Position(line=1, character=0)) == []
    assert f"no completions for {uri}: binary content (NUL bytes)" in logs(vscode)
    assert fake.events() == []
    await still_serving(vscode, canary)


# --------------------------------------------------------------------------- settings


async def test_bad_initialization_options_are_logged_by_field_and_the_defaults_used(
    fake: FakeBackend, workspace: Path
) -> None:
    """They are dropped, not kept: a later good update is not rejected for their sake."""
    options = {
        "backend": {"url": "ftp://x", "connectTimeoutMs": "soon"},
        "completion": {"maxTokens": 7},
    }
    async with server_with_env(server_env(HEADSTART_BACKEND_URL=fake.url)) as fresh:
        fresh.set_configuration({"completion": {"multilineMaxTokens": 99}}, section="headstart")
        await start_session(fresh, "vscode", workspace, options)

        log = await wait_for_log(fresh, f"settings applied: backend {fake.url}")
        assert "initializationOptions ignored, using the defaults" in log
        assert "backend.url: Value error, must start with http:// or https://" in log
        assert "backend.connectTimeoutMs: Input should be a valid integer" in log
        canary = await open_canary(fresh, fake, workspace)
        await still_serving(fresh, canary)
        assert fake.events()[-1]["max_tokens"] == 99  # the update's, and no maxTokens of 7


@pytest.mark.parametrize(
    "options",
    [["backend", "url"], {"headstart": "fast"}, 42],
    ids=["list", "section-string", "number"],
)
async def test_initialization_options_that_are_not_an_object_are_logged_and_ignored(
    fake: FakeBackend, workspace: Path, options: object
) -> None:
    async with server_with_env(server_env(HEADSTART_BACKEND_URL=fake.url)) as fresh:
        await start_session(fresh, "vscode", workspace, options)
        kind = "str" if isinstance(options, dict) else type(options).__name__
        await wait_for_log(
            fresh, f"initializationOptions must be an object, got {kind}; using the defaults"
        )
        canary = await open_canary(fresh, fake, workspace)
        await still_serving(fresh, canary)
        assert fake.events()[-1]["max_tokens"] == 128  # line mode goes on in the background


async def test_a_settings_section_that_is_not_an_object_keeps_the_last_good_settings(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    await still_serving(vscode, canary)

    vscode.set_configuration(["not", "an", "object"], section="headstart")  # pulled
    vscode.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for_log(
        vscode, "the 'headstart' settings section must be an object, got ['not', 'an', 'object']"
    )
    await still_serving(vscode, canary)

    vscode.workspace_did_change_configuration(  # pushed
        types.DidChangeConfigurationParams(settings={"headstart": 42})
    )
    await wait_for_log(vscode, "settings must be an object, got int; keeping the previous settings")
    await still_serving(vscode, canary)


async def test_unknown_settings_keys_are_rejected_by_name(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    canary = await open_canary(vscode, fake, workspace)
    vscode.set_configuration(
        {"backend": {"url": fake.url, "urll": "http://typo"}, "completions": {"maxTokens": 3}},
        section="headstart",
    )
    vscode.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    log = await wait_for_log(vscode, "keeping the previous settings")
    assert "backend.urll: Extra inputs are not permitted" in log
    assert "completions: Extra inputs are not permitted" in log
    await wait_for_shown(vscode, "backend.urll")
    await still_serving(vscode, canary)
    assert fake.events()[-1]["max_tokens"] == 128  # line mode goes on in the background


# --------------------------------------------------------------------------- raw stdio


async def test_malformed_messages_get_errors_and_the_process_survives(tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as stderr:
        async with spawned_server(stderr=stderr) as proc:
            await asyncio.wait_for(
                drive_malformed_session(RawPipe.of_process(proc), stderr_path), timeout=30
            )
            assert await asyncio.wait_for(proc.wait(), timeout=10) == 0  # `exit` after `shutdown`


async def drive_malformed_session(pipe: RawPipe, stderr_path: Path) -> None:
    pipe.send(b"this is not json")
    pipe.send(b"[1, 2, 3]")  # JSON, but not JSON-RPC
    pipe.send({"jsonrpc": "2.0"})  # JSON-RPC without a method or an id
    pipe.send({"jsonrpc": "2.0", "method": "headstart/noSuchNotification", "params": {}})
    pipe.send({"jsonrpc": "2.0", "id": 1, "method": "headstart/noSuchMethod", "params": {}})
    early_unknown = await pipe.reply(1)  # before initialize, whatever the method
    assert early_unknown["error"]["code"] == SERVER_NOT_INITIALIZED

    assert pipe.shown_errors() == []  # logged, not shown: nothing a user can act on

    bad_params = {"textDocument": "main.py", "position": {"line": "first", "character": None}}
    pipe.send(
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/inlineCompletion", "params": bad_params}
    )
    wrong = await pipe.reply(2)
    assert wrong["error"]["code"] == INVALID_PARAMS
    message = wrong["error"]["message"]
    assert message.startswith("invalid textDocument/inlineCompletion: ")
    for field in ("$.params.textDocument", "$.params.position.line", "$.params.context"):
        assert field in message

    pipe.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "textDocument/inlineCompletion",
            "params": inline_params("file:///main.py", {"line": 0, "character": 0}),
        }
    )
    early = await pipe.reply(3)  # before initialize
    assert early["error"]["code"] == SERVER_NOT_INITIALIZED
    assert "not initialized" in early["error"]["message"]

    pipe.send(
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    )
    initialized = await pipe.reply(4)
    assert initialized["result"]["serverInfo"]["name"] == "headstart"
    assert "inlineCompletionProvider" in initialized["result"]["capabilities"]
    pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    # cancels of a request already answered (as editors send in the normal course) and of
    # one never sent: ignored, as LSP says, with no warning (editors show stderr as errors)
    pipe.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 4}})
    pipe.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 99}})
    pipe.send({"jsonrpc": "2.0", "id": 6, "method": "headstart/noSuchMethod", "params": {}})
    unknown = await pipe.reply(6)
    assert unknown["error"]["code"] == METHOD_NOT_FOUND
    assert "headstart/noSuchMethod" in unknown["error"]["message"]
    pipe.send({"jsonrpc": "2.0", "id": 5, "method": "shutdown"})
    assert (await pipe.reply(5))["result"] is None
    pipe.send({"jsonrpc": "2.0", "method": "exit"})
    await pipe.stdin.drain()

    rest = await pipe.stdout.read()  # to EOF: the rest must be whole frames too
    while rest:
        found = HEADER.match(rest)
        assert found, f"stdout is not an LSP frame: {rest[:200]!r}"
        end = found.end() + int(found.group(1))
        assert json.loads(rest[found.end() : end])["jsonrpc"] == "2.0"
        rest = rest[end:]
    stderr = stderr_path.read_text()
    assert "Traceback" not in stderr and pipe.shown_errors() == []
    assert "not JSON (Expecting value" in stderr
    assert "no JSON-RPC message: b'[1, 2, 3]'" in stderr
    assert "invalid JSON-RPC message: " in stderr and "'method'" in stderr
    assert "Cancel notification" not in stderr


# --------------------------------------------------------------------------- UTF-16


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


async def test_positions_count_utf16_units_around_non_bmp_characters(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """VS Code counts columns in UTF-16 code units: 😀 and 𝄞 are two each, é one."""
    canary = await open_canary(vscode, fake, workspace)
    in_tuple = "still_here(),"  # parses in the middle of the tuple, where the cursor is
    fake.script([{"match": '<|fim_suffix|>"🎉")', "text": in_tuple + "\n"}], CANARY + "\n")
    line0 = 'title = "😀 café 𝄞"'
    before, after = 'pair = ("𝄞😀", ', '"🎉")'
    text = f"{line0}\n{before}{after}\n"
    uri = open_document(vscode, workspace / "emoji.py", text)

    position = types.Position(line=1, character=utf16_units(before))
    assert position.character == len(before) + 2
    items = await inline_items(vscode, uri, position)
    assert [item.insert_text for item in items] == [in_tuple]
    assert items[0].range == types.Range(start=position, end=position)
    prompt = fake.events()[-1]["prompt"]
    assert f"<|fim_prefix|>{line0}\n{before}<|fim_suffix|>{after}\n<|fim_middle|>" in prompt

    # the end of the first line is column 20 in UTF-16 (18 code points); 21 is past it
    end = types.Position(line=0, character=utf16_units(line0))
    assert end.character == len(line0) + 2
    assert await suggestion(vscode, uri, end) == CANARY
    assert f"<|fim_prefix|>{line0}<|fim_suffix|>\n{before}" in fake.events()[-1]["prompt"]
    with pytest.raises(JsonRpcInvalidParams) as error:
        await inline_items(vscode, uri, types.Position(line=0, character=end.character + 1))
    assert f"past the end of the line ({end.character} characters)" in error.value.message

    # an edit addressed in UTF-16 lands after the emoji, not inside it
    after_emoji = types.Position(line=1, character=utf16_units('pair = ("𝄞😀'))
    vscode.text_document_did_change(partial_change(uri, 2, after_emoji, after_emoji, "ü"))
    position = types.Position(line=1, character=utf16_units(before) + 1)
    assert await suggestion(vscode, uri, position) == in_tuple
    edited = 'pair = ("𝄞😀ü", <|fim_suffix|>"🎉")\n<|fim_middle|>'
    assert fake.events()[-1]["prompt"].endswith(f"<|fim_prefix|>{line0}\n{edited}")
    await still_serving(vscode, canary)
