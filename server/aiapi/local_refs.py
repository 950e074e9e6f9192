"""Where an OpenAPI document's `$ref`s may point before anything follows them.

The validator and the generators follow a `$ref` wherever it points: `file:///etc/...`,
`../../.ssh/id_rsa`, a URL. A document is often someone else's (a repository's, a job's),
and "nothing a repository sets can redirect the user's key or run a command": a `$ref`
read into a diagnostic, generated code or a prompt would carry a file of the user's, and
one fetched would tell a stranger the user opened it. So each entry point checks the
document first, with one `ReferencePolicy`:

- a `$ref` inside the document (`#...`) is always followed;
- a relative path is followed when the file it names lies inside the policy's root, after
  `..` and symbolic links (lexically, as a resolver joins URLs, and for real); the files
  it reaches are checked the same way, each against its own folder;
- a URL of any scheme (`https:`, `file:`, `//host/...`) or an absolute path never is.

The job service's root is None (self-contained documents only), the editor's the
workspace folder holding the document, `aiapi generate`'s the document's own folder.
Nothing is fetched here; only files inside the root are read, and only to check theirs.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import yaml

from cache.scan import is_secret_name
from cache.secrets import secret_file_reason
from server.aiapi.document import ContractDocument, ContractError, ContractProblem, Pointer

MAX_REPORTED: Final = 10
MAX_FILES: Final = 200
"""Referenced files checked per document: a guard against a tree of references without
end, not a budget (a large multi-file description has a few dozen)."""
MAX_FILE_BYTES: Final = 8_000_000
REFERENCE_KEYS: Final = ("$ref", "$dynamicRef")
UNPARSED: Final = object()


@dataclass(frozen=True)
class ReferencePolicy:
    """Which `$ref`s an entry point follows: inside the document, and relative files
    under `root` (None: inside the document only). `root_name` and `hint` go into the
    message of a refused one, so that it says what would have been allowed."""

    root: Path | None
    root_name: str = "the document's folder"
    hint: str = ""


SELF_CONTAINED: Final = ReferencePolicy(None)


def workspace_policy(workspace_folder: Path | None) -> ReferencePolicy:
    """The editor's policy (diagnostics, generate actions, completion prompts): relative
    files inside the workspace folder holding the document; inside the document only
    when no folder holds it."""
    if workspace_folder is None:
        return ReferencePolicy(None, hint=": the document is outside every workspace folder")
    return ReferencePolicy(workspace_folder, f"the workspace folder {workspace_folder}")


@dataclass(frozen=True)
class RefusedReference:
    """A `$ref` the policy does not follow, at the place in the checked document that
    leads to it (its own `$ref`, or the one naming the file that holds it)."""

    pointer: Pointer
    target: str
    reason: str
    found_in: str | None = None
    """`schemas/pet.yaml:12` when the `$ref` is in a file the document refers to."""

    def message(self, policy: ReferencePolicy) -> str:
        where = f"{self.found_in}: " if self.found_in else ""
        return f"{where}$ref {self.target!r} is refused: {self.reason}{policy.hint}"


def refused_references(
    path: Path, policy: ReferencePolicy, text: str | None = None
) -> list[RefusedReference]:
    """The `$ref`s of the document at `path` (its saved text, or `text`: an editor's
    buffer) and of the files it reaches that `policy` does not follow. A document that
    does not parse has none: load_document says why it does not."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []
    data = _parse(path, text)  # always parsed: a scan of the text misses `\u0024ref` keys
    if data is UNPARSED:
        return []
    root = policy.root.absolute() if policy.root is not None else None
    refused: list[RefusedReference] = []
    visited: set[Path] = {_real(path)}
    pending: deque[tuple[Path, Any, Pointer | None, str | None]] = deque([(path, data, None, None)])
    while pending and len(refused) < MAX_REPORTED:
        file, content, via, shown_as = pending.popleft()
        lines = None if via is None else _file_lines(file, content)
        for pointer, target in _references(content):
            place = pointer if via is None else via
            found_in = None
            if shown_as is not None and lines is not None:
                line = lines.line_of(pointer)
                found_in = f"{shown_as}:{line}" if line is not None else shown_as
            reason, reached = _judge(file, target, root, policy.root_name)
            if reason is not None:
                refused.append(RefusedReference(place, target, reason, found_in))
                if len(refused) >= MAX_REPORTED:
                    break
                continue
            if reached is None or reached in visited or not reached.exists():
                continue  # a missing file is the resolver's to report
            visited.add(reached)
            name = _shown_name(reached, root)
            referred, unchecked = _read_referred(reached, len(visited))
            if unchecked is not None:
                refused.append(RefusedReference(place, target, unchecked, found_in))
            elif referred is not None:
                pending.append((reached, referred, place, name))
    return refused


