"""A minimal HTTP/1.1 client for streamed completions, for the replay driver.

httpx spends about 2 ms of CPU on each streamed request (its connection pool, its
async-library detection, its layers of iterators), which at a few hundred requests a second
saturates a driver process long before the backend. Replaying needs one thing: POST a JSON
body, read the status and the SSE `data:` lines, close the connection to cancel. This does
exactly that over asyncio streams, keeping connections alive between requests that ended
cleanly, as an editor's server does.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ProtocolError(Exception):
    """The server's reply is not HTTP/1.1 as expected."""


class Connections:
    """Keep-alive connections to one backend (`url` is its …/v1 base)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.base = parts.path.rstrip("/")
        self.idle: list[Connection] = []

    async def open(self) -> Connection:
        while self.idle:
            reader, writer = self.idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                return reader, writer
            writer.close()
        return await asyncio.open_connection(
            self.host, self.port, ssl=ssl.create_default_context() if self.tls else None
        )

    def release(self, connection: Connection, reusable: bool) -> None:
        if reusable:
            self.idle.append(connection)
        else:
            connection[1].close()

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


class Reply:
    """A response being read: its status, then its body's SSE data payloads."""

    def __init__(self, reader: asyncio.StreamReader, status: int, headers: dict[str, str]):
        self.reader = reader
        self.status = status
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self.length = int(length) if length is not None else None
        self.keep_alive = headers.get("connection", "").lower() != "close"
        self.complete = False
        """The whole body was read: the connection can carry the next request."""

    async def body(self) -> AsyncIterator[bytes]:
        reader = self.reader
        if self.chunked:
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    await reader.readline()  # the blank line after the last chunk
                    break
                chunk = await reader.readexactly(size + 2)
                yield chunk[:-2]
        elif self.length is not None:
            yield await reader.readexactly(self.length)
        else:  # until the server closes the connection
            self.keep_alive = False
            while piece := await reader.read(65536):
                yield piece
        self.complete = True

    async def data(self) -> AsyncIterator[bytes]:
        """Each SSE `data:` payload, `[DONE]` included."""
        pending = b""
        async for piece in self.body():
            pending += piece
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"data:"):
                    yield line[5:].strip()

    async def drain(self) -> bytes:
        return b"".join([piece async for piece in self.body()])


async def post(connections: Connections, connection: Connection, path: str, body: bytes) -> Reply:
    """Send POST base+path with a JSON body on `connection`; the reply's head read."""
    reader, writer = connection
    head = (
        f"POST {connections.base}{path} HTTP/1.1\r\nHost: {connections.host}:{connections.port}"
        f"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode("ascii") + body)
    status_line = await reader.readline()
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return Reply(reader, int(parts[1]), headers)
