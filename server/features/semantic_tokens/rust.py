"""Semantic tokens for Rust.

Declarations: modules (namespaces), functions (methods inside `impl` and `trait`; `async`
marked), structs, enums, unions and traits (classes, like the project index's kinds),
type aliases, fields, enum variants (readonly properties), parameters, `let`/`for`/`if
let`/`match` bindings and closure parameters, `const` and `static` items (`readonly`,
unless `static mut`). `use` declarations bind their last names; a name the project cache
resolves to another file of the crate is `crossFile` with its kind there, and `Type::item`
of such a type gets its member's kind. The paths of `use crate::…`/`super::…`/`self::…`
are namespaces of the crate (`crossFile`). Uses resolve through the scopes, then the
prelude and primitive types (`defaultLibrary`); `x.f` is a method when called, else a
field. Macro arguments are token trees: their names are resolved as plain uses (and a
name after `.` is a field). The types of locals are not inferred.
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

_PRELUDE: Final = {
    **dict.fromkeys(
        ("String", "Vec", "Option", "Result", "Box", "Rc", "Arc", "HashMap", "HashSet",
         "BTreeMap", "BTreeSet", "Iterator", "IntoIterator", "Clone", "Copy", "Default",
         "Debug", "Display", "PartialEq", "Eq", "PartialOrd", "Ord", "Hash", "Send", "Sync",
         "Sized", "Drop", "Fn", "FnMut", "FnOnce", "From", "Into", "ToString", "AsRef"),
        "class",
    ),
    **dict.fromkeys(("Some", "Ok", "Err"), "function"),
    "None": "variable",
    **dict.fromkeys(
        ("bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
         "i64", "i128", "isize", "f32", "f64"),
        "type",
    ),
    **dict.fromkeys(
        ("println", "print", "eprintln", "eprint", "format", "vec", "assert", "assert_eq",
         "assert_ne", "debug_assert", "panic", "write", "writeln", "todo", "unimplemented",
         "unreachable", "matches", "dbg", "include_str", "env", "concat"),
        "function",
    ),
}  # fmt: skip
_CLASSES: Final = {
    "struct_item": "class",
    "enum_item": "class",
    "union_item": "class",
    "trait_item": "class",
    "type_item": "type",
}
_CRATE_ROOTS: Final = frozenset({"crate", "super", "self"})


class RustWalker(Walker):
    references: ClassVar[Mapping[str, str]] = {
        "identifier": "",
        "type_identifier": "type",
        "primitive_type": "type",
    }
    builtins = _PRELUDE
    skipped = frozenset(
        {"line_comment", "block_comment", "string_literal", "raw_string_literal", "char_literal",
         "attribute_item", "inner_attribute_item", "lifetime", "self", "crate", "super",
         "mutable_specifier", "visibility_modifier"}
    )  # fmt: skip
    selves = frozenset({"self"})

    # items --------------------------------------------------------------------------------

    def use_declaration(self, node: Node, scope: Scope) -> None:
        self.use_tree(node.child_by_field_name("argument"), scope, [])

    def use_tree(self, node: Node | None, scope: Scope, path: list[Node]) -> None:
        """One `use` tree: `a::b::{c, d as e}`; `path` is the names before it."""
        if node is None:
            return
        kind = node.type
        if kind in ("identifier", "type_identifier"):
            self.use_path(path)
            self.imported(scope, node, [node])
        elif kind == "scoped_identifier":
            prefix = self.path_parts(node.child_by_field_name("path"))
            self.use_tree(node.child_by_field_name("name"), scope, path + prefix)
        elif kind == "use_as_clause":
            written = self.path_parts(node.child_by_field_name("path"))
            self.use_path(path + written[:-1])
            self.imported(scope, node.child_by_field_name("alias"), written[-1:])
        elif kind in ("scoped_use_list", "use_wildcard"):
            prefix = self.path_parts(node.child_by_field_name("path") or node.named_children[0])
            if kind == "use_wildcard":
                self.use_path(path + prefix)
                return
            self.use_tree(node.child_by_field_name("list"), scope, path + prefix)
        elif kind == "use_list":
            for child in node.named_children:
                self.use_tree(child, scope, path)

    def path_parts(self, node: Node | None) -> list[Node]:
        """The segments of `a::b::c`, keywords (`crate`, `self`) included."""
        if node is None:
            return []
        if node.type == "scoped_identifier":
            return [
                *self.path_parts(node.child_by_field_name("path")),
                *[n for n in [node.child_by_field_name("name")] if n is not None],
            ]
        return [node]

    def use_path(self, parts: list[Node]) -> None:
        """The module path of a `use`: namespaces, of this crate after `crate::` & co."""
        cross = {CROSS_FILE} if parts and parts[0].type in _CRATE_ROOTS else set()
        for part in parts:
            if part.type == "identifier":
                self.emit(part, "namespace", cross)

    def mod_item(self, node: Node, scope: Scope) -> None:
        self.declare(node.child_by_field_name("name"), scope, "namespace")
        body = node.child_by_field_name("body")
        if body is not None:
            self.block(body, scope)

    def function(self, node: Node, scope: Scope) -> None:
        """A function (a method in an `impl` or a `trait`): its name, then its scope."""
        name = node.child_by_field_name("name")
        modifiers = frozenset({"async"}) if has_keyword(node, "async") else frozenset()
        if scope.kind == "class":
            if name is not None:
                self.emit(name, "method", modifiers | {"declaration"})
        else:
            self.declare(name, scope, "function", modifiers)
        own = Scope("function", scope)
        for parameter in self.fields(node, "parameters"):
            if parameter.type == "parameter":
                self.pattern(parameter.child_by_field_name("pattern"), own, "parameter")
                self.visit_fields(parameter, own, "type")
            elif parameter.type != "self_parameter":
                self.visit(parameter, own)
        self.visit_fields(node, own, "type_parameters", "return_type")
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit_children(body, own)

    def fields(self, node: Node, name: str) -> list[Node]:
        child = node.child_by_field_name(name)
        return child.named_children if child is not None else []

    def type_item(self, node: Node, scope: Scope) -> None:
        """A struct, enum, union, trait or type alias: its name, then its body."""
        self.declare(node.child_by_field_name("name"), scope, _CLASSES[node.type])
        own = Scope("class", scope)
        self.visit_fields(node, own, "type_parameters", "bounds", "type")
        for child in self.fields(node, "body"):
            if child.type == "enum_variant":
                name = child.child_by_field_name("name")
                if name is not None:
                    self.emit(name, "property", {"declaration", "readonly"})
                self.visit_fields(child, own, "body", "value")
            else:
                self.visit(child, own)

    def field_declaration(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            self.emit(name, "property", {"declaration"})
        self.visit_fields(node, scope, "type")

    def impl_item(self, node: Node, scope: Scope) -> None:
        own = Scope("class", scope)
        self.visit_fields(node, own, "type_parameters", "trait", "type")
        for child in self.fields(node, "body"):
            self.visit(child, own)

    def constant(self, node: Node, scope: Scope) -> None:
        """`const` and `static` items: readonly, unless `static mut`."""
        readonly = frozenset() if has_keyword(node, "mutable_specifier") else READONLY
        self.visit_fields(node, scope, "type", "value")
        self.declare(node.child_by_field_name("name"), scope, "variable", readonly)

    # bindings -----------------------------------------------------------------------------

    def pattern(self, node: Node | None, scope: Scope, kind: str = "variable") -> None:
        """Names bound by a pattern; a capitalised name in one is a variant or a constant."""
        if node is None:
            return
        if node.type == "identifier":
            if text_of(node)[:1].isupper():
                self.use(node, scope)
            else:
                self.declare(node, scope, kind)
        elif node.type == "shorthand_field_identifier":
            self.declare(node, scope, kind)
        elif node.type == "field_pattern":
            name = node.child_by_field_name("name")
            pattern = node.child_by_field_name("pattern")
            if pattern is None:
                self.pattern(name, scope, kind)
                return
            if name is not None:
                self.emit(name, "property")
            self.pattern(pattern, scope, kind)
        elif node.type in ("tuple_struct_pattern", "struct_pattern"):
            kind_node = node.child_by_field_name("type")
            self.visit(kind_node, scope)
            for child in node.named_children:
                if child != kind_node:
                    self.pattern(child, scope, kind)
        elif node.type in ("scoped_identifier", "type_identifier", "range_pattern"):
            self.visit(node, scope)
        else:
            for child in node.named_children:
                self.pattern(child, scope, kind)

    def let(self, node: Node, scope: Scope) -> None:
        self.visit_fields(node, scope, "type", "value", "alternative")
        self.pattern(node.child_by_field_name("pattern"), scope)

    def let_condition(self, node: Node, scope: Scope) -> None:
        self.visit_fields(node, scope, "value")
        self.pattern(node.child_by_field_name("pattern"), scope)

    def for_expression(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        self.visit_fields(node, scope, "value")
        self.pattern(node.child_by_field_name("pattern"), own)
        self.visit_fields(node, own, "body")

    def match_arm(self, node: Node, scope: Scope) -> None:
        own = Scope("block", scope)
        pattern = node.child_by_field_name("pattern")
        if pattern is not None:
            guard = pattern.child_by_field_name("condition")
            for child in pattern.named_children:
                if child == guard:
                    self.visit(child, own)
                else:
                    self.pattern(child, own)
        self.visit_fields(node, own, "value")

    def closure(self, node: Node, scope: Scope) -> None:
        own = Scope("function", scope)
        for parameter in self.fields(node, "parameters"):
            if parameter.type == "parameter":
                self.pattern(parameter.child_by_field_name("pattern"), own, "parameter")
                self.visit_fields(parameter, own, "type")
            else:
                self.pattern(parameter, own, "parameter")
        self.visit_fields(node, own, "return_type", "body")

    # uses ---------------------------------------------------------------------------------

    def field_expression(self, node: Node, scope: Scope) -> None:
        value = node.child_by_field_name("value")
        self.visit(value, scope)
        name = node.child_by_field_name("field")
        if name is not None and name.type == "field_identifier":
            self.member(name, value, scope, node)

    def scoped(self, node: Node, scope: Scope) -> None:
        """`Type::item`, `module::name` (in a type: `module::Type`)."""
        path = node.child_by_field_name("path")
        if path is not None and path.type == "identifier":
            self.use(path, scope, "namespace" if text_of(path)[:1].islower() else "type")
        elif path is not None and path.type not in _CRATE_ROOTS:
            self.visit(path, scope)
        name = node.child_by_field_name("name")
        if node.type == "scoped_type_identifier":
            self.type_member(name, path, scope)
        elif name is not None:
            self.member(name, path, scope, node)

    def call(self, node: Node, scope: Scope) -> None:
        self.mark_called(node.child_by_field_name("function"))
        self.visit_children(node, scope)

    def field_initializer(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("field")
        if name is not None and name.type == "field_identifier":
            self.emit(name, "property")
        self.visit_fields(node, scope, "value")

    def macro(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("macro")
        if name is not None and name.type == "identifier":
            self.use(name, scope, "function")
        else:
            self.visit(name, scope)
        for child in node.named_children:
            if child.type == "token_tree":
                self.token_tree(child, scope)

    def token_tree(self, node: Node, scope: Scope) -> None:
        """A macro's arguments: names are uses, a name after `.` a field or a method."""
        previous = ""
        for child in node.children:
            if child.type == "token_tree":
                self.token_tree(child, scope)
            elif child.type == "identifier":
                if previous == ".":
                    self.emit(child, "property")
                else:
                    self.use(child, scope)
            previous = child.type

    handlers: ClassVar[Mapping[str, Handler]] = {
        "use_declaration": use_declaration,
        "mod_item": mod_item,
        "function_item": function,
        "function_signature_item": function,
        **dict.fromkeys(_CLASSES, type_item),
        "field_declaration": field_declaration,
        "impl_item": impl_item,
        "const_item": constant,
        "static_item": constant,
        "let_declaration": let,
        "let_condition": let_condition,
        "for_expression": for_expression,
        "match_arm": match_arm,
        "closure_expression": closure,
        "field_expression": field_expression,
        "scoped_identifier": scoped,
        "scoped_type_identifier": scoped,
        "call_expression": call,
        "field_initializer": field_initializer,
        "macro_invocation": macro,
        "block": Walker.block,
        "if_expression": Walker.block,
        "while_expression": Walker.block,
    }


def classify(root: Node, project: ProjectNames) -> list[Token]:
    """The tokens of a Rust tree, by position (byte columns)."""
    return RustWalker(project).run(root)
