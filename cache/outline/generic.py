"""An outline for every other grammar: the nodes that look like named definitions, found
from the grammar's own node kinds.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from cache.outline.grammars import load_grammar
from cache.outline.outliner import (
    CommentStyle,
    Outliner,
)

GENERIC_MAX_DEPTH: Final = 6
"""How deep the generic outline looks: enough for namespace > class > body > method (C#)."""
_GENERIC_COMMENTS: Final = CommentStyle(
    (b"///", b"//", b"--", b";;", b";", b"##", b"# ", b"#"),
    block_openers=(b"/*",),
    excluded_prefixes=(b"#!", b"#include", b"#define", b"#if", b"#endif", b"#else", b"#pragma"),
)


_generic_kinds: dict[str, frozenset[int]] = {}

_GENERIC_SUFFIXES: Final = ("_definition", "_declaration", "_item", "_specifier")
_GENERIC_EXACT: Final = frozenset(
    {"class", "module", "method", "singleton_method", "function", "struct", "enum", "trait"}
)
_GENERIC_SKIPPED_WORDS: Final = ("parameter", "argument", "import", "using", "include")
_GENERIC_DECLARATORS: Final = {
    "function_definition": "function",
    "declaration": "function",
    "field_declaration": "method",
}
"""C-family nodes named through their `declarator`; the last two only for prototypes."""
_GENERIC_NAME_STOPS: Final = ("parameter", "body", "block", "value")
_FUNCTION_LIKE: Final = ("function", "method", "constructor", "procedure", "lambda", "closure")
_NAME_LIKE_DECLARATORS: Final = frozenset({"operator_name", "destructor_name"})


def generic_kind_ids(language: str) -> frozenset[int]:
    """The node kinds (ids, aliases included) of a grammar that may be named definitions."""
    kind_ids = _generic_kinds.get(language)
    if kind_ids is not None:
        return kind_ids
    grammar = load_grammar(language)
    found: set[int] = set()
    if grammar is not None:
        for kind_id in range(grammar.node_kind_count):
            if not (grammar.node_kind_is_named(kind_id) and grammar.node_kind_is_visible(kind_id)):
                continue
            kind = grammar.node_kind_for_id(kind_id)
            if not kind or any(word in kind for word in _GENERIC_SKIPPED_WORDS):
                continue
            if (
                kind.endswith(_GENERIC_SUFFIXES)
                or kind in _GENERIC_EXACT
                or kind in _GENERIC_DECLARATORS
            ):
                found.add(kind_id)
    kind_ids = _generic_kinds[language] = frozenset(found)
    return kind_ids


def outline_generic(outliner: Outliner, root: Node) -> None:
    """Named definitions of any grammar, nested names dotted, nothing inside functions.

    A walk in Python, GENERIC_MAX_DEPTH deep and never into a function: a tree-sitter query
    would run in C, but its cursor is quadratic on some wide ERROR nodes (50 KB of "(" took
    1.7 s in half the grammars).
    """
    kind_ids = generic_kind_ids(outliner.language)
    if kind_ids:
        _generic_walk(outliner, root, kind_ids, "", depth=1)


def _generic_walk(
    outliner: Outliner, parent: Node, kind_ids: frozenset[int], prefix: str, depth: int
) -> None:
    for node in parent.children:
        if node.kind_id in kind_ids:
            named = _generic_name(node)
            if named is not None:
                name_node, kind = named
                name = outliner.first_line(name_node.start_byte, name_node.end_byte)[:200]
                if name:
                    body = node.child_by_field_name("body")
                    end = node.end_byte if body is None else body.start_byte
                    signature = outliner.first_line(node.start_byte, end, b"{;")
                    doc = outliner.comment_above(node, _GENERIC_COMMENTS)
                    outliner.define(kind, name, prefix + name, signature, doc, node, node)
                    if depth < GENERIC_MAX_DEPTH and not any(w in kind for w in _FUNCTION_LIKE):
                        _generic_walk(outliner, node, kind_ids, f"{prefix}{name}.", depth + 1)
                    continue
        if depth < GENERIC_MAX_DEPTH and node.child_count:
            _generic_walk(outliner, node, kind_ids, prefix, depth + 1)


def _generic_name(node: Node) -> tuple[Node, str] | None:
    """A candidate definition's name node and kind; None when it names nothing."""
    kind = node.type
    name_node = node.child_by_field_name("name")
    if name_node is not None and name_node.is_named:
        # A struct_specifier without a body is a use of the type (`struct point p;`).
        if kind.endswith("_specifier") and node.child_by_field_name("body") is None:
            return None
        return name_node, _generic_kind(kind)
    if kind in _GENERIC_DECLARATORS:
        declarator = node.child_by_field_name("declarator")
        declared = _declared_name(declarator) if declarator is not None else None
        if declared is None:
            return None
        name_node, is_function = declared
        if kind != "function_definition" and not is_function:
            return None
        return name_node, _GENERIC_DECLARATORS[kind]
    if kind.endswith("_specifier"):
        return None
    name_node = _identifier_child(node)
    return (name_node, _generic_kind(kind)) if name_node is not None else None


def _identifier_child(node: Node) -> Node | None:
    """The name of a definition whose grammar has no `name` field: an identifier child
    before its parameters or body (Kotlin's `fun f(...)`, never the `x` of R's `function(x) x`).
    """
    for index, child in enumerate(node.children):
        kind = child.type
        if index >= 8 or any(word in kind for word in _GENERIC_NAME_STOPS):
            break
        if node.field_name_for_child(index) in _GENERIC_NAME_STOPS:
            break
        if child.is_named and kind.endswith("identifier"):
            return child
    return None


def _generic_kind(node_type: str) -> str:
    for suffix in _GENERIC_SUFFIXES:
        if node_type.endswith(suffix):
            return node_type[: -len(suffix)] or node_type
    return node_type


def _declared_name(declarator: Node) -> tuple[Node, bool] | None:
    """The identifier a C declarator declares, and whether it declares a function."""
    node: Node | None = declarator
    is_function = False
    for _ in range(12):
        if node is None:
            return None
        kind = node.type
        if kind == "function_declarator":
            is_function = True
        if kind.endswith("identifier") or kind in _NAME_LIKE_DECLARATORS:
            return node, is_function
        node = node.child_by_field_name("declarator")
    return None
