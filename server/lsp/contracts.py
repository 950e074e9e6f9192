"""The editor side of OpenAPI documents: their schema errors as diagnostics, and code
actions that generate a typed client from them into a WorkspaceEdit.

Diagnostics: didOpen and didChange only note the time (nothing is read on the keystroke
path); once typing has paused for `contracts.diagnosticsDelayMs`, the document is
detected (a few regular expressions) and, if it is an OpenAPI 3.x description, validated
in a worker process (server.features.contracts). A change that arrives meanwhile makes
the check run again before anything is published, so what is shown is always the
latest version's.

Actions: `textDocument/codeAction` lists one `source.headstart.generate.*` action per
target, each a `headstart.generateFromContract` command. The command runs the generator
on the saved document in a worker of its own, with cancellable work-done progress, then
applies the files through `workspace/applyEdit` under `<document folder>/generated/`:
new files are created, identical ones left alone, and files whose content would change
are replaced only after the user says so (window/showMessageRequest). Every failure is an
error reply and a message that says why; nothing is written then.

`$ref`s: the document may be a repository's, so both follow only refs inside it and
relative files inside the workspace folder holding it (server.aiapi.local_refs); any other
is a diagnostic at its line and makes the actions refuse, before anything is read.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.workspace import TextDocument

from cache.paths import path_to_uri, uri_to_path
from server.features import contracts
from server.features.contracts import (
    GENERATED_FOLDER,
    TARGETS,
    ContractKind,
    ContractWorkers,
    Detected,
    FilePlan,
    Generated,
    Problem,
    Target,
)
from server.lsp.features import RefactorFailed, document_of
from server.lsp.language_server import HeadstartServer

if TYPE_CHECKING:
    from server.aiapi.model_parts import ModelOptions

log = logging.getLogger(__name__)

GENERATE_COMMAND = "headstart.generateFromContract"
GENERATE_KIND = "source.headstart.generate"
"""The code action kind of every generate action (`source.headstart.generate.client.go`):
a source action, as it concerns the whole document."""
SOURCE = "headstart (OpenAPI)"
SWAGGER2 = (
    "Swagger 2.0 is not supported: Headstart reads OpenAPI 3.0 and 3.1 documents. Convert it "
    "first (for example `npx swagger2openapi DOC -o DOC3.yaml`)"
)
REPLACE = "Replace"
KEEP = "Keep them"
SUPERSEDE_AFTER_S = 2.0
"""A check that has run this long when the document changes is stopped (its worker with
it) rather than finished: its answer would be for text that is gone. A shorter one
finishes, which costs less than starting a worker again."""

T = TypeVar("T")


class OpenContracts:
    """Per open document, whether it is an OpenAPI description and its pending check."""

    def __init__(self, ls: HeadstartServer) -> None:
        self.ls = ls
        self.workers = ContractWorkers()
        self.changed_at: dict[str, float] = {}
        self.checks: dict[str, asyncio.Task[None]] = {}
        self.detected: dict[str, tuple[int | None, Detected | None]] = {}
        """Per document, the version detected and what it was (None: not a contract)."""
        self.shown: set[str] = set()
        """Documents with diagnostics published (to clear them when they go away)."""
        self.skipped: set[str] = set()
        self.running: dict[str, tuple[float, asyncio.Future[list[Problem]]]] = {}
        """Per document, the check in the worker now, and when it started."""
        self.generating = asyncio.Lock()

    def changed(self, uri: str) -> None:
        """didOpen or didChange: check the document once typing pauses."""
        document = self.ls.workspace.text_documents.get(unquote(uri))
        if document is None or not contracts.may_be_contract(uri, document.language_id):
            return
        self.changed_at[uri] = now = time.monotonic()
        running = self.running.get(uri)
        if running is not None and now - running[0] > SUPERSEDE_AFTER_S:
            running[1].cancel()
        task = self.checks.get(uri)
        if task is None or task.done():
            self.checks[uri] = asyncio.create_task(self._check(uri))

    def closed(self, uri: str) -> None:
        self.changed_at.pop(uri, None)
        self.detected.pop(uri, None)
        self.skipped.discard(uri)
        task = self.checks.pop(uri, None)
        if task is not None:
            task.cancel()
        if uri in self.shown:
            self.shown.discard(uri)
            self._publish(uri, None, [])
        checking = any(not task.done() for task in self.checks.values())
        if not checking and not any(kind for _, kind in self.detected.values()):
            self.workers.stop_checking()

    async def close(self) -> None:
        for task in self.checks.values():
            task.cancel()
        await self.workers.close()

    def detect(self, document: TextDocument) -> Detected | None:
        """What the document is (cached per version); None for anything but an OpenAPI
        or Swagger description, or one larger than `contracts.maxDocumentBytes`."""
        uri = document.uri
        cached = self.detected.get(uri)
        if cached is not None and cached[0] == document.version:
            return cached[1]
        found = None
        if contracts.may_be_contract(uri, document.language_id):
            text = document.source
            limit = self.ls.settings.contracts.max_document_bytes
            if len(text) > limit:
                if uri not in self.skipped:
                    self.skipped.add(uri)
                    log.warning("no OpenAPI diagnostics or actions for %s: larger than %d "
                                "characters (contracts.maxDocumentBytes)", uri, limit)  # fmt: skip
            else:
                found = contracts.detect(text)
        self.detected[uri] = (document.version, found)
        return found

    async def _check(self, uri: str) -> None:
        """Wait for typing to pause, check, and publish, unless it changed meanwhile."""
        while True:
            delay = self.ls.settings.contracts.diagnostics_delay_ms / 1000
            wait = self.changed_at.get(uri, 0.0) + delay - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            document = self.ls.workspace.text_documents.get(unquote(uri))
            if document is None:
                return
            asked = self.changed_at.get(uri)
            version = document.version
            try:
                diagnostics = await self._diagnose(document)
            except asyncio.CancelledError:
                if _cancelling():
                    raise  # the document closed, the server shuts down
                continue  # superseded by a change (`changed`)
            if self.changed_at.get(uri) != asked:
                continue  # typed on while it was checked: check the newer text
            contract = self.detected.get(uri, (None, None))[1] is not None
            if contract or uri in self.shown:  # a valid document's empty list says "checked"
                self._publish(uri, version, diagnostics)
            return

    async def _diagnose(self, document: TextDocument) -> list[types.Diagnostic]:
        detected = self.detect(document)
        if detected is None:
            return []
        text = document.source
        if detected.kind is ContractKind.SWAGGER2:
            information = types.DiagnosticSeverity.Information
            return [_diagnostic(document, text.split("\n"), detected.line, SWAGGER2, information)]
        if missing := contracts.missing_extra():
            if document.uri not in self.skipped:
                self.skipped.add(document.uri)
                log.warning("no OpenAPI diagnostics for %s: %s", document.uri, missing)
            return []
        path = uri_to_path(document.uri)
        name = str(path) if path is not None else PurePosixPath(document.uri).name
        folder = workspace_folder_of(self.ls, path)
        started = time.perf_counter()
        job = asyncio.ensure_future(self.workers.check(name, text, folder))
        self.running[document.uri] = (time.monotonic(), job)
        try:
            problems = await job
        except asyncio.CancelledError:
            log.info("OpenAPI validation of %s stopped: the document changed", document.uri)
            raise
        except Exception as exc:  # a timeout, a worker that died: say so where it shows
            reason = "took too long" if isinstance(exc, TimeoutError) else f"failed ({exc})"
            log.warning("OpenAPI validation of %s %s", document.uri, reason)
            message = f"Headstart could not validate this OpenAPI document: validation {reason}"
            warning = types.DiagnosticSeverity.Warning
            return [_diagnostic(document, text.split("\n"), detected.line, message, warning)]
        finally:
            self.running.pop(document.uri, None)
        log.info("OpenAPI validation of %s: %d problems in %.0f ms", document.uri,
                 len(problems), (time.perf_counter() - started) * 1000)  # fmt: skip
        lines = text.split("\n") if problems else []
        return [
            _diagnostic(document, lines, (p.line or detected.line + 1) - 1, p.describe())
            for p in problems
        ]

    def _publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        if diagnostics:
            self.shown.add(uri)
        else:
            self.shown.discard(uri)
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )


def _diagnostic(
    document: TextDocument,
    lines: list[str],
    line: int,
    message: str,
    severity: types.DiagnosticSeverity = types.DiagnosticSeverity.Error,
) -> types.Diagnostic:
    """A diagnostic over the line's text (its indentation left out) in `lines`, the text
    that was checked, split once (a split of GitHub's document takes a while)."""
    line = max(0, min(line, len(lines) - 1))
    text = lines[line].rstrip("\r")
    start = len(text) - len(text.lstrip())
    encoding = document.position_codec.encoding
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=_units(text[:start], encoding)),
            end=types.Position(line=line, character=_units(text, encoding)),
        ),
        message=message,
        severity=severity,
        source=SOURCE,
    )


