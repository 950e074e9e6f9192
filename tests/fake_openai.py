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
:class:`FakeBackend` helper at the bottom of this file, which spawns it and talks to its
control endpoints (``/_script``, ``/_events``, ``/_reset``, ``/_connections``) with
``http.client``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import http
import http.client
import json
import logging
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_engine import PrefillQueue
from fake_flavors import (
    FLAVORS,
    ITL_NAMES,
    OWNED_BY,
    EngineStats,
    histogram_lines,
    metrics,
    refusal,
)
from fake_oracle import Oracle

DEFAULT_MODEL = "fake-coder"
DEFAULT_TEXT = "pass"
MAX_MODEL_LEN = 4096
BEHAVIOURS = frozenset(
    {
        "normal",
        "stall",
        "drop",
        "http_500",
        "garbage",
        "stall_forever",
        "bad_json_body",
        "corrupt",
        "empty",
        "endless",
        "huge_line",
        "bad_utf8",
        "html_200",
    }
)
HUGE_LINE_BYTES = 100 * 1024 * 1024
"""'huge_line': an event this long that never ends (a backend gone mad)."""
CORRUPT_TEXT = "\ufffd\x00\ufffd"
PROMPT_PIECE = 4  # characters per prompt "token" in prompt_token_ids
STALL_CAP_S = 120.0  # a plain "stall" gives up after this long, so no test can hang forever
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
READ_SIZE = 64 * 1024
BAD_BODY = b"<html>oops</html>"
GARBAGE_EVENTS = (
    b"data: {not json\n\n",
    b'data: {"choices": 5}\n\n',
    b"this line has no data prefix\n\n",
)
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

log = logging.getLogger("fake_openai")


# --------------------------------------------------------------------------- script


class BadRequest(Exception):
    """A request the fake cannot make sense of; answered with an error instead of a crash."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _get_int(raw: Mapping[str, Any], key: str, default: int | None) -> int | None:
    """Read a non-negative int field, rejecting bools and floats so typos fail loudly."""
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{key} must be a non-negative integer, got {value!r}")
    return value


def _get_ms(raw: Mapping[str, Any], key: str) -> float:
    """Read a non-negative delay in milliseconds (int or float)."""
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise BadRequest(f"{key} must be a non-negative number of milliseconds, got {value!r}")
    return float(value)


def _get_str(raw: Mapping[str, Any], key: str, default: str) -> str:
    """Read a string field."""
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise BadRequest(f"{key} must be a string, got {value!r}")
    return value


@dataclass
class Rule:
    """How to answer completion requests whose prompt contains ``match``."""

    match: str = ""
    text: str = ""
    chunk_chars: int = 4
    first_delay_ms: float = 0.0
    chunk_delay_ms: float = 0.0
    behaviour: str = "normal"
    after_chunks: int = 2
    times: int | None = None
    used: int = 0  # requests served so far; reported by GET /_script, not settable

    FIELDS = frozenset(
        {
            "match",
            "text",
            "chunk_chars",
            "first_delay_ms",
            "chunk_delay_ms",
            "behaviour",
            "behavior",
            "after_chunks",
            "times",
        }
    )

    @classmethod
    def from_json(cls, raw: object) -> Rule:
        """Validate one rule strictly, so a misspelt field fails the test that sent it."""
        if not isinstance(raw, dict):
            raise BadRequest(f"a rule must be an object, got {raw!r}")
        unknown = set(raw) - cls.FIELDS
        if unknown:
            known = sorted(cls.FIELDS)
            raise BadRequest(f"unknown rule field(s) {sorted(unknown)}; known: {known}")
        behaviour = _get_str(raw, "behaviour", _get_str(raw, "behavior", "normal"))
        if behaviour not in BEHAVIOURS:
            raise BadRequest(f"unknown behaviour {behaviour!r}; known: {sorted(BEHAVIOURS)}")
        chunk_chars = _get_int(raw, "chunk_chars", 4)
        if not chunk_chars:
            raise BadRequest("chunk_chars must be at least 1")
        return cls(
            match=_get_str(raw, "match", ""),
            text=_get_str(raw, "text", ""),
            chunk_chars=chunk_chars,
            first_delay_ms=_get_ms(raw, "first_delay_ms"),
            chunk_delay_ms=_get_ms(raw, "chunk_delay_ms"),
            behaviour=behaviour,
            after_chunks=_get_int(raw, "after_chunks", 2) or 0,
            times=_get_int(raw, "times", None),
        )

    def to_json(self) -> dict[str, Any]:
        """The rule as GET /_script shows it."""
        return {
            "match": self.match,
            "text": self.text,
            "chunk_chars": self.chunk_chars,
            "first_delay_ms": self.first_delay_ms,
            "chunk_delay_ms": self.chunk_delay_ms,
            "behaviour": self.behaviour,
            "after_chunks": self.after_chunks,
            "times": self.times,
            "used": self.used,
        }


@dataclass
class Script:
    """The ordered rules plus the text used when no rule matches."""

    rules: list[Rule]
    default_text: str
    refuse_fields: tuple[str, ...] = ()
    """Request fields answered with 400, as a server that does not know them would
    (e.g. `priority` on a vLLM without priority scheduling), dotted for nested ones
    (`structured_outputs.grammar`: a vLLM whose xgrammar backend cannot read the Lark
    grammar of token healing)."""
    serve_model: str | None = None
    """The model served instead of the launch one, as a backend restarted with another
    model: /v1/models lists it, and a completion naming any other model gets vLLM's 404."""
    refuse_token_ids: bool = False
    """Answer a prompt of token ids with 400, as a server that calls itself vLLM in
    /v1/models but takes text prompts only (a proxy in front of vLLM may)."""
    tokenizer: str | None = None
    """A tokenizer.json: POST /tokenize answers with its ids, as vLLM does with the served
    model's tokenizer. Without one, /tokenize is 404 (a proxy may not pass it on)."""

    @classmethod
    def from_json(cls, raw: object, fallback_text: str) -> Script:
        """Parse a POST /_script body; a missing default_text means the launch default."""
        if not isinstance(raw, dict):
            raise BadRequest("script must be an object {rules: [...], default_text: str}")
        known = {
            "rules",
            "default_text",
            "refuse_fields",
            "serve_model",
            "refuse_token_ids",
            "tokenizer",
        }
        unknown = set(raw) - known
        if unknown:
            raise BadRequest(f"unknown script field(s) {sorted(unknown)}")
        rules = raw.get("rules", [])
        if not isinstance(rules, list):
            raise BadRequest("rules must be a list")
        default_text = raw.get("default_text")
        if default_text is None:
            default_text = fallback_text
        if not isinstance(default_text, str):
            raise BadRequest("default_text must be a string")
        refuse = raw.get("refuse_fields", [])
        if not isinstance(refuse, list) or not all(isinstance(f, str) for f in refuse):
            raise BadRequest("refuse_fields must be a list of strings")
        serve_model = raw.get("serve_model")
        if not (serve_model is None or isinstance(serve_model, str)):
            raise BadRequest("serve_model must be a string")
        refuse_ids = raw.get("refuse_token_ids", False)
        if not isinstance(refuse_ids, bool):
            raise BadRequest("refuse_token_ids must be a boolean")
        tokenizer = raw.get("tokenizer")
        if not (tokenizer is None or isinstance(tokenizer, str)):
            raise BadRequest("tokenizer must be the path of a tokenizer.json")
        rules_parsed = [Rule.from_json(r) for r in rules]
        return cls(rules_parsed, default_text, tuple(refuse), serve_model, refuse_ids, tokenizer)

    def pick(self, prompt: str) -> tuple[int | None, Rule]:
        """First live rule whose ``match`` occurs in the prompt, else the default text."""
        for index, rule in enumerate(self.rules):
            if rule.times is not None and rule.used >= rule.times:
                continue
            if rule.match in prompt:
                rule.used += 1
                return index, rule
        return None, Rule(text=self.default_text)

    def to_json(self) -> dict[str, Any]:
        """The script as GET /_script shows it."""
        return {
            "rules": [r.to_json() for r in self.rules],
            "default_text": self.default_text,
            "refuse_fields": list(self.refuse_fields),
            "serve_model": self.serve_model,
            "refuse_token_ids": self.refuse_token_ids,
            "tokenizer": self.tokenizer,
        }


