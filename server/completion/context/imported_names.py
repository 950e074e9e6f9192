"""How much each name the current file imports counts at a cursor: a name imported but not
used yet above the cursor is a strong hint of what comes next, one used far above a
weaker one, one used near the cursor the weakest (its definition still explains it).
Where each imported name is used is found in one pass over a file (`_Uses`), memoised,
and answered for any line by bisection; and the dotted names that start with an
imported name, which `ContextBuilder.prepare` resolves ahead."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import xxhash

from server.completion.context.lru import _Lru
from server.completion.cursor import Binding, CursorInfo, Imports


@dataclass(frozen=True, slots=True)
class _Uses:
    """Where the names a file imports are used outside import statements (where each use
    starts, in order): one pass over a file answers `_imported_names` for every line of
    it, by bisection."""

    text: str
    names: frozenset[str]
    starts: dict[str, list[int]]

    def covers(self, text: str, line_start: int, names: frozenset[str]) -> bool:
        """Whether these are the uses of `names` in `text` above `line_start`: the text
        there is the same, and no name was imported since."""
        return names <= self.names and (
            self.text is text
            or (len(self.text) >= line_start and self.text[:line_start] == text[:line_start])
        )


UNUSED_IMPORT_SCORE: Final = 150.0
"""A name the file imports but does not use near the cursor yet: a strong hint of what
comes next (people import, then write the use), between a name of the current statement
(200) and one of the lines above (100)."""
USED_EARLIER_IMPORT_SCORE: Final = 80.0
"""An imported name used far above the cursor, not near it."""
USED_IMPORT_SCORE: Final = 50.0
"""An imported name the code near the cursor already uses: its definition still explains
it."""
IMPORT_WINDOW_CHARS: Final = 8000
"""How far around the cursor an imported name counts as used."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _imported_names(
    text: str,
    cursor: CursorInfo,
    line_start: int | None = None,
    uses: _Uses | None = None,
) -> list[tuple[str, float]]:
    """The names the file imports, scored by whether the code before the cursor uses them
    yet, near its line or further up; module bindings (`import a.b`, `from . import mod`)
    are left to the related files. In order of the import lines, so ties stay stable.
    `line_start` is the offset of the cursor's line (found when not given); `uses`, the
    uses `prepare` found, answers where the text above the line is still the same."""
    named = _named_imports(cursor.imports)
    if not named:
        return []
    if line_start is None:
        line_start = _offset_of_line(text, cursor.line)
    names = frozenset(local for local, _ in named)
    if uses is None or not uses.covers(text, line_start, names):
        uses = _uses_above(text[:line_start], names)
    window_start = max(0, line_start - IMPORT_WINDOW_CHARS)
    scored = []
    for local, _ in named:
        starts = uses.starts.get(local, ())
        if _used_between(starts, len(local), window_start, line_start):
            scored.append((local, USED_IMPORT_SCORE))
        elif starts and starts[0] < line_start:
            scored.append((local, USED_EARLIER_IMPORT_SCORE))
        else:
            scored.append((local, UNUSED_IMPORT_SCORE))
    return scored


MAX_PREPARED_CHAINS: Final = 500
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _imported_chains(text: str, imports: Imports) -> list[tuple[str, ...]]:
    """The dotted names of `text` that start with an imported name (`models.CharField`,
    `np.linalg.norm`), each once, in order of first use: what the references of its
    builds will look up through the imports, re-exports included."""
    heads = {local.split(".")[0] for local in imports.bindings}
    chains = dict.fromkeys(
        chain
        for chain in (tuple(m.group().split(".")) for m in _DOTTED.finditer(text))
        if chain[0] in heads
    )
    return list(chains)[:MAX_PREPARED_CHAINS]


def _named_imports(imports: Imports) -> list[tuple[str, Binding]]:
    """The names `_imported_names` scores: bound to a name taken from a module (module
    bindings are left to the related files), in order of the import lines; memoised for
    the latest `imports` (a file's builds share it while its imports stay the same, and
    a test file imports fifty names)."""
    known = _named_memo.get(id(imports))
    if known is not None and known[0] is imports:
        return known[1]
    named = sorted(
        (binding.line, local, binding)
        for local, binding in imports.bindings.items()
        if binding.name and "." not in local
    )
    found = [(local, binding) for _, local, binding in named]
    _named_memo.put(id(imports), (imports, found))
    return found


_named_memo: _Lru[int, tuple[Imports, list[tuple[str, Binding]]]] = _Lru(8)
"""By the `Imports` object's id, with the object itself: an id is reused once it dies."""


def _use_starts(text: str, names: frozenset[str]) -> dict[str, list[int]]:
    """Where each use of `names` in `text` starts, in order, outside import statements
    (Python's, parenthesised ones included; the `import`/`from` lines of other
    languages)."""
    starts: dict[str, list[int]] = {}
    offset, inside = 0, False
    for line in text.splitlines(keepends=True):
        line_start, offset = offset, offset + len(line)
        if inside:
            inside = ")" not in line
        elif line.lstrip().startswith(("import ", "from ")):
            inside = "(" in line and ")" not in line
        else:
            for match in _IDENTIFIER.finditer(line):
                if match.group() in names:
                    starts.setdefault(match.group(), []).append(line_start + match.start())
    return starts


_uses_memo: _Lru[tuple[bytes, frozenset[str]], _Uses] = _Lru(64)


def _uses_above(text: str, names: frozenset[str]) -> _Uses:
    """`_Uses` of `text` (the lines above a cursor), memoised by its hash: typing changes
    the cursor's line, not the lines above it."""
    key = (xxhash.xxh3_128_digest(text.encode("utf-8", "surrogatepass")), names)
    found = _uses_memo.get(key)
    if found is None:
        found = _uses_memo.put(key, _Uses(text, names, _use_starts(text, names)))
    return found


def _used_between(starts: Sequence[int], length: int, low: int, high: int) -> bool:
    """Whether a use that starts at one of `starts` lies inside text[low:high]."""
    first = bisect.bisect_left(starts, low)
    return first < len(starts) and starts[first] + length <= high


def _offset_of_line(text: str, line: int) -> int:
    offset = 0
    for _ in range(line):
        found = text.find("\n", offset)
        if found == -1:
            return len(text)
        offset = found + 1
    return offset
