"""Hover hints: where the name under the cursor is defined in another project file, and
whether the completion prompt shows that definition right now.

LSP-free and model-free. The name is read from the text around the position (the
identifier and the object chain before it: `storage.open_repo`, `self.repo.save`) and
resolved with the context builder's own resolution (`ContextBuilder.resolve`: imports,
re-exports, `module.attr` chains, local types, base classes), so the hover names exactly
the definition a completion at that spot would put in its prompt. The answer is cheap —
one cursor analysis (a window parse) and memoised lookups — which keeps hovers within a
few milliseconds on large workspaces.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

from cache.model import Definition
from server.completion.context import ContextBuilder
from server.completion.cursor import analyse, chain_before, file_imports

_IDENT: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
MAX_DOC_CHARS: Final = 1200


@dataclass(frozen=True, slots=True)
class HoverInfo:
    """What a hover shows about one name."""

    start: int
    end: int
    """The identifier's span in the text (`str` offsets)."""
    chain: tuple[str, ...]
    """The name as written: ("storage", "open_repo")."""
    path: str
    """The defining file, relative to the workspace root."""
    definition: Definition | None
    """None: the name stands for a module (the file itself)."""
    shown: str | None
    """How the latest completion prompt for this file shows it: "definition", "file" or
    None (see `ContextBuilder.shown_in_context`)."""


def identifier_at(text: str, offset: int) -> tuple[int, int] | None:
    """The span of the identifier at or just before `offset`, or None."""
    offset = max(0, min(offset, len(text)))
    start = end = offset
    while start > 0 and text[start - 1] in _IDENT:
        start -= 1
    while end < len(text) and text[end] in _IDENT:
        end += 1
    if start == end or text[start].isdigit():
        return None
    return start, end


def hover_at(
    builder: ContextBuilder,
    file_path: str,
    text: str,
    offset: int,
    language: str | None,
    quick: bool = True,
) -> HoverInfo | None:
    """The definition in another project file that the name at `offset` resolves to, or
    None (no name there, a name in a comment or string, or one not from another file).
    With `quick`, names that cannot resolve (`may_resolve`) are answered without the
    cursor analysis, which is most of a hover's cost."""
    if builder.index is None:
        return None
    span = identifier_at(text, offset)
    if span is None:
        return None
    start, end = span
    objects, word, after_dot = chain_before(text, end, language)
    if not word:
        return None
    chain = (*objects, word) if after_dot else (word,)
    if quick and not may_resolve(chain, text, language):
        return None
    cursor = analyse(text, end, language, names=False)
    if cursor.in_prose:
        return None
    target = builder.resolve(file_path, text, cursor, chain)
    if target is None or target.path == file_path:
        return None
    definition = target.definition
    qualified = definition.qualified_name if definition is not None else ""
    shown = builder.shown_in_context(file_path, target.path, qualified)
    return HoverInfo(start, end, chain, target.path, definition, shown)


_TYPED_BY_DECLARATION: Final = frozenset({"python", "typescript", "tsx", "javascript"})
"""Languages whose local types (`ContextBuilder.resolve` reads them from the cursor
analysis) come only from declarations that write the name before `:` or `=`, or after
`as` (`x = Repo()`, `x: Repo`, `with open() as x`, `const x = new Repo()`)."""


def may_resolve(chain: tuple[str, ...], text: str, language: str | None) -> bool:
    """False only where the builder's resolution of `chain` in `text` must find nothing:
    its first name is not `self`/`this`/`cls`, not imported (nor a dotted import's
    start), the file imports no `*`, and no declaration in the file can give the name a
    local type. Names like that — locals, builtins, words in comments — are most of what a
    mouse passes over."""
    if language not in _TYPED_BY_DECLARATION:
        return True
    head = chain[0]
    if head in ("self", "cls", "this"):
        return True
    imports = file_imports(text, language)
    if imports.star or any(
        local == head or local.startswith(f"{head}.") for local in imports.bindings
    ):
        return True
    return _declared(text, head)


_DECLARING: Final = re.compile(r"[ \t]*\??[ \t]*(?::(?!:)|=(?!=))")
"""What follows a name that a declaration gives a type or a value: `x = `, `x: `, `x?: `."""


