"""Credentials found in the workspace's text, so that no prompt carries them.

Detection is gitleaks' maintained rule set (`cache/secrets/gitleaks.toml`, vendored with
its version and licence) plus generic rules (`cache.secrets.generic`): values of key-like
names in any syntax, passwords in URLs, bearer credentials, high-entropy literals and
private-key blocks line by line. It runs once per file version (`masked_text`, keyed by
the contents' xxh3 digest) and line by line for the open document (`mask_window`: a
keystroke rescans only the lines it changed, each line's findings memoised). A finding is
replaced by MASK, so the model still sees the code's shape: `STRIPE_KEY = "<redacted>"`.
Masking keeps every line where it was: outlines' and chunks' line numbers stay valid.
"""

from __future__ import annotations

import functools
import posixpath
import re
import string
from collections import OrderedDict
from typing import Any

import re2
import xxhash

from cache.secrets import generic
from cache.secrets.gitleaks import Finding, rule_set

__all__ = [
    "MASK",
    "FileSecrets",
    "Finding",
    "find_secrets",
    "mask_lines",
    "mask_piece",
    "mask_text",
    "mask_window",
    "masked_lines",
    "masked_text",
    "restore_secrets",
    "scan_file",
    "secret_file_reason",
    "secret_values",
    "syntax_of",
    "warm_up",
]

MASK = "<redacted>"
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
"""Lower case that keeps every offset (`str.lower` may lengthen a non-ASCII letter)."""
_NEWLINE = re.compile("\n")
Span = tuple[int, int]
SPECIAL_NAMES = {
    "dockerfile": "dockerfile",
    "makefile": "mk",
    "gemfile": "rb",
    "procfile": "",
    "jenkinsfile": "groovy",
    "vagrantfile": "rb",
}


def syntax_of(path: str) -> str:
    """The syntax the generic rules read a file in: its extension, lower case."""
    name = posixpath.basename(path.replace("\\", "/")).lower()
    if name in SPECIAL_NAMES:
        return SPECIAL_NAMES[name]
    if name.startswith("dockerfile"):
        return "dockerfile"
    stem, dot, extension = name.rpartition(".")
    if dot and stem:
        return extension
    return name.lstrip(".") if name.startswith(".") else ""


@functools.lru_cache(maxsize=65536)
def line_spans(line: str, syntax: str) -> tuple[Span, ...]:
    """The secrets of one line (no newline), merged, in order. Memoised: a keystroke
    rescans only the lines it changed, and files share lines."""
    found: list[Finding] = rule_set().find(line, f"file.{syntax}" if syntax else "file")
    found.extend(generic.line_findings(line, syntax))
    return _merged((f.start, f.end) for f in found if f.end > f.start)


def _merged(spans: object) -> tuple[Span, ...]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):  # type: ignore[call-overload]
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((start, end) for start, end in merged)


def _mask_line(line: str, spans: tuple[Span, ...]) -> str:
    pieces: list[str] = []
    kept = 0
    for start, end in spans:
        pieces += (line[kept:start], MASK)
        kept = end
    return "".join(pieces) + line[kept:]


def warm_up() -> None:
    """Compile the rules now (~0.2-0.4 s), not at the first keystroke's prompt."""
    rule_set()
    _line_hints()


@functools.cache
def _line_hints() -> Any:
    """gitleaks' keywords and the generic rules' hints, as one RE2 pattern on bytes."""
    keywords = b"|".join(re2.escape(k) for k in sorted(rule_set().by_keyword, key=len))
    return re2.compile(keywords + b"|" + generic.LINE_HINT.pattern.encode("utf-8"))


def candidate_lines(text: str) -> list[int]:
    """The numbers of the lines any rule could find something on, from C-speed passes
    over the whole text's bytes (gitleaks' keywords and the generic rules' words in one
    RE2 automaton, long quoted literals), skipping to the next line after each hit: most
    lines of code have none, and are never read one by one."""
    data = text.encode("utf-8", "surrogatepass").lower()
    numbers = _hit_lines(data, _line_hints().search)
    literals = _hit_lines(data, generic.LITERAL_HINT.search)
    return sorted(set(numbers).union(literals)) if literals else numbers


def _hit_lines(data: bytes, search: Any) -> list[int]:
    numbers: list[int] = []
    line = 0
    counted = 0
    position = 0
    while True:
        match = search(data, position)
        if match is None:
            return numbers
        start = match.start()
        line += data.count(b"\n", counted, start)
        numbers.append(line)
        position = data.find(b"\n", start)
        if position < 0:
            return numbers
        counted = position


