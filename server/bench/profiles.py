"""The developer profile of `headstart bench run --profile developer`: a plan of edits
drawn from published studies of how programmers work, instead of a typing machine.

The typist (`server.bench.typing_sessions`) types without pause and jumps anywhere every
1-4 lines: a stress figure. A team asking how many of its developers can share a GPU needs
users who type in bursts at a measured rate, stop to read and think for most of their time,
move a few lines at a time within a file, edit inside lines, change files every few
minutes, and take some of the suggestions they are shown. Every number of that behaviour is
in `DeveloperProfile`, with its source; the plan (`DeveloperSession.next_edits`) is drawn
from a seeded generator alone, so it is the same whatever the server answers, and its
statistics can be checked without a server (tests/test_bench_profiles.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from server.bench.typing_sessions import LineToType

PROFILES = ("typist", "developer")


@dataclass(frozen=True)
class DeveloperProfile:
    """How a developer edits, each number with its source. Fixed before any GPU run: never
    tuned to a measured figure. Where no study gives a number it says "assumption"."""

    typing_wpm: float = 52.0
    """Words a minute while typing: Dhakal et al., CHI 2018, "Observations on Typing from
    136 Million Keystrokes", mean 51.56 WPM over 168,000 people (transcribing English
    sentences; code is assumed typed no faster)."""
    chars_per_word: float = 5.0
    """The WPM convention of five characters a word (as Dhakal et al. count): 52 WPM is
    4.33 characters a second, a mean of 231 ms between keys."""
    key_sigma: float = 0.45
    """Spread of the log-normal gap between keys (ln of the ratio). Assumption: the
    typist's spread; only the mean comes from the study."""
    typing_share: float = 0.30
    """Share of the session spent typing; the rest is reading, thinking, verifying.
    Mozannar et al. 2022, "Reading Between the Lines" (CUPS), Figure 1, share of session
    time in the states where code is typed: Writing New Functionality 14.05% + Editing Last
    Suggestion 11.90% + Editing Written Code 4.28% = 30.2% (21 programmers with Copilot).
    Comprehension studies put reading higher still: ~58% (Xia et al. 2018) to ~70%
    (Minelli et al. 2015) of developers' time."""
    pause_sigma: float = 1.0
    """Spread of the log-normal pause (ln of the ratio). Assumption: pauses are
    heavy-tailed; their mean is what `typing_share` fixes."""
    mid_line_share: float = 0.54
    """Share of edits made inside a line, with text after the cursor, rather than at its
    end. From CUPS's states: the editing ones (11.90% + 4.28%) over all typing ones (30.2%);
    CUPS measures time, taken here as the share of edits (an approximation)."""
    mid_line_chars: float = 10.0
    """Median characters retyped in a mid-line edit (a word or two). Assumption."""
    move_lines: float = 8.0
    """Median lines between one edit and the next in the same file (up or down).
    Assumption."""
    file_minutes: float = 5.0
    """Mean minutes in a file before going to another (exponential). Assumption: "a new
    file every few minutes"; no study here measures it."""
    accept_share: float = 0.27
    """Share of shown suggestions taken with Tab: Ziegler et al. 2022, "Productivity
    Assessment of Neural Code Completion": GitHub Copilot's acceptance rate 27%. A
    suggestion is shown once however many keys type through it unchanged."""
    accept_ms: float = 250.0
    """Median reaction time from a suggestion shown to Tab. Assumption (the typist's)."""

    @property
    def mean_key_s(self) -> float:
        return 60.0 / (self.typing_wpm * self.chars_per_word)

    @property
    def pause_ratio(self) -> float:
        """Mean pause over the typing it precedes, so that typing takes `typing_share`."""
        return (1.0 - self.typing_share) / self.typing_share


