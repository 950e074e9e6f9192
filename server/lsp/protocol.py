"""pygls' JSON-RPC protocol, with an answer for requests that cannot be deserialised;
and the names of Headstart's own notifications, which the server and scripted editors share.

pygls only logs a message that does not fit its LSP type ("Invalid Params", naming
nothing) and sends no reply, so the client waits forever for the request's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from cattrs.v import format_exception
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import MsgId

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


class HeadstartProtocol(LanguageServerProtocol):
    """Replies -32602, naming each bad field, to a request that cannot be deserialised;
    the error raised on (logged, and shown by pygls) names them too. And forgets each
    notification once handled (`_execute_handler`); ignores a cancel of a request it has
    already answered (`_handle_cancel_notification`)."""

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        """pygls warns of a `$/cancelRequest` for a request it no longer has, and the editor
        shows that stderr line as an error. LSP says to ignore such a cancel, and editors
        send them in the normal course (VS Code cancels an inline completion whose reply
        is on its way)."""
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
            if "method" in data and isinstance(msg_id, int | str) and not isinstance(msg_id, bool):
                self._send_response(msg_id, error=error.to_response_error())
            raise error from cause
