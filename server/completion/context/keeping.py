"""What a stay in a document keeps from build to build, so the prompt stays in vLLM's
prefix cache: the snippets (`Budget.keep_snippets`, `completion.keepSnippets`) and the
first line of the current file's window (`Budget.keep_window_tokens`,
`completion.windowKeepTokens`, whose rule is `trimming.fit_prefix_kept`'s).

The previous build's snippet set is shown again, byte for byte and in the same order,
while the cursor stays in the document, so the prompt before the current file stays in
the cache. Each changed set costs the backend that
part and the whole current file after it; replayed typing showed changed snippets are
most of what a user who stays in a file costs (docs/bench.md, "Prompt costs without a
GPU").

The rule that decides: each build still chooses its own (fresh) set, and that set
replaces the kept one only when

- the stay is new: the previous build was for another document (or none), or the
  document was forgotten (closed, or a rehearsal's builds ended);
- the fresh set holds a definition or file scored at NEEDED_SCORE or more that the kept
  set lacks: a name of the cursor's statement (the object before the dot, the name being
  typed or called, the statement's other names) resolved to something not shown;
- the kept set no longer fits as it was: re-packed into this build's budget and window,
  any of its snippets would be dropped or cut differently (the window now shows it, the
  budget shrank), or a kept snippet of the current file is no longer in its text.

Names only on the lines above, related files' outlines and similar-code chunks never
replace the set on their own: they change with every word typed, and what they would add
is the least direct context."""

from __future__ import annotations

import dataclasses
from typing import Final

from server.completion.context.memory import SnippetMemory
from server.completion.context.model import Budget, Context, Count, Overhead, Snippet
from server.completion.context.packing import build_context
from server.completion.cursor import CursorInfo

NEEDED_SCORE: Final = 199.0
"""A candidate's score from a name of the cursor's statement or nearer (candidates:
directness 2-4 times 100, less at most 0.9 for its rank, plus its file's standing);
names only on the lines above score 100-150."""
KEPT_SCORE: Final = 1e6
"""Scores the kept snippets are re-packed with, in their kept order: above any fresh one."""


def _key(snippet: Snippet) -> tuple[str, str, int, str]:
    return (snippet.path, snippet.name, snippet.start_line, snippet.text)


def _chosen(snippets: tuple[Snippet, ...]) -> tuple[Snippet, ...]:
    """The snippets a build chose, without the current file's imports and tail, which
    follow the window and the suffix and are made anew by every build."""
    return tuple(s for s in snippets if not (s.head or s.tail))


def clearly_better(kept: tuple[Snippet, ...], fresh: tuple[Snippet, ...]) -> bool:
    """Whether the fresh set shows something the cursor's statement needs that the kept
    set lacks (NEEDED_SCORE)."""
    shown = {(s.path, s.name) for s in kept}
    return any(
        not s.similar and s.score >= NEEDED_SCORE and (s.path, s.name) not in shown for s in fresh
    )


class SnippetKeeping(SnippetMemory):
    """The builder's kept snippet set for the document of the current stay."""

    _kept: tuple[str, tuple[Snippet, ...]] | None = None
    """(document, the snippets it keeps), in render order."""

    _window: tuple[str, int] | None = None
    """(document, the line its previous build's window started at)."""

    def forget(self, file_path: str) -> None:
        if self._kept is not None and self._kept[0] == file_path:
            self._kept = None
        if self._window is not None and self._window[0] == file_path:
            self._window = None
        super().forget(file_path)

    def _window_first_line(self, file_path: str, budget: Budget) -> int | None:
        """Where the stay's previous window started, for `build_context`; None for a new
        stay or with `keep_window_tokens` off."""
        if budget.keep_window_tokens <= 0 or self._window is None:
            return None
        return self._window[1] if self._window[0] == file_path else None

    def _keep_window(
        self, file_path: str, context: Context, cursor: CursorInfo, budget: Budget
    ) -> None:
        """Remember where this build's window started, for the next build's (with
        `keep_window_tokens` on: a build does not count the prefix's lines for nothing)."""
        if budget.keep_window_tokens > 0:
            self._window = (file_path, cursor.line - context.prefix.count("\n"))

    def _kept_or_fresh(
        self,
        fresh: Context,
        file_path: str,
        text: str,
        offset: int,
        budget: Budget,
        count: Count,
        overhead: Overhead | None,
        cursor: CursorInfo,
    ) -> Context:
        """`fresh`, or the same cursor's context with the kept snippets instead of its own
        (the module's rule says which)."""
        chosen = _chosen(fresh.snippets)
        kept = self._kept[1] if self._kept is not None and self._kept[0] == file_path else None
        if (
            kept is None
            or clearly_better(kept, chosen)
            or [*map(_key, kept)] == [*map(_key, chosen)]
        ):
            self._kept = (file_path, chosen)
            return fresh
        if any(s.path == file_path and s.text not in text for s in kept):
            self._kept = (file_path, chosen)
            return fresh
        ranked = [s.with_score(KEPT_SCORE - n) for n, s in enumerate(kept)]
        again = build_context(
            text[:offset],
            text[offset:],
            ranked,
            budget,
            count,
            overhead,
            names=fresh.names,
            cursor=cursor,
            file_path=file_path,
            language=cursor.language,
            window_first_line=self._window_first_line(file_path, budget),
        )
        if sorted(map(_key, _chosen(again.snippets))) != sorted(map(_key, kept)):
            self._kept = (file_path, chosen)
            return fresh
        made = tuple(s for s in again.snippets if s.head or s.tail)
        snippets = tuple(sorted((*kept, *made), key=lambda s: s.order))
        return dataclasses.replace(again, snippets=snippets)
