"""The import statements of a file's text, found by scanning lines (no parse).

When a long file's prefix is cut to fit the budget, its imports are the first thing
lost, and with them what the model most needs to know about the names it may use next:
which ones are in scope, and where they come from. The context builder shows them again
(`server.context`), taken from the part of the file the prefix no longer holds.

A line scan, not a tree: it runs on every build that cuts the prefix, must take the
same time on a file that does not parse (the one being typed), and only needs to know
where each statement starts and ends. Indented imports (under `if TYPE_CHECKING:`, `try:`)
are kept, dedented: the list says what is imported, not under which condition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final

_PY_START: Final = re.compile(r"(?:from\s+[\w.]+\s+import\b|import\s+[\w.])")
_TS_START: Final = re.compile(
    r"(?:import\b[\s{*'\"\w]|export\s+(?:\*|\{[^}]*\}?)\s*(?:from\b|$)"
    r"|(?:const|let|var)\s+[\w{}\s,]+=\s*require\()"
)
_TS_MODULE: Final = re.compile(r"""(?:from\s*|require\(\s*|^import\s*)['"][^'"]*['"]""")
_JAVA_START: Final = re.compile(r"import\s+[\w.*]")
_RUST_START: Final = re.compile(r"(?:pub(?:\([\w:]+\))?\s+)?(?:use\s|extern\s+crate\s)")
_C_START: Final = re.compile(r"#\s*(?:include|import)\b")
_GO_START: Final = re.compile(r"import\b")


def import_statements(text: str, language: str | None) -> list[str]:
    """`text`'s import statements, in order, each whole (its lines joined) and dedented;
    exact repeats dropped. [] for a language without a scanner."""
    scan = _SCANNERS.get(language or "")
    if scan is None:
        return []
    return list(dict.fromkeys("\n".join(statement) for statement in scan(text.splitlines())))


def _dedented(statement: list[str]) -> list[str]:
    indent = len(statement[0]) - len(statement[0].lstrip())
    if not indent:
        return statement
    return [line[indent:] if line[:indent].isspace() else line.lstrip() for line in statement]


def _python(lines: list[str]) -> Iterator[list[str]]:
    """Import statements outside triple-quoted strings (docstrings show examples)."""
    index, quote = 0, ""
    while index < len(lines):
        line = lines[index]
        if quote:
            if quote in line:
                quote = ""
            index += 1
            continue
        if not _PY_START.match(line.lstrip()):
            quote = _opens_string(line)
            index += 1
            continue
        end, depth = index, 0
        while True:
            line = _without_comment(lines[end])
            depth += line.count("(") - line.count(")")
            continued = depth > 0 or line.rstrip().endswith("\\")
            if not continued or end + 1 >= len(lines):
                break
            end += 1
        yield _dedented(lines[index : end + 1])
        index = end + 1


def _opens_string(line: str) -> str:
    """The triple quote a line leaves open ("" when none)."""
    for quote in ('"""', "'''"):
        if line.count(quote) % 2:
            return quote
    return ""


def _without_comment(line: str) -> str:
    cut = line.find("#")
    return line if cut == -1 else line[:cut]


def _until(lines: list[str], start: int, done: Callable[[str, str], bool]) -> int:
    """The last line of the statement starting at `start`: the first line for which
    `done(line, statement so far)` holds, or a blank line, or the end."""
    so_far = ""
    for end in range(start, len(lines)):
        so_far += lines[end] + "\n"
        if done(lines[end], so_far) or (end > start and not lines[end].strip()):
            return end
    return len(lines) - 1


def _statements(
    lines: list[str], start: re.Pattern[str], done: Callable[[str, str], bool]
) -> Iterator[list[str]]:
    index = 0
    while index < len(lines):
        if not start.match(lines[index].lstrip()):
            index += 1
            continue
        end = _until(lines, index, done)
        yield _dedented(lines[index : end + 1])
        index = end + 1


def _typescript(lines: list[str]) -> Iterator[list[str]]:
    def done(line: str, so_far: str) -> bool:
        return line.rstrip().endswith(";") or _TS_MODULE.search(so_far.strip()) is not None

    return _statements(lines, _TS_START, done)


def _semicolon(line: str, so_far: str) -> bool:
    return line.rstrip().endswith(";")


def _java(lines: list[str]) -> Iterator[list[str]]:
    return _statements(lines, _JAVA_START, _semicolon)


def _rust(lines: list[str]) -> Iterator[list[str]]:
    return _statements(lines, _RUST_START, _semicolon)


def _c(lines: list[str]) -> Iterator[list[str]]:
    return _statements(lines, _C_START, lambda line, so_far: True)


def _go(lines: list[str]) -> Iterator[list[str]]:
    def done(line: str, so_far: str) -> bool:
        head = so_far.lstrip()[len("import") :].lstrip()
        return not head.startswith("(") or line.strip() == ")"

    return _statements(lines, _GO_START, done)


_SCANNERS: Final[dict[str, Callable[[list[str]], Iterator[list[str]]]]] = {
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
