"""OpenAPI documents open in the editor: which ones are, what is wrong with them, and the
files a generate action writes for them.

Validation of a large document takes long (GitHub's, 13 MB, is parsed and checked in pure
Python: 25 s of CPU) and generation seconds to minutes, so both run in worker processes
started with `spawn`, below the server in CPU priority (`nice`) and with their stdout on
stderr (in stdio mode the server's stdout is the LSP stream). pebble's pools stop a
worker that runs past its timeout or whose job is cancelled, which a `concurrent.futures`
pool cannot. The detection that decides whether a document is one at all is a few
regular expressions, run before anything is parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import logging
import multiprocessing
import os
import re
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, NoReturn

if TYPE_CHECKING:
    from pebble import ProcessPool

    from server.aiapi.local_refs import ReferencePolicy
    from server.aiapi.model_parts import ModelOptions

log = logging.getLogger(__name__)

GENERATED_FOLDER: Final = "generated"
"""Generated files go to `<the document's folder>/generated/<language>/`, the layout of
`headstart aiapi generate DOC --out <the document's folder>/generated`."""
CHECK_TIMEOUT_S: Final = 600.0
"""Longest one validation may take: a guard against a document that never ends, not a
budget (GitHub's takes 25 s of CPU, minutes of a niced worker on a busy machine)."""
CHECKS_PER_WORKER: Final = 20
"""The validation worker is replaced after this many documents: a large one leaves its
memory with the process."""
NO_NETWORK: Final = "diagnostics do not fetch a $ref's URL"
HEAD_CHARS: Final = 65_536
"""Detection looks here first; the whole text only when the key is not in it."""
BINARY_PROBE: Final = 8192


class ContractKind(Enum):
    OPENAPI3 = "openapi3"
    SWAGGER2 = "swagger2"


@dataclass(frozen=True)
class Detected:
    kind: ContractKind
    line: int
    """The 0-based line of the `openapi` (or `swagger`) key."""
    version: str


@dataclass(frozen=True)
class Target:
    """One generate action: what it writes, and the pipeline call that writes it."""

    kind: str
    """The pipeline's kind (server.aiapi.scaffold.KINDS): client, server or tests."""
    language: str

    @property
    def name(self) -> str:
        """Its id in the command's argument and the tail of its code action kind."""
        return f"{self.kind}.{self.language}"

    @property
    def title(self) -> str:
        return f"{_WHAT[self.kind]} ({_LANGUAGE_NAMES[self.language]})"


_WHAT: Final = {
    "client": "Generate client",
    "server": "Generate server stub",
    "tests": "Generate contract tests",
}
_LANGUAGE_NAMES: Final = {"python": "Python", "typescript": "TypeScript", "go": "Go"}
TARGETS: Final[dict[str, Target]] = {
    target.name: target
    for target in (Target(kind, language) for kind in _WHAT for language in _LANGUAGE_NAMES)
}
"""Every kind for every language: a server stub or the contract tests come with the
client they build on, as `headstart aiapi generate --kinds server` writes them."""

_SUFFIXES: Final = frozenset({".yaml", ".yml", ".json"})
_LANGUAGE_IDS: Final = frozenset({"yaml", "json", "jsonc"})
_YAML_KEY = re.compile(r"""(openapi|swagger)[ \t]*:[ \t]*['"]?([0-9][^'"\s#]*)""")
_JSON_KEY = re.compile(r'"(openapi|swagger)"[ \t]*:[ \t]*"([0-9][^"]*)"')
_JSON_FIRST_KEY = re.compile(r"\A\ufeff?\s*\{([ \t]*\r?\n)?([ \t]*)\"")


def may_be_contract(name: str, language_id: str | None) -> bool:
    """Whether a document could be an OpenAPI description at all: YAML or JSON by its
    language or its name. Nothing is read."""
    return (language_id or "") in _LANGUAGE_IDS or PurePosixPath(name).suffix.lower() in _SUFFIXES


def detect(text: str) -> Detected | None:
    """The document's top-level `openapi: 3.x` (or `swagger: 2.0`) key, found without
    parsing: a YAML key at column 0, or in JSON the object's first key or one at the first
    key's indentation (so a nested `"openapi"` of another kind of file does not count).
    None for anything else, binary text included."""
    if "\x00" in text[:BINARY_PROBE]:
        return None
    found = _find(text[:HEAD_CHARS])
    if found is None and len(text) > HEAD_CHARS:
        found = _find(text)
    if found is None:
        return None
    key, version, offset = found
    if key == "swagger":
        if not version.startswith("2"):
            return None
        kind = ContractKind.SWAGGER2
    elif version.startswith("3."):
        kind = ContractKind.OPENAPI3
    else:
        return None
    return Detected(kind, text.count("\n", 0, offset), version)


def _find(text: str) -> tuple[str, str, int] | None:
    """(key, version, offset of its line) of the first top-level `openapi`/`swagger` key."""
    first = _JSON_FIRST_KEY.match(text)
    if first is None:
        return _at_line_start(text, "", _YAML_KEY, ("openapi", "swagger"))
    if first.group(1) is None:  # minified, or the first key on the brace's line
        at = first.end() - 1
        key = _JSON_KEY.match(text, at)
        return (key.group(1), key.group(2), at) if key else None
    return _at_line_start(text, first.group(2), _JSON_KEY, ('"openapi"', '"swagger"'))


def _at_line_start(
    text: str, indent: str, pattern: re.Pattern[str], keys: tuple[str, ...]
) -> tuple[str, str, int] | None:
    """The first of `keys` that starts a line after exactly `indent`, and matches
    `pattern` there. str.find, not a MULTILINE regex, which took twice as long on a 13 MB
    document without the key (36 ms against 80 on a busy machine; the event loop runs this,
    once per version)."""
    found: list[tuple[int, re.Match[str]]] = []
    for key in keys:
        head = indent + key
        at = 0 if text.startswith(head) else -1
        while True:
            if at >= 0 and (match := pattern.match(text, at + len(indent))):
                found.append((at, match))
                break
            at = text.find("\n" + head, at + 1)
            if at < 0:
                break
            at += 1
    if not found:
        return None
    at, match = min(found, key=lambda pair: pair[0])
    return match.group(1), match.group(2), at


@functools.cache
def missing_extra() -> str | None:
    """What to install when the aiapi extra (validator, generators, pebble) is not here."""
    for module in ("pebble", "openapi_spec_validator", "datamodel_code_generator"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install 'headstart[aiapi]'"
    return None


# --- what the workers do (each runs in a worker process) ------------------------------------


@dataclass(frozen=True)
class Problem:
    """One problem of a document, as the validator reports it (server.aiapi.document)."""

    message: str
    line: int | None = None
    """1-based, as document.py counts; None when the problem has no place."""
    pointer: str = ""
    """The JSON pointer (`#/paths/~1pets/get`) of what is wrong, '' for the whole document."""

    def describe(self) -> str:
        return f"{self.pointer}: {self.message}" if self.pointer else self.message


@dataclass
class Generated:
    """What a generate job made: files by their path under GENERATED_FOLDER, or why not."""

    title: str = ""
    files: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    refused: list[Problem] = field(default_factory=list)
    """`$ref`s outside the workspace folder or to URLs (then nothing was read or made)."""
    error: str | None = None
    model_summary: str | None = None
    """With aiapi.withModel: what the model's pieces came to (ModelReport.summary)."""


def reference_policy(workspace_folder: str | None) -> ReferencePolicy:
    """What the editor follows (server.aiapi.local_refs.workspace_policy)."""
    from server.aiapi.local_refs import workspace_policy

    return workspace_policy(Path(workspace_folder) if workspace_folder is not None else None)


def _problems(error: Any) -> list[Problem]:
    problems = []
    for problem in error.problems:
        pointer = "".join(
            "/" + str(p).replace("~", "~0").replace("/", "~1") for p in problem.pointer
        )
        problems.append(Problem(problem.message, problem.line, f"#{pointer}" if pointer else ""))
    return problems


def check_text(path: str, text: str, workspace_folder: str | None = None) -> list[Problem]:
    """The problems of an editor's buffer (none: a valid document). `$ref`s the editor
    does not follow are its only problems: the validator would resolve them."""
    from server.aiapi.document import ContractError, load_text
    from server.aiapi.local_refs import check_references

    try:
        check_references(Path(path), reference_policy(workspace_folder), text)
        load_text(Path(path), text)
    except ContractError as exc:
        return _problems(exc)
    return []


def generate_files(
    path: str,
    target_name: str,
    workspace_folder: str | None = None,
    model: ModelOptions | None = None,
    react_query: bool = False,
) -> Generated:
    """Run the pipeline on the saved document into a folder of its own, then read back
    every file it wrote, as `headstart aiapi generate` would have left them; nothing when
    a `$ref` points outside `workspace_folder` or to a URL."""
    from server.aiapi.document import ContractError, load_document
    from server.aiapi.local_refs import check_references
    from server.aiapi.pipeline import generate_contract
    from server.aiapi.tools import ToolMissing

    target = TARGETS[target_name]
    try:
        check_references(Path(path), reference_policy(workspace_folder))
    except ContractError as exc:
        return Generated(refused=_problems(exc))
    try:
        document = load_document(Path(path))
    except ContractError as exc:
        return Generated(problems=_problems(exc))
    title = f"{document.title} {document.api_version}".strip()
    with tempfile.TemporaryDirectory(prefix="headstart-contract-") as staging:
        out = Path(staging)
        try:
            result = generate_contract(
                document, out, (target.language,), kinds=(target.kind,), react_query=react_query
            )
        except ToolMissing as exc:
            return Generated(title=title, error=str(exc))
        errors = [entry.generate_error for entry in result.languages if entry.generate_error]
        errors += [entry.generate_error for entry in result.scaffolds if entry.generate_error]
        if errors:
            return Generated(title=title, error="\n".join(errors))
        summary = None
        if model is not None:  # the model's pieces over what was generated, checked
            from server.aiapi.model_writers import write_model_parts

            reports = write_model_parts(document, out, (target.language,), model)
            summary = "\n".join(report.summary() for report in reports)
        files = {}
        for written in sorted(p for p in out.rglob("*") if p.is_file()):
            name = written.relative_to(out).as_posix()
            try:
                files[name] = written.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                return Generated(title=title, error=f"{name} is not UTF-8 text")
    return Generated(title=title, files=files, model_summary=summary)


def _start_worker() -> None:
    """Below the editor's keystrokes in CPU priority, and never on the LSP's stdout."""
    with contextlib.suppress(OSError):
        os.nice(10)
    os.dup2(2, 1)


def _start_checker() -> None:
    """A validation worker, which also never connects anywhere: a `$ref` to a URL in a
    document someone else wrote would otherwise be fetched each time typing pauses in it
    (check_text refuses such refs before validating; this is the second lock)."""
    _start_worker()

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(NO_NETWORK)

    socket.create_connection = refuse
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]


# --- the workers, seen from the server --------------------------------------------------------


class ContractWorkers:
    """One long-lived worker for validation (its imports stay warm between keystrokes)
    and one worker per generate job (its memory goes with it)."""

    def __init__(self) -> None:
        self._checker: ProcessPool | None = None
        self._lock = threading.Lock()

    def _pool(self, max_tasks: int, start: Callable[[], None] = _start_worker) -> ProcessPool:
        from pebble import ProcessPool

        context = multiprocessing.get_context("spawn")
        return ProcessPool(max_workers=1, max_tasks=max_tasks, initializer=start, context=context)

    async def check(
        self, path: str, text: str, workspace_folder: str | None = None
    ) -> list[Problem]:
        """The document's problems. Raises TimeoutError past CHECK_TIMEOUT_S, and
        pebble's ProcessExpired when the worker dies (it is started again next time)."""
        with self._lock:
            if self._checker is None:
                self._checker = self._pool(CHECKS_PER_WORKER, _start_checker)
            checker = self._checker
        future = checker.schedule(
            check_text, args=(path, text, workspace_folder), timeout=CHECK_TIMEOUT_S
        )
        return await asyncio.wrap_future(future)

    async def generate(
        self,
        path: str,
        target: Target,
        timeout_s: float,
        workspace_folder: str | None = None,
        model: ModelOptions | None = None,
        react_query: bool = False,
    ) -> Generated:
        """Generate `target` for the saved document at `path`, in a worker of its own.
        Cancelling the caller stops the worker (and the generators it runs). With `model`,
        the worker then asks it for the model-written parts (server.aiapi.model_writers)."""
        pool = self._pool(1)
        try:
            arguments = (path, target.name, workspace_folder)
            future = pool.schedule(
                generate_files,
                args=arguments,
                kwargs={"model": model, "react_query": react_query},
                timeout=timeout_s,
            )
            return await asyncio.wrap_future(future)
        finally:
            await asyncio.to_thread(_stop, pool)

    def stop_checking(self) -> None:
        """Let the validation worker go (no OpenAPI document is open any more)."""
        with self._lock:
            checker, self._checker = self._checker, None
        if checker is not None:
            threading.Thread(target=_stop, args=(checker,), daemon=True).start()

    async def close(self) -> None:
        with self._lock:
            checker, self._checker = self._checker, None
        if checker is not None:
            await asyncio.to_thread(_stop, checker)


def _stop(pool: ProcessPool) -> None:
    """Stop the pool's worker and wait for it to go (blocking: off the event loop)."""
    pool.stop()  # type: ignore[no-untyped-call]  # pebble 5.2 leaves it unannotated
    pool.join()


# --- what a generate action does on disk ------------------------------------------------------


@dataclass
class FilePlan:
    """The generated files against what is on disk under the output folder."""

    folder: Path
    create: dict[Path, str] = field(default_factory=dict)
    replace: dict[Path, str] = field(default_factory=dict)
    unchanged: list[Path] = field(default_factory=list)
    left: list[Path] = field(default_factory=list)
    """Files in the languages' folders that this run did not write: left as they are."""


def plan_files(folder: Path, files: Mapping[str, str]) -> FilePlan:
    """Which of `files` (paths under `folder`) are new, which would replace different
    content, which are already there as they are; reads the disk (run it off the loop)."""
    plan = FilePlan(folder)
    for name, text in files.items():
        path = folder / name
        if not path.exists():
            plan.create[path] = text
            continue
        try:
            same = path.read_bytes() == text.encode("utf-8")
        except OSError:
            same = False
        if same:
            plan.unchanged.append(path)
        else:
            plan.replace[path] = text
    written = {folder / name for name in files}
    for top in sorted({PurePosixPath(name).parts[0] for name in files}):
        if (folder / top).is_dir():
            plan.left += sorted(
                p for p in (folder / top).rglob("*") if p.is_file() and p not in written
            )
    return plan
