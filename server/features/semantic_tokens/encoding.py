"""Semantic tokens in LSP's integer form, and the delta between two results.

`encode` turns tokens into LSP's relative integer form in the negotiated position
encoding (`Columns` converts the tokens' byte columns); `delta` diffs two encodings into
one edit, and `apply_delta` applies edits as a client does. Apart from the classifiers:
it reads only tokens and the legend, whatever their language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from server.features.semantic_tokens.legend import Legend
from server.features.semantic_tokens.model import Token


class Columns:
    """Tree-sitter positions (rows split at `\\n`, byte columns) as LSP positions: lines
    split at `\\n`, `\\r\\n` and `\\r`, columns in the client's position units. The two
    agree unless the text holds a lone `\\r`, which ends a line for LSP but not a row."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.lines = text.split("\n")
        self.encoding = encoding
        self._wide: dict[int, bytes] = {}
        self._first_line: list[int] | None = None
        """Per row, the LSP line it starts on, where the text holds a lone CR."""
        if LONE_CR.search(text):
            first, line = [], 0
            for row, content in enumerate(self.lines):
                first.append(line)
                line += len(self._lone_crs(row, content)) + 1
            self._first_line = first

    def _lone_crs(self, row: int, content: str) -> list[int]:
        """Where the row's lone CRs are (a CR at its end, but the last row's, is a CR LF's)."""
        end = len(content)
        if row < len(self.lines) - 1 and content.endswith("\r"):
            end -= 1
        return [at for at, char in enumerate(content[:end]) if char == "\r"]

    def convert(self, line: int, byte_column: int) -> int:
        if self.encoding == "utf-8" or line >= len(self.lines):
            return byte_column
        text = self.lines[line]
        if text.isascii():
            return byte_column
        data = self._wide.get(line)
        if data is None:
            data = self._wide[line] = text.encode("utf-8", "surrogatepass")
        head = data[:byte_column].decode("utf-8", "replace")
        if self.encoding == "utf-32":
            return len(head)
        return len(head.encode("utf-16-le", "surrogatepass")) // 2

    def position(self, row: int, byte_column: int) -> tuple[int, int]:
        """The LSP (line, character) of a tree-sitter (row, byte column)."""
        if self._first_line is None or row >= len(self.lines):
            return row, self.convert(row, byte_column)
        content = self.lines[row]
        crs = self._lone_crs(row, content)
        if not crs:
            return self._first_line[row], self.convert(row, byte_column)
        data = content.encode("utf-8", "surrogatepass")
        index = len(data[:byte_column].decode("utf-8", "replace"))
        before = [at for at in crs if at < index]
        start = before[-1] + 1 if before else 0
        piece = content[start:index]
        if self.encoding == "utf-8":
            width = len(piece.encode("utf-8", "surrogatepass"))
        elif self.encoding == "utf-32":
            width = len(piece)
        else:
            width = len(piece.encode("utf-16-le", "surrogatepass")) // 2
        return self._first_line[row] + len(before), width


LONE_CR = re.compile("\r(?!\n)")


def encode(
    tokens: Iterable[Token],
    legend: Legend,
    columns: Columns,
    lines: tuple[int, int] | None = None,
) -> list[int]:
    """LSP's relative form: five integers per token (line delta, start delta, length,
    type, modifier bits), tokens of kinds the legend lacks left out. `lines` keeps only the
    tokens of that range of lines (start inclusive, end exclusive)."""
    data: list[int] = []
    last_line = last_start = 0
    type_index, bits = legend.type_index, legend.modifier_bits
    for token in tokens:
        index = type_index.get(token.kind)
        if index is None:
            continue
        line, start = columns.position(token.line, token.column)
        if lines is not None and not lines[0] <= line < lines[1]:
            continue
        end_line, end = columns.position(token.line, token.column + token.length)
        if end_line != line:  # across a lone CR: up to it
            end = start + 1
        delta_line = line - last_line
        delta_start = start - last_start if delta_line == 0 else start
        mask = 0
        for modifier in token.modifiers:
            mask |= bits.get(modifier, 0)
        data.extend((delta_line, delta_start, end - start, index, mask))
        last_line, last_start = line, start
    return data


def delta(old: Sequence[int], new: Sequence[int]) -> tuple[int, int, list[int]]:
    """One edit turning `old` into `new`: (start, delete count, data to insert)."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, end_old - start, list(new[start:end_new])


def apply_delta(old: Sequence[int], edits: Iterable[tuple[int, int, Sequence[int]]]) -> list[int]:
    """`old` with edits applied, all offsets referring to `old` (as LSP specifies)."""
    result = list(old)
    for start, count, data in sorted(edits, key=lambda e: e[0], reverse=True):
        result[start : start + count] = data
    return result
