"""The classes and functions that enclose the cursor, outermost first.

For Python from indentation (right on half-typed code, where the tree is not), with the
whole file's tree or a memoised text search for the headers above the window; for the
other languages from the window's tree (`_locate`, which also finds the row where the
cursor's statement starts).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Final

import xxhash
from tree_sitter import Node

from server.completion.cursor.parsing import _bytes_of, _text
from server.completion.cursor.results import Scope
from server.completion.cursor.syntax import _PY_CLAUSES, _PY_HEADER, _SYNTAX, _Syntax
from server.completion.cursor.window import WINDOW_ABOVE


def _locate(
    root: Node, point: tuple[int, int], syntax: _Syntax, source: bytes | None = None
) -> tuple[int, list[tuple[str, str, str, int]], list[Node]]:
    """The row where the statement holding `point` starts, and the scopes around it
    (kind, name, header, window row), outermost first, with their nodes. `source`: the
    bytes parsed, for a window's tree (`_bytes_of`)."""
    node: Node | None = root.descendant_for_point_range(point, point)
    statement_row = point[0]
    found_statement = False
    scopes: list[tuple[str, str, str, int]] = []
    nodes: list[Node] = []
    child: Node | None = None
    while node is not None:
        parent = node.parent
        kind = syntax.scopes.get(node.type)
        if kind is not None:
            name = _scope_name(node, source)
            if name:
                scopes.append((kind, name, _first_line(node, source), node.start_point[0]))
                nodes.append(node)
            if not found_statement and child is not None and _in_header(node, child):
                statement_row = node.start_point[0]  # a signature is the cursor's statement
            found_statement = True  # a scope's body is never the "statement" around it
        elif not found_statement and parent is not None and parent.type in syntax.blocks:
            statement_row = node.start_point[0]
            found_statement = True
        child, node = node, parent
    scopes.reverse()
    nodes.reverse()
    functions = [n for n in nodes if syntax.scopes.get(n.type) == "function"]
    return statement_row, scopes, functions or nodes


def _in_header(scope: Node, child: Node) -> bool:
    """Whether `child` of `scope` is part of its header (name, parameters, bases), not of
    its body: a multi-line signature reads as one statement, complete or not."""
    body = scope.child_by_field_name("body")
    return body is not None and child.start_byte < body.start_byte


def _scope_name(node: Node, source: bytes | None = None) -> str:
    return _text(node.child_by_field_name("name") or node.child_by_field_name("type"), source)


def _first_line(node: Node, source: bytes | None = None) -> str:
    text = _bytes_of(node, source)
    newline = text.find(b"\n")
    return (text if newline < 0 else text[:newline]).decode("utf-8", "replace").strip()


def _python_scopes(
    text: str, line_start: int, line_prefix: str, row: int, root: Node | None = None
) -> tuple[list[Scope], int | None]:
    """Enclosing `def`s and `class`es by indentation (a header encloses the cursor when
    every line between them is indented deeper), outermost first, and where the innermost
    `def`'s line starts if it is within WINDOW_ABOVE lines.

    Lines are read up to WINDOW_ABOVE lines up; above that only header lines are, or,
    with the whole file's tree (`root`), the definitions that hold the line reached."""
    line_end = text.find("\n", line_start)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    if line.strip():
        level = len(line) - len(line.lstrip())
    else:  # a blank line belongs to the block above it, until the user dedents
        level = max(len(line_prefix), _block_level_above(text, line_start))
    scopes: list[Scope] = []
    function_at: int | None = None
    position = line_start
    line_number = row
    while position > 0 and level > 0 and row - line_number < WINDOW_ABOVE:
        previous = text.rfind("\n", 0, position - 1) + 1
        candidate = text[previous : position - 1]
        position = previous
        line_number -= 1
        stripped = candidate.lstrip()
        if not stripped or stripped[0] in "#)]}\"'":
            continue
        indent = len(candidate) - len(stripped)
        if indent < level:
            match = _PY_HEADER.match(stripped)
            if match is not None:
                kind = "class" if match.group(1) == "class" else "function"
                scopes.append(Scope(kind, match.group(2), stripped.rstrip(), line_number))
                if function_at is None and kind == "function":
                    function_at = previous
            if not stripped.startswith(_PY_CLAUSES):
                level = indent
    if level > 0 and position > 0 and root is not None:
        scopes += _tree_headers(root, line_number, level)
    elif level > 0 and position > 0:
        for header_at, kind, name, header in _enclosing_headers(text, position, level):
            number = row - text.count("\n", header_at, line_start)
            scopes.append(Scope(kind, name, header, number))
    scopes.reverse()
    return scopes, function_at


