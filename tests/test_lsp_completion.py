"""End to end: the server spawned over stdio, driven as VS Code and Neovim drive it,
with suggestions streamed from the fake model over real HTTP/SSE."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import pytest
from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import (
    cursor_at,
    inline_items,
    logs,
    open_document,
    suggestion,
    wait_for_log,
    wait_for_shown,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

TOTALS = """from inventory.models import Item


def total(items: list[Item]) -> float:
    return sum(█)
"""


async def test_inline_completion_returns_the_models_text_at_the_cursor(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([{"match": "def total", "text": "item.value() for item in items)\n"}])
    text, position = cursor_at(TOTALS)
    uri = open_document(vscode, workspace / "inventory" / "totals.py", text)

    items = await inline_items(vscode, uri, position)

    assert len(items) == 1
    # the model repeated the ')' that is already after the cursor: it is dropped
    assert items[0].insert_text == "item.value() for item in items"
    assert items[0].range == types.Range(start=position, end=position)
    request = fake.events()[-1]
    assert request["stream"] is True
    prompt = request["prompt"]
    assert prompt.startswith("<|repo_name|>sample_project\n<|file_sep|>inventory/totals.py\n")
    assert (
        prompt.index("return sum(")
        < prompt.index("<|fim_suffix|>")
        < prompt.index("<|fim_middle|>")
    )
    assert prompt.endswith(")\n<|fim_middle|>")


async def test_block_mode_after_a_def_line_stops_at_the_next_definition(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    body = "\n    return [i for i in items if i.quantity == 0]\n\n\ndef other():\n    pass\n"
    fake.script([{"match": "def empty", "text": body}])
    text, position = cursor_at("def empty(items):█\n")
    uri = open_document(vscode, workspace / "empty.py", text)

    assert await suggestion(vscode, uri, position) == (
        "\n    return [i for i in items if i.quantity == 0]"
    )
    assert fake.events()[-1]["max_tokens"] == 128  # block mode asks for more tokens


async def test_both_editors_get_the_suggestion(
    client: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """VS Code asks for inline completion; Neovim 0.11, which has none, gets one
    completion item that extends the word being typed."""
    fake.script([{"match": "VAT", "text": "_RATE * amount\n"}])
    text, position = cursor_at("VAT_RATE = 0.2\ntax = VAT█\n")
    uri = open_document(client, workspace / "tax.py", text)

    if client.editor == "vscode":  # type: ignore[attr-defined]
        assert await suggestion(client, uri, position) == "_RATE * amount"
        return
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position
        )
    )
    assert isinstance(result, types.CompletionList)
    (item,) = result.items
    assert item.text_edit == types.TextEdit(
        range=types.Range(start=types.Position(line=1, character=6), end=position),
        new_text="VAT_RATE * amount",
    )
    assert item.filter_text == "VAT_RATE * amount"
    assert item.label == "VAT_RATE * amount"


async def test_completion_fallback_is_empty_for_clients_with_inline_completion(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([], default_text="anything")
    text, position = cursor_at("x = █\n")
    uri = open_document(vscode, workspace / "x.py", text)
    result = await vscode.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position
        )
    )
    assert isinstance(result, types.CompletionList) and not result.items
    assert fake.events() == []  # no model call for a duplicate of the inline suggestion


async def test_incremental_edits_are_applied_before_completing(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([{"match": "alpha = 1\nbeta<|fim_suffix|>", "text": " = alpha + 1\n"}])
    uri = open_document(vscode, workspace / "edit.py", "alpha = 1\n\n")
    for column, char in enumerate("beta"):
        here = types.Position(line=1, character=column)
        vscode.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=column + 2),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=here, end=here), text=char
                    )
                ],
            )
        )
    assert await suggestion(vscode, uri, types.Position(line=1, character=4)) == " = alpha + 1"


async def test_a_language_switched_off_gets_no_model_call(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    options = fast_settings(fake.url, languages={"*": True, "markdown": False})
    await start_session(fresh, "vscode", workspace, options)
    fake.script([], default_text="text")
    uri = open_document(fresh, workspace / "notes.md", "# Notes\n", language_id="markdown")
    assert await inline_items(fresh, uri, types.Position(line=1, character=0)) == []
    assert fake.events() == []


async def test_a_bad_settings_update_keeps_the_last_good_settings(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([], default_text="one()\n")
    text, position = cursor_at("x = █\n")
    uri = open_document(vscode, workspace / "cfg.py", text)

    vscode.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"headstart": {"backend": {"url": "nope"}}})
    )
    await asyncio.sleep(0.2)
    assert "backend.url" in logs(vscode)
    assert "keeping the previous settings" in logs(vscode)
    await wait_for_shown(vscode, "backend.url")
    assert await suggestion(vscode, uri, position) == "one()"


async def test_pulled_workspace_configuration_is_applied(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """(Except the settings a repository must not choose: tests/test_lsp_settings.py.)"""
    fake.script([], default_text="one()\n")
    text, position = cursor_at("x = █\n")
    uri = open_document(vscode, workspace / "cfg.py", text)
    assert await suggestion(vscode, uri, position) == "one()"
    assert fake.events()[-1]["max_tokens"] == 128

    vscode.set_configuration({"completion": {"multilineMaxTokens": 77}}, section="headstart")
    vscode.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(100):  # the pull's answer, applied
        if logs(vscode).count("settings applied") == 2:
            break
        await asyncio.sleep(0.05)
    text, position = cursor_at("y = █\n")
    uri = open_document(vscode, workspace / "cfg2.py", text)
    assert await suggestion(vscode, uri, position) == "one()"
    assert fake.events()[-1]["max_tokens"] == 77


async def test_the_api_key_from_the_environment_is_sent_as_a_bearer_token(
    keyed: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """...and never logged, not even at debug level, in the editor's log or the file."""
    log_file = tmp_path / "server.log"
    with FakeBackend(api_key="s3cret", default_text="ok\n") as secured:
        settings = fast_settings(secured.url)
        settings["log"] = {"level": "debug", "file": str(log_file)}
        await start_session(keyed, "vscode", workspace, settings)
        text, position = cursor_at("x = █\n")
        uri = open_document(keyed, workspace / "key.py", text)
        assert await suggestion(keyed, uri, position) == "ok"
        assert secured.events()[-1]["headers"]["authorization"] == "Bearer s3cret"
        assert "s3cret" not in logs(keyed)
        assert "inline completion" in log_file.read_text()
        assert "s3cret" not in log_file.read_text()