def _declared(text: str, name: str) -> bool:
    """Whether `name`, as a whole name (not after `.`), is written before `:` or `=`, or
    after `as` (`with open() as name`), anywhere in `text`.

    Scans with `str.find` for the name and looks at the character after it before matching
    one precompiled pattern: a regex per name is compiled on every hover of a new name
    (`re`'s own cache holds 512), which was a quarter of a hover's time. A name written
    more than `_SCAN_LIMIT` times (`i`, `x`) is left to the regexes (compiled once per
    name, kept), which skip from one occurrence to the next at C speed."""
    size = len(name)
    as_word = bool(name) and _is_word(name[-1])
    find = text.find
    start = find(name)
    for _ in range(_SCAN_LIMIT):
        if start < 0:
            return False
        end = start + size
        after = text[end : end + 1]
        if after and after in " \t?:=":
            declaring = _DECLARING.match(text, end)
            if declaring is not None:
                before = text[start - 1] if start else " "
                if not (before.isalnum() or before in "_.$"):
                    return True
                start = find(name, declaring.end())
                continue
        if (
            start
            and text[start - 1] in " \t"
            and as_word != _is_word(after)
            and _after_as(text, start)
        ):
            return True
        start = find(name, start + 1)
    return start >= 0 and _declared_by_regex(text, name)


_SCAN_LIMIT: Final = 64


def _declared_by_regex(text: str, name: str) -> bool:
    for pattern in _declaration_patterns(name):
        for match in pattern.finditer(text):
            before = text[match.start() - 1] if match.start() else " "
            if not (before.isalnum() or before in "_.$"):
                return True
    return False


@functools.lru_cache(maxsize=1024)
def _declaration_patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`name` before `:`/`=` (the literal first, so that the regex engine skips ahead to
    the name; the character before it is checked by the caller: a lookbehind first would
    try every position), and `name` after `as`."""
    escaped = re.escape(name)
    return (
        re.compile(rf"{escaped}[ \t]*\??[ \t]*(?::(?!:)|=(?!=))"),
        re.compile(rf"as[ \t]+{escaped}\b"),
    )


def _after_as(text: str, start: int) -> bool:
    """Whether `as`, then spaces or tabs, come right before `start`, and `as` starts a
    word (not after a name character, `.` or `$`)."""
    spaces = start
    while spaces > 0 and text[spaces - 1] in " \t":
        spaces -= 1
    if spaces == start or spaces < 2 or text[spaces - 2 : spaces] != "as":
        return False
    before = text[spaces - 3] if spaces >= 3 else " "
    return not (before.isalnum() or before in "_.$")


def _is_word(char: str) -> bool:
    """A `\\w` character, as `re` sees it (`\\b` is between one and a non-one)."""
    return char.isalnum() or char == "_"


def render(info: HoverInfo, language: str | None, markdown: bool, link: str | None) -> str:
    """The hover's text: signature, docstring, where it is defined and whether the
    completion context shows it. `link` is the defining file's URI (with its line), for a
    markdown link."""
    definition = info.definition
    line = definition.start_line + 1 if definition is not None else 1
    where = f"{info.path}:{line}"
    shown = {
        "definition": "in the completion context now",
        "file": "in the completion context now (its file's outline)",
        None: "not in the completion context now",
    }[info.shown]
    doc = _clip(definition.doc) if definition is not None and definition.doc else ""
    heading = f"module {info.path}" if definition is None else definition.signature.strip()
    if not markdown:
        parts = [heading]
        if doc:
            parts.append(doc)
        parts.append(f"{where} · {shown}")
        return "\n\n".join(parts)
    if definition is None:
        parts = [f"module `{info.path}`"]
    else:
        fence = _fence(heading)
        parts = [f"{fence}{language or ''}\n{heading}\n{fence}"]
    if doc:
        parts.append(doc)
    place = f"[{where}]({link})" if link else f"`{where}`"
    parts.append(f"{place} · *{shown}*")
    return "\n\n".join(parts)


def _fence(text: str) -> str:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _clip(doc: str) -> str:
    doc = doc.strip()
    return doc if len(doc) <= MAX_DOC_CHARS else doc[: MAX_DOC_CHARS - 1].rstrip() + "…"
