"""The values a context is made of and measured with: the `Budget` it must fit, the
`Snippet`s of other files' code it shows, the `Context` a build returns, where a name is
defined (`Target`), and how tokens are counted (`Count`, `Overhead`, `estimate_tokens`).

They sit below every other module of the package, so that each part of the builder can
take and return them without importing the others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cache.model import Definition
from server.completion.cursor import CursorInfo

Count = Callable[[str], int]
Overhead = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Characters / 4, rounded up: the documented stand-in when no tokenizer is loaded."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class Budget:
    """How many tokens the context may take, and how they are shared.

    Snippets get up to `cross_file_share` of the total, the suffix up to `suffix_share`,
    similar-code chunks up to `similar_share` of what those two leave, plus what the
    snippets leave of theirs; the prefix gets everything they leave unused."""

    total: int = 2048
    suffix_share: float = 0.06
    """Small: in prefix-suffix-middle order the suffix follows the cursor, so its tokens
    are recomputed on every keystroke (0.06 of 2,048 is ~120 tokens, 8-12 lines)."""
    cross_file_share: float = 0.35
    reserved: int = 0
    """Tokens of the template's own fixed parts, taken off the total first."""
    max_snippets: int = 32
    prefix_step_lines: int = 8
    """The prefix starts at a multiple of this many lines (stable across keystrokes)."""
    similar_share: float = 0.15
    """Most similar-code chunks may take (`server.completion.similar`), out of what the snippets and
    the suffix leave (so out of the prefix's room); 0 turns them off."""
    similar_cursor_line: bool = True
    """Whether the cursor's own line queries similar code, beside the lines above it;
    without it the chunks change only when the cursor moves to another line."""
    head_share: float = 0.1
    """Most the current file's imports may take when the prefix is cut above them
    (`server.completion.file_head`), out of the prefix's room; 0 turns them off."""
    keep_snippets: bool = False
    """Whether a build keeps the previous build's snippets for the same document while
    they fit and nothing clearly better turns up (`server.completion.context.keeping`)."""
    keep_window_tokens: int = 0
    """Over a stay in a document, the current file's window keeps the previous build's
    first line while that shows at most this many tokens less than a fresh window (and
    fits); a move down it forces leaves this much room (`trimming.fit_prefix_kept`). 0:
    every build places the window afresh."""
    fim_suffix_tokens: int = 0
    """Most of the suffix kept in the fill-in-the-middle slot; the rest (the file's tail)
    becomes a snippet before the current file, where the prefix cache keeps it, since the
    text after the cursor does not change while the user types at it. 0: all in the slot."""

    @property
    def available(self) -> int:
        return max(0, self.total - self.reserved)

    @property
    def cross_file_cap(self) -> int:
        return int(self.available * min(1.0, max(0.0, self.cross_file_share)))

    @property
    def suffix_cap(self) -> int:
        return int(self.available * self._suffix_fraction)

    @property
    def similar_cap(self) -> int:
        room = 1.0 - min(1.0, max(0.0, self.cross_file_share)) - self._suffix_fraction
        return int(self.available * max(0.0, min(room, self.similar_share)))

    @property
    def head_cap(self) -> int:
        return int(self.available * min(1.0, max(0.0, self.head_share)))

    @property
    def _suffix_fraction(self) -> float:
        return min(1.0 - min(1.0, max(0.0, self.cross_file_share)), max(0.0, self.suffix_share))


@dataclass(slots=True, unsafe_hash=True)
class Snippet:
    """Code from another file, as the prompt shows it. Never changed once made (a new
    score or text makes a new one); not frozen only because a frozen dataclass sets each
    field through `object.__setattr__`, 2.4 against 0.5 us a snippet, and a build makes
    a hundred of them."""

    path: str
    text: str
    start_line: int
    score: float
    name: str = ""
    """The definition's qualified name; "" for a file outline."""
    language: str | None = None
    similar: bool = False
    """A chunk of similar code (`server.completion.similar`), not a definition or an outline: it
    competes for its own share of the budget."""
    head: bool = False
    """The current file's own import statements that the prefix no longer shows
    (`server.completion.file_head`): rendered last, next to the file they belong to."""
    tail: bool = False
    """The current file's text after the suffix kept in the fill-in-the-middle slot
    (`Budget.fim_suffix_tokens`)."""

    @property
    def is_file(self) -> bool:
        return not self.name

    def with_score(self, score: float) -> Snippet:
        """This snippet scored anew (`dataclasses.replace` costs 5x as much, and runs
        for every remembered snippet on every keystroke)."""
        return Snippet(
            self.path, self.text, self.start_line, score, self.name, self.language,
            self.similar, self.head, self.tail,
        )  # fmt: skip

    def with_text(self, text: str) -> Snippet:
        return Snippet(
            self.path, text, self.start_line, self.score, self.name, self.language,
            self.similar, self.head, self.tail,
        )  # fmt: skip

    @property
    def order(self) -> tuple[int, str, int, str]:
        """The render order: file outlines, then definitions, then the current file's
        tail (it changes only when the cursor moves away), then similar code (it changes
        with the lines being typed, so it goes last: nearest the current file, where it
        costs the prefix cache least), then the current file's imports (right before the
        file); by path, then line."""
        kind = (
            4 if self.head else 3 if self.similar else 2 if self.tail else 0 if self.is_file else 1
        )
        return (kind, self.path, self.start_line, self.name)


@dataclass(frozen=True, slots=True)
class Context:
    prefix: str
    suffix: str
    snippets: tuple[Snippet, ...]
    """In render order (`Snippet.order`)."""
    names: tuple[str, ...]
    """The names referenced near the cursor, most direct first (dotted)."""
    tokens: int = 0
    """count(prefix) + count(suffix) + the snippets with their overheads."""
    cursor: CursorInfo | None = None

    def files(self) -> list[tuple[str, str]]:
        """(path, text) pairs, in render order: what a prompt template takes."""
        return [(snippet.path, snippet.text) for snippet in self.snippets]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a name is defined: a definition of a file, or (definition None) the file."""

    path: str
    definition: Definition | None
