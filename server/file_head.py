"""The import statements of a file's text, found by regular expressions (no parse).

When a long file's prefix is cut to fit the budget, its imports are the first thing
lost, and with them what the model most needs to know about the names it may use next:
which ones are in scope, and where they come from. The context builder shows them again
(`server.context`), taken from the part of the file the prefix no longer holds.

No tree: it runs on builds that cut the prefix, must take the same time on a file that
does not parse (the one being typed), and only needs where each statement starts and
ends. Candidate lines are found with `str.find` on the keyword (a loop over the lines, or
one multi-line regex search, took 1-3 ms on 2,000 lines); only those few lines are
matched and walked in Python. Indented imports (under `if TYPE_CHECKING:`, `try:`) are
kept, dedented: the list says what is imported, not under which condition.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

Done = Callable[[str, str], bool]
"""Whether a statement ends with this line: (the line, the statement up to it)."""


@dataclass(frozen=True, slots=True)
class _Start:
    """Where a language's statements start: a line holding one of `words` (found with
    `str.find`, which is what makes this fast), matched at its beginning by `pattern`,
    whose group 1 is the line's indentation."""

    words: tuple[str, ...]
    pattern: re.Pattern[str]

    def matches(self, text: str) -> list[re.Match[str]]:
        """The statement starts of `text`, in order."""
        lines = set()
        for word in self.words:
            at = text.find(word)
            while at != -1:
                lines.add(text.rfind("\n", 0, at) + 1)
                at = text.find(word, at + len(word))
        found = (self.pattern.match(text, line) for line in sorted(lines))
        return [match for match in found if match is not None]


def _start(words: tuple[str, ...], pattern: str) -> _Start:
    return _Start(words, re.compile(rf"([ \t]*)(?:{pattern})"))


_PY_START: Final = _start(("import",), r"from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+[\w.]")
_TS_START: Final = _start(
    ("import", "export", "require"),
    r"import\b[ \t{*'\"\w]|export[ \t]+(?:\*|\{[^}\n]*\}?)[ \t]*(?:from\b|$)"
    r"|(?:const|let|var)[ \t]+[\w{}\t ,]+=[ \t]*require\(",
)
_TS_MODULE: Final = re.compile(r"""(?:from\s*|require\(\s*|^import\s*)['"][^'"]*['"]""")
_JAVA_START: Final = _start(("import",), r"import[ \t]+[\w.*]")
_RUST_START: Final = _start(
    ("use", "crate"), r"(?:pub(?:\([\w:]+\))?[ \t]+)?(?:use[ \t]|extern[ \t]+crate[ \t])"
)
_C_START: Final = _start(("include", "import"), r"#[ \t]*(?:include|import)\b")
_GO_START: Final = _start(("import",), r"import\b")


def import_statements(text: str, language: str | None) -> list[str]:
    """`text`'s import statements, in order, each whole (its lines joined) and dedented;
    exact repeats dropped. [] for a language without a scanner."""
    scan = _SCANNERS.get(language or "")
    if scan is None:
        return []
    return list(dict.fromkeys(scan(text)))


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end == -1 else end


def _dedented(statement: str, indent: int) -> str:
    if not indent:
        return statement
    lines = statement.split("\n")
    return "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines)


def _statements(text: str, start: _Start, done: Done) -> Iterator[str]:
    """Each statement from a match of `start` to the first line for which `done` holds
    (or the line before a blank one, or the end of the text)."""
    after = 0
    for match in start.matches(text):
        if match.start() < after:  # a line of the statement before
            continue
        after = _statement_end(text, match.start(), done)
        yield _dedented(text[match.start() : after], len(match.group(1)))


def _statement_end(text: str, start: int, done: Done) -> int:
    line_start = start
    while True:
        line_end = _line_end(text, line_start)
        line = text[line_start:line_end]
        if line_start > start and not line.strip():
            return line_start - 1
        if done(line, text[start:line_end]) or line_end >= len(text):
            return line_end
        line_start = line_end + 1


def _python(text: str) -> Iterator[str]:
    """Import statements outside triple-quoted strings (docstrings show examples); a
    statement goes on while its parentheses are open or its line ends in a backslash."""
    strings = _triple_quoted(text)
    opens = [span[0] for span in strings]
    for match in _PY_START.matches(text):
        at = bisect.bisect_right(opens, match.start()) - 1
        if at >= 0 and match.start() < strings[at][1]:
            continue
        end, depth = match.start(), 0
        while True:
            line_end = _line_end(text, end)
            line = text[end:line_end].split("#", 1)[0]
            depth += line.count("(") - line.count(")")
            if not (depth > 0 or line.rstrip().endswith("\\")) or line_end >= len(text):
                break
            end = line_end + 1
        yield _dedented(text[match.start() : line_end].rstrip("\n"), len(match.group(1)))


def _triple_quoted(text: str) -> list[tuple[int, int]]:
    """The spans of `text`'s triple-quoted strings (an unclosed one runs to the end).
    Quotes in a comment, or between two of the other quote character (a one-line string
    of three quotes), are not counted."""
    quotes = sorted(
        (at, quote)
        for quote in ('"""', "'''")
        for at in _occurrences(text, quote)
        if not _quoted_or_commented(text, at)
    )
    spans: list[tuple[int, int]] = []
    opened, open_quote = -1, ""
    for at, quote in quotes:
        if not open_quote:
            opened, open_quote = at, quote
        elif quote == open_quote and at >= opened + 3:
            spans.append((opened, at + 3))
            open_quote = ""
    if open_quote:
        spans.append((opened, len(text)))
    return spans


def _quoted_or_commented(text: str, at: int) -> bool:
    before, after = text[at - 1 : at], text[at + 3 : at + 4]
    if before and before == after and before in "'\"" and before != text[at]:
        return True  # '"""' or "'''"
    line = text[text.rfind("\n", 0, at) + 1 : at]
    comment = line.find("#")
    return comment != -1 and "'" not in line[:comment] and '"' not in line[:comment]


def _occurrences(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at != -1:
        yield at
        at = text.find(needle, at + len(needle))


def _typescript(text: str) -> Iterator[str]:
    def done(line: str, so_far: str) -> bool:
        return line.rstrip().endswith(";") or _TS_MODULE.search(so_far.strip()) is not None

    return _statements(text, _TS_START, done)


def _semicolon(line: str, so_far: str) -> bool:
    return line.rstrip().endswith(";")


def _java(text: str) -> Iterator[str]:
    return _statements(text, _JAVA_START, _semicolon)


def _rust(text: str) -> Iterator[str]:
    return _statements(text, _RUST_START, _semicolon)


def _c(text: str) -> Iterator[str]:
    return _statements(text, _C_START, lambda line, so_far: True)


def _go(text: str) -> Iterator[str]:
    def done(line: str, so_far: str) -> bool:
        head = so_far.lstrip()[len("import") :].lstrip()
        return not head.startswith("(") or line.strip() == ")"

    return _statements(text, _GO_START, done)


_SCANNERS: Final[dict[str, Callable[[str], Iterator[str]]]] = {
    "python": _python,
    "typescript": _typescript,
    "tsx": _typescript,
    "javascript": _typescript,
    "java": _java,
    "kotlin": _java,
    "scala": _java,
    "rust": _rust,
    "go": _go,
    "c": _c,
    "cpp": _c,
    "objc": _c,
}
