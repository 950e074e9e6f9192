"""The language server's state: settings, backend client, project cache, open documents.

`HeadstartServer` holds what the handlers (server.lsp.handlers) share and the few methods
that need several of those parts at once; everything it calls is LSP-free.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import sys
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from cache.languages import from_language_id, language_for
from cache.paths import display_path, uri_to_path
from server import __version__, tracing
from server.backend.client import BackendError, CompletionBackend, Priority
from server.backend.trace import NOTE, RequestTrace
from server.completion.prefetch_use import PrefetchUse
from server.completion.request import (
    JOIN_WAIT_S,
    Completer,
    CursorContext,
    Joined,
    LatestOnly,
    Suggestion,
    cut_for_cursor,
    types_on,
)
from server.completion.stops import Mode
from server.completion.suggestion_cache import SuggestionCache
from server.completion.throttle import BackgroundThrottle
from server.completion.trees import DocumentTrees
from server.config import (
    CompletionSettings,
    Settings,
    SettingsError,
    keep_machine_settings,
    load_settings,
)
from server.features.semantic_tokens.document import DocumentTokens
from server.features.semantic_tokens.legend import FULL_LEGEND
from server.lsp import stdio
from server.lsp.documents import Synced
from server.lsp.local_backend import LocalBackend
from server.lsp.logs import configure_logging
from server.lsp.protocol import COMPLETION_REPORT, STATUS, HeadstartProtocol
from server.lsp.pygls_patches import require_tested_pygls
from server.workspace.privacy import private_reason
from server.workspace.project import ProjectCache
from server.workspace.sync import WorkspaceSync

log = logging.getLogger(__name__)

LINGER_S = 0.3
"""How long a model request goes on after its editor cancelled it (with
`completion.joinInFlight`): the next keystroke, which usually comes with the cancel, may
join it. Typing runs at a key every ~180 ms."""
SERVED_FROM = {"cached": "the suggestion cache", "joined": "the running request it joined"}
"""Where a suggestion came from without a model request of its own, by its timings key."""


class HeadstartServer(LanguageServer):
    """Holds the settings, the backend client and the in-flight requests."""

    def __init__(self) -> None:
        super().__init__("headstart", __version__, protocol_cls=HeadstartProtocol)
        require_tested_pygls(self)
        self.init_options: dict[str, Any] = {}
        self.client_name: str | None = None
        self.stdin_read_by: str | None = None
        """How `start_io` reads the client's messages; None over TCP."""
        try:
            self.settings = load_settings()
        except SettingsError as exc:  # a bad HEADSTART_* variable must not stop the server
            log.error("%s; starting with the defaults", exc)
            self.settings = load_settings(environ={})
        self.ignored_workspace_choices: list[str] = []
        """The machine settings the workspace configuration last tried to choose."""
        self.local = LocalBackend(self)
        """The shared local vLLM, with `backend.mode: local`."""
        self.backend = CompletionBackend(
            self.settings.backend, self.settings.api_key(), trace=self._request_trace()
        )
        self.completer = Completer(self.backend)
        self.throttle = BackgroundThrottle(self.settings.completion.background_throttle_ms)
        """Pauses continuations and prefetches while the backend is slow."""
        self.prefetch_use = PrefetchUse()
        """Sends fewer prefetches while their suggestions go unused."""
        self.latest = LatestOnly()
        self.shown: SuggestionCache[Mode] = SuggestionCache()
        self.last_asked: dict[str, CursorContext] = {}
        """Per document, where the model was last asked, while requests are traced
        (`trace_note`)."""
        self.following: dict[str, asyncio.Task[Any]] = {}
        """Per document, the one speculative job: the stream kept going after a one-line
        suggestion, or the request for the suggestion after a block."""
        self.skipped_documents: set[str] = set()
        self.synced: dict[str, Synced] = {}
        """Per document, its last didChange while tracing: where its next keystroke's trace
        starts (server.lsp.request_spans)."""
        self.private: dict[str, str | None] = {}
        """Per open document, why it must stay out of prompts (None: it may go)."""
        self.shutdown_requested = False
        self.project = ProjectCache()
        self.trees = DocumentTrees()
        self.sync = WorkspaceSync(self.project, trees=self.trees)
        self._indexing: asyncio.Task[None] | None = None
        self._probe: asyncio.Task[None] | None = None
        self.internals_log: asyncio.Task[None] | None = None
        """Logs the server's internals every `log.statsIntervalS` seconds."""
        self.semantic_tokens = DocumentTokens(self.trees)
        self.legend = FULL_LEGEND

    async def apply_settings(self, *layers: dict[str, Any] | None) -> None:
        """Validate and switch to new settings; on a bad value keep the last good ones.

        `layers` come from the workspace configuration, which cannot choose a machine
        setting (`without_workspace_choices`). Each part is applied on its own: one that
        fails (an unwritable log file) is reported and keeps its previous value, so the
        rest still takes effect and the same update sent again tries that part again."""
        try:
            settings = load_settings(self.init_options, *layers)
            if layers:
                settings = self.without_workspace_choices(settings)
        except SettingsError as exc:
            log.error("%s; keeping the previous settings", exc)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=str(exc))
            )
            return
        tracing.configure(settings.log.open_telemetry)
        if settings == self.settings:
            return
        previous, self.settings = self.settings, settings
        self.throttle.budget_ms = settings.completion.background_throttle_ms
        self._follow_log_settings(previous)
        self._follow_request_trace()
        if self.settings.backend != previous.backend:
            await self.replace_backend()
        log.info(
            "settings applied: backend %s, model %s",
            "local vLLM" if settings.backend.mode == "local" else settings.backend.url,
            settings.backend.model or "(from /v1/models)",
        )
        await self.local.follow(self.settings)

    def without_workspace_choices(self, settings: Settings) -> Settings:
        """`settings` with the machine settings of initializationOptions and HEADSTART_*
        variables: an editor may answer workspace/configuration from a repository's own
        files (VS Code's folder settings, a project's .neoconf.json), and a repository must
        not choose where the key goes, what runs or what is written (docs/settings.md)."""
        kept, ignored = keep_machine_settings(settings, load_settings(self.init_options))
        if ignored and ignored != self.ignored_workspace_choices:
            message = (
                f"Headstart ignored {', '.join(ignored)} from the workspace configuration: "
                "these are taken from initializationOptions or HEADSTART_* variables only "
                "(in VS Code: user or remote settings)"
            )
            log.warning("%s", message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )
        self.ignored_workspace_choices = ignored
        return kept

    def _follow_log_settings(self, previous: Settings) -> None:
        """Log at the new level to the new file; a file that cannot be opened keeps the
        previous one (and its setting), and says so."""
        try:
            self.configure_logging()
            return
        except OSError as exc:
            failed, error = self.settings.log.file, exc.strerror or str(exc)
        kept = previous.log.file
        log_settings = self.settings.log.model_copy(update={"file": kept})
        self.settings = self.settings.model_copy(update={"log": log_settings})
        try:
            self.configure_logging()
        except OSError:  # the previous file went away meanwhile
            kept = None
            configure_logging(self.settings.log.level, None)
        still = f"still logging to {kept}" if kept else "not logging to a file"
        message = (
            f"Headstart: log.file: cannot write {failed} ({error}); {still}. "
            "The other settings are applied."
        )
        log.error("%s", message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )

    async def replace_backend(self) -> None:
        """A new backend client for the current settings; requests on the old one end."""
        old = self.backend
        settings = self.settings
        self.backend = CompletionBackend(
            self.local.client_settings(settings.backend), settings.api_key(), trace=old.trace
        )
        self.completer = Completer(self.backend)
        for uri in list(self.following):
            self.stop_following(uri)
        await self.latest.cancel_all()
        self.shown.clear()
        await old.aclose()

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls's stdio server, reading a pipe on the event loop (server.lsp.stdio)."""
        stdin = stdin or sys.stdin.buffer
        stdout = stdout or sys.stdout.buffer
        if stdio.readable_on_loop(stdin, stdout):
            self.stdin_read_by = "the event loop"
        else:
            self.stdin_read_by = "a reader thread (stdin is not a pipe)"
        stdio.start_io(self, stdin, stdout)

    def start_tcp(self, host: str, port: int) -> None:
        """pygls's TCP server, its messages framed as stdin's are (server.lsp.stdio)."""
        stdio.start_tcp(self, host, port)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls shows every error outside a request (a notification handler's, a message it
        could not send) in a pop-up, a KeyError naming a URI included: nothing the user can
        act on. Logged in one line instead (its traceback at debug level)."""
        log.error("%s: %s", getattr(source, "__name__", source), error)
        where = error.data if isinstance(error, JsonRpcException) and error.data else None
        log.debug("the error's traceback: %s", where, exc_info=None if where else error)

    def after_reply(self, send: Callable[[], None]) -> None:
        """Call `send` once the current request's reply is written, so that what it sends
        (a completion report of some 50 KB with the request in it) does not come between
        the editor and the reply it waits for. pygls writes the reply from the handler
        task's first done callback, so one the handler adds runs after it."""
        task = asyncio.current_task()
        if task is None:  # not in a handler's task: nothing to wait for
            send()
            return

        def after(_: asyncio.Task[Any]) -> None:
            try:
                send()
            except Exception as exc:  # the reply is out; what follows is not worth a traceback
                log.warning("a message after the reply could not be sent: %s", exc)

        task.add_done_callback(after)

    def report_completion(
        self,
        params: types.InlineCompletionParams,
        version: int | None,
        suggestion: Suggestion | None,
        ms: float,
    ) -> None:
        """Send `$/headstart/completionReport`: what one inline completion cost, stage by
        stage (log.completionReports), so a benchmark can break its latency down."""
        report: dict[str, Any] = {
            "uri": params.text_document.uri,
            "version": version,
            "line": params.position.line,
            "character": params.position.character,
            "serverMs": ms,
            "answered": suggestion is not None,
            "background": self.throttle.state,
            "prompts": "small" if self.small_prompts() else "full",
            "prefetch": self.prefetch_use.state,
        }
        if suggestion is not None:
            report |= {
                "mode": suggestion.mode.value,
                "chars": len(suggestion.text),
                "cached": "cached" in suggestion.timings_ms,
                "joined": "joined" in suggestion.timings_ms,
                "timingsMs": suggestion.timings_ms,
                "resumes": suggestion.resumes,
                "chunks": suggestion.chunks,
                "error": suggestion.error,
            }
            if self.settings.log.completion_reports == "requests" and suggestion.request:
                report["request"] = dataclasses.asdict(suggestion.request)
                report["bodyFields"] = {  # what the body carried (off once refused)
                    "tokenIds": self.backend.sends_token_ids,
                    "priority": self.backend.sends_priority,
                    "grammar": self.backend.sends_healing_grammar,
                }
        self.protocol.notify(COMPLETION_REPORT, report)

    def report_backend(
        self, error: str | None, latency_ms: float | None = None, model: str | None = None
    ) -> None:
        """Send `$/headstart/status`: did the backend answer, how long the model path took."""
        status = {"backendOk": error is None, "backendUrl": self.settings.backend.url}
        status |= {"model": model, "error": error, "latencyMs": latency_ms}
        self.protocol.notify(STATUS, status)

    def probe_backend(self) -> None:
        """Ask the backend for its model in the background, so the editor knows at once."""

        async def probe() -> None:
            try:
                model = await self.backend.model()
            except BackendError as exc:  # not a failed completion: each request tries again
                log.info("start-up check: no answer yet (%s); each request tries again", exc)
                self.report_backend(str(exc))
            else:
                self.report_backend(None, model=model.id)

        self._probe = asyncio.create_task(probe())

    def start_indexing(self) -> None:
        """Index the workspace in the background, with progress in the editor if it can."""
        self._indexing = asyncio.create_task(self._index_workspace())

    async def _index_workspace(self) -> None:
        window = self.client_capabilities.window
        token = f"headstart-index-{uuid.uuid4()}"
        show = bool(window and window.work_done_progress)
        if show:
            try:
                await self.work_done_progress.create_async(token)
            except Exception as exc:  # the client may refuse; indexing goes on regardless
                log.debug("no progress for indexing: %s", exc)
                show = False

        def report(message: str, percentage: int) -> None:
            if show:
                self.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=message, percentage=percentage)
                )

        if show:
            self.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="Headstart: indexing", percentage=0)
            )
        cache_dir = Path(self.settings.cache_dir) if self.settings.cache_dir else None
        try:
            await self.project.build(self.workspace_roots(), cache_dir, report)
        finally:
            if show:
                files = sum(len(index.records) for index in self.project.indexes.values())
                self.work_done_progress.end(
                    token, types.WorkDoneProgressEnd(message=f"{files} files indexed")
                )

    async def watch_files(self) -> None:
        """Ask the editor to report file changes on disk, where it can register that."""
        workspace = self.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if not (watched and watched.dynamic_registration):
            log.info(
                "the editor cannot watch files for Headstart; files changed outside it are "
                "re-read at the next start"
            )
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
        )
        registration = types.Registration(
            id=f"headstart-watch-{uuid.uuid4()}",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        try:
            await self.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:
            log.warning("the editor refused to watch files for Headstart: %s", exc)

    async def stop_indexing(self) -> None:
        self.sync.close()
        self.project.stop()
        if self._indexing is not None and not self._indexing.done():
            self._indexing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._indexing
        self.project.close()

    def configure_logging(self) -> None:
        configure_logging(self.settings.log.level, self.settings.log.file)

    def start_logging(self) -> None:
        """Logging as the environment says, before the editor connects. A log file that
        cannot be written (HEADSTART_LOG_FILE) is left out, so the server still starts;
        `initialize` tries it again and tells the editor."""
        try:
            self.configure_logging()
        except OSError as exc:
            log_settings = self.settings.log.model_copy(update={"file": None})
            self.settings = self.settings.model_copy(update={"log": log_settings})
            self.configure_logging()
            log.error("log.file: cannot write %s (%s)", exc.filename, exc.strerror or exc)

    def _request_trace(self) -> RequestTrace | None:
        path = self.settings.log.request_trace
        return RequestTrace(Path(path).expanduser()) if path else None

    def _follow_request_trace(self) -> None:
        """Start, move or stop tracing requests as `log.requestTrace` now says."""
        trace, current = self._request_trace(), self.backend.trace
        if (trace and trace.path) != (current and current.path):
            if current is not None:
                current.close()
            self.backend.trace = trace

    def workspace_roots(self) -> list[Path]:
        roots = [uri_to_path(f.uri) for f in self.workspace.folders.values()]
        if not roots and self.workspace.root_uri:
            roots = [uri_to_path(self.workspace.root_uri)]
        return [root for root in roots if root is not None]

    def cursor_context(self, uri: str, position: types.Position) -> CursorContext | None:
        """The document text and cursor offset, or None when completion is off for it."""
        # pygls keys open documents by the unquoted URI ("my%20file.py" is "my file.py")
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None:
            raise JsonRpcInvalidParams(f"document {uri} is not open (send didOpen first)")
        if not self.settings.completion.enabled_for(document.language_id or ""):
            return None
        if self.unsuitable(document):
            return None
        offset = checked_offset(document, position)
        path = uri_to_path(uri)
        roots = self.workspace_roots()
        language = from_language_id(document.language_id or "")
        place = self.project.locate(path) if path is not None else None
        if path is not None and path != self.project.active:
            self.project.activate(path)
        if place is None:
            return CursorContext(
                text=document.source,
                offset=offset,
                file_path=display_path(path, roots) if path else uri.rsplit("/", 1)[-1],
                repo_name=roots[0].name if roots else "workspace",
                language=language,
            )
        language = language or language_for(PurePosixPath(place.relative))
        return CursorContext(
            text=document.source,
            offset=offset,
            file_path=place.relative,
            repo_name=place.root.path.name,
            language=language,
            builder=place.root.builder,
            tree=self.trees.current(document.uri, document.source, language),
        )

    def parse_opened(self, uri: str) -> None:
        """Parse a document as it opens, beside the cache queue's preparing: until its first
        edit, a completion anywhere in it reads this tree instead of parsing its window
        (`DocumentTrees.current`); semantic tokens, code actions and the project cache's
        outline of it keep it current."""
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None or self.unsuitable(document):
            return
        path = uri_to_path(uri)
        language = from_language_id(document.language_id or "")
        if language is None and path is not None:
            language = language_for(PurePosixPath(path.name))
        if language is not None:
            self.trees.tree(document.uri, document.source, language)

    def private_reason(self, uri: str) -> str | None:
        """Why the document must never reach the model (server.workspace.privacy)."""
        if uri not in self.private:
            path = uri_to_path(uri)
            self.private[uri] = private_reason(path, self.workspace_roots()) if path else None
        return self.private[uri]

    def unsuitable(self, document: TextDocument) -> bool:
        """Private, huge or binary documents get no completions, with one log line each."""
        source = document.source
        reason = None
        if private := self.private_reason(document.uri):
            reason = f"it stays private: {private}"
        elif len(source) > self.settings.completion.max_file_bytes:
            reason = f"larger than {self.settings.completion.max_file_bytes} characters"
        elif "\x00" in source[:8192]:
            reason = "binary content (NUL bytes)"
        if reason and document.uri not in self.skipped_documents:
            self.skipped_documents.add(document.uri)
            log.warning("no completions for %s: %s", document.uri, reason)
        return reason is not None

    async def suggest(self, uri: str, ctx: CursorContext | None) -> Suggestion | None:
        """The suggestion at `ctx`, or None if completion is off or a newer request won."""
        if ctx is None or self.local.waiting():
            return None
        completion = self.completion()
        reuse = completion.reuse_typed_suggestions
        if reuse and (cached := self.from_shown(uri, ctx, "cached")) is not None:
            self.latest.cancel(uri)
            return cached
        self.stop_following(uri)
        join = reuse and completion.join_in_flight
        waited_ms = 0.0
        if join:
            started = time.perf_counter()
            with tracing.span(JOIN_SPAN) as span:
                joined = await self.latest.join(
                    uri, lambda earlier: types_on(earlier, ctx), JOIN_WAIT_S, LINGER_S
                )
                span.set("headstart.joined", joined.value)
            if joined is Joined.SUPERSEDED:
                return None  # a newer keystroke came while this one waited
            if joined is Joined.ENDED and (answer := self.from_shown(uri, ctx, "joined", started)):
                return answer
            waited_ms = (time.perf_counter() - started) * 1000 if joined is not Joined.NONE else 0
        noted = NOTE.set(self.trace_note(uri, ctx))
        try:
            suggestion = await self.latest.run(
                uri,
                self.from_model(uri, ctx, completion),
                tag=ctx,
                linger_s=LINGER_S if join else 0,
            )
        finally:
            NOTE.reset(noted)
        if waited_ms and suggestion is not None:
            suggestion.timings_ms["join_wait"] = waited_ms  # joined, and it did not answer
        if suggestion is not None:
            timings = ", ".join(f"{k} {v:.1f} ms" for k, v in suggestion.timings_ms.items())
            resumed = f", {suggestion.resumes} resumes" if suggestion.resumes else ""
            log.debug(
                "%s %s: %d chars (%s%s)",
                uri,
                suggestion.mode.value,
                len(suggestion.text),
                timings,
                resumed,
            )
        return suggestion

    def trace_note(self, uri: str, ctx: CursorContext) -> dict[str, Any] | None:
        """What the request trace says of a keystroke's model request beyond its body:
        `typesOn` when it types on the last one asked for this document. Nothing is
        compared or kept while no trace is written (`log.requestTrace`)."""
        if self.backend.trace is None:
            return None
        previous, self.last_asked[uri] = self.last_asked.get(uri), ctx
        return {"typesOn": True} if previous is not None and types_on(previous, ctx) else None

    def from_shown(
        self, uri: str, ctx: CursorContext, how: str, started: float | None = None
    ) -> Suggestion | None:
        """The rest of a suggestion shown here that the user is typing, if any: `how` names
        the path in the timings (`cached`, or `joined` after waiting for a running request
        since `started`)."""
        looked = time.perf_counter()
        hit = self.shown.lookup(uri, ctx.text, ctx.offset)
        if hit is None:
            return None
        self.prefetch_use.served(uri, hit.rest, hit.typed)
        elapsed_ms = (time.perf_counter() - (started or looked)) * 1000
        log.debug(
            "%s: served from %s (%d typed, %d left, %.3f ms)",
            uri,
            SERVED_FROM[how],
            hit.typed,
            len(hit.rest),
            elapsed_ms,
        )
        rest = cut_for_cursor(hit.rest, ctx) if hit.meta is Mode.LINE else hit.rest
        return Suggestion(text=rest, mode=hit.meta, timings_ms={how: elapsed_ms})

    async def from_model(
        self, uri: str, ctx: CursorContext, completion: CompletionSettings
    ) -> Suggestion:
        """A model request's suggestion, remembered for typing that follows (and for a
        later keystroke that joins this request after its own editor request was
        cancelled), then continued or prefetched in the background."""
        self.prefetch_use.moved_on(uri)
        suggestion = await self.completer.complete(ctx, completion)
        self.report_backend(suggestion.error, suggestion.timings_ms.get("total"))
        first_chunk_ms = suggestion.timings_ms.get("first_chunk")
        if first_chunk_ms is not None and suggestion.error is None:
            self.throttle.observe(first_chunk_ms)
        if completion.reuse_typed_suggestions and suggestion.error is None:
            self.shown.remember(uri, ctx.text, ctx.offset, suggestion.text, suggestion.mode)
        if suggestion.more is not None:
            self.follow(uri, ctx, suggestion.text, suggestion.more)
        elif self.prefetches(suggestion):
            self.prefetch(uri, ctx, suggestion.text)
        return suggestion

    def completion(self) -> CompletionSettings:
        """The completion settings for a keystroke's request: while the throttle pauses
        speculative work, without the background continuation; from then until the
        backend has been fast for a while, with the smaller budget for prompts under load."""
        completion = self.settings.completion
        update: dict[str, Any] = {}
        if self.throttle.paused:
            update["continue_in_background"] = False
        if self.small_prompts():
            update["context_tokens"] = completion.context_tokens_under_load
        return completion.model_copy(update=update) if update else completion

    def small_prompts(self) -> bool:
        """Whether keystroke prompts now get `contextTokensUnderLoad`: the throttle says
        the backend is overloaded and that budget is a smaller one (0 turns it off)."""
        completion = self.settings.completion
        return self.throttle.small_prompts and (
            0 < completion.context_tokens_under_load < completion.context_tokens
        )

    def follow(self, uri: str, ctx: CursorContext, shown: str, more: asyncio.Task[str]) -> None:
        """Remember the lines that follow a one-line suggestion when its stream ends, so
        that accepting the line is followed at once by the next (no model request)."""
        self.stop_following(uri)
        self.following[uri] = more

        def done(task: asyncio.Task[str]) -> None:
            if self.following.get(uri) is task:
                del self.following[uri]
            if task.cancelled() or task.exception() is not None:
                return
            block = task.result()
            if block.startswith(shown) and len(block) > len(shown):
                self.shown.remember(uri, ctx.text, ctx.offset, block, Mode.LINE)
                log.debug(
                    "%s: %d more lines of the suggestion, continued in the background",
                    uri,
                    block.count("\n"),
                )

        more.add_done_callback(done)

    def prefetches(self, suggestion: Suggestion) -> bool:
        """A shown suggestion from the model is followed by a prefetch (when the typed
        reuse that would serve it is on)."""
        completion = self.settings.completion
        return (
            not self.throttle.paused
            and completion.prefetch
            and completion.reuse_typed_suggestions
            and bool(suggestion.text)
            and suggestion.error is None
            and self.prefetch_use.wanted()  # last: it counts the prefetches asked for
        )

    def prefetch(self, uri: str, ctx: CursorContext, shown: str) -> None:
        """Ask now for the suggestion that would follow the acceptance of `shown`, and
        remember it for the text as it will be then (one speculative request per
        document; a request that misses the cache cancels it)."""
        self.stop_following(uri)
        accepted = dataclasses.replace(
            ctx,
            text=ctx.text[: ctx.offset] + shown + ctx.text[ctx.offset :],
            offset=ctx.offset + len(shown),
        )
        settings = self.settings.completion.model_copy(update={"continue_in_background": False})
        context = contextvars.copy_context()
        context.run(NOTE.set, None)  # a prefetch types on nothing
        job = self.completer.complete(accepted, settings, Priority.PREFETCH)
        if tracing.enabled():
            job = traced_prefetch(job)
        task = asyncio.create_task(job, context=context)
        self.following[uri] = task

        def done(task: asyncio.Task[Suggestion]) -> None:
            if self.following.get(uri) is task:
                del self.following[uri]
            failed = task.cancelled() or task.exception() is not None
            result = None if failed else task.result()
            if result is None or not result.text or result.error is not None:
                self.prefetch_use.wasted()  # the user typed on first, or nothing came
                return
            self.shown.remember(uri, accepted.text, accepted.offset, result.text, result.mode)
            self.prefetch_use.ready(uri, result.text)
            log.debug("%s: the suggestion after this one is ready (prefetched)", uri)

        task.add_done_callback(done)

    def stop_following(self, uri: str) -> None:
        task = self.following.pop(uri, None)
        if task is not None:
            task.cancel()


JOIN_SPAN = "headstart.join.wait"
PREFETCH_SPAN = "headstart.prefetch"


async def traced_prefetch(job: Coroutine[Any, Any, Suggestion]) -> Suggestion:
    """A prefetch in a trace of its own, linked to the keystroke's that asked for it: it
    goes on after that keystroke was answered."""
    with tracing.root_span(PREFETCH_SPAN, {"headstart.priority": "prefetch"}, kind="internal"):
        return await job


def checked_offset(document: TextDocument, position: types.Position) -> int:
    """The code-point offset of a client position; an error naming it if it is outside.

    As pygls's `offset_at_position` computes it, from one split of the document into lines
    (each access to `TextDocument.lines` splits it again: pygls's method took three, about
    1 ms of every request on a 100 KB file)."""
    lines = document.lines
    if position.line > len(lines) or position.line < 0 or position.character < 0:
        raise JsonRpcInvalidParams(
            f"position {position.line}:{position.character} is outside the document "
            f"({len(lines)} lines)"
        )
    if position.line < len(lines):
        line = lines[position.line].rstrip("\r\n")
        width = document.position_codec.client_num_units(line)
        if position.character > width:
            raise JsonRpcInvalidParams(
                f"position {position.line}:{position.character} is past the end of the line "
                f"({width} characters)"
            )
    elif position.character > 0:
        raise JsonRpcInvalidParams(f"position {position.line}:{position.character} is past the end")
    at = document.position_codec.position_from_client_units(lines, position)
    return at.character + sum(map(len, lines[: at.line]))
