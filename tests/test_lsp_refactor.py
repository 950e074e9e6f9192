"""Refactor code actions end to end: listed at once without the model, resolved through
the (fake) model, applied only when the answer parses, stays in place and keeps its
indentation; a clear message otherwise; progress, cancellation, and the rewrite command."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CONFIG, fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import open_document, partial_change, read_code_actions_as_editors_do
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pytest_lsp import LanguageClient
from shop_helpers import CHECKOUT, apply_edits, copy_shop, edits_of, syntax_errors, wait_for_index

REQUEST_FAILED = -32803


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return copy_shop(tmp_path)


def options(url: str) -> dict[str, Any]:
    """Short timeouts; answers of at most 32 tokens (the fake's tokens are `chunk_chars`
    characters: 64 in the good answers below, 1 where an answer must be cut off)."""
    settings = fast_settings(url)
    settings["refactor"] = {"maxTokens": 32, "timeoutMs": 3000}
    return settings


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, fake: FakeBackend, shop: Path
) -> AsyncIterator[None]:
    applied: list[types.ApplyWorkspaceEditParams] = []
    lsp_client.applied = applied  # type: ignore[attr-defined]
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    read_code_actions_as_editors_do(lsp_client)

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    await start_session(lsp_client, request.param, shop, options(fake.url))
    await wait_for_index(lsp_client)
    yield
    await lsp_client.shutdown_session()


TOTAL = """def total(basket, discount=0.0):
    subtotal = 0.0
    for product, quantity in basket.lines:
        subtotal += product.price * quantity
    subtotal -= subtotal * discount
    return subtotal * (1 + TAX_RATE)"""
DOCUMENTED = '''def total(basket, discount=0.0):
    """The price of `basket` less `discount` (a fraction of it), tax included."""
    subtotal = 0.0
    for product, quantity in basket.lines:
        subtotal += product.price * quantity
    subtotal -= subtotal * discount
    return subtotal * (1 + TAX_RATE)'''
TYPED = """def total(basket: Basket, discount: float = 0.0) -> float:
    subtotal = 0.0
    for product, quantity in basket.lines:
        subtotal += product.price * quantity
    subtotal -= subtotal * discount
    return subtotal * (1 + TAX_RATE)"""
EXTRACTED = """def subtotal_of(basket: Basket) -> float:
    subtotal = 0.0
    for product, quantity in basket.lines:
        subtotal += product.price * quantity
    return subtotal


