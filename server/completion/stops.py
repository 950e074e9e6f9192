"""Where a suggestion ends.

The cursor decides the mode: in the middle of a line, or after a plain statement, the
user wants the rest of one line; on a blank line or after a block opener they want a
block. Stop rules run on the accumulated text after every streamed chunk, so the stream
can be closed (and the GPU freed) as soon as the answer is complete:

- single-line mode ends at the line end (at the end of a line, the suggestion may be the
  next line, starting with its newline);
- a block ends before a line indented less than the block, before a line that repeats
  the start of the suffix (the model has run past the hole), before a line identical to
  the one above it (a loop), and at the line cap;
- a block may leave its indentation (never for column 0) only to end in an opener that
  the line below the cursor belongs under (the hole closed its block and opened the one
  the text after the cursor is the body of), or at the end of the file;
- both end before a closing bracket that closes something opened before the cursor when
  the text after the cursor already closes it (the model's copy would be a duplicate).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

BLOCK_OPENERS = (":", "{")
CLOSERS = set(")]}>\"'`;, \t")
PAIRS = {")": "(", "]": "[", "}": "{"}
QUOTES = "\"'`"


class Mode(enum.Enum):
    LINE = "line"
    BLOCK = "block"


@dataclass(frozen=True)
class CursorShape:
    """What the text around the cursor says about the suggestion wanted there."""

    mode: Mode
    line_suffix: str
    block_indent: int
    """Block lines indented less than this end the block (a block opener: one deeper)."""
    next_line: str | None
    """The first non-blank line after the cursor line, stripped: the suffix's start."""
    max_lines: int
    closer: str | None = None
    """The closing bracket the text after the cursor starts with (the rest of the line in
    single-line mode, the next line in a block), which the suggestion must not repeat."""
    first_indent: int = 0
    """The indentation already before the cursor, which the first line shares."""
    below_indent: int | None = None
    """In a block, the indentation of `next_line`: the model repeating that line there has
    run past the hole. None compares `next_line` without indentation."""
    lowest_indent: int | None = None
    """The least indentation a block's later lines may have: below `block_indent` only on
    the way to an opener that the line below belongs under (anywhere at the end of the
    file), never column 0 (the next top-level statement). None: `block_indent`."""


def indent_width(line: str, tab_size: int = 4) -> int:
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += tab_size - width % tab_size
        else:
            break
    return width


def analyse_cursor(prefix: str, suffix: str, max_lines: int = 12) -> CursorShape:
    """Single line or block, and the indentation a block must keep.

    On a blank line the editor has not indented (column 0), the block's indentation is
    read from the lines around it: no deeper than the line below, and, under a block
    opener, deeper than the opener.
    """
    line_start = prefix.rfind("\n") + 1
    line_prefix = prefix[line_start:]
    line_end = suffix.find("\n")
    line_suffix = (suffix if line_end == -1 else suffix[:line_end]).removesuffix("\r")
    rest = "" if line_end == -1 else suffix[line_end + 1 :]
    below = next((line for line in rest.splitlines() if line.strip()), None)
    next_line = below.strip() if below is not None else None

    only_closers = all(char in CLOSERS for char in line_suffix)
    if only_closers and not line_prefix.strip():
        mode, block_indent = Mode.BLOCK, indent_width(line_prefix)
        if not line_prefix and not line_suffix.strip():
            block_indent = _indent_between(prefix[:line_start], below)
    elif only_closers and line_prefix.rstrip().endswith(BLOCK_OPENERS):
        mode, block_indent = Mode.BLOCK, indent_width(line_prefix) + 1
    else:
        mode, block_indent = Mode.LINE, 0
    after = line_suffix.strip() if mode is Mode.LINE else (line_suffix.strip() or next_line or "")
    closer = after[0] if after[:1] in PAIRS else None
    first_indent = indent_width(line_prefix) if not line_prefix.strip() else 0
    below_indent = indent_width(below) if mode is Mode.BLOCK and below is not None else None
    may_leave = mode is Mode.BLOCK and block_indent > 0 and below_indent != 0
    return CursorShape(
        mode,
        line_suffix,
        block_indent,
        next_line,
        max_lines,
        closer,
        first_indent,
        below_indent,
        lowest_indent=1 if may_leave else None,
    )


def _last_filled_line(text: str) -> str | None:
    """The last line of `text` with something on it, split as `str.splitlines` does,
    read from the end a few KB at a time: the prefix may be a 200 KB file's."""
    size = 2048
    while True:
        lines = text[-size:].splitlines()
        if size < len(text):
            lines = lines[1:]  # the first may have been cut
        found = next((line for line in reversed(lines) if line.strip()), None)
        if found is not None or size >= len(text):
            return found
        size *= 8


def _indent_between(above_text: str, below: str | None) -> int:
    """The least indentation a block on an empty, unindented line can have."""
    above = _last_filled_line(above_text)
    if above is not None and above.rstrip().endswith(BLOCK_OPENERS):
        return indent_width(above) + 1
    bounds = []
    if above is not None:
        bounds.append(indent_width(above))
    if below is not None:
        bounds.append(indent_width(below))
    return min(bounds) if bounds else 0


