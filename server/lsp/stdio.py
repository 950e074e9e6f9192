"""The editor's messages read from stdin (or one TCP client), framed by
`server.lsp.framing`, and dispatched.

pygls reads stdin on a worker thread: every message is three reads there (its header
line, the blank line, its body), each handed to the thread and its result back to the
event loop, and each hand-off waits for the GIL while the loop is busy with another
request. Editors start a language server with pipes or sockets on stdin, which the event
loop can watch itself: one read brings whole messages, with no thread in between. A
terminal or a file on stdin is read on a thread (the loop cannot watch a file, and a
terminal may share its file description with stdout, which must stay blocking).

Either way the bytes go through `FrameReader`, which recovers from a bad frame where
pygls's reader stops hearing the client for good; and a message that is no JSON, or no
JSON-RPC, gets an error reply where its id is known and one log line, never a traceback
or a pop-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import stat
import threading
from collections.abc import Awaitable, Callable
from typing import BinaryIO

from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from server.lsp.framing import Fault, FrameReader, decoded_prefix, leading_id, message_id
from server.lsp.protocol import HeadstartProtocol

log = logging.getLogger(__name__)


def readable_on_loop(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Whether stdin is a pipe or a socket of its own: the event loop can watch it and make
    it non-blocking without making stdout non-blocking too."""
    try:
        read_end = os.fstat(stdin.fileno())
        write_end = os.fstat(stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    pipe = stat.S_ISFIFO(read_end.st_mode) or stat.S_ISSOCK(read_end.st_mode)
    return pipe and not os.path.samestat(read_end, write_end)


def dispatch(server: LanguageServer, reader: FrameReader, frame: bytes | Fault) -> None:
    """Hand one frame to the protocol; a bad one is answered (where its id is known) and
    logged in one line."""
    protocol = server.protocol
    assert isinstance(protocol, HeadstartProtocol)
    if isinstance(frame, Fault):
        answered = f"; request {frame.msg_id} answered with a parse error" if frame.msg_id else ""
        level = logging.DEBUG if frame.rest_of_last else logging.WARNING
        log.log(level, "bad message from the client: %s%s", frame.reason, answered)
        if frame.msg_id is not None:
            protocol.reply_error(frame.msg_id, JsonRpcParseError(f"bad frame: {frame.reason}"))
        return
    try:
        message = json.loads(frame, object_hook=protocol.structure_message)
    except JsonRpcException as exc:  # valid JSON, not a valid message: answered if a request
        log.warning("bad message from the client: %s", exc.message)
        return
    except ValueError as exc:  # not JSON (or not UTF-8)
        _not_json(server, reader, frame, exc)
        return
    if not hasattr(message, "jsonrpc"):  # JSON, but no JSON-RPC message (an array, a number)
        msg_id = message_id(message)
        log.warning("bad message from the client: no JSON-RPC message: %.80r", frame)
        if msg_id is not None:
            protocol.reply_error(msg_id, JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
        return
    protocol.handle_message(message)


def _not_json(server: LanguageServer, reader: FrameReader, frame: bytes, exc: ValueError) -> None:
    """A body that is no JSON: when a whole message starts it, its Content-Length said too
    much and what follows belongs to the next message (put back to be read again)."""
    reader.last_was_bad()
    decoded = decoded_prefix(frame)
    rest = frame[decoded[1] :].lstrip() if decoded is not None else b""
    if decoded is not None and rest:
        reader.unread(rest)
        reason = f"its Content-Length said {len(frame)} bytes, the message held {decoded[1]}"
        msg_id = message_id(decoded[0])
    else:
        reason = f"not JSON ({exc})"
        msg_id = leading_id(frame)
    dispatch(server, reader, Fault(reason, msg_id))


async def serve(
    server: LanguageServer, read: Callable[[int], Awaitable[bytes]], stop: threading.Event
) -> None:
    """Read and dispatch messages until the input ends or `stop` is set (`exit`)."""
    reader = FrameReader(read)
    while not stop.is_set():
        frame = await reader.next()
        if frame is None:
            break
        try:
            dispatch(server, reader, frame)
        except Exception as exc:  # a bug of ours: the next message is read all the same
            log.error("a message from the client could not be handled: %s", exc)
            log.debug("the message could not be handled", exc_info=exc)


async def _serve(
    server: LanguageServer, stdin: BinaryIO, on_loop: bool, stop: threading.Event
) -> None:
    if on_loop:
        stream = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        await serve(server, stream.read, stop)
        return

    read1 = getattr(stdin, "read1", stdin.read)

    async def on_thread(size: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(server.thread_pool, read1, size)

    await serve(server, on_thread, stop)


def start_tcp(server: LanguageServer, host: str, port: int) -> None:
    """Serve one client at a time over TCP as pygls's `start_tcp` does, its messages framed
    by `FrameReader` too; until the server shuts down."""
    stop = threading.Event()
    server._stop_event = stop

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)
        await serve(server, reader.read, stop)
        server.shutdown()  # type: ignore[no-untyped-call]

    async def listen() -> None:
        server._server = await asyncio.start_server(connected, host, port)
        log.info("listening on %s:%d", host, port)
        async with server._server:
            await server._server.serve_forever()

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(listen())


def start_io(server: LanguageServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve `server` over stdin/stdout as pygls's `start_io` does, reading stdin on the event
    loop where `readable_on_loop`; until the input ends or the client sends `exit`."""
    stop = threading.Event()
    server._stop_event = stop  # pygls's shutdown() sets it
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(_serve(server, stdin, readable_on_loop(stdin, stdout), stop))
    except BrokenPipeError:
        log.error("the editor closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it untyped
