"""The walk of the window's tree (`_Walker`): in one pass, the names referenced near the
cursor, each with its tier, and the local types the statements above it declare (per
language: `_DECLARATIONS`).

While typing, the statements above the cursor's stay the same, so what each declares and
references is memoised by its text (`_declared`).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator
from typing import Final

import xxhash
from tree_sitter import Node, Point

from cache.outline import named_child
from server.completion.cursor.attribute_types import type_chain
from server.completion.cursor.parsing import _bytes_of, _text
from server.completion.cursor.results import CALL, Tier
from server.completion.cursor.syntax import _NO_NAMES, _OPAQUE, _SYNTAX, _Syntax


class _Declared(threading.local):
    def __init__(self) -> None:
        self.by_statement: dict[tuple[int, str, int], tuple[tuple[str, tuple[str, ...]], ...]] = {}
        self.walked: dict[
            tuple[int, str, int, Point, int, bool],
            tuple[
                tuple[tuple[str, tuple[str, ...]], ...],
                tuple[tuple[int, int, int, tuple[str, ...]], ...],
            ],
        ] = {}


_declared = _Declared()
_DECLARED_MEMO_SIZE: Final = 4096


def _digest(statement: bytes) -> int:
    """A statement's text as a memo key: with the texts themselves the two memos held
    megabytes, and emptying a full one freed them all in the build that filled it (7 ms)."""
    return xxhash.xxh3_128_intdigest(statement)


class _Walker:
    """One pass over the window's tree: references near the cursor and local types."""

    def __init__(
        self,
        syntax: _Syntax,
        cursor_row: int,
        names_from: int,
        record: bool = True,
        source: bytes | None = None,
    ) -> None:
        self.syntax = syntax
        self.source = source
        """The bytes parsed, for a window's tree (`_bytes_of`); None for a document's."""
        self.record = record
        """Whether to collect references (else only the local types)."""
        self.cursor_row = cursor_row
        self.names_from = max(0, names_from)
        self.statement_row = cursor_row
        self.types_from = 0
        self.types: dict[str, tuple[str, ...]] = {}
        self._found: list[tuple[int, int, int, tuple[str, ...]]] = []

    def walk(self, root: Node) -> None:
        self._visit(root, spine=False)

    def found(self) -> list[tuple[int, int, int, tuple[str, ...]]]:
        """(tier, row, column, chain) of every name found: the statement's first, then the
        lines above; nearest first (a chain may come more than once)."""
        return sorted(self._found, key=lambda f: (-f[0], -f[1], f[2]))

    def _visit(self, node: Node, spine: bool) -> None:
        kind = node.type
        if kind in _NO_NAMES:  # before its points: a third of the nodes in a walk
            return
        syntax = self.syntax
        if kind in syntax.identifiers and (spine or not self.record):
            return  # a leaf that is no reference (a part of a chain): before its points too
        start = node.start_point
        start_row = start[0]
        if start_row > self.cursor_row:
            return
        end_row = node.end_point[0]
        if end_row < self.types_from:
            return
        recorded = self.record and not spine and start_row >= self.names_from
        if kind in syntax.identifiers:  # a leaf: nothing below it, nothing it declares
            if not recorded:
                return
            text = _bytes_of(node, self.source)
            if text:
                self._record((text.decode("utf-8", "replace"),), start)
            return
        if recorded and (kind in syntax.members or kind in syntax.calls):
            chain = self._chain(node)
            if chain:
                self._record(chain, start)
        declares = _DECLARATIONS.get(kind)
        if declares is not None:
            for name, value in declares(self, node):
                if value:
                    self.types[name] = value
        if (kind in _OPAQUE or declares is not None) and end_row < self.names_from:
            return  # above the names only declarations matter, and none nest in these
        member = syntax.members.get(kind)
        called = syntax.calls.get(kind)
        spine_fields: tuple[str, ...] = member or ((called,) if called else ())
        if not spine_fields:
            # a definition's own name is not a reference to it
            skip = node.child_by_field_name("name") if kind in syntax.scopes else None
            statements = kind in syntax.blocks
            children: Iterable[Node] = node.named_children
            if statements and start_row < self.types_from:
                children = self._from_row(node, self.types_from)
            for child in children:
                if skip is not None and child == skip:
                    continue
                if statements:
                    child_start = child.start_point[0]
                    if child_start > self.cursor_row:
                        break  # the statements below the cursor
                    if child_start >= self.types_from:
                        child_end = child.end_point[0]
                        if child_end < self.names_from:
                            self._declarations_of(child)
                            continue
                        if child_end < self.statement_row:
                            self._walked_above(child)
                            continue
                self._visit(child, spine=False)
            return
        spine_nodes = [node.child_by_field_name(f) for f in spine_fields]
        for child in node.named_children:
            self._visit(child, spine=child in spine_nodes)  # `in` compares nodes with ==

    @staticmethod
    def _from_row(block: Node, row: int) -> Iterator[Node]:
        """The named children of `block` from the first that reaches `row` on: in a whole
        file's tree the module's hundreds of statements above the window are skipped by
        bisection instead of visited."""
        children = block.children
        first = bisect.bisect_left(children, row, key=lambda child: child.end_point[0])
        return (child for child in children[first:] if child.is_named)

    def _declarations_of(self, statement: Node) -> None:
        """The local types a statement above the names declares, memoised by its text:
        while typing, the statements above the cursor's lines stay the same, and walking
        them again was a good part of each keystroke's analysis."""
        key = (id(self.syntax), statement.type, _digest(_bytes_of(statement, self.source)))
        memo = _declared.by_statement
        declared = memo.get(key)
        if declared is None:
            types, self.types = self.types, {}
            try:
                self._visit(statement, spine=False)
                declared = tuple(self.types.items())
            finally:
                self.types = types
            if len(memo) >= _DECLARED_MEMO_SIZE:
                memo.clear()
            memo[key] = declared
        self.types.update(declared)

    def _walked_above(self, statement: Node) -> None:
        """`_visit` of a statement between the first line whose names are read and the
        cursor's statement, memoised by its text and place: while typing, those lines
        stay the same and only the cursor's statement changes."""
        start = statement.start_point
        key = (
            id(self.syntax),
            statement.type,
            _digest(_bytes_of(statement, self.source)),
            start,
            self.names_from,
            self.record,
        )
        memo = _declared.walked
        walked = memo.get(key)
        if walked is None:
            types, self.types = self.types, {}
            found, self._found = self._found, []
            try:
                self._visit(statement, spine=False)
                walked = (tuple(self.types.items()), tuple(self._found))
            finally:
                self.types, self._found = types, found
            if len(memo) >= _DECLARED_MEMO_SIZE:
                memo.clear()
            memo[key] = walked
        self.types.update(walked[0])
        self._found.extend(walked[1])

    def _record(self, chain: tuple[str, ...], start: Point) -> None:
        """`chain`, found at `start` (row, column), as a reference."""
        while chain and chain[-1] == CALL:
            chain = chain[:-1]
        if not chain or (len(chain) == 1 and chain[0] in self.syntax.selves):
            return
        row = start[0]
        tier = Tier.STATEMENT if row >= self.statement_row else Tier.ABOVE
        self._found.append((tier, row, start[1], chain))

    def _chain(self, node: Node) -> tuple[str, ...] | None:
        """The dotted parts of a name, member access or call; None for anything else."""
        syntax = self.syntax
        kind = node.type
        if kind in syntax.identifiers:
            text = _bytes_of(node, self.source)
            return (text.decode("utf-8", "replace"),) if text else None
        member = syntax.members.get(kind)
        if member is not None:
            obj = node.child_by_field_name(member[0])
            name = node.child_by_field_name(member[1])
            if name is None:
                return None
            head = self._chain(obj) if obj is not None else ()
            if head is None:
                return None
            parts = (*head, self.text(name))
            return (*parts, CALL) if kind == "method_invocation" else parts
        called = syntax.calls.get(kind)
        if called is not None:
            function = node.child_by_field_name(called)
            head = self._chain(function) if function is not None else None
            if head is None:
                return None
            return head if kind in ("composite_literal", "struct_expression") else (*head, CALL)
        return None

    # local types ----------------------------------------------------------------------------

    def text(self, node: Node | None) -> str:
        """The text of `node` ("" for none), from this walk's source."""
        return _text(node, self.source)

    def type_chain(self, node: Node | None) -> tuple[str, ...]:
        """The main type named by a type node: `Optional[repo.Repo]` -> ("repo", "Repo")."""
        if node is None:
            return ()
        return type_chain(self.text(node))

    def value_type(self, node: Node | None) -> tuple[str, ...]:
        """The type a value expression evidently has: `Warehouse(...)`, `new Store()`,
        `&Item{}`, `Store::new()`, `make()` (the call chain, resolved later)."""
        while node is not None and node.type in (
            "unary_expression",
            "await",
            "await_expression",
            "parenthesized_expression",
            "reference_expression",
        ):
            node = named_child(node, node.named_child_count - 1)
        if node is None:
            return ()
        kind = node.type
        called = self.syntax.calls.get(kind)
        if called is None and kind != "method_invocation":
            return ()
        chain = self._chain(node) or ()
        if self.syntax is _SYNTAX["rust"] and len(chain) >= 3 and chain[-1] == CALL:
            return chain[:-2] if chain[-2] == "new" else chain
        return chain


