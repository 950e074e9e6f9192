"""Completions that know the contract: when the cursor is in a call to an operation of an
OpenAPI document of the workspace, the prompt shows that operation (`cache.contracts`).

A call is an operation's when a string literal in it is one of the document's paths
(`client.get("/pets/{id}")`, `requests.post(f"{base}/pets")`,
fetch(`${base}/pets/${id}`)), or when the called name is an operationId in any spelling
(`client.show_pet_by_id(`, `api.showPetById(`: what `headstart aiapi generate` names a
client's methods). Documents are found and parsed off the keystroke path, once per version
(`ContractIndex.refresh`, at the end of indexing and in a thread when a request sees a
document changed); a request only matches what is parsed, in well under a millisecond."""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from cache.contracts import (
    HEAD_CHARS,
    MAX_DOCUMENT_BYTES,
    METHODS,
    Contract,
    Operation,
    looks_like_openapi,
    summarise,
)
from cache.index import ProjectIndex
from server.completion.context import ContextBuilder
from server.completion.context.model import Context, Count, Overhead, Snippet

log = logging.getLogger(__name__)

MAX_OPERATIONS_SHOWN: Final = 3
"""A path's operations shown when the call's method is unknown (`fetch(url)`)."""
CALL_LINES_ABOVE: Final = 3
"""A call's arguments are looked for this many lines above the cursor's line."""
MIN_ID_CHARS: Final = 4
"""Shorter operationIds (`get`, `list`) are too common as names to mean the operation."""

STRING_LITERAL = re.compile(r"""["'`](?:[^"'`\\\n]|\\.)*(?:["'`]|$)""", re.MULTILINE)
"""A string literal (quotes, backquotes), or one still open at the line's end."""
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{[^}]*\}|%[sdr]|:[A-Za-z_]\w*")
_CALLED = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_NAME_BEFORE = re.compile(r"([A-Za-z_$][\w$.]*)\s*$")
_SCHEME_HOST = re.compile(r"^[a-zA-Z][\w+.-]*://[^/]*")


ReferenceCheck = Callable[[Path, str, Path], str | None]
"""Why a document (its path, its text, the workspace root) stays out of prompts because of
a `$ref` the editor does not follow, or None. server.aiapi.local_refs holds the policy;
this layer sits below it, so the layer above hands the check down (`check_references_with`)."""
_reference_check: ReferenceCheck | None = None


def check_references_with(check: ReferenceCheck) -> None:
    """Leave out of prompts every document `check` refuses (set once, by the server)."""
    global _reference_check
    _reference_check = check


