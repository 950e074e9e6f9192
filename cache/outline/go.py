"""Go's definitions (functions, methods qualified by their receiver's type, types, values)
and the file's package and imports.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from cache.model import ImportRef
from cache.outline.outliner import (
    MAX_NESTING,
    CommentStyle,
    Outliner,
    define_package,
    named_child,
    one_line,
)

_GO_COMMENTS: Final = CommentStyle((b"//",))


def outline_go(outliner: Outliner, root: Node, depth: int = 0) -> None:
    if depth > MAX_NESTING:
        return
    for child in root.children:
        kind = child.type
        if kind == "package_clause":
            name_node = named_child(child, 0)
            if name_node is not None:
                define_package(outliner, child, outliner.text(name_node), _GO_COMMENTS)
        elif kind == "import_declaration":
            _go_imports(outliner, child)
        elif kind in ("function_declaration", "method_declaration"):
            _go_function(outliner, child)
        elif kind == "type_declaration":
            _go_types(outliner, child)
        elif kind in ("const_declaration", "var_declaration"):
            _go_values(outliner, child)
        elif kind == "ERROR":
            outline_go(outliner, child, depth + 1)


def _go_function(outliner: Outliner, node: Node) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = outliner.text(name_node)
    qualified, kind = name, "function"
    receiver = node.child_by_field_name("receiver")
    if node.type == "method_declaration" and receiver is not None:
        kind = "method"
        receiver_type = _go_receiver_type(outliner, receiver)
        if receiver_type:
            qualified = f"{receiver_type}.{name}"
    body = node.child_by_field_name("body")
    signature = outliner.header(node.start_byte, node.end_byte if body is None else body.start_byte)
    doc = outliner.comment_above(node, _GO_COMMENTS)
    outliner.define(kind, name, qualified, signature, doc, node, node)


def _go_receiver_type(outliner: Outliner, receiver: Node) -> str | None:
    """`Warehouse` for `(w *Warehouse[T])`."""
    parameter = next(
        (c for c in receiver.named_children if c.type == "parameter_declaration"), None
    )
    type_node = parameter.child_by_field_name("type") if parameter is not None else None
    while type_node is not None and type_node.type in (
        "pointer_type",
        "generic_type",
        "parenthesized_type",
    ):
        if type_node.type == "generic_type":
            type_node = type_node.child_by_field_name("type")
        else:
            type_node = named_child(type_node, 0)
    return outliner.text(type_node) if type_node is not None else None


def _go_types(outliner: Outliner, declaration: Node) -> None:
    specs = [c for c in declaration.named_children if c.type in ("type_spec", "type_alias")]
    grouped = len(specs) > 1 or any(child.type == "(" for child in declaration.children)
    for spec in specs:
        name_node = spec.child_by_field_name("name")
        if name_node is None:
            continue
        type_node = spec.child_by_field_name("type")
        kind = "type"
        if spec.type == "type_spec" and type_node is not None:
            kind = {"struct_type": "struct", "interface_type": "interface"}.get(
                type_node.type, "type"
            )
        _go_define_spec(
            outliner, kind, outliner.text(name_node), "type", spec, declaration, grouped
        )


def _go_values(outliner: Outliner, declaration: Node) -> None:
    keyword = "const" if declaration.type == "const_declaration" else "var"
    kind = "constant" if keyword == "const" else "variable"
    specs = [c for c in declaration.named_children if c.type in ("const_spec", "var_spec")]
    grouped = len(specs) > 1 or any(child.type == "(" for child in declaration.children)
    for spec_list in declaration.named_children:
        if spec_list.type == "var_spec_list":
            specs.extend(c for c in spec_list.named_children if c.type == "var_spec")
            grouped = True
    for spec in specs:
        for name_node in spec.children_by_field_name("name"):
            if not name_node.is_named:
                continue
            name = outliner.text(name_node)
            _go_define_spec(outliner, kind, name, keyword, spec, declaration, grouped)


def _go_define_spec(
    outliner: Outliner,
    kind: str,
    name: str,
    keyword: str,
    spec: Node,
    declaration: Node,
    grouped: bool,
) -> None:
    """One name of a `type`/`const`/`var` declaration, grouped `( ... )` or not."""
    trailing = b"{;" if keyword == "type" else b";"
    if grouped:
        signature = f"{keyword} {outliner.first_line(spec.start_byte, spec.end_byte, trailing)}"
        node = spec
    else:
        signature = outliner.first_line(declaration.start_byte, declaration.end_byte, trailing)
        node = declaration
    doc = outliner.comment_above(node, _GO_COMMENTS)
    outliner.define(kind, name, name, one_line(signature), doc, node, node)


def _go_imports(outliner: Outliner, declaration: Node) -> None:
    """`import str "strings"` gives module "strings", names ("str",)."""
    specs = [c for c in declaration.named_children if c.type == "import_spec"]
    for spec_list in declaration.named_children:
        if spec_list.type == "import_spec_list":
            specs.extend(c for c in spec_list.named_children if c.type == "import_spec")
    for spec in specs:
        path = spec.child_by_field_name("path")
        if path is None:
            continue
        alias = spec.child_by_field_name("name")
        names = (outliner.text(alias),) if alias is not None else ()
        outliner.imports.append(ImportRef(outliner.string_value(path), names, spec.start_point[0]))
