"""The root span of an editor's completion request (server.tracing), from the didChange that
typed the key to the reply, and how the request ended for the user.

The trace of a keystroke starts where its didChange began to be applied, when the request
is for the version that edit made and comes within a second of it (an editor asks right
after it sends the edit); `headstart.document.sync` is that edit, and the gap after it is
the editor's own wait before asking. Everything the request does (context, prompt, queue,
the backend request and its `traceparent`) is a child of this span.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Final

from lsprotocol import types

from server import tracing
from server.completion.request import CursorContext, Suggestion
from server.lsp.documents import Synced, edit_started
from server.lsp.language_server import HeadstartServer

SPAN_NAMES: Final = {
    types.TEXT_DOCUMENT_INLINE_COMPLETION: "headstart.inline_completion",
    types.TEXT_DOCUMENT_COMPLETION: "headstart.completion",
}
SYNC_SPAN: Final = "headstart.document.sync"
CURSOR_SPAN: Final = "headstart.cursor"
"""The document's text and tree at the cursor (the tree re-parsed after the edit)."""
OUTCOME: Final = "headstart.outcome"
SYNC_BEFORE_NS: Final = 1_000_000_000
"""A didChange applied longer than this before the request is not the keystroke's own."""


def note_synced(ls: HeadstartServer, uri: str, version: int | None) -> None:
    """Remember the didChange just applied to `uri`, for the request that follows it."""
    started = edit_started(ls.workspace, uri)
    if started is not None:
        ls.synced[uri] = Synced(started, time.time_ns(), version)


def outcome(ctx: CursorContext | None, suggestion: Suggestion | None) -> str:
    """How a request ended for the user: `shown` (the model's suggestion), `typed_through`
    (the rest of a suggestion the user is typing, with no model request), `empty`,
    `superseded` (a newer keystroke for the document won), `error`, or `off` (completion is
    off for the document). `cancelled` is set where the editor cancelled it."""
    if ctx is None:
        return "off"
    if suggestion is None:
        return "superseded"
    if suggestion.error is not None:
        return "error"
    if "cached" in suggestion.timings_ms or "joined" in suggestion.timings_ms:
        return "typed_through"
    return "shown" if suggestion.text else "empty"


class Keystroke:
    """A completion request's root span, as `with keystroke_span(...) as keystroke:`; this
    one, for while tracing is off, does nothing."""

    __slots__ = ()

    def __enter__(self) -> Keystroke:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pass

    def answered(self, ctx: CursorContext | None, suggestion: Suggestion | None) -> None:
        """What the request found (the document's language) and how it ended."""


NOT_TRACED: Final = Keystroke()


class TracedKeystroke(Keystroke):
    __slots__ = ("outcome", "span", "sync")

    def __init__(self, ls: HeadstartServer, method: str, uri: str, version: int | None) -> None:
        sync = ls.synced.pop(uri, None)
        if sync is not None and (
            sync.version != version or time.time_ns() - sync.end_ns > SYNC_BEFORE_NS
        ):
            sync = None
        self.sync = sync
        self.outcome = "error"
        attributes = {
            "rpc.system": "jsonrpc",
            "rpc.method": method,
            "headstart.priority": "keystroke",
        }
        start_ns = sync.start_ns if sync is not None else None
        self.span = tracing.root_span(SPAN_NAMES[method], attributes, start_ns)

    def __enter__(self) -> TracedKeystroke:
        self.span.__enter__()
        if self.sync is not None:
            self.span.child(SYNC_SPAN, self.sync.start_ns, self.sync.end_ns)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, asyncio.CancelledError):
            self.outcome = "cancelled"
        self.span.set(OUTCOME, self.outcome)
        self.span.__exit__(kind, error, traceback)

    def answered(self, ctx: CursorContext | None, suggestion: Suggestion | None) -> None:
        self.outcome = outcome(ctx, suggestion)
        if ctx is not None:
            self.span.set("headstart.document.language", ctx.language or "unknown")
        if suggestion is not None:
            self.span.set("headstart.suggestion.mode", suggestion.mode.value)
            self.span.set("headstart.suggestion.chars", len(suggestion.text))
            if suggestion.resumes:
                self.span.set("headstart.resumes", suggestion.resumes)


def keystroke_span(ls: HeadstartServer, method: str, uri: str, version: int | None) -> Keystroke:
    """The root span of one completion request for `uri` at `version`."""
    if not tracing.enabled():
        return NOT_TRACED
    return TracedKeystroke(ls, method, uri, version)
