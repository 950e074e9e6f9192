"""The chain being typed at the cursor (`self.repo.sa|`) and the call whose argument list
holds it, read backwards from the text, so that they are found even when the line does
not parse yet.
"""

from __future__ import annotations

import re
from typing import Final

from server.completion.cursor.results import CALL
from server.completion.cursor.syntax import _IDENT_CHARS, _KEYWORDS

CALL_SCAN_CHARS: Final = 600
"""How far back from the cursor to look for the open parenthesis of the current call."""


def chain_before(text: str, offset: int, language: str | None) -> tuple[tuple[str, ...], str, bool]:
    """The chain just before `offset`, read backwards from the text: (object chain, the
    identifier being typed, whether a dot precedes it). `a.b(1).c|` gives
    (("a", "b", "()"), "c", True); `verify_dir|` gives ((), "verify_dir", False)."""
    position = offset
    while position > 0 and text[position - 1] in _IDENT_CHARS:
        position -= 1
    partial = text[position:offset]
    if partial[:1].isdigit():
        return (), "", False
    parts: list[str] = []
    after_dot = False
    separators = ("::", ".") if language == "rust" else (".",)
    limit = max(0, offset - 400)
    while position > limit:
        separator = next((s for s in separators if text.startswith(s, position - len(s))), None)
        if separator is None:
            break
        if not parts:
            after_dot = True
        position -= len(separator)
        if position > 0 and text[position - 1] in ")]":
            opened = _matching_open(text, position - 1, limit)
            if opened is None:
                return (), partial, after_dot
            parts.append(CALL if text[position - 1] == ")" else "[]")
            position = opened
        start = position
        while start > limit and text[start - 1] in _IDENT_CHARS:
            start -= 1
        word = text[start:position]
        if not word or word[0].isdigit():
            if parts and parts[-1] in (CALL, "[]") and not word:
                return (), partial, after_dot  # `(a + b).x`: not a name
            break
        parts.append(word)
        position = start
    parts.reverse()
    if parts and parts[0] in (CALL, "[]"):
        return (), partial, after_dot
    if "[]" in parts:
        parts = parts[: parts.index("[]")]
        return tuple(parts), partial, after_dot
    return tuple(parts), partial, after_dot


def _matching_open(text: str, close: int, limit: int) -> int | None:
    """The index of the bracket that opens the one at `close`, scanning back to `limit`."""
    depth = 0
    position = close
    while position >= limit:
        char = text[position]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            depth -= 1
            if depth == 0:
                return position
        position -= 1
    return None


def _callee(text: str, offset: int, language: str | None) -> tuple[str, ...]:
    """The chain called by the innermost argument list still open at `offset`: the
    brackets (and blank lines) of the CALL_SCAN_CHARS before it, read backwards."""
    depth = 0
    marks = list(_CALL_MARKS.finditer(text, max(0, offset - CALL_SCAN_CHARS), offset))
    for mark in reversed(marks):
        char, position = mark.group(), mark.start()
        if char in ")]":
            depth += 1
        elif char == "[":
            depth -= 1
            if depth < 0:
                return ()
        elif char == "(":
            if depth == 0:
                chain, name, _ = chain_before(text, position, language)
                return (*chain, name) if name and name not in _KEYWORDS else ()
            depth -= 1
        elif char == "\n":
            return ()  # a blank line: a new paragraph of code
        elif depth == 0:  # ; { }
            return ()
    return ()


_CALL_MARKS: Final = re.compile(r"[()\[\];{}]|(?<=\n)\n")
