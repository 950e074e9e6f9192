"""The editor side of refactor code actions, semantic tokens and hovers: LSP types in and
out, progress, cancellation and messages. The work itself is LSP-free, in
`server.features` (refactor, semantic_tokens, hover); the handlers in
`server.lsp.handlers` are one call into this module each.

Refactor flow: `textDocument/codeAction` lists the actions at once (no model call), each
with `data` naming the document version, the range asked about and a hash of the target's
text; `codeAction/resolve` finds the target again (refusing it if the code changed
meanwhile), asks the model with work-done progress the user can cancel, validates the
answer and returns it as the action's WorkspaceEdit. "Rewrite with an instruction" is a
command, `headstart.rewrite`, whose argument the client completes with the user's
instruction; it applies its edit through `workspace/applyEdit`. Every failure is an error
reply and a message in the editor that says why; nothing is applied then.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import xxhash
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.workspace import TextDocument

from cache.languages import from_language_id, language_for
from cache.paths import path_to_uri, uri_to_path
from server.completion.context import ContextBuilder
from server.completion.request import context_that_fits
from server.features import hover as hovers
from server.features import refactor
from server.features.refactor import RefactorError, RefactorKind, Replacement, Target
from server.features.semantic_tokens.document import SUPPORTED_LANGUAGES
from server.features.semantic_tokens.encoding import Columns, encode
from server.features.semantic_tokens.encoding import delta as tokens_delta
from server.features.semantic_tokens.legend import Legend
from server.features.semantic_tokens.model import Token
from server.features.semantic_tokens.project import project_names
from server.lsp.language_server import HeadstartServer, checked_offset

log = logging.getLogger(__name__)

REWRITE_COMMAND = "headstart.rewrite"
REQUEST_FAILED = -32803
"""LSP's RequestFailed: the request was valid, but the server could not do it."""


class RefactorFailed(JsonRpcException):
    CODE = REQUEST_FAILED


_converter = get_converter()


def document_of(ls: HeadstartServer, uri: str) -> TextDocument:
    # pygls keys open documents by the unquoted URI ("my%20file.py" is "my file.py")
    document: TextDocument | None = ls.workspace.text_documents.get(unquote(uri))
    if document is None:
        raise JsonRpcInvalidParams(f"document {uri} is not open (send didOpen first)")
    return document


def language_of(document: TextDocument) -> str | None:
    language = from_language_id(document.language_id or "")
    if language is None:
        path = uri_to_path(document.uri)
        language = language_for(PurePosixPath(path.name)) if path is not None else None
    return language


@dataclass(frozen=True, slots=True)
class Place:
    relative: str
    """The document's path relative to its workspace root (its name outside the roots)."""
    root: Path | None
    builder: ContextBuilder
    """Its root's context builder; one without an index outside the indexed roots."""

    @property
    def repo_name(self) -> str:
        return self.root.name if self.root is not None else "workspace"


def place_of(ls: HeadstartServer, document: TextDocument) -> Place:
    path = uri_to_path(document.uri)
    place = ls.project.locate(path) if path is not None else None
    if place is None:
        name = path.name if path is not None else document.uri.rsplit("/", 1)[-1]
        return Place(name, None, ContextBuilder(None))
    return Place(place.relative, place.root.path, place.root.builder)


def offsets(document: TextDocument, range_: types.Range) -> tuple[int, int]:
    start = checked_offset(document, range_.start)
    end = checked_offset(document, range_.end)
    if end < start:
        raise JsonRpcInvalidParams(
            f"range {range_.start.line}:{range_.start.character}-{range_.end.line}:"
            f"{range_.end.character} ends before it starts"
        )
    return start, end


def _digest(text: str) -> str:
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))


# --- code actions -------------------------------------------------------------------------------