def _tree_headers(root: Node, row: int, level: int) -> list[Scope]:
    """`_enclosing_headers` read from the whole file's tree: the `def`s and `class`es
    holding column `level` of `row`, nearest first. The text search passes every method
    header of a long class on the way to the class's (1 ms in a 76 KB file)."""
    found = []
    node: Node | None = root.descendant_for_point_range((row, level), (row, level))
    while node is not None and level > 0:
        kind = _SYNTAX["python"].scopes.get(node.type)
        start_row, column = node.start_point
        if kind is not None and start_row < row and column < level:
            name = _scope_name(node)
            if name:
                found.append(Scope(kind, name, _first_line(node), start_row))
            level = column
        node = node.parent
    return found


def _enclosing_headers(text: str, end: int, level: int) -> tuple[tuple[int, str, str, str], ...]:
    """The `def` and `class` headers above `end` that enclose a line indented by `level`,
    nearest first: (offset, kind, name, header line). Memoised by the text above `end`:
    while typing it stays the same, and in a test class of hundreds of methods the
    search passes every method's header on the way to the class's."""
    key = (xxhash.xxh3_128_digest(text[:end].encode("utf-8", "surrogatepass")), level)
    with _headers_lock:
        known = _headers.get(key)
    if known is not None:
        return known
    found = []
    for header_at, indent, kind, name in _python_headers_above(text, end):
        if indent < level:
            header_end = text.find("\n", header_at)
            header = text[header_at : len(text) if header_end < 0 else header_end].strip()
            found.append((header_at, kind, name, header))
            level = indent
            if level == 0:
                break
    with _headers_lock:
        _headers[key] = tuple(found)
        if len(_headers) > _HEADERS_MEMO_SIZE:
            del _headers[next(iter(_headers))]
    return tuple(found)


_HEADERS_MEMO_SIZE: Final = 256
_headers: dict[tuple[bytes, int], tuple[tuple[int, str, str, str], ...]] = {}
_headers_lock = threading.Lock()


def _block_level_above(text: str, line_start: int) -> int:
    """The indentation of a new line under the last non-blank line above `line_start`."""
    position = line_start
    for _ in range(50):
        if position == 0:
            return 0
        previous = text.rfind("\n", 0, position - 1) + 1
        line = text[previous : position - 1]
        position = previous
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            indent = len(line) - len(line.lstrip())
            return indent + 4 if stripped.endswith(":") else indent
    return 0


def _python_headers_above(text: str, end: int) -> Iterator[tuple[int, int, str, str]]:
    """`def` and `class` headers that start a line before `end`, nearest first:
    (offset, indentation, kind, name). Found with `rfind`, not a regex over the file."""
    def_at = text.rfind("def ", 0, end)
    class_at = text.rfind("class ", 0, end)
    while def_at >= 0 or class_at >= 0:
        at = max(def_at, class_at)
        if at == def_at:
            def_at = text.rfind("def ", 0, at)
        else:
            class_at = text.rfind("class ", 0, at)
        line_start = text.rfind("\n", 0, at) + 1
        lead = text[line_start:at]
        if lead.rstrip(" \t").endswith("async"):  # the indentation stays: it is the level
            lead = lead.rstrip(" \t")[:-5]
        if lead.strip(" \t"):
            continue
        match = _PY_HEADER.match(text, at)
        if match is not None:
            kind = "class" if match.group(1) == "class" else "function"
            yield line_start + len(lead), len(lead.expandtabs(4)), kind, match.group(2)


def _python_bases(scopes: list[Scope]) -> tuple[tuple[str, ...], ...]:
    cls = next((s for s in reversed(scopes) if s.kind == "class"), None)
    if cls is None or "(" not in cls.header:
        return ()
    inside = cls.header[cls.header.index("(") + 1 : cls.header.rfind(")")]
    bases = []
    for part in inside.split(","):
        part = part.strip()
        if part and "=" not in part and re.fullmatch(r"[A-Za-z_][\w.]*", part):
            bases.append(tuple(part.split(".")))
    return tuple(bases)