@functools.lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer  # only scripts that name a tokenizer need it

    return Tokenizer.from_file(path)


COMPACT_ALPHABET = "\n\t" + "".join(map(chr, range(32, 127)))
"""The characters of pieces spelled compactly: printable ASCII, newline and tab."""
_COMPACT_INDEX = {c: i + 1 for i, c in enumerate(COMPACT_ALPHABET)}  # 0: no character
_COMPACT_BASE = len(COMPACT_ALPHABET) + 1
COMPACT_CHARS = 4
SPELLED_IN_BYTES = 1 << 31
"""Ids at or above this spell their piece's UTF-8 bytes; below it, up to COMPACT_CHARS
characters of COMPACT_ALPHABET in base 98, small like a real vocabulary's ids (which
vllm-router, parsing prompts as 32-bit signed ints, requires)."""


def token_id(piece: str, generated: bool) -> int:
    """The fake's vocabulary: a token's id spells its text (so any id decodes without a
    table, across restarts and replicas) and says whether the model generated it (the
    low bit)."""
    if len(piece) <= COMPACT_CHARS and all(c in _COMPACT_INDEX for c in piece):
        code = 0
        for c in piece:
            code = code * _COMPACT_BASE + _COMPACT_INDEX[c]
        return (code << 1) | int(generated)
    return SPELLED_IN_BYTES + ((int.from_bytes(piece.encode("utf-8"), "big") << 1) | int(generated))


def token_text(token: int) -> tuple[str, bool]:
    generated = bool(token & 1)
    if token < SPELLED_IN_BYTES:
        code, chars = token >> 1, []
        while code:
            code, digit = divmod(code, _COMPACT_BASE)
            chars.append(COMPACT_ALPHABET[digit - 1])
        return "".join(reversed(chars)), generated
    value = (token - SPELLED_IN_BYTES) >> 1
    data = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return data.decode("utf-8", "replace"), generated


