"""An editor's view of a text document, written from the LSP specification alone: the
reference the server's document model is checked against (property tests, the fuzzer).

Lines end at `\\n`, `\\r\\n` and `\\r`, and nowhere else; a text has one line more than it
has line endings. A character past a line's end means the line's end (before its
ending), a line past the last means the end of the text; a UTF-16 position inside a
surrogate pair means the character after it. A reversed range is taken the right way
round (as VS Code's `TextDocument` does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LINE_BREAKS = ["\n", "\r\n", "\r"]
NOT_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
"""Characters `str.splitlines` breaks at and LSP does not."""


def units(char: str, encoding: str) -> int:
    """How many code units `char` takes in the client's position encoding."""
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(char.encode("utf-16-le", "surrogatepass")) // 2
    return 1


@dataclass
class Line:
    start: int
    content_end: int
    end: int


class ModelText:
    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self._lines: tuple[str, list[Line]] | None = None

    def lines(self) -> list[Line]:
        if self._lines is None or self._lines[0] is not self.text:
            found, start = [], 0
            for end in re.finditer(r"\r\n|\r|\n", self.text):
                found.append(Line(start, end.start(), end.end()))
                start = end.end()
            found.append(Line(start, len(self.text), len(self.text)))
            self._lines = (self.text, found)
        return self._lines[1]

    def offset(self, line: int, character: int) -> int:
        lines = self.lines()
        if line >= len(lines):
            return len(self.text)
        at = lines[line]
        counted, offset = 0, at.start
        while offset < at.content_end and counted < character:
            counted += units(self.text[offset], self.encoding)
            offset += 1
        return offset

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, character) of a code-point offset that is not inside a line ending."""
        for number, line in enumerate(self.lines()):
            if offset <= line.content_end:
                return number, sum(units(c, self.encoding) for c in self.text[line.start : offset])
        raise ValueError(f"offset {offset} is past the text")

    def edit(self, start: tuple[int, int], end: tuple[int, int], new: str) -> None:
        a, b = sorted((self.offset(*start), self.offset(*end)))
        self.text = self.text[:a] + new + self.text[b:]

    def end(self) -> tuple[int, int]:
        """The position of the end of the text."""
        return self.position(len(self.text))
