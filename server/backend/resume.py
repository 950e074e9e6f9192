"""Checksum-based resume of a broken completion stream (docs/architecture.md).

A stream breaks: the connection drops, the backend goes silent for longer than
`chunkGapMs`, it restarts (errors for a while), or a replica sends corrupt text. The
stream is then continued by a new request whose prompt is the original prompt's token ids
plus the tokens generated so far minus a small overlap, so the continuation is exactly
what the unbroken stream would have produced (vLLM takes token-id prompts; its prefix
cache makes the repeated prompt nearly free). The regenerated overlap must reproduce the
xxh3 checksum of the text decoded before the break; then the two streams are spliced.

Tiers:
- network errors, 5xx/429 and silence: up to `maxRetries` resumes, with exponential
  backoff and jitter;
- corrupt text (U+FFFD, control characters): rolled back to a chunk boundary at least
  `minValidTokens` tokens before it, then resumed;
- checksum mismatch (another model or replica answered): the unverified tail is dropped
  and the new stream's text from the last verified offset is taken.

The consumer sees snapshots of the decoded text. A snapshot after a mismatch may differ
from the one before in its unverified tail: the completer shows nothing before the stream
is done, so nothing the user has seen changes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace

import xxhash

from server.backend.client import (
    BackendError,
    BackendRefused,
    Chunk,
    CompletionBackend,
    CompletionRequest,
    StreamStats,
)

log = logging.getLogger(__name__)

Decode = Callable[[Sequence[int]], str | None]
"""The model's tokenizer, ids to text: confirms that a chunk boundary is also a text
boundary (vLLM holds text back that may start a stop string)."""


@dataclass(frozen=True)
class ResumePolicy:
    max_retries: int = 3
    backoff_ms: float = 50.0
    overlap_tokens: int = 4
    min_valid_tokens: int = 3


class CorruptOutput(BackendError):
    """The stream sent text no code contains (a broken replica or a cut UTF-8 sequence)."""


def checksum(text: str) -> int:
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


def first_corrupt(text: str) -> int | None:
    """The offset of the first character no code contains (a replacement character, or
    NUL), if any."""
    found = [i for i in (text.find("\ufffd"), text.find("\x00")) if i >= 0]
    return min(found) if found else None


@dataclass
class ResumeState:
    """What a stream has produced, chunk by chunk, to resume it from."""

    request: CompletionRequest
    prompt_ids: tuple[int, ...] | None = None
    chunks: list[Chunk] = field(default_factory=list)
    text: str = ""
    checksum: int = field(default_factory=lambda: checksum(""))
    last_chunk_at: float = field(default_factory=time.perf_counter)

    def add(self, chunk: Chunk) -> None:
        if chunk.prompt_token_ids is not None and self.prompt_ids is None:
            self.prompt_ids = chunk.prompt_token_ids
        self.chunks.append(chunk)
        self.text += chunk.text
        self.checksum = checksum(self.text)
        self.last_chunk_at = time.perf_counter()

    def tokens_in(self, chunks: Sequence[Chunk]) -> int:
        return sum(len(c.token_ids) if c.token_ids is not None else 1 for c in chunks)

    def cut_point(self, policy: ResumePolicy, decode: Decode | None) -> int:
        """How many chunks to keep: all but at least `overlap_tokens` tokens, and before
        any corrupt text by at least `min_valid_tokens`; never inside a character."""
        keep = len(self.chunks)
        corrupt = first_corrupt(self.text)
        if corrupt is not None:
            seen = 0
            for index, chunk in enumerate(self.chunks):
                if seen + len(chunk.text) > corrupt:
                    keep = index
                    break
                seen += len(chunk.text)
            keep = self._back_by(keep, policy.min_valid_tokens, end=keep)
        keep = self._back_by(keep, policy.overlap_tokens)
        while keep > 0 and first_corrupt(self.kept_text(keep, decode)[-1:]) is not None:
            keep -= 1  # the kept tokens end inside a multi-byte character
        return keep

    def _back_by(self, keep: int, tokens: int, end: int | None = None) -> int:
        """Move `keep` back until the chunks from it to `end` hold `tokens` tokens."""
        while keep > 0 and self.tokens_in(self.chunks[keep:end]) < tokens:
            keep -= 1
        return keep

    def kept_text(self, keep: int, decode: Decode | None) -> str:
        """The text of the first `keep` chunks' tokens. vLLM's text can lag its token ids
        (it holds back text that may start a stop string, and the first tokens' text), so
        with the model's tokenizer the ids are decoded; without it, the chunks' text is
        taken as theirs."""
        kept = self.chunks[:keep]
        ids = self._ids(kept)
        if decode is not None and ids is not None:
            text = decode(ids)
            if text is not None:
                return text
        return "".join(c.text for c in kept)

    def _ids(self, chunks: Sequence[Chunk]) -> list[int] | None:
        if any(c.token_ids is None for c in chunks):
            return None
        return [t for c in chunks for t in c.token_ids or ()]

    def resume_request(self, keep: int, decode: Decode | None) -> CompletionRequest | None:
        """The request that continues after the first `keep` chunks: token ids where the
        backend sent them, else the text; None when the token budget is spent."""
        kept = self.chunks[:keep]
        left = self.request.max_tokens - self.tokens_in(kept)
        if left <= 0:
            return None
        ids = self._ids(kept)
        kept_text = self.kept_text(keep, decode)
        prompt = self.request.prompt + kept_text
        forced = self.request.answer_prefix  # what of it is still to come (token healing)
        forced = forced[len(kept_text) :] if forced.startswith(kept_text) else ""
        if self.prompt_ids is not None and ids is not None:
            ids_prompt = (*self.prompt_ids, *ids)
            return replace(
                self.request,
                prompt=prompt,
                prompt_ids=ids_prompt,
                max_tokens=left,
                answer_prefix=forced,
            )
        return replace(self.request, prompt=prompt, max_tokens=left, answer_prefix=forced)

    def truncate(self, keep: int, decode: Decode | None) -> None:
        self.text = self.kept_text(keep, decode)
        self.chunks = self.chunks[:keep]


async def resumable_stream(
    backend: CompletionBackend,
    request: CompletionRequest,
    policy: ResumePolicy,
    stats: StreamStats | None = None,
    decode: Decode | None = None,
) -> AsyncGenerator[str]:
    """Yield the decoded text so far after every chunk, resuming the stream when it
    breaks. Raises the last BackendError when the retries are spent or the error is one a
    retry cannot mend."""
    stats = stats or StreamStats()
    state = ResumeState(request)
    current: CompletionRequest | None = request
    verify: tuple[int, int] | None = None  # (length, checksum) the new stream must match
    failures = 0
    while current is not None:
        try:
            async with aclosing(backend.stream_chunks(current, stats)) as chunks:
                async for chunk in chunks:
                    state.add(chunk)
                    if first_corrupt(chunk.text) is not None:
                        raise CorruptOutput(f"corrupt text in the stream: {chunk.text[:20]!r}")
                    if verify is not None:
                        if len(state.text) < verify[0]:
                            continue
                        _check_splice(state, verify)
                        verify = None
                    yield state.text
            if verify is not None:  # the new stream ended inside the overlap
                _check_splice(state, verify)
                yield state.text
            return
        except BackendError as exc:
            if isinstance(exc, BackendRefused) and not exc.retryable:
                raise
            failures += 1
            if failures > policy.max_retries:
                raise
            corrupt = first_corrupt(state.text)
            if verify is None:
                good = state.text if corrupt is None else state.text[:corrupt]
                verify = (len(good), checksum(good))
            keep = state.cut_point(policy, decode)
            current = state.resume_request(keep, decode)
            log.info(
                "stream broken (%s); resuming after %d of %d characters (try %d of %d)",
                exc,
                len(state.kept_text(keep, decode)),
                len(state.text),
                failures,
                policy.max_retries,
            )
            if current is None and corrupt is None:
                return  # every token had come: only the end of the stream was lost
            state.truncate(keep, decode)
            stats.resumes += 1
            if len(state.text) >= verify[0]:
                verify = None
            if current is None:
                yield state.text
                return
            await asyncio.sleep(_backoff_s(policy, failures))


def _check_splice(state: ResumeState, verify: tuple[int, int]) -> None:
    length, expected = verify
    if checksum(state.text[:length]) != expected:
        log.warning(
            "checksum mismatch after a resume (another model or replica answered): "
            "the unverified tail is dropped and the new stream taken from there"
        )


def _backoff_s(policy: ResumePolicy, attempt: int) -> float:
    """Exponential backoff with full jitter in its upper half."""
    base: float = policy.backoff_ms / 1000 * 2 ** (attempt - 1)
    return base * (0.5 + random.random() / 2)