def prompt_token_ids(prompt: str) -> list[int]:
    return [
        token_id(prompt[i : i + PROMPT_PIECE], False) for i in range(0, len(prompt), PROMPT_PIECE)
    ]


def plan_chunks(
    text: str, stop: Sequence[str], max_tokens: int | None, chunk_chars: int
) -> tuple[list[str], str]:
    """Cut the text like vLLM would, with one "token" per ``chunk_chars`` characters.

    A stop string ends the text (it is left out) with finish_reason "stop" only if the
    token that completes it is within max_tokens; otherwise, and whenever the text has
    more tokens than max_tokens, it ends after max_tokens tokens with "length".
    """
    chunks = [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]
    found = [(i + len(s), i) for s in stop if s and (i := text.find(s)) >= 0]
    if found:
        end, start = min(found)
        if max_tokens is None or -(-end // chunk_chars) <= max_tokens:
            cut = text[:start]
            return [cut[i : i + chunk_chars] for i in range(0, len(cut), chunk_chars)], "stop"
    if max_tokens is not None and len(chunks) > max_tokens:
        return chunks[:max_tokens], "length"
    return chunks, "stop"


# --------------------------------------------------------------------------- events


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


# --------------------------------------------------------------------------- HTTP


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
        return await self.send(status, _dumps(payload), "application/json", keep_alive)

    def abort(self) -> None:
        """Reset the TCP connection (SO_LINGER 0 makes close() send RST instead of FIN)."""
        self.aborted = True
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


def _dumps(payload: object) -> bytes:
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


# --------------------------------------------------------------------------- server


@dataclass
class CompletionRequest:
    """The fields of a /v1/completions body that the fake uses."""

    prompt: str | list[Any]
    match_text: str
    max_tokens: int | None
    stop: list[str]
    stream: bool
    model: str
    suffix: str | None
    include_usage: bool
    return_token_ids: bool = False
    generated: int = 0
    """Tokens at the end of a token-id prompt that the model generated: a resumed stream,
    which the fake continues where the earlier one was cut."""
    priority: int = 0
    """vLLM's priority-scheduling rank (lower first); 0 when absent or not an integer."""

    @classmethod
    def parse(cls, raw: bytes) -> tuple[Any, CompletionRequest]:
        """Validate like vLLM would (loosely); raises BadRequest with a readable message."""
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        prompt = body.get("prompt")
        generated = 0
        if isinstance(prompt, str):
            match_text = prompt
        elif isinstance(prompt, list) and all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt
        ):
            pieces = [token_text(t) for t in prompt]
            match_text = "".join(text for text, _ in pieces)
            while generated < len(pieces) and pieces[len(pieces) - 1 - generated][1]:
                generated += 1
        elif isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            match_text = prompt[0]
        else:
            raise BadRequest("prompt must be a string, a list of token ids or [string]")
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
        ):
            raise BadRequest("max_tokens must be a non-negative integer or null")
        stop = body.get("stop") or []
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise BadRequest("stop must be a string or a list of strings")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise BadRequest("stream must be a boolean")
        model = body.get("model", "")
        suffix = body.get("suffix")
        if not isinstance(model, str) or not (suffix is None or isinstance(suffix, str)):
            raise BadRequest("model and suffix must be strings")
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return_ids = body.get("return_token_ids") is True
        priority = body.get("priority", 0)
        return body, cls(
            prompt,
            match_text,
            max_tokens,
            stop,
            stream,
            model,
            suffix,
            include_usage,
            return_ids,
            generated,
            priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        )


FORCED_START = re.compile(r"((?:[^\\\[]|\\.)*)\[\\s\\S\]\*")
"""The one regex shape the fake honours, `LITERAL[\\s\\S]*`: an answer starting with
LITERAL (what a healed prompt sends, server.backend.client.starting_with)."""

FORCED_START_GRAMMAR = re.compile(
    r'start: ("(?:[^"\\\\]|\\\\.)*") /\(\.\|\\n\)\*/ \((<\[\d+\]>(?: \| <\[\d+\]>)*)\)\?'
)
"""The one Lark grammar shape the fake honours (server.backend.client.healing_grammar):
a JSON string the answer starts with, anything, then optionally one of the end tokens."""


def forced_start(body: Mapping[str, Any]) -> str:
    """What an answer must start with under the request's constraint (vLLM's
    `structured_outputs.regex` or `.grammar`, SGLang's `regex`); "" without one. The
    fake's "model" then spells it first, as a constrained model would."""
    outputs = body.get("structured_outputs")
    if isinstance(outputs, dict) and "grammar" in outputs:
        grammar = outputs["grammar"]
        found = FORCED_START_GRAMMAR.fullmatch(grammar) if isinstance(grammar, str) else None
        if found is None:
            raise BadRequest(f"the fake honours only healing_grammar's shape, got {grammar!r}")
        return str(json.loads(found.group(1)))
    pattern = outputs.get("regex") if isinstance(outputs, dict) else body.get("regex")
    if pattern is None:
        return ""
    match = FORCED_START.fullmatch(pattern) if isinstance(pattern, str) else None
    if match is None:
        raise BadRequest(f"the fake honours only regexes LITERAL[\\s\\S]*, got {pattern!r}")
    return re.sub(r"\\(.)", r"\1", match.group(1))


