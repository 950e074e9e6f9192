"""Semantic tokens for Go.

Declarations: the package, functions, methods, struct types (as classes, like the project
index's kinds) and other named types, struct fields and interface methods (properties,
methods), parameters and receivers, variables (`:=`, `var`, `range`, type switches) and
constants (`readonly`). Imports bind a package name (the alias, or the path's last part);
a package of this module is `crossFile`, and `pkg.Name` gets the kind that Name has in
that package's files (through the project cache). Uses resolve through the scopes (blocks,
`if`/`for`/`switch` headers), then Go's predeclared names (`defaultLibrary`); `x.f` is a
method when called, else a field (a property). The types of locals are not inferred, so
`s.Add()` on a value of a project type is a method without `crossFile`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from tree_sitter import Node

from server.features.semantic_tokens.model import CROSS_FILE, ProjectNames, Token
from server.features.semantic_tokens.walker import (
    READONLY,
    Handler,
    Scope,
    Walker,
    has_keyword,
    text_of,
)

_PREDECLARED: Final = {
    **dict.fromkeys(
        ("append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make",
         "max", "min", "new", "panic", "print", "println", "real", "recover"),
        "function",
    ),
    **dict.fromkeys(
        ("any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32",
         "float64", "int", "int8", "int16", "int32", "int64", "rune", "string", "uint",
         "uint8", "uint16", "uint32", "uint64", "uintptr"),
        "type",
    ),
}  # fmt: skip
_CLASS_TYPES: Final = frozenset({"struct_type", "interface_type"})


class GoWalker(Walker):
    references: ClassVar[Mapping[str, str]] = {
        "identifier": "",
        "type_identifier": "type",
        "package_identifier": "",
    }
    builtins = _PREDECLARED
    skipped = frozenset(
        {"comment", "interpreted_string_literal", "raw_string_literal", "rune_literal",
         "label_name", "nil", "true", "false", "iota"}
    )  # fmt: skip

    def package(self, node: Node, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "package_identifier":
                self.emit(child, "namespace", {"declaration"})

    def import_spec(self, node: Node, scope: Scope) -> None:
        alias = node.child_by_field_name("name")
        path = text_of(node.child_by_field_name("path")).strip('"`')
        if alias is not None and alias.type == "package_identifier":
            self.imported(scope, alias, [], namespace=True)
        elif alias is None and path:
            name = path.rsplit("/", 1)[-1]
            cross = frozenset({CROSS_FILE}) if name in self.project.names else frozenset()
            scope.bind(name, "namespace", cross)

    def function(self, node: Node, scope: Scope) -> None:
        """A function, method or function literal: its name, then its own scope."""
        name = node.child_by_field_name("name")
        if node.type == "method_declaration" and name is not None:
            self.emit(name, "method", {"declaration"})
        elif name is not None:
            self.declare(name, scope, "function")
        own = Scope("function", scope)
        for field in ("receiver", "parameters"):
            self.parameters(node.child_by_field_name(field), own)
        self.visit_fields(node, own, "type_parameters", "result")
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit_children(body, own)

    def parameters(self, node: Node | None, scope: Scope) -> None:
        for parameter in node.named_children if node is not None else ():
            for name in parameter.children_by_field_name("name"):
                self.declare(name, scope, "parameter")
            self.visit_fields(parameter, scope, "type")

    def type_spec(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("type")
        kind = "class" if value is not None and value.type in _CLASS_TYPES else "type"
        if name is not None:
            self.declare(name, scope, kind)
        self.visit_fields(node, Scope("class", scope), "type_parameters", "type")

    def field_declaration(self, node: Node, scope: Scope) -> None:
        for name in node.children_by_field_name("name"):
            self.emit(name, "property", {"declaration"})
        self.visit_fields(node, scope, "type")

    def method_elem(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            self.emit(name, "method", {"declaration"})
        own = Scope("function", scope)
        self.parameters(node.child_by_field_name("parameters"), own)
        self.visit_fields(node, own, "result")

    def value_spec(self, node: Node, scope: Scope) -> None:
        """`const` and `var` specs."""
        modifiers = READONLY if node.type == "const_spec" else frozenset()
        self.visit_fields(node, scope, "type", "value")
        for name in node.children_by_field_name("name"):
            self.declare(name, scope, "variable", modifiers)

    def short_var(self, node: Node, scope: Scope) -> None:
        """`a, b := ...` (and `range`'s `k, v :=`): new variables; `=`: assignments."""
        self.visit_fields(node, scope, "right")
        left = node.child_by_field_name("left")
        if left is None:
            return
        names = left.named_children if left.type == "expression_list" else [left]
        for name in names:
            if name.type == "identifier" and has_keyword(node, ":="):
                self.declare(name, scope, "variable")
            else:
                self.visit(name, scope)

    def type_switch(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        self.visit_fields(node, own, "initializer", "value")
        for alias in node.children_by_field_name("alias"):
            for name in alias.named_children if alias.type == "expression_list" else [alias]:
                self.declare(name, own, "variable")
        for child in node.named_children:
            if child.type in ("type_case", "default_case"):
                self.block(child, own)

    def selector(self, node: Node, scope: Scope) -> None:
        operand = node.child_by_field_name("operand")
        self.visit(operand, scope)
        self.member(node.child_by_field_name("field"), operand, scope, node)

    def qualified_type(self, node: Node, scope: Scope) -> None:
        package = node.child_by_field_name("package")
        self.visit(package, scope)
        self.type_member(node.child_by_field_name("name"), package, scope)

    def call(self, node: Node, scope: Scope) -> None:
        self.mark_called(node.child_by_field_name("function"))
        self.visit_children(node, scope)

    def keyed_element(self, node: Node, scope: Scope) -> None:
        """`Store{items: x}`: the key names a field; a map literal's keys are values."""
        if not node.named_children:
            return
        key, *rest = node.named_children
        literal = node.parent.parent if node.parent is not None else None
        kind = literal.child_by_field_name("type") if literal is not None else None
        names_field = kind is None or kind.type not in ("map_type", "slice_type", "array_type")
        inner = key.named_children
        if names_field and len(inner) == 1 and inner[0].type == "identifier":
            self.emit(inner[0], "property")
        else:
            self.visit(key, scope)
        for child in rest:
            self.visit(child, scope)

    handlers: ClassVar[Mapping[str, Handler]] = {
        "package_clause": package,
        "import_spec": import_spec,
        "function_declaration": function,
        "method_declaration": function,
        "func_literal": function,
        "type_spec": type_spec,
        "type_alias": type_spec,
        "field_declaration": field_declaration,
        "method_elem": method_elem,
        "method_spec": method_elem,
        "const_spec": value_spec,
        "var_spec": value_spec,
        "short_var_declaration": short_var,
        "range_clause": short_var,
        "type_switch_statement": type_switch,
        "selector_expression": selector,
        "qualified_type": qualified_type,
        "call_expression": call,
        "keyed_element": keyed_element,
        **dict.fromkeys(
            ("block", "for_statement", "if_statement", "expression_switch_statement",
             "select_statement", "expression_case", "default_case", "communication_case"),
            Walker.block,
        ),
    }  # fmt: skip


def classify(root: Node, project: ProjectNames) -> list[Token]:
    """The tokens of a Go tree, by position (byte columns)."""
    return GoWalker(project).run(root)
