"""The last filter: a suggestion must not break a file that parsed.

Ghost text that would leave the file with a syntax error it did not have is worse than
no suggestion. The check parses (tree-sitter) only the top-level statements around the
cursor, with and without the suggestion; a block that breaks the file is cut back to the
most whole lines that do not, and a single line that breaks it is dropped. A file that
did not parse before (the user is in the middle of typing) is left to the user.
"""

from __future__ import annotations

from server.completion.cursor import parse

WINDOW_LINES = 300
"""How far the window may reach above and below the cursor line."""
PARSE_STEPS = 400
"""A parse that takes more steps (`server.completion.cursor.parse`) is abandoned and the suggestion
kept: the check is a filter, not a gate on latency. The largest windows (600 lines of the
biggest stdlib files, with or without an unclosed call) take up to ~200 steps, 4-14 ms
here. Steps, not time, so that what is kept depends on the text alone."""
CONTINUATIONS = ("else", "elif", "except", "finally", "case", "catch")


def keep_parsing(text: str, offset: int, suggestion: str, language: str | None) -> str:
    """`suggestion`, or as many of its whole lines as keep the window parsing, or ''."""
    if not suggestion or language is None:
        return suggestion
    start, end = _window(text, offset)
    before, after = text[start:offset], text[offset:end]
    root = parse((before + after).encode(), language, PARSE_STEPS)
    if root is None or root.has_error:
        return suggestion
    lines = suggestion.split("\n")
    for count in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:count]).rstrip()
        if not candidate.strip():
            break
        root = parse((before + candidate + after).encode(), language, PARSE_STEPS)
        if root is None or not root.has_error:
            return candidate
    return ""


def _window(text: str, offset: int) -> tuple[int, int]:
    """From the start of the top-level statement holding the cursor to the start of the
    next one (or as far as WINDOW_LINES reach)."""
    line_start = text.rfind("\n", 0, offset) + 1
    start = line_start
    for _ in range(WINDOW_LINES):
        if start == 0 or _starts_statement(text, start):
            break
        start = text.rfind("\n", 0, start - 1) + 1
    end = text.find("\n", offset)
    for _ in range(WINDOW_LINES):
        if end < 0:
            return start, len(text)
        if _starts_statement(text, end + 1):
            return start, end + 1
        end = text.find("\n", end + 1)
    return start, len(text) if end < 0 else end + 1


def _starts_statement(text: str, line_start: int) -> bool:
    """A line at column 0 that is code, and not the continuation of a statement above."""
    head = text[line_start : line_start + 16]
    if not head or head[0] in " \t\n\r#/*)]}\"'`":
        return False
    return not head.startswith(CONTINUATIONS)
