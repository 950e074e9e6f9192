"""The client's byte stream cut into messages, finding its way back after a bad frame.

pygls's reader takes a header it cannot read (no `Content-Length`, `-5`, `abc`) as no
header at all, and a length longer than the body as the truth: from then on every header
arrives glued to the previous body, no message is ever read again, and the server, still
running, answers nothing. Here each frame is checked, a bad one becomes a `Fault` (with
the id of its request where that can be read, so the client gets an error instead of
waiting for ever), and reading goes on at the next header.

Where the next header is can be told for sure: a `Content-Length:` header line ends with a
raw CR LF, which JSON allows only between tokens, never in a string, so no message body
holds one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pygls.protocol.json_rpc import MsgId

MAX_MESSAGE_BYTES = 128 * 1024 * 1024
"""A longer `Content-Length` is refused before a byte of its body is read (VS Code does not
sync files over 50 MB to language servers)."""
HEADER_LIMIT = 64 * 1024
"""A header block longer than this is garbage: it is dropped a piece at a time."""
HEADERLESS_LIMIT = 1024 * 1024
"""How far the body after a header without a usable length is read to find its id."""
CHUNK = 256 * 1024

HEADER_END = b"\r\n\r\n"
NEXT_HEADER = re.compile(rb"content-length:[^\r\n]*\r\n", re.IGNORECASE)
"""A `Content-Length` header line: where reading picks up after a bad frame."""
LENGTH_NAME = re.compile(rb"content-length:", re.IGNORECASE)
HEADER_LINES = re.compile(rb"(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n]*\r\n)*")
"""Header lines (`Name: value` each), as HTTP defines them."""
LEADING_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.)*"\s*,)*\s*"id"\s*:\s*'
    rb'(-?\d+|"(?:[^"\\]|\\.)*")'
)
"""The id of a JSON-RPC message that may be cut short, where it comes before any nested
value (after `jsonrpc` and `method` at most): an id found so is the message's own."""


@dataclass
class Fault:
    """A frame that is no message: what was wrong, and its request's id if known."""

    reason: str
    msg_id: MsgId | None = None
    rest_of_last: bool = False
    """Garbage right after a bad frame: most likely the rest of it, already reported."""


def leading_id(data: bytes) -> MsgId | None:
    """The id at the start of a JSON-RPC message, which may be cut short or malformed."""
    found = LEADING_ID.match(data)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def decoded_prefix(data: bytes) -> tuple[object, int] | None:
    """The JSON value at the start of `data` and where it ends, if it is complete."""
    text = data.decode("utf-8", "replace")
    start = len(text) - len(text.lstrip())
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return value, len(text[:end].encode("utf-8"))


def message_id(value: object) -> MsgId | None:
    msg_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(msg_id, int | str) and not isinstance(msg_id, bool):
        return msg_id
    return None


