"""Model-written parts of the generated output (opt-in: `headstart aiapi generate --with-model`).

The generators' output is deterministic and complete without a model; a model only adds
prose and examples where it helps (docstrings from the operations' descriptions, a README)
and each such piece is a proposal: it goes in only when the same checks that pass the
deterministic output (ruff format and mypy --strict for Python) pass with it, and a piece
whose check fails is put back to the deterministic text, piece by piece. The report says
how many pieces were kept and why the others fell back.

The model is asked at the refactor priority, the one the editor's refactor actions use,
so vLLM's scheduler never puts this ahead of a keystroke; with a bounded number of
requests in flight and a total time budget. A backend that is down leaves the
deterministic output and one message. Everything from the document goes through the
secrets masking before it is put into a prompt: an OpenAPI document often holds example
credentials.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

from server.backend.client import (
    BackendError,
    CompletionBackend,
    CompletionRequest,
    Priority,
    StreamStats,
    close_uninterrupted,
)
from server.completion.secrets import MASK, mask_secrets
from server.config import BackendSettings

CHATML_STOP: Final = ("<|im_end|>", "<|endoftext|>", "<|im_start|>")
CHATML_STOP_IDS: Final = (151643, 151644, 151645)
"""Qwen2.5's <|endoftext|>, <|im_start|>, <|im_end|>: the chat template refactor actions
use too (server/features/refactor.py)."""
PRIORITY: Final = Priority.REFACTOR
"""The priority of every request: the refactor actions' own, behind keystrokes."""


@dataclass(frozen=True)
class ModelOptions:
    """How the model is asked: the server's own backend settings, and limits of our own."""

    backend: BackendSettings
    api_key: str | None = None
    concurrency: int = 2
    """Requests in flight at once: a refactor-priority queue still takes GPU time."""
    budget_s: float = 180.0
    """All the asking together; what has not come back by then keeps the deterministic text."""
    request_timeout_s: float = 60.0
    max_tokens: int = 320
    readme_max_tokens: int = 900
    check_timeout_s: float = 600.0


@dataclass(frozen=True)
class PieceOutcome:
    """One model-written piece: kept, or replaced by the deterministic text and why."""

    kind: str  # docstring | readme
    name: str  # the method, or the file
    kept: bool
    reason: str = ""


@dataclass
class ModelReport:
    language: str
    pieces: list[PieceOutcome] = field(default_factory=list)
    message: str | None = None
    """Why no piece was asked for at all (the backend is down, say); None when asked."""
    seconds: float = 0.0

    @property
    def kept(self) -> int:
        return sum(1 for piece in self.pieces if piece.kept)

    @property
    def fell_back(self) -> int:
        return sum(1 for piece in self.pieces if not piece.kept)

    def summary(self) -> str:
        if self.message is not None:
            return f"{self.language}: model-written parts: {self.message}"
        lines = [
            f"{self.language}: model-written parts: {self.kept} kept, {self.fell_back} fell "
            f"back to the deterministic output ({self.seconds:.1f} s)"
        ]
        lines += [
            f"  {piece.kind} {piece.name}: {piece.reason}"
            for piece in self.pieces
            if not piece.kept
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class Answer:
    """The model's text for one prompt, or why there is none."""

    text: str | None
    error: str | None = None


Proposal = TypeVar("Proposal")


def read_answers(
    kind: str,
    answers: Mapping[str, Answer],
    read: Callable[[str, str], tuple[Proposal | None, str]],
) -> tuple[dict[str, Proposal], dict[str, PieceOutcome]]:
    """Each answer read alone by `read(name, text)`: the candidates it makes something of,
    and an outcome for each other answer (none came, or why `read` refused it)."""
    candidates: dict[str, Proposal] = {}
    outcomes: dict[str, PieceOutcome] = {}
    for name, answer in answers.items():
        if answer.text is None:
            outcomes[name] = PieceOutcome(kind, name, False, answer.error or "no answer")
            continue
        candidate, why = read(name, answer.text)
        if candidate is None:
            outcomes[name] = PieceOutcome(kind, name, False, why)
        else:
            candidates[name] = candidate
    return candidates, outcomes


def keep_passing(
    kind: str,
    candidates: Mapping[str, Proposal],
    check: Callable[[dict[str, Proposal]], dict[str, str]],
) -> tuple[dict[str, Proposal], dict[str, PieceOutcome]]:
    """The candidates that pass `check` together, and an outcome for each that does not.

    `check` writes the output with the pieces given in place, checks it and answers the
    names it blames with why ({} when it passes). The blamed pieces go back and the rest
    are checked once more; if they still fail, none of them is kept. When some are kept,
    the output is as the last (passing) check wrote it; when none are, the caller puts
    the deterministic output back."""
    kept = dict(candidates)
    outcomes: dict[str, PieceOutcome] = {}
    for _ in range(2):
        if not kept:
            return kept, outcomes
        failed = check(dict(kept))
        if not failed:
            return kept, outcomes
        for name in list(kept):
            if name in failed:
                outcomes[name] = PieceOutcome(kind, name, False, failed[name])
                del kept[name]
    for name in kept:
        outcomes[name] = PieceOutcome(kind, name, False, "the checks still failed")
    return {}, outcomes


def comments_in(
    file: Path,
    answers: Mapping[str, Answer],
    read: Callable[[str, str], tuple[str | None, str]],
    with_comments: Callable[[str, dict[str, str]], str],
    check: Callable[[], str],
) -> list[PieceOutcome]:
    """Put in `file` the comments `read` accepts alone; when `check` (why the file then
    fails its checks, '' when it passes) fails, none of them: a comment is prose, so one
    that breaks the file is not worth blaming piece by piece."""
    original = file.read_text(encoding="utf-8")
    texts, outcomes = read_answers("comment", answers, read)
    if texts:
        file.write_text(with_comments(original, texts), encoding="utf-8")
        why = check()
        if why:
            file.write_text(original, encoding="utf-8")
            outcomes |= {name: PieceOutcome("comment", name, False, why) for name in texts}
            texts = {}
    outcomes |= {name: PieceOutcome("comment", name, True) for name in texts}
    return [outcomes[name] for name in answers]


def operation_words(source: Mapping[str, object]) -> list[str]:
    """The operation's own summary and description for a prompt, a line each, whitespace
    folded and cut at 600 characters."""
    lines = []
    for key in ("summary", "description"):
        text = source.get(key)
        if isinstance(text, str) and text.strip():
            lines.append(f"{key.capitalize()}: {' '.join(text.split())[:600]}")
    return lines


def parameter_words(description: str | None) -> str:
    """A parameter's description as a prompt line's tail (' - ...', at most 300)."""
    return f" - {' '.join(description.split())[:300]}" if description else ""


def model_options(settings_json: str = "{}") -> ModelOptions:
    """The options from the server's own settings (HEADSTART_* variables, then `settings_json`
    as an editor sends them): the same backend the editor's refactor actions ask."""
    from server.config import load_settings

    layer = json.loads(settings_json) if settings_json.strip() else {}
    settings = load_settings(layer)
    timeout_s = settings.refactor.timeout_ms / 1000
    return ModelOptions(settings.backend, settings.api_key(), request_timeout_s=timeout_s)


def chat_prompt(system: str, user: str) -> str:
    """ChatML (Qwen2.5-Coder Instruct and many other instruct models), over /v1/completions."""
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n"
        f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )


