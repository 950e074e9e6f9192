#!/usr/bin/env python3
"""A fake OpenAI-compatible completion server, used as the *model* in end-to-end tests.

Why a real HTTP server in its own process: the language server under test talks to vLLM
over HTTP with streaming, cancellation and retries, and the behaviours worth testing
(a stream that stalls, a TCP connection that is reset mid-stream, a client that hangs up,
a stream that never ends, a 100 MB event, bytes that are not UTF-8, a proxy's HTML page
sent as a 200 stream) only exist on a real socket.  The server is written on asyncio
streams with hand-written HTTP/1.1 so that it can do things a framework would refuse to
do (reset a connection with RST, send broken SSE) and so that it needs nothing beyond the
standard library.

Run it with ``python tests/fake_openai.py --port 0``; it prints exactly one line to stdout,
``listening on 127.0.0.1:PORT``, and logs only to stderr.  Tests normally use the
:class:`FakeBackend` helper in this file, which spawns it and talks to its control
endpoints (``/_script``, ``/_events``, ``/_reset``, ``/_connections``) with
``http.client``.

This file is the command line and the helper; the server is in fake_server.py, over the
hand-written HTTP of fake_http.py; what a test can make it do is in fake_script.py, its
token ids in fake_tokens.py; fake_engine.py, fake_flavors.py and fake_oracle.py add a
compute-bound engine, other engines' dialects and an oracle that knows the right answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import http.client
import json
import logging
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_flavors import FLAVORS
from fake_script import DEFAULT_MODEL, DEFAULT_TEXT
from fake_server import serve


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--default-text", default=DEFAULT_TEXT, help="reply when no rule matches")
    parser.add_argument("--script", default=None, help="JSON file shaped like POST /_script")
    parser.add_argument("--quiet", action="store_true", help="log warnings only")
    parser.add_argument(
        "--flavor", choices=FLAVORS, default="vllm", help="the engine to behave like"
    )
    parser.add_argument(
        "--exit-on-stdin-eof", action="store_true", help="exit when stdin closes (parent died)"
    )
    parser.add_argument(
        "--prefill-tokens-per-s",
        type=float,
        default=None,
        help="behave like a compute-bound engine: prompt tokens not in the prefix cache "
        "take 1/RATE s each of one prefill queue served by priority (fake_engine.py)",
    )
    parser.add_argument(
        "--oracle",
        default=None,
        help="answer with the text that follows the cursor in this folder's files, where "
        "no script rule matches (fake_oracle.py)",
    )
    parser.add_argument(
        "--oracle-right",
        type=float,
        default=0.5,
        help="the share of places the oracle answers right; the others get --default-text",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s fake_openai %(levelname)s %(message)s",
    )
    return asyncio.run(serve(args))


class FakeBackendError(RuntimeError):
    """The fake server failed to start, or a control call failed."""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Last-resort cleanup if a FakeBackend is garbage-collected while running."""
    if proc.poll() is None:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