def _units(text: str, encoding: str | None) -> int:
    """The length of `text` in the client's position units. pygls counts UTF-16 units one
    character at a time in Python: 2 s for the one line of a 30 MB minified JSON document."""
    if text.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# --- code actions -------------------------------------------------------------------------------


def code_actions(
    ls: HeadstartServer, open_contracts: OpenContracts, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """The generate actions of an OpenAPI document; disabled, with the reason, on a
    Swagger 2.0 one (where the client shows disabled actions)."""
    document = document_of(ls, params.text_document.uri)
    detected = open_contracts.detect(document)
    if detected is None:
        return []
    capability = ls.client_capabilities.text_document
    code_action = capability.code_action if capability else None
    can_disable = bool(code_action and code_action.disabled_support)
    swagger = detected.kind is ContractKind.SWAGGER2
    if swagger and not can_disable:
        return []
    only = params.context.only
    actions = []
    for target in TARGETS.values():
        kind = f"{GENERATE_KIND}.{target.name}"
        if only and not any(kind == k or kind.startswith(f"{k}.") for k in only):
            continue
        title = f"Headstart: {target.title}"
        actions.append(
            types.CodeAction(
                title=title,
                kind=kind,
                disabled=types.CodeActionDisabled(reason=SWAGGER2) if swagger else None,
                command=types.Command(
                    title=title,
                    command=GENERATE_COMMAND,
                    arguments=[{"uri": params.text_document.uri, "target": target.name}],
                ),
            )
        )
    return actions


# --- the generate command -----------------------------------------------------------------------


async def generate_command(
    ls: HeadstartServer, open_contracts: OpenContracts, arguments: tuple[Any, ...]
) -> dict[str, Any]:
    """`headstart.generateFromContract {uri, target}`: generate, then apply the files."""
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(f"{GENERATE_COMMAND} takes one argument, {{uri, target}}")
    uri, name = arguments[0].get("uri"), arguments[0].get("target")
    if not isinstance(uri, str) or name not in TARGETS:
        raise JsonRpcInvalidParams(
            f"{GENERATE_COMMAND}: `uri` must be a document URI and `target` one of "
            f"{', '.join(TARGETS)}"
        )
    target = TARGETS[name]
    title = f"Headstart: {target.title}"
    document = document_of(ls, uri)
    path = uri_to_path(uri)
    if path is None:
        raise _failed(ls, title, "save the document to a file first: the generators read it there")
    detected = open_contracts.detect(document)
    if detected is None:
        raise _failed(ls, title, f"{path.name} is not an OpenAPI 3.x document (no top-level "
                      "`openapi: 3.x` key)")  # fmt: skip
    if detected.kind is ContractKind.SWAGGER2:
        raise _failed(ls, title, SWAGGER2)
    if missing := contracts.missing_extra():
        raise _failed(ls, title, missing)
    workspace = ls.client_capabilities.workspace
    edits = workspace.workspace_edit if workspace else None
    operations = (edits.resource_operations if edits else None) or ()
    if types.ResourceOperationKind.Create not in operations:
        raise _failed(ls, title, "the editor cannot create files through a workspace edit "
                      f"(resourceOperations: create); run `headstart aiapi generate {path.name} "
                      f"--lang {target.language} --kinds {target.kind} --out {GENERATED_FOLDER}` "
                      "instead")  # fmt: skip
    try:
        saved = await asyncio.to_thread(path.read_bytes)
    except OSError as exc:
        raise _failed(ls, title, f"cannot read {path}: {exc.strerror or exc}") from None
    if saved.removeprefix(b"\xef\xbb\xbf") != document.source.encode("utf-8", "surrogatepass"):
        raise _failed(ls, title, f"save {path.name} first: the generators read the saved file",
                      types.MessageType.Warning)  # fmt: skip
    if open_contracts.generating.locked():
        log.info("%s waits for the generation before it", title)
    workspace_folder = workspace_folder_of(ls, path)
    model = model_options_of(ls)
    async with open_contracts.generating:
        generated = await _with_progress(
            ls,
            title,
            open_contracts.workers.generate(
                str(path),
                target,
                ls.settings.contracts.timeout_s,
                workspace_folder,
                model,
                react_query=ls.settings.aiapi.react_query,
            ),
            "generating" if model is None else "generating, then the model's parts",
        )
    folder = path.parent / GENERATED_FOLDER
    _refuse_failed(ls, title, path, generated)
    plan = await asyncio.to_thread(contracts.plan_files, folder, generated.files)
    summary = await _apply(ls, title, path, target, generated, plan)
    if generated.model_summary is not None:
        summary["modelParts"] = generated.model_summary
        log.info("%s: %s", title, generated.model_summary)
    return summary


def model_options_of(ls: HeadstartServer) -> ModelOptions | None:
    """With aiapi.withModel, how the generate worker asks for the model-written parts:
    the backend the server already uses (its local vLLM's URL in local mode) and its
    key, with the refactor actions' time limit. None without the setting."""
    if not ls.settings.aiapi.with_model:
        return None
    from server.aiapi.model_parts import ModelOptions

    return ModelOptions(
        ls.backend.settings,
        ls.settings.api_key(),
        request_timeout_s=ls.settings.refactor.timeout_ms / 1000,
    )


async def _with_progress(
    ls: HeadstartServer, title: str, job: Awaitable[T], doing: str = "generating"
) -> T:
    """Await `job` with cancellable work-done progress where the client shows it; a
    cancel from the progress UI stops the job's worker."""
    task = asyncio.ensure_future(job)
    window = ls.client_capabilities.window
    token = f"headstart-contract-{uuid.uuid4()}"
    show = bool(window and window.work_done_progress)
    if show:
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:
            log.debug("no progress for %s: %s", title, exc)
            show = False
    cancelled_by_user = False
    if show:
        ls.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, cancellable=True, message=doing)
        )
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:

            def on_cancel(done: Any) -> None:
                nonlocal cancelled_by_user
                if done.cancelled():
                    cancelled_by_user = True
                    task.get_loop().call_soon_threadsafe(task.cancel)

            future.add_done_callback(on_cancel)
    started = time.monotonic()
    outcome = "failed"
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=1.0)
            if done:
                break
            if show:
                seconds = time.monotonic() - started
                ls.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=f"{doing} ({seconds:.0f} s)")
                )
        result = task.result()
        outcome = "done"
        return result
    except asyncio.CancelledError:
        outcome = "cancelled"
        if cancelled_by_user and not _cancelling():
            raise _failed(ls, title, "cancelled; nothing written", types.MessageType.Info) from None
        raise
    except TimeoutError:
        limit = ls.settings.contracts.timeout_s
        raise _failed(ls, title, f"stopped after {limit} s (contracts.timeoutS); nothing "
                      "written") from None  # fmt: skip
    except JsonRpcException:
        raise
    except Exception as exc:  # the worker died (memory?) or could not start
        raise _failed(ls, title, f"the generator's process failed: {exc}") from None
    finally:
        if not task.done():
            task.cancel()
        if show:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=outcome))
            ls.work_done_progress.tokens.pop(token, None)