async def code_actions(
    ls: HeadstartServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """The refactorings at the range, listed without calling the model. Editors ask on
    every cursor move: the document's tree is re-parsed incrementally, off the event loop."""
    document = document_of(ls, params.text_document.uri)
    start, end = offsets(document, params.range)
    if ls.unsuitable(document):  # private, huge or binary: no model call is ever made for it
        return []
    only = params.context.only
    capability = ls.client_capabilities.text_document
    code_action = capability.code_action if capability else None
    can_disable = bool(code_action and code_action.disabled_support)
    text = document.source
    language = language_of(document)
    max_lines = ls.settings.refactor.max_lines

    def listed() -> list[refactor.Offer]:
        tree = ls.trees.tree(document.uri, text, language) if language else None
        root = tree.root_node if tree is not None else None
        return refactor.offers(text, language, start, end, max_lines, root)

    found = await asyncio.to_thread(listed)
    actions = []
    for offer in found:
        kind = refactor.ACTION_KINDS[offer.kind]
        if only and not any(kind == k or kind.startswith(f"{k}.") for k in only):
            continue
        if offer.disabled and not can_disable:
            continue
        data = {
            "uri": params.text_document.uri,
            "version": document.version,
            "kind": offer.kind.value,
            "range": [start, end],
            "target": _digest(text[offer.target.start : offer.target.end]),
        }
        action = types.CodeAction(
            title=offer.title,
            kind=kind,
            disabled=types.CodeActionDisabled(reason=offer.disabled) if offer.disabled else None,
        )
        if offer.kind is RefactorKind.REWRITE:
            action.command = types.Command(
                title=offer.title,
                command=REWRITE_COMMAND,
                arguments=[{"uri": params.text_document.uri, "range": params.range}],
            )
        else:
            action.data = data
        actions.append(action)
    return actions


async def resolve_code_action(ls: HeadstartServer, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit, made by the model and checked; an error reply (and a
    message) saying why when there is none."""
    data = action.data
    if data is None and action.command is not None:
        return action  # rewrite with an instruction: its command does the work (VS Code asks)
    if not isinstance(data, dict) or "kind" not in data or "uri" not in data:
        raise JsonRpcInvalidParams("this code action was not made by Headstart (no data)")
    try:
        kind = RefactorKind(data["kind"])
        uri = str(data["uri"])
        start, end = (int(n) for n in data["range"])
        version = data.get("version")
        digest = str(data["target"])
    except (KeyError, TypeError, ValueError) as exc:
        raise JsonRpcInvalidParams(f"malformed Headstart code action data: {exc!r}") from None
    document = document_of(ls, uri)
    text = document.source
    target = None
    if document.version == version or version is None:
        target = _target(ls, document, kind, start, end)
    if target is None or _digest(text[target.start : target.end]) != digest:
        raise _failed(
            ls, "the code changed since this action was offered; ask for code actions again"
        )
    replacement = await _refactor(ls, document, kind, target, "", action.title)
    action.edit = _workspace_edit(ls, document, replacement)
    return action


async def rewrite_command(ls: HeadstartServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    """`headstart.rewrite {uri, range, instruction}`: rewrite the code at the range (or the
    function or class around it) as the instruction says, and apply it."""
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(
            f"{REWRITE_COMMAND} takes one argument, {{uri, range, instruction}}"
        )
    argument = arguments[0]
    instruction = argument.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise _failed(
            ls,
            f"{REWRITE_COMMAND} needs an instruction: the editor asks the user for it and "
            "adds it to the command's argument as `instruction` (see the README)",
            JsonRpcInvalidParams,
        )
    uri = argument.get("uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{REWRITE_COMMAND}: `uri` must be a document URI")
    try:
        range_ = _converter.structure(argument.get("range"), types.Range)
    except Exception:
        raise JsonRpcInvalidParams(
            f"{REWRITE_COMMAND}: `range` must be an LSP range, got {argument.get('range')!r}"
        ) from None
    document = document_of(ls, uri)
    start, end = offsets(document, range_)
    target = _target(ls, document, RefactorKind.REWRITE, start, end)
    if target is None:
        raise _failed(ls, "there is no function, class or selected code to rewrite here")
    title = f"Headstart: rewrite {target.label}"
    replacement = await _refactor(ls, document, RefactorKind.REWRITE, target, instruction, title)
    edit = _workspace_edit(ls, document, replacement)
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.apply_edit):
        raise _failed(ls, "the editor cannot apply edits the server sends (workspace/applyEdit)")
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=title)
    )
    if not result.applied:
        reason = result.failure_reason or "no reason given"
        raise _failed(ls, f"the editor did not apply the rewrite: {reason}")
    return {"applied": True}


def _target(
    ls: HeadstartServer, document: TextDocument, kind: RefactorKind, start: int, end: int
) -> Target | None:
    language = language_of(document)
    tree = ls.trees.tree(document.uri, document.source, language) if language else None
    root = tree.root_node if tree is not None else None
    return refactor.target_for(document.source, language, kind, start, end, root)


def _failed(
    ls: HeadstartServer, message: str, error: type[JsonRpcException] = RefactorFailed
) -> JsonRpcException:
    """The error to raise, after telling the user (editors may not show a failed resolve)."""
    text = f"Headstart: {message}"
    log.warning("refactor: %s", message)
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))
    return error(text)


async def _refactor(
    ls: HeadstartServer,
    document: TextDocument,
    kind: RefactorKind,
    target: Target,
    instruction: str,
    title: str,
) -> Replacement:
    """Ask the model for the refactoring, with progress, and check its answer."""
    language = language_of(document)
    if language is None:
        raise _failed(ls, "cannot refactor a document of an unknown language")
    if private := ls.private_reason(document.uri):
        raise _failed(ls, f"not sending this document to the model: {private}")
    settings = ls.settings.refactor
    text, version = document.source, document.version
    place = place_of(ls, document)
    started = time.perf_counter()
    try:
        prompting = await ls.completer.prompting(ls.settings.completion)
        count = prompting.counter.count
        model = await ls.backend.model()
        budget = context_that_fits(settings.context_tokens, settings.max_tokens, model)
        cap = int(budget * refactor.SNIPPET_SHARE)
        snippets = refactor.gather_snippets(
            place.builder, place.relative, text, target, language, cap, count
        )
        prompt = refactor.build_prompt(
            kind, target, text, language, place.relative, place.repo_name, snippets, instruction,
            budget=budget, count=count,
        )  # fmt: skip
        request = refactor.request_for(prompt, settings.max_tokens, 0.0)
        answer = await _with_progress(
            ls,
            title,
            lambda report: refactor.generate(
                ls.backend, request, settings.timeout_ms / 1000, report
            ),
        )
        replacement = await asyncio.to_thread(
            refactor.validate, kind, target, text, language, answer, place.relative
        )
    except RefactorError as exc:
        raise _failed(ls, f"{title.removeprefix('Headstart: ')}: {exc}") from None
    except Exception as exc:  # a backend that cannot list its model, ...
        if isinstance(exc, JsonRpcException):
            raise
        raise _failed(ls, f"{title.removeprefix('Headstart: ')}: {exc}") from None
    if document.version != version:
        raise _failed(ls, "the document changed while the model was writing; nothing applied")
    log.info(
        "%s: %d lines in %.0f ms", title, replacement.text.count("\n") + 1,
        (time.perf_counter() - started) * 1000,
    )  # fmt: skip
    return replacement


Report = Callable[[int, int], None]


async def _with_progress(
    ls: HeadstartServer, title: str, job: Callable[[Report], Awaitable[str]]
) -> str:
    """Run `job` with cancellable work-done progress where the client shows it; a cancel
    from the progress UI cancels the job (and so closes the model's stream)."""
    window = ls.client_capabilities.window
    token = f"headstart-refactor-{uuid.uuid4()}"
    show = bool(window and window.work_done_progress)
    if show:
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:
            log.debug("no progress for the refactoring: %s", exc)
            show = False
    last = 0.0

    def report(characters: int, lines: int) -> None:
        nonlocal last
        now = time.monotonic()
        if show and now - last >= 0.2:
            last = now
            ls.work_done_progress.report(
                token, types.WorkDoneProgressReport(message=f"{lines} lines written")
            )

    task: asyncio.Task[str] = asyncio.ensure_future(job(report))
    cancelled_by_user = False
    if show:
        ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title=title, cancellable=True, message="asking the model"),
        )
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:

            def on_cancel(done: Any) -> None:
                nonlocal cancelled_by_user
                if done.cancelled():
                    cancelled_by_user = True
                    task.get_loop().call_soon_threadsafe(task.cancel)

            future.add_done_callback(on_cancel)
    outcome = "failed"
    try:
        result = await task
        outcome = "done"
        return result
    except asyncio.CancelledError:
        outcome = "cancelled"
        if cancelled_by_user and not _cancelling():
            raise RefactorError("cancelled") from None
        raise
    finally:
        if not task.done():
            task.cancel()
        if show:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=outcome))
            ls.work_done_progress.tokens.pop(token, None)


