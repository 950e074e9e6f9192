"""The cursor's window: the lines parsed around the cursor, from the nearest top-level line
at most `WINDOW_ABOVE` lines up to `WINDOW_BELOW` lines below it, at most
`WINDOW_MAX_CHARS`, found from the text alone.

Parsing a window instead of the file keeps the cost of an analysis the same in a file of
any length.
"""

from __future__ import annotations

from typing import Final

from server.completion.cursor.positions import _TRIPLE_QUOTES
from server.completion.cursor.syntax import _PY_CLAUSES

WINDOW_ABOVE: Final = 100
"""Most lines above the cursor that are parsed; the window starts at a top-level line."""
WINDOW_BELOW: Final = 4
"""Lines below the cursor line parsed with it, so the current statement can close."""
WINDOW_MAX_CHARS: Final = 8000
"""Most characters parsed: 100 lines of ordinary code are 2-5 KB, but 100 lines of a
generated table (pygments' unistring, 10 KB string literals) are 20 KB and 3 ms."""
NAMES_ABOVE: Final = 12
"""How far above the current statement names still count as referenced near the cursor."""


def _after_open_string(text: str, start: int, line_start: int, above: tuple[int, ...]) -> int:
    """`start`, or when it is inside a triple-quoted string (by `above`, the
    `_triple_quotes` before it), the line after the string (at most `line_start`): a
    window that starts in a docstring's prose parses as code with errors, and that error
    recovery made the slowest 5% of window parses (2-12 ms for a few KB)."""
    for quotes, count in zip(_TRIPLE_QUOTES, above, strict=True):
        if count % 2 == 1:
            close = text.find(quotes, start, line_start)
            if close < 0:
                return line_start
            return min(line_start, text.find("\n", close) + 1 or line_start)
    return start


def _window_start(text: str, line_start: int, language: str) -> int:
    """Where the parsed window starts: the nearest top-level line at least NAMES_ABOVE
    lines above the cursor, within WINDOW_ABOVE lines; failing that, the least indented of
    those lines."""
    position = line_start
    least_indent = 1 << 30
    least_at = line_start
    python = language == "python"
    for above in range(WINDOW_ABOVE):
        if position == 0:
            return 0
        previous = text.rfind("\n", 0, position - 1) + 1
        line = text[previous : position - 1]
        position = previous
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#/*)]}\"'`":
            continue
        if python and stripped.startswith(_PY_CLAUSES):
            continue
        indent = len(line) - len(stripped)
        if indent == 0 and above >= NAMES_ABOVE:
            return previous
        if indent <= least_indent:
            least_indent, least_at = indent, previous
    return least_at


def _line_start_above(text: str, line_start: int, lines: int) -> int:
    position = line_start
    for _ in range(lines):
        if position == 0:
            break
        position = text.rfind("\n", 0, position - 1) + 1
    return position


def _capped_window(text: str, start: int, line_start: int, offset: int) -> tuple[int, int]:
    """The window from `start` to WINDOW_BELOW lines below the cursor, kept to
    WINDOW_MAX_CHARS by dropping the lines below the cursor's line, then lines from the
    top (the cursor's own line always stays)."""
    end = _window_end(text, offset)
    if end - start <= WINDOW_MAX_CHARS:
        return start, end
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end + 1
    end = max(line_end, min(end, start + WINDOW_MAX_CHARS))
    if end - start > WINDOW_MAX_CHARS:
        newline = text.find("\n", end - WINDOW_MAX_CHARS - 1, line_start)
        start = line_start if newline < 0 else newline + 1
    return start, end


def _window_end(text: str, offset: int) -> int:
    end = offset
    for _ in range(WINDOW_BELOW + 1):
        newline = text.find("\n", end)
        if newline < 0:
            return len(text)
        end = newline + 1
    return end