def line_end(text: str, shape: CursorShape) -> int:
    """Where a one-line suggestion's line ends in `text` (-1: not yet). At the end of a
    line, a suggestion may start with a newline: then it is the next line."""
    next_line = text.startswith("\n") and not shape.line_suffix.strip()
    return text.find("\n", 1 if next_line else 0)


def apply_stops(text: str, shape: CursorShape, final: bool) -> tuple[str, bool]:
    """Cut `text` where the suggestion should end.

    Returns the text to keep and whether the suggestion is complete (stop the stream).
    `final` says the stream has ended, so the last line is complete too.
    """
    closed_at = _surplus_closer(text, shape.closer)
    if shape.mode is Mode.LINE:
        newline = line_end(text, shape)
        end = min(x for x in (newline, closed_at, len(text)) if x is not None and x >= 0)
        if end == closed_at:
            return text[:end].rstrip(), True
        if end < len(text) or final:
            return _trim_line_suffix(text[:end], shape), True
        return text, False

    lines = text.split("\n")
    ended = _block_end(lines, shape, closed_at, final)
    if ended is None:
        return text, False
    return _fit_below(lines[:ended], shape), True


def _block_end(
    lines: list[str], shape: CursorShape, closed_at: int | None, final: bool
) -> int | None:
    """How many of a block's lines to keep, or None while the block goes on."""
    floor = shape.block_indent if shape.lowest_indent is None else shape.lowest_indent
    start = len(lines[0]) + 1
    for number, line in enumerate(lines[1:], start=1):
        complete = final or number < len(lines) - 1
        if number >= shape.max_lines:
            return number
        if line.strip() and indent_width(line) < floor:
            return number
        if (
            closed_at is not None
            and start <= closed_at < start + len(line) + 1
            and not line[: closed_at - start].strip()  # the closer starts the line
        ):
            return number
        if complete and _repeats_below(line, shape):
            return number
        if complete and line.strip() and _same_line(lines, number, shape.first_indent):
            return number
        start += len(line) + 1
    return len(lines) if final else None


def _repeats_below(line: str, shape: CursorShape) -> bool:
    """Whether `line` is the line below the cursor again: the model ran past the hole."""
    if shape.next_line is None or line.strip() != shape.next_line:
        return False
    return shape.below_indent is None or indent_width(line) == shape.below_indent


def _fit_below(lines: list[str], shape: CursorShape) -> str:
    """The block's lines, up to where it went below its indentation, unless it ends in
    an opener that the line below the cursor belongs under (the hole opened the block
    the text after the cursor is the body of)."""
    if not shape.below_indent:
        return _join(lines)
    below = next(
        (
            number
            for number, line in enumerate(lines[1:], 1)
            if line.strip() and indent_width(line) < shape.block_indent
        ),
        None,
    )
    if below is None:
        return _join(lines)
    last = next(line for line in reversed(lines) if line.strip())
    if last.rstrip().endswith(BLOCK_OPENERS) and indent_width(last) < shape.below_indent:
        return _join(lines)
    return _join(lines[:below])


def salvage(text: str, shape: CursorShape) -> str:
    """What can still be shown from a stream that broke: only whole lines of a block."""
    if shape.mode is Mode.LINE:
        return ""
    last_newline = text.rfind("\n")
    return apply_stops(text[:last_newline], shape, final=True)[0] if last_newline > 0 else ""


def _surplus_closer(text: str, closer: str | None) -> int | None:
    """Where `text` first closes a bracket it did not open, if that bracket is `closer`
    (the one the text after the cursor supplies); strings and line comments are skipped."""
    if closer is None:
        return None
    depth: list[str] = []
    quote = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif char == quote or (char == "\n" and quote != "`"):
                quote = None
        elif char in QUOTES:
            quote = char
        elif char == "#" or text.startswith("//", index):
            newline = text.find("\n", index)
            if newline < 0:
                return None
            index = newline
            continue
        elif char in "([{":
            depth.append(char)
        elif char in PAIRS:
            if depth:
                depth.pop()
            else:
                return index if char == closer else None
        index += 1
    return None


def _same_line(lines: list[str], number: int, first_indent: int) -> bool:
    """Whether line `number` repeats the line above it, indentation included."""
    above = lines[number - 1]
    shift = first_indent if number == 1 else 0
    return lines[number].strip() == above.strip() and indent_width(
        lines[number]
    ) == shift + indent_width(above)


def _join(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).rstrip()


def _trim_line_suffix(text: str, shape: CursorShape) -> str:
    """Drop the rest of the line if the model repeated it (the editor keeps it anyway)."""
    rest = shape.line_suffix.strip()
    text = text.rstrip()
    if rest and text.endswith(rest):
        text = text[: -len(rest)].rstrip()
    return text
