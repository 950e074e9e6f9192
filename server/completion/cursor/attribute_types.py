"""Types read from text: the main type a type's text names (`type_chain`), and the type a
file declares for `self.x` / `this.x` anywhere in it (`attribute_type`,
`python_attribute_types`).

The searches are anchored on literals, not regexes that could start anywhere, so that a
large file costs little.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from typing import Final

from server.completion.cursor.syntax import _IDENT_CHARS, _TYPE_WRAPPERS


def type_chain(text: str) -> tuple[str, ...]:
    """The first name in a type's text that is not a wrapper or builtin, as a chain."""
    text = text.replace("::", ".").lstrip(":").strip().strip("\"'")
    for match in re.finditer(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", text):
        parts = tuple(match.group().split("."))
        if parts[-1] not in _TYPE_WRAPPERS and parts[0] not in ("typing", "collections"):
            return parts
    return ()


# --- attribute types found anywhere in the file ------------------------------------------------


def attribute_type(text: str, attribute: str, language: str | None) -> tuple[str, ...]:
    """The type of `self.attribute` / `this.attribute` as the file declares it anywhere:
    `self.repo: Repo`, `self.repo = Repo()`, `self.repo = repo` with a `repo: Repo`
    parameter, a class-level `repo: Repo`, TS `private repo: Repo`, Java `Repo repo;`.

    Every search is anchored on a literal (`_after`), never a regex that starts with
    anything else: a leading `\b` makes the regex engine try every position."""
    if language == "python":
        for match in _after(text, f"self.{attribute}", _PY_SELF_ASSIGNMENT):
            assigned = _assigned_type(text, match)
            if assigned is not None:
                return assigned
        for field in _after(text, attribute, _ANNOTATION, line_start=True):
            return type_chain(field.group(1))
        return ()
    if language in ("typescript", "tsx", "javascript"):
        for declared in _after(text, attribute, _TS_FIELD):
            before = text[: declared.start()].rsplit("\n", 1)[-1][: -len(attribute)]
            if (
                before.endswith("this.")
                or not before.strip(" \t")
                or before.rstrip().endswith(("private", "public", "protected", "readonly"))
            ):
                return type_chain(declared.group(1))
        for created in _after(text, f"this.{attribute}", _TS_NEW):
            return tuple(created.group(1).split("."))
        return ()
    if language == "java":
        for declared in _after(text, attribute, _JAVA_FIELD_END):
            words = text[max(0, declared.start() - 200) : declared.start()].split()
            if words and words[-1][:1].isupper():
                return type_chain(words[-1])
        return ()
    if language in ("go", "rust"):
        for member in _after(text, attribute, _GO_RUST_FIELD, line_start=True):
            return type_chain(member.group(1))
    return ()


def _assigned_type(text: str, match: re.Match[str]) -> tuple[str, ...] | None:
    """The type a `self.x = ...` / `self.x: T = ...` assignment (a `_PY_SELF_ASSIGNMENT`
    match) gives `x`; None when it says nothing and a later one may."""
    if match.group(1):
        return type_chain(match.group(1))
    value = match.group(2).strip()
    called = re.match(r"([A-Za-z_][\w.]*)[ \t]*\(", value)
    if called:
        return tuple(called.group(1).split("."))
    if re.fullmatch(r"[A-Za-z_]\w*", value):
        for parameter in _after(text, value, _ANNOTATION):
            return type_chain(parameter.group(1))
    return None


def python_attribute_types(text: str) -> dict[str, tuple[str, ...]]:
    """`attribute_type` of every attribute a Python file declares, found in one pass over
    its `self.` assignments and one over its lines: a test file asks for `self.x` at
    every cursor, and each search cost up to 2 ms in 200 KB. Attributes it leaves out
    have no type."""
    found: dict[str, tuple[str, ...]] = {}
    for site in _PY_SELF_SITE.finditer(text):
        start, attribute = site.start(), site.group(1)
        if attribute in found or (start and text[start - 1] in _IDENT_CHARS):
            continue
        match = _PY_SELF_ASSIGNMENT.match(text, site.end())
        declared = _assigned_type(text, match) if match is not None else None
        if declared is not None:
            found[attribute] = declared
    for line in _PY_LINE_NAME.finditer("\n" + text):  # its positions are one past text's
        name = line.group(1)
        if name not in found:
            annotation = _ANNOTATION.match(text, line.end() - 1)
            if annotation is not None:
                found[name] = type_chain(annotation.group(1))
    return found


_PY_SELF_SITE: Final = re.compile(r"self\.(\w+)")
_PY_LINE_NAME: Final = re.compile(r"\n[ \t]*([A-Za-z_]\w*)(?=[ \t]*:)")
_PY_SELF_ASSIGNMENT: Final = re.compile(r"[ \t]*(?::[ \t]*([^=\n]+?))?[ \t]*=(?!=)[ \t]*([^\n]+)")
_ANNOTATION: Final = re.compile(r"[ \t]*:[ \t]*([^,)=\n]+)")
_TS_FIELD: Final = re.compile(r"[ \t]*[?!]?:[ \t]*([^;=,)\n]+)")
_TS_NEW: Final = re.compile(r"[ \t]*=[ \t]*new[ \t]+([A-Za-z_$][\w$.]*)")
_JAVA_FIELD_END: Final = re.compile(r"[ \t]*[;=]")
_GO_RUST_FIELD: Final = re.compile(r"[ \t]*:?[ \t]+\*?&?([A-Za-z_][\w.:]*)")
_NEXT_CHARS: Final[dict[re.Pattern[str], str]] = {
    _PY_SELF_ASSIGNMENT: r"[ \t]*(?::|=(?!=))",
    _ANNOTATION: r"[ \t]*:",
    _TS_FIELD: r"[ \t]*[?!:]",
    _TS_NEW: r"[ \t]*=",
    _JAVA_FIELD_END: r"[ \t]*[;=]",
    _GO_RUST_FIELD: r"[ \t:]",
}
"""What each pattern's match starts with: the lookahead of `_literal_then`, cheaper to
compile than the whole pattern (0.1 against 0.3 ms a literal). Near enough that few
occurrences it finds fail the pattern (`self.x == y` does not count as `self.x = y`):
only the first _MAX_OCCURRENCES are read."""
_MAX_OCCURRENCES: Final = 200
_FIND_FIRST: Final = 16


def _after(
    text: str, literal: str, pattern: re.Pattern[str], line_start: bool = False
) -> Iterator[re.Match[str]]:
    """Matches of `pattern` right after whole-word occurrences of `literal` (at the start
    of a line's text, with `line_start`), in file order, of the first _MAX_OCCURRENCES.

    Past the first _FIND_FIRST occurrences, the rest are found by one regex that starts
    with the literal and looks ahead for `pattern`, so only those it follows cost a
    Python step: a test file calls `self.assertEqual` thousands of times and never
    assigns it. (For a few occurrences `str.find` is the faster scan.)"""
    seen = 0
    position = text.find(literal)
    while position >= 0:
        seen += 1
        match = _match_after(text, position, literal, pattern, line_start)
        if match is not None:
            yield match
        if seen == _FIND_FIRST:
            break
        position = text.find(literal, position + len(literal))
    else:
        return
    rest = _literal_then(literal, pattern).finditer(text, position + len(literal))
    for occurrence in itertools.islice(rest, _MAX_OCCURRENCES - seen):
        match = _match_after(text, occurrence.start(), literal, pattern, line_start)
        if match is not None:
            yield match


def _match_after(
    text: str, position: int, literal: str, pattern: re.Pattern[str], line_start: bool
) -> re.Match[str] | None:
    """`pattern` after the occurrence of `literal` at `position`, if that is a whole word
    (and, with `line_start`, the first on its line)."""
    end = position + len(literal)
    before = text[position - 1] if position else "\n"
    after = text[end] if end < len(text) else "\n"
    if before in _IDENT_CHARS or after in _IDENT_CHARS:
        return None
    if line_start and text[text.rfind("\n", 0, position) + 1 : position].strip():
        return None
    return pattern.match(text, end)


@functools.lru_cache(maxsize=256)
def _literal_then(literal: str, pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`literal` where what `pattern` starts with follows it (a lookahead: the match is
    the literal; `_match_after` then applies `pattern` itself)."""
    follows = _NEXT_CHARS.get(pattern, pattern.pattern)
    return re.compile(f"{re.escape(literal)}(?={follows})", pattern.flags)