def has_field(body: Mapping[str, Any], name: str) -> bool:
    """Whether the body holds the field `name`, dotted for nested ones
    (`structured_outputs.grammar`)."""
    value: Any = body
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return True


class PrefixCache:
    """vLLM's automatic prefix caching, counted the way its /metrics counts it: a prompt's
    tokens in whole blocks that an earlier prompt began with the same way are hits."""

    BLOCK = 16

    def __init__(self) -> None:
        self.blocks: set[int] = set()
        self.queries = 0
        self.hits = 0

    def query(self, tokens: list[int], salt: object = None) -> int:
        """Count a prompt; the tokens it must compute (those not hit). A `cache_salt`
        starts its own chain, as in vLLM, so salted prompts share no blocks."""
        self.queries += len(tokens)
        hitting = True
        key = 0 if salt is None else hash(("salt", salt))
        hits = 0
        for end in range(self.BLOCK, len(tokens) + 1, self.BLOCK):
            key = hash((key, *tokens[end - self.BLOCK : end]))  # chained, as vLLM's block hashes
            if hitting and key in self.blocks:
                hits += self.BLOCK
            else:
                hitting = False
                self.blocks.add(key)
        self.hits += hits
        return len(tokens) - hits


class FakeServer:
    """Shared state (script, events, counters) plus the request handlers."""

    def __init__(
        self,
        model: str,
        api_key: str | None,
        default_text: str,
        flavor: str = "vllm",
        prefill: PrefillQueue | None = None,
        oracle: Oracle | None = None,
    ) -> None:
        self.model = model
        self.oracle = oracle
        """Answers where no script rule does, with the workspace's own text (fake_oracle.py)."""
        self.prefill = prefill
        """A compute-bound engine's prefill queue (fake_engine.py); None answers at once."""
        self.flavor = flavor
        """The engine it behaves like where they differ (fake_flavors.py)."""
        self.engine_stats = EngineStats()
        self.api_key = api_key
        self.launch_default_text = default_text
        self.script = Script([], default_text)
        self.events: list[Event] = []
        self.next_id = 1
        self.requests_total = 0
        self.completions_total = 0
        self.active_completions = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.prefix_cache = PrefixCache()
        self.connections: set[Conn] = set()
        self.connections_opened = 0

    # ---- connection loop

    async def handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve requests on one connection until either side closes it."""
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        conn = Conn(reader, writer)
        self.connections.add(conn)
        self.connections_opened += 1
        try:
            while True:
                try:
                    request = await conn.read_request()
                except BadRequest as exc:
                    log.info("bad request: %s", exc.message)
                    await conn.send_json(
                        exc.status, openai_error(exc.message, code=exc.status), False
                    )
                    break
                if request is None:
                    break
                self.requests_total += 1
                conn.requests += 1
                try:
                    keep = await self.dispatch(conn, request)
                except BadRequest as exc:
                    log.info("%s %s -> %d %s", request.method, request.path, exc.status, exc)
                    keep = await conn.send_json(
                        exc.status, openai_error(exc.message, code=exc.status)
                    )
                if not (keep and request.keep_alive) or conn.aborted:
                    break
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            # Shutdown.  Python 3.11's start_server callback calls task.exception() on the
            # finished handler and logs a spurious traceback if it ended cancelled, so end
            # it normally: nothing awaits this top-level task.
            pass
        except Exception:  # a bug in the fake must not take the whole server down
            log.exception("handler crashed")
            conn.abort()
        finally:
            self.connections.discard(conn)
            if task is not None:
                self.tasks.discard(task)
            if not conn.aborted:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def close_connections(self) -> None:
        """Cancel every connection task (shutdown)."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def dispatch(self, conn: Conn, req: Request) -> bool:
        """Route one request; returns whether the connection may be reused."""
        routes: dict[str, dict[str, Callable[[Conn, Request], Any]]] = {
            "/v1/completions": {"POST": self.completions},
            "/v1/models": {"GET": self.models},
            "/tokenize": {"POST": self.tokenize},
            "/health": {"GET": self.health},
            "/metrics": {"GET": self.metrics},
            "/prometheus/metrics": {"GET": self.metrics},
            "/_script": {"POST": self.set_script, "GET": self.get_script},
            "/_events": {"GET": self.get_events},
            "/_reset": {"POST": self.reset},
            "/_connections": {"GET": self.get_connections},
        }
        methods = routes.get(req.path.rstrip("/") or "/")
        if methods is None:
            raise BadRequest(f"no route {req.path!r}", 404)
        handler = methods.get(req.method)
        if handler is None:
            raise BadRequest(f"method {req.method} not allowed on {req.path}", 405)
        keep: bool = await handler(conn, req)
        if req.path != "/v1/completions":
            log.info("%s %s", req.method, req.path)
        return keep

    def authorized(self, req: Request) -> bool:
        """vLLM's --api-key check: a Bearer token on /v1 routes."""
        return self.api_key is None or req.headers.get("authorization") == (
            f"Bearer {self.api_key}"
        )

    # ---- simple endpoints

    async def models(self, conn: Conn, req: Request) -> bool:
        """GET /v1/models."""
        if not self.authorized(req):
            return await conn.send_json(401, openai_error("invalid API key", code=401))
        card = {
            "id": self.script.serve_model or self.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": OWNED_BY[self.flavor],  # vllm: token ids and stop_token_ids accepted
            "root": self.script.serve_model or self.model,
            "max_model_len": MAX_MODEL_LEN,
        }
        return await conn.send_json(200, {"object": "list", "data": [card]})

    async def tokenize(self, conn: Conn, req: Request) -> bool:
        """POST /tokenize, as vLLM answers it, with the scripted tokenizer's ids."""
        if self.script.tokenizer is None:
            raise BadRequest(f"no route {req.path!r}", 404)
        try:
            body = json.loads(req.body)
            text, special = body["prompt"], body.get("add_special_tokens", True)
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            raise BadRequest("a tokenize body is {prompt: str}") from None
        ids = load_tokenizer(self.script.tokenizer).encode(text, add_special_tokens=special).ids
        return await conn.send_json(
            200, {"count": len(ids), "max_model_len": MAX_MODEL_LEN, "tokens": ids}
        )

    async def health(self, conn: Conn, req: Request) -> bool:
        """GET /health."""
        return await conn.send_json(200, {})

    async def metrics(self, conn: Conn, req: Request) -> bool:
        """GET /metrics: a few Prometheus lines, enough to test a scraper, named and placed
        as the flavor's engine names and places them."""
        path = req.path.rstrip("/")
        if self.flavor != "vllm":
            cache = self.prefix_cache
            found = metrics(
                self.flavor, path, self.model, cache.queries, cache.hits, self.engine_stats
            )
            if found is None:
                raise BadRequest(f"no route {req.path!r}", 404)
            return await conn.send(200, found[0].encode(), found[1])
        if path != "/metrics":
            raise BadRequest(f"no route {req.path!r}", 404)
        lines = [
            "# TYPE fake_requests_total counter",
            f"fake_requests_total {self.requests_total}",
            "# TYPE fake_completion_requests_total counter",
            f"fake_completion_requests_total {self.completions_total}",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{self.model}"}} {self.active_completions}',
            f'vllm:num_requests_waiting{{model_name="{self.model}"}} {self.waiting}',
            "# TYPE vllm:prefix_cache_queries counter",
            f'vllm:prefix_cache_queries_total{{model_name="{self.model}"}} '
            f"{self.prefix_cache.queries}",
            "# TYPE vllm:prefix_cache_hits counter",
            f'vllm:prefix_cache_hits_total{{model_name="{self.model}"}} {self.prefix_cache.hits}',
            "# TYPE vllm:prompt_tokens counter",
            f'vllm:prompt_tokens_total{{model_name="{self.model}"}} {self.prefix_cache.queries}',
            f'vllm:generation_tokens_total{{model_name="{self.model}"}} '
            f"{self.engine_stats.generation_tokens}",
            f'vllm:request_success_total{{finished_reason="stop",model_name="{self.model}"}} '
            f"{self.engine_stats.finished}",
            *histogram_lines(
                "vllm:time_to_first_token_seconds", self.model, self.engine_stats.first_token_s
            ),
            *histogram_lines(ITL_NAMES["vllm"], self.model, self.engine_stats.token_gap_s),
        ]
        body = ("\n".join(lines) + "\n").encode()
        return await conn.send(200, body, "text/plain; version=0.0.4")

    async def set_script(self, conn: Conn, req: Request) -> bool:
        """POST /_script replaces the rules."""
        try:
            raw = json.loads(req.body)
        except (ValueError, UnicodeDecodeError):
            raise BadRequest("script body is not valid JSON") from None
        self.script = Script.from_json(raw, self.launch_default_text)
        if self.script.tokenizer is not None:
            try:  # now, so that /tokenize answers as fast as vLLM's
                load_tokenizer(self.script.tokenizer)
            except Exception as exc:
                raise BadRequest(f"cannot load tokenizer {self.script.tokenizer}: {exc}") from None
        return await conn.send_json(200, self.script.to_json())

    async def get_script(self, conn: Conn, req: Request) -> bool:
        """GET /_script shows the rules and how often each was used."""
        return await conn.send_json(200, self.script.to_json())

    async def get_events(self, conn: Conn, req: Request) -> bool:
        """GET /_events: one record per completion request, oldest first."""
        return await conn.send_json(200, [e.to_json() for e in self.events])

    async def get_connections(self, conn: Conn, req: Request) -> bool:
        """GET /_connections: connections accepted so far, open now, and open without
        a request ever sent on them (what a client's connection pool may leak)."""
        idle_from_birth = sum(1 for c in self.connections if c.requests == 0)
        counts = {
            "opened": self.connections_opened,
            "open": len(self.connections),
            "never_used": idle_from_birth,
        }
        return await conn.send_json(200, counts)

    async def reset(self, conn: Conn, req: Request) -> bool:
        """POST /_reset: forget events and rules (in-flight requests carry on unrecorded)."""
        self.events = []
        self.next_id = 1
        self.script = Script([], self.launch_default_text)
        return await conn.send_json(200, {})

    # ---- completions

    async def completions(self, conn: Conn, req: Request) -> bool:
        """POST /v1/completions: answer from the script, streaming or not."""
        self.completions_total += 1
        event = Event(id=self.next_id, received_at=time.time(), headers=dict(req.headers))
        self.next_id += 1
        self.events.append(event)
        authorized = self.authorized(req)
        creq: CompletionRequest | None = None
        try:
            body, creq = CompletionRequest.parse(req.body)
        except BadRequest:
            if authorized:
                event.behaviour, event.status = "bad_request", 400
                event.close("server")
                raise
        if creq is not None and self.script.tokenizer and isinstance(creq.prompt, list):
            # ids of the scripted (served) tokenizer, read as vLLM reads them: none of them
            # is one of the fake's own generated tokens
            served = load_tokenizer(self.script.tokenizer)
            text = served.decode(creq.prompt, skip_special_tokens=False)
            creq = dataclasses.replace(creq, match_text=text, generated=0)
        if creq is not None:
            event.prompt, event.max_tokens, event.stop = creq.prompt, creq.max_tokens, creq.stop
            event.model, event.stream, event.suffix = creq.model, creq.stream, creq.suffix
            event.body = body
        if not authorized or creq is None:
            event.behaviour, event.status = "unauthorized", 401
            event.close("server")
            log.info("POST /v1/completions -> 401")
            return await conn.send_json(401, openai_error("invalid API key", code=401))
        refused = [name for name in self.script.refuse_fields if has_field(body, name)]
        if refused:
            event.behaviour, event.status = "refused_field", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (refused %s)", refused)
            message = f"Unrecognized request argument supplied: {refused[0]}"
            if refused[0] == "structured_outputs.grammar":  # vLLM with the xgrammar backend
                message = "Failed to convert the grammar from Lark to EBNF. "
            return await conn.send_json(400, openai_error(message))
        if (why := refusal(self.flavor, body)) is not None:
            event.behaviour, event.status = "refused_field", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (%s refuses: %s)", self.flavor, why)
            return await conn.send_json(400, {"error": why})  # TensorRT-LLM's shape
        if self.script.refuse_token_ids and isinstance(body.get("prompt"), list):
            event.behaviour, event.status = "refused_token_ids", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (token ids refused)")
            return await conn.send_json(400, openai_error("prompt must be a string"))
        served = self.script.serve_model
        if served is not None and creq.model != served:
            event.behaviour, event.status = "unknown_model", 404
            event.close("server")
            log.info("POST /v1/completions -> 404 (model %r; serving %r)", creq.model, served)
            message = f"The model `{creq.model}` does not exist."
            return await conn.send_json(404, openai_error(message, code=404))
        computed = self.prefix_cache.query(
            prompt_token_ids(creq.match_text), body.get("cache_salt")
        )
        index, rule = self.script.pick(creq.match_text)
        if index is None and self.oracle is not None:
            truth = self.oracle.answer(creq.match_text)
            rule = rule if truth is None else Rule(text=truth)
        try:
            forced = forced_start(body)
        except BadRequest as exc:
            event.behaviour, event.status = "bad_request", 400
            event.close("server")
            return await conn.send_json(400, openai_error(str(exc)))
        if forced and not rule.text.startswith(forced):
            rule = dataclasses.replace(rule, text=forced + rule.text)
        event.rule_index, event.behaviour = index, rule.behaviour
        log.info(
            "POST /v1/completions #%d stream=%s rule=%s behaviour=%s",
            event.id,
            creq.stream,
            index,
            rule.behaviour,
        )
        self.active_completions += 1
        watch = ClientWatch(conn, event)
        try:
            reply = Completion(self, conn, event, rule, creq, watch, computed)
            if creq.stream:
                return await reply.stream()
            return await reply.whole()
        finally:
            self.active_completions -= 1
            await watch.stop()
            if event.closed_by is None:  # e.g. the write failed before the watcher noticed
                event.close("client" if watch.gone.is_set() else "server")
            self._count(event)

    @property
    def waiting(self) -> int:
        """Requests waiting for their prefill (vLLM's num_requests_waiting)."""
        return 0 if self.prefill is None else self.prefill.waiting

    def _count(self, event: Event) -> None:
        """An engine's counters for one finished completion."""
        stats = self.engine_stats
        if event.first_chunk_at is not None:
            stats.first_token_s.append(event.first_chunk_at - event.received_at)
        if event.first_chunk_at is not None and event.closed_at and event.chunks_sent > 1:
            gap = (event.closed_at - event.first_chunk_at) / (event.chunks_sent - 1)
            stats.token_gap_s.append(gap)
        stats.generation_tokens += event.chunks_sent
        if event.completed:
            stats.finished += 1


