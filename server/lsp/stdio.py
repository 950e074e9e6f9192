"""The editor's messages read on the event loop, where stdin is a pipe.

pygls reads stdin on a worker thread: every message is three reads there (its header
line, the blank line, its body), each handed to the thread and its result back to the
event loop, and each hand-off waits for the GIL while the loop is busy with another
request. Editors start a language server with pipes or sockets on stdin, which the event
loop can watch itself: one read brings whole messages, with no thread in between. A
terminal or a file on stdin keeps pygls's reader (the loop cannot watch a file, and a
terminal may share its file description with stdout, which must stay blocking).
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import stat
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)
PYGLS_LOG = logging.getLogger("pygls.server")


LINE_LIMIT = 65_536
"""The longest header line kept: a longer one is garbage, and is dropped a piece at a time
(pygls's reader would hold all of it in memory)."""
DROPPED = b"X-Headstart-Dropped: a header line over the limit\r\n"
"""What a dropped line reads as: a header pygls's message loop ignores."""


class PipeReader:
    """pygls's asynchronous reader over an asyncio stream: b"" at the end of the input, as
    pygls's message loop expects, instead of asyncio's IncompleteReadError."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        try:
            return await self.stream.readline()
        except ValueError:  # longer than the stream's limit; asyncio has dropped it
            log.warning("a header line over %d bytes from the client was dropped", LINE_LIMIT)
            return DROPPED

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError:
            return b""


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


async def _serve(server: JsonRPCServer, stdin: BinaryIO, stop: threading.Event) -> None:
    stream = asyncio.StreamReader(limit=LINE_LIMIT)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
    await run_async(
        stop_event=stop,
        reader=PipeReader(stream),
        protocol=server.protocol,
        logger=PYGLS_LOG,  # as pygls's own reader: its tracebacks stay out of the editor's log
        error_handler=server.report_server_error,
    )


def start_io(server: JsonRPCServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve `server` over stdin/stdout as pygls's `start_io` does, reading stdin (where
    `readable_on_loop`) on the event loop; until the input ends or the client sends `exit`."""
    stop = threading.Event()
    server._stop_event = stop  # pygls's shutdown() sets it
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(_serve(server, stdin, stop))
    except BrokenPipeError:
        log.error("the editor closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it untyped
