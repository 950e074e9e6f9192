"""Python's definitions (classes, functions, methods, module variables and type aliases,
with their docstrings) and imports as written.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Final

from tree_sitter import Node

from cache.model import ImportRef
from cache.outline.outliner import (
    MAX_NESTING,
    CommentStyle,
    Outliner,
    clip_doc,
    named_child,
    no_space,
    one_line,
)

_HASH_COMMENTS: Final = CommentStyle((b"#",), excluded_prefixes=(b"#!",))
_PYTHON_IMPORTS: Final = frozenset(
    {"import_statement", "import_from_statement", "future_import_statement"}
)
_PYTHON_TRANSPARENT: Final = frozenset({"if_statement", "try_statement", "with_statement"})
"""Compound statements whose definitions still belong to the module or class around them."""
_PYTHON_COMPOUND: Final = _PYTHON_TRANSPARENT | {
    "for_statement",
    "while_statement",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "match_statement",
    "case_clause",
}


def outline_python(outliner: Outliner, root: Node) -> None:
    _python_block(outliner, root, "", in_class=False, depth=0)


def _python_block(outliner: Outliner, block: Node, prefix: str, in_class: bool, depth: int) -> None:
    """Definitions among a module's or class's statements, and in its if/try/with blocks."""
    if depth > MAX_NESTING:
        return
    for child in block.children:
        kind = child.type
        if kind in ("function_definition", "class_definition"):
            _python_definition(outliner, child, child, prefix, in_class, depth)
        elif kind == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is not None:
                _python_definition(outliner, inner, child, prefix, in_class, depth)
        elif kind == "expression_statement":
            statement = named_child(child, 0)
            if statement is not None and statement.type == "assignment":
                _python_assignment(outliner, statement, child, prefix)
        elif kind == "assignment":
            _python_assignment(outliner, child, child, prefix)
        elif kind == "type_alias_statement":
            _python_type_alias(outliner, child, prefix)
        elif kind in _PYTHON_IMPORTS:
            _python_import(outliner, child)
        elif kind in _PYTHON_TRANSPARENT and not _is_main_guard(outliner, child):
            for inner_block in _python_blocks(child):
                _python_block(outliner, inner_block, prefix, in_class, depth + 1)
        elif kind in _PYTHON_COMPOUND:
            _python_nested_imports(outliner, child, depth + 1)
        elif kind == "ERROR":
            _python_block(outliner, child, prefix, in_class, depth + 1)


def _is_main_guard(outliner: Outliner, statement: Node) -> bool:
    """`if __name__ == "__main__":`, whose variables are a script's locals, not the module's."""
    condition = statement.child_by_field_name("condition")
    if statement.type != "if_statement" or condition is None:
        return False
    return outliner.data.find(b"__main__", condition.start_byte, condition.end_byte) >= 0


def _python_nested_imports(outliner: Outliner, statement: Node, depth: int) -> None:
    """Imports inside a function body (or a `match`): walked only where the bytes hold "import".

    A statement walk, not a query over every node: the query cost as much as the rest of
    the outline together.
    """
    if depth > MAX_NESTING:
        return
    if outliner.data.find(b"import", statement.start_byte, statement.end_byte) < 0:
        return
    if statement.type == "decorated_definition":
        inner = statement.child_by_field_name("definition")
        if inner is not None:
            _python_nested_imports(outliner, inner, depth + 1)
        return
    for block in _python_blocks(statement):
        for child in block.children:
            kind = child.type
            if kind in _PYTHON_IMPORTS:
                _python_import(outliner, child)
            elif kind in _PYTHON_COMPOUND or kind == "ERROR":
                _python_nested_imports(outliner, child, depth + 1)


def _python_blocks(statement: Node) -> Iterator[Node]:
    """The blocks of a compound statement, its elif/else/except/finally clauses included."""
    if statement.type == "ERROR":
        yield statement
        return
    for child in statement.children:
        if child.type == "block":
            yield child
        elif child.type.endswith("_clause"):
            for grandchild in child.children:
                if grandchild.type == "block":
                    yield grandchild


def _python_definition(
    outliner: Outliner, node: Node, outer: Node, prefix: str, in_class: bool, depth: int
) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = outliner.text(name_node)
    body = node.child_by_field_name("body")
    is_class = node.type == "class_definition"
    header_end = node.end_byte if body is None else body.start_byte
    for child in node.children:
        if child.start_byte >= header_end:
            break
        if child.type == ":":
            header_end = child.end_byte
            break
    doc = _python_docstring(outliner, body) if body is not None else None
    if doc is None:
        doc = outliner.comment_above(outer, _HASH_COMMENTS)
    qualified = prefix + name
    kind = "class" if is_class else "method" if in_class else "function"
    signature = one_line(outliner.data[node.start_byte : header_end].decode("utf-8", "replace"))
    outliner.define(kind, name, qualified, signature, doc, outer, node)
    if is_class and body is not None:
        _python_block(outliner, body, qualified + ".", in_class=True, depth=depth + 1)
    elif body is not None:
        _python_nested_imports(outliner, node, depth + 1)


def _python_docstring(outliner: Outliner, body: Node) -> str | None:
    """The first statement of a body when it is a string: Python's own idea of a docstring."""
    index = 0
    statement = named_child(body, 0)
    while statement is not None and statement.type == "comment":
        index += 1
        statement = named_child(body, index)
    if statement is not None and statement.type == "expression_statement":
        statement = named_child(statement, 0)
    if statement is None or statement.type != "string":
        return None
    raw = outliner.text(statement)
    start = 0
    while start < len(raw) and start < 3 and raw[start] not in "\"'":
        start += 1
    quote = raw[start : start + 3]
    if quote not in ('"""', "'''"):
        quote = raw[start : start + 1]
    text = raw[start + len(quote) :]
    if quote and text.endswith(quote):
        text = text[: -len(quote)]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return clip_doc(inspect.cleandoc(text))


