"""Suggestions already shown, answered again while the user types them.

LSP-free and model-free. When the user types characters that a suggestion shown for a
document predicted, the rest of it is the answer: no context, no tokenizer, no model.

A suggestion is remembered with its premise: a few lines before the cursor (ending with
the cursor line up to the cursor) and the rest of the cursor line with a few lines after
it. A later cursor is answered from it only if the text before the cursor is that
premise followed by a prefix of the suggestion, and the text after the cursor still
starts with the premise's suffix. Edits outside that window, above or below, change
nothing; any change inside it is a miss.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

CONTEXT_LINES = 3
"""Lines of premise kept before the cursor line and after it."""
PER_DOCUMENT = 8
"""Suggestions remembered per document; the least recently used one goes first."""

M = TypeVar("M")


@dataclass(frozen=True)
class Shown(Generic[M]):
    """A suggestion and the text around the cursor it was made for."""

    before: str
    """The `CONTEXT_LINES` lines above the cursor line, and that line up to the cursor."""
    after: str
    """The rest of the cursor line and the `CONTEXT_LINES` lines below it."""
    text: str
    meta: M
    """What the caller wants back with a hit (the suggestion's mode, for instance)."""


@dataclass(frozen=True)
class Hit(Generic[M]):
    rest: str
    """The part of the suggestion not typed yet."""
    typed: int
    """How many of its characters the user has typed."""
    meta: M


def premise(text: str, offset: int, lines: int = CONTEXT_LINES) -> tuple[str, str]:
    """The text before and after `offset` that a suggestion there depends on."""
    start = offset
    for _ in range(lines + 1):
        start = text.rfind("\n", 0, start)
        if start < 0:
            start = 0
            break
    else:
        start += 1
    end = offset
    for _ in range(lines + 1):
        end = text.find("\n", end)
        if end < 0:
            end = len(text)
            break
        end += 1
    return text[start:offset], text[offset:end]


class SuggestionCache(Generic[M]):
    """A small LRU of shown suggestions per document (keyed by URI)."""

    def __init__(self, per_document: int = PER_DOCUMENT, lines: int = CONTEXT_LINES) -> None:
        self.per_document = per_document
        self.lines = lines
        self._documents: dict[str, OrderedDict[tuple[str, str], Shown[M]]] = {}

    def remember(self, key: str, text: str, offset: int, suggestion: str, meta: M) -> None:
        """Keep `suggestion`, shown at `offset` of `text`; empty suggestions are not kept."""
        if not suggestion:
            return
        before, after = premise(text, offset, self.lines)
        shown = self._documents.setdefault(key, OrderedDict())
        shown[(before, after)] = Shown(before, after, suggestion, meta)
        shown.move_to_end((before, after))
        while len(shown) > self.per_document:
            shown.popitem(last=False)

    def lookup(self, key: str, text: str, offset: int) -> Hit[M] | None:
        """The rest of a remembered suggestion that the text up to `offset` has typed
        part of, the most recently used first; None when no premise holds."""
        shown = self._documents.get(key)
        if not shown:
            return None
        line_start = text.rfind("\n", 0, offset) + 1
        column = offset - line_start
        for entry_key, entry in reversed(shown.items()):
            typed = _typed(entry, text, offset, column)
            if typed is not None:
                shown.move_to_end(entry_key)
                return Hit(entry.text[typed:], typed, entry.meta)
        return None

    def forget(self, key: str) -> None:
        self._documents.pop(key, None)

    def clear(self) -> None:
        self._documents.clear()

    def __len__(self) -> int:
        """Suggestions held, over all documents."""
        return sum(len(shown) for shown in self._documents.values())


def _typed(entry: Shown[M], text: str, offset: int, column: int) -> int | None:
    """How much of the suggestion is typed at `offset`, if its premise holds there and
    some of it is left.

    The cursor can only be on one of the suggestion's lines, at its column there, which
    gives one candidate length per line; each is checked by comparing strings.
    """
    if not text.startswith(entry.after, offset):
        return None
    suggestion = entry.text
    line_start = 0
    typed = column - (len(entry.before) - entry.before.rfind("\n") - 1)
    while True:
        if (
            line_start <= typed < len(suggestion)
            and "\n" not in suggestion[line_start:typed]
            and offset - typed - len(entry.before) >= 0
            and text.startswith(suggestion[:typed], offset - typed)
            and text.startswith(entry.before, offset - typed - len(entry.before))
        ):
            return typed
        newline = suggestion.find("\n", line_start)
        if newline < 0:
            return None
        line_start = newline + 1
        typed = line_start + column
