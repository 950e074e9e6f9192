"""Rust's definitions (items, methods qualified by their impl's type) and `use` and `mod`
declarations as imports.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from cache.model import ImportRef
from cache.outline.outliner import (
    MAX_NESTING,
    CommentStyle,
    Outliner,
    no_space,
    signature_start,
)

_RUST_COMMENTS: Final = CommentStyle(
    (b"///",), block_openers=(b"/**",), excluded_prefixes=(b"////",)
)
_RUST_ITEMS: Final = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "struct",
    "enum_item": "enum",
    "union_item": "union",
    "trait_item": "trait",
    "type_item": "type",
    "const_item": "constant",
    "static_item": "variable",
    "mod_item": "module",
    "macro_definition": "macro",
}
_RUST_BRACED_BODIES: Final = frozenset(
    {"block", "field_declaration_list", "declaration_list", "enum_variant_list"}
)


def outline_rust(outliner: Outliner, root: Node) -> None:
    _rust_items(outliner, root, "", in_impl=False, depth=0)


def _rust_items(outliner: Outliner, parent: Node, prefix: str, in_impl: bool, depth: int) -> None:
    """Items of a file, module, trait or impl; `#[...]` attributes above count as their start."""
    if depth > MAX_NESTING:
        return
    first_attribute: Node | None = None
    for child in parent.children:
        kind = child.type
        if kind == "attribute_item":
            first_attribute = first_attribute or child
            continue
        if kind in ("line_comment", "block_comment"):
            continue
        first, first_attribute = first_attribute or child, None
        if kind in _RUST_ITEMS:
            _rust_item(outliner, child, first, prefix, in_impl, depth)
        elif kind in ("use_declaration", "extern_crate_declaration"):
            _rust_import(outliner, child)
        elif kind == "ERROR":
            _rust_items(outliner, child, prefix, in_impl, depth + 1)
        elif kind == "impl_item":
            type_name = _rust_impl_type(outliner, child)
            body = child.child_by_field_name("body")
            if type_name and body is not None:
                _rust_items(outliner, body, f"{prefix}{type_name}.", in_impl=True, depth=depth + 1)


def _rust_item(
    outliner: Outliner, node: Node, first: Node, prefix: str, in_impl: bool, depth: int
) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = outliner.text(name_node)
    kind = _RUST_ITEMS[node.type]
    if in_impl and kind == "function":
        kind = "method"
    body = node.child_by_field_name("body")
    start = signature_start(node)
    if body is not None and body.type in _RUST_BRACED_BODIES:
        signature = outliner.header(start, body.start_byte)
    elif body is None and node.type == "mod_item":  # `mod name;`: its file is elsewhere
        signature = outliner.first_line(start, node.end_byte, trailing=b"")
    else:
        signature = outliner.first_line(start, node.end_byte)
    qualified = prefix + name
    doc = outliner.comment_above(first, _RUST_COMMENTS)
    outliner.define(kind, name, qualified, signature, doc, first, node)
    if body is not None and node.type in ("trait_item", "mod_item"):
        in_trait = node.type == "trait_item"
        _rust_items(outliner, body, qualified + ".", in_impl=in_trait, depth=depth + 1)
    elif body is not None:
        _rust_nested_uses(outliner, body)


def _rust_nested_uses(outliner: Outliner, body: Node) -> None:
    """`use` declarations inside a function body, found from the bytes like JS's `require`."""
    data, end = outliner.data, body.end_byte
    seen: set[int] = set()
    position = data.find(b"use", body.start_byte, end)
    while position >= 0:
        declaration = body.descendant_for_byte_range(position, position + 4)
        if (
            declaration is not None
            and declaration.type == "use_declaration"
            and declaration.start_byte not in seen
        ):
            seen.add(declaration.start_byte)
            _rust_import(outliner, declaration)
        position = data.find(b"use", position + 3, end)


def _rust_impl_type(outliner: Outliner, impl: Node) -> str | None:
    """`Item` for `impl<T> Shape for Item<T>` and for `impl crate::m::Item`."""
    type_node = impl.child_by_field_name("type")
    for _ in range(8):
        if type_node is None:
            return None
        if type_node.type in ("generic_type", "reference_type", "pointer_type"):
            type_node = type_node.child_by_field_name("type")
        elif type_node.type in ("scoped_type_identifier", "scoped_identifier"):
            type_node = type_node.child_by_field_name("name")
        else:
            break
    return outliner.text(type_node) if type_node is not None else None


def _rust_import(outliner: Outliner, declaration: Node) -> None:
    """One `use` tree flattened to (module, names) per module, in the order written."""
    line = declaration.start_point[0]
    if declaration.type == "extern_crate_declaration":
        crate = declaration.child_by_field_name("name")
        if crate is not None:
            outliner.imports.append(ImportRef(outliner.text(crate), (), line))
        return
    argument = declaration.child_by_field_name("argument")
    if argument is None:
        return
    paths: list[tuple[str, str | None]] = []
    _rust_use_paths(outliner, argument, "", paths, depth=0)
    names_by_module: dict[str, list[str]] = {}
    for module, name in paths:
        names = names_by_module.setdefault(module, [])
        if name is not None and name not in names:
            names.append(name)
    for module, names in names_by_module.items():
        outliner.imports.append(ImportRef(module, tuple(names), line))


def _rust_use_paths(
    outliner: Outliner, node: Node, prefix: str, paths: list[tuple[str, str | None]], depth: int
) -> None:
    """(module, name) for each leaf of a use tree; name None for a bare `use foo;`."""
    if depth > MAX_NESTING:
        return
    kind = node.type
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        items = node.child_by_field_name("list")
        inner = _rust_join(prefix, no_space(outliner.text(path))) if path is not None else prefix
        if items is not None:
            _rust_use_paths(outliner, items, inner, paths, depth + 1)
    elif kind == "use_list":
        for item in node.named_children:
            if not item.type.endswith("comment"):
                _rust_use_paths(outliner, item, prefix, paths, depth + 1)
    elif kind == "use_as_clause":
        path = node.child_by_field_name("path")
        if path is not None:
            _rust_use_paths(outliner, path, prefix, paths, depth + 1)
    elif kind == "use_wildcard":
        path = next((c for c in node.named_children if not c.type.endswith("comment")), None)
        module = _rust_join(prefix, no_space(outliner.text(path))) if path is not None else prefix
        paths.append((module, "*"))
    else:
        full = (
            prefix
            if kind == "self" and prefix
            else _rust_join(prefix, no_space(outliner.text(node)))
        )
        module, separator, name = full.rpartition("::")
        paths.append((module, name) if separator and module else (full, None))


def _rust_join(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix else path