def find_secrets(text: str, path: str = "") -> dict[int, tuple[Span, ...]]:
    """Line number -> the spans (columns) to mask on that line, for a whole file: gitleaks'
    rules in one RE2 pass each over the file's bytes, the generic rules on the lines their
    hints pick (each line's findings memoised), and private-key blocks."""
    syntax = syntax_of(path)
    data = text.encode("utf-8", "surrogatepass")
    lowered = data.lower()
    spans: dict[int, list[Span]] = {}
    where = f"file.{syntax}" if syntax else "file"
    for finding in rule_set().find_in_text(data, lowered, where):
        number = data.count(b"\n", 0, finding.start)
        line_start = data.rfind(b"\n", 0, finding.start) + 1
        line_end = data.find(b"\n", finding.start)
        stop = min(finding.end, len(data) if line_end < 0 else line_end)  # one line's part
        column = len(data[line_start : finding.start].decode("utf-8", "surrogatepass"))
        width = len(data[finding.start : stop].decode("utf-8", "surrogatepass"))
        spans.setdefault(number, []).append((column, column + width))
    numbers = _hit_lines(lowered, _generic_hints().search)
    numbers = sorted(set(numbers).union(_hit_lines(lowered, generic.LITERAL_HINT.search)))
    if numbers:
        lines = text.split("\n")
        for number in numbers:
            found = _generic_spans(lines[number], syntax)
            if found:
                spans.setdefault(number, []).extend(found)
    for number, span in generic.key_block_lines(text).items():
        spans.setdefault(number, []).append(span)
    return {number: _merged(found) for number, found in spans.items()}


@functools.lru_cache(maxsize=65536)
def _generic_spans(line: str, syntax: str) -> tuple[Span, ...]:
    return tuple((f.start, f.end) for f in generic.line_findings(line, syntax) if f.end > f.start)


@functools.cache
def _generic_hints() -> Any:
    return re2.compile(generic.LINE_HINT.pattern.encode("utf-8"))


def mask_lines(lines: list[str], found: dict[int, tuple[Span, ...]]) -> list[str]:
    """`lines` with the spans of `found` replaced by MASK."""
    if not found:
        return lines
    masked = list(lines)
    for number, spans in found.items():
        if number < len(masked):
            masked[number] = _mask_line(masked[number], spans)
    return masked


def mask_text(text: str, path: str = "") -> str:
    """`text` with every secret replaced by MASK."""
    found = find_secrets(text, path)
    if not found:
        return text
    return "\n".join(mask_lines(text.split("\n"), found))


class _DigestMemo:
    """Masked texts by (path, xxh3 digest of the text): a file version is scanned once."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.entries: OrderedDict[tuple[str, str], dict[int, tuple[Span, ...]]] = OrderedDict()

    def found(self, text: str, path: str) -> dict[int, tuple[Span, ...]]:
        key = (path, xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass")))
        known = self.entries.get(key)
        if known is None:
            known = self.entries[key] = find_secrets(text, path)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
        return known


_memo = _DigestMemo()


def masked_text(text: str, path: str = "") -> str:
    """`mask_text`, once per version of a file's text (keyed by its digest)."""
    found = _memo.found(text, path)
    if not found:
        return text
    return "\n".join(mask_lines(text.split("\n"), found))


def masked_lines(
    text: str, path: str = "", known: tuple[str, tuple[tuple[int, int, int], ...]] | None = None
) -> list[str]:
    """The lines of `text` with its secrets masked, scanned once per version: `known` is
    the index's (digest, spans) of the file, used when `text` is that version."""
    lines = text.split("\n")
    if (
        known is not None
        and xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass")) == known[0]
    ):
        return mask_lines(lines, spans_by_line(known[1]))
    return mask_lines(lines, _memo.found(text, path))


def secret_strings(
    text: str, path: str = "", known: tuple[str, tuple[tuple[int, int, int], ...]] | None = None
) -> tuple[str, ...]:
    """The secrets of a file version, as text, longest first: what `mask_known` hides in
    pieces made from the file other than its lines (an outline's signatures, maybe cut)."""
    lines = text.split("\n")
    if (
        known is not None
        and xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass")) == known[0]
    ):
        found = spans_by_line(known[1])
    else:
        found = _memo.found(text, path)
    values = {
        lines[number][start:end]
        for number, spans in found.items()
        if number < len(lines)
        for start, end in spans
    }
    return tuple(sorted((v for v in values if v != MASK), key=len, reverse=True))


KNOWN_PREFIX = 6
"""Characters of a known secret that start a search for it, whole or cut, in a piece."""


