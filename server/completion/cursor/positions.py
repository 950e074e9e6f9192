"""Counts of newlines and triple quotes in spans of the analysed text: the cursor's line
number, and whether a span starts or ends inside a triple-quoted string.

`_counter` counts a new text (each keystroke's) with `str.count`, and one analysed again
(`_seen`) by bisecting where its newlines and quotes are (`_Positions`).
"""

from __future__ import annotations

import bisect
import threading
from array import array
from typing import Final

_TRIPLE_QUOTES: Final = ('"""', "'''")


def _triple_quotes(text: str, start: int, end: int) -> tuple[int, ...]:
    """How many of each `_TRIPLE_QUOTES` text[start:end] holds; counts of two spans that
    meet at a line start add up (no triple quote holds a newline)."""
    return tuple(text.count(quotes, start, end) for quotes in _TRIPLE_QUOTES)


def _inside_triple_quotes(text: str, start: int, offset: int) -> bool:
    return any(count % 2 for count in _triple_quotes(text, start, offset))


class _Counter:
    """Counts of newlines and triple quotes in spans of one text, by `str.count`."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def newlines(self, start: int, end: int) -> int:
        return self.text.count("\n", start, end)

    def triple_quotes(self, start: int, end: int) -> tuple[int, ...]:
        return _triple_quotes(self.text, start, end)


class _Positions(_Counter):
    """The same counts by bisecting where one text's newlines and triple quotes are:
    `str.count` reads the span, up to a 200 KB file's top for the cursor's line number
    and the quotes above it (0.25 ms a build in such files)."""

    __slots__ = ("_newlines", "_quotes")

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._newlines = _starts(text, "\n")
        self._quotes = tuple(_starts(text, quotes) for quotes in _TRIPLE_QUOTES)

    def newlines(self, start: int, end: int) -> int:
        found = self._newlines
        return max(0, bisect.bisect_left(found, end) - bisect.bisect_left(found, start))

    def triple_quotes(self, start: int, end: int) -> tuple[int, ...]:
        """For a `start` at a line start, where the left-to-right matches of the whole
        text and of the span agree (no triple quote holds a newline)."""
        return tuple(
            max(0, bisect.bisect_right(found, end - 3) - bisect.bisect_left(found, start))
            for found in self._quotes
        )


def _starts(text: str, needle: str) -> array[int]:
    """Where the non-overlapping occurrences of `needle` start, left to right, as
    `str.count` finds them; an array, a fifth of a list's memory (a 200 KB file has
    5,000 lines, and what a build touches is much of its cost)."""
    found = array("q")
    at = text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + len(needle))
    return found


class _Seen(threading.local):
    def __init__(self) -> None:
        self.text: str | None = None
        self.positions: _Positions | None = None


_seen = _Seen()


def _counter(text: str) -> _Counter:
    """A `_Positions` of `text` from the second time in a row this thread analyses it (a
    file's builds at other places, `prepare`'s rehearsals); a `_Counter` the first time:
    while typing each keystroke's text is new, and counting it once is cheaper than
    finding every position."""
    positions = _seen.positions
    if positions is not None and (positions.text is text or positions.text == text):
        return positions
    if _seen.text is not None and (_seen.text is text or _seen.text == text):
        _seen.positions = _Positions(text)
        _seen.text = None
        return _seen.positions
    _seen.text = text
    return _Counter(text)
