"""One completion request, from document and cursor to suggestion text.

LSP-free: the handlers in `server.lsp` turn positions into offsets and call `Completer`.
A newer request for the same document supersedes the older one, whose upstream stream is
closed, unless it joins it (`LatestOnly.join`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from tree_sitter import Tree

from server import tracing
from server.backend.client import (
    BackendError,
    CompletionBackend,
    CompletionRequest,
    ModelInfo,
    Priority,
    StreamStats,
    close_in_background,
    close_uninterrupted,
)
from server.backend.engines import engine_of, takes_vllm_fields
from server.backend.resume import Decode, ResumePolicy, resumable_stream
from server.completion.context import Budget, Context, ContextBuilder
from server.completion.contracts import contract_snippet, with_contract
from server.completion.prompt import (
    PromptLayout,
    PromptTemplate,
    choose_template,
    split_at_line_start,
)
from server.completion.prompt_tokens import PromptEncoder
from server.completion.secrets import mask_document, mask_snippet
from server.completion.stops import (
    CursorShape,
    Mode,
    analyse_cursor,
    apply_stops,
    indent_width,
    line_end,
    salvage,
)
from server.completion.syntax_check import keep_parsing
from server.completion.token_count import TokenCounter, load_token_counter
from server.completion.tokenizer_check import backend_agrees
from server.config import BackendSettings, CompletionSettings

log = logging.getLogger(__name__)
T = TypeVar("T")

MODEL_SPAN: Final = "headstart.model_info"
CONTEXT_SPAN: Final = "headstart.context.build"
PROMPT_SPAN: Final = "headstart.prompt.render"
QUEUE_SPAN: Final = "headstart.queue.wait"
FILTERS_SPAN: Final = "headstart.filters"
"""The request path's stages as spans (server.tracing; docs/tracing.md)."""

NO_PROJECT = ContextBuilder(None)
"""The builder for files outside any indexed root (or before indexing ends): the current
file alone."""


@dataclass(frozen=True)
class CursorContext:
    """A document's text and the cursor offset in it (code points), and where it lives."""

    text: str
    offset: int
    file_path: str
    """Relative to its workspace root, as prompts and the project index name it."""
    repo_name: str
    language: str | None = None
    builder: ContextBuilder = NO_PROJECT
    tree: Tree | None = None
    """The whole document's tree of `text`, where the server holds one for it."""


JOIN_WAIT_S: Final = 0.5
"""How long a keystroke waits for the running request it joined (`LatestOnly.join`) before
it sends its own (which cancels that one): a stalled backend must not hold every later
keystroke."""


def types_on(earlier: CursorContext, later: CursorContext) -> bool:
    """Whether `later` is `earlier` with characters typed at its cursor and nothing else
    changed: a suggestion made at `earlier` may still answer it (`SuggestionCache`)."""
    start, end = earlier.offset, later.offset
    return (
        end > start
        and len(later.text) - end == len(earlier.text) - start
        and later.text[end:] == earlier.text[start:]
        and later.text[:start] == earlier.text[:start]
    )


@dataclass(frozen=True)
class Prompting:
    """How prompts are written and measured for the served model."""

    template: PromptTemplate
    counter: TokenCounter
    encoder: PromptEncoder | None = None
    """Encodes prompts as token ids, for a vLLM backend whose tokenizer is here."""
    auto_heals: bool = False
    """Whether `completion.promptLayout` auto lays prompts out lineStart and heals them:
    where the healing grammar constrains the answer (`auto_healing_refusal`)."""


DEFAULT_PROMPTING = Prompting(choose_template("qwen", None), TokenCounter())


@dataclass
class Suggestion:
    text: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    """Milliseconds per stage: model_info, context (choose what goes in the prompt), prompt
    (render it), queue (waiting for a request slot), first_chunk, stream, filters, total."""
    error: str | None = None
    resumes: int = 0
    request: CompletionRequest | None = None
    """What was sent to the backend (None when the suggestion cache answered)."""
    more: asyncio.Task[str] | None = None
    """The stream kept going in the background after a one-line suggestion: it gives the
    suggestion with the lines that follow it, to the end of the block."""
    chunks: int = 0
    """The stream's events read when the suggestion was complete: where the bench's floor
    stops its copy of the request (`server.bench.floor`)."""


