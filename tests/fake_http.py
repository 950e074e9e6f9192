"""The fake model's hand-written HTTP/1.1: parsed requests, a connection that can write a
response, a broken one, or reset itself, a watcher that notices a client hanging up, and
the record of each exchange (`Event`, GET /_events).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import http.client
import json
import re
import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from fake_script import BadRequest

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
READ_SIZE = 64 * 1024
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass
class Event:
    """What the fake saw and did for one completion request; GET /_events lists them."""

    id: int
    received_at: float
    headers: dict[str, str]
    prompt: str | list[Any] = ""
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    model: str = ""
    stream: bool = False
    suffix: str | None = None
    behaviour: str = "normal"
    rule_index: int | None = None
    status: int = 200
    first_chunk_at: float | None = None
    closed_at: float | None = None
    closed_by: str | None = None
    chunks_sent: int = 0
    text: str = ""
    completed: bool = False
    body: Any = None

    def close(self, by: str) -> None:
        """Record who ended the exchange first; later calls are ignored."""
        if self.closed_by is None:
            self.closed_at = time.time()
            self.closed_by = by

    def to_json(self) -> dict[str, Any]:
        """The record as GET /_events shows it."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
            "model": self.model,
            "stream": self.stream,
            "suffix": self.suffix,
            "behaviour": self.behaviour,
            "rule_index": self.rule_index,
            "status": self.status,
            "received_at": self.received_at,
            "first_chunk_at": self.first_chunk_at,
            "closed_at": self.closed_at,
            "closed_by": self.closed_by,
            "chunks_sent": self.chunks_sent,
            "text": self.text,
            "completed": self.completed,
            "headers": dict(self.headers),
            "body": self.body,
        }


@dataclass
class Request:
    """One parsed HTTP/1.x request."""

    method: str
    target: str
    path: str
    version: str
    headers: dict[str, str]
    body: bytes

    @property
    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told not to; HTTP/1.0 only if asked."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


class Conn:
    """A client connection: a read buffer of our own (so a watcher task can read ahead
    without losing pipelined bytes) and helpers to write responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.buf = bytearray()
        self.aborted = False
        self.requests = 0

    async def _fill(self) -> bool:
        """Read more bytes into the buffer; False at end of stream."""
        data = await self.reader.read(READ_SIZE)
        self.buf.extend(data)
        return bool(data)

    async def read_request(self) -> Request | None:
        """Parse the next request, or None if the client closed between requests."""
        while True:
            while self.buf[:2] == b"\r\n" or self.buf[:1] == b"\n":  # stray CRLFs are allowed
                del self.buf[: 2 if self.buf[:1] == b"\r" else 1]
            found = _HEAD_END.search(self.buf)
            if found:
                break
            if len(self.buf) > MAX_HEAD_BYTES:
                raise BadRequest("request head too large", 431)
            if not await self._fill():
                if self.buf.strip():
                    raise BadRequest("connection closed in the middle of a request head")
                return None
        head = bytes(self.buf[: found.start()])
        del self.buf[: found.end()]
        lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not _TOKEN.match(parts[0]) or not parts[1]:
            raise BadRequest(f"malformed request line {lines[0][:200]!r}")
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise BadRequest(f"unsupported protocol version {version[:50]!r}", 505)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not _TOKEN.match(name):
                raise BadRequest(f"malformed header line {line[:200]!r}")
            key = name.lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if "transfer-encoding" in headers:
            raise BadRequest("chunked request bodies are not supported; send Content-Length", 501)
        length_text = headers.get("content-length", "0")
        if not length_text.isdigit():
            raise BadRequest(f"bad Content-Length {length_text[:50]!r}")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise BadRequest("request body too large", 413)
        while len(self.buf) < length:
            if not await self._fill():
                raise BadRequest("connection closed in the middle of a request body")
        body = bytes(self.buf[:length])
        del self.buf[:length]
        path = urlsplit(target).path or "/"
        return Request(method, target, path, version, headers, body)

    async def write(self, data: bytes) -> bool:
        """Write and flush, so the client sees each chunk at once; False if the peer is gone."""
        if self.aborted or self.writer.is_closing():
            return False
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, OSError):
            return False
        return True

    async def send_head(
        self, status: int, headers: Sequence[tuple[str, str]], keep_alive: bool
    ) -> bool:
        """Send the status line and headers."""
        lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}"]
        lines += [f"{k}: {v}" for k, v in headers]
        lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
        return await self.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    async def send(
        self, status: int, body: bytes, content_type: str, keep_alive: bool = True
    ) -> bool:
        """Send a whole response with Content-Length."""
        head = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        return await self.send_head(status, head, keep_alive) and await self.write(body)

    async def send_json(self, status: int, payload: object, keep_alive: bool = True) -> bool:
        """Send a JSON response."""
        return await self.send(status, compact_json(payload), "application/json", keep_alive)

    def abort(self) -> None:
        """Reset the TCP connection (SO_LINGER 0 makes close() send RST instead of FIN)."""
        self.aborted = True
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


def compact_json(payload: object) -> bytes:
    """Compact JSON, like vLLM's pydantic output."""
    return json.dumps(payload, separators=(",", ":")).encode()


def openai_error(message: str, kind: str = "invalid_request_error", code: int = 400) -> Any:
    """An error body shaped like OpenAI's."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ClientWatch:
    """Notices a client hang-up at once, even while the server is silent (stalling or
    delaying): a task keeps reading the connection and reports EOF or a reset."""

    def __init__(self, conn: Conn, event: Event) -> None:
        self.conn = conn
        self.event = event
        self.gone = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            while await self.conn._fill():  # bytes here are a pipelined request: keep them
                if len(self.conn.buf) > MAX_HEAD_BYTES + MAX_BODY_BYTES:
                    break
        except (ConnectionError, OSError):
            pass
        if not self.conn.aborted:
            self.event.close("client")
        self.gone.set()

    async def sleep(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (None: for ever); True as soon as the client has gone."""
        if self.gone.is_set():
            return True
        if seconds is not None and seconds <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.gone.wait(), seconds)
        return self.gone.is_set()

    async def stop(self) -> None:
        """Stop watching (the response is over and the connection may be reused)."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
