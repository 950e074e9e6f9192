"""Streaming client for an OpenAI-compatible completions API (vLLM in production).

Timeouts are the ones typing needs (hundreds of milliseconds), not a library's minutes.
Cancelling the caller's task closes the HTTP response at once (or, while the request is
still being sent, as soon as its headers come back), and vLLM aborts the generation and
frees the GPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Coroutine, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import httpx
import orjson
import xxhash

from server import tracing
from server.backend.engines import engine_of, takes_vllm_fields
from server.backend.request_span import RequestSpan, server_attributes
from server.backend.trace import RequestTrace
from server.config import BackendSettings

log = logging.getLogger(__name__)


JSON = {"Content-Type": "application/json"}


def json_body(body: dict[str, Any]) -> bytes:
    """`body` as UTF-8 JSON, a lone surrogate (half of an emoji, which an editor may hold in
    a document) sent as U+FFFD: httpx's encoder fails the whole request on one.

    orjson first: a keystroke's body of 4k token ids takes it 0.04 ms at p50 and 0.06 at
    p99, against json's 0.33 and 4.6 (benchmarks/latency/json_encode_bench.py). It refuses a
    lone surrogate, which json then encodes and the replacement below repairs."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        pass
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


class BackendError(Exception):
    """The backend could not give a (complete) answer; the message says why, for the log."""


class BackendUnreachable(BackendError):
    pass


class BackendTimeout(BackendError):
    pass


class BackendProtocolError(BackendError):
    """The backend answered something that is not an OpenAI-compatible stream."""


class BackendRefused(BackendError):
    """The backend answered an HTTP error status; 4xx ones will not change on a retry."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.status >= 500 or self.status == 429


class Priority(IntEnum):
    """What a request is for, as vLLM's priority scheduler reads it (lower goes first):
    the keystroke a user waits for outranks a refactoring the user asked for, which
    outranks speculative work no one waits for yet (a prefetch)."""

    KEYSTROKE = 0
    REFACTOR = 1
    PREFETCH = 2


@dataclass(frozen=True)
class CompletionRequest:
    prompt: str
    max_tokens: int
    stop: Sequence[str] = ()
    stop_token_ids: Sequence[int] = ()
    temperature: float = 0.0
    prompt_ids: Sequence[int] | None = None
    """Token ids sent instead of `prompt`, which holds the same text (sent instead where
    the backend refuses ids); a resumed stream's continuation is exact with them."""
    priority: Priority = Priority.KEYSTROKE
    document: str = ""
    """The document it is for (`workspace/path`), whose hash routes it to a replica."""
    answer_prefix: str = ""
    """Characters the answer must start with (token healing: the prompt's last token was
    backed off), sent to vLLM and SGLang as a regex the answer must match."""


REGEX_SYNTAX = frozenset("\\^$.|?*+()[]{}")
"""Characters a regex reads as syntax; escaped with a backslash, each is literal in every
engine's dialect (xgrammar's JavaScript-like one, llguidance's Rust one, Python's)."""


def starting_with(text: str) -> str:
    """A regex matched by any answer that starts with `text`: the constraint of a healed
    prompt. `[\\s\\S]` is any character in each of those dialects."""
    literal = "".join("\\" + c if c in REGEX_SYNTAX else c for c in text)
    return literal + r"[\s\S]*"


def healing_grammar(text: str, end_token_ids: Sequence[int]) -> str:
    """A Lark grammar (llguidance's dialect: vLLM's guidance backend, and its default
    "auto", which falls back to guidance for it) for answers that start with `text` and
    may end with one of the template's end tokens, named by id (`<[151643]>`).

    A regex cannot name a special token, so under `starting_with` the grammar masks the
    token a fill-in-the-middle answer ends with: for an instruct model that is
    `<|endoftext|>`, not the tokenizer's EOS (`<|im_end|>`), which is all the regex lets
    through. Unable to stop, the model wrote on past the line's end (a comment, more
    code): 186 of the 214 repository-level tasks healing lost against the plain prompt
    (docs/results/prompt_layout.txt)."""
    ends = " | ".join(f"<[{token_id}]>" for token_id in end_token_ids)
    return f"start: {json.dumps(text, ensure_ascii=False)} /(.|\\n)*/ ({ends})?"


