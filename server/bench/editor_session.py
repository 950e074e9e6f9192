"""A scripted editor: spawns `headstart serve` and drives it over LSP, key by key.

Used by `headstart demo`, the latency benchmark and the repository-level quality benchmark,
so all of them measure what an editor sees: the time from sending
textDocument/inlineCompletion to receiving the reply, and the text it would show.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import PositionCodec

from cache.paths import path_to_uri
from server.lsp.protocol import COMPLETION_REPORT, STATUS

POSITIONS = PositionCodec(types.PositionEncodingKind.Utf16)
"""Columns are counted here in code points and sent in UTF-16 code units, the encoding
this client offers, as VS Code does: a character past U+FFFF (an emoji) takes two, so
sending code points would put every edit after it one place off."""


def vscode_like_capabilities() -> types.ClientCapabilities:
    """What VS Code with vscode-languageclient 10 announces for the features we use."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            inline_completion=types.InlineCompletionClientCapabilities(),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16]
        ),
    )


@dataclass
class OpenDocument:
    uri: str
    lines: list[str]
    version: int = 1


@dataclass
class EditorSession:
    """One editor window on `root`, talking to its own server process."""

    root: Path
    settings: dict[str, Any]
    server_env: dict[str, str] | None = None
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client = LanguageClient("headstart-editor", "1")
        self.on_completion_report: Callable[[dict[str, Any]], None] | None = None
        """Called with each `$/headstart/completionReport` (log.completionReports)."""
        self.replied_at: dict[str, float] = {}
        """`time.monotonic()` when each inline completion's reply was read, by request id:
        stamped as the client parses it, before any message read with it is handled and
        before the awaiting task runs, so a report that came with it does not count in the
        round trip. Popped by whoever reads it."""
        self.indexed = asyncio.Event()
        """Set when the server ends its indexing progress (whether indexing succeeded)."""
        self._progress_titles: dict[types.ProgressToken, str] = {}

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            if params.type in (types.MessageType.Error, types.MessageType.Warning):
                self.warnings.append(params.message)

        @self.client.feature(COMPLETION_REPORT)
        def on_report(params: Any) -> None:
            if self.on_completion_report is not None:
                self.on_completion_report(plain(params))

        @self.client.feature(STATUS)
        def on_status(params: Any) -> None:
            """A scripted editor has no status bar; handled so pygls does not warn."""

        @self.client.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params: types.ConfigurationParams) -> list[object]:
            return [None for _ in params.items]

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(params: types.WorkDoneProgressCreateParams) -> None:
            self._progress_titles[params.token] = ""

        @self.client.feature(types.PROGRESS)
        def on_progress(params: types.ProgressParams) -> None:
            value = params.value if isinstance(params.value, dict) else {}
            if value.get("kind") == "begin":
                self._progress_titles[params.token] = str(value.get("title", ""))
            elif value.get("kind") == "end" and "index" in self._progress_titles.get(
                params.token, ""
            ):
                self.indexed.set()

    async def __aenter__(self) -> EditorSession:
        await self.client.start_io(sys.executable, "-m", "server", "serve", env=self.server_env)
        # The server logs warnings to stderr; read them so a full pipe never blocks it.
        process = self.client._server
        self._stderr_reader = asyncio.create_task(_drain(process.stderr if process else None))
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=vscode_like_capabilities(),
                root_uri=path_to_uri(self.root),
                workspace_folders=[
                    types.WorkspaceFolder(uri=path_to_uri(self.root), name=self.root.name)
                ],
                initialization_options=self.settings,
                client_info=types.ClientInfo(name="headstart scripted editor"),
            )
        )
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()
        self._stderr_reader.cancel()

    async def wait_until_indexed(self, timeout_s: float) -> bool:
        """Wait for the server's indexing progress to end; False if it did not in time."""
        try:
            await asyncio.wait_for(self.indexed.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def open(self, path: Path, text: str, language_id: str = "python") -> OpenDocument:
        document = OpenDocument(path_to_uri(path), text.split("\n"))
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(
                    uri=document.uri, language_id=language_id, version=1, text=text
                )
            )
        )
        return document

    def type(self, document: OpenDocument, line: int, column: int, text: str) -> None:
        """Insert text at line:column (no newlines): a keystroke, or an accepted line."""
        self.replace(document, line, column, column, text)

    def replace(self, document: OpenDocument, line: int, start: int, end: int, text: str) -> None:
        """Replace columns start..end of one line with text (no newlines)."""
        document.version += 1
        first, last = (_client_position(document, line, column) for column in (start, end))
        row = document.lines[line]
        document.lines[line] = row[:start] + text + row[end:]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=document.uri, version=document.version
                ),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=first, end=last),
                        text=text,
                    )
                ],
            )
        )

    def request_inline_completion(
        self, document: OpenDocument, line: int, column: int
    ) -> tuple[str, asyncio.Future[Any]]:
        """Ask for a suggestion without waiting: the request's id (to cancel it, as editors
        do when the next key comes) and the future of its raw result."""
        msg_id = str(uuid.uuid4())
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=document.uri),
            position=_client_position(document, line, column),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
        reply = self.client.protocol.send_request(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id
        )
        reply.add_done_callback(lambda _: self.replied_at.setdefault(msg_id, time.monotonic()))
        return msg_id, asyncio.wrap_future(reply)

    def cancel_request(self, msg_id: str) -> None:
        self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    async def inline_completion(
        self, document: OpenDocument, line: int, column: int
    ) -> tuple[str, float]:
        """The first suggestion's text ('' if none) and the round trip in milliseconds.

        The text is what the editor would insert at the cursor: when the item's range starts
        before the cursor, the part of it that is already typed there is left out.
        """
        started = time.monotonic()
        msg_id, reply = self.request_inline_completion(document, line, column)
        result = await reply
        latency_ms = (self.replied_at.pop(msg_id, time.monotonic()) - started) * 1000
        item = first_item(result)
        if item is None:
            return "", latency_ms
        text = suggestion_text(result)
        if item.range is not None:
            at = POSITIONS.position_from_client_units(document.lines, item.range.start)
            start = types.Position(at.line, at.character)
            if (start.line, start.character) < (line, column):
                typed = _text_between(document.lines, start, types.Position(line, column))
                text = text[len(typed) :] if text.startswith(typed) else text
        return text, latency_ms

    def close(self, document: OpenDocument) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=document.uri))
        )


def first_item(result: Any) -> types.InlineCompletionItem | None:
    """The first item of an inline completion result (a list or a bare array), if any."""
    items = result.items if isinstance(result, types.InlineCompletionList) else result or []
    return items[0] if items else None


def suggestion_text(result: Any) -> str:
    """The first item's text of an inline completion result ('' when there is none)."""
    item = first_item(result)
    if item is None:
        return ""
    text = item.insert_text
    return text if isinstance(text, str) else text.value


def plain(value: Any) -> Any:
    """A custom notification's params (pygls makes namedtuples of them) as plain data."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def _client_position(document: OpenDocument, line: int, column: int) -> types.Position:
    return POSITIONS.position_to_client_units(document.lines, types.Position(line, column))


def _text_between(lines: list[str], start: types.Position, end: types.Position) -> str:
    """The document text from `start` to `end` (characters counted as code points)."""
    if start.line == end.line:
        return lines[start.line][start.character : end.character]
    middle = lines[start.line + 1 : end.line]
    return "\n".join(
        [lines[start.line][start.character :], *middle, lines[end.line][: end.character]]
    )


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.read(65536):
        pass
