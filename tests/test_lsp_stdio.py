"""The server reads a pipe on stdin on its event loop (server.lsp.stdio), and anything
else on a reader thread. Every message is read whole, however it is split or packed, and
garbage between messages is dropped without stopping the server."""

from __future__ import annotations

import asyncio
import os
import pty
import socket
import sys
import tty
from pathlib import Path
from typing import Any

from lsp_helpers import INITIALIZE, RawPipe, lsp_frame, spawned_server

from server.lsp.stdio import readable_on_loop


def frame(msg_id: int | None, method: str, params: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        message["id"] = msg_id
    return lsp_frame(message)


def started_line(notifications: list[dict[str, Any]]) -> str:
    lines = [n["params"]["message"] for n in notifications if n["method"] == "window/logMessage"]
    return next(line for line in lines if "started for" in line)


def test_pipes_and_sockets_of_their_own_are_read_on_the_loop(tmp_path: Path) -> None:
    stdin_pipe, stdout_pipe = os.pipe(), os.pipe()
    left, right = socket.socketpair()
    other_left, other_right = socket.socketpair()
    plain = tmp_path / "session.bin"
    plain.write_bytes(b"")
    try:
        with (
            os.fdopen(stdin_pipe[0], "rb", closefd=False) as pipe_in,
            os.fdopen(stdout_pipe[1], "wb", closefd=False) as pipe_out,
            os.fdopen(left.fileno(), "rb", closefd=False) as socket_in,
            os.fdopen(left.fileno(), "wb", closefd=False) as same_socket_out,
            os.fdopen(other_left.fileno(), "wb", closefd=False) as other_socket_out,
            plain.open("rb") as file_in,
        ):
            assert readable_on_loop(pipe_in, pipe_out)
            assert readable_on_loop(socket_in, other_socket_out)
            # one socket both ways (as a terminal can be): non-blocking would reach stdout
            assert not readable_on_loop(socket_in, same_socket_out)
            assert not readable_on_loop(file_in, pipe_out)  # the loop cannot watch a file
    finally:
        for fd in (*stdin_pipe, *stdout_pipe):
            os.close(fd)
        for sock in (left, right, other_left, other_right):
            sock.close()


async def test_a_pipe_is_read_on_the_event_loop_a_message_in_pieces_or_several_at_once() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        assert proc.stdin is not None
        first = frame(1, "initialize", INITIALIZE)
        for piece in (first[:7], first[7:30], first[30:-5], first[-5:]):
            proc.stdin.write(piece)
            await proc.stdin.drain()
            await asyncio.sleep(0.05)
        assert (await pipe.reply(1))["result"]["serverInfo"]["name"] == "headstart"
        proc.stdin.write(
            frame(None, "initialized", {})
            + frame(2, "workspace/executeCommand", {"command": "nonexistent", "arguments": []})
            + frame(3, "shutdown", None)
        )
        assert "error" in await pipe.reply(2)
        assert (await pipe.reply(3))["result"] is None
        assert started_line(pipe.notifications).endswith("stdin read by the event loop")
        pipe.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 0


async def test_garbage_longer_than_a_header_line_is_dropped_and_the_server_reads_on() -> None:
    async with spawned_server() as proc:
        pipe = RawPipe.of_process(proc)
        assert proc.stdin is not None
        proc.stdin.write(b"\x00garbage" * 100_000 + b"\r\n")
        proc.stdin.write(frame(1, "initialize", INITIALIZE))
        assert (await pipe.reply(1))["result"]["serverInfo"]["name"] == "headstart"
        pipe.send({"jsonrpc": "2.0", "method": "shutdown", "id": 2, "params": None})
        assert (await pipe.reply(2))["result"] is None


async def test_a_terminal_on_stdin_is_read_on_a_thread() -> None:
    """A terminal (someone running `headstart serve` by hand) may share its file
    description with stdout, so the server leaves it blocking and reads it on a thread."""
    from conftest import ROOT, server_env

    master, terminal = pty.openpty()
    try:
        tty.setraw(terminal)  # bytes as they are: no echo, no line editing
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "server", "serve"),
            stdin=terminal,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=server_env(),
            cwd=ROOT,
        )
        try:
            assert proc.stdout is not None
            pipe = RawPipe(proc.stdout, None)  # the test writes to the pty
            os.write(master, frame(1, "initialize", INITIALIZE))
            assert (await pipe.reply(1))["result"]["serverInfo"]["name"] == "headstart"
            os.write(master, frame(None, "initialized", {}) + frame(2, "shutdown", None))
            assert (await pipe.reply(2))["result"] is None
            read_by = started_line(pipe.notifications)
            assert read_by.endswith("stdin read by a reader thread (stdin is not a pipe)")
            os.write(master, frame(None, "exit", None))
            assert await asyncio.wait_for(proc.wait(), timeout=10) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    finally:
        os.close(master)
        os.close(terminal)