@dataclass(frozen=True)
class Chunk:
    """One streamed event: its text and, from vLLM, the token ids behind it."""

    text: str
    token_ids: tuple[int, ...] | None = None
    prompt_token_ids: tuple[int, ...] | None = None
    """The whole prompt as token ids (vLLM sends them with the first chunk only)."""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    """From the usage event after the last choice (`stream_options.include_usage`)."""
    cached_tokens: int | None = None
    """Of those, the ones the engine's prefix cache held, where it says (vLLM with
    `--enable-prompt-tokens-details`, SGLang with `--enable-cache-report`)."""


@dataclass
class StreamStats:
    """Timings of one stream, in seconds from the request being sent."""

    started: float = field(default_factory=time.perf_counter)
    first_chunk: float | None = None
    chunks: int = 0
    finish_reason: str | None = None
    resumes: int = 0
    """Times the stream broke and was resumed (server.backend.resume)."""
    line_chunks: int | None = None
    """Chunks received when a one-line suggestion was complete while its stream went on
    for the block (`completion.continueInBackground`): where the server would have closed
    it without that (the request trace's `lineChunks`)."""
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    """The engine's counts of the prompt's tokens and of those its prefix cache held, where
    it sends a usage event (asked for while tracing, `Chunk`)."""
    stop_rules_s: float = 0.0
    """Time the stop rules took over the stream's chunks, measured while tracing."""


@dataclass(frozen=True)
class ModelInfo:
    id: str
    owned_by: str
    max_model_len: int | None
    root: str | None = None
    """Where vLLM loaded the model from (a local folder, or a hub name): the tokenizer's home."""


def request_body(
    request: CompletionRequest,
    model: ModelInfo,
    *,
    token_ids: bool = True,
    priority: bool = True,
    grammar: bool = True,
) -> dict[str, Any]:
    """The JSON body that streams `request` from `model`'s server: vLLM's own fields only
    where its engine takes them, the prompt as token ids where `token_ids`, `priority`
    where `priority`, and a healed answer's start constrained by `healing_grammar` where
    `grammar` (else by `starting_with`'s regex). Public so that the bench's floor sends
    the very bodies the server sends (`server.bench.floor`)."""
    ids = request.prompt_ids if token_ids else None
    prompt: str | list[int] = request.prompt if ids is None else list(ids)
    body: dict[str, Any] = {
        "model": model.id,
        "prompt": prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stop": list(request.stop),
        "stream": True,
    }
    if not takes_vllm_fields(model.owned_by):
        return body
    body["return_token_ids"] = True
    if request.stop_token_ids:
        body["stop_token_ids"] = list(request.stop_token_ids)
    if priority:
        body["priority"] = int(request.priority)
    if request.answer_prefix:
        pattern = starting_with(request.answer_prefix)
        if engine_of(model.owned_by) == "sglang":
            body["regex"] = pattern
        elif request.stop_token_ids and grammar:
            rule = healing_grammar(request.answer_prefix, request.stop_token_ids)
            body["structured_outputs"] = {"grammar": rule}
        else:
            body["structured_outputs"] = {"regex": pattern}
    return body