JOIN_SLACK = 4
"""Tokens kept free for the joins of prefix and suffix with the template's markers: the
parts are counted apart, and a BPE tokenizer may split the joined text into a token more
at each of the four joins."""


def tokenizer_home(model: ModelInfo) -> str:
    """Where the model's tokenizer may be: the folder vLLM loaded it from, else its name."""
    if model.root and os.path.isabs(model.root):
        return model.root
    return model.id


def budget_for(settings: CompletionSettings, prompting: Prompting, ctx: CursorContext) -> Budget:
    """The token budget of the context: the total less the template's own fixed parts.

    Those are measured with one empty snippet, since some templates add parts only when
    there are snippets (the current file's path comment in Code Llama's and Codestral's);
    the empty snippet's own markers are then a few tokens to spare."""
    template, count = prompting.template, prompting.counter.count
    bare = template.render(
        repo_name=ctx.repo_name, snippets=[("", "")], file_path=ctx.file_path, prefix="", suffix=""
    )
    return settings_budget(settings, reserved=count(bare) + JOIN_SLACK)


WINDOW_SLACK = 16
"""Tokens kept free in the model's window beyond the answer: a prompt may count a few
tokens more at the backend than the budget counted (an approximate counter)."""
_window_warnings: set[tuple[str, int, int]] = set()


def context_that_fits(context_tokens: int, answer_tokens: int, model: ModelInfo) -> int:
    """The prompt's token budget, cut so that prompt and answer fit the model's window:
    vLLM refuses (HTTP 400) a request whose prompt and max_tokens exceed max_model_len,
    as a local CPU vLLM's 4,096-token window and the default 4,096-token context do."""
    if model.max_model_len is None:
        return context_tokens
    room = max(64, model.max_model_len - answer_tokens - WINDOW_SLACK)
    if room >= context_tokens:
        return context_tokens
    if (model.id, context_tokens, room) not in _window_warnings:
        _window_warnings.add((model.id, context_tokens, room))
        log.info(
            "%s takes %d tokens: a %d-token prompt leaves no room for a %d-token answer, so "
            "prompts get %d",
            model.id,
            model.max_model_len,
            context_tokens,
            answer_tokens,
            room,
        )
    return room


def settings_budget(settings: CompletionSettings, reserved: int) -> Budget:
    """The completion settings' shares of the budget, `reserved` tokens taken off first."""
    return Budget(
        total=settings.context_tokens,
        suffix_share=settings.suffix_share,
        fim_suffix_tokens=settings.fim_suffix_tokens,
        cross_file_share=settings.cross_file_share,
        reserved=reserved,
        similar_share=min(
            settings.similar_code_share,
            max(0.0, 0.9 - settings.suffix_share - settings.cross_file_share),
        ),
        head_share=settings.imports_share,
        similar_cursor_line=settings.similar_code_cursor_line,
        prefix_step_lines=settings.window_step_lines,
        keep_snippets=settings.keep_snippets,
        keep_window_tokens=settings.window_keep_tokens,
    )


def plan_request(
    ctx: CursorContext, settings: CompletionSettings, prompting: Prompting = DEFAULT_PROMPTING
) -> tuple[CompletionRequest, CursorShape]:
    """The request to send for this cursor, and the shape its stop rules need."""
    settings = resolved_layout(settings, prompting)
    context = build_context(ctx, settings, prompting)
    return render_request(ctx, context, settings, prompting)


def build_context(
    ctx: CursorContext, settings: CompletionSettings, prompting: Prompting
) -> Context:
    """The cross-file snippets, prefix and suffix that fit the budget (the context stage)."""
    template, counter = prompting.template, prompting.counter

    def overhead(path: str) -> int:
        return counter.count(template.snippet(path, "")) + 1

    budget = budget_for(settings, prompting, ctx)
    contract = contract_snippet(
        ctx.builder,
        ctx.text,
        ctx.offset,
        int(budget.available * settings.contract_share),
        counter.count,
        overhead,
    )
    if contract is not None:  # its tokens come off the total, like the template's own
        budget = dataclasses.replace(budget, reserved=budget.reserved + contract[1])
    context = ctx.builder.build(
        ctx.file_path,
        ctx.text,
        ctx.offset,
        ctx.language,
        budget,
        counter.count_lines,
        overhead,
        ctx.tree,
    )
    return with_contract(context, contract)


