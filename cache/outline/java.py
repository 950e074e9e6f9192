"""Java's definitions (types and their members, qualified by the enclosing types) and the
file's package and imports.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from cache.model import ImportRef
from cache.outline.outliner import (
    JSDOC_COMMENTS,
    MAX_NESTING,
    Outliner,
    define_package,
    no_space,
    signature_start,
)

_JAVA_TYPES: Final = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
}
_JAVA_METHODS: Final = {
    "method_declaration": "method",
    "constructor_declaration": "constructor",
    "compact_constructor_declaration": "constructor",
    "annotation_type_element_declaration": "method",
}


def outline_java(outliner: Outliner, root: Node) -> None:
    _java_members(outliner, root, "", depth=0)


def _java_members(outliner: Outliner, parent: Node, prefix: str, depth: int) -> None:
    if depth > MAX_NESTING:
        return
    for child in parent.children:
        kind = child.type
        if kind in _JAVA_TYPES or kind in _JAVA_METHODS:
            body = child.child_by_field_name("body")
            qualified = _java_define(outliner, child, body, prefix, kind)
            if qualified is not None and body is not None and kind in _JAVA_TYPES:
                _java_members(outliner, body, qualified + ".", depth + 1)
        elif kind in ("field_declaration", "constant_declaration"):
            _java_fields(outliner, child, prefix)
        elif kind in ("enum_body_declarations", "ERROR"):
            _java_members(outliner, child, prefix, depth + 1)
        elif kind == "import_declaration":
            _java_import(outliner, child)
        elif kind == "package_declaration":
            path = next((c for c in child.named_children if "identifier" in c.type), None)
            if path is not None:
                define_package(outliner, child, outliner.text(path), JSDOC_COMMENTS)


def _java_define(
    outliner: Outliner, node: Node, body: Node | None, prefix: str, kind: str
) -> str | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    name = outliner.text(name_node)
    end = node.end_byte if body is None else body.start_byte
    signature = outliner.header(signature_start(node), end)
    doc = outliner.comment_above(node, JSDOC_COMMENTS)
    qualified = prefix + name
    kind_name = _JAVA_TYPES.get(kind) or _JAVA_METHODS[kind]
    outliner.define(kind_name, name, qualified, signature, doc, node, node)
    return qualified


def _java_fields(outliner: Outliner, field: Node, prefix: str) -> None:
    signature = outliner.first_line(signature_start(field), field.end_byte)
    doc = outliner.comment_above(field, JSDOC_COMMENTS)
    for declarator in field.children_by_field_name("declarator"):
        name_node = declarator.child_by_field_name("name") if declarator.is_named else None
        if name_node is not None:
            name = outliner.text(name_node)
            outliner.define("variable", name, prefix + name, signature, doc, field, field)


def _java_import(outliner: Outliner, declaration: Node) -> None:
    """`import a.b.C;` module "a.b.C"; `a.b.*` module "a.b" names ("*",); statics name members."""
    path_node = next((c for c in declaration.named_children if "identifier" in c.type), None)
    if path_node is None:
        return
    path = no_space(outliner.text(path_node))
    is_static = False
    names: tuple[str, ...] = ()
    for child in declaration.children:
        if child.type == "static":
            is_static = True
        elif child.type == "asterisk":
            names = ("*",)
    if is_static and not names:
        path, _, member = path.rpartition(".")
        names = (member,)
    outliner.imports.append(ImportRef(path, names, declaration.start_point[0]))