class CompletionBackend:
    """One shared HTTP connection pool to the backend, and the model it serves."""

    def __init__(
        self,
        settings: BackendSettings,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        trace: RequestTrace | None = None,
    ) -> None:
        """`transport` replaces httpx's own connection layer (tests use it to misbehave);
        `trace` records every request sent."""
        self.settings = settings
        self.trace = trace
        if api_key and not key_may_travel(settings.url):
            log.warning(
                "not sending the API key to %s: keys go only over https or to this machine",
                settings.url,
            )
            api_key = None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=settings.url,
            headers=headers,
            timeout=httpx.Timeout(
                connect=settings.connect_timeout_ms / 1000,
                read=max(settings.first_chunk_timeout_ms, settings.chunk_gap_ms) / 1000,
                write=settings.connect_timeout_ms / 1000,
                pool=settings.connect_timeout_ms / 1000,
            ),
            limits=httpx.Limits(
                max_connections=32,
                max_keepalive_connections=8,
                keepalive_expiry=KEEPALIVE_EXPIRY_S,
            ),
            trust_env=False,
            transport=transport,
        )
        self._server = server_attributes(settings.url)
        """Where requests go, as a span says it (server.backend.request_span)."""
        self._model: ModelInfo | None = None
        self._refused_models: set[str] = set()
        """Models the backend answered 404 for (said once each in the log)."""
        self.sends_token_ids = True
        """Whether prompts may go as token ids; off for good once the backend refuses them
        and takes the same prompt as text."""
        self.sends_priority = settings.send_priority
        """Whether requests carry their `priority`; off for good once the backend refuses
        the field (a vLLM started without `--scheduling-policy priority` may)."""
        self.sends_healing_grammar = True
        """Whether healed answers are constrained by `healing_grammar` (False once the
        backend refused it: then by `starting_with`'s regex)."""
        self._orphans: set[asyncio.Future[httpx.Response]] = set()
        """Sends whose caller was cancelled (their responses are closed when they come)."""

    async def aclose(self) -> None:
        for orphan in self._orphans:
            orphan.cancel()  # the pool is closed next, so a leaked slot no longer matters
        await asyncio.gather(*self._orphans, return_exceptions=True)
        await self._client.aclose()

    def open_connections(self) -> int:
        """Connections to the backend held open (in use or idle), where httpx says so."""
        pool = getattr(getattr(self._client, "_transport", None), "_pool", None)
        return len(getattr(pool, "connections", ()))

    async def model(self) -> ModelInfo:
        """The model to ask: the configured one, else the first the server lists."""
        if self._model is None:
            models = await self.list_models()
            wanted = self.settings.model
            if wanted is None:
                if not models:
                    raise BackendProtocolError("the backend serves no models (/v1/models)")
                self._model = models[0]
            else:
                match = [m for m in models if m.id == wanted]
                self._model = match[0] if match else ModelInfo(wanted, "unknown", None)
        return self._model

    async def list_models(self) -> list[ModelInfo]:
        body = await self._get_json("/models")
        try:
            return [
                ModelInfo(
                    str(m["id"]),
                    str(m.get("owned_by", "")),
                    m.get("max_model_len"),
                    str(m["root"]) if isinstance(m.get("root"), str) else None,
                )
                for m in body["data"]
            ]
        except (KeyError, TypeError) as exc:
            raise BackendProtocolError(f"unexpected /v1/models body: {exc!r}") from None

    async def tokenize(self, text: str) -> list[int] | None:
        """The ids the backend's own tokenizer makes of `text` (with its special tokens, as
        for a text prompt), from vLLM's `/tokenize` beside `/v1`; None when the backend has
        no such route or answers it with something else."""
        model = await self.model()
        url = self.settings.url.rstrip("/").removesuffix("/v1") + "/tokenize"
        body = {"model": model.id, "prompt": text, "add_special_tokens": True}
        response = await self._send("POST", url, json=body)
        if response.status_code != 200:
            return None
        try:
            tokens = response.json()["tokens"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(tokens, list) or not all(type(t) is int for t in tokens):
            return None
        return tokens

    async def stream(
        self, request: CompletionRequest, stats: StreamStats | None = None
    ) -> AsyncGenerator[str]:
        """Yield text chunks as the backend produces them (see `stream_chunks`)."""
        async with contextlib.aclosing(self.stream_chunks(request, stats)) as chunks:
            async for chunk in chunks:
                if chunk.text:
                    yield chunk.text

    async def stream_chunks(
        self, request: CompletionRequest, stats: StreamStats | None = None
    ) -> AsyncGenerator[Chunk]:
        """Yield chunks as the backend produces them, with token ids where it sends them.

        Raises BackendError subclasses on network errors, timeouts, bad status codes and
        malformed events. Cancelling the consumer closes the connection.
        """
        stats = stats or StreamStats()
        model = await self.model()
        headers = self._affinity(request.document)
        ids_refused: BackendRefused | None = None
        while True:
            body = self._body(request, model, as_text=ids_refused is not None)
            events = self._events(body, headers, stats, request.priority)
            try:
                async with contextlib.aclosing(events) as chunks:
                    async for chunk in chunks:
                        if ids_refused is not None and self.sends_token_ids:
                            self.sends_token_ids = False
                            log.warning(
                                "the backend refuses prompts as token ids (%s) and takes the "
                                "same prompt as text; sending text prompts from now on",
                                ids_refused,
                            )
                        yield chunk
                return
            except BackendRefused as exc:
                if _refuses_grammar(exc, body):
                    # vLLM started with `--structured-outputs-config '{"backend":"xgrammar"}'`:
                    # its EBNF cannot name special tokens. The regex still heals the prompt;
                    # answers may then run past the line's end (see healing_grammar)
                    self.sends_healing_grammar = False
                    log.warning(
                        "the backend refuses token healing's grammar (%s); constraining "
                        "healed answers with a regex from now on. Start vLLM with "
                        '--structured-outputs-config \'{"backend": "guidance"}\' (or '
                        '"auto") so healed answers can end',
                        exc,
                    )
                    continue
                if (
                    exc.status == 400
                    and isinstance(body["prompt"], list)
                    and not ids_refused
                    and not ("priority" in body and _refuses_priority(exc))
                ):
                    ids_refused = exc  # the same request as text; if that works, ids are off
                    continue
                if exc.status == 404 and self.settings.model is None:
                    # a shared backend restarted with another model: this request was made
                    # for the old one (its template, its token ids), the next asks anew
                    self._model = None
                    log.log(
                        logging.DEBUG if model.id in self._refused_models else logging.WARNING,
                        "the backend no longer serves %s (%s); the next request asks it "
                        "which model it serves",
                        model.id,
                        exc,
                    )
                    self._refused_models.add(model.id)
                    raise
                if "priority" not in body or not _refuses_priority(exc):
                    raise
                # this request again, and every later one, without the field
                self.sends_priority = False
                log.warning(
                    "the backend refuses request priorities (%s); sending requests without "
                    "them. Start vLLM with --scheduling-policy priority so keystrokes go "
                    "before speculative work",
                    exc,
                )

    def _body(
        self, request: CompletionRequest, model: ModelInfo, as_text: bool = False
    ) -> dict[str, Any]:
        body = request_body(
            request,
            model,
            token_ids=not as_text and self.sends_token_ids,
            priority=self.sends_priority,
            grammar=self.sends_healing_grammar,
        )
        if takes_vllm_fields(model.owned_by) and tracing.enabled():
            body["stream_options"] = {"include_usage": True}  # the prompt's cached tokens
        return body

    async def _events(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        stats: StreamStats,
        priority: Priority = Priority.KEYSTROKE,
    ) -> AsyncGenerator[Chunk]:
        """`_post`, and the request traced when it ends (`log.requestTrace`), and its span
        (server.tracing) with its `traceparent` on the request."""
        sent, started = time.time(), time.perf_counter()
        span = RequestSpan(self._server, body, priority.name.lower()) if tracing.enabled() else None
        if span is not None:
            headers = headers | span.headers()
        first_ms: float | None = None
        chunks = 0
        end = "error"
        failure: BaseException | None = None
        try:
            async with contextlib.aclosing(self._post(body, headers, stats)) as events:
                async for chunk in events:
                    if first_ms is None:
                        first_ms = (time.perf_counter() - started) * 1000
                        if span is not None:
                            span.first_chunk(chunk.prompt_token_ids)
                    chunks += 1
                    yield chunk
            end = "done"
        except asyncio.CancelledError:
            end = "cancelled"
            raise
        except GeneratorExit:
            end = "closed"
            raise
        except Exception as exc:
            failure = exc
            raise
        finally:
            if self.trace is not None:
                end_ms = (time.perf_counter() - started) * 1000
                line_chunks = stats.line_chunks if stats.resumes == 0 else None
                self.trace.record(body, sent, first_ms, end_ms, chunks, end, line_chunks)
            if span is not None:
                span.end(
                    end,
                    chunks,
                    stats.finish_reason,
                    stats.prompt_tokens,
                    stats.cached_tokens,
                    failure,
                )

    async def _post(
        self, body: dict[str, Any], headers: dict[str, str], stats: StreamStats
    ) -> AsyncGenerator[Chunk]:
        """POST /completions and its SSE events as chunks, with the first-chunk and
        chunk-gap deadlines of typing; httpx's errors as BackendErrors."""
        deadline = self.settings.first_chunk_timeout_ms / 1000
        try:
            request = self._client.build_request(
                "POST", "/completions", content=json_body(body), headers=headers | JSON
            )
            async with self._open(request, stream=True) as response:
                if response.status_code != 200:
                    detail = (await response.aread())[:300].decode("utf-8", "replace")
                    raise BackendRefused(
                        f"backend answered HTTP {response.status_code}: {detail}",
                        response.status_code,
                    )
                lines = _sse_lines(response)
                while True:
                    try:
                        async with asyncio.timeout(deadline):
                            line = await anext(lines)
                    except StopAsyncIteration:
                        raise BackendProtocolError("stream ended without [DONE]") from None
                    except TimeoutError:
                        what = "first chunk" if stats.first_chunk is None else "next chunk"
                        raise BackendTimeout(f"no {what} within {deadline * 1000:.0f} ms") from None
                    if not line.strip() or line.startswith(":"):
                        continue
                    if not line.startswith("data:"):
                        raise BackendProtocolError(f"not an SSE data line: {line[:80]!r}")
                    data = line[5:].strip()
                    if data == "[DONE]":
                        await _read_to_end(lines)
                        return
                    chunk = _parse_chunk(data)
                    if stats.first_chunk is None:
                        stats.first_chunk = time.perf_counter() - stats.started
                        deadline = self.settings.chunk_gap_ms / 1000
                    stats.chunks += 1
                    stats.finish_reason = chunk.finish_reason or stats.finish_reason
                    if chunk.text or chunk.token_ids or chunk.prompt_token_ids:
                        yield chunk
                    elif chunk.prompt_tokens is not None:  # the usage event
                        stats.prompt_tokens = chunk.prompt_tokens
                        stats.cached_tokens = chunk.cached_tokens
        except httpx.TimeoutException as exc:
            raise BackendTimeout(f"{type(exc).__name__} talking to {self.settings.url}") from None
        except httpx.ConnectError as exc:
            raise BackendUnreachable(f"cannot reach {self.settings.url}: {exc}") from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            # Connected, then the connection broke (a reset mid-stream): not "unreachable".
            raise BackendUnreachable(f"stream broken: {str(exc) or type(exc).__name__}") from None
        except httpx.HTTPError as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}") from None

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One plain request (`url` relative to the backend's or absolute), httpx's errors
        as BackendErrors; a span of its own and its `traceparent` while tracing."""
        request = self._client.build_request(method, url, **kwargs)
        attributes = {**self._server, "http.request.method": method, "url.path": request.url.path}
        with tracing.client_span("headstart.backend.http", attributes) as span:
            request.headers.update(span.headers())
            try:
                async with self._open(request) as response:
                    span.set("http.response.status_code", response.status_code)
                    return response
            except httpx.TimeoutException:
                raise BackendTimeout(f"{self._client.base_url.join(url)} timed out") from None
            except httpx.HTTPError as exc:
                raise BackendUnreachable(f"cannot reach {self.settings.url}: {exc}") from None

    def _affinity(self, document: str) -> dict[str, str]:
        """The header a router's consistent hashing keeps one document's (or workspace's)
        requests together by: a hash, so that no file name leaves in it."""
        affinity = self.settings.affinity
        if affinity == "off" or not document:
            return {}
        key = document if affinity == "document" else document.split("/", 1)[0]
        return {"X-Session-ID": xxhash.xxh64_hexdigest(key.encode())}

    @contextlib.asynccontextmanager
    async def _open(
        self, request: httpx.Request, *, stream: bool = False
    ) -> AsyncGenerator[httpx.Response]:
        """`request` sent, up to its response's headers (`stream`) or its whole body, where
        a cancellation cannot interrupt it; the response closed on leaving.

        httpcore 1.0.9 leaks a pool slot and its socket when a request is cancelled after
        the pool gave it a new connection and before it was sent on it (encode/httpcore#1093):
        the connection stays NEW for good, and once `max_connections` of them pile up every
        request times out waiting for the pool. Typing cancels requests all the time, so
        the send runs in a task of its own; a cancelled caller returns at once and the
        response is closed as soon as it arrives."""
        sending = asyncio.ensure_future(self._client.send(request, stream=stream))
        try:
            response = await asyncio.shield(sending)
        except asyncio.CancelledError:
            self._orphans.add(sending)
            sending.add_done_callback(self._close_orphan)
            raise
        try:
            yield response
        finally:
            await close_uninterrupted(response.aclose())

    def _close_orphan(self, sending: asyncio.Future[httpx.Response]) -> None:
        self._orphans.discard(sending)
        if sending.cancelled() or sending.exception() is not None:
            return  # the error is nobody's to report: its caller has gone
        close_in_background(sending.result().aclose())

    async def _get_json(self, path: str) -> Any:
        response = await self._send("GET", path)
        if response.status_code != 200:
            raise BackendError(f"{path} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise BackendProtocolError(f"{path} did not answer JSON") from None


KEEPALIVE_EXPIRY_S = 4.0
"""How long an idle connection is kept for the next request: under uvicorn's (vLLM's)
5 s, so that the server does not close one just as a request is sent on it."""

END_OF_BODY_WAIT_S = 0.2
"""How long to read past `[DONE]` for the body's end, so that the connection goes back to
the pool; a backend that sends more than that is cut off."""

MAX_EVENT_BYTES = 1 << 20
"""The longest SSE line read: a completion event is a few hundred bytes, so a longer one
is a backend gone wrong, and reading it to its end could take all the memory there is."""


async def _sse_lines(response: httpx.Response) -> AsyncGenerator[str]:
    """The body's lines (as httpx's `aiter_lines`, undecodable bytes replaced), each at
    most MAX_EVENT_BYTES long."""
    pending = b""
    async for piece in response.aiter_bytes():
        pending += piece
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
        if len(pending) > MAX_EVENT_BYTES:
            raise BackendProtocolError(
                f"an event longer than {MAX_EVENT_BYTES >> 20} MB: not a completion stream"
            )
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


_CLOSING: set[asyncio.Future[None]] = set()
"""Closes in flight (a task only the event loop references may be collected midway)."""


def close_in_background(close: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
    """Run `close` (a stream's or a response's `aclose()`) in a task of its own, held
    until it ends."""
    closing = asyncio.ensure_future(close)
    _CLOSING.add(closing)
    closing.add_done_callback(_CLOSING.discard)
    return closing


async def close_uninterrupted(close: Coroutine[Any, Any, None]) -> None:
    """Await `close` in a task of its own, which a cancellation of the caller does not
    reach: the caller stops at once and the close runs to its end. A cancelled completion
    is cancelled again while it closes its stream (until it ends, `LatestOnly`); a close
    cut short leaves the HTTP response open, so the connection stays busy for good and the
    backend generates to the end for nobody."""
    await asyncio.shield(close_in_background(close))


async def _read_to_end(lines: AsyncGenerator[str]) -> None:
    """Read what follows `[DONE]` (the end of the chunked body): a response read to its end
    leaves its connection to the next request, where closing it a few bytes short closes
    the connection, and the next request pays a new TCP (and TLS) handshake."""
    with contextlib.suppress(TimeoutError, BackendError, httpx.HTTPError):
        async with asyncio.timeout(END_OF_BODY_WAIT_S):
            async for _ in lines:
                pass


def key_may_travel(url: str) -> bool:
    """An API key is sent only over TLS, or over loopback where nothing can overhear it."""
    parts = httpx.URL(url)
    return (
        parts.scheme == "https"
        or parts.host in ("localhost", "::1")
        or (parts.host.startswith("127."))
    )


def _refuses_grammar(refused: BackendRefused, body: dict[str, Any]) -> bool:
    """A 4xx to a request that carried token healing's grammar and names a grammar."""
    sent = body.get("structured_outputs") or {}
    return 400 <= refused.status < 500 and "grammar" in sent and "grammar" in str(refused).lower()


def _refuses_priority(refused: BackendRefused) -> bool:
    """A 4xx that names the priority field: an older vLLM without priority scheduling
    ("Priority scheduling is not enabled"), or a server that refuses unknown fields."""
    return 400 <= refused.status < 500 and "priority" in str(refused).lower()


def _parse_chunk(data: str) -> Chunk:
    try:
        event = json.loads(data)
        if not event.get("choices") and "usage" in event:
            return _usage(event["usage"])  # the usage event after the last choice
        choice = event["choices"][0]
        text = choice.get("text") or ""
        if not isinstance(text, str):
            raise TypeError("text is not a string")
        return Chunk(
            text,
            _token_ids(choice.get("token_ids")),
            _token_ids(choice.get("prompt_token_ids")),
            choice.get("finish_reason"),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BackendProtocolError(f"malformed stream event {data[:80]!r}: {exc}") from None


def _usage(usage: object) -> Chunk:
    """The usage event's prompt tokens and, where the engine says, how many were cached; an
    event that does not say is an empty chunk."""
    if not isinstance(usage, dict) or type(usage.get("prompt_tokens")) is not int:
        return Chunk("")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Chunk(
        "",
        prompt_tokens=usage["prompt_tokens"],
        cached_tokens=cached if type(cached) is int else None,
    )


def _token_ids(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(type(t) is int for t in value):
        raise TypeError("token ids are not a list of integers")
    return tuple(value)