class FrameReader:
    """Messages from a byte stream: `next` returns a message's body, a `Fault`, or None at
    the end of the input. `read` returns the next bytes there are, b"" at the end."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]]) -> None:
        self._read = read
        self._buffer = bytearray()
        self._ended = False
        self._after_bad = False

    async def _fill(self) -> bool:
        """More bytes in the buffer; False at the end of the input."""
        if self._ended:
            return False
        data = await self._read(CHUNK)
        if not data:
            self._ended = True
            return False
        self._buffer += data
        return True

    def unread(self, data: bytes) -> None:
        """Put back bytes that came after a message whose length said too much."""
        self._buffer[:0] = data

    def last_was_bad(self) -> None:
        """The body `next` returned last was no message (garbage after it is its rest)."""
        self._after_bad = True

    async def next(self) -> bytes | Fault | None:
        found = await self._next()
        self._after_bad = isinstance(found, Fault)
        return found

    async def _next(self) -> bytes | Fault | None:
        buffer = self._buffer
        while True:
            end = buffer.find(HEADER_END)
            if end < 0:
                if len(buffer) > HEADER_LIMIT:
                    return self._drop_garbage()
                if not await self._fill():
                    return self._rest_at_end()
                continue
            block = bytes(buffer[:end])
            junk, block = _split_junk(block)
            if junk:
                del buffer[: len(junk)]
                fault = self._junk_fault(junk)
                fault.rest_of_last = self._after_bad and fault.msg_id is None
                return fault
            del buffer[: end + len(HEADER_END)]
            if not block.strip():
                continue  # a stray blank line between messages
            length, problem = _content_length(block)
            if problem is not None:
                return await self._headerless(problem)
            return await self._body(length)

    async def _body(self, length: int) -> bytes | Fault | None:
        buffer = self._buffer
        searched = 0
        while True:
            found = NEXT_HEADER.search(buffer, max(searched - 64, 0), min(len(buffer), length))
            searched = min(len(buffer), length)
            if found is not None:  # the length said more than the body holds
                body = bytes(buffer[: found.start()])
                del buffer[: found.start()]
                return Fault(
                    f"a message of Content-Length {length} ended after {len(body)} bytes, "
                    "where the next header began",
                    _id_of(body),
                )
            if len(buffer) >= length:
                break
            if not await self._fill():
                return None
        body = bytes(buffer[:length])
        del buffer[:length]
        return body

    async def _headerless(self, problem: str) -> Fault:
        """A header without a usable length: the body after it, if it is a whole JSON
        message already or once more bytes come (up to the next header), names the
        request to answer."""
        buffer = self._buffer
        while True:
            if bytes(buffer[:HEADER_LIMIT].lstrip()[:1]) not in (b"{", b""):
                return Fault(problem)
            decoded = decoded_prefix(bytes(buffer))
            if decoded is not None:
                value, end = decoded
                del buffer[:end]
                return Fault(problem, message_id(value))
            if NEXT_HEADER.search(buffer) or len(buffer) > HEADERLESS_LIMIT:
                return Fault(problem)
            if not await self._fill():
                return Fault(problem)

    def _junk_fault(self, junk: bytes) -> Fault:
        decoded = decoded_prefix(junk)
        if decoded is not None and (msg_id := message_id(decoded[0])) is not None:
            return Fault("a message without a Content-Length header", msg_id)
        return Fault(f"{len(junk)} bytes that are no message dropped: {junk[:40]!r}")

    def _drop_garbage(self) -> Fault:
        """No header end in sight: drop up to the next header, or all but a tail that may
        be the start of one."""
        buffer = self._buffer
        found = NEXT_HEADER.search(buffer, 1)
        cut = found.start() if found is not None else len(buffer) - 32
        junk = bytes(buffer[:cut])
        del buffer[:cut]
        return Fault(
            f"{len(junk)} bytes without a header end dropped: {junk[:40]!r}",
            rest_of_last=self._after_bad,  # a long run of garbage is reported once
        )

    def _rest_at_end(self) -> Fault | None:
        rest = bytes(self._buffer).strip()
        self._buffer.clear()
        if not rest:
            return None
        return Fault(f"the input ended inside a message ({len(rest)} bytes: {rest[:40]!r})")


def _split_junk(block: bytes) -> tuple[bytes, bytes]:
    """A header block's garbage before its `Content-Length` line (the end of a body whose
    length said too little, glued to the next header), and the rest."""
    found = LENGTH_NAME.search(block)
    if found is None or found.start() == 0:
        return b"", block
    before = block[: found.start()]
    if not before.strip():  # blank lines before the header
        return b"", block[found.start() :]
    if before.endswith(b"\r\n") and HEADER_LINES.fullmatch(before):
        return b"", block
    return before, block[found.start() :]


def _content_length(block: bytes) -> tuple[int, str | None]:
    """The Content-Length of a header block, or what is wrong with it."""
    lines = (block + b"\r\n").split(b"\r\n")[:-1]
    values = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not HEADER_LINES.fullmatch(line + b"\r\n"):
            return 0, f"a header line that is no header: {line[:60]!r}"
        if name.strip().lower() == b"content-length":
            values.append(value.strip())
    if not values:
        return 0, f"a header without Content-Length: {block[:80]!r}"
    if len(set(values)) > 1:
        return 0, f"conflicting Content-Length headers: {b', '.join(values)!r}"
    value = values[0]
    if not value.isdigit() or len(value) > 12:
        return 0, f"a Content-Length that is no byte count: {value[:30]!r}"
    length = int(value)
    if length > MAX_MESSAGE_BYTES:
        return 0, f"a Content-Length of {length} bytes, over the limit of {MAX_MESSAGE_BYTES}"
    return length, None


def _id_of(body: bytes) -> MsgId | None:
    decoded = decoded_prefix(body)
    if decoded is not None:
        return message_id(decoded[0])
    return leading_id(body)