def mask_known(text: str, values: tuple[str, ...]) -> str:
    """`text` with every occurrence of `values`, or of a cut start of one (at least
    KNOWN_PREFIX characters, as an outline clips a long signature), replaced by MASK."""
    for value in values:
        head = value[:KNOWN_PREFIX]
        if head not in text:
            continue
        pieces: list[str] = []
        kept = 0
        at = text.find(head)
        while at >= 0:
            length = KNOWN_PREFIX
            while (
                length < len(value)
                and at + length < len(text)
                and text[at + length] == value[length]
            ):
                length += 1
            end = at + length
            if length == len(value) or (length >= 8 and _is_cut(text, end)):
                pieces += (text[kept:at], MASK)
                kept = end
            at = text.find(head, end)
        text = "".join(pieces) + text[kept:]
    return text


def _is_cut(text: str, end: int) -> bool:
    """Whether `text` is cut at `end`: ends there, or goes on with an ellipsis or a newline."""
    return end >= len(text) or text.startswith(("...", "…", "\n"), end)


def flat_spans(found: dict[int, tuple[Span, ...]]) -> tuple[tuple[int, int, int], ...]:
    """`find_secrets`' answer as the index records it: (line, start, end) triples."""
    return tuple(
        (number, start, end) for number, spans in sorted(found.items()) for start, end in spans
    )


def spans_by_line(flat: tuple[tuple[int, int, int], ...]) -> dict[int, tuple[Span, ...]]:
    found: dict[int, list[Span]] = {}
    for number, start, end in flat:
        found.setdefault(number, []).append((start, end))
    return {number: tuple(spans) for number, spans in found.items()}


FileSecrets = tuple[str | None, tuple[tuple[int, int, int], ...]]
"""Why a file is a secret whole (or None), and the (line, start, end) spans to mask."""


def scan_file(data: bytes, path: str) -> FileSecrets:
    """What the index records of a file's secrets, once per version: why the whole file
    is one (`secret_file_reason`), or the (line, start, end) spans to mask in it."""
    text = data.decode("utf-8", "replace")
    reason = secret_file_reason(text, path)
    if reason is not None:
        return reason, ()
    return None, flat_spans(_memo.found(text, path))


@functools.lru_cache(maxsize=8)
def _block_lines(text: str) -> frozenset[str]:
    """The private-key body lines of a document, as text: found from the whole document,
    masked wherever a window of it shows them."""
    lines = text.split("\n")
    return frozenset(
        lines[number][start:end] for number, (start, end) in generic.key_block_lines(text).items()
    )


def mask_window(prefix: str, suffix: str, document: str, path: str) -> tuple[str, str]:
    """The open document's prefix and suffix (the cursor between them) with secrets masked,
    except what is being typed at the cursor: a finding on the cursor's line that reaches
    the cursor is left until it is complete (the line's value ended by a quote, a space or
    a delimiter before the cursor, or the cursor moved off the line)."""
    syntax = syntax_of(path)
    blocks = _block_lines(document) if "PRIVATE KEY" in document else frozenset()
    head, newline, typed = prefix.rpartition("\n")
    rest, newline_after, tail = suffix.partition("\n")
    column = len(typed)
    cursor_line = typed + rest
    spans = tuple(
        (start, end)
        for start, end in _window_spans(cursor_line, syntax, blocks)
        if not start <= column <= end
    )
    masked_cursor_line = _mask_line(cursor_line, spans) if spans else cursor_line
    typed_masked, rest_masked = _split_at(masked_cursor_line, cursor_line, spans, column)
    prefix_masked = _mask_block(head, syntax, blocks, document, (0,)) + newline + typed_masked
    suffix_masked = rest_masked + newline_after + _mask_block(tail, syntax, blocks, document, (-1,))
    return prefix_masked, suffix_masked


def mask_piece(text: str, document: str, path: str) -> str:
    """A piece of the open document (its imports, its tail) masked, private-key blocks
    known from the whole document."""
    blocks = _block_lines(document) if "PRIVATE KEY" in document else frozenset()
    return _mask_block(text, syntax_of(path), blocks, document, (0, -1))


def secret_values(text: str, document: str, path: str) -> list[str]:
    """The secrets `mask_piece` masks in `text`, in order: what `restore_secrets` puts
    back."""
    blocks = _block_lines(document) if "PRIVATE KEY" in document else frozenset()
    syntax = syntax_of(path)
    return [
        line[start:end]
        for line in text.split("\n")
        for start, end in _window_spans(line, syntax, blocks)
    ]