def workspace_folder_of(ls: HeadstartServer, path: Path | None) -> str | None:
    """The innermost workspace folder holding the document: the only place its `$ref`s
    may lead (server.aiapi.local_refs); None for a document outside every folder."""
    if path is None:
        return None
    holding = [
        root
        for root in ls.workspace_roots()
        if path.absolute().is_relative_to(root) or path.resolve().is_relative_to(root.resolve())
    ]
    return str(max(holding, key=lambda root: len(root.parts))) if holding else None


def _cancelling() -> bool:
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def _refuse_failed(ls: HeadstartServer, title: str, path: Path, generated: Generated) -> None:
    """Raise with a message when the document did not validate or the generator failed."""
    if generated.refused:
        count = len(generated.refused)
        first = generated.refused[0]
        where = f"line {first.line}: " if first.line is not None else ""
        more = f" (and {count - 1} more: see the problems of the document)" if count > 1 else ""
        raise _failed(ls, title, f"{path.name} has $refs Headstart does not follow (outside "
                      "the workspace folder, or URLs); nothing read, nothing generated. "
                      f"{where}{first.describe()}{more}")  # fmt: skip
    if generated.problems:
        count = len(generated.problems)
        first = generated.problems[0]
        where = f"line {first.line}: " if first.line is not None else ""
        more = f" (and {count - 1} more: see the problems of the document)" if count > 1 else ""
        raise _failed(ls, title, f"{path.name} is not a valid OpenAPI 3.x document; nothing "
                      f"generated. {where}{first.describe()}{more}")  # fmt: skip
    if generated.error is not None:
        raise _failed(ls, title, f"the generator failed; nothing written. {generated.error}")


