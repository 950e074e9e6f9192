"""TypeScript's, TSX's and JavaScript's definitions (functions, classes and their members,
interfaces, types, enums, exported variables) and imports, `require` calls included.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from cache.model import ImportRef
from cache.outline.outliner import (
    JSDOC_COMMENTS,
    MAX_NESTING,
    Outliner,
    named_child,
    signature_start,
)

_TS_FUNCTION_DECLARATIONS: Final = frozenset(
    {"function_declaration", "generator_function_declaration", "function_signature"}
)
_TS_FUNCTION_VALUES: Final = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_TS_CLASSES: Final = frozenset({"class_declaration", "abstract_class_declaration"})
_TS_HEADER_KINDS: Final = {
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
}
_TS_METHODS: Final = frozenset(
    {"method_definition", "method_signature", "abstract_method_signature"}
)
_TS_FIELDS: Final = frozenset({"public_field_definition", "field_definition"})


def outline_typescript(outliner: Outliner, root: Node) -> None:
    _ts_statements(outliner, root, "", depth=0)
    for keyword in (b"require", b"import"):
        _ts_calls(outliner, root, keyword)


def _ts_calls(outliner: Outliner, root: Node, keyword: bytes) -> None:
    """`require("m")` and `import("m")` anywhere in the file.

    Found from the bytes: each `keyword(` asks the tree for the node around it, which
    costs a few lookups per call, not a walk over every expression of the file.
    """
    data = outliner.data
    position = data.find(keyword)
    while position >= 0:
        after = position + len(keyword)
        paren = after
        while data[paren : paren + 1] in (b" ", b"\t"):
            paren += 1
        if data[paren : paren + 1] == b"(":
            call = root.descendant_for_byte_range(position, paren + 1)
            if call is not None and call.type == "call_expression":
                _ts_call(outliner, call, position)
        position = data.find(keyword, after)


def _ts_call(outliner: Outliner, call: Node, position: int) -> None:
    function = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    if function is None or arguments is None or function.start_byte != position:
        return
    if function.type not in ("identifier", "import"):
        return
    first = named_child(arguments, 0)
    if first is not None and first.type == "string":
        module = outliner.string_value(first)
        outliner.imports.append(ImportRef(module, (), call.start_point[0]))


def _ts_statements(outliner: Outliner, parent: Node, prefix: str, depth: int) -> None:
    if depth > MAX_NESTING:
        return
    for child in parent.children:
        _ts_statement(outliner, child, child, prefix, exported=False, depth=depth)


def _ts_statement(
    outliner: Outliner, node: Node, outer: Node, prefix: str, exported: bool, depth: int
) -> None:
    kind = node.type
    if kind == "export_statement":
        source = node.child_by_field_name("source")
        if source is not None:
            _ts_reexport(outliner, node, source)
            return
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            _ts_statement(outliner, declaration, node, prefix, exported=True, depth=depth)
    elif kind == "import_statement":
        _ts_import(outliner, node)
    elif kind in _TS_FUNCTION_DECLARATIONS:
        _ts_define(outliner, "function", node, outer, prefix)
    elif kind in _TS_CLASSES:
        qualified = _ts_define(outliner, "class", node, outer, prefix)
        body = node.child_by_field_name("body")
        if qualified is not None and body is not None:
            _ts_class_body(outliner, body, qualified + ".")
    elif kind in _TS_HEADER_KINDS:
        _ts_define(outliner, _TS_HEADER_KINDS[kind], node, outer, prefix)
    elif kind in ("lexical_declaration", "variable_declaration"):
        _ts_variables(outliner, node, outer, prefix, exported)
    elif kind == "ambient_declaration":
        for child in node.named_children:
            _ts_statement(outliner, child, outer, prefix, exported, depth)
    elif kind == "expression_statement":
        inner = named_child(node, 0)
        if inner is not None and inner.type == "internal_module":
            _ts_statement(outliner, inner, outer, prefix, exported, depth)
    elif kind == "ERROR":
        _ts_statements(outliner, node, prefix, depth + 1)
    elif kind in ("internal_module", "module"):
        qualified = _ts_define(outliner, "namespace", node, outer, prefix)
        body = node.child_by_field_name("body")
        if qualified is not None and body is not None:
            _ts_statements(outliner, body, qualified + ".", depth + 1)


def _ts_define(
    outliner: Outliner, kind: str, node: Node, outer: Node, prefix: str, first: Node | None = None
) -> str | None:
    """Record a named declaration whose header runs to its body; its qualified name."""
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    name = (
        outliner.string_value(name_node) if name_node.type == "string" else outliner.text(name_node)
    )
    body = node.child_by_field_name("body")
    start = signature_start(outer)
    if kind == "type":
        signature = outliner.first_line(start, node.end_byte)
    else:
        signature = outliner.header(start, node.end_byte if body is None else body.start_byte)
    first = outer if first is None else first
    qualified = prefix + name
    doc = outliner.comment_above(first, JSDOC_COMMENTS)
    outliner.define(kind, name, qualified, signature, doc, first, node)
    return qualified


def _ts_class_body(outliner: Outliner, body: Node, prefix: str) -> None:
    first_decorator: Node | None = None
    for member in body.children:
        kind = member.type
        if kind == "decorator":
            first_decorator = first_decorator or member
            continue
        if kind == "comment":
            continue
        first, first_decorator = first_decorator or member, None
        if kind in _TS_METHODS:
            _ts_define(outliner, "method", member, member, prefix, first)
        elif kind in _TS_FIELDS:
            name_node = member.child_by_field_name("name") or member.child_by_field_name("property")
            if name_node is None:
                continue
            name = outliner.text(name_node)
            outliner.define(
                "variable",
                name,
                prefix + name,
                outliner.first_line(signature_start(member), member.end_byte),
                outliner.comment_above(first, JSDOC_COMMENTS),
                first,
                member,
            )


def _ts_variables(
    outliner: Outliner, declaration: Node, outer: Node, prefix: str, exported: bool
) -> None:
    """`const f = () => ...` as a function; other variables only when exported."""
    for declarator in declaration.named_children:
        if declarator.type != "variable_declarator":
            continue
        name_node = declarator.child_by_field_name("name")
        if name_node is None or name_node.type != "identifier":
            continue
        value = declarator.child_by_field_name("value")
        if value is not None and value.type in _TS_FUNCTION_VALUES:
            kind = "function"
            body = value.child_by_field_name("body")
            end = value.end_byte if body is None else body.start_byte
            signature = outliner.header(signature_start(outer), end)
        elif exported:
            kind = "variable"
            signature = outliner.first_line(signature_start(outer), outer.end_byte)
        else:
            continue
        name = outliner.text(name_node)
        doc = outliner.comment_above(outer, JSDOC_COMMENTS)
        outliner.define(kind, name, prefix + name, signature, doc, outer, outer)


def _ts_import(outliner: Outliner, statement: Node) -> None:
    """`import d, {a, b as c} from "m"` names ("default", "a", "b"); `* as ns` names nothing."""
    source = statement.child_by_field_name("source")
    names: list[str] = []
    for child in statement.named_children:
        if child.type == "import_clause":
            for part in child.named_children:
                if part.type == "identifier":
                    names.append("default")
                elif part.type == "named_imports":
                    for specifier in part.named_children:
                        name_node = specifier.child_by_field_name("name")
                        if specifier.type == "import_specifier" and name_node is not None:
                            names.append(outliner.string_value(name_node))
        elif child.type == "import_require_clause":
            source = child.child_by_field_name("source")
    if source is not None:
        module = outliner.string_value(source)
        outliner.imports.append(ImportRef(module, tuple(names), statement.start_point[0]))


def _ts_reexport(outliner: Outliner, statement: Node, source: Node) -> None:
    """`export {a} from "m"` names ("a",); `export * from "m"` names ("*",)."""
    names: list[str] = []
    for child in statement.children:
        if child.type == "*":
            names = ["*"]
        elif child.type == "export_clause":
            for specifier in child.named_children:
                name_node = specifier.child_by_field_name("name")
                if specifier.type == "export_specifier" and name_node is not None:
                    names.append(outliner.string_value(name_node))
    module = outliner.string_value(source)
    outliner.imports.append(ImportRef(module, tuple(names), statement.start_point[0]))
