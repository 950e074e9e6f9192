"""A bad frame costs one message, not the session: the reader (server.lsp.framing) answers
it where its request's id can be read, logs it once, and reads on at the next header.

pygls's reader stayed deaf for good after any of these: every later header arrived glued
to the previous body."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import INITIALIZE, RawPipe, lsp_frame, spawned_server

from server.backend.local_vllm import free_port
from server.lsp.framing import MAX_MESSAGE_BYTES, Fault, FrameReader

PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601

pytestmark = pytest.mark.timeout(60)


def body(msg_id: int, method: str = "headstart/noSuchMethod") -> bytes:
    params = {"command": "nonexistent", "arguments": []}
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


FAULTS: dict[str, Any] = {
    "no Content-Length": lambda b: b"Content-Type: application/json\r\n\r\n" + b,
    "length past the body": lambda b: b"Content-Length: %d\r\n\r\n" % (len(b) + 40) + b,
    "length short of the body": lambda b: b"Content-Length: %d\r\n\r\n" % (len(b) - 9) + b,
    "negative length": lambda b: b"Content-Length: -5\r\n\r\n" + b,
    "length not a number": lambda b: b"Content-Length: abc\r\n\r\n" + b,
    "absurd length": lambda b: b"Content-Length: 1000000000000\r\n\r\n" + b,
    "garbage before a header": lambda b: b"\x00garbage}" + lsp_frame(b),
}
ANSWERED = {
    "no Content-Length",
    "length past the body",
    "length short of the body",
    "negative length",
    "length not a number",
    "absurd length",
}
"""Faults whose request id can be read: the client gets a parse error, not silence."""


async def frames(*chunks: bytes) -> list[bytes | Fault]:
    pieces = list(chunks)

    async def read(_: int) -> bytes:
        return pieces.pop(0) if pieces else b""

    reader = FrameReader(read)
    found = []
    while (frame := await reader.next()) is not None:
        found.append(frame)
        if isinstance(frame, bytes):
            try:
                json.loads(frame)
            except ValueError:
                reader.last_was_bad()  # as the server's dispatcher says
    return found


def expected(fault: str) -> list[bytes | Fault]:
    """What the reader makes of the fault then a good message (request 2); its reasons are
    not compared."""
    if fault == "length short of the body":  # the body as cut (the dispatcher answers it)
        return [body(1)[:-9], Fault("", None, rest_of_last=True), body(2)]
    if fault == "garbage before a header":
        return [Fault(""), body(1), body(2)]
    return [Fault("", 1), body(2)]


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_the_reader_reads_the_next_message_after_a_bad_frame(fault: str) -> None:
    bad, good = FAULTS[fault](body(1)), lsp_frame(body(2))
    for chunks in ([bad + good], [bad, good], [bytes([b]) for b in bad + good]):
        found = await frames(*chunks)
        for frame in found:
            if isinstance(frame, Fault):
                assert frame.reason
                frame.reason = ""
        assert found == expected(fault), (fault, len(chunks))


async def test_a_length_over_the_limit_is_refused_before_its_body_is_read() -> None:
    found = await frames(b"Content-Length: %d\r\n\r\n" % (MAX_MESSAGE_BYTES + 1) + body(1))
    assert isinstance(found[0], Fault) and "over the limit" in found[0].reason
    assert found[0].msg_id == 1


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_the_server_answers_after_a_bad_frame(fault: str, tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as stderr:
        async with spawned_server(stderr=stderr) as proc:
            pipe = RawPipe.of_process(proc)
            assert proc.stdin is not None
            pipe.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
            await pipe.reply(0)
            proc.stdin.write(FAULTS[fault](body(1)) + lsp_frame(body(2)))
            replies = await replies_until(pipe, 2)
            assert replies[2]["error"]["code"] == METHOD_NOT_FOUND  # an answer: read whole
            if fault in ANSWERED:
                assert replies[1]["error"]["code"] == PARSE_ERROR
                assert "bad frame" in replies[1]["error"]["message"]
            else:  # the message after the garbage is read whole
                assert replies[1]["error"]["code"] == METHOD_NOT_FOUND
            pipe.send({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
            assert (await pipe.reply(3))["result"] is None
    stderr_text = stderr_path.read_text()
    assert "Traceback" not in stderr_text
    assert stderr_text.count("bad message from the client") == 1, stderr_text


async def replies_until(pipe: RawPipe, last: int) -> dict[int, dict[str, Any]]:
    """The replies, by request id, up to the one to request `last`."""
    replies: dict[int, dict[str, Any]] = {}
    while last not in replies:
        message = await asyncio.wait_for(pipe.frame(), timeout=10)
        if "id" in message and "method" not in message:
            replies[message["id"]] = message
    return replies


async def test_a_tcp_client_is_answered_after_a_bad_frame() -> None:
    port = free_port()
    async with spawned_server("--tcp", f"127.0.0.1:{port}"):
        pipe = await RawPipe.over_tcp(port)
        pipe.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        await pipe.reply(0)
        pipe.stdin.write(FAULTS["length not a number"](body(1)) + lsp_frame(body(2)))
        replies = await replies_until(pipe, 2)
        assert replies[1]["error"]["code"] == PARSE_ERROR
        assert replies[2]["error"]["code"] == METHOD_NOT_FOUND
        pipe.send({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
        assert (await pipe.reply(3))["result"] is None


async def test_blank_lines_between_messages_are_no_fault() -> None:
    assert await frames(b"\r\n\r\n\r\n" + lsp_frame(body(2)) + b"\r\n") == [body(2)]


async def test_a_long_run_of_garbage_is_reported_once() -> None:
    found = await frames(b"\x00garbage" * 100_000 + b"\r\n" + lsp_frame(body(2)))
    assert found[-1] == body(2)
    reported = [f for f in found[:-1] if isinstance(f, Fault) and not f.rest_of_last]
    assert len(reported) == 1, found
