"""Semantic tokens for Java.

Declarations: classes, interfaces, enums and records (classes, like the project index's
kinds), methods, constructors (named as their class), fields and record components
(properties; `final` ones `readonly`), enum constants (readonly properties), parameters,
lambda and catch parameters, and locals (`final` ones `readonly`). A class's fields and
methods are seen unqualified from its methods, as Java scopes them. Imports bind a class
(or, `import static`, a member); one the project cache resolves to another file is
`crossFile` with its kind there, and `Cls.member` of such a class gets its member's kind.
Package names are namespaces. Uses resolve through the scopes, then `java.lang`
(`defaultLibrary`); an unresolved capitalised name is a class (a class of the same
package needs no import: those are classes but not marked `crossFile`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import ClassVar, Final

from tree_sitter import Node

from server.features.semantic_tokens.model import CONSTANT, CROSS_FILE, ProjectNames, Token
from server.features.semantic_tokens.walker import (
    READONLY,
    Handler,
    Scope,
    Walker,
    has_keyword,
    text_of,
)

_JAVA_LANG: Final = dict.fromkeys(
    ("String", "Object", "Integer", "Long", "Double", "Float", "Short", "Byte", "Character",
     "Boolean", "Number", "Math", "System", "Thread", "Runnable", "Iterable", "Comparable",
     "CharSequence", "StringBuilder", "Exception", "RuntimeException", "Error", "Throwable",
     "IllegalArgumentException", "IllegalStateException", "NullPointerException",
     "UnsupportedOperationException", "IndexOutOfBoundsException", "Class", "Void", "Enum",
     "Record", "AutoCloseable", "Override", "Deprecated", "SuppressWarnings",
     "FunctionalInterface", "SafeVarargs"),
    "class",
)  # fmt: skip
_CLASSES: Final = frozenset(
    {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
     "annotation_type_declaration"}
)  # fmt: skip


class JavaWalker(Walker):
    references: ClassVar[Mapping[str, str]] = {"identifier": "", "type_identifier": "class"}
    builtins = _JAVA_LANG
    skipped = frozenset(
        {"line_comment", "block_comment", "string_literal", "character_literal", "this",
         "super", "integral_type", "floating_point_type", "boolean_type", "void_type"}
    )  # fmt: skip
    selves = frozenset({"this"})
    class_names_visible = True

    def package(self, node: Node, scope: Scope) -> None:
        for part in self.dotted(node.named_children[0] if node.named_children else None):
            self.emit(part, "namespace", {"declaration"})

    def import_declaration(self, node: Node, scope: Scope) -> None:
        parts = self.dotted(next(iter(node.named_children), None))
        if not parts:
            return
        if any(child.type == "asterisk" for child in node.named_children):
            for part in parts:
                self.emit(part, "namespace")
            return
        *package, name = parts
        known = self.project.names.get(text_of(name))
        static = has_keyword(node, "static")
        for index, part in enumerate(package):
            if static and index == len(package) - 1:
                self.emit(part, "class", {CROSS_FILE} if known is not None else ())
            else:
                self.emit(part, "namespace", {CROSS_FILE} if known is not None else ())
        if static and known is None:  # a member: a method, or a constant by its spelling
            modifiers = READONLY if CONSTANT.match(text_of(name)) else frozenset()
            kind = "property" if modifiers else "method"
            scope.bind(text_of(name), kind, modifiers)
            self.emit(name, kind, modifiers)
        else:
            self.imported(scope, name, [name])

    def dotted(self, node: Node | None) -> list[Node]:
        """The parts of `a.b.C`."""
        if node is None:
            return []
        if node.type == "scoped_identifier":
            name = node.child_by_field_name("name")
            return [*self.dotted(node.child_by_field_name("scope")), *([name] if name else [])]
        return [node] if node.type == "identifier" else []

    def class_(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        self.declare(name, scope, "class")
        own = Scope("class", scope)
        for component in self.parameter_nodes(node.child_by_field_name("parameters")):
            self.declare(component.child_by_field_name("name"), own, "property", READONLY)
            self.visit_fields(component, own, "type")
        self.visit_fields(node, own, "type_parameters", "superclass", "interfaces", "body")
        for child in node.named_children:
            if child.type in ("modifiers", "super_interfaces", "extends_interfaces"):
                self.visit(child, own)

    def parameter_nodes(self, node: Node | None) -> list[Node]:
        return node.named_children if node is not None else []

    def enum_constant(self, node: Node, scope: Scope) -> None:
        self.declare(node.child_by_field_name("name"), scope, "property", READONLY)
        self.visit_fields(node, scope, "arguments", "body")

    def field(self, node: Node, scope: Scope) -> None:
        """A field (a property) or a local variable (`final`: readonly)."""
        kind = "property" if scope.kind == "class" else "variable"
        modifiers = READONLY if has_keyword(node, "final") else frozenset()
        self.visit_fields(node, scope, "type")
        for declarator in node.children_by_field_name("declarator"):
            self.declare(declarator.child_by_field_name("name"), scope, kind, modifiers)
            self.visit_fields(declarator, scope, "dimensions", "value")

    def method(self, node: Node, scope: Scope) -> None:
        """A method (bound in its class) or a constructor (its class's name)."""
        name = node.child_by_field_name("name")
        if node.type == "constructor_declaration":
            if name is not None:
                self.emit(name, "class", {"declaration"})
        else:
            self.declare(name, scope, "method")
        own = Scope("function", scope)
        self.visit_fields(node, scope, "type_parameters", "type")
        self.parameters(node.child_by_field_name("parameters"), own)
        for child in node.named_children:
            if child.type in ("modifiers", "throws"):
                self.visit(child, scope)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit_children(body, own)

    def parameters(self, node: Node | None, scope: Scope) -> None:
        for parameter in self.parameter_nodes(node):
            if parameter.type == "identifier":  # a lambda's `(a, b) ->`
                self.declare(parameter, scope, "parameter")
                continue
            modifiers = READONLY if has_keyword(parameter, "final") else frozenset()
            name = parameter.child_by_field_name("name")
            if parameter.type == "spread_parameter":
                declarator = next(
                    (c for c in parameter.named_children if c.type == "variable_declarator"), None
                )
                name = declarator.child_by_field_name("name") if declarator else None
            self.declare(name, scope, "parameter", modifiers)
            self.visit_fields(parameter, scope, "type")
            for child in parameter.named_children:
                if child.type in ("type_identifier", "generic_type", "scoped_type_identifier"):
                    self.visit(child, scope)

    def lambda_(self, node: Node, scope: Scope) -> None:
        own = Scope("function", scope)
        parameters = node.child_by_field_name("parameters")
        if parameters is not None and parameters.type == "identifier":
            self.declare(parameters, own, "parameter")
        else:
            self.parameters(parameters, own)
        self.visit_fields(node, own, "body")

    def for_each(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        self.visit_fields(node, scope, "type", "value")
        self.declare(node.child_by_field_name("name"), own, "variable")
        self.visit_fields(node, own, "body")

    def catch(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        for child in node.named_children:
            if child.type == "catch_formal_parameter":
                self.visit_children(child, scope, skip=child.children_by_field_name("name"))
                self.declare(child.child_by_field_name("name"), own, "variable")
        self.visit_fields(node, own, "body")

    def try_with_resources(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        for resources in node.children_by_field_name("resources"):
            for resource in resources.named_children:
                self.visit_fields(resource, scope, "type", "value")
                self.declare(resource.child_by_field_name("name"), own, "variable")
        self.visit_fields(node, own, "body")
        for child in node.named_children:
            if child.type in ("catch_clause", "finally_clause"):
                self.visit(child, scope)

    def invocation(self, node: Node, scope: Scope) -> None:
        obj = node.child_by_field_name("object")
        self.visit(obj, scope)
        self.mark_called(node)
        self.member(node.child_by_field_name("name"), obj, scope, node)
        self.visit_fields(node, scope, "type_arguments", "arguments")

    def field_access(self, node: Node, scope: Scope) -> None:
        obj = node.child_by_field_name("object")
        self.visit(obj, scope)
        self.member(node.child_by_field_name("field"), obj, scope, node)

    def scoped_type(self, node: Node, scope: Scope) -> None:
        """`Outer.Inner`, `java.util.List` in a type."""
        children = node.named_children
        if not children:
            return
        self.visit(children[0], scope)
        for previous, child in itertools.pairwise(children):
            self.type_member(child, previous, scope)

    def unresolved(self, name: str, fallback: str) -> str:
        if fallback == "" and name[:1].isupper():
            return "property" if CONSTANT.match(name) and len(name) > 1 else "class"
        return fallback

    handlers: ClassVar[Mapping[str, Handler]] = {
        "package_declaration": package,
        "import_declaration": import_declaration,
        **dict.fromkeys(_CLASSES, class_),
        "enum_constant": enum_constant,
        "field_declaration": field,
        "constant_declaration": field,
        "local_variable_declaration": field,
        "method_declaration": method,
        "constructor_declaration": method,
        "compact_constructor_declaration": method,
        "lambda_expression": lambda_,
        "enhanced_for_statement": for_each,
        "catch_clause": catch,
        "try_with_resources_statement": try_with_resources,
        "method_invocation": invocation,
        "field_access": field_access,
        "scoped_type_identifier": scoped_type,
        "block": Walker.block,
        "for_statement": Walker.block,
    }


def classify(root: Node, project: ProjectNames) -> list[Token]:
    """The tokens of a Java tree, by position (byte columns)."""
    return JavaWalker(project).run(root)
