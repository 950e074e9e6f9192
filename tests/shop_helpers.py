"""The `refactor_py` fixture project (a small shop) for the refactor, semantic-token and
hover tests, and the steps those tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient
from tree_sitter import Node

from server.completion.cursor import parse

SHOP = Path(__file__).resolve().parent / "fixtures" / "refactor_py"
CHECKOUT = "shop/checkout.py"
MODELS = "shop/models.py"


def copy_shop(tmp_path: Path) -> Path:
    """A fresh copy of the shop project (tests write to it)."""
    return Path(shutil.copytree(SHOP, tmp_path / "shop_project"))


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """`text` with LSP edits applied (positions in UTF-16 units; the fixtures are ASCII)."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        return offsets[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def edits_of(edit: types.WorkspaceEdit | None, uri: str) -> list[types.TextEdit]:
    """The text edits a workspace edit makes to `uri` (from `changes` or
    `documentChanges`, whichever the server used)."""
    assert edit is not None, "the action has no edit"
    found: list[types.TextEdit] = []
    if edit.changes:
        found.extend(edit.changes.get(uri, []))
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit), change
        if change.text_document.uri == uri:
            found.extend(e for e in change.edits if isinstance(e, types.TextEdit))
    return found


def syntax_errors(text: str) -> list[str]:
    """The syntax errors tree-sitter finds in Python `text` (empty when it parses)."""
    root = parse(text.encode(), "python")
    assert root is not None
    errors: list[str] = []
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            errors.append(f"{node.type} at {node.start_point}")
        elif node.has_error:
            stack.extend(node.children)
    return errors


async def wait_for_index(client: LanguageClient) -> None:
    from test_lsp_indexing import wait_for_progress_end

    await wait_for_progress_end(client)