def _python_declarations(walker: _Walker, node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    kind = node.type
    if kind == "assignment":
        left = node.child_by_field_name("left")
        if left is None or left.type not in ("identifier", "attribute"):
            return
        annotation = node.child_by_field_name("type")
        if annotation is not None:
            yield walker.text(left), walker.type_chain(annotation)
        else:
            yield walker.text(left), walker.value_type(node.child_by_field_name("right"))
    elif kind in ("typed_parameter", "typed_default_parameter"):
        name = node.child_by_field_name("name")
        if name is None:
            name = named_child(node, 0)
        if name is not None and name.type == "identifier":
            yield walker.text(name), walker.type_chain(node.child_by_field_name("type"))
    elif kind == "with_item":
        value = node.child_by_field_name("value")
        if value is not None and value.type == "as_pattern":
            alias = value.child_by_field_name("alias")
            target = named_child(value, 0)
            if alias is not None:
                yield walker.text(alias).strip(), walker.value_type(target)


def _ts_declarations(walker: _Walker, node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    kind = node.type
    if kind == "variable_declarator":
        name = node.child_by_field_name("name")
        if name is not None and name.type == "identifier":
            annotation = node.child_by_field_name("type")
            chain = walker.type_chain(annotation) if annotation is not None else ()
            yield walker.text(name), chain or walker.value_type(node.child_by_field_name("value"))
    elif kind in ("required_parameter", "optional_parameter"):
        pattern = node.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "identifier":
            chain = walker.type_chain(node.child_by_field_name("type"))
            yield walker.text(pattern), chain
            if any(c.type == "accessibility_modifier" for c in node.children):
                yield "this." + walker.text(pattern), chain
    elif kind in ("public_field_definition", "field_definition"):
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        annotation = node.child_by_field_name("type")
        chain = walker.type_chain(annotation) if annotation is not None else ()
        chain = chain or walker.value_type(node.child_by_field_name("value"))
        if name is not None:
            yield "this." + walker.text(name), chain
    elif kind == "assignment_expression":
        left = node.child_by_field_name("left")
        if left is not None and left.type in ("identifier", "member_expression"):
            yield walker.text(left), walker.value_type(node.child_by_field_name("right"))


def _go_declarations(walker: _Walker, node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    kind = node.type
    if kind in ("parameter_declaration", "var_spec"):
        chain = walker.type_chain(node.child_by_field_name("type"))
        if not chain and kind == "var_spec":
            values = node.child_by_field_name("value")
            chain = walker.value_type(named_child(values, 0) if values is not None else None)
        for name in node.children_by_field_name("name"):
            yield walker.text(name), chain
    elif kind == "short_var_declaration":
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is not None and right is not None:
            for name, value in zip(left.named_children, right.named_children, strict=False):
                if name.type == "identifier":
                    yield walker.text(name), walker.value_type(value)


def _java_declarations(walker: _Walker, node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    kind = node.type
    if kind in ("local_variable_declaration", "field_declaration"):
        declared = walker.type_chain(node.child_by_field_name("type"))
        prefix = "this." if kind == "field_declaration" else ""
        for declarator in node.children_by_field_name("declarator"):
            name = declarator.child_by_field_name("name")
            chain = declared or walker.value_type(declarator.child_by_field_name("value"))
            if name is not None:
                yield prefix + walker.text(name), chain
                if prefix:
                    yield walker.text(name), chain
    elif kind == "formal_parameter":
        name = node.child_by_field_name("name")
        if name is not None:
            yield walker.text(name), walker.type_chain(node.child_by_field_name("type"))


def _rust_declarations(walker: _Walker, node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    kind = node.type
    if kind in ("let_declaration", "parameter"):
        pattern = node.child_by_field_name("pattern")
        if pattern is None or pattern.type != "identifier":
            return
        annotation = node.child_by_field_name("type")
        chain = walker.type_chain(annotation) if annotation is not None else ()
        if not chain and kind == "let_declaration":
            chain = walker.value_type(node.child_by_field_name("value"))
        yield walker.text(pattern), chain


_DECLARATIONS: Final = {
    "assignment": _python_declarations,
    "typed_parameter": _python_declarations,
    "typed_default_parameter": _python_declarations,
    "with_item": _python_declarations,
    "variable_declarator": _ts_declarations,
    "required_parameter": _ts_declarations,
    "optional_parameter": _ts_declarations,
    "public_field_definition": _ts_declarations,
    "field_definition": _ts_declarations,
    "assignment_expression": _ts_declarations,
    "parameter_declaration": _go_declarations,
    "var_spec": _go_declarations,
    "short_var_declaration": _go_declarations,
    "local_variable_declaration": _java_declarations,
    "field_declaration": _java_declarations,
    "formal_parameter": _java_declarations,
    "let_declaration": _rust_declarations,
    "parameter": _rust_declarations,
}
