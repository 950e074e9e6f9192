"""The walk that semantic tokens of TypeScript/JavaScript, Go, Rust and Java share: scopes,
declarations, uses resolved after the walk, and members.

Each language (the modules `typescript`, `go`, `rust` and `java` beside this one)
subclasses `Walker` with a table of handlers for the nodes that declare names or open scopes; every
other node is walked through. Scoping is kept simple on purpose: a name declared anywhere
in a scope is seen from all of that scope (uses are resolved once the whole tree is
walked, so hoisted functions and fields declared below their methods resolve), and the
first declaration of a name in a scope wins. That is exact for the usual code (no
shadowing within one block) and cheap: one pass over the tree, one lookup per name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from tree_sitter import Node

from server.features.semantic_tokens.model import (
    CONSTANT,
    CROSS_FILE,
    Binding,
    ProjectName,
    ProjectNames,
    Token,
    guess_imported,
    sorted_unique,
)

DECLARATION: Final = frozenset({"declaration"})
READONLY: Final = frozenset({"readonly"})


@dataclass(slots=True)
class Scope:
    kind: str
    """"module", "class", "function" or "block"."""
    parent: Scope | None
    bindings: dict[str, Binding] = field(default_factory=dict)

    def bind(self, name: str, kind: str, modifiers: frozenset[str]) -> bool:
        """Bind `name` here (the first binding wins); whether this was the first."""
        if name in self.bindings:
            return False
        self.bindings[name] = Binding(kind, modifiers)
        return True

    def function(self) -> Scope:
        """The innermost function (or module) scope: where `var` binds."""
        scope = self
        while scope.kind not in ("function", "module") and scope.parent is not None:
            scope = scope.parent
        return scope

    def enclosing_class(self) -> Scope | None:
        scope: Scope | None = self
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return scope


def text_of(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


Handler = Callable[[Any, Node, Scope], None]
"""A walker's method (of a subclass: hence `Any`) for one node type."""