def _cancelling() -> bool:
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def _workspace_edit(
    ls: HeadstartServer, document: TextDocument, replacement: Replacement
) -> types.WorkspaceEdit:
    """The edit, versioned where the client takes document changes (it then refuses it if
    the document moved on)."""
    range_ = types.Range(
        start=document.client_position_at_offset(replacement.start),
        end=document.client_position_at_offset(replacement.end),
    )
    edit = types.TextEdit(range=range_, new_text=replacement.text)
    workspace = ls.client_capabilities.workspace
    changes = workspace.workspace_edit if workspace else None
    if changes is not None and changes.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=document.uri, version=document.version
                    ),
                    edits=[edit],
                )
            ]
        )
    return types.WorkspaceEdit(changes={document.uri: [edit]})


# --- semantic tokens ----------------------------------------------------------------------------


def client_legend(capabilities: types.ClientCapabilities) -> Legend:
    text_document = capabilities.text_document
    tokens = text_document.semantic_tokens if text_document else None
    if tokens is None:
        return Legend.for_client(None, None)
    return Legend.for_client(tokens.token_types, tokens.token_modifiers)


TOKENS_SKIPPED = "tokens:"
"""`skipped_documents` key prefix of a document logged as too large for tokens."""
SEMANTIC_TOKENS_MAX_CHARS = 500_000
"""Larger documents get no semantic tokens: they cost about 2 µs a character (a 6 MB
file took 12 s), time the server's other requests would wait."""


