"""VS Code resolves every code action that has no edit before it runs it, the rewrite action
(whose command does the work) included: the server hands that one back as it is."""

from __future__ import annotations

from pathlib import Path

from lsp_helpers import open_document, read_code_actions_as_editors_do
from lsprotocol import types
from pytest_lsp import LanguageClient


async def test_resolving_the_rewrite_action_returns_it_with_its_command(
    vscode: LanguageClient, workspace: Path
) -> None:
    read_code_actions_as_editors_do(vscode)
    path = workspace / "main.py"
    uri = open_document(vscode, path)
    line = path.read_text().splitlines().index('    depot = Warehouse("Depot")')
    here = types.Position(line=line, character=4)
    actions = await vscode.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=here, end=here),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (rewrite,) = [
        a
        for a in actions or []
        if isinstance(a, types.CodeAction) and a.kind == "refactor.rewrite.instruction"
    ]
    assert rewrite.command is not None and rewrite.edit is None

    resolved = await vscode.code_action_resolve_async(rewrite)

    assert resolved.title == rewrite.title
    assert resolved.command == rewrite.command