def total(basket, discount=0.0):
    subtotal = subtotal_of(basket)
    subtotal -= subtotal * discount
    return subtotal * (1 + TAX_RATE)"""


def answer(match: str, code: str, **rule: Any) -> dict[str, Any]:
    """A fake-model rule answering prompts that contain `match` with `code`, closing the
    fence the prompt opened, as an instruct model does."""
    return {"match": match, "text": code + "\n```\nDone.", "chunk_chars": 64, **rule}


def position_of(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def actions_at(
    client: LanguageClient,
    uri: str,
    text: str,
    start: int,
    end: int | None = None,
    only: list[str] | None = None,
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=position_of(text, start), end=position_of(text, start if end is None else end)
            ),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    found = [a for a in result or [] if isinstance(a, types.CodeAction)]
    assert len(found) == len(result or [])
    return found


def titled(actions: list[types.CodeAction], start: str) -> types.CodeAction:
    (action,) = [a for a in actions if a.title.startswith(start)]
    return action


async def opened(client: LanguageClient, shop: Path) -> tuple[str, str]:
    path = shop / CHECKOUT
    return open_document(client, path), path.read_text()


def refactor_progress(client: LanguageClient) -> list[list[Any]]:
    return [
        reports
        for token, reports in client.progress_reports.items()
        if str(token).startswith("headstart-refactor-")
    ]


async def test_actions_are_listed_at_once_without_the_model(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    uri, text = await opened(editor, shop)
    inside = text.index("subtotal -= ")

    actions = await actions_at(editor, uri, text, inside)
    assert [(a.title, a.kind) for a in actions] == [
        ("Headstart: add a docstring to `total`", "refactor.rewrite.docstring"),
        ("Headstart: add type hints to `total`", "refactor.rewrite.typeHints"),
        ("Headstart: rewrite `total` with an instruction…", "refactor.rewrite.instruction"),
    ]
    rewrite = actions[2]
    assert rewrite.command is not None and rewrite.command.command == "headstart.rewrite"
    assert all(a.edit is None for a in actions)  # the model runs on resolve only

    loop = text.index("    subtotal = 0.0")
    selected = await actions_at(editor, uri, text, loop, text.index("    subtotal -= "))
    assert [a.title for a in selected] == [
        "Headstart: add docstrings to the selected lines",
        "Headstart: add type hints to the selected lines",
        "Headstart: extract the selected lines into a function",
        "Headstart: rewrite the selected lines with an instruction…",
    ]
    only = await actions_at(
        editor, uri, text, loop, text.index("    subtotal -= "), ["refactor.extract"]
    )
    assert [a.kind for a in only] == ["refactor.extract.function"]
    method = await actions_at(editor, uri, text, text.index("amount = total"))
    assert method[0].title == "Headstart: add a docstring to `ring_up`"
    assert await actions_at(editor, uri, text, text.index("\n\n\nclass Till") + 1) == []
    assert fake.events() == []


async def resolve_at(
    editor: LanguageClient,
    fake: FakeBackend,
    shop: Path,
    asked: str,
    answer_text: str,
    at: str,
    title: str,
) -> tuple[str, str, types.CodeAction]:
    """Open the shop's checkout, script the model's answer to `asked`, take the action
    titled `title` at the first `at`, resolve it: the text before, after, and the action."""
    uri, text = await opened(editor, shop)
    fake.script([answer(asked, answer_text)])
    action = titled(await actions_at(editor, uri, text, text.index(at)), title)
    resolved = await editor.code_action_resolve_async(action)
    return text, apply_edits(text, edits_of(resolved.edit, uri)), resolved


async def test_a_docstring_is_applied_when_the_answer_parses_and_changes_no_code(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    text, changed, _ = await resolve_at(
        editor,
        fake,
        shop,
        "Add documentation to `total`",
        DOCUMENTED,
        "subtotal -=",
        "Headstart: add a doc",
    )
    assert changed == text.replace(TOTAL, DOCUMENTED)
    assert syntax_errors(changed) == []
    prompt = fake.events()[-1]["prompt"]
    assert prompt.startswith("<|im_start|>system\n")
    assert prompt.endswith("<|im_start|>assistant\n```python\n")
    assert "From shop/models.py:\n```python\nTAX_RATE = 0.2\n```" in prompt  # cross-file
    assert f"Code to change (lines 6-11 of shop/checkout.py):\n```python\n{TOTAL}\n```" in prompt
    assert "class Till:" in prompt.split("Code to change")[0]  # the code after it
    assert fake.events()[-1]["max_tokens"] == 32
    (reports,) = refactor_progress(editor)
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "Headstart: add a docstring to `total`"
    assert reports[0].cancellable is True
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "done"


async def test_type_hints_are_applied_and_the_edit_is_versioned_where_the_client_allows(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    text, changed, resolved = await resolve_at(
        editor, fake, shop, "Add type hints to `total`", TYPED, "def total", "Headstart: add type"
    )
    assert resolved.edit is not None
    if editor.editor == "vscode":  # type: ignore[attr-defined]
        (change,) = resolved.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit) and change.text_document.version == 1
    else:  # Neovim takes plain `changes`
        assert resolved.edit.changes is not None
    assert changed == text.replace(TOTAL, TYPED)
    assert syntax_errors(changed) == []


async def test_extract_a_function_from_selected_lines(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    uri, text = await opened(editor, shop)
    fake.script([answer("Extract these lines", EXTRACTED)])
    start, end = text.index("    subtotal = 0.0"), text.index("    subtotal -= ")
    action = titled(await actions_at(editor, uri, text, start, end), "Headstart: extract")

    resolved = await editor.code_action_resolve_async(action)

    changed = apply_edits(text, edits_of(resolved.edit, uri))
    assert changed == text.replace(TOTAL, EXTRACTED)
    assert syntax_errors(changed) == []
    prompt = fake.events()[-1]["prompt"]
    assert (
        "Extract these lines of the code to change into a new function with a descriptive "
        "name:\n```\n    subtotal = 0.0\n    for product, quantity in basket.lines:\n"
        "        subtotal += product.price * quantity\n```" in prompt
    )


RING_UP = """    def ring_up(self, basket: Basket) -> str:
        amount = total(basket)
        receipt = f"{self.name}: {amount:.2f}"
        return receipt"""
RING_UP_AT_COLUMN_0 = '''def ring_up(self, basket: Basket) -> str:
    """The receipt line for `basket`."""
    amount = total(basket)
    receipt = f"{self.name}: {amount:.2f}"
    return receipt'''


async def test_an_answer_written_at_column_0_is_shifted_to_the_methods_indentation(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    text, changed, _ = await resolve_at(
        editor,
        fake,
        shop,
        "Add documentation to `ring_up`",
        RING_UP_AT_COLUMN_0,
        "amount = total",
        "Headstart: add a doc",
    )
    expected = "\n".join(
        "    " + line if line else line for line in RING_UP_AT_COLUMN_0.split("\n")
    )
    assert changed == text.replace(RING_UP, expected)
    assert syntax_errors(changed) == []


async def test_rewrite_with_an_instruction_applies_its_edit_through_the_editor(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    uri, text = await opened(editor, shop)
    rewritten = (
        "class Till:\n    def __init__(self, name):\n        self.name = name.upper()\n\n" + RING_UP
    )
    fake.script([answer("store the name in upper case", rewritten)])
    action = titled(
        await actions_at(editor, uri, text, text.index("class Till")), "Headstart: rewrite"
    )
    assert action.command is not None
    (argument,) = action.command.arguments or []
    instructed = {**argument, "instruction": "store the name in upper case"}  # the client asks

    result = await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(command=action.command.command, arguments=[instructed])
    )

    assert result == {"applied": True}
    (applied,) = editor.applied  # type: ignore[attr-defined]
    assert applied.label == "Headstart: rewrite `Till`"
    changed = apply_edits(text, edits_of(applied.edit, uri))
    assert changed == text.replace("self.name = name\n", "self.name = name.upper()\n")
    assert (
        "Rewrite the code to change as follows: store the name in upper case"
        in (fake.events()[-1]["prompt"])
    )


async def test_rewrite_without_an_instruction_says_the_client_must_ask_for_one(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    uri, text = await opened(editor, shop)
    action = titled(
        await actions_at(editor, uri, text, text.index("def cheapest")), "Headstart: rewrite"
    )
    assert action.command is not None
    with pytest.raises(JsonRpcInvalidParams, match="needs an instruction"):
        await editor.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command=action.command.command, arguments=action.command.arguments
            )
        )
    assert "needs an instruction" in editor.messages[-1].message
    assert fake.events() == []


def changed_code(code: str) -> str:
    return code.replace("return subtotal * (1 + TAX_RATE)", "return subtotal")


BAD_ANSWERS = {
    "garbage": (answer("Add documentation", "this is ) not python ("), "does not parse as python"),
    "code changed": (
        answer("Add documentation", changed_code(DOCUMENTED)),
        "changed the code itself, not only its documentation",
    ),
    "indentation": (
        answer("Add documentation", DOCUMENTED.replace("    return", "  return")),
        "does not keep the indentation of `total`: its line 7 is not aligned with the "
        "statements of its block",
    ),
    "spills": (
        answer("Add documentation", DOCUMENTED + "\n\n\nclass Till:"),
        "goes beyond `total`: it repeats `class Till:`",
    ),
    "unchanged": (answer("Add documentation", TOTAL), "is `total` unchanged"),
    "no code": (answer("Add documentation", ""), "answered no code"),
    "cut off": (
        answer("Add documentation", DOCUMENTED, chunk_chars=1),
        "cut off at refactor.maxTokens (32 tokens)",
    ),
    "stalls": (
        answer("Add documentation", DOCUMENTED, chunk_chars=8, behaviour="stall", after_chunks=1),
        "the model did not answer: no next chunk within 500 ms",
    ),
    "too slow": (
        answer("Add documentation", DOCUMENTED, chunk_chars=8, chunk_delay_ms=150),
        "took longer than 3 s (refactor.timeoutMs)",
    ),
    "HTTP 500": (
        answer("Add documentation", DOCUMENTED, behaviour="http_500"),
        "the model did not answer: backend answered HTTP 500",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
async def test_an_unusable_answer_is_refused_with_a_message_and_nothing_applied(
    vscode_shop: LanguageClient, fake: FakeBackend, shop: Path, case: str
) -> None:
    client = vscode_shop
    rule, reason = BAD_ANSWERS[case]
    uri, text = await opened(client, shop)
    fake.script([rule])
    action = titled(
        await actions_at(client, uri, text, text.index("subtotal -=")), "Headstart: add a doc"
    )

    with pytest.raises(JsonRpcException) as failure:
        await client.code_action_resolve_async(action)

    assert failure.value.code == REQUEST_FAILED
    assert failure.value.message.startswith("Headstart: add a docstring to `total`: ")
    assert reason in failure.value.message
    shown = client.messages[-1]
    assert shown.type == types.MessageType.Warning and reason in shown.message
    (reports,) = refactor_progress(client)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    fake.script([answer("Add documentation", DOCUMENTED)])  # the server still serves
    assert (await client.code_action_resolve_async(action)).edit is not None


@pytest_lsp.fixture(config=CONFIG)
async def vscode_shop(
    lsp_client: LanguageClient, fake: FakeBackend, shop: Path
) -> AsyncIterator[None]:
    read_code_actions_as_editors_do(lsp_client)
    await start_session(lsp_client, "vscode", shop, options(fake.url))
    await wait_for_index(lsp_client)
    yield
    await lsp_client.shutdown_session()


STALL = {"behaviour": "stall_forever", "after_chunks": 1, "chunk_chars": 8}


def streaming(events: list[dict[str, Any]]) -> bool:
    return bool(events) and events[-1]["chunks_sent"] >= 1


async def test_cancel_request_closes_the_models_stream(
    vscode_shop: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    client = vscode_shop
    uri, text = await opened(client, shop)
    fake.script([answer("Add documentation", DOCUMENTED, **STALL)])
    action = titled(
        await actions_at(client, uri, text, text.index("subtotal -=")), "Headstart: add a doc"
    )
    reply = asyncio.wrap_future(
        client.protocol.send_request(types.CODE_ACTION_RESOLVE, action, msg_id="resolve-1")
    )
    await fake.wait_for_async(streaming, timeout=5)

    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="resolve-1"))

    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(reply, 5)
    (event,) = await fake.wait_for_async(lambda e: e[-1]["closed_by"] is not None)
    assert event["closed_by"] == "client" and not event["completed"]


async def test_cancelling_the_progress_cancels_the_generation(
    vscode_shop: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    client = vscode_shop
    uri, text = await opened(client, shop)
    fake.script([answer("Add documentation", DOCUMENTED, **STALL)])
    action = titled(
        await actions_at(client, uri, text, text.index("subtotal -=")), "Headstart: add a doc"
    )
    reply = asyncio.ensure_future(client.code_action_resolve_async(action))
    await fake.wait_for_async(streaming, timeout=5)
    (token,) = [t for t in client.progress_reports if str(t).startswith("headstart-refactor-")]

    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    with pytest.raises(JsonRpcException, match="add a docstring to `total`: cancelled"):
        await asyncio.wait_for(reply, 5)
    (event,) = await fake.wait_for_async(lambda e: e[-1]["closed_by"] is not None)
    assert event["closed_by"] == "client" and not event["completed"]
    assert client.progress_reports[token][-1].message == "cancelled"


async def test_an_action_for_code_that_changed_since_is_refused(
    vscode_shop: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    client = vscode_shop
    uri, text = await opened(client, shop)
    action = titled(
        await actions_at(client, uri, text, text.index("subtotal -=")), "Headstart: add a doc"
    )
    where = position_of(text, text.index("discount=0.0"))
    client.text_document_did_change(partial_change(uri, 2, where, where, "x, "))

    with pytest.raises(JsonRpcException, match="the code changed since this action was offered"):
        await client.code_action_resolve_async(action)
    assert fake.events() == []


async def test_bad_requests_get_errors_naming_the_problem(
    vscode_shop: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    client = vscode_shop
    uri, text = await opened(client, shop)
    with pytest.raises(JsonRpcInvalidParams, match="is not open"):
        await actions_at(client, (shop / "nowhere.py").as_uri(), text, 0)
    with pytest.raises(JsonRpcInvalidParams, match="outside the document"):
        await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=500, character=0),
                    end=types.Position(line=501, character=0),
                ),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
    with pytest.raises(JsonRpcInvalidParams, match="not made by Headstart"):
        await client.code_action_resolve_async(types.CodeAction(title="someone else's"))
    with pytest.raises(JsonRpcInvalidParams, match="takes one argument"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="headstart.rewrite", arguments=[])
        )
    with pytest.raises(JsonRpcInvalidParams, match="`range` must be an LSP range"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="headstart.rewrite",
                arguments=[{"uri": uri, "range": "all of it", "instruction": "tidy"}],
            )
        )
    assert fake.events() == []
    assert await actions_at(client, uri, text, text.index("subtotal -="))