def _python_assignment(outliner: Outliner, assignment: Node, outer: Node, prefix: str) -> None:
    """`NAME = ...` or `NAME: T = ...`; tuple, attribute and subscript targets are skipped."""
    target = assignment.child_by_field_name("left")
    if target is None or target.type != "identifier":
        return
    name = outliner.text(target)
    outliner.define(
        "variable",
        name,
        prefix + name,
        outliner.first_line(outer.start_byte, outer.end_byte),
        outliner.comment_above(outer, _HASH_COMMENTS),
        outer,
        outer,
    )


def _python_type_alias(outliner: Outliner, statement: Node, prefix: str) -> None:
    """`type Alias[T] = ...` (3.12)."""
    target = statement.child_by_field_name("left")
    if target is None:
        return
    name = outliner.text(target).split("[", 1)[0].strip()
    outliner.define(
        "type",
        name,
        prefix + name,
        outliner.first_line(statement.start_byte, statement.end_byte),
        outliner.comment_above(statement, _HASH_COMMENTS),
        statement,
        statement,
    )


def _python_import(outliner: Outliner, statement: Node) -> None:
    line = statement.start_point[0]
    if statement.type == "import_statement":
        for imported in statement.children_by_field_name("name"):
            module = _python_imported_name(outliner, imported)
            if module:
                outliner.imports.append(ImportRef(module, (), line))
        return
    if statement.type == "future_import_statement":
        module = "__future__"
    else:
        module_node = statement.child_by_field_name("module_name")
        if module_node is None:
            return
        module = no_space(outliner.text(module_node))
    names: list[str] = []
    aliases: list[tuple[str, str]] = []
    for imported in statement.children_by_field_name("name"):
        name = _python_imported_name(outliner, imported)
        if name:
            names.append(name)
            alias = imported.child_by_field_name("alias")
            if imported.type == "aliased_import" and alias is not None:
                aliases.append((no_space(outliner.text(alias)), name))
    if any(child.type == "wildcard_import" for child in statement.children):
        names = ["*"]
    outliner.imports.append(ImportRef(module, tuple(names), line, tuple(aliases)))


def _python_imported_name(outliner: Outliner, imported: Node) -> str | None:
    """The name as the module defines it: `b` for `b as c`."""
    if not imported.is_named:
        return None
    if imported.type == "aliased_import":
        original = imported.child_by_field_name("name")
        return no_space(outliner.text(original)) if original is not None else None
    return no_space(outliner.text(imported))