class FakeBackend:
    """Spawns the fake server in its own process and drives it; stdlib only, so it works
    without httpx.  Use as a context manager::

        with FakeBackend() as fake:
            fake.script([{"match": "def ", "text": "return 1"}])
            ... point the client at fake.url ...
            assert fake.events()[0]["completed"]
    """

    SCRIPT = Path(__file__).resolve()

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        default_text: str | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 10.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.default_text = default_text
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.host = host
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        # A temporary file, not a pipe: a pipe nobody reads could fill up and block the server.
        self._stderr: IO[bytes] | None = None
        self._stderr_final = ""

    # ---- lifecycle

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no /v1)."""
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.base_url}/v1"

    def command(self) -> list[str]:
        """The command line used to start the server."""
        cmd = [sys.executable, str(self.SCRIPT), "--port", "0", "--host", self.host]
        cmd += ["--model", self.model, "--exit-on-stdin-eof"]
        if self.api_key is not None:
            cmd += ["--api-key", self.api_key]
        if self.default_text is not None:
            cmd += ["--default-text", self.default_text]
        return cmd + self.extra_args

    def start(self) -> FakeBackend:
        """Spawn the server and wait (up to startup_timeout) for its 'listening on' line."""
        if self.proc is not None:
            raise FakeBackendError("FakeBackend already started")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives until stop()
        cmd = self.command()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        weakref.finalize(self, _kill, self.proc)
        try:
            line = self._read_first_line(self.proc, time.monotonic() + self.startup_timeout)
            found = re.fullmatch(r"listening on (\S+):(\d+)", line.strip())
            if not found:
                raise FakeBackendError(f"unexpected first line {line!r}")
            self.port = int(found.group(2))
        except FakeBackendError as exc:
            self.stop()
            raise FakeBackendError(
                f"fake OpenAI server failed to start: {exc}\ncommand: {cmd}\n"
                f"exit code: {self.proc.returncode}\nstderr:\n{self._stderr_final}"
            ) from None
        return self

    @staticmethod
    def _read_first_line(proc: subprocess.Popen[bytes], deadline: float) -> str:
        """Read stdout up to the first newline without blocking past the deadline."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        data = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in data:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FakeBackendError("timed out waiting for 'listening on HOST:PORT'")
                if sel.select(remaining):
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        proc.wait(5)
                        raise FakeBackendError("process exited before listening")
                    data += chunk
        return data.split(b"\n", 1)[0].decode(errors="replace")

    def stderr_text(self) -> str:
        """Everything the server logged so far (read without moving the shared offset)."""
        if self._stderr is None or self._stderr.closed:
            return self._stderr_final
        fd = self._stderr.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM the server and wait for it (SIGKILL after ``timeout``); the exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._stderr is not None and not self._stderr.closed:
            self._stderr_final = self.stderr_text()
            self._stderr.close()
        return proc.returncode

    def __enter__(self) -> FakeBackend:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- control calls

    def call(self, method: str, path: str, body: object = None, timeout: float = 10.0) -> Any:
        """One HTTP request to the server (control endpoints); the decoded JSON reply."""
        if self.proc is None or self.proc.poll() is not None:
            raise FakeBackendError(f"fake server is not running\nstderr:\n{self.stderr_text()}")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        if response.status >= 300:
            raise FakeBackendError(f"{method} {path} -> {response.status}: {raw.decode()}")
        return json.loads(raw) if raw else None

    def script(
        self,
        rules: Sequence[Mapping[str, Any]] = (),
        default_text: str | None = None,
        refuse_fields: Sequence[str] = (),
        serve_model: str | None = None,
        refuse_token_ids: bool = False,
        tokenizer: Path | None = None,
        ignore_constraints: bool = False,
    ) -> None:
        """Replace the rules (and the default text; None means the launch default), the
        request fields refused with 400, the model served (None: the launch one), whether
        prompts of token ids are refused, the tokenizer.json /tokenize uses (None: no
        /tokenize), and whether healing's constraints are ignored."""
        body: dict[str, Any] = {"rules": [dict(r) for r in rules]}
        if default_text is not None:
            body["default_text"] = default_text
        if refuse_fields:
            body["refuse_fields"] = list(refuse_fields)
        if serve_model is not None:
            body["serve_model"] = serve_model
        if refuse_token_ids:
            body["refuse_token_ids"] = True
        if tokenizer is not None:
            body["tokenizer"] = str(tokenizer)
        if ignore_constraints:
            body["ignore_constraints"] = True
        self.call("POST", "/_script", body)

    def connections(self) -> dict[str, int]:
        """Connections accepted so far ("opened", this call's own included), open now
        ("open"), and open with no request sent on them ("never_used")."""
        counts: dict[str, int] = self.call("GET", "/_connections")
        return counts

    def events(self) -> list[dict[str, Any]]:
        """One record per completion request so far, oldest first."""
        events: list[dict[str, Any]] = self.call("GET", "/_events")
        return events

    def reset(self) -> None:
        """Clear events and rules."""
        self.call("POST", "/_reset", {})

    def wait_for(
        self,
        predicate: Callable[[list[dict[str, Any]]], bool],
        timeout: float = 2.0,
        interval: float = 0.005,
    ) -> list[dict[str, Any]]:
        """Poll events until ``predicate(events)`` holds; TimeoutError with the events if not.
        Blocks the thread: in async tests use :meth:`wait_for_async`."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if predicate(events):
                return events
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout}s; events: {events}")
            time.sleep(interval)

    async def wait_for_async(
        self,
        predicate: Callable[[list[dict[str, Any]]], bool],
        timeout: float = 2.0,
        interval: float = 0.005,
    ) -> list[dict[str, Any]]:
        """Like :meth:`wait_for` without blocking the event loop."""
        deadline = time.monotonic() + timeout
        while True:
            events = await asyncio.to_thread(self.events)
            if predicate(events):
                return events
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout}s; events: {events}")
            await asyncio.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