class Completion:
    """Plays one rule for one request, stream or not; every wait also watches the client."""

    def __init__(
        self,
        server: FakeServer,
        conn: Conn,
        event: Event,
        rule: Rule,
        creq: CompletionRequest,
        watch: ClientWatch,
        computed: int = 0,
    ) -> None:
        self.server = server
        self.computed = computed
        """The prompt tokens not in the prefix cache, which a loaded engine must prefill."""
        self.conn = conn
        self.event = event
        self.rule = rule
        self.creq = creq
        self.watch = watch
        self.created = int(time.time())
        skip = creq.generated
        budget = None if creq.max_tokens is None else creq.max_tokens + skip
        chunks, self.finish = plan_chunks(rule.text, creq.stop, budget, rule.chunk_chars)
        self.chunks = chunks[skip:]

    def usage(self) -> dict[str, Any]:
        """Token counts, with one 'token' per chunk (and ~4 chars per prompt token), and the
        prompt tokens its prefix cache held, as vLLM with --enable-prompt-tokens-details
        says them."""
        prompt = self.creq.prompt
        prompt_tokens = len(prompt) if isinstance(prompt, list) else (len(prompt) + 3) // 4
        done = self.event.chunks_sent
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": done,
            "total_tokens": prompt_tokens + done,
            "prompt_tokens_details": {"cached_tokens": max(0, prompt_tokens - self.computed)},
        }

    def choice(self, text: str, finish: str | None, first: bool = False) -> dict[str, Any]:
        """One choice object; with return_token_ids, one token per chunk, as vLLM sends
        them (the prompt's ids in the first chunk only)."""
        choice: dict[str, Any] = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
        }
        if self.creq.return_token_ids:
            choice["token_ids"] = [token_id(text, True)] if text else []
            if first:
                prompt = self.creq.prompt
                ids = prompt if isinstance(prompt, list) else prompt_token_ids(prompt)
                choice["prompt_token_ids"] = ids
        return choice

    def envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        """The fields around the choices in every completion object."""
        return {
            "id": f"cmpl-{self.event.id}",
            "object": "text_completion",
            "created": self.created,
            "model": self.server.model,
            "choices": choices,
        }

    async def prefilled(self) -> bool:
        """Wait for the prompt's turn in a compute-bound engine's prefill queue, if the
        fake has one; False when the client left first (vLLM aborts it unserved)."""
        prefill = self.server.prefill
        if prefill is None or self.rule.behaviour != "normal":
            return True
        priority = self.creq.priority
        return await prefill.prefill(self.computed, priority, self.watch.gone)

    async def http_500(self) -> bool:
        """Reply 500 (after first_delay_ms) like an overloaded or crashed backend."""
        if await self.watch.sleep(self.rule.first_delay_ms / 1000):
            return False
        self.event.status = 500
        self.event.close("server")
        error = openai_error("fake internal server error", "internal_server_error", 500)
        return await self.conn.send_json(500, error)

    async def stall(self) -> bool:
        """Send nothing more; wait for the client to leave (or STALL_CAP_S for 'stall')."""
        cap = None if self.rule.behaviour == "stall_forever" else STALL_CAP_S
        if not await self.watch.sleep(cap):
            self.event.close("server")
        return False

    def drop(self) -> bool:
        """Reset the connection mid-response."""
        self.event.close("server")
        self.conn.abort()
        return False

    async def whole(self) -> bool:
        """stream=false: wait as long as streaming would have taken, then one JSON body."""
        rule = self.rule
        if rule.behaviour == "http_500":
            return await self.http_500()
        if rule.behaviour in ("stall", "stall_forever"):
            return await self.stall()
        if not await self.prefilled():
            return False
        n = len(self.chunks)
        delay = rule.first_delay_ms + rule.chunk_delay_ms * max(n - 1, 0)
        if await self.watch.sleep(delay / 1000):
            return False
        if rule.behaviour == "drop":
            return self.drop()
        self.event.close("server")
        if rule.behaviour == "bad_json_body":
            return await self.conn.send(200, BAD_BODY, "application/json")
        if rule.behaviour == "garbage":
            return await self.conn.send(200, b'{"choices": 5}', "application/json")
        self.event.first_chunk_at = time.time()
        self.event.chunks_sent = n
        self.event.text = "".join(self.chunks)
        body = self.envelope([self.choice(self.event.text, self.finish)])
        body["usage"] = self.usage()
        self.event.completed = await self.conn.send_json(200, body)
        return self.event.completed

    async def sse(self, payload: bytes) -> bool:
        """One SSE event as one HTTP chunk, flushed."""
        return await self.conn.write(b"%x\r\n%s\r\n" % (len(payload), payload))

    async def data(self, obj: object) -> bool:
        """One ``data: JSON`` event."""
        return await self.sse(b"data: " + _dumps(obj) + b"\n\n")

    async def stream(self) -> bool:
        """stream=true: SSE over chunked transfer encoding, one flush per event."""
        rule, event = self.rule, self.event
        if rule.behaviour == "http_500":
            return await self.http_500()
        head = [
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
            ("Transfer-Encoding", "chunked"),
            ("X-Request-Id", f"cmpl-{event.id}"),
        ]
        if not await self.conn.send_head(200, head, keep_alive=True):
            return False
        if not await self.prefilled():  # headers first, as vLLM's streaming response
            return False
        if rule.behaviour == "bad_json_body":
            if await self.watch.sleep(rule.first_delay_ms / 1000):
                return False
            event.close("server")
            return await self.sse(BAD_BODY) and await self.conn.write(b"0\r\n\r\n")
        if rule.behaviour == "html_200":  # a proxy's error page, sent as a 200 stream
            event.close("server")
            page = b"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n"
            return await self.sse(page) and await self.conn.write(b"0\r\n\r\n")
        if rule.behaviour == "huge_line":  # one event that never ends, in 1 MB pieces
            if not await self.sse(b'data: {"choices": [{"index": 0, "text": "'):
                return False
            piece = b"x" * (1 << 20)
            for _ in range(HUGE_LINE_BYTES >> 20):
                if not await self.sse(piece):
                    return False
            return await self.stall()
        if rule.behaviour == "bad_utf8":
            choice = b'{"choices": [{"index": 0, "text": "ok \xff\xfe", "finish_reason": null}]}'
            if not await self.sse(b"data: " + choice + b"\n\n"):
                return False
            return await self.stall()
        if rule.behaviour == "endless":  # the rule's chunks again and again, never [DONE]
            while True:
                for chunk in self.chunks or ["x"]:
                    if await self.watch.sleep(rule.chunk_delay_ms / 1000):
                        return False
                    if not await self.data(self.envelope([self.choice(chunk, None)])):
                        return False
                    event.chunks_sent += 1
        if rule.behaviour == "empty":  # [DONE] after the delay, and no event before it
            if await self.watch.sleep(rule.first_delay_ms / 1000):
                return False
            event.close("server")
            return await self.sse(b"data: [DONE]\n\n") and await self.conn.write(b"0\r\n\r\n")
        normal = rule.behaviour == "normal"
        count = len(self.chunks) if normal else min(rule.after_chunks, len(self.chunks))
        for i in range(count):
            delay = rule.first_delay_ms if i == 0 else rule.chunk_delay_ms
            if await self.watch.sleep(delay / 1000):
                return False
            last = normal and i == len(self.chunks) - 1
            choice = self.choice(self.chunks[i], self.finish if last else None, first=i == 0)
            if not await self.data(self.envelope([choice])):
                return False
            if event.first_chunk_at is None:
                event.first_chunk_at = time.time()
            event.chunks_sent += 1
            event.text += self.chunks[i]
        if count == 0 and await self.watch.sleep(rule.first_delay_ms / 1000):
            return False
        if rule.behaviour == "drop":
            return self.drop()
        if rule.behaviour == "corrupt":
            if not await self.data(self.envelope([self.choice(CORRUPT_TEXT, None)])):
                return False
            event.text += CORRUPT_TEXT
            return await self.stall()
        if rule.behaviour in ("stall", "stall_forever"):
            return await self.stall()
        if rule.behaviour == "garbage":
            for payload in GARBAGE_EVENTS:
                if not await self.sse(payload):
                    return False
        elif not self.chunks and not await self.data(self.envelope([self.choice("", self.finish)])):
            return False
        if normal and self.creq.include_usage:
            usage = self.envelope([])
            usage["usage"] = self.usage()
            if not await self.data(usage):
                return False
        # Recorded before [DONE] goes out: a client may hang up the moment it reads it.
        event.completed = normal
        event.close("server")
        return await self.sse(b"data: [DONE]\n\n") and await self.conn.write(b"0\r\n\r\n")