def masked(text: str, document_name: str) -> str:
    """Text from the document with credentials masked, as the completion prompts are."""
    return mask_secrets(text, document_name)


def holds_mask(text: str) -> bool:
    """Whether a model's answer repeats a masked value (it must not reach the output)."""
    return MASK in text


def request_for(prompt: str, max_tokens: int) -> CompletionRequest:
    return CompletionRequest(
        prompt=prompt,
        max_tokens=max_tokens,
        stop=CHATML_STOP,
        stop_token_ids=CHATML_STOP_IDS,
        temperature=0.0,
        priority=PRIORITY,
    )


def ask_all(
    requests: Mapping[str, CompletionRequest],
    options: ModelOptions,
    backend_factory: Callable[[], CompletionBackend] | None = None,
) -> tuple[dict[str, Answer], str | None]:
    """Each request's answer (by key), or why there is none; and a message when the backend
    could not be reached at all, in which case nothing was asked."""
    if not requests:
        return {}, None
    return asyncio.run(ask_all_async(requests, options, backend_factory))


async def ask_all_async(
    requests: Mapping[str, CompletionRequest],
    options: ModelOptions,
    backend_factory: Callable[[], CompletionBackend] | None = None,
) -> tuple[dict[str, Answer], str | None]:
    """`ask_all` for a caller already on an event loop (the job service, the editor)."""
    backend = (
        backend_factory()
        if backend_factory is not None
        else CompletionBackend(options.backend, api_key=options.api_key)
    )
    try:
        try:
            async with asyncio.timeout(max(1.0, min(options.request_timeout_s, 30.0))):
                await backend.model()
        except (BackendError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            return {}, (
                f"the model at {options.backend.url} did not answer ({reason}); the output "
                "is the deterministic one"
            )
        gate = asyncio.Semaphore(max(1, options.concurrency))
        answers: dict[str, Answer] = {}
        deadline = time.monotonic() + options.budget_s

        async def one(key: str, request: CompletionRequest) -> None:
            async with gate:
                left = deadline - time.monotonic()
                if left <= 0:
                    answers[key] = Answer(None, "the time budget was spent before it was asked")
                    return
                answers[key] = await _generate(
                    backend, request, min(options.request_timeout_s, left)
                )

        await asyncio.gather(*(one(key, request) for key, request in requests.items()))
        return answers, None
    finally:
        await backend.aclose()


async def _generate(
    backend: CompletionBackend, request: CompletionRequest, timeout_s: float
) -> Answer:
    received: list[str] = []
    stats = StreamStats()
    try:
        async with asyncio.timeout(timeout_s):
            stream = backend.stream(request, stats)
            try:
                async for chunk in stream:
                    received.append(chunk)
            finally:
                await close_uninterrupted(stream.aclose())
    except BackendError as exc:
        return Answer(None, f"the model did not answer: {exc}")
    except TimeoutError:
        return Answer(None, f"the model took longer than {timeout_s:.0f} s")
    if stats.finish_reason == "length":
        return Answer(None, f"the answer was cut off at {request.max_tokens} tokens")
    return Answer("".join(received))