async def _apply(
    ls: HeadstartServer,
    title: str,
    path: Path,
    target: Target,
    generated: Generated,
    plan: FilePlan,
) -> dict[str, Any]:
    base = path.parent
    summary: dict[str, Any] = {
        "folder": str(plan.folder),
        "created": [str(p) for p in plan.create],
        "replaced": [str(p) for p in plan.replace],
        "unchanged": [str(p) for p in plan.unchanged],
        "left": [str(p) for p in plan.left],
        "applied": False,
    }
    where = f"{GENERATED_FOLDER}/{target.language}"
    if not plan.create and not plan.replace:
        _say(ls, f"{title}: {where} is up to date ({len(plan.unchanged)} files).")
        return summary
    if plan.replace and not await _may_replace(ls, title, base, plan):
        _say(ls, f"{title}: nothing written; the {len(plan.replace)} files that differ were kept.")
        return summary
    edit = _workspace_edit(plan)
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=title)
    )
    if not result.applied:
        reason = result.failure_reason or "no reason given"
        raise _failed(ls, title, f"the editor did not apply the files: {reason}")
    summary["applied"] = True
    counts = [f"{len(plan.create)} created"]
    if plan.replace:
        counts.append(f"{len(plan.replace)} replaced")
    if plan.unchanged:
        counts.append(f"{len(plan.unchanged)} unchanged")
    left = (
        f" {len(plan.left)} files there that it did not write were left as they are."
        if plan.left
        else ""
    )
    _say(ls, f"{title}: {', '.join(counts)} in {where} ({generated.title}).{left}")
    log.info("%s: %s in %s", title, ", ".join(counts), plan.folder)
    return summary


