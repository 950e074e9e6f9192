"""Semantic tokens for TypeScript, TSX and JavaScript (one walker: the grammars share
their node types).

Declarations: functions (`async` ones marked), classes, interfaces and enums (as classes,
like the project index's kinds), type aliases (types), methods, fields (`readonly` ones
marked), parameters, and variables (`const` ones `readonly`; a `const f = () => ...` is a
function). `var` binds in the function, `let`/`const` in the block. Imports: named,
default and `* as ns` imports; what the project cache resolves them to gives their kind
and the `crossFile` modifier, and `ns.member` of a project module gets the member's kind.
Uses: identifiers resolve through the scopes, then the language's globals
(`defaultLibrary`); a type name that resolves to nothing is a type; `obj.name` is a
method when called, else a property, and `this.name` one of the class's own members.
JSX: capitalised tags are components (resolved like any name), lowercase ones are HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from tree_sitter import Node

from server.features.semantic_tokens.model import ProjectNames, Token
from server.features.semantic_tokens.walker import (
    READONLY,
    Handler,
    Scope,
    Walker,
    has_keyword,
    text_of,
)

_GLOBALS: Final = {
    **dict.fromkeys(
        ("Array", "ArrayBuffer", "BigInt", "Boolean", "DataView", "Date", "Error", "Map",
         "Number", "Object", "Promise", "Proxy", "RegExp", "Set", "String", "Symbol",
         "TypeError", "RangeError", "SyntaxError", "URL", "WeakMap", "WeakSet", "TextEncoder",
         "TextDecoder", "Uint8Array", "Int32Array", "Float64Array", "AbortController",
         "Record", "Partial", "Required", "Readonly", "Pick", "Omit", "ReturnType",
         "Parameters", "Awaited", "Exclude", "Extract", "NonNullable", "Iterable",
         "AsyncIterable", "Iterator", "PromiseLike", "ReadonlyArray"),
        "class",
    ),
    **dict.fromkeys(
        ("parseInt", "parseFloat", "isNaN", "isFinite", "setTimeout", "clearTimeout",
         "setInterval", "clearInterval", "queueMicrotask", "structuredClone", "fetch",
         "require", "encodeURIComponent", "decodeURIComponent"),
        "function",
    ),
    **dict.fromkeys(
        ("console", "Math", "JSON", "Reflect", "Intl", "globalThis", "window", "document",
         "process", "module", "exports", "undefined", "NaN", "Infinity", "arguments"),
        "variable",
    ),
}  # fmt: skip
_FUNCTIONS: Final = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


class TypeScriptWalker(Walker):
    references: ClassVar[Mapping[str, str]] = {
        "identifier": "",
        "type_identifier": "type",
        "shorthand_property_identifier": "",
    }
    builtins = _GLOBALS
    skipped = frozenset(
        {"comment", "string", "number", "regex", "predefined_type", "this", "super",
         "statement_identifier", "true", "false", "null", "undefined"}
    )  # fmt: skip
    selves = frozenset({"this"})

    def import_statement(self, node: Node, scope: Scope) -> None:
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            return
        for child in clause.named_children:
            if child.type == "identifier":  # import Default from "..."
                self.imported(scope, child, [child])
            elif child.type == "namespace_import":
                for local in child.named_children:
                    self.imported(scope, local, [], namespace=True)
            elif child.type == "named_imports":
                for spec in child.named_children:
                    if spec.type != "import_specifier":
                        continue
                    original = spec.child_by_field_name("name")
                    alias = spec.child_by_field_name("alias")
                    written = [original] if original is not None else []
                    self.imported(scope, alias or original, written)

    def function(self, node: Node, scope: Scope) -> None:
        """A function or method: its name in the enclosing scope, then its own scope."""
        name = node.child_by_field_name("name")
        modifiers = frozenset({"async"}) if has_keyword(node, "async") else frozenset()
        if node.type in ("method_definition", "method_signature", "abstract_method_signature"):
            if name is not None and name.type != "computed_property_name":
                self.property(name, scope, "method", modifiers)
        elif name is not None and node.type not in _FUNCTIONS:
            self.declare(name, scope, "function", modifiers)
        own = Scope("function", scope)
        if name is not None and node.type in _FUNCTIONS:  # a named function expression
            self.declare(name, own, "function", modifiers)
        self.parameters(node.child_by_field_name("parameters"), own)
        parameter = node.child_by_field_name("parameter")  # `x => ...`
        if parameter is not None:
            self.pattern(parameter, own, "parameter", frozenset())
        self.visit_fields(node, scope, "type_parameters", "return_type")
        body = node.child_by_field_name("body")
        if body is not None and body.type == "statement_block":
            self.visit_children(body, own)
        else:
            self.visit(body, own)

    def parameters(self, node: Node | None, scope: Scope) -> None:
        if node is None:
            return
        for child in node.named_children:
            if child.type in ("required_parameter", "optional_parameter"):
                self.pattern(child.child_by_field_name("pattern"), scope, "parameter", frozenset())
                self.visit_fields(child, scope, "type", "value")
            else:  # JavaScript: the pattern itself
                self.pattern(child, scope, "parameter", frozenset())

    def pattern(
        self, node: Node | None, scope: Scope, kind: str, modifiers: frozenset[str]
    ) -> None:
        """Names bound by a binding pattern (`{a, b: c}`, `[x, ...rest]`, `p = 1`)."""
        if node is None:
            return
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            self.declare(node, scope, kind, modifiers)
        elif node.type == "pair_pattern":
            key = node.child_by_field_name("key")
            if key is not None and key.type == "property_identifier":
                self.emit(key, "property")
            self.pattern(node.child_by_field_name("value"), scope, kind, modifiers)
        elif node.type in ("assignment_pattern", "object_assignment_pattern"):
            self.pattern(node.child_by_field_name("left"), scope, kind, modifiers)
            self.visit(node.child_by_field_name("right"), scope)
        elif node.type in ("object_pattern", "array_pattern", "rest_pattern"):
            for child in node.named_children:
                self.pattern(child, scope, kind, modifiers)
        else:
            self.visit(node, scope)

    def variables(self, node: Node, scope: Scope) -> None:
        """`const`/`let` (block scoped) and `var` (function scoped) declarations."""
        constant = has_keyword(node, "const")
        target = scope.function() if has_keyword(node, "var") else scope
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                self.visit(declarator, scope)
                continue
            name = declarator.child_by_field_name("name")
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTIONS and name is not None:
                async_ = has_keyword(value, "async")
                self.declare(name, target, "function", frozenset({"async"} if async_ else ()))
            else:
                self.pattern(name, target, "variable", READONLY if constant else frozenset())
            self.visit_fields(declarator, scope, "type", "value")

    def class_(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            kind = "type" if node.type == "type_alias_declaration" else "class"
            self.declare(name, scope, kind)
        own = Scope("class", scope)
        self.visit_children(node, own, skip=[name] if name is not None else [])

    def enum_body(self, node: Node, scope: Scope) -> None:
        for child in node.named_children:
            member = child.child_by_field_name("name") if child.type == "enum_assignment" else child
            if member is not None and member.type == "property_identifier":
                self.emit(member, "property", {"declaration", "readonly"})
            if child.type == "enum_assignment":
                self.visit(child.child_by_field_name("value"), scope)

    def field(self, node: Node, scope: Scope) -> None:
        """A class field or an interface property."""
        name = node.child_by_field_name("name")
        readonly = READONLY if has_keyword(node, "readonly") else frozenset()
        if name is not None and name.type in ("property_identifier", "private_property_identifier"):
            self.property(name, scope, "property", readonly)
        self.visit_fields(node, scope, "type", "value")

    def property(self, name: Node, scope: Scope, kind: str, modifiers: frozenset[str]) -> None:
        """A member: bound in a class or interface (for `this.name`), only a token in an
        object literal or an object type."""
        if scope.kind == "class":
            self.declare(name, scope, kind, modifiers)
        else:
            self.emit(name, kind, modifiers | {"declaration"})

    def for_in(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        left = node.child_by_field_name("left")
        if has_keyword(node, "const", "let", "var"):
            constant = READONLY if has_keyword(node, "const") else frozenset()
            self.pattern(left, own, "variable", constant)
        else:
            self.visit(left, own)
        self.visit_fields(node, own, "right", "body")

    def catch(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        self.pattern(node.child_by_field_name("parameter"), own, "variable", frozenset())
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit_children(body, own)

    def member_expression(self, node: Node, scope: Scope) -> None:
        obj = node.child_by_field_name("object")
        self.visit(obj, scope)
        self.member(node.child_by_field_name("property"), obj, scope, node)

    def call(self, node: Node, scope: Scope) -> None:
        self.mark_called(node.child_by_field_name("function"))
        self.visit_children(node, scope)

    def nested_type(self, node: Node, scope: Scope) -> None:
        """`ns.Type`: a namespace, then a member of it."""
        module = node.child_by_field_name("module")
        self.visit(module, scope)
        name = node.child_by_field_name("name")
        self.type_member(name, module, scope)

    def pair(self, node: Node, scope: Scope) -> None:
        key = node.child_by_field_name("key")
        if key is not None and key.type == "property_identifier":
            self.emit(key, "property")
        self.visit(node.child_by_field_name("value"), scope)

    def jsx_tag(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        if name is not None and name.type == "identifier" and text_of(name)[:1].isupper():
            self.use(name, scope, "class")
        elif name is not None and name.type != "identifier":
            self.visit(name, scope)
        for attribute in node.children_by_field_name("attribute"):
            self.visit(attribute, scope)

    def jsx_attribute(self, node: Node, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "property_identifier":
                self.emit(child, "property")
            else:
                self.visit(child, scope)

    handlers: ClassVar[Mapping[str, Handler]] = {
        "import_statement": import_statement,
        **dict.fromkeys(
            ("function_declaration", "generator_function_declaration", "function_signature",
             "method_definition", "method_signature", "abstract_method_signature",
             *_FUNCTIONS),
            function,
        ),
        "lexical_declaration": variables,
        "variable_declaration": variables,
        **dict.fromkeys(
            ("class_declaration", "abstract_class_declaration", "class", "interface_declaration",
             "enum_declaration", "type_alias_declaration"),
            class_,
        ),
        "enum_body": enum_body,
        "public_field_definition": field,
        "field_definition": field,
        "property_signature": field,
        "statement_block": Walker.block,
        "for_statement": Walker.block,
        "for_in_statement": for_in,
        "catch_clause": catch,
        "member_expression": member_expression,
        "call_expression": call,
        "nested_type_identifier": nested_type,
        "pair": pair,
        "jsx_opening_element": jsx_tag,
        "jsx_closing_element": jsx_tag,
        "jsx_self_closing_element": jsx_tag,
        "jsx_attribute": jsx_attribute,
    }  # fmt: skip


def classify(root: Node, project: ProjectNames) -> list[Token]:
    """The tokens of a TypeScript, TSX or JavaScript tree, by position (byte columns)."""
    return TypeScriptWalker(project).run(root)