@dataclass(frozen=True)
class Edit:
    """One burst of typing: columns `start`..`end` of a real line, deleted and typed again
    key by key, after a pause to read and think (and move there)."""

    line: LineToType
    start: int
    end: int
    pause_s: float
    """Before the edit: reading, thinking, moving the cursor here."""
    gaps_s: tuple[float, ...]
    """After each key, before the next (the last: before the user stops typing)."""
    takes: tuple[bool, ...]
    """Whether the user takes the 1st, 2nd... suggestion newly shown during the edit."""
    new_file: bool
    """The edit opens a file other than the previous edit's."""

    @property
    def typed(self) -> str:
        return self.line.text[self.start : self.end]

    @property
    def mid_line(self) -> bool:
        return self.end < len(self.line.text)

    @property
    def typing_s(self) -> float:
        return sum(self.gaps_s)


class DeveloperSession:
    """One developer's endless plan of edits over a workspace's lines, from a seed."""

    def __init__(
        self, lines: list[LineToType], seed: int, profile: DeveloperProfile | None = None
    ) -> None:
        if not lines:
            raise ValueError("no lines worth typing in this workspace")
        self.lines = lines
        self.profile = profile or DeveloperProfile()
        self.random = random.Random(seed)
        self.reactions = random.Random(seed ^ 0x5EED)
        """Draws made while typing (reaction times): apart, so the plan stays the same
        whatever the server answers and whenever."""
        self._in_file: dict[Path, list[LineToType]] = {}
        for line in lines:
            self._in_file.setdefault(line.path, []).append(line)

    def next_edits(self) -> Iterator[Edit]:
        """Edits near each other in one file, then in another file after a few minutes."""
        profile = self.profile
        line = self.random.choice(self.lines)
        new_file = True
        left_s = self.random.expovariate(1 / (profile.file_minutes * 60))
        while True:
            edit = self._edit(line, new_file)
            yield edit
            left_s -= edit.pause_s + edit.typing_s
            if left_s <= 0 and len(self._in_file) > 1:
                line = self.random.choice(
                    [other for other in self.lines if other.path != line.path]
                )
                new_file = True
                left_s = self.random.expovariate(1 / (profile.file_minutes * 60))
            else:
                line = self._nearby(line)
                new_file = False

    def accept_delay_s(self) -> float:
        return self.reactions.lognormvariate(math.log(self.profile.accept_ms), 0.45) / 1000

    def _edit(self, line: LineToType, new_file: bool) -> Edit:
        profile = self.profile
        start, end = line.start, len(line.text)
        if self.random.random() < profile.mid_line_share:
            start, end = self._mid_line_span(line)
        keys = end - start
        key_median = profile.mean_key_s / math.exp(profile.key_sigma**2 / 2)
        gaps = tuple(
            self.random.lognormvariate(math.log(key_median), profile.key_sigma) for _ in range(keys)
        )
        ratio_median = profile.pause_ratio / math.exp(profile.pause_sigma**2 / 2)
        ratio = self.random.lognormvariate(math.log(ratio_median), profile.pause_sigma)
        takes = tuple(self.random.random() < profile.accept_share for _ in range(keys))
        return Edit(line, start, end, sum(gaps) * ratio, gaps, takes, new_file)

    def _mid_line_span(self, line: LineToType) -> tuple[int, int]:
        """A stretch inside the line starting at a word, leaving text after it."""
        text = line.text
        starts = [
            column
            for column in range(line.start, len(text) - 1)
            if column == line.start or (text[column].isalnum() and not text[column - 1].isalnum())
        ]
        start = self.random.choice(starts)
        length = max(
            1, round(self.random.lognormvariate(math.log(self.profile.mid_line_chars), 0.6))
        )
        return start, min(start + length, len(text) - 1)

    def _nearby(self, line: LineToType) -> LineToType:
        """The line worth typing nearest to a few lines up or down in the same file."""
        distance = self.random.lognormvariate(math.log(self.profile.move_lines), 0.8)
        target = line.row + round(distance) * self.random.choice((-1, 1))
        others = [other for other in self._in_file[line.path] if other.row != line.row]
        if not others:
            return line
        return min(others, key=lambda other: abs(other.row - target))


def plan(session: DeveloperSession, seconds: float) -> list[Edit]:
    """The session's first edits, until their pauses and typing reach `seconds`."""
    edits: list[Edit] = []
    elapsed = 0.0
    for edit in session.next_edits():
        if elapsed >= seconds:
            break
        edits.append(edit)
        elapsed += edit.pause_s + edit.typing_s
    return edits
