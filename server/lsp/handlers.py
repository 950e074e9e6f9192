"""The LSP handlers: thin pygls features that convert LSP types and call into LSP-free code.

State lives on `HeadstartServer` (server.lsp.language_server); each handler checks its input
and delegates. Bad input gets a clear error in the reply or the log, never a crash.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from cache.paths import uri_to_path
from cache.secrets import warm_up as compile_secret_rules
from server import __version__, tracing
from server.completion.request import Suggestion
from server.config import SECTION, SettingsError, load_settings
from server.features.refactor import ACTION_KINDS
from server.features.semantic_tokens.legend import FULL_LEGEND
from server.lsp import contracts, features
from server.lsp.internals import log_internals
from server.lsp.language_server import SERVED_FROM, HeadstartServer
from server.lsp.logs import attach_editor
from server.lsp.request_spans import CURSOR_SPAN, keystroke_span, note_synced

log = logging.getLogger(__name__)


server = HeadstartServer()
open_contracts = contracts.OpenContracts(server)
"""OpenAPI documents: their diagnostics and generate actions (server.lsp.contracts)."""


@server.feature(types.INITIALIZE)
async def initialize(ls: HeadstartServer, params: types.InitializeParams) -> None:
    attach_editor(ls, ls.settings.log.level)
    ls.init_options = initial_options(params.initialization_options)
    await ls.apply_settings()
    ls.legend = features.client_legend(params.capabilities)
    SEMANTIC_LEGEND.token_types = list(ls.legend.token_types)  # announced after this handler
    SEMANTIC_LEGEND.token_modifiers = list(ls.legend.token_modifiers)
    client = params.client_info.name if params.client_info else "unknown client"
    ls.client_name = client
    read_by = f", stdin read by {ls.stdin_read_by}" if ls.stdin_read_by else ""
    log.info("headstart %s started for %s%s", __version__, client, read_by)
    # The secret rules compile here, before the editor can type: RE2 holds the GIL while
    # it compiles (0.2-0.9 s), so compiled by the index's thread they stalled the keys.
    compile_secret_rules()


def initial_options(options: object) -> dict[str, Any]:
    """The initializationOptions (or their `headstart` section) if valid, else {}.

    Bad ones are logged and dropped rather than kept: every later settings update is
    merged on top of them, and would be rejected for their sake too.
    """
    if isinstance(options, dict) and SECTION in options:
        options = options[SECTION]
    if options is None:
        return {}
    if not isinstance(options, dict):
        log.error(
            "initializationOptions must be an object, got %s; using the defaults",
            type(options).__name__,
        )
        return {}
    try:
        load_settings(options, environ={})
    except SettingsError as exc:
        log.error("initializationOptions ignored, using the defaults: %s", exc)
        return {}
    return options


@server.feature(types.INITIALIZED)
async def initialized(ls: HeadstartServer, params: types.InitializedParams) -> None:
    await pull_configuration(ls)
    ls.probe_backend()
    if ls.internals_log is None:
        ls.internals_log = asyncio.create_task(log_internals(ls))
    ls.start_indexing()
    await ls.watch_files()
    await ls.local.enable()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    ls: HeadstartServer, params: types.DidChangeConfigurationParams
) -> None:
    backend = ls.backend
    pushed = params.settings
    if isinstance(pushed, dict) and SECTION in pushed:
        await ls.apply_settings(pushed[SECTION])
    else:
        await pull_configuration(ls)
    if ls.backend is not backend:
        ls.probe_backend()


CONFIGURATION_WAIT_S = 2.0
"""How long the server waits for the editor's settings before carrying on without them
(a client that answers null, which pygls cannot read, never completes the request)."""


async def pull_configuration(ls: HeadstartServer) -> None:
    """Ask the client for the `headstart` section, where the client supports that."""
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        items = await asyncio.wait_for(
            ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            ),
            CONFIGURATION_WAIT_S,
        )
    except Exception as exc:
        what = (
            f"no answer in {CONFIGURATION_WAIT_S:.0f} s (or one that is not a list)"
            if isinstance(exc, TimeoutError)
            else f"an error ({exc})"
        )
        log.warning(
            "the editor's workspace/configuration gave %s; going on with initializationOptions, "
            "HEADSTART_* variables and the defaults",
            what,
        )
        return
    section = items[0] if items else None
    if section is None or isinstance(section, dict):
        await ls.apply_settings(section)
    else:
        log.error("the %r settings section must be an object, got %r", SECTION, section)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: HeadstartServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.parse_opened(uri)  # first: the project cache outlines this tree
    path = uri_to_path(uri)
    if path is not None:
        ls.sync.opened(path, params.text_document.text, uri)
    open_contracts.changed(uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: HeadstartServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    document = ls.workspace.text_documents.get(unquote(uri))
    if path is not None and document is not None:
        ls.sync.changed(path, document.source, document.uri)
    if tracing.enabled():
        note_synced(ls, uri, params.text_document.version)
    open_contracts.changed(uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: HeadstartServer, params: types.DidSaveTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if path is not None:
        ls.sync.saved(path)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: HeadstartServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.skipped_documents.discard(params.text_document.uri)
    ls.skipped_documents.discard(features.TOKENS_SKIPPED + params.text_document.uri)
    ls.private.pop(params.text_document.uri, None)
    ls.shown.forget(params.text_document.uri)
    ls.prefetch_use.forget(params.text_document.uri)
    ls.last_asked.pop(params.text_document.uri, None)
    ls.synced.pop(params.text_document.uri, None)
    ls.stop_following(params.text_document.uri)
    ls.semantic_tokens.forget(params.text_document.uri)
    ls.trees.forget(params.text_document.uri)
    open_contracts.closed(params.text_document.uri)
    path = uri_to_path(params.text_document.uri)
    if path is not None:
        ls.sync.closed(path)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(
    ls: HeadstartServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [uri_to_path(change.uri) for change in params.changes]
    ls.sync.disk_changed([path for path in paths if path is not None])
    ls.private.clear()  # an ignore file may have changed


def _served_from(suggestion: Suggestion) -> str:
    served = [where for how, where in SERVED_FROM.items() if how in suggestion.timings_ms]
    return f", from {served[0]}" if served else ""


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline_completion(
    ls: HeadstartServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList | None:
    started = time.perf_counter()
    uri = params.text_document.uri
    document = ls.workspace.text_documents.get(uri)
    version = document.version if document is not None else None
    with keystroke_span(ls, types.TEXT_DOCUMENT_INLINE_COMPLETION, uri, version) as keystroke:
        with tracing.span(CURSOR_SPAN):
            ctx = ls.cursor_context(uri, params.position)
        suggestion = await ls.suggest(uri, ctx)
        keystroke.answered(ctx, suggestion)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if ls.settings.log.completion_reports != "off":
        ls.after_reply(
            functools.partial(ls.report_completion, params, version, suggestion, elapsed_ms)
        )
    if suggestion is None or not suggestion.text:
        log.info("inline completion in %.2f ms (no suggestion)", elapsed_ms)
        return types.InlineCompletionList(items=[])
    log.info(
        "inline completion in %.2f ms (%s, %d chars%s)",
        elapsed_ms,
        suggestion.mode.value,
        len(suggestion.text),
        _served_from(suggestion),
    )
    here = types.Range(start=params.position, end=params.position)
    return types.InlineCompletionList(
        items=[types.InlineCompletionItem(insert_text=suggestion.text, range=here)]
    )


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
async def completion(ls: HeadstartServer, params: types.CompletionParams) -> types.CompletionList:
    """The fallback for clients without inline completion: one item, the suggestion.

    The item replaces the identifier before the cursor with itself plus the suggestion,
    so that clients which filter by the typed word keep it.
    """
    empty = types.CompletionList(is_incomplete=True, items=[])
    text_document = ls.client_capabilities.text_document
    if text_document is not None and text_document.inline_completion is not None:
        return empty
    uri = params.text_document.uri
    document = ls.workspace.text_documents.get(uri)
    version = document.version if document is not None else None
    with keystroke_span(ls, types.TEXT_DOCUMENT_COMPLETION, uri, version) as keystroke:
        with tracing.span(CURSOR_SPAN):
            ctx = ls.cursor_context(uri, params.position)
        suggestion = await ls.suggest(uri, ctx)
        keystroke.answered(ctx, suggestion)
    if ctx is None or suggestion is None or not suggestion.text:
        return empty
    word = identifier_before(ctx.text, ctx.offset)
    document = ls.workspace.get_text_document(params.text_document.uri)
    start = document.client_position_at_offset(ctx.offset - len(word))
    label = (word + suggestion.text).strip().splitlines()[0]
    item = types.CompletionItem(
        label=label[:80],
        kind=types.CompletionItemKind.Text,
        detail="Headstart",
        filter_text=word + suggestion.text,
        text_edit=types.TextEdit(
            range=types.Range(start=start, end=params.position), new_text=word + suggestion.text
        ),
        insert_text_format=types.InsertTextFormat.PlainText,
        sort_text="0",
    )
    return types.CompletionList(is_incomplete=True, items=[item])


def identifier_before(text: str, offset: int) -> str:
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return text[start:offset]


# --- refactor code actions, semantic tokens, hover: server.lsp.features does the work ---------


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[*ACTION_KINDS.values(), contracts.GENERATE_KIND],
        resolve_provider=True,
    ),
)
async def code_action(
    ls: HeadstartServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    refactorings = await features.code_actions(ls, params)
    return refactorings + contracts.code_actions(ls, open_contracts, params)


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: HeadstartServer, params: types.CodeAction) -> types.CodeAction:
    return await features.resolve_code_action(ls, params)


@server.command(features.REWRITE_COMMAND)
async def rewrite(ls: HeadstartServer, *arguments: Any) -> dict[str, Any]:
    return await features.rewrite_command(ls, arguments)


@server.command(contracts.GENERATE_COMMAND)
async def generate_from_contract(ls: HeadstartServer, *arguments: Any) -> dict[str, Any]:
    return await contracts.generate_command(ls, open_contracts, arguments)


SEMANTIC_LEGEND = types.SemanticTokensLegend(
    token_types=list(FULL_LEGEND.token_types), token_modifiers=list(FULL_LEGEND.token_modifiers)
)
"""Registered with the features below; `initialize` narrows it to what the client supports."""


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, SEMANTIC_LEGEND)
async def semantic_tokens_full(
    ls: HeadstartServer, params: types.SemanticTokensParams
) -> types.SemanticTokens | None:
    return await features.semantic_tokens_full(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA, SEMANTIC_LEGEND)
async def semantic_tokens_delta(
    ls: HeadstartServer, params: types.SemanticTokensDeltaParams
) -> types.SemanticTokens | types.SemanticTokensDelta | None:
    return await features.semantic_tokens_delta(
        ls, params.text_document.uri, params.previous_result_id
    )


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, SEMANTIC_LEGEND)
async def semantic_tokens_range(
    ls: HeadstartServer, params: types.SemanticTokensRangeParams
) -> types.SemanticTokens | None:
    return await features.semantic_tokens_range(ls, params.text_document.uri, params.range)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: HeadstartServer, params: types.HoverParams) -> types.Hover | None:
    return features.hover(ls, params)


@server.feature(types.SHUTDOWN)
async def shutdown(ls: HeadstartServer, params: None) -> None:
    ls.shutdown_requested = True
    for task in (ls._probe, ls.internals_log):
        if task is not None:
            task.cancel()
    for uri in list(ls.following):
        ls.stop_following(uri)
    await ls.local.close()
    await ls.latest.cancel_all()
    await open_contracts.close()
    await ls.stop_indexing()
    await ls.backend.aclose()
    if tracing.enabled():
        await asyncio.to_thread(tracing.flush, TRACE_FLUSH_S)
    log.info("shut down")


TRACE_FLUSH_S = 2.0
"""How long shutdown waits for the last spans to be exported (the SDK tries again at exit)."""
