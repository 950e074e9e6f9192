"""Trimming text to a token count at line boundaries: the prefix from the top, its first
line moving in steps of `Budget.prefix_step_lines` lines so that typing does not shift
it on every keystroke; the suffix (and a snippet cut to fit) from the bottom. Counting
is what costs, so each starts from a guess and corrects it from the counts, a few tries
at most."""

from __future__ import annotations

from typing import Final

from server.completion.context.model import Count

GUESS_CHARS_PER_TOKEN: Final = 6
"""Where trimming starts: more characters per token than code ever averages."""


def fit_prefix(
    prefix: str, cap: int, count: Count, step_lines: int = 1, lines: int | None = None
) -> tuple[str, int]:
    """The longest tail of `prefix` that starts a line (at a multiple of `step_lines`,
    counted from the top of the file) and counts at most `cap`; with its count. Falls back
    to a tail that starts mid-line only when the cursor's own line is over the cap.
    `lines`, the newlines in `prefix` where the caller knows them (the cursor's line)."""
    if cap <= 0 or not prefix:
        return "", 0
    step_lines = max(1, step_lines)
    start = max(0, len(prefix) - cap * GUESS_CHARS_PER_TOKEN)
    if start > 0:
        start = _next_line_start(prefix, start)
    last_line = prefix.rfind("\n") + 1
    if lines is None:  # once: the tries count from the end
        lines = prefix.count("\n") if step_lines > 1 else 0
    for _ in range(12):
        if start > last_line:
            break
        if start > 0:
            start = _step_line_start(prefix, start, step_lines, lines)
            if start > last_line:
                break
        tokens = count(prefix[start:])
        if tokens <= cap:
            return prefix[start:], tokens
        excess_chars = (tokens - cap) * (len(prefix) - start) // max(1, tokens)
        start = _next_line_start(prefix, start + max(1, excess_chars))
    return _fit_chars_from_end(prefix[last_line:], cap, count)


def fit_prefix_kept(
    prefix: str,
    cap: int,
    count: Count,
    step_lines: int,
    lines: int | None,
    first_line: int | None,
    slack: int,
) -> tuple[str, int]:
    """`fit_prefix` over a stay in a document: the window starting at `first_line` (where
    the previous build's for the same document started) while it fits `cap` and shows at
    most `slack` tokens less than a fresh fit would. A move down that it no longer fits
    leaves `slack` tokens of room below `cap`, so the moves down after it keep the new
    start too. Without `first_line` (a new stay) or `slack`, `fit_prefix`'s window. Why:
    the window's start, and so the prompt up to the cursor's line, then stays the same
    over edits a screen apart, and the backend's prefix cache keeps it."""
    fresh, fresh_tokens = fit_prefix(prefix, cap, count, step_lines, lines)
    if first_line is None or slack <= 0:
        return fresh, fresh_tokens
    if lines is None:
        lines = prefix.count("\n")
    fresh_line = lines - fresh.count("\n")
    fresh_start = len(prefix) - len(fresh)
    if first_line == fresh_line or not 0 <= first_line <= lines:
        return fresh, fresh_tokens
    if fresh_start > 0 and prefix[fresh_start - 1] != "\n":  # the cursor's line alone is over
        return fresh, fresh_tokens
    start = _line_offset(prefix, fresh_start, fresh_line, first_line)
    kept_tokens = count(prefix[start:])
    if fresh_tokens - slack <= kept_tokens <= cap:
        return prefix[start:], kept_tokens
    if first_line < fresh_line and cap > slack:  # pushed down: start lower, with room
        return fit_prefix(prefix, cap - slack, count, step_lines, lines)
    return fresh, fresh_tokens


def _line_offset(text: str, offset: int, line: int, wanted: int) -> int:
    """Where line `wanted` of `text` starts, from `offset`, the start of line `line`."""
    while line > wanted:
        offset = text.rfind("\n", 0, max(0, offset - 1)) + 1
        line -= 1
    while line < wanted:
        offset = text.index("\n", offset) + 1
        line += 1
    return offset


def fit_suffix(suffix: str, cap: int, count: Count) -> tuple[str, int]:
    """The longest head of `suffix` that ends a line and counts at most `cap`."""
    if cap <= 0 or not suffix:
        return "", 0
    end = min(len(suffix), cap * GUESS_CHARS_PER_TOKEN)
    if end < len(suffix):
        end = suffix.rfind("\n", 0, end) + 1
    first_line_end = suffix.find("\n") + 1 or len(suffix)
    for _ in range(12):
        if end < first_line_end:
            break
        tokens = count(suffix[:end])
        if tokens <= cap:
            return suffix[:end], tokens
        excess_chars = (tokens - cap) * end // max(1, tokens)
        end = suffix.rfind("\n", 0, max(0, end - max(1, excess_chars))) + 1
    head, tokens = _fit_chars_from_start(suffix[:first_line_end], cap, count)
    return head, tokens


def _next_line_start(text: str, position: int) -> int:
    """The start of the first line at or after `position`."""
    if position <= 0 or text[position - 1] == "\n":
        return max(0, position)
    newline = text.find("\n", position)
    return len(text) + 1 if newline < 0 else newline + 1


def _step_line_start(text: str, start: int, step: int, lines: int) -> int:
    """`start` (a line start) moved down to the next line whose number is a multiple of
    `step`, so that the prefix's first line changes only every `step` lines. `lines`, the
    newlines in `text`: the line number is counted from the end, which is near (counting
    from the top took 0.25 ms a build deep in a 200 KB file)."""
    if step <= 1:
        return start
    line = lines - text.count("\n", start)
    for _ in range(-line % step):
        newline = text.find("\n", start)
        if newline < 0:
            return len(text) + 1
        start = newline + 1
    return start


def _fit_chars_from_end(text: str, cap: int, count: Count) -> tuple[str, int]:
    low, high = 0, len(text)  # the longest tail that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[len(text) - middle :]) <= cap:
            low = middle
        else:
            high = middle - 1
    tail = text[len(text) - low :] if low else ""
    return tail, count(tail) if tail else 0


def _fit_chars_from_start(text: str, cap: int, count: Count) -> tuple[str, int]:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= cap:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    return head, count(head) if head else 0