def render_request(
    ctx: CursorContext,
    context: Context,
    settings: CompletionSettings,
    prompting: Prompting,
    priority: Priority = Priority.KEYSTROKE,
) -> tuple[CompletionRequest, CursorShape]:
    """The context rendered with the model's template into a request (the prompt stage)."""
    assert context.cursor is not None  # build() always analyses the cursor
    shape = dataclasses.replace(context.cursor.shape, max_lines=settings.max_lines)
    prefix, suffix = mask_document(context.prefix, context.suffix, ctx.text, ctx.file_path)
    prompt = prompting.template.prompt(
        repo_name=ctx.repo_name,
        snippets=[
            (path, mask_snippet(text, path, ctx.file_path, ctx.text))
            for path, text in context.files()
        ],
        file_path=ctx.file_path,
        prefix=prefix,
        suffix=suffix,
        layout=template_layout(settings),
    )
    one_line = shape.mode is Mode.LINE and not settings.continue_in_background
    request = CompletionRequest(
        prompt=prompt.text,
        max_tokens=settings.max_tokens if one_line else settings.multiline_max_tokens,
        stop=prompt.stop,
        stop_token_ids=prompt.stop_token_ids,
        temperature=settings.temperature,
        priority=priority,
        document=f"{ctx.repo_name}/{ctx.file_path}",
    )
    return request, shape


def resolved_layout(settings: CompletionSettings, prompting: Prompting) -> CompletionSettings:
    """The settings with `promptLayout` auto made what it is for this model: lineStart with
    token healing where `prompting.auto_heals`, the cursor layout otherwise (lineStart
    unhealed is the worst prompt of the three: docs/results.md, "Where the hole starts").
    cursor and lineStart are left as they are."""
    if settings.prompt_layout != "auto":
        return settings
    heals = prompting.auto_heals
    return settings.model_copy(
        update={"prompt_layout": "lineStart" if heals else "cursor", "token_healing": heals}
    )


def template_layout(settings: CompletionSettings) -> PromptLayout:
    """The layout a template renders: `resolved_layout` has made auto cursor or lineStart."""
    layout = settings.prompt_layout
    if layout == "auto":
        raise ValueError("completion.promptLayout auto is resolved per model (resolved_layout)")
    return layout


def cannot_heal(template: PromptTemplate, encoder: PromptEncoder | None, model: str) -> str | None:
    """Why no prompt for this model can be healed, or None: healing needs the template's
    lineStart layout and the served model's tokenizer here (a vLLM or SGLang backend)."""
    if not template.line_start:
        return f"the {template.family} template keeps the typed part in the prefix"
    if encoder is None:
        return f"no tokenizer of {model} here, or the backend is not vLLM or SGLang"
    return None


def auto_healing_refusal(
    template: PromptTemplate,
    encoder: PromptEncoder | None,
    model: ModelInfo,
    backend_refusal: str | None,
) -> str | None:
    """Why `completion.promptLayout` auto keeps the cursor layout for this model, or None
    where it heals. Beyond what healing needs (`cannot_heal`) and a backend that has not
    shown it ignores healing (`backend_refusal`), auto needs the grammar that
    lets a healed answer end with the template's end token, to win: under a regex alone
    (SGLang's `regex`, an xgrammar-only vLLM) answers ran on past the line's end and scored
    far below the cursor layout (docs/results/prompt_layout.txt)."""
    if why := cannot_heal(template, encoder, model.id):
        return why
    if engine_of(model.owned_by) != "vllm":
        return "the backend (SGLang) takes healing's constraint as a regex only"
    if not template.stop_token_ids:
        return "the template has no end tokens for the healing grammar to name"
    return backend_refusal


def heal_request(
    request: CompletionRequest,
    prompting: Prompting,
    settings: CompletionSettings,
    prefix: str,
) -> CompletionRequest | None:
    """The request with its prompt's last token backed off and the answer made to start
    with that token's characters (`completion.tokenHealing`), or None where there is
    nothing to heal: no typed part after the middle marker, or no tokenizer of the served
    vLLM here. `prefix` is the text before the cursor that the prompt was rendered from."""
    template, encoder = prompting.template, prompting.encoder
    if not settings.token_healing or settings.prompt_layout != "lineStart":
        return None
    if encoder is None or not template.line_start:
        return None
    middle = template.defuse(split_at_line_start(prefix)[1])
    healed = encoder.heal(request.prompt, middle)
    if healed is None:
        return None
    return dataclasses.replace(
        request,
        prompt=request.prompt[: -len(healed.removed)],
        prompt_ids=healed.ids,
        answer_prefix=healed.removed,
    )


