"""Packing one prompt's context into its `Budget`: the candidate snippets taken greedily by
score into their shares (definitions and outlines, then similar-code chunks), skipping
near-duplicates and what the current file's window shows, a snippet too long cut to fit;
then the suffix and the prefix trimmed into what is left and, when the prefix is cut,
the current file's own imports that it no longer shows. `build_context` is also the way
in for callers that bring their own candidates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import xxhash

from server.completion import file_head
from server.completion.context.lru import _Lru
from server.completion.context.model import (
    Budget,
    Context,
    Count,
    Overhead,
    Snippet,
    estimate_tokens,
)
from server.completion.context.near_duplicates import (
    IN_WINDOW_SHARE,
    _in_window,
    _line_set,
    _lines_of,
    _near_duplicate,
    _remember_head_tokens,
)
from server.completion.context.trimming import fit_prefix_kept, fit_suffix
from server.completion.cursor import CursorInfo

MIN_CUT_TOKENS: Final = 64
"""A snippet too long for the room left is cut to fit when at least this much fits."""


def default_overhead(count: Count) -> Overhead:
    """The rendering cost of a snippet in Qwen2.5-Coder's repo-level format: the file
    separator, the path and a newline (a template passes its own)."""

    def overhead(path: str) -> int:
        return count(f"<|file_sep|>{path}\n") + 1

    return overhead


def build_context(
    prefix: str,
    suffix: str,
    candidates: Iterable[Snippet],
    budget: Budget,
    count: Count = estimate_tokens,
    overhead: Overhead | None = None,
    *,
    names: tuple[str, ...] = (),
    cursor: CursorInfo | None = None,
    file_path: str = "",
    language: str | None = None,
    window_first_line: int | None = None,
) -> Context:
    """Fit snippets, suffix and prefix into `budget`.

    Snippets are taken greedily by score (ties: path, line) while they fit in the
    cross-file cap, skipping near-duplicates of those already taken and those whose lines
    the current file's window already shows; then the suffix, up to its cap, trimmed from
    the bottom; then the prefix gets everything left, trimmed from the top, its first line
    a multiple of `budget.prefix_step_lines`, or `window_first_line` (the line the
    previous build's window for this document started at) within
    `budget.keep_window_tokens` (`fit_prefix_kept`). When the prefix is cut, the import
    statements of what it lost (`file_path`'s, in `language`) take up to
    `budget.head_cap` of its room.
    Snippets come back in render order."""
    overhead = _per_path(overhead or default_overhead(count))
    available = budget.available
    window = _window_lines(prefix, suffix, budget)
    ranked = sorted(candidates, key=lambda s: (-s.score, s.path, s.start_line, s.name))
    chosen: list[Snippet] = []
    used = _fit_snippets(
        [s for s in ranked if not s.similar],
        chosen,
        budget.cross_file_cap,
        budget.max_snippets,
        window,
        count,
        overhead,
    )
    if budget.similar_cap > 0:
        # What the definitions leave of their share goes to similar code too: where the
        # names near the cursor resolve to little, code that reads like it is what helps.
        used += _fit_snippets(
            [s for s in ranked if s.similar],
            chosen,
            budget.similar_cap + budget.cross_file_cap - used,
            budget.max_snippets,
            window,
            count,
            overhead,
        )
    suffix_text, suffix_tokens = fit_suffix(suffix, min(budget.suffix_cap, available - used), count)
    if 0 < budget.fim_suffix_tokens < suffix_tokens and file_path:
        cursor_line = cursor.line if cursor is not None else prefix.count("\n")
        tail = _file_tail(suffix_text, budget.fim_suffix_tokens, cursor_line, file_path, count)
        if tail is not None:
            snippet, near, near_tokens = tail
            cost = count(snippet.text) + overhead(file_path)
            if used + cost + near_tokens <= available:  # the tail's file marker must fit too
                chosen.append(snippet)
                used += cost
                suffix_text, suffix_tokens = near, near_tokens
    room = available - used - suffix_tokens
    lines = cursor.line if cursor is not None else None

    def fit(cap: int) -> tuple[str, int]:
        return fit_prefix_kept(
            prefix,
            cap,
            count,
            budget.prefix_step_lines,
            lines,
            window_first_line,
            budget.keep_window_tokens,
        )

    prefix_text, prefix_tokens = fit(room)
    if len(prefix_text) < len(prefix) and file_path and budget.head_cap > 0:
        found = _file_head(
            file_path,
            prefix[: min(HEAD_SCAN_CHARS, len(prefix) - len(prefix_text))],
            language,
            min(budget.head_cap, room // 2),
            count,
            overhead,
        )
        if found is not None:
            head, head_tokens = found
            chosen.append(head)
            used += head_tokens
            prefix_text, prefix_tokens = fit(room - head_tokens)
    snippets = tuple(sorted(chosen, key=lambda s: s.order))
    return Context(
        prefix_text,
        suffix_text,
        snippets,
        names,
        tokens=used + suffix_tokens + prefix_tokens,
        cursor=cursor,
    )


def _file_tail(
    fitted: str, near_cap: int, cursor_line: int, file_path: str, count: Count
) -> tuple[Snippet, str, int] | None:
    """The fitted suffix split where `near_cap` tokens end at a line end: (the rest as the
    current file's tail snippet, the near part, its tokens); None if no line end is in
    reach. The suffix starts on `cursor_line`."""
    near, near_tokens = fit_suffix(fitted, near_cap, count)
    if not near.endswith("\n") or len(near) >= len(fitted):
        return None
    line = cursor_line + near.count("\n")
    return Snippet(file_path, fitted[len(near) :], line, 0.0, tail=True), near, near_tokens


def _per_path(overhead: Overhead) -> Overhead:
    """`overhead`, once per path: the budget asks for a snippet's at least twice, and
    many snippets share a path."""
    known: dict[str, int] = {}

    def once(path: str) -> int:
        cost = known.get(path)
        if cost is None:
            cost = known[path] = overhead(path)
        return cost

    return once


HEAD_SCAN_CHARS: Final = 24_000
"""How far into the file its imports are looked for (~600 lines): a file imports at its
top, and scanning a 200 KB file costs ~2 ms; imports further down are local ones."""
_head_statements: _Lru[tuple[bytes, str | None], list[str]] = _Lru(64)


def _file_head(
    file_path: str,
    cut: str,
    language: str | None,
    cap: int,
    count: Count,
    overhead: Overhead,
) -> tuple[Snippet, int] | None:
    """The import statements of the part of the current file that the prefix no longer
    shows (`cut`, read up to HEAD_SCAN_CHARS), as a snippet of the file's own path that
    fits `cap`, with its cost; when they do not all fit, the last ones (a file imports its
    own package's modules last, by convention), whole statements only. None when there
    are none. Memoised by the scanned text's hash: it moves only in steps of
    `Budget.prefix_step_lines` lines, and not at all past HEAD_SCAN_CHARS."""
    cut = cut[:HEAD_SCAN_CHARS]
    key = (xxhash.xxh3_128_digest(cut.encode("utf-8", "surrogatepass")), language)
    statements = _head_statements.get(key)
    if statements is None:
        statements = _head_statements.put(key, file_head.import_statements(cut, language))
    room = cap - overhead(file_path)
    first, total = len(statements), 0
    while first > 0:  # each statement counted alone (memoised), then the whole once
        cost = count(statements[first - 1]) + 1
        if total + cost > room:
            break
        first, total = first - 1, total + cost
    while first < len(statements):
        text = "\n".join(statements[first:]) + "\n"
        tokens = count(text)
        if tokens <= room:
            snippet = Snippet(file_path, text, 0, 0.0, language=language, head=True)
            return snippet, tokens + overhead(file_path)
        first += 1
    return None


def _fit_snippets(
    ranked: list[Snippet],
    chosen: list[Snippet],
    cap: int,
    max_snippets: int,
    window: frozenset[str],
    count: Count,
    overhead: Overhead,
) -> int:
    """Append to `chosen` the best of `ranked` that fit `cap`; the tokens they take. A
    similar-code chunk is never cut (half a call site misleads), and is skipped when a
    snippet already chosen from its file shows most of its lines or overlaps it."""
    used = 0
    for snippet in ranked:
        if len(chosen) >= max_snippets or cap - used <= 0:
            break
        path_cost = overhead(snippet.path)
        spare = cap - used - path_cost  # for the text
        tokens = count(snippet.text)
        if tokens > spare and (snippet.similar or spare < MIN_CUT_TOKENS):
            continue  # cannot be cut to fit either (as `_cut_to_fit` would find)
        if _in_window(snippet, window):
            continue
        cost = path_cost + tokens
        if tokens > spare:
            whole = snippet
            snippet, cost = _cut_to_fit(snippet, cap - used, count, overhead)
            if not snippet.text:
                continue
            _remember_head_tokens(whole, snippet)
        if snippet.similar and _shown_by(snippet, chosen):
            continue
        if any(_near_duplicate(snippet, other) for other in chosen):
            continue
        chosen.append(snippet)
        used += cost
    return used


def _shown_by(chunk: Snippet, chosen: list[Snippet]) -> bool:
    """Whether the chosen snippets of the chunk's file already show it: a chunk it
    overlaps, or most of its lines among theirs (a definition shown whole)."""
    end = chunk.start_line + chunk.text.count("\n")
    same_file = [s for s in chosen if s.path == chunk.path]
    for other in same_file:
        if (
            other.similar
            and other.start_line < end
            and chunk.start_line < (other.start_line + other.text.count("\n"))
        ):
            return True
    if not same_file:
        return False
    lines = _lines_of(chunk)
    shown = frozenset().union(*(_lines_of(s) for s in same_file))
    return bool(lines) and len(lines & shown) >= IN_WINDOW_SHARE * len(lines)


def _cut_to_fit(
    snippet: Snippet, room: int, count: Count, overhead: Overhead
) -> tuple[Snippet, int]:
    """The head of a snippet too long for the room left, cut at a line end, when enough of
    it fits to be worth showing (a big class's header, docstring and first members say
    more than a small unrelated file); else a snippet with no text."""
    room -= overhead(snippet.path)
    if room < MIN_CUT_TOKENS:
        return snippet.with_text(""), 0
    text, tokens = fit_suffix(snippet.text, room, count)
    if tokens < MIN_CUT_TOKENS:
        return snippet.with_text(""), 0
    return snippet.with_text(text), tokens + overhead(snippet.path)


def _window_lines(prefix: str, suffix: str, budget: Budget) -> frozenset[str]:
    """Lines of the current file that the prompt shows whatever the snippets take: the
    prefix and suffix within their smallest shares, at a generous 3 characters a token."""
    least_prefix = max(
        0, budget.available - budget.cross_file_cap - budget.suffix_cap - budget.similar_cap
    )
    head = prefix[max(0, len(prefix) - least_prefix * 3) :]
    tail = suffix[: budget.suffix_cap * 3]
    return _line_set(head) | _line_set(tail)