async def _may_replace(ls: HeadstartServer, title: str, base: Path, plan: FilePlan) -> bool:
    names = [p.relative_to(base).as_posix() for p in plan.replace]
    listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    question = (
        f"{title}: {len(names)} files already there differ from what it writes now ({listed}). "
        "Replace them?"
    )
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=question,
                actions=[
                    types.MessageActionItem(title=REPLACE),
                    types.MessageActionItem(title=KEEP),
                ],
            )
        )
    except Exception as exc:  # an editor that cannot ask: never replace without a yes
        log.warning("%s: could not ask before replacing files: %s", title, exc)
        return False
    return answer is not None and answer.title == REPLACE


def _workspace_edit(plan: FilePlan) -> types.WorkspaceEdit:
    """Each file created (a replaced one with `overwrite`, which empties it), then filled."""
    changes: list[Any] = []
    for files, overwrite in ((plan.create, False), (plan.replace, True)):
        for file, text in files.items():
            uri = path_to_uri(file)
            options = types.CreateFileOptions(overwrite=True) if overwrite else None
            changes.append(types.CreateFile(uri=uri, options=options))
            if text:
                start = types.Position(line=0, character=0)
                changes.append(
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=None
                        ),
                        edits=[
                            types.TextEdit(range=types.Range(start=start, end=start), new_text=text)
                        ],
                    )
                )
    return types.WorkspaceEdit(document_changes=changes)


def _say(ls: HeadstartServer, message: str) -> None:
    """`message` (which starts with the action's title) as information."""
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))


def _failed(
    ls: HeadstartServer,
    title: str,
    message: str,
    severity: types.MessageType = types.MessageType.Error,
) -> JsonRpcException:
    """The error to raise, after telling the user (a command's error reply may not show)."""
    text = f"{title}: {message}"
    log.warning("%s", text)
    ls.window_show_message(types.ShowMessageParams(type=severity, message=text))
    return RefactorFailed(text)
