"""Small steps an editor takes, for tests: open a file, ask for a suggestion."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient


def open_document(
    client: LanguageClient, path: Path, text: str | None = None, language_id: str = "python"
) -> str:
    """Send didOpen for `path` (with `text`, or its contents on disk); return its URI."""
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri,
                language_id=language_id,
                version=1,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return uri


def cursor_at(text: str, marker: str = "█") -> tuple[str, types.Position]:
    """Remove `marker` from `text`; return the text and the marker's position."""
    before, _, after = text.partition(marker)
    line = before.count("\n")
    character = len(before) - (before.rfind("\n") + 1)
    return before + after, types.Position(line=line, character=character)


async def inline_items(
    client: LanguageClient, uri: str, position: types.Position
) -> list[types.InlineCompletionItem]:
    result = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position,
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
    )
    if result is None:
        return []
    return list(result.items if isinstance(result, types.InlineCompletionList) else result)


async def suggestion(client: LanguageClient, uri: str, position: types.Position) -> str:
    """The text of the first inline suggestion, '' when there is none."""
    items = await inline_items(client, uri, position)
    if not items:
        return ""
    text = items[0].insert_text
    return text if isinstance(text, str) else text.value


def logs(client: LanguageClient) -> str:
    """Everything the server wrote to the editor's log so far."""
    return "\n".join(message.message for message in client.log_messages)
