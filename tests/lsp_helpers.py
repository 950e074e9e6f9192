"""Small steps an editor takes, for tests: open a file, ask for a suggestion."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any, Union

from lsprotocol import types
from pytest_lsp import LanguageClient

from server.bench.editor_session import plain
from server.lsp.protocol import COMPLETION_REPORT


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


def inline_params(uri: str, position: types.Position) -> types.InlineCompletionParams:
    """An inline completion request at `position`, as an editor sends it while typing."""
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position,
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic
        ),
    )


def send_inline(
    client: LanguageClient, uri: str, position: types.Position, msg_id: str
) -> asyncio.Future[Any]:
    """Send an inline completion request with a known id, at once; the future of its reply.

    pygls' client never sends `$/cancelRequest` by itself (cancelling this future only
    forgets the reply), so tests that cancel send it themselves, naming `msg_id`.
    """
    future = client.protocol.send_request(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri, position), msg_id=msg_id
    )
    return asyncio.wrap_future(future)


async def inline_items(
    client: LanguageClient, uri: str, position: types.Position
) -> list[types.InlineCompletionItem]:
    result = await client.text_document_inline_completion_async(inline_params(uri, position))
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


async def suggest_at(client: LanguageClient, path: Path, typed: str) -> str:
    """Open `path` as `typed` (█ marks the cursor) and ask for the suggestion there."""
    text, position = cursor_at(typed)
    return await suggestion(client, open_document(client, path, text), position)


def read_code_actions_as_editors_do(client: LanguageClient) -> None:
    """lsprotocol (2025.0.0) reads any code action that has a `command` as a Command,
    dropping its title and kind; editors tell them apart by the type of `command` (a
    Command's is a string). Make the test client do the same."""
    converter = client.protocol._converter

    def structure(value: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(value.get("command"), str):
            return converter.structure(value, types.Command)
        return converter.structure(value, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)  # noqa: UP007


def logs(client: LanguageClient) -> str:
    """Everything the server wrote to the editor's log so far."""
    return "\n".join(message.message for message in client.log_messages)


async def wait_for_log(client: LanguageClient, text: str, timeout: float = 5.0) -> str:
    """The editor's log once it contains `text` (notifications arrive asynchronously)."""
    deadline = time.monotonic() + timeout
    while text not in logs(client):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged within {timeout}s; log:\n{logs(client)}")
        await asyncio.sleep(0.02)
    return logs(client)


class Reports:
    """The `$/headstart/completionReport`s the client has read, in order. The server sends
    each one after its reply, so a test waits for the one it wants."""

    def __init__(self, client: LanguageClient) -> None:
        self.read: list[dict[str, Any]] = []
        client.feature(COMPLETION_REPORT)(lambda params: self.read.append(plain(params)))

    async def nth(self, n: int, timeout: float = 5.0) -> dict[str, Any]:
        """The n-th report (from 1), once it has come."""
        deadline = time.monotonic() + timeout
        while len(self.read) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.read)} completion reports, not {n}, in {timeout}s")
            await asyncio.sleep(0.01)
        return self.read[n - 1]


async def wait_for_shown(client: LanguageClient, text: str, timeout: float = 5.0) -> str:
    """The first window/showMessage containing `text`: it may arrive after the log line."""
    deadline = time.monotonic() + timeout
    while True:
        for message in client.messages:
            if text in message.message:
                return message.message
        if time.monotonic() > deadline:
            shown = [message.message for message in client.messages]
            raise AssertionError(f"{text!r} not shown within {timeout}s; shown: {shown}")
        await asyncio.sleep(0.02)


def partial_change(
    uri: str, version: int, start: types.Position, end: types.Position, text: str
) -> types.DidChangeTextDocumentParams:
    """An incremental didChange replacing start..end with `text`."""
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[
            types.TextDocumentContentChangePartial(
                range=types.Range(start=start, end=end), text=text
            )
        ],
    )


HEADER = re.compile(rb"Content-Length: (\d+)\r\n(?:Content-Type: [^\r\n]+\r\n)?\r\n")
INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}
"""The least `initialize` params a raw client sends."""


def lsp_frame(body: bytes | dict[str, Any]) -> bytes:
    """A message as it goes over the wire: its Content-Length header, then its JSON."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


class RawPipe:
    """An LSP byte stream (stdio or TCP): frames in, frames out, and nothing else."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stdout = reader
        self.stdin = writer
        self.notifications: list[dict[str, Any]] = []

    @classmethod
    def of_process(cls, proc: asyncio.subprocess.Process) -> RawPipe:
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc.stdout, proc.stdin)

    @classmethod
    async def over_tcp(cls, port: int, host: str = "127.0.0.1") -> RawPipe:
        """A connection to `headstart serve --tcp host:port`, once it listens (10 s at most)."""
        for _ in range(100):
            try:
                return cls(*await asyncio.open_connection(host, port))
            except OSError:
                await asyncio.sleep(0.1)
        raise AssertionError("headstart serve --tcp never listened")

    def send(self, body: bytes | dict[str, Any]) -> None:
        self.stdin.write(lsp_frame(body))

    async def frame(self) -> dict[str, Any]:
        """The next frame; fails on anything on stdout that is not one."""
        head = await self.stdout.readuntil(b"\r\n\r\n")
        found = HEADER.fullmatch(head)
        assert found, f"stdout is not an LSP frame: {head[:200]!r}"
        body = await self.stdout.readexactly(int(found.group(1)))
        message: dict[str, Any] = json.loads(body)
        assert message.get("jsonrpc") == "2.0", message
        return message

    async def reply(self, msg_id: int) -> dict[str, Any]:
        """The reply to request `msg_id`; notifications before it are kept."""
        while True:
            message = await asyncio.wait_for(self.frame(), timeout=10)
            if "method" in message:
                self.notifications.append(message)
                continue
            assert message.get("id") == msg_id, f"reply to an unexpected request: {message}"
            return message

    def shown_errors(self) -> list[str]:
        return [
            n["params"]["message"]
            for n in self.notifications
            if n["method"] == "window/showMessage" and n["params"]["type"] == 1
        ]


@asynccontextmanager
async def spawned_server(
    *args: str, stderr: IO[bytes] | int = asyncio.subprocess.DEVNULL
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`python -m server serve ARGS` with raw pipes, stopped at the end whatever happened."""
    from conftest import ROOT, server_env

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server",
        "serve",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=server_env(),
        cwd=ROOT,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