def healing_state(template: PromptTemplate, encoder: PromptEncoder | None, model: str) -> str:
    """Whether `completion.tokenHealing` can work for this model, and if not why (a log
    line, so that a run that compares it can tell it was on)."""
    if why := cannot_heal(template, encoder, model):
        return f"off: {why}"
    return f"on for {model} ({template.family} template)"


def auto_healing_state(template: PromptTemplate, model: str, refusal: str | None) -> str:
    """What `completion.promptLayout` auto chose for this model, and why (a log line)."""
    if refusal is None:
        return (
            f"on for {model} ({template.family} template): completion.promptLayout auto "
            "lays prompts out lineStart and heals them (a vLLM backend, its tokenizer here)"
        )
    return (
        f"off for {model}: completion.promptLayout auto lays prompts out at the cursor: {refusal}"
    )


@functools.cache
def warn_unhealed() -> None:
    """Once per server: a backend ignored the healing constraint (said why, once)."""
    log.warning(
        "token healing: the backend's answer did not start with the characters it was "
        "asked to, so it was dropped; does it ignore structured outputs? (turn "
        "completion.tokenHealing off for it; promptLayout auto stops healing by itself)"
    )


async def after_answer_prefix(
    stream: AsyncGenerator[str], forced: str, unhealed: Callable[[], None] = warn_unhealed
) -> AsyncGenerator[str]:
    """A healed request's stream as the editor is to see it: each snapshot without the
    characters the answer was made to start with (they are typed already). An answer that
    does not start with them (a backend that ignored the constraint) ends the stream, as
    its text would not continue what was typed, and `unhealed` is called."""
    try:
        async for snapshot in stream:
            if snapshot.startswith(forced):
                yield snapshot[len(forced) :]
            elif not forced.startswith(snapshot):
                unhealed()
                return
    finally:
        await close_uninterrupted(stream.aclose())


def finish_text(raw: str, shape: CursorShape, text: str, offset: int, language: str | None) -> str:
    """A whole stream's text as the user sees it: cut by the stop rules, then checked not
    to break a file that parsed."""
    kept = apply_stops(raw, shape, final=True)[0]
    return keep_parsing(text, offset, kept, language)


