"""The span of one completion request to the backend (server.tracing), timed as its events
come: the wait for the first chunk (the engine's queue and prefill, and the network), then
the stream. Its `traceparent` goes with the request, so an engine that traces (vLLM with
`--otlp-traces-endpoint`) puts its own span under it.

Attributes follow OpenTelemetry's semantic conventions where one exists (HTTP client,
GenAI); nothing from the prompt or the answer goes on it, only counts and names.
"""

from __future__ import annotations

import time
from typing import Any, Final

import httpx

from server import tracing

NAME: Final = "headstart.backend.completion"
FIRST_CHUNK: Final = "headstart.backend.first_chunk"
STREAM: Final = "headstart.backend.stream"


def server_attributes(url: str) -> dict[str, tracing.Value]:
    """`server.address` and `server.port` of the backend's URL (never its user or password)."""
    parts = httpx.URL(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server.address": parts.host, "server.port": port}


class RequestSpan:
    """One POST /completions, from sending it to its stream's end."""

    __slots__ = ("first_ns", "prompt_ids", "span", "start_ns")

    def __init__(self, server: dict[str, tracing.Value], body: dict[str, Any], priority: str):
        self.start_ns = time.time_ns()
        self.first_ns: int | None = None
        self.prompt_ids: int | None = None
        attributes: dict[str, tracing.Value] = {
            **server,
            "http.request.method": "POST",
            "gen_ai.operation.name": "text_completion",
            "gen_ai.request.model": str(body.get("model", "")),
            "gen_ai.request.max_tokens": int(body.get("max_tokens") or 0),
            "gen_ai.request.temperature": float(body.get("temperature") or 0.0),
            "headstart.priority": priority,
            "headstart.prompt.as_token_ids": isinstance(body.get("prompt"), list),
        }
        self.span = tracing.client_span(NAME, attributes, self.start_ns)

    def headers(self) -> dict[str, str]:
        return self.span.headers()

    def first_chunk(self, prompt_token_ids: tuple[int, ...] | None) -> None:
        """The first event came; vLLM sends the prompt's token ids with it."""
        self.first_ns = time.time_ns()
        if prompt_token_ids is not None:
            self.prompt_ids = len(prompt_token_ids)

    def end(
        self,
        end: str,
        chunks: int,
        finish_reason: str | None,
        prompt_tokens: int | None,
        cached_tokens: int | None,
        error: BaseException | None,
    ) -> None:
        """`end` as the request trace says it: done, closed (the server had enough, e.g. a
        stop rule), cancelled (a newer keystroke, the editor) or error."""
        now = time.time_ns()
        span = self.span
        waited = self.first_ns if self.first_ns is not None else now
        received = self.first_ns is not None
        span.child(FIRST_CHUNK, self.start_ns, waited, {"headstart.received": received})
        if self.first_ns is not None:
            span.child(STREAM, self.first_ns, now, {"headstart.stream.chunks": chunks})
        span.set("headstart.stream.end", end)
        span.set("headstart.stream.chunks", chunks)
        if self.first_ns is not None:
            span.set("http.response.status_code", 200)
        tokens = prompt_tokens if prompt_tokens is not None else self.prompt_ids
        if tokens is not None:
            span.set("gen_ai.usage.input_tokens", tokens)
        if cached_tokens is not None:
            span.set("gen_ai.usage.cache_read.input_tokens", cached_tokens)
        if finish_reason is not None:
            span.set("gen_ai.response.finish_reasons", (finish_reason,))
        status = getattr(error, "status", None)
        if isinstance(status, int):
            span.set("http.response.status_code", status)
        if error is not None:
            span.failed(error)
        span.end(now)
