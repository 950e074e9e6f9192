"""Typing sessions for `headstart bench`: real lines of real files, retyped key by key.

A simulated user picks a line of a workspace file, deletes it after its indentation and
types it again one character at a time, with gaps between keys drawn the way people type:
log-normal inter-key intervals around the user's typing speed, a longer pause after a
word, and a pause to think before each new line. What the user types is what the file
holds, so a suggestion can be right, and a right suggestion is accepted (Tab) after a
reaction time, or typed over, as happens in an editor.

Everything is drawn from a seeded generator: the same seed gives the same session, so
two runs (or two load steps) compare like with like.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cache.languages import language_for

MIN_LINE_CHARS = 12
"""Shorter lines (a `return`, a bracket) say little about completion."""
MAX_LINE_CHARS = 120
NOT_CODE = frozenset(
    {"markdown", "rst", "text", "json", "jsonc", "yaml", "toml", "ini", "requirements", "po",
     "csv", "xml", "html", "dockerfile"}
)  # fmt: skip
"""Prose and configuration: typed rarely, and not what completion is measured on."""
MAX_FILE_BYTES = 200_000
"""Larger files are usually generated; people rarely type in them."""


@dataclass(frozen=True)
class TypingSpeed:
    """How one user types. Defaults: ~55 words a minute while typing, a second to read
    and think before a line, a quarter second to see a suggestion and press Tab."""

    key_ms: float = 180.0
    """Median gap between two keys of one word."""
    key_sigma: float = 0.45
    """Spread of the log-normal inter-key gap (ln of the ratio)."""
    word_pause_ms: float = 120.0
    """Extra median pause after a space or punctuation."""
    line_pause_ms: float = 1200.0
    """Median pause before typing a new line (moving there, reading, thinking)."""
    accept_ms: float = 250.0
    """Reaction time from a right suggestion shown to Tab."""
    accept_share: float = 0.5
    """Share of right suggestions taken with Tab; the others are typed over (the user did
    not look, or wanted to type anyway), which is when the suggestion cache answers."""

    def scaled(self, factor: float) -> TypingSpeed:
        """The same user, `factor` times faster (> 1) or slower (< 1)."""
        return TypingSpeed(
            self.key_ms / factor,
            self.key_sigma,
            self.word_pause_ms / factor,
            self.line_pause_ms / factor,
            self.accept_ms,
            self.accept_share,
        )


@dataclass(frozen=True)
class LineToType:
    """One line of a file to retype from column `start` (its indentation)."""

    path: Path
    row: int
    start: int
    text: str
    language: str

    @property
    def typed(self) -> str:
        return self.text[self.start :]


def lines_worth_typing(root: Path, languages: frozenset[str] | None = None) -> list[LineToType]:
    """Every line of the workspace's source files a person might type: code (of
    `languages`, by default any but NOT_CODE), not blank, not a comment, 12-120
    characters; in path order (the generator shuffles)."""
    found: list[LineToType] = []
    for path in sorted(root.rglob("*")):
        language = language_for(path)
        if language is None or (language not in languages if languages else language in NOT_CODE):
            continue
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for row, text in enumerate(lines):
            stripped = text.strip()
            if not MIN_LINE_CHARS <= len(stripped) <= MAX_LINE_CHARS:
                continue
            if stripped.startswith(("#", "//", "/*", "*", '"""', "'''")):
                continue
            found.append(LineToType(path, row, len(text) - len(text.lstrip()), text, language))
    return found


def user_seed(seed: int, user: int) -> int:
    """The seed of one user's session in a run of `seed`: each user types its own."""
    return seed * 100_003 + user


class TypingSession:
    """One user's endless sequence of lines to type and the gaps between their keys."""

    def __init__(
        self, lines: list[LineToType], seed: int, speed: TypingSpeed, lines_per_visit: int = 0
    ) -> None:
        if not lines:
            raise ValueError("no lines worth typing in this workspace")
        self.lines = lines
        self.speed = speed
        self.random = random.Random(seed)
        self.lines_per_visit = lines_per_visit
        """Lines typed in one file before going to another, in runs of a few at random
        places in it; 0: each run starts anywhere in the workspace (so, in a workspace of
        many files, a run of 1-4 lines per file)."""
        self._in_file: dict[Path, list[int]] = {}
        """Each file's lines (their indexes), for visits; empty without them."""
        for index, line in enumerate(lines if lines_per_visit else ()):
            self._in_file.setdefault(line.path, []).append(index)

    def next_lines(self) -> Iterator[LineToType]:
        """Lines in a random order, each file's lines in runs of a few, as people edit."""
        while True:
            first = self.random.randrange(len(self.lines))
            if not self.lines_per_visit:
                yield from self._run(first)
                continue
            typed = 0
            while typed < self.lines_per_visit:
                for line in self._run(first):
                    yield line
                    typed += 1
                first = self.random.choice(self._in_file[self.lines[first].path])

    def _run(self, first: int) -> Iterator[LineToType]:
        """A run of 1-4 lines from `first` on, within its file."""
        run = self.random.randint(1, 4)
        for index in range(first, min(first + run, len(self.lines))):
            if self.lines[index].path == self.lines[first].path:
                yield self.lines[index]

    def key_gap_s(self, previous: str) -> float:
        """Seconds between the key that typed `previous` and the next one."""
        speed = self.speed
        gap = self._lognormal(speed.key_ms)
        if previous in " ,.()[]{}:=":
            gap += self._lognormal(speed.word_pause_ms)
        return gap / 1000

    def line_pause_s(self) -> float:
        return self._lognormal(self.speed.line_pause_ms) / 1000

    def accepts(self) -> bool:
        """Whether the user takes this right suggestion (else types on over it)."""
        return self.random.random() < self.speed.accept_share

    def accept_delay_s(self) -> float:
        return self._lognormal(self.speed.accept_ms) / 1000

    def _lognormal(self, median_ms: float) -> float:
        return self.random.lognormvariate(math.log(median_ms), self.speed.key_sigma)