# --------------------------------------------------------------------------- main


async def _exit_on_stdin_eof(stop: asyncio.Event) -> None:
    """End the server when the parent process goes away (its end of our stdin closes)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    with contextlib.suppress(OSError):
        while await reader.read(READ_SIZE):
            pass
    stop.set()


async def serve(args: argparse.Namespace) -> int:
    """Start the server, print the port, run until SIGTERM/SIGINT."""
    prefill = None if args.prefill_tokens_per_s is None else PrefillQueue(args.prefill_tokens_per_s)
    oracle = None
    if args.oracle is not None:
        oracle = Oracle(Path(args.oracle), args.oracle_right, args.default_text)
    fake = FakeServer(args.model, args.api_key, args.default_text, args.flavor, prefill, oracle)
    if args.script:
        raw = json.loads(Path(args.script).read_text())
        fake.script = Script.from_json(raw, args.default_text)
    server = await asyncio.start_server(fake.handle_connection, args.host, args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {args.host}:{port}", flush=True)
    log.info("fake OpenAI server for model %r on %s:%d", args.model, args.host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    watchers: list[asyncio.Task[None]] = []
    if args.exit_on_stdin_eof:
        watchers.append(asyncio.create_task(_exit_on_stdin_eof(stop)))
    await stop.wait()
    log.info("shutting down")
    for task in watchers:
        task.cancel()
    server.close()
    await fake.close_connections()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.wait_closed(), 2.0)
    return 0


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


# --------------------------------------------------------------------------- test helper


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
    ) -> None:
        """Replace the rules (and the default text; None means the launch default), the
        request fields refused with 400, the model served (None: the launch one), whether
        prompts of token ids are refused, and the tokenizer.json /tokenize uses (None: no
        /tokenize)."""
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
