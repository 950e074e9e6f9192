"""pygls' JSON-RPC protocol, with an answer for every request and LSP's lifecycle; and the
names of Headstart's own notifications, which the server and scripted editors share.

pygls only logs a message that does not fit its LSP type ("Invalid Params", naming
nothing) and sends no reply, so the client waits forever for the request's result. It
also answers a request before `initialize` with an internal error, makes a new workspace
(without the open documents) on a second `initialize`, leaves requests after `shutdown`
unanswered, and logs every failed request with its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Generator
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeGuard

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import MsgId

from server.lsp.documents import LspWorkspace

STATUS = "$/headstart/status"
"""Whether the backend answered, for editors' status bars (the VS Code extension's)."""
COMPLETION_REPORT = "$/headstart/completionReport"
"""One inline completion's stage timings (log.completionReports), for `headstart bench`."""

log = logging.getLogger(__name__)


def _describe(exc: BaseException, type_: type | None) -> str:
    """cattrs' wording, plus a validator's own message, which names the bad value."""
    wording = format_exception(exc, type_)
    if isinstance(exc, ValueError) and str(exc) and str(exc) not in wording:
        return f"{wording} ({exc})"
    return wording


def _wire_path(problem: str) -> str:
    """cattrs names fields as Python does (text_document), clients as LSP does (textDocument)."""
    wording, at, path = problem.rpartition(" @ ")
    return wording + at + re.sub(r"_([a-z])", lambda m: m.group(1).upper(), path)


class TracebacksToDebug(logging.Filter):
    """pygls logs each message it cannot deserialise with its traceback, at error level,
    before `structure_message` below answers it and the reader logs it in one line: its
    record goes down to debug level (a debug log file keeps it, stderr does not)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and str(record.msg).startswith(PYGLS_DESERIALISE):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


PYGLS_DESERIALISE = "Unable to deserialize message"
TRACEBACKS_TO_DEBUG = TracebacksToDebug()


def is_message_id(value: object) -> TypeGuard[MsgId]:
    """Whether `value` can be a JSON-RPC request id (cattrs lets any JSON value through)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


class HeadstartProtocol(LanguageServerProtocol):
    """Replies -32602, naming each bad field, to a request that cannot be deserialised;
    the error raised on (logged in one line) names them too. Follows LSP's lifecycle
    (`handle_message`); keeps LSP's lines in its documents (`lsp_initialize`); answers a
    failed request with its error and one log line (`_send_handler_result`). And forgets
    each notification once handled (`_execute_handler`); ignores a cancel of a request it
    has already answered (`_handle_cancel_notification`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(TRACEBACKS_TO_DEBUG)
        self.lifecycle = "new"
        """"new" until `initialize`, then "running", and "shut down" once `shutdown` came."""

    def reply_error(self, msg_id: MsgId, error: JsonRpcException) -> None:
        """Answer request `msg_id` with `error`."""
        self._send_response(msg_id, error=error.to_response_error())

    def handle_message(self, message: Any) -> None:
        """LSP's lifecycle, before pygls dispatches: before `initialize`, requests get
        ServerNotInitialized (-32002) and notifications are dropped; `initialize` is
        accepted once; after `shutdown`, requests get InvalidRequest (-32600) and
        notifications but `exit` are dropped."""
        method = getattr(message, "method", None)
        if not isinstance(method, str) or method == types.EXIT:
            super().handle_message(message)  # a response to the server's request, or exit
            return
        msg_id = getattr(message, "id", None)
        request = hasattr(message, "id")
        if request and not is_message_id(msg_id):
            log.warning("request %s with id %r, which is no JSON-RPC id: ignored", method, msg_id)
            return
        refusal: JsonRpcException | None = None
        if self.lifecycle == "shut down":
            refusal = JsonRpcInvalidRequest(f"{method} after shutdown: only exit is accepted")
        elif self.lifecycle == "new" and method != types.INITIALIZE:
            refusal = JsonRpcServerNotInitialized(
                f"{method} before initialize: the server is not initialized yet"
            )
        elif self.lifecycle == "running" and method == types.INITIALIZE:
            refusal = JsonRpcInvalidRequest("initialize may only be sent once")
        if refusal is not None:
            if is_message_id(msg_id):
                log.warning("request %s refused: %s", msg_id, refusal.message)
                self.reply_error(msg_id, refusal)
            else:
                log.debug("notification %s dropped: %s", method, refusal.message)
            return
        if method == types.INITIALIZE:
            self.lifecycle = "running"
        elif method == types.SHUTDOWN and request:
            self.lifecycle = "shut down"
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        """pygls's, with its new workspace replaced by an `LspWorkspace` before the server's
        own initialize handler runs (pygls offers no other way to choose its class)."""
        steps = super().lsp_initialize(params)
        try:
            step = next(steps)
        except StopIteration as done:
            self._workspace = LspWorkspace.like(self.workspace)
            return done.value
        self._workspace = LspWorkspace.like(self.workspace)
        while True:
            value = yield step
            try:
                step = steps.send(value)
            except StopIteration as done:
                return done.value

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        """A failed request gets its error and one log line; its traceback goes to the debug
        log only (pygls logs every one, an invalid position included, with its traceback).
        An error of the client's (a JSON-RPC error) is a warning, any other an error."""
        if future.cancelled() or future.exception() is None:
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        exc = future.exception()
        if isinstance(exc, JsonRpcException):
            error = exc
            log.warning("request %s failed: %s", msg_id, exc.message)
        else:
            error = JsonRpcInternalError(f"{type(exc).__name__}: {exc}")
            log.error("request %s failed: %s", msg_id, error.message)
        log.debug("request %s failed", msg_id, exc_info=exc)
        self.reply_error(msg_id, error)

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        """pygls warns of a `$/cancelRequest` for a request it no longer has, and the editor
        shows that stderr line as an error. LSP says to ignore such a cancel, and editors
        send them in the normal course (VS Code cancels an inline completion whose reply
        is on its way). One with an id no request can have is ignored too."""
        if not is_message_id(msg_id):
            log.warning("$/cancelRequest with id %r, which is no JSON-RPC id: ignored", msg_id)
            return
        if msg_id not in self._request_futures:
            log.debug("cancel of request %s, already answered: ignored", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls keeps the future of every notification handled by a coroutine, a thread or
        a generator (its own didOpen and didChange wrappers are generators), and of every
        step a generator hands to another handler, in `_request_futures`, under an id no
        client knows, for ever: about a kilobyte a keystroke, a megabyte a minute of
        typing. Drop each once it is done."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if isinstance(callback, partial) and callback.func == self._send_handler_result:
            return  # a client's request: pygls forgets it itself when it replies
        future = self._request_futures.get(msg_id)
        if future is None:
            return
        loop = asyncio.get_running_loop()

        def forget(_: object) -> None:
            # later, on the loop: `shutdown` cancels these futures while iterating the dict
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._request_futures.pop, msg_id, None)

        future.add_done_callback(forget)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            cause = exc.__cause__
            if cause is None:
                raise
            if isinstance(cause, ClassValidationError):
                errors = transform_error(cause, format_exception=_describe)
                problems = "; ".join(_wire_path(problem) for problem in errors)
            else:
                problems = str(cause)
            what = data.get("method") or "JSON-RPC message"
            error = JsonRpcInvalidParams(f"invalid {what}: {problems}")
            msg_id = data.get("id")
            if "method" in data and is_message_id(msg_id):
                self.reply_error(msg_id, error)
            raise error from cause
