"""Semantic tokens for Python: what each name is, from tree-sitter and the project index.

Editors colour syntax already; what they cannot know alone is what a *name* stands for:
a parameter or a module-level constant, a method or a property, a builtin, or a name
that comes from another file of the project. This module answers that for every
identifier of a Python file, LSP-free.

`classify` walks one tree-sitter parse of the file with Python's scoping rules (module,
class, function, lambda and comprehension scopes; a name bound anywhere in a function is
local to all of it; class bodies are not seen from their methods; `global`/`nonlocal`),
and the imported names come from `ProjectNames`, which the caller resolves through the
project cache (`project.project_names`): a name that resolves to another project file gets
the custom `crossFile` modifier and its real kind (class, function, variable, module).
It keeps its own scopes rather than the shared `walker`'s, whose simpler rules the other
languages' modules use: Python's are followed exactly.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from tree_sitter import Node

from server.features.semantic_tokens.model import (
    CONSTANT,
    CROSS_FILE,
    Binding,
    ProjectNames,
    Token,
    guess_imported,
)

_BUILTIN_KINDS: Final[Mapping[str, str]] = {
    name: ("class" if isinstance(value, type) else "function" if callable(value) else "variable")
    for name, value in vars(builtins).items()
    if not name.startswith("_") or name in ("__name__", "__file__", "__doc__", "__debug__")
}
_COMPREHENSIONS: Final = frozenset(
    {"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"}
)
_TARGET_CONTAINERS: Final = frozenset(
    {"pattern_list", "tuple_pattern", "list_pattern", "parenthesized_expression", "tuple", "list",
     "list_splat_pattern", "expression_list", "as_pattern_target"}
)  # fmt: skip
_SKIPPED: Final = frozenset(
    {"comment", "escape_sequence", "string_content", "string_start", "string_end", "integer",
     "float", "true", "false", "none"}
)  # fmt: skip


@dataclass(slots=True)
class _Scope:
    kind: str
    """"module", "class", "function", "lambda" or "comprehension"."""
    parent: _Scope | None
    bindings: dict[str, Binding] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def bind(self, name: str, kind: str, modifiers: frozenset[str] = frozenset()) -> bool:
        """Bind `name` here (its first binding wins); whether this was the first."""
        if name in self.globals or name in self.nonlocals:
            return False
        if name in self.bindings:
            return False
        self.bindings[name] = Binding(kind, modifiers)
        return True

    def enclosing_class(self) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and scope.kind != "class":
            if scope.kind == "module":
                return None
            scope = scope.parent
        return scope


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


class _Classifier:
    """One walk over a Python tree: bindings per scope and the uses to resolve after."""

    def __init__(self, project: ProjectNames) -> None:
        self.project = project
        self.tokens: list[Token] = []
        self.uses: list[tuple[Node, _Scope, bool]] = []
        """Identifiers read: (node, scope, inside a type annotation)."""
        self.attributes: list[tuple[Node, Node, _Scope, bool]] = []
        """Attribute names: (name node, object node, scope, called)."""
        self.called: set[int] = set()
        self.module = _Scope("module", None)

    def emit(self, node: Node, kind: str, modifiers: Iterable[str] = ()) -> None:
        row, column = node.start_point
        self.tokens.append(
            Token(row, column, node.end_byte - node.start_byte, kind, frozenset(modifiers))
        )

    # bindings -----------------------------------------------------------------------------

    def declare(
        self, node: Node, scope: _Scope, kind: str, modifiers: frozenset[str] = frozenset()
    ) -> None:
        """A name bound at `node`: the first binding in its scope is its declaration."""
        name = _text(node)
        first = scope.bind(name, kind, modifiers)
        if not first and (name in scope.globals or name in scope.nonlocals):
            self.uses.append((node, scope, False))
            return
        known = scope.bindings[name]
        self.emit(node, known.kind, known.modifiers | ({"declaration"} if first else set()))

    def targets(self, node: Node, scope: _Scope, kind: str, modifiers: frozenset[str]) -> None:
        """Assignment targets: names are bound, attributes and subscripts are read."""
        if node.type == "identifier":
            name = _text(node)
            readonly = scope.kind in ("module", "class") and bool(CONSTANT.match(name))
            self.declare(node, scope, kind, modifiers | ({"readonly"} if readonly else set()))
        elif node.type in _TARGET_CONTAINERS:
            for child in node.named_children:
                self.targets(child, scope, kind, modifiers)
        else:
            self.visit(node, scope)

    def parameters(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children:
            kind = child.type
            if kind == "identifier":
                self.declare(child, scope, "parameter")
            elif kind in ("list_splat_pattern", "dictionary_splat_pattern"):
                self.parameters_of(child, scope)
            elif kind in ("typed_parameter", "default_parameter", "typed_default_parameter"):
                name = child.child_by_field_name("name")
                if name is None:  # typed_parameter: the first named child, maybe a splat
                    first = child.named_children[0] if child.named_children else None
                    if first is not None and first.type == "identifier":
                        name = first
                    elif first is not None:
                        self.parameters_of(first, scope)
                if name is not None and name.type == "identifier":
                    self.declare(name, scope, "parameter")
                for part in ("type", "value"):
                    value = child.child_by_field_name(part)
                    if value is not None:
                        self.visit(value, scope, in_type=part == "type")
            elif kind not in ("positional_separator", "keyword_separator"):
                self.visit(child, scope)

    def parameters_of(self, splat: Node, scope: _Scope) -> None:
        for name in splat.named_children:
            if name.type == "identifier":
                self.declare(name, scope, "parameter")

    # the walk ------------------------------------------------------------------------------

    def visit(self, node: Node, scope: _Scope, in_type: bool = False) -> None:
        kind = node.type
        if kind == "identifier":
            self.uses.append((node, scope, in_type))
            return
        if kind in _SKIPPED:
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node, scope)
            return
        if kind == "type":
            in_type = True
        for child in node.named_children:
            self.visit(child, scope, in_type)

    def function(self, node: Node, scope: _Scope) -> None:
        name = node.child_by_field_name("name")
        is_async = any(child.type == "async" for child in node.children[:2])
        own = _Scope("function", scope)
        for child in node.named_children:
            if child.type == "decorator":
                self.visit(child, scope)
        if name is not None:
            kind = "method" if scope.kind == "class" else "function"
            self.declare(name, scope, kind, frozenset({"async"} if is_async else ()))
        parameters = node.child_by_field_name("parameters")
        if parameters is not None:
            self.parameters(parameters, own)
        returns = node.child_by_field_name("return_type")
        if returns is not None:
            self.visit(returns, scope, in_type=True)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body, own)

    def class_(self, node: Node, scope: _Scope) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            self.declare(name, scope, "class")
        for part in ("type_parameters", "superclasses"):
            value = node.child_by_field_name(part)
            if value is not None:
                self.visit(value, scope)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body, _Scope("class", scope))

    def lambda_(self, node: Node, scope: _Scope) -> None:
        own = _Scope("lambda", scope)
        parameters = node.child_by_field_name("parameters")
        if parameters is not None:
            self.parameters(parameters, own)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body, own)

    def comprehension(self, node: Node, scope: _Scope) -> None:
        own = _Scope("comprehension", scope)
        clauses = [c for c in node.named_children if c.type == "for_in_clause"]
        for clause in clauses:  # bind the loop variables first: the body reads them
            left = clause.child_by_field_name("left")
            if left is not None:
                self.targets(left, own, "variable", frozenset())
        for child in node.named_children:
            if child.type == "for_in_clause":
                for right in child.children_by_field_name("right"):
                    self.visit(right, own)
            else:
                self.visit(child, own)

    def assignment(self, node: Node, scope: _Scope) -> None:
        left = node.child_by_field_name("left")
        annotation = node.child_by_field_name("type")
        right = node.child_by_field_name("right")
        if right is not None:
            self.visit(right, scope)
        if annotation is not None:
            self.visit(annotation, scope, in_type=True)
        if left is not None:
            final = annotation is not None and "Final" in _text(annotation)
            kind = "property" if scope.kind == "class" else "variable"
            self.targets(left, scope, kind, frozenset({"readonly"} if final else ()))

    def augmented(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children:
            self.visit(child, scope)

    def for_(self, node: Node, scope: _Scope) -> None:
        left = node.child_by_field_name("left")
        if left is not None:
            self.targets(left, scope, "variable", frozenset())
        for child in node.named_children:
            if child != left:
                self.visit(child, scope)

    def as_pattern(self, node: Node, scope: _Scope) -> None:
        alias = node.child_by_field_name("alias")
        for child in node.named_children:
            if alias is not None and child == alias:
                self.targets(alias, scope, "variable", frozenset())
            else:
                self.visit(child, scope)

    def named_expression(self, node: Node, scope: _Scope) -> None:
        target = scope
        while target.kind == "comprehension" and target.parent is not None:
            target = target.parent  # `:=` binds in the enclosing function (PEP 572)
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if value is not None:
            self.visit(value, scope)
        if name is not None:
            self.targets(name, target, "variable", frozenset())

    def global_(self, node: Node, scope: _Scope) -> None:
        names = scope.globals if node.type == "global_statement" else scope.nonlocals
        for child in node.named_children:
            if child.type == "identifier":
                names.add(_text(child))
                self.uses.append((child, scope, False))

    def attribute(self, node: Node, scope: _Scope) -> None:
        obj = node.child_by_field_name("object")
        name = node.child_by_field_name("attribute")
        if obj is not None:
            self.visit(obj, scope)
        if obj is not None and name is not None:
            self.attributes.append((name, obj, scope, node.id in self.called))

    def call(self, node: Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        if function is not None and function.type == "attribute":
            self.called.add(function.id)
        for child in node.named_children:
            self.visit(child, scope)

    def keyword_argument(self, node: Node, scope: _Scope) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None and name.type == "identifier":
            self.emit(name, "parameter")
        if value is not None:
            self.visit(value, scope)

    def string(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children:
            if child.type == "interpolation":
                for part in child.named_children:
                    self.visit(part, scope)

    def import_(self, node: Node, scope: _Scope) -> None:
        """`import a.b` binds `a`; `import a.b as c` binds `c`: modules, namespaces."""
        for imported in node.children_by_field_name("name"):
            dotted = _imported_name(imported)
            alias = imported.child_by_field_name("alias")
            parts = [c for c in dotted.named_children if c.type == "identifier"] if dotted else []
            local = _text(alias) if alias is not None else (_text(parts[0]) if parts else "")
            known = self.project.names.get(local)
            cross = {CROSS_FILE} if known is not None else set()
            for part in parts:
                self.emit(part, "namespace", cross)
            if alias is not None:
                scope.bind(local, "namespace", frozenset(cross))
                self.emit(alias, "namespace", cross | {"declaration"})
            elif local:
                scope.bind(local, "namespace", frozenset(cross))

    def import_from(self, node: Node, scope: _Scope) -> None:
        module = node.child_by_field_name("module_name")
        from_project = False
        for imported in node.children_by_field_name("name"):
            dotted = _imported_name(imported)
            alias = imported.child_by_field_name("alias")
            if dotted is None:
                continue
            name = _text(dotted)
            local = _text(alias) if alias is not None else name
            known = self.project.names.get(local)
            if known is not None:
                from_project = True
                kind = known.kind
                modifiers = {CROSS_FILE} | ({"readonly"} if known.readonly else set())
            else:
                kind, modifiers = guess_imported(name), set()
                if kind == "variable":
                    modifiers.add("readonly")
            scope.bind(local, kind, frozenset(modifiers))
            for part in _identifiers(dotted):
                self.emit(part, kind, modifiers)
            if alias is not None:
                self.emit(alias, kind, modifiers | {"declaration"})
        if module is not None:  # a project module when what it gives is from the project
            for part in _identifiers(module):
                self.emit(part, "namespace", (CROSS_FILE,) if from_project else ())

    # resolution ---------------------------------------------------------------------------

    def lookup(self, name: str, scope: _Scope) -> Binding | None:
        current: _Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals:
                return self.module.bindings.get(name)
            if (first or current.kind != "class") and name in current.bindings:
                return current.bindings[name]
            first = False
            current = current.parent
        return None

    def resolve(self) -> list[Token]:
        for node, scope, in_type in self.uses:
            name = _text(node)
            binding = self.lookup(name, scope)
            if binding is not None:
                self.emit(node, binding.kind, binding.modifiers)
            elif name in _BUILTIN_KINDS:
                self.emit(node, _BUILTIN_KINDS[name], ("defaultLibrary",))
            elif in_type:
                self.emit(node, "type")
        for name_node, obj, scope, called in self.attributes:
            self.emit(name_node, *self.member(_text(name_node), obj, scope, called))
        return self.tokens

    def member(self, name: str, obj: Node, scope: _Scope, called: bool) -> tuple[str, set[str]]:
        """What `obj.name` is: a project module's member, one of the class's own members
        for `self.`/`cls.`, else a method when called and a property when not."""
        if obj.type == "identifier":
            head = _text(obj)
            module = self.project.names.get(head)
            if module is not None and module.members is not None:
                member = module.members.get(name)
                if member is not None:
                    return member.kind, {CROSS_FILE} | ({"readonly"} if member.readonly else set())
            if head in ("self", "cls"):
                cls = scope.enclosing_class()
                own = cls.bindings.get(name) if cls is not None else None
                if own is not None and own.kind in ("method", "property"):
                    return own.kind, set(own.modifiers - {"declaration"})
        return ("method" if called else "property"), set()


def _imported_name(imported: Node) -> Node | None:
    """The dotted name of one imported item (`a.b` of `a.b as c`)."""
    if imported.type == "aliased_import":
        return imported.child_by_field_name("name")
    return imported


def _identifiers(node: Node) -> list[Node]:
    if node.type == "identifier":
        return [node]
    return [found for child in node.named_children for found in _identifiers(child)]


_HANDLERS: Final[Mapping[str, Callable[[_Classifier, Node, _Scope], None]]] = {
    "function_definition": _Classifier.function,
    "class_definition": _Classifier.class_,
    "lambda": _Classifier.lambda_,
    **dict.fromkeys(_COMPREHENSIONS, _Classifier.comprehension),
    "assignment": _Classifier.assignment,
    "augmented_assignment": _Classifier.augmented,
    "for_statement": _Classifier.for_,
    "as_pattern": _Classifier.as_pattern,
    "named_expression": _Classifier.named_expression,
    "global_statement": _Classifier.global_,
    "nonlocal_statement": _Classifier.global_,
    "attribute": _Classifier.attribute,
    "call": _Classifier.call,
    "keyword_argument": _Classifier.keyword_argument,
    "string": _Classifier.string,
    "import_statement": _Classifier.import_,
    "import_from_statement": _Classifier.import_from,
}


def classify(root: Node, project: ProjectNames | None = None) -> list[Token]:
    """The tokens of a Python tree, sorted by position (byte columns)."""
    classifier = _Classifier(project or ProjectNames())
    for child in root.named_children:
        classifier.visit(child, classifier.module)
    tokens = classifier.resolve()
    tokens.sort(key=lambda t: (t.line, t.column))
    following = itertools.chain(tokens[1:], [None])
    return [t for t, n in zip(tokens, following, strict=False) if not _same(t, n)]


def _same(a: Token, b: Token | None) -> bool:
    return b is not None and a.line == b.line and a.column == b.column