class Completer:
    """Builds the prompt, streams from the backend, applies the stop rules."""

    def __init__(self, backend: CompletionBackend) -> None:
        self.backend = backend
        self._prompting: dict[tuple[str, str | None, str], Prompting] = {}
        self._slots: tuple[int, asyncio.Semaphore] | None = None
        self._ignores_healing = False
        """Whether the backend answered a healed prompt without its forced characters."""

    def slots(self, limit: int) -> asyncio.Semaphore:
        """The global cap on model requests in flight, across documents (each document
        has at most one already: a newer request cancels the older)."""
        if self._slots is None or self._slots[0] != limit:
            self._slots = (limit, asyncio.Semaphore(limit))
        return self._slots[1]

    def cached_tokens(self) -> int:
        """Token counts and prompt pieces kept, over the models served so far."""
        return sum(
            p.counter.cached() + (p.encoder.cached() if p.encoder else 0)
            for p in self._prompting.values()
        )

    async def prompting(self, settings: CompletionSettings) -> Prompting:
        """The template and token counter for the served model; the tokenizer is loaded
        once per model (~0.4 s, off the event loop)."""
        model = await self.backend.model()
        key = (settings.template, settings.tokenizer, model.id)
        if key not in self._prompting:
            counter = await asyncio.to_thread(
                load_token_counter, settings.tokenizer, tokenizer_home(model)
            )
            vllm_fields = takes_vllm_fields(model.owned_by)
            foreign = vllm_fields and not await backend_agrees(self.backend, counter)
            if foreign:
                counter = TokenCounter()
            template = choose_template(settings.template, model.id, counter)
            if foreign:  # its vocabulary is not known here: stop by strings alone
                template = dataclasses.replace(template, stop_token_ids=())
            encoder = None
            if counter.tokenizer is not None and vllm_fields:
                encoder = PromptEncoder(counter.tokenizer)
            refusal = auto_healing_refusal(template, encoder, model, self._healing_refused())
            self._prompting[key] = Prompting(template, counter, encoder, refusal is None)
            if settings.prompt_layout == "auto":
                log.info("token healing: %s", auto_healing_state(template, model.id, refusal))
            elif settings.token_healing and settings.prompt_layout == "lineStart":
                log.info("token healing: %s", healing_state(template, encoder, model.id))
        return self._prompting[key]

    def _still_heals(self, prompting: Prompting) -> Prompting:
        """`prompting`, no longer healing under `promptLayout` auto once the backend has
        shown it does not honour healing: it refused the grammar (a regex alone lets healed
        answers run on past the line's end) or answered without the forced characters.
        Said once; every model of this backend keeps the cursor layout from then on."""
        if not prompting.auto_heals or (why := self._healing_refused()) is None:
            return prompting
        log.warning(
            "token healing: off from now on: %s, so completion.promptLayout auto lays "
            "prompts out at the cursor for this backend (under a regex, or unconstrained, "
            "healed prompts score far below it: "
            "docs/results.md#where-the-hole-starts-promptlayout-and-token-healing)",
            why,
        )
        self._prompting = {
            key: dataclasses.replace(p, auto_heals=False) for key, p in self._prompting.items()
        }
        return dataclasses.replace(prompting, auto_heals=False)

    def _healing_refused(self) -> str | None:
        """How this backend has shown it does not honour healing, or None while it does."""
        if not self.backend.sends_healing_grammar:
            return "the backend refused token healing's grammar"
        if self._ignores_healing:
            return "the backend answered a healed prompt without its forced characters"
        return None

    def _unhealed(self) -> None:
        """A backend ignored a healed prompt's constraint: said once, and auto stops healing."""
        warn_unhealed()
        self._ignores_healing = True

    async def complete(
        self,
        ctx: CursorContext,
        settings: CompletionSettings,
        priority: Priority = Priority.KEYSTROKE,
    ) -> Suggestion:
        """The suggestion at `ctx`; `priority` says what it is for (a prefetch is
        speculative)."""
        started = time.perf_counter()
        with tracing.span(MODEL_SPAN) as span:
            try:
                prompting = await self.prompting(settings)
            except BackendError as exc:  # the stream would fail the same way: say so once
                log.warning("backend: %s", exc)
                span.failed(exc)
                return Suggestion(text="", mode=Mode.LINE, error=str(exc))
            raise_if_cancelled()
            if settings.prompt_layout == "auto":
                prompting = self._still_heals(prompting)
            settings = resolved_layout(
                self._fitted(settings, await self.backend.model()), prompting
            )
        planned = time.perf_counter()
        with tracing.span(CONTEXT_SPAN):
            context = build_context(ctx, settings, prompting)
        built = time.perf_counter()
        with tracing.span(PROMPT_SPAN) as span:
            request, shape = self._request(ctx, context, settings, prompting, priority)
            if request.prompt_ids is not None:
                span.set("headstart.prompt.tokens", len(request.prompt_ids))
        decode = prompting.counter.decode if prompting.counter.exact else None
        queued = time.perf_counter()
        follow = settings.continue_in_background and shape.mode is Mode.LINE
        slots = self.slots(settings.max_concurrent_requests)
        with tracing.span(QUEUE_SPAN, {"headstart.priority": priority.name.lower()}):
            await slots.acquire()
        try:
            stats = StreamStats()
            text, error, rest = await self._stream_until_stop(
                request, shape, stats, decode, keep_open=follow, line_cap=settings.max_tokens
            )
        finally:
            slots.release()
        streamed = time.perf_counter()
        with tracing.span(FILTERS_SPAN) as span:
            text = keep_parsing(ctx.text, ctx.offset, text, ctx.language)
            span.set("headstart.stop_rules_ms", stats.stop_rules_s * 1000)
            span.set("headstart.suggestion.chars", len(text))
        finished = time.perf_counter()
        suggestion = Suggestion(text=text, mode=shape.mode, error=error, request=request)
        suggestion.timings_ms = {
            "model_info": (planned - started) * 1000,
            "context": (built - planned) * 1000,
            "prompt": (queued - built) * 1000,
            "queue": (stats.started - queued) * 1000,
            "stream": (streamed - stats.started) * 1000,
            "filters": (finished - streamed) * 1000,
            "total": (finished - started) * 1000,
        }
        if stats.first_chunk is not None:  # absent when the stream ended with no event
            suggestion.timings_ms["first_chunk"] = stats.first_chunk * 1000
        suggestion.resumes = stats.resumes
        suggestion.chunks = stats.chunks  # a stream kept open reads on in `_continue`, below
        if rest is not None:
            stream, received = rest
            block = continuation_shape(ctx, shape)
            suggestion.more = asyncio.create_task(self._continue(stream, received, block, ctx))
            suggestion.more.add_done_callback(close_if_cancelled(stream))
        return suggestion

    def _request(
        self,
        ctx: CursorContext,
        context: Context,
        settings: CompletionSettings,
        prompting: Prompting,
        priority: Priority,
    ) -> tuple[CompletionRequest, CursorShape]:
        """The context rendered into the request to send: healed, or as token ids, where the
        settings and the backend take them (the prompt stage)."""
        request, shape = render_request(ctx, context, settings, prompting, priority)
        sends_ids = (
            prompting.encoder is not None
            and self.backend.settings.prompt_token_ids
            and self.backend.sends_token_ids
        )
        healed = heal_request(request, prompting, settings, context.prefix)
        if healed is not None:
            request = healed if sends_ids else dataclasses.replace(healed, prompt_ids=None)
        elif sends_ids and prompting.encoder is not None:
            ids = prompting.encoder.encode(request.prompt)
            if ids is not None:
                request = dataclasses.replace(request, prompt_ids=ids)
        return request, shape

    @staticmethod
    def _fitted(settings: CompletionSettings, model: ModelInfo) -> CompletionSettings:
        """The settings, with a context that leaves the model room for the answer."""
        answer = max(settings.max_tokens, settings.multiline_max_tokens)
        fits = context_that_fits(settings.context_tokens, answer, model)
        if fits == settings.context_tokens:
            return settings
        return settings.model_copy(update={"context_tokens": fits})

    async def _continue(
        self, stream: AsyncGenerator[str], received: str, block: CursorShape, ctx: CursorContext
    ) -> str:
        """The rest of a one-line suggestion's stream, cut by the block's stop rules."""
        text = received
        timeout_s = self.backend.settings.total_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):
                async for snapshot in stream:
                    text = snapshot
                    kept, done = apply_stops(text, block, final=False)
                    if done:
                        break
                else:
                    kept = apply_stops(text, block, final=True)[0]
        except (BackendError, TimeoutError) as exc:
            kept = salvage(text, block)
            log.debug("background continuation ended early: %s", exc or "timeout")
        finally:
            await close_uninterrupted(stream.aclose())
        return keep_parsing(ctx.text, ctx.offset, kept, ctx.language)

    async def _stream_until_stop(
        self,
        request: CompletionRequest,
        shape: CursorShape,
        stats: StreamStats,
        decode: Decode | None = None,
        keep_open: bool = False,
        line_cap: int | None = None,
    ) -> tuple[str, str | None, tuple[AsyncGenerator[str], str] | None]:
        """The suggestion, the error that ended it early, and, with `keep_open`, the
        still-open stream and its text so far, when the suggestion was complete before the
        stream was. A line still open after `line_cap` chunks (about as many tokens) is
        answered as it is and its stream closed: a request kept open for the block must
        not make a one-line answer wait longer than `maxTokens` would."""
        received = ""
        timeout_s = self.backend.settings.total_timeout_ms / 1000
        policy = resume_policy(self.backend.settings)
        timed = tracing.enabled()
        try:
            async with asyncio.timeout(timeout_s):
                stream: AsyncGenerator[str] = resumable_stream(
                    self.backend, request, policy, stats, decode
                )
                if request.answer_prefix:
                    stream = after_answer_prefix(stream, request.answer_prefix, self._unhealed)
                handed_over = False
                try:
                    async for snapshot in stream:
                        raise_if_cancelled()
                        received = snapshot
                        stopping = time.perf_counter() if timed else 0.0
                        kept, done = apply_stops(received, shape, final=False)
                        if timed:
                            stats.stop_rules_s += time.perf_counter() - stopping
                        if done:
                            handed_over = keep_open
                            if keep_open:
                                stats.line_chunks = stats.chunks
                            return kept, None, (stream, received) if keep_open else None
                        if keep_open and line_cap is not None and stats.chunks >= line_cap:
                            return apply_stops(received, shape, final=True)[0], None, None
                finally:
                    if not handed_over:
                        await close_uninterrupted(stream.aclose())
            return apply_stops(received, shape, final=True)[0], None, None
        except BackendError as exc:
            error = str(exc)
        except TimeoutError:
            error = f"completion took longer than {timeout_s * 1000:.0f} ms"
        kept = salvage(received, shape)
        log.warning("backend: %s (kept %d of %d characters)", error, len(kept), len(received))
        return kept, error, None