def non_loopback_address() -> str | None:
    """An IPv4 address of this machine other than loopback, or None."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only a route is chosen
        address = str(probe.getsockname()[0])
        return None if address.startswith("127.") else address
    return None


async def test_the_api_key_never_goes_to_a_remote_backend_over_plain_http(
    keyed: LanguageClient, workspace: Path
) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no address other than loopback")
    with FakeBackend(default_text="ok\n", host=address) as remote:
        await start_session(keyed, "vscode", workspace, fast_settings(remote.url))
        text, position = cursor_at("x = █\n")
        uri = open_document(keyed, workspace / "remote.py", text)
        assert await suggestion(keyed, uri, position) == "ok"
        assert "authorization" not in remote.events()[-1]["headers"]
        await wait_for_log(keyed, f"not sending the API key to {remote.url}")


async def test_a_wrong_api_key_gives_an_empty_result_and_a_clear_log_line(
    fresh: LanguageClient, workspace: Path
) -> None:
    with FakeBackend(api_key="other", default_text="ok\n") as secured:
        await start_session(fresh, "vscode", workspace, fast_settings(secured.url))
        text, position = cursor_at("x = █\n")
        uri = open_document(fresh, workspace / "key.py", text)
        assert await inline_items(fresh, uri, position) == []
        assert "HTTP 401" in logs(fresh)


async def test_an_unreachable_backend_gives_an_empty_result_and_a_log_line(
    fresh: LanguageClient, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings("http://127.0.0.1:9/v1"))
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "down.py", text)
    assert await inline_items(fresh, uri, position) == []
    assert "cannot reach http://127.0.0.1:9/v1" in logs(fresh)
