"""Where a suggestion ends.

The cursor decides the mode: in the middle of a line, or after a plain statement, the
user wants the rest of one line; on a blank line or after a block opener they want a
block. Stop rules run on the accumulated text after every streamed chunk, so the stream
can be closed (and the GPU freed) as soon as the answer is complete.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

BLOCK_OPENERS = (":", "{")
CLOSERS = set(")]}>\"'`;, \t")


class Mode(enum.Enum):
    LINE = "line"
    BLOCK = "block"


@dataclass(frozen=True)
class CursorShape:
    """What the text around the cursor says about the suggestion wanted there."""

    mode: Mode
    line_suffix: str
    block_indent: int
    next_line: str | None
    max_lines: int


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
    """Single line or block, and the indentation a block must keep."""
    line_prefix = prefix[prefix.rfind("\n") + 1 :]
    line_end = suffix.find("\n")
    line_suffix = suffix if line_end == -1 else suffix[:line_end]
    rest = "" if line_end == -1 else suffix[line_end + 1 :]
    next_line = next((line.strip() for line in rest.splitlines() if line.strip()), None)

    only_closers = all(char in CLOSERS for char in line_suffix)
    if only_closers and not line_prefix.strip():
        mode, block_indent = Mode.BLOCK, indent_width(line_prefix)
    elif only_closers and line_prefix.rstrip().endswith(BLOCK_OPENERS):
        mode, block_indent = Mode.BLOCK, indent_width(line_prefix) + 1
    else:
        mode, block_indent = Mode.LINE, 0
    return CursorShape(mode, line_suffix, block_indent, next_line, max_lines)


def apply_stops(text: str, shape: CursorShape, final: bool) -> tuple[str, bool]:
    """Cut `text` where the suggestion should end.

    Returns the text to keep and whether the suggestion is complete (stop the stream).
    `final` says the stream has ended, so the last line is complete too.
    """
    if shape.mode is Mode.LINE:
        newline = text.find("\n")
        if newline != -1:
            return _trim_line_suffix(text[:newline], shape), True
        return (_trim_line_suffix(text, shape), True) if final else (text, False)

    lines = text.split("\n")
    for number, line in enumerate(lines[1:], start=1):
        complete = final or number < len(lines) - 1
        if number >= shape.max_lines:
            return _join(lines[:number]), True
        if line.strip() and indent_width(line) < shape.block_indent:
            return _join(lines[:number]), True
        if complete and shape.next_line is not None and line.strip() == shape.next_line:
            return _join(lines[:number]), True
    if final:
        return _join(lines), True
    return text, False


def salvage(text: str, shape: CursorShape) -> str:
    """What can still be shown from a stream that broke: only whole lines of a block."""
    if shape.mode is Mode.LINE:
        return ""
    last_newline = text.rfind("\n")
    return apply_stops(text[:last_newline], shape, final=True)[0] if last_newline > 0 else ""


def _join(lines: list[str]) -> str:
    return "\n".join(lines).rstrip()


def _trim_line_suffix(text: str, shape: CursorShape) -> str:
    """Drop the rest of the line if the model repeated it (the editor keeps it anyway)."""
    rest = shape.line_suffix.strip()
    text = text.rstrip()
    if rest and text.endswith(rest):
        text = text[: -len(rest)].rstrip()
    return text
