"""One completion request, from document and cursor to suggestion text.

LSP-free: the handlers in `server.lsp` turn positions into offsets and call `Completer`.
A newer request for the same document supersedes the older one, whose upstream stream is
closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from server.backend import BackendError, CompletionBackend, CompletionRequest, StreamStats
from server.config import CompletionSettings
from server.prompt import qwen_fim_prompt
from server.stops import CursorShape, Mode, analyse_cursor, apply_stops, salvage

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class CursorContext:
    """A document's text and the cursor offset in it (code points)."""

    text: str
    offset: int
    file_path: str
    repo_name: str


@dataclass
class Suggestion:
    text: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None


def plan_request(
    ctx: CursorContext, settings: CompletionSettings
) -> tuple[CompletionRequest, CursorShape]:
    """The request to send for this cursor, and the shape its stop rules need."""
    prefix, suffix = ctx.text[: ctx.offset], ctx.text[ctx.offset :]
    shape = analyse_cursor(prefix, suffix, settings.max_lines)
    prompt = qwen_fim_prompt(
        prefix,
        suffix,
        repo_name=ctx.repo_name,
        file_path=ctx.file_path,
        prefix_chars=settings.prefix_chars,
        suffix_chars=settings.suffix_chars,
    )
    request = CompletionRequest(
        prompt=prompt.text,
        max_tokens=settings.max_tokens
        if shape.mode is Mode.LINE
        else settings.multiline_max_tokens,
        stop=prompt.stop,
        stop_token_ids=prompt.stop_token_ids,
        temperature=settings.temperature,
    )
    return request, shape


class Completer:
    """Builds the prompt, streams from the backend, applies the stop rules."""

    def __init__(self, backend: CompletionBackend) -> None:
        self.backend = backend

    async def complete(self, ctx: CursorContext, settings: CompletionSettings) -> Suggestion:
        started = time.perf_counter()
        request, shape = plan_request(ctx, settings)
        stats = StreamStats()
        prompt_ms = (stats.started - started) * 1000
        text, error = await self._stream_until_stop(request, shape, stats)
        suggestion = Suggestion(text=text, mode=shape.mode, error=error)
        suggestion.timings_ms = {
            "prompt": prompt_ms,
            "first_chunk": (stats.first_chunk or 0.0) * 1000,
            "total": (time.perf_counter() - started) * 1000,
        }
        return suggestion

    async def _stream_until_stop(
        self, request: CompletionRequest, shape: CursorShape, stats: StreamStats
    ) -> tuple[str, str | None]:
        received = ""
        timeout_s = self.backend.settings.total_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):
                stream: AsyncGenerator[str] = self.backend.stream(request, stats)
                try:
                    async for chunk in stream:
                        received += chunk
                        kept, done = apply_stops(received, shape, final=False)
                        if done:
                            return kept, None
                finally:
                    await stream.aclose()
            return apply_stops(received, shape, final=True)[0], None
        except BackendError as exc:
            error = str(exc)
        except TimeoutError:
            error = f"completion took longer than {timeout_s * 1000:.0f} ms"
        kept = salvage(received, shape)
        log.warning("backend: %s (kept %d of %d characters)", error, len(kept), len(received))
        return kept, error


class LatestOnly:
    """Runs at most one job per key: a newer job cancels the older one's work."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[Any]] = {}

    async def run(self, key: str, job: Awaitable[T]) -> T | None:
        """The job's result, or None if a newer job for the same key superseded it."""
        older = self._running.get(key)
        if older is not None and not older.done():
            older.cancel()
        task: asyncio.Task[T] = asyncio.ensure_future(job)
        self._running[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our own caller was cancelled ($/cancelRequest): propagate
            return None
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    async def cancel_all(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