async def _tokens(ls: HeadstartServer, uri: str) -> tuple[TextDocument, list[Token] | None]:
    """The document's tokens (None: a language without them, or a document too large).
    What the project says about its imported names is resolved here, on the event loop;
    the parse and the walk run in a worker thread."""
    document = document_of(ls, uri)
    language = language_of(document)
    if language not in SUPPORTED_LANGUAGES:
        return document, None
    if len(document.source) > SEMANTIC_TOKENS_MAX_CHARS:
        if TOKENS_SKIPPED + document.uri not in ls.skipped_documents:
            ls.skipped_documents.add(TOKENS_SKIPPED + document.uri)
            log.info(
                "no semantic tokens for %s: larger than %d characters",
                document.uri,
                SEMANTIC_TOKENS_MAX_CHARS,
            )
        return document, None
    assert language is not None
    text = document.source
    place = place_of(ls, document)
    names = project_names(place.builder, place.relative, text, language)
    found = await asyncio.to_thread(ls.semantic_tokens.tokens, document.uri, text, language, names)
    return document, found


def _encoding(ls: HeadstartServer) -> str:
    encoding = ls.workspace.position_encoding
    if isinstance(encoding, types.PositionEncodingKind):
        return str(encoding.value)
    return encoding or "utf-16"


async def semantic_tokens_full(ls: HeadstartServer, uri: str) -> types.SemanticTokens | None:
    document, found = await _tokens(ls, uri)
    if found is None:
        return None
    data = encode(found, ls.legend, Columns(document.source, _encoding(ls)))
    result = ls.semantic_tokens.remember(document.uri, data)
    return types.SemanticTokens(data=data, result_id=result.result_id)


async def semantic_tokens_delta(
    ls: HeadstartServer, uri: str, previous_id: str
) -> types.SemanticTokens | types.SemanticTokensDelta | None:
    document, found = await _tokens(ls, uri)
    if found is None:
        return None
    previous = ls.semantic_tokens.previous(document.uri, previous_id)
    data = encode(found, ls.legend, Columns(document.source, _encoding(ls)))
    result = ls.semantic_tokens.remember(document.uri, data)
    if previous is None:  # an id we no longer know: the whole result
        return types.SemanticTokens(data=data, result_id=result.result_id)
    start, count, inserted = tokens_delta(previous.data, data)
    edits = [types.SemanticTokensEdit(start=start, delete_count=count, data=inserted)]
    if count == 0 and not inserted:
        edits = []
    return types.SemanticTokensDelta(edits=edits, result_id=result.result_id)


async def semantic_tokens_range(
    ls: HeadstartServer, uri: str, range_: types.Range
) -> types.SemanticTokens | None:
    document = document_of(ls, uri)
    offsets(document, range_)
    document, found = await _tokens(ls, uri)
    if found is None:
        return None
    end = range_.end.line + (1 if range_.end.character > 0 else 0)
    lines = (range_.start.line, max(end, range_.start.line + 1))
    data = encode(found, ls.legend, Columns(document.source, _encoding(ls)), lines)
    return types.SemanticTokens(data=data)


# --- hover ------------------------------------------------------------------------------------


def hover(ls: HeadstartServer, params: types.HoverParams) -> types.Hover | None:
    """Where the name at the position is defined in another project file, and whether the
    completion context shows it now; None for anything else."""
    document = document_of(ls, params.text_document.uri)
    offset = checked_offset(document, params.position)
    place = place_of(ls, document)
    language = language_of(document)
    info = hovers.hover_at(place.builder, place.relative, document.source, offset, language)
    if info is None:
        return None
    capability = ls.client_capabilities.text_document
    formats = capability.hover.content_format if capability and capability.hover else None
    markdown = not formats or formats[0] == types.MarkupKind.Markdown
    link = None
    if place.root is not None:
        line = info.definition.start_line + 1 if info.definition is not None else 1
        link = f"{path_to_uri(place.root / info.path)}#L{line}"
    value = hovers.render(info, language, markdown, link)
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    return types.Hover(
        contents=types.MarkupContent(kind=kind, value=value),
        range=types.Range(
            start=document.client_position_at_offset(info.start),
            end=document.client_position_at_offset(info.end),
        ),
    )