class Walker:
    """One walk over a tree of one language; subclasses fill the class variables."""

    handlers: ClassVar[Mapping[str, Handler]] = {}
    """Node type -> what to do with it (declare names, open a scope)."""
    references: ClassVar[Mapping[str, str]] = {}
    """Leaf types that use a name -> the kind when the name resolves to nothing known
    ("": no token then)."""
    builtins: ClassVar[Mapping[str, str]] = {}
    """The language's predefined names -> their kind (sent with `defaultLibrary`)."""
    skipped: ClassVar[frozenset[str]] = frozenset()
    """Subtrees with no names worth a token (comments, strings)."""
    selves: ClassVar[frozenset[str]] = frozenset()
    """How the current object is written (`this`, `self`)."""
    class_names_visible: ClassVar[bool] = False
    """Whether a class's members are seen, unqualified, from its methods (Java)."""

    def __init__(self, project: ProjectNames) -> None:
        self.project = project
        self.tokens: list[Token] = []
        self.uses: list[tuple[Node, Scope, str]] = []
        self.members: list[tuple[Node, Node | None, Scope, str]] = []
        """Member names: (name node, object node, scope, kind when nothing better is known)."""
        self.called: set[int] = set()
        """Ids of nodes that are called (`f` of `f()`, `a.b` of `a.b()`)."""
        self.module = Scope("module", None)

    def run(self, root: Node) -> list[Token]:
        self.visit_children(root, self.module)
        self.resolve()
        return sorted_unique(self.tokens)

    # tokens and bindings ------------------------------------------------------------------

    def emit(self, node: Node, kind: str, modifiers: Iterable[str] = ()) -> None:
        if node.start_point[0] != node.end_point[0]:
            return  # names are one line; anything else is an error node's text
        row, column = node.start_point
        self.tokens.append(
            Token(row, column, node.end_byte - node.start_byte, kind, frozenset(modifiers))
        )

    def declare(
        self, node: Node | None, scope: Scope, kind: str, modifiers: frozenset[str] = frozenset()
    ) -> None:
        """`node` names something new in `scope`: the first binding is its declaration,
        a later one is a use of it."""
        if node is None:
            return
        name = text_of(node)
        first = scope.bind(name, kind, modifiers)
        known = scope.bindings[name]
        self.emit(node, known.kind, known.modifiers | DECLARATION if first else known.modifiers)

    def imported(
        self, scope: Scope, local: Node | None, written: Iterable[Node], namespace: bool = False
    ) -> None:
        """An imported name: `written` are the name's parts in the statement, `local` the
        name it is bound to (an alias, or the last part). The project says what it is and
        that it comes from another file; otherwise its spelling does."""
        if local is None:
            return
        parts = list(written)
        name = text_of(local)
        known = self.project.names.get(name)
        if known is not None:
            kind = known.kind
            modifiers = {CROSS_FILE} | ({"readonly"} if known.readonly else set())
        elif namespace:
            kind, modifiers = "namespace", set()
        else:
            kind, modifiers = guess_imported(name), set()
            if kind == "variable":
                modifiers.add("readonly")
        scope.bind(name, kind, frozenset(modifiers))
        for part in parts:
            if part != local:
                self.emit(part, kind, modifiers)
        self.emit(local, kind, modifiers if local in parts else modifiers | {"declaration"})

    def use(self, node: Node, scope: Scope, fallback: str = "") -> None:
        self.uses.append((node, scope, fallback))

    def member(self, name: Node | None, obj: Node | None, scope: Scope, call: Node) -> None:
        """`obj.name` (or `name` alone, `obj` None); `call` is the node a call would call."""
        if name is not None:
            kind = "method" if call.id in self.called else "property"
            self.members.append((name, obj, scope, kind))

    def type_member(self, name: Node | None, obj: Node | None, scope: Scope) -> None:
        """`module.Type` in a type: a project module's member, else a type."""
        if name is not None:
            self.members.append((name, obj, scope, "type"))

    def mark_called(self, node: Node | None) -> None:
        if node is not None:
            self.called.add(node.id)

    # the walk ------------------------------------------------------------------------------

    def visit(self, node: Node | None, scope: Scope) -> None:
        if node is None:
            return
        kind = node.type
        handler = self.handlers.get(kind)
        if handler is not None:
            handler(self, node, scope)
            return
        fallback = self.references.get(kind)
        if fallback is not None:
            self.use(node, scope, fallback)
            return
        if kind in self.skipped:
            return
        self.visit_children(node, scope)

    def visit_children(self, node: Node, scope: Scope, *, skip: Iterable[Node] = ()) -> None:
        skipped = {n.id for n in skip}
        for child in node.named_children:
            if child.id not in skipped:
                self.visit(child, scope)

    def visit_fields(self, node: Node, scope: Scope, *names: str) -> None:
        for name in names:
            for child in node.children_by_field_name(name):
                self.visit(child, scope)

    def block(self, node: Node, scope: Scope) -> None:
        """A block: its own scope for the names declared in it."""
        self.visit_children(node, Scope("block", scope))

    # resolution ---------------------------------------------------------------------------

    def lookup(self, name: str, scope: Scope) -> Binding | None:
        current: Scope | None = scope
        while current is not None:
            if current.kind != "class" or self.class_names_visible:
                found = current.bindings.get(name)
                if found is not None:
                    return found
            current = current.parent
        return None

    def resolve(self) -> None:
        for node, scope, fallback in self.uses:
            name = text_of(node)
            binding = self.lookup(name, scope)
            if binding is not None:
                self.emit(node, binding.kind, binding.modifiers)
            elif name in self.builtins:
                self.emit(node, self.builtins[name], ("defaultLibrary",))
            else:
                kind = self.unresolved(name, fallback)
                if kind:
                    self.emit(node, kind)
        for name_node, obj, scope, fallback in self.members:
            self.emit(name_node, *self.member_kind(text_of(name_node), obj, scope, fallback))

    def unresolved(self, name: str, fallback: str) -> str:
        """The kind of a name that is not declared in the file nor predefined ("": none)."""
        return fallback

    def member_kind(
        self, name: str, obj: Node | None, scope: Scope, fallback: str
    ) -> tuple[str, frozenset[str]]:
        """What `obj.name` is: a member of a project module or class (cross-file), one of
        the enclosing class's own members for `this.`/`self.` (or a bare name where the
        class's names are visible), a function or variable of a module, else `fallback`
        (a method when called, a property when not, a type in a type)."""
        if obj is None or obj.type in self.selves:
            own = self.own_member(name, scope)
            if own is not None:
                return own.kind, own.modifiers
            if obj is None:
                found = self.lookup(name, scope)
                if found is not None:
                    return found.kind, found.modifiers
        elif obj.type in self.references:
            head = text_of(obj)
            project = self.project.names.get(head)
            if project is not None and project.members is not None:
                member = project.members.get(name)
                if member is not None:
                    return member.kind, _project_modifiers(member)
            binding = self.lookup(head, scope)
            if binding is not None and binding.kind == "namespace":
                cross = frozenset({CROSS_FILE}) if CROSS_FILE in binding.modifiers else frozenset()
                kind = {"method": "function", "property": "variable"}.get(fallback, fallback)
                readonly = kind == "variable" and bool(CONSTANT.match(name))
                return kind, cross | READONLY if readonly else cross
        return fallback, frozenset()

    def own_member(self, name: str, scope: Scope) -> Binding | None:
        cls = scope.enclosing_class()
        own = cls.bindings.get(name) if cls is not None else None
        if own is not None and own.kind in ("method", "property"):
            return Binding(own.kind, own.modifiers - DECLARATION)
        return None


def _project_modifiers(name: ProjectName) -> frozenset[str]:
    return frozenset({CROSS_FILE, "readonly"} if name.readonly else {CROSS_FILE})


def has_keyword(node: Node, *keywords: str) -> bool:
    """Whether one of `node`'s direct children (or its modifiers' children) is one of
    these keywords (`async`, `const`, `final`, `readonly`)."""
    for child in node.children:
        if child.type in keywords:
            return True
        if child.type in ("modifiers", "function_modifiers") and has_keyword(child, *keywords):
            return True
    return False