def refused_problems(
    path: Path, policy: ReferencePolicy, text: str | None = None
) -> list[ContractProblem]:
    """`refused_references` as problems at their lines of the document (what the CLI
    prints as FILE:LINE and the editor shows as diagnostics)."""
    refused = refused_references(path, policy, text)
    if not refused:
        return []
    if text is None:
        text = path.read_text(encoding="utf-8")
    data = _parse(path, text)
    document = ContractDocument(path=path, data=data if isinstance(data, dict) else {}, text=text)
    return [
        ContractProblem(
            reference.message(policy),
            reference.pointer,
            document.line_of(reference.pointer),
        )
        for reference in refused
    ]


def check_references(path: Path, policy: ReferencePolicy, text: str | None = None) -> None:
    """Raise ContractError with each refused `$ref` at its line; nothing when all are
    followed. Call it before load_document, which resolves them."""
    problems = refused_problems(path, policy, text)
    if problems:
        raise ContractError(path, problems)


def outside_references(path: Path) -> list[ContractProblem]:
    """The job service's check (SELF_CONTAINED): each `$ref` that does not start with
    '#', at its line, in the service's words."""
    refused = refused_references(path, SELF_CONTAINED)
    if not refused:
        return []
    document = ContractDocument(path=path, data={}, text=path.read_text(encoding="utf-8"))
    return [
        ContractProblem(
            f"$ref {reference.target!r} points outside the document: the service takes "
            "self-contained documents only (bundle it first, for example with `redocly bundle`)",
            reference.pointer,
            document.line_of(reference.pointer),
        )
        for reference in refused
    ]


# --- the rule for one $ref ---------------------------------------------------------------------


def _judge(
    base_file: Path, target: str, root: Path | None, root_name: str
) -> tuple[str | None, Path | None]:
    """(why `target`, written in `base_file`, is not followed, or None; the file it
    reaches when it is, or None when it stays in the same file)."""
    if target.startswith("#"):
        return None, None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or target.startswith("//"):
        scheme = f"{parts.scheme}:" if parts.scheme else "//"
        return (
            f"it is a URL ({scheme}), and following it would fetch or read what it names for "
            "a document that may come from someone else",
            None,
        )
    file_part = unquote(parts.path)
    if not file_part:
        return None, None  # `?x` or '': the document itself
    if file_part.startswith("/") or Path(file_part).is_absolute():
        return f"it is an absolute path; only relative paths inside {root_name} are followed", None
    if root is None:
        return "it points outside the document, and only refs inside it ('#...') are followed", None
    roots = {root.absolute(), _real(root)}
    reached = None
    for base in {base_file.absolute().parent, _real(base_file).parent}:
        lexical = Path(os.path.normpath(base / file_part))  # `..` first, as URLs join
        real = _real(lexical)
        if not (
            any(_within(lexical, r) for r in roots)
            and _within(real, _real(root))
            and _within(_real(base / file_part), _real(root))  # links first, as the OS does
        ):
            return f"it resolves outside {root_name}, and only files inside it are followed", None
        reached = real
    return None, reached


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links: compare it as written
        return path.absolute()


# --- reading and walking documents -----------------------------------------------------------


def _parse(path: Path, text: str) -> Any:
    """The document's content; UNPARSED when it is not JSON or YAML."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.load(text, Loader=loader)
    except (ValueError, yaml.YAMLError, RecursionError):
        return UNPARSED


def _read_referred(path: Path, count: int) -> tuple[Any, str | None]:
    """A referenced file's content, or why its own `$ref`s cannot be checked (then it is
    not followed either: what is not checked is refused)."""
    if count > MAX_FILES:
        return None, f"the document reaches more than {MAX_FILES} files; bundle it first"
    if is_secret_name(path.name):
        return None, "it names a credentials file (by its name), which is never read"
    try:
        if not path.is_file():
            return None, "it names something that is not a regular file"
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, f"the file is larger than {MAX_FILE_BYTES} bytes"
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"the file cannot be read as UTF-8 text ({type(exc).__name__})"
    why = secret_file_reason(text, str(path))
    if why is not None:
        return None, f"it names a credentials file ({why}), which is never read"
    content = _parse(path, text)
    if content is UNPARSED:
        return None, "the file is not YAML or JSON, so its own $refs cannot be checked"
    return content, None


def _file_lines(path: Path, content: Any) -> ContractDocument | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return ContractDocument(path=path, data=content if isinstance(content, dict) else {}, text=text)


def _shown_name(path: Path, root: Path | None) -> str:
    if root is not None and _within(path, _real(root)):
        return path.relative_to(_real(root)).as_posix()
    return str(path)


def _references(data: Any) -> list[tuple[Pointer, str]]:
    """Each `$ref` (and `$dynamicRef`) that does not start with '#': where, and its value."""
    found: list[tuple[Pointer, str]] = []
    _walk(data, (), found, set())
    return found


def _walk(node: Any, pointer: Pointer, found: list[tuple[Pointer, str]], seen: set[int]) -> None:
    """Depth first, each container once (YAML anchors share nodes, and may loop)."""
    if not isinstance(node, dict | list) or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, (*pointer, index), found, seen)
        return
    for key in REFERENCE_KEYS:
        reference = node.get(key)
        if isinstance(reference, str) and not reference.startswith("#"):
            found.append(((*pointer, key), reference))
    for key, value in node.items():
        _walk(value, (*pointer, str(key)), found, seen)
