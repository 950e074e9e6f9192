"""What every language's extractor shares: the definitions and imports found in one
file so far (`Outliner`), its comment styles, and the text helpers that make a signature
and a doc from the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tree_sitter import Node

from cache.model import Definition, ImportRef

MAX_SIGNATURE_CHARS: Final = 300
"""A signature longer than this is cut (with "..."): prompts want the shape, not the body."""
MAX_DOC_LINES: Final = 20
"""The start of a long docstring says what a definition is for; the rest is detail."""
MAX_NESTING: Final = 64
"""Classes in classes deeper than this are skipped rather than risk the recursion limit."""


def named_child(node: Node, index: int) -> Node | None:
    """The node's index-th named child, or None: tree-sitter 0.26 raises IndexError past
    the end, and half-typed code is full of empty blocks and argument lists."""
    return node.named_child(index) if 0 <= index < node.named_child_count else None


@dataclass(frozen=True, slots=True)
class CommentStyle:
    """Which comments directly above a definition document it, in one language."""

    line_prefixes: tuple[bytes, ...]
    """Longest first, so "///" is stripped whole before "//" is tried."""
    block_openers: tuple[bytes, ...] = ()
    """Block comments ("/**") that count as docs; () for none."""
    excluded_prefixes: tuple[bytes, ...] = ()
    """Lines that look like comments but are not ("#!" shebangs)."""


JSDOC_COMMENTS: Final = CommentStyle((b"//",), block_openers=(b"/**",))


def one_line(text: str) -> str:
    """A header on one line: whitespace runs collapsed, cut at MAX_SIGNATURE_CHARS."""
    if "\n" in text or "  " in text or "\t" in text or "\r" in text:
        text = " ".join(text.split())
        if "( " in text or " )" in text or "[ " in text or " ]" in text:
            text = text.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]")
    else:
        text = text.strip()
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[: MAX_SIGNATURE_CHARS - 3].rstrip() + "..."
    return text


def no_space(text: str) -> str:
    """A dotted or `::` path as written, without the whitespace a line break put in it."""
    return "".join(text.split())


def clip_doc(text: str) -> str | None:
    """The first MAX_DOC_LINES lines of a doc, or None when nothing is left."""
    lines = text.strip().split("\n", MAX_DOC_LINES)[:MAX_DOC_LINES]
    doc = "\n".join(line.rstrip() for line in lines).strip()
    return doc or None


def _end_row(node: Node) -> int:
    """The last line a node covers (a node ending at column 0 does not cover that line)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


_SIGNATURE_SKIP: Final = frozenset(
    {
        "decorator",
        "comment",
        "line_comment",
        "block_comment",
        "annotation",
        "marker_annotation",
        "attribute_item",
    }
)


def signature_start(node: Node) -> int:
    """Where a definition's header starts once decorators and annotations are left out."""
    for child in node.children:
        kind = child.type
        if kind in _SIGNATURE_SKIP:
            continue
        if kind == "modifiers":
            for modifier in child.children:
                if modifier.type not in _SIGNATURE_SKIP:
                    return modifier.start_byte
            continue
        return child.start_byte
    return node.start_byte


class Outliner:
    """One file's bytes and the definitions and imports found in it so far."""

    __slots__ = ("_lines", "data", "definitions", "imports", "language")

    def __init__(self, data: bytes, language: str) -> None:
        self.data = data
        self.language = language
        self.definitions: list[Definition] = []
        self.imports: list[ImportRef] = []
        self._lines: list[bytes] | None = None

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def header(self, start: int, end: int, trailing: bytes = b"{;") -> str:
        """The text between two byte offsets as a one-line signature, without `trailing`."""
        text = self.data[start:end].rstrip().rstrip(trailing).decode("utf-8", "replace")
        return one_line(text)

    def first_line(self, start: int, end: int, trailing: bytes = b";") -> str:
        """The first line of a span as a signature (variables, aliases, generic definitions).

        A variable keeps the `{` that opens its value (`CONFIG = {`); a header does not.
        """
        newline = self.data.find(b"\n", start, end)
        return self.header(start, end if newline < 0 else newline, trailing)

    def string_value(self, node: Node) -> str:
        """A string literal's contents as written, without its quotes."""
        text = self.text(node)
        if len(text) >= 2 and text[0] in "\"'`" and text[-1] == text[0]:
            return text[1:-1]
        return text

    def comment_above(self, first: Node, style: CommentStyle) -> str | None:
        """The comment block on the lines just above a definition's first node, as a doc.

        Only for a definition that starts its line: in `trait T { fn a(); }` the comment
        above documents T, not `a`.
        """
        line_start = self.data.rfind(b"\n", 0, first.start_byte) + 1
        if self.data[line_start : first.start_byte].strip():
            return None
        if self._lines is None:
            self._lines = self.data.split(b"\n")
        lines = self._lines
        last = first.start_point[0] - 1
        if last < 0 or last >= len(lines):
            return None
        line = lines[last].strip()
        if style.block_openers and line.endswith(b"*/"):
            return self._block_comment(lines, last, style)
        kept: list[str] = []
        while last >= 0 and len(kept) < 200:
            line = lines[last].strip()
            prefix = next((p for p in style.line_prefixes if line.startswith(p)), None)
            if prefix is None or line.startswith(style.excluded_prefixes):
                break
            text = line[len(prefix) :]
            kept.append(text.removeprefix(b" ").decode("utf-8", "replace").rstrip())
            last -= 1
        if not kept:
            return None
        kept.reverse()
        return clip_doc("\n".join(kept))

    @staticmethod
    def _block_comment(lines: list[bytes], last: int, style: CommentStyle) -> str | None:
        first = last
        while first >= 0 and last - first < 200:
            opening = lines[first].strip()
            if b"/*" in opening:
                break
            first -= 1
        else:
            return None
        opener = next((o for o in style.block_openers if opening.startswith(o)), None)
        if opener is None:
            return None
        texts: list[str] = []
        for index in range(first, last + 1):
            line = lines[index].strip()
            if index == first:
                line = line[len(opener) :].lstrip(b"*!")
            if index == last:
                line = line[: line.rfind(b"*/")].rstrip(b"*")
            line = line.strip()
            if line.startswith(b"*"):
                line = line[1:].removeprefix(b" ")
            texts.append(line.decode("utf-8", "replace").rstrip())
        return clip_doc("\n".join(texts))

    def define(
        self,
        kind: str,
        name: str,
        qualified_name: str,
        signature: str,
        doc: str | None,
        first: Node,
        node: Node,
    ) -> None:
        """Record a definition that spans from `first` (its decorator, say) to the end of `node`."""
        start_row = first.start_point[0]
        self.definitions.append(
            Definition(kind, name, qualified_name, signature, doc, start_row, _end_row(node))
        )


def define_package(outliner: Outliner, node: Node, name: str, style: CommentStyle) -> None:
    """The file's package as a definition: the resolver maps it to directories."""
    name = no_space(name)
    signature = outliner.first_line(node.start_byte, node.end_byte)
    doc = outliner.comment_above(node, style)
    outliner.define("package", name, name, signature, doc, node, node)