def raise_if_cancelled() -> None:
    """Stop the current task if anyone asked it to stop, even where the CancelledError
    itself was lost below us (a library that catches it and goes on): the task still
    counts the request. In CI a `$/cancelRequest` once left a 3,000-token stream running
    to its end; this makes such a stream stop at its next chunk."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        log.warning("a cancellation was lost on the way; stopping the request now")
        raise asyncio.CancelledError


def close_if_cancelled(stream: AsyncGenerator[str]) -> Callable[[asyncio.Task[str]], None]:
    """A continuation cancelled before it ran never reaches its `finally`: its stream is
    closed then, or its connection to the backend would stay open for good (and the
    backend go on generating). Closing a stream already closed does nothing."""

    def close(task: asyncio.Task[str]) -> None:
        if task.cancelled():
            close_in_background(stream.aclose())

    return close


def continuation_shape(ctx: CursorContext, shape: CursorShape) -> CursorShape:
    """The stop rules for the lines after a one-line suggestion: the block the cursor's
    line is in goes on while lines keep at least that line's indentation."""
    line_start = ctx.text.rfind("\n", 0, ctx.offset) + 1
    line = ctx.text[line_start : ctx.offset]
    return dataclasses.replace(
        shape, mode=Mode.BLOCK, block_indent=indent_width(line), closer=None, first_indent=0
    )


