"""Fuzzed LSP sessions: random interleavings of edits and requests against one running
server, with a fake model that misbehaves at random.

Each example opens a new document and applies a random sequence of incremental and whole
changes (ranges out of the document and reversed included, versions repeated, skipped or
older; text with CRLF, lone CR, tabs, NULs, accents, characters outside the BMP and every
character `str.splitlines` takes for a line break but LSP does not; a 6 MB text),
closes and reopens, inline completions, completions, hovers, code actions, semantic
tokens (full and delta), cancels, settings changes with bad values, raw garbage between
messages and requests sent in broken frames (server.lsp.framing's faults).
After every step the server must answer, and its text for the document must equal an
independent model's (tests/lsp_text_model.py, LSP's edit semantics, clamping included;
the text is read back from the prompt the server sends the model); a request in a
broken frame must be answered too. Nothing it logged may be a traceback.

`HEADSTART_FUZZ_EXAMPLES` sets how many examples run (200 by default;
`benchmarks/README.md` runs thousands); the totals are printed at the end (with `-s`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_lsp
from conftest import CONFIG, fast_settings, start_session
from fake_openai import FakeBackend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import logs, open_document
from lsp_text_model import NOT_LINE_BREAKS, ModelText
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from test_lsp_framing import FAULTS

from server.config import CompletionSettings

EXAMPLES = int(os.environ.get("HEADSTART_FUZZ_EXAMPLES", "200"))
REPLY_S = 10.0
"""Every request must be answered (a result or an error) within this long."""

PIECES = ["a", "b", "x", "_", " ", "(", ")", ":", "=", "\n", "\r\n", "\r", "\t", "é", "😀", "\x00"]
PIECES += NOT_LINE_BREAKS
TEXT = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)
LINE = st.integers(0, 8)
CHARACTER = st.integers(0, 24)
BAD_SETTINGS = [
    {"completion": {"maxTokens": -1}},
    {"completion": {"maxLines": "many"}},
    {"backend": {"url": 5}},
    {"completion": {"maxTokens": 24}},
    {"nonsense": True},
]
VERSION_STEP = st.sampled_from([1, 1, 1, 1, 0, -2, 7])
"""Mostly the next version; sometimes the same, an older or a skipped one."""
BIG = "x = 1  # filler\n" * 400_000
"""A 6 MB text: over completion.maxFileBytes, so never sent to the model."""
MAX_FILE_BYTES = CompletionSettings.model_fields["max_file_bytes"].default
OPERATIONS = st.one_of(
    st.tuples(st.just("change"), LINE, CHARACTER, LINE, CHARACTER, TEXT, VERSION_STEP),
    st.tuples(st.just("replace"), TEXT),
    st.tuples(st.just("reopen"), TEXT),
    st.tuples(st.just("big")),
    st.tuples(st.just("inline"), LINE, CHARACTER),
    st.tuples(st.just("completion"), LINE, CHARACTER),
    st.tuples(st.just("hover"), LINE, CHARACTER),
    st.tuples(st.just("code_action"), LINE, CHARACTER, LINE, CHARACTER),
    st.tuples(st.just("tokens")),
    st.tuples(st.just("tokens_delta")),
    st.tuples(st.just("cancel"), LINE, CHARACTER),
    st.tuples(st.just("settings"), st.sampled_from(range(len(BAD_SETTINGS)))),
    st.tuples(st.just("fault"), st.sampled_from(sorted(FAULTS)), LINE, CHARACTER),
    st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=40)),
)
MISBEHAVIOURS = ["normal", "normal", "drop", "garbage", "http_500", "corrupt", "empty", "stall"]
COUNTER = itertools.count()
TOTALS: Counter[str] = Counter()
"""Sequences, steps, checks and faults run, printed at the end of the module."""


@pytest.fixture(scope="module", autouse=True)
def totals() -> Iterator[None]:
    started = time.perf_counter()
    yield
    print(
        f"\nfuzz totals: {TOTALS['sequences']} sequences, {TOTALS['steps']} steps, "
        f"{TOTALS['checks']} text checks, {TOTALS['faults']} framing faults "
        f"({TOTALS['garbage']} garbage runs), {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )


@pytest_lsp.fixture(config=CONFIG)
async def fuzzed(
    lsp_client: LanguageClient,
    fake: FakeBackend,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[None]:
    """One server for every example: a long session is what the fuzzing is about."""
    workspace = tmp_path_factory.mktemp("fuzz")
    settings = fast_settings(fake.url)
    settings["completion"] = {"prefetch": False, "reuseTypedSuggestions": False}
    await start_session(lsp_client, "vscode", workspace, settings)
    lsp_client.workspace_path = workspace  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start=TEXT,
    operations=st.lists(OPERATIONS, max_size=12),
    misbehaviour=st.sampled_from(MISBEHAVIOURS),
)
async def test_a_fuzzed_session_keeps_the_documents_text_and_the_server_answering(
    fuzzed: LanguageClient,
    fake: FakeBackend,
    start: str,
    operations: list[tuple[Any, ...]],
    misbehaviour: str,
) -> None:
    client = fuzzed
    misbehaving = [{"text": "x = 1\n", "behaviour": misbehaviour, "first_delay_ms": 5}]
    TOTALS["sequences"] += 1
    path = client.workspace_path / f"fuzzed_{next(COUNTER)}.py"  # type: ignore[attr-defined]
    uri = open_document(client, path, start)
    model = ModelText(start)
    session = Session(client, uri)
    await session.check(fake, model)
    for operation in operations:
        fake.script(misbehaving)
        await session.apply(operation, model)
        TOTALS["steps"] += 1
        fake.script([{"text": "x = 1\n"}])
        await session.check(fake, model)
    client.text_document_did_close(  # as an editor does: the server's memory stays bounded
        types.DidCloseTextDocumentParams(text_document=session.document())
    )
    fake.reset()
    assert "Traceback" not in logs(client)


class Session:
    """The client's side of one fuzzed document."""

    def __init__(self, client: LanguageClient, uri: str) -> None:
        self.client = client
        self.uri = uri
        self.version = 1
        self.tokens_id: str | None = None
        self.pending: asyncio.Future[Any] | None = None
        """The reply to a request sent in a broken frame, due by the next check."""

    def document(self) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(uri=self.uri)

    def inline(self, at: types.Position) -> types.InlineCompletionParams:
        context = types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic
        )
        return types.InlineCompletionParams(
            text_document=self.document(), position=at, context=context
        )

    async def request(self, method: str, params: Any) -> Any:
        """The reply, or None for an error reply: either is an answer."""
        try:
            return await asyncio.wait_for(
                self.client.protocol.send_request_async(method, params), REPLY_S
            )
        except JsonRpcException:
            return None

    async def check(self, fake: FakeBackend, model: ModelText) -> None:
        """The server answers, and its text is the model's: an inline completion at the end of
        the document sends the model a prompt holding all of it. A request in a broken
        frame before it (`fault`) must have been answered too."""
        seen = len(fake.events())
        end = at(*model.end())
        await self.request(types.TEXT_DOCUMENT_INLINE_COMPLETION, self.inline(end))
        if self.pending is not None:
            with contextlib.suppress(JsonRpcException):
                await asyncio.wait_for(self.pending, REPLY_S)
            self.pending = None
        text = model.text
        if "\x00" in text or len(text) > MAX_FILE_BYTES:  # never sent: binary or too big
            return
        # (a retry of an earlier request may still arrive meanwhile)
        prompts = [str(event["prompt"]) for event in fake.events()[seen:]]
        assert any(text in prompt for prompt in prompts), (text, [p[-300:] for p in prompts])
        TOTALS["checks"] += 1

    def broken_frame(self, fault: str, position: types.Position) -> None:
        """A hover request, its frame broken as `fault` says; answered by the next check."""
        writer = self.client.protocol.writer
        self.client.protocol.writer = FaultyWriter(writer, fault)
        try:
            params = types.HoverParams(text_document=self.document(), position=position)
            self.pending = self.client.protocol.send_request_async(
                types.TEXT_DOCUMENT_HOVER, params
            )
        finally:
            self.client.protocol.writer = writer

    async def apply(self, operation: tuple[Any, ...], model: ModelText) -> None:
        kind, *args = operation
        if kind == "reopen":
            self.client.text_document_did_close(
                types.DidCloseTextDocumentParams(text_document=self.document())
            )
            self.version = 1
            model.text = args[0]
            self.client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=self.uri, language_id="python", version=1, text=args[0]
                    )
                )
            )
        elif kind in ("change", "replace", "big"):
            self.version += args[-1] if kind == "change" else 1
            if kind == "change":
                start_line, start_char, end_line, end_char, text, _ = args
                change: types.TextDocumentContentChangeEvent = (
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=start_line, character=start_char),
                            end=types.Position(line=end_line, character=end_char),
                        ),
                        text=text,
                    )
                )
                model.edit((start_line, start_char), (end_line, end_char), text)
            else:
                whole = args[0] if kind == "replace" else BIG
                change = types.TextDocumentContentChangeWholeDocument(text=whole)
                model.text = whole
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=self.uri, version=self.version
                    ),
                    content_changes=[change],
                )
            )
        elif kind == "inline":
            await self.request(types.TEXT_DOCUMENT_INLINE_COMPLETION, self.inline(at(*args)))
        elif kind == "completion":
            params = types.CompletionParams(text_document=self.document(), position=at(*args))
            await self.request(types.TEXT_DOCUMENT_COMPLETION, params)
        elif kind == "hover":
            params = types.HoverParams(text_document=self.document(), position=at(*args))
            await self.request(types.TEXT_DOCUMENT_HOVER, params)
        elif kind == "code_action":
            line, character, end_line, end_character = args
            params = types.CodeActionParams(
                text_document=self.document(),
                range=types.Range(start=at(line, character), end=at(end_line, end_character)),
                context=types.CodeActionContext(diagnostics=[]),
            )
            await self.request(types.TEXT_DOCUMENT_CODE_ACTION, params)
        elif kind == "tokens":
            params = types.SemanticTokensParams(text_document=self.document())
            reply = await self.request(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, params)
            self.tokens_id = getattr(reply, "result_id", None)
        elif kind == "tokens_delta":
            params = types.SemanticTokensDeltaParams(
                text_document=self.document(), previous_result_id=self.tokens_id or "none"
            )
            await self.request(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA, params)
        elif kind == "cancel":
            msg_id = f"fuzz-{next(COUNTER)}"
            future = self.client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION, self.inline(at(*args)), msg_id=msg_id
            )
            self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            with contextlib.suppress(JsonRpcException, asyncio.CancelledError):
                await asyncio.wait_for(future, REPLY_S)
        elif kind == "settings":
            self.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"headstart": BAD_SETTINGS[args[0]]})
            )
        elif kind == "fault":
            TOTALS["faults"] += 1
            self.broken_frame(args[0], at(*args[1:]))
        elif kind == "garbage":
            TOTALS["garbage"] += 1
            self.client.protocol.writer.write(args[0] + b"\r\n\r\n")


class FaultyWriter:
    """Writes the next frame broken as one of `test_lsp_framing.FAULTS` says."""

    def __init__(self, writer: Any, fault: str) -> None:
        self.writer = writer
        self.fault = fault

    def write(self, data: bytes) -> Any:
        _, _, body = data.partition(b"\r\n\r\n")
        return self.writer.write(FAULTS[self.fault](body))

    def close(self) -> Any:
        return self.writer.close()


def at(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)
