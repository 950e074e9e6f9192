"""What was lately chosen for each file (`SnippetMemory`), so that the chosen set stays
steady while the cursor stays in one function: a snippet once chosen stays a low-scored
candidate for STICKY_BUILDS builds, one chosen last time wins near-ties, and a
similar-code chunk gets a bonus when found again and fades when not; moving to another
function forgets them. It also tells hovers whether the latest prompt for a file shows a
definition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from server.completion.context.model import Snippet
from server.completion.cursor import CursorInfo

STICKY_BUILDS: Final = 40
"""How many builds a chosen snippet stays a candidate after nothing points at it."""
STICKY_SCORE: Final = 60.0
"""Its score then: above related files (< 50), below any name near the cursor (>= 100)."""
STICKY_BONUS: Final = 5.0

SIMILAR_STICKY_BONUS: Final = 1.5
"""A similar chunk chosen last time and found again: its score times this (BM25 scores
of the best chunks are often within a few percent of each other)."""
SIMILAR_FADE: Final = 0.7
"""A chosen chunk the query no longer finds: its score when last found times this (it
stays while nothing clearly better turns up)."""


@dataclass(slots=True)
class _Memory:
    """The snippets lately chosen for one file, while the cursor stays in one scope."""

    scope: tuple[str, ...]
    chosen: dict[tuple[str, str], tuple[Snippet, int]] = field(default_factory=dict)
    """(path, name) -> the snippet and how many more builds it is remembered for."""
    last: frozenset[tuple[str, str]] = frozenset()
    """(path, name) of the snippets the latest build put in the prompt."""
    faded: set[tuple[str, str]] = field(default_factory=set)
    """Similar-code chunks the latest build had only from here, at a faded score."""


class SnippetMemory:
    """The builder's memory of the snippets chosen for each file."""

    _memory: dict[str, _Memory]

    def forget(self, file_path: str) -> None:
        """Drop what was chosen for `file_path` (its document closed)."""
        self._memory.pop(file_path, None)

    def shown_in_context(self, file_path: str, path: str, qualified_name: str) -> str | None:
        """How the latest completion prompt for `file_path` shows the definition
        `qualified_name` of `path` ("" for the file itself): "definition" (its own
        snippet, or its class's), "file" (the file whole or as an outline), or None (not
        at all). Hovers say so, so users can see what the model was given."""
        memory = self._memory.get(file_path)
        if memory is None:
            return None
        parts = qualified_name.split(".") if qualified_name else []
        for end in range(len(parts), 0, -1):
            if (path, ".".join(parts[:end])) in memory.last:
                return "definition"
        return "file" if (path, "") in memory.last else None

    def _with_memory(
        self, file_path: str, cursor: CursorInfo, candidates: list[Snippet]
    ) -> list[Snippet]:
        """Candidates plus the snippets chosen lately for this file that nothing points at
        now. A name that is half-typed, or a statement just finished, would otherwise
        swap snippets in and out on every key and cost the prompt its cached prefix. The
        remembered ones score just above related files, so fresh references still win the
        budget; those chosen last time get a small bonus to win near-ties. Similar-code
        chunks compete only with each other: a remembered one gets a bonus when found
        again and fades when not (SIMILAR_STICKY_BONUS, SIMILAR_FADE). Moving to
        another function forgets them."""
        memory = self._memory.get(file_path)
        scope = tuple(s.name for s in cursor.scopes)
        if memory is None or memory.scope != scope:
            self._memory[file_path] = _Memory(scope)
            return candidates
        out = []
        for snippet in candidates:
            key = (snippet.path, snippet.name)
            if key in memory.chosen:
                if snippet.similar:
                    score = snippet.score * SIMILAR_STICKY_BONUS
                else:
                    score = snippet.score + STICKY_BONUS
                snippet = snippet.with_score(score)
            out.append(snippet)
        present = {(snippet.path, snippet.name) for snippet in candidates}
        memory.faded = set()
        for key, (snippet, _) in memory.chosen.items():
            if key not in present:
                if snippet.similar:
                    score = snippet.score * SIMILAR_FADE
                    memory.faded.add(key)
                else:
                    score = min(snippet.score, STICKY_SCORE)
                out.append(snippet.with_score(score))
        return out

    def _remember(self, file_path: str, chosen: tuple[Snippet, ...]) -> None:
        memory = self._memory.get(file_path)
        if memory is None:
            return
        kept = {k: (s, ttl - 1) for k, (s, ttl) in memory.chosen.items() if ttl > 1}
        chosen = tuple(s for s in chosen if not (s.head or s.tail))  # not candidates
        for snippet in chosen:
            key = (snippet.path, snippet.name)
            if key in memory.faded:  # its score as last found, or the fading compounds
                snippet = memory.chosen[key][0]
            kept[key] = (snippet, STICKY_BUILDS)
        memory.chosen = kept
        memory.last = frozenset((snippet.path, snippet.name) for snippet in chosen)
        while len(self._memory) > 64:
            del self._memory[next(iter(self._memory))]