def cut_for_cursor(rest: str, ctx: CursorContext) -> str:
    """What to show of a remembered suggestion's rest at this cursor: in the middle of a
    line, that line only (or, at its end, the next line); on a blank line, all of it."""
    if "\n" not in rest:
        return rest
    shape = analyse_cursor(ctx.text[: ctx.offset], ctx.text[ctx.offset : ctx.offset + 400])
    if shape.mode is Mode.BLOCK:
        return rest
    end = line_end(rest, shape)
    return rest if end < 0 else rest[:end]


def resume_policy(settings: BackendSettings) -> ResumePolicy:
    return ResumePolicy(
        max_retries=settings.max_retries,
        backoff_ms=settings.retry_backoff_ms,
        overlap_tokens=settings.resume_overlap_tokens,
        min_valid_tokens=settings.min_valid_tokens,
    )


class Joined(enum.Enum):
    """How `LatestOnly.join` ended."""

    NONE = "none"
    ENDED = "ended"
    TIMED_OUT = "timed out"
    SUPERSEDED = "superseded"


MAX_CANCELS: Final = 30
"""How often `LatestOnly` cancels a job again (a second apart) before it gives up on it."""


class LatestOnly:
    """Runs at most one job per key: a newer job cancels the older one's work.

    A caller that is cancelled ($/cancelRequest) is answered at once, without waiting for
    its job. The job is cancelled behind it (after `linger_s`, if the caller asked, in
    which a later caller may `join` it instead), and cancelled again every `retry_s`
    seconds until it ends, with a warning that says where it waits: a library that
    swallows a CancelledError must neither hold the editor's reply nor keep a model
    stream open.
    """

    def __init__(self, retry_s: float = 1.0) -> None:
        self.retry_s = retry_s
        self._running: dict[str, tuple[asyncio.Task[Any], Any]] = {}
        self._waiters: dict[asyncio.Task[Any], int] = {}
        self._calls: dict[str, int] = {}
        """Calls of `run` and `join` per key: a joiner that a newer call overtook gives up."""
        self._stopping: dict[asyncio.Task[Any], asyncio.Task[None]] = {}

    async def run(
        self, key: str, job: Awaitable[T], tag: Any = None, linger_s: float = 0.0
    ) -> T | None:
        """The job's result, or None if a newer job for the same key superseded it.
        `tag` describes the job to later callers of `join`; once no caller waits for it,
        the job goes on for `linger_s` seconds before it is cancelled."""
        self.cancel(key)
        self._calls[key] = self._calls.get(key, 0) + 1
        task: asyncio.Task[T] = asyncio.ensure_future(job)
        self._running[key] = (task, tag)

        def ended(_: asyncio.Task[T]) -> None:
            if self._running.get(key, (None,))[0] is task:
                del self._running[key]
            if not task.cancelled() and task.exception() and task not in self._waiters:
                # lingering after its caller left: nobody else will see this
                log.warning("a completion nobody waited for failed: %r", task.exception())

        task.add_done_callback(ended)
        await self._wait(task, linger_s)
        return None if task.cancelled() else task.result()

    async def join(
        self, key: str, wanted: Callable[[Any], bool], wait_s: float, linger_s: float = 0.0
    ) -> Joined:
        """Wait up to `wait_s` for the job running for `key` to end, if `wanted(its tag)`.
        SUPERSEDED if a newer call for `key` (run or join) came meanwhile, or a newer job
        or `cancel` ended the job; ENDED when it ended; TIMED_OUT when the wait ran out (the
        job goes on, for the caller's own `run` to cancel); NONE when there was nothing to
        join."""
        call = self._calls[key] = self._calls.get(key, 0) + 1
        running = self._running.get(key)
        if running is None or running[0].done() or not wanted(running[1]):
            return Joined.NONE
        task = running[0]
        await self._wait(task, linger_s, wait_s)
        if self._calls.get(key) != call or task.cancelled():
            return Joined.SUPERSEDED
        return Joined.ENDED if task.done() else Joined.TIMED_OUT

    async def _wait(
        self, task: asyncio.Task[Any], linger_s: float, wait_s: float | None = None
    ) -> None:
        """Wait for `task` to end (up to `wait_s`); the last waiter to leave early because
        it was cancelled stops it, at once or after `linger_s`."""
        self._waiters[task] = self._waiters.get(task, 0) + 1
        try:
            # unlike `await task`, our own cancel ends this at once
            await asyncio.wait({task}, timeout=wait_s)
        except asyncio.CancelledError:
            self._leave(task, linger_s)
            raise
        else:
            self._leave(task, None)

    def _leave(self, task: asyncio.Task[Any], linger_s: float | None) -> None:
        """One waiter less; the last one, cancelled, stops the job (`linger_s` later)."""
        self._waiters[task] -= 1
        if self._waiters[task]:
            return
        del self._waiters[task]
        if task.done() or linger_s is None:
            return
        if linger_s > 0:
            asyncio.get_running_loop().call_later(linger_s, self._stop_unwaited, task)
        else:
            self._stop(task)

    def _stop_unwaited(self, task: asyncio.Task[Any]) -> None:
        if task not in self._waiters:
            self._stop(task)

    def __len__(self) -> int:
        """Jobs running, or cancelled and not yet ended."""
        return len(self._running) + len(self._stopping)

    def cancel(self, key: str) -> None:
        """Cancel the job running for `key`, as a newer one would."""
        older = self._running.get(key)
        if older is not None:
            self._stop(older[0])

    async def cancel_all(self, wait_s: float = 5.0) -> None:
        """Cancel every job, and wait up to `wait_s` for them to end (at shutdown)."""
        for task, _ in list(self._running.values()):
            self._stop(task)
        if self._stopping:
            await asyncio.wait(set(self._stopping.values()), timeout=wait_s)

    def _stop(self, task: asyncio.Task[Any]) -> None:
        if task.done() or task in self._stopping:
            return
        task.cancel()
        stopper = asyncio.ensure_future(self._cancel_until_done(task))
        self._stopping[task] = stopper
        stopper.add_done_callback(lambda _: self._stopping.pop(task, None))

    async def _cancel_until_done(self, task: asyncio.Task[Any]) -> None:
        started = time.perf_counter()
        for _ in range(MAX_CANCELS):
            if (await asyncio.wait({task}, timeout=self.retry_s))[0]:
                return
            log.warning(
                "a cancelled completion is still running %.1f s later; cancelling it again. "
                "It waits in: %s",
                time.perf_counter() - started,
                awaiting(task),
            )
            task.cancel()
        log.error("a cancelled completion ignored %d cancels; left running", MAX_CANCELS)


def awaiting(task: asyncio.Task[Any]) -> str:
    """Where a task waits: its coroutine, then each one it awaits, as far as Python shows
    the chain (an async generator's step hides what it awaits), then the future itself."""
    frames = []
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
        if frame is None:
            frames.append(type(awaited).__name__)
            break
        frames.append(f"{frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
    waiter = getattr(task, "_fut_waiter", None)
    return " -> ".join(frames) + (f" -> {waiter!r}" if waiter is not None else "")