def operation_key(name: str) -> str:
    """`showPetById`, `show_pet_by_id` and `ShowPetByID` all as `showpetbyid`."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


class ContractIndex:
    """The OpenAPI documents among one workspace root's indexed files, summarised."""

    def __init__(self, index: ProjectIndex | None, texts: Mapping[str, str]) -> None:
        self.index, self.texts = index, texts
        self._docs: dict[str, tuple[str, Contract | None]] = {}
        """path -> (digest, its contract; None when the file is not an OpenAPI document)."""
        self._records_seen: tuple[int, int] = (0, -1)
        self._by_key: dict[str, list[tuple[str, Operation]]] = {}
        self._templates: list[tuple[str, Operation, tuple[str, ...]]] = []
        self._by_segment: dict[str, list[int]] = {}
        """Places in `_templates` by the template's last literal segment: a call's literal
        is compared only with the templates one of its segments can end (GitHub's 1,223
        operations: 60-110 us a request on PyGithub's code, 420 us comparing with all)."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._refused_logged: set[str] = set()

    def refresh(self) -> int:
        """Parse the documents that are new or changed since the last refresh; how many
        were parsed. Slow for a big document: call it off the event loop."""
        index = self.index
        if index is None:
            return 0
        with self._lock:
            records = index.records
            seen = (id(records), len(records))
            docs: dict[str, tuple[str, Contract | None]] = {}
            parsed = 0
            for path, record in list(records.items()):
                if record.language not in ("yaml", "json") or record.size > MAX_DOCUMENT_BYTES:
                    continue
                known = self._docs.get(path)
                if known is not None and known[0] == record.digest:
                    docs[path] = known
                    continue
                docs[path] = (record.digest, self._summarise(index, path, record.language))
                parsed += 1
            self._install(docs, seen)
            return parsed

    def refresh_soon(self) -> None:
        """`refresh` in a daemon thread, unless one is already running."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self.refresh, name="contracts", daemon=True)
            self._thread.start()

    def stale(self) -> bool:
        """Whether the index has files the last refresh did not see (cheap: the records
        container and count, and each known document's digest)."""
        index = self.index
        if index is None:
            return False
        records = index.records
        if (id(records), len(records)) != self._records_seen:
            return True
        for path, (digest, _) in self._docs.items():
            record = records.get(path)
            if record is None or record.digest != digest:
                return True
        return False

    @property
    def operations(self) -> int:
        return len(self._templates)

    @classmethod
    def of(cls, contracts: Mapping[str, Contract]) -> ContractIndex:
        """An index of contracts already summarised (by document path), for tools that
        match calls outside a workspace (benchmarks/quality/contract_tasks.py)."""
        found = cls(None, {})
        found._install({path: ("", contract) for path, contract in contracts.items()}, (0, 0))
        return found

    def match(self, text: str, offset: int) -> list[tuple[str, Operation]]:
        """The operations (document path, operation) that the call at `offset` makes,
        best first; [] when it calls none."""
        if not self._templates:
            return []
        call = _call_at(text, offset)
        found: list[tuple[str, Operation]] = []
        if call.name:  # `issues.list_for_repo(` is `issues/list-for-repo` too
            parts = call.name.split(".")
            found = self._by_key.get(operation_key("".join(parts[-2:])), []) or self._by_key.get(
                operation_key(parts[-1]), []
            )
        if not found:
            found = self._by_path(call)
        if not found:
            for name in _CALLED.findall(call.arguments):
                found = self._by_key.get(operation_key(name), [])
                if found:
                    break
        return found[:MAX_OPERATIONS_SHOWN]

    def _by_path(self, call: _Call) -> list[tuple[str, Operation]]:
        best: tuple[int, int] = (0, 0)
        hits: list[tuple[str, Operation]] = []
        for literal in STRING_LITERAL.findall(call.arguments):
            segments = _path_segments(literal)
            if segments is None:
                continue
            places = sorted({place for s in segments for place in self._by_segment.get(s, ())})
            for place in places:
                path, operation, template = self._templates[place]
                score = _path_score(template, segments)
                if score is None or score < best:
                    continue
                if score > best:
                    best, hits = score, []
                hits.append((path, operation))
        method = call.method
        if method is None:
            return hits
        same = [hit for hit in hits if hit[1].method == method]
        return same or hits

    def _summarise(self, index: ProjectIndex, path: str, language: str | None) -> Contract | None:
        text = self.texts.get(path) if path in self.texts else None
        if text is None:
            text = _read(index.root, path)
        if text is None or not looks_like_openapi(text[:HEAD_CHARS]):
            return None
        check = _reference_check
        refused = check(index.root / path, text, index.root) if check is not None else None
        if refused is not None:
            if path not in self._refused_logged:  # once: no pop-up, and no line per change
                self._refused_logged.add(path)
                log.info("OpenAPI document %s left out of completion prompts: %s", path, refused)
            return None
        try:
            contract = summarise(text, json_text=language == "json")
        except Exception:  # a document no rule foresaw must not stop indexing or completion
            log.exception("OpenAPI document %s could not be summarised", path)
            return None
        if contract is not None:
            log.info("OpenAPI document %s: %d operations", path, len(contract.operations))
        return contract

    def _install(self, docs: dict[str, tuple[str, Contract | None]], seen: tuple[int, int]) -> None:
        by_key: dict[str, list[tuple[str, Operation]]] = {}
        templates: list[tuple[str, Operation, tuple[str, ...]]] = []
        for path in sorted(docs):
            contract = docs[path][1]
            for operation in contract.operations if contract is not None else ():
                keys = {operation_key(operation.method + operation.path)}
                if len(operation_key(operation.operation_id)) >= MIN_ID_CHARS:
                    keys.add(operation_key(operation.operation_id))
                for key in keys:
                    by_key.setdefault(key, []).append((path, operation))
                templates.append((path, operation, tuple(operation.path.strip("/").split("/"))))
        # Readers take each attribute once: a build sees the old set or the new one.
        by_segment: dict[str, list[int]] = {}
        for place, (_, _, template) in enumerate(templates):
            literals = [part for part in template if not part.startswith("{")]
            if literals:
                by_segment.setdefault(literals[-1], []).append(place)
        self._by_key, self._templates, self._by_segment = by_key, templates, by_segment
        self._docs, self._records_seen = docs, seen