def restore_secrets(masked: str, values: list[str]) -> str:
    """`masked` with its MASKs replaced by `values` in order: a rewrite of code the model
    saw masked keeps the user's own secrets (a MASK beyond them stays)."""
    if MASK not in masked or not values:
        return masked
    pieces = masked.split(MASK)
    out = [pieces[0]]
    for number, piece in enumerate(pieces[1:]):
        out += (values[number] if number < len(values) else MASK, piece)
    return "".join(out)


def _split_at(masked: str, line: str, spans: tuple[Span, ...], column: int) -> tuple[str, str]:
    """The masked cursor line cut where the cursor was: no span contains the cursor."""
    shift = sum(len(MASK) - (end - start) for start, end in spans if end <= column)
    return masked[: column + shift], masked[column + shift :]


def _window_spans(line: str, syntax: str, blocks: frozenset[str]) -> tuple[Span, ...]:
    if blocks:
        content = line.strip()
        if content and content in blocks:
            start = line.index(content)
            return ((start, start + len(content)),)
    return line_spans(line, syntax) if len(line) > 4 else ()


def _mask_block(
    text: str, syntax: str, blocks: frozenset[str], document: str = "", edges: tuple[int, ...] = ()
) -> str:
    """`text`, a piece of `document`, masked line by line; its `edges` (0 for its first
    line, -1 for its last) may be cut from longer lines of the document, and are judged as
    those whole lines. Only the
    lines `candidate_lines` picks are looked at (each one's findings memoised), so a
    keystroke costs one RE2 pass over the piece and the lines it changed."""
    if not text:
        return text
    lines = text.split("\n")
    cut = {edge % len(lines) for edge in edges} if document else set()
    numbers = set(candidate_lines(text))
    if blocks:
        numbers.update(n for n, line in enumerate(lines) if line.strip() in blocks)
    changed = False
    for number in sorted(numbers | cut):
        line = lines[number]
        spans = _window_spans(line, syntax, blocks) if number in numbers else ()
        if not spans and number in cut and line.strip():
            spans = _spans_of_cut_line(line, document, syntax)
        if spans:
            lines[number] = _mask_line(line, spans)
            changed = True
    return "\n".join(lines) if changed else text


def _spans_of_cut_line(piece: str, document: str, syntax: str) -> tuple[Span, ...]:
    """The spans of `piece`, part of a line of `document`: the whole line's findings, cut
    to the piece (a window that ends inside a value masks what it shows of it)."""
    where = document.find(piece)
    if where < 0:
        return ()
    start = document.rfind("\n", 0, where) + 1
    end = document.find("\n", where)
    line = document[start : len(document) if end < 0 else end]
    if len(line) == len(piece) or f"\n{piece}\n" in document:
        return ()  # a whole line of the document: judged as it is
    offset = where - start
    cut = ((max(0, s - offset), min(len(piece), e - offset)) for s, e in line_spans(line, syntax))
    return tuple((s, e) for s, e in cut if s < e)


SECRET_MANIFEST = re.compile(r"^kind:\s*[\"']?Secret[\"']?\s*$", re.MULTILINE)
SERVICE_ACCOUNT = re.compile(r"\"type\"\s*:\s*\"service_account\"")
CLOUD_CREDENTIALS = re.compile(
    r"^\s*(?:aws_secret_access_key|aws_session_token|azure_client_secret|"
    r"oauth2?_?client_secret|refresh_token|client_secret)\s*[=:]",
    re.MULTILINE | re.IGNORECASE,
)
DOCKER_AUTHS = re.compile(r"\"auths\"\s*:\s*\{[^}]*\"auth\"\s*:", re.DOTALL)
CONFIG_DATA = frozenset({"ini", "cfg", "conf", "properties", "tfvars", "cnf", ""})
"""Files of settings only: one with credentials in it is a credentials file."""


def secret_file_reason(text: str, path: str = "") -> str | None:
    """Why a file is a secret by its content, like `.env` by its name, or None: a service
    account's JSON, a Kubernetes `Secret` manifest, a Docker `auths` config, or a settings
    file (INI, properties, tfvars) holding cloud credentials or other secrets."""
    syntax = syntax_of(path)
    if syntax == "json" and SERVICE_ACCOUNT.search(text) and '"private_key' in text:
        return "a service account's key"
    if syntax == "json" and DOCKER_AUTHS.search(text):
        return "registry credentials"
    if syntax in ("yaml", "yml") and SECRET_MANIFEST.search(text):
        return "a Kubernetes Secret"
    if syntax in CONFIG_DATA:
        if CLOUD_CREDENTIALS.search(text):
            return "cloud credentials"
        if syntax in ("tfvars", "ini", "cfg", "properties") and _memo.found(text, path):
            return "settings with credentials"
    return None
