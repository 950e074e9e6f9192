"""Hovers name the cross-file definition completion would use, and say whether the
completion context shows it right now. No model call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CONFIG, fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import open_document, partial_change, suggestion
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient
from shop_helpers import CHECKOUT, MODELS, copy_shop, wait_for_index


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return copy_shop(tmp_path)


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, fake: FakeBackend, shop: Path
) -> AsyncIterator[None]:
    await start_session(lsp_client, request.param, shop, fast_settings(fake.url))
    await wait_for_index(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def hover_at(
    client: LanguageClient, uri: str, text: str, needle: str, skip: int = 0
) -> types.Hover | None:
    """Hover on the second character of the `skip`-th occurrence of `needle`."""
    offset = -1
    for _ in range(skip + 1):
        offset = text.index(needle, offset + 1)
    offset += 1
    line = text.count("\n", 0, offset)
    character = offset - (text.rfind("\n", 0, offset) + 1)
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )


def value(hover: types.Hover | None) -> str:
    assert hover is not None, "no hover"
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    return hover.contents.value


async def test_a_hover_shows_the_definition_from_the_other_file(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    path = shop / CHECKOUT
    text = path.read_text()
    uri = open_document(editor, path)

    hover = await hover_at(editor, uri, text, "Basket) -> str")
    models = (shop / MODELS).as_uri()
    assert value(hover) == (
        "```python\nclass Basket:\n```\n\n"
        "Products a customer is about to buy.\n\n"
        f"[shop/models.py:16]({models}#L16) · *not in the completion context now*"
    )
    assert hover is not None and hover.range is not None
    line = text.split("\n")[hover.range.start.line]
    assert line[hover.range.start.character : hover.range.end.character] == "Basket"
    assert fake.events() == []  # no model call


async def test_hovers_follow_module_attributes_aliases_and_constants(
    editor: LanguageClient, shop: Path
) -> None:
    path = shop / CHECKOUT
    text = path.read_text()
    uri = open_document(editor, path)
    models = (shop / MODELS).as_uri()

    assert value(await hover_at(editor, uri, text, "Basket()")) == (
        "```python\nclass Basket:\n```\n\nProducts a customer is about to buy.\n\n"
        f"[shop/models.py:16]({models}#L16) · *not in the completion context now*"
    )
    assert value(await hover_at(editor, uri, text, "models.Basket()")) == (
        f"module `shop/models.py`\n\n[shop/models.py:1]({models}#L1) · "
        "*not in the completion context now*"
    )
    assert value(await hover_at(editor, uri, text, "TAX_RATE)")) == (
        "```python\nTAX_RATE = 0.2\n```\n\n"
        f"[shop/models.py:5]({models}#L5) · *not in the completion context now*"
    )


async def test_a_hover_says_when_the_completion_context_shows_the_definition(
    editor: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    path = shop / CHECKOUT
    text = path.read_text()
    uri = open_document(editor, path)
    anchor = "        return receipt\n"
    at = text.index(anchor) + len(anchor)
    line = text.count("\n", 0, at)
    typed = "        basket."
    here = types.Position(line=line, character=0)
    editor.text_document_did_change(partial_change(uri, 2, here, here, typed + "\n"))
    text = text[:at] + typed + "\n" + text[at:]
    fake.script([], default_text="add(product)\n")
    assert value(await hover_at(editor, uri, text, "Basket) -> str")).endswith(
        "· *not in the completion context now*"
    )

    assert await suggestion(editor, uri, types.Position(line=line, character=len(typed)))
    assert "class Basket:" in fake.events()[-1]["prompt"]

    assert value(await hover_at(editor, uri, text, "Basket) -> str")).endswith(
        "· *in the completion context now*"
    )


async def test_a_typed_local_name_shows_its_types_definition(
    editor: LanguageClient, shop: Path
) -> None:
    """As completion resolves `basket.` through `basket: Basket`, so does the hover."""
    path = shop / CHECKOUT
    text = path.read_text()
    uri = open_document(editor, path)
    assert value(await hover_at(editor, uri, text, "basket: Basket")).startswith(
        "```python\nclass Basket:\n```"
    )


async def test_no_hover_for_local_names_builtins_blanks_and_comments(
    editor: LanguageClient, shop: Path
) -> None:
    path = shop / CHECKOUT
    text = path.read_text()
    uri = open_document(editor, path)
    for needle in ("total(basket)", "min(", "\n\n\nclass", "ruff: noqa", "subtotal", "receipt"):
        assert await hover_at(editor, uri, text, needle) is None, needle


async def test_bad_hover_requests_get_errors_and_the_server_keeps_serving(
    editor: LanguageClient, shop: Path
) -> None:
    path = shop / CHECKOUT
    text = path.read_text()
    with pytest.raises(JsonRpcInvalidParams, match="is not open"):
        await hover_at(editor, path.as_uri(), text, "Basket")
    uri = open_document(editor, path)
    with pytest.raises(JsonRpcInvalidParams, match="outside the document"):
        await editor.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=999, character=0),
            )
        )
    assert await hover_at(editor, uri, text, "Basket)") is not None