@dataclasses.dataclass(frozen=True, slots=True)
class _Call:
    name: str
    """The called name (dotted) of the call the cursor is in; "" when in none."""
    arguments: str
    """Its arguments up to the end of the cursor's line (the cursor's line when no call)."""

    @property
    def method(self) -> str | None:
        """The HTTP method the call names: `requests.post(`, `fetch(url, {method: "PUT"`."""
        last = self.name.rsplit(".", 1)[-1].lower()
        if last in METHODS:
            return last
        for literal in STRING_LITERAL.findall(self.arguments):
            word = str(literal).strip("\"'`").lower()
            if word in METHODS:
                return word
        return None


def _call_at(text: str, offset: int) -> _Call:
    """The innermost call whose parenthesis is open at `offset`, within CALL_LINES_ABOVE
    lines above the cursor's line."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    start = line_start
    for _ in range(CALL_LINES_ABOVE):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    depth = 0
    for position in range(offset - 1, start - 1, -1):
        char = text[position]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0 and char == "(":
                found = _NAME_BEFORE.search(text, start, position)
                name = found.group(1) if found else ""
                return _Call(name, text[position + 1 : line_end])
            depth = max(0, depth - 1)
    return _Call("", text[line_start:line_end])


def _path_segments(literal: str) -> tuple[str, ...] | None:
    """A string literal as a path's segments, placeholders as `{}` (f-string fields,
    `${...}`, `%s`, `:id`), host and query dropped; None when it holds no path."""
    value = literal.strip("\"'`")
    value = _SCHEME_HOST.sub("", value)
    value = _PLACEHOLDER.sub("{}", value).split("?", 1)[0].split("#", 1)[0]
    slash = value.find("/")
    if slash < 0:
        return None
    segments = value[slash + 1 :].split("/")
    if segments and segments[-1] == "":  # "/pets/" + id
        segments[-1] = "{}"
    return tuple(segments)


def _path_score(template: tuple[str, ...], segments: tuple[str, ...]) -> tuple[int, int] | None:
    """(literal segments matched, template length) when `segments` end with the template
    (leading extra segments are a base path); None when they do not, or when the match
    rests on variables alone."""
    if len(segments) < len(template) or not template:
        return None
    literal = 0
    for want, got in zip(template, segments[len(segments) - len(template) :], strict=True):
        if want.startswith("{") and want.endswith("}"):
            if not got:
                return None
        elif want == got:
            literal += 1
        else:
            return None
    return (literal, len(template)) if literal else None


def _read(root: Path, path: str) -> str | None:
    """An indexed file's text; never one outside the workspace root (a symbolic link out
    of it is not followed)."""
    try:
        file = (root / path).resolve()
        if not file.is_relative_to(root.resolve()) or file.stat().st_size > MAX_DOCUMENT_BYTES:
            return None
        head = file.open("rb").read(HEAD_CHARS).decode("utf-8", errors="replace")
        if not looks_like_openapi(head):
            return None
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


_indexes: weakref.WeakKeyDictionary[ContextBuilder, ContractIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def index_for(builder: ContextBuilder) -> ContractIndex:
    """The contract index of a builder's workspace root (one per builder and its index)."""
    with _indexes_lock:
        found = _indexes.get(builder)
        if found is None or found.index is not builder.index:
            found = _indexes[builder] = ContractIndex(builder.index, builder.texts)
        return found


def contract_snippet(
    builder: ContextBuilder, text: str, offset: int, cap: int, count: Count, overhead: Overhead
) -> tuple[Snippet, int] | None:
    """The snippet of the operations the call at `offset` makes, and its tokens with its
    overhead, within `cap` tokens (whole operations only); None when there is none or
    none fits. A changed document is parsed again in a thread, for later requests."""
    if cap <= 0 or builder.index is None:
        return None
    contracts = index_for(builder)
    if contracts.stale():
        contracts.refresh_soon()
    found = contracts.match(text, offset)
    if not found:
        return None
    path = found[0][0]
    room = cap - overhead(path)
    shown = ""
    tokens = 0
    for doc, operation in found:
        if doc != path:
            continue
        more = shown + operation.render()
        more_tokens = count(more)
        if more_tokens > room:
            break
        shown, tokens = more, more_tokens
    if not shown:
        return None
    return Snippet(path, shown, 0, 0.0, language=None), tokens + overhead(path)


def with_contract(context: Context, found: tuple[Snippet, int] | None) -> Context:
    """`context` with the contract snippet among its snippets, in render order."""
    if found is None:
        return context
    snippet, tokens = found
    snippets = tuple(sorted((*context.snippets, snippet), key=lambda s: s.order))
    return dataclasses.replace(context, snippets=snippets, tokens=context.tokens + tokens)
