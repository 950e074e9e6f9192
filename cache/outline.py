"""Outlines of source files: the definitions a prompt shows and the imports the graph follows.

Every grammar that tree-sitter-language-pack bundles can be outlined, offline. Python,
TypeScript / TSX / JavaScript, Go, Java and Rust have extractors that know their scoping
(methods qualified by their class, imports as written); every other grammar gets a generic
outline from the nodes that carry a `name` field. This runs on thousands of files at
startup and on every edit, so the extractors walk statements, never expressions (imports
buried in expressions, like `require("m")`, are found from the bytes and looked up in the
tree), and decode only the text they keep.

Where the time goes (CPython's stdlib plus 32 packages): ~80% in tree-sitter's own parse
(~8 MB/s for Python), ~15% in these walks. Hence Python's imports come from
`cache.python_imports` without a parse, and definitions are outlined on demand.

No tree-sitter queries: their cursor is quadratic on some wide ERROR nodes, and with
py-tree-sitter 0.26.1 a query `progress_callback` (the way to bound one) crashes the process;
and since the parse, not the walk, is the cost, running the walk in C would save little.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, cast, get_args

from tree_sitter import Language, Node, Parser, Point, Tree
from tree_sitter_language_pack import SupportedLanguage, get_language

from cache.model import Definition, ImportRef, Outline

_log = logging.getLogger(__name__)

MAX_SIGNATURE_CHARS: Final = 300
"""A signature longer than this is cut (with "..."): prompts want the shape, not the body."""
MAX_DOC_LINES: Final = 20
"""The start of a long docstring says what a definition is for; the rest is detail."""
GENERIC_MAX_DEPTH: Final = 6
"""How deep the generic outline looks: enough for namespace > class > body > method (C#)."""
PARSE_BUDGET_S: Final = 2.0
"""A parse that takes longer is given up. Some grammars' error recovery is pathological on
garbage (bicep: ~30 s for 64 KB of random bytes); the file is then kept without outline."""
_MAX_NESTING: Final = 64
"""Classes in classes deeper than this are skipped rather than risk the recursion limit."""

_PACK_LANGUAGES: Final = frozenset(get_args(SupportedLanguage))
_UNSAFE_GRAMMARS: Final = frozenset({"cobol"})
"""Pack grammars never used: cobol's parser loops forever, holding the GIL and growing
memory, on free-format text as plain as "end" (0.13.0)."""
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_CONTROL_BYTES: Final = bytes([*range(0x01, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
"""Control characters that text does not use (tab, newlines, form feed and ESC it does)."""

_languages: dict[str, Language | None] = {}
_languages_lock = threading.Lock()
_generic_kinds: dict[str, frozenset[int]] = {}


class _ThreadParsers(threading.local):
    """Parsers per thread: a tree-sitter Parser must not be used by two threads at once."""

    def __init__(self) -> None:
        self.by_language: dict[str, Parser] = {}


_parsers = _ThreadParsers()


def supported(language: str) -> bool:
    """Whether `parse_outline` can outline files of `language` (a language pack name).

    Every pack language but the few in _UNSAFE_GRAMMARS.
    """
    return _language(language) is not None


def runs_grammar(language: str) -> bool:
    """Whether outlining a file of `language` parses it. Not for grammars without a kind of
    node that could be a named definition (html, json, po, toml, ...): their outline is
    always empty, and parsing them cost a tenth of a cold index for nothing."""
    return language in _EXTRACTORS or bool(_generic_kind_ids(language))


def parse_outline(source: bytes, language: str, tree: Tree | None = None) -> Outline | None:
    """The definitions and imports of one file; None if there is no usable grammar for it.

    Never raises for a supported language: syntax errors are normal in files being edited,
    and tree-sitter outlines whatever parses around them. A file with NUL bytes, or one
    whose parse runs past PARSE_BUDGET_S, or that looks binary gets an empty outline.
    `tree`, where one is kept, is a parse of exactly `source` in `language` (an open
    document's, re-parsed incrementally as it is edited): it spares a whole parse.
    """
    grammar = _language(language)
    if grammar is None:
        return None
    if not runs_grammar(language):
        return Outline(language=language)
    bom = source.startswith(_UTF8_BOM)
    data = source[len(_UTF8_BOM) :] if bom else source
    if _looks_binary(data):
        return Outline(language=language)
    if tree is None or bom:  # a tree of the bytes with a BOM has its offsets shifted
        parser = _parsers.by_language.get(language)
        if parser is None:
            parser = _parsers.by_language[language] = Parser(grammar)
        tree = _parse(parser, data)
    if tree is None:
        _log.info(
            "gave up parsing a %s file of %d bytes after %.1f s",
            language,
            len(data),
            PARSE_BUDGET_S,
        )
        return Outline(language=language)
    root = tree.root_node
    outliner = _Outliner(data, language)
    extract = _EXTRACTORS.get(language, _outline_generic)
    try:
        extract(outliner, root)
    except Exception:
        # A bug here must not cost the whole index; say so, and keep the file without outline.
        _log.warning("could not outline a %s file", language, exc_info=True)
        return Outline(language=language)
    imports = sorted(outliner.imports, key=lambda ref: ref.line)
    return Outline(language, tuple(outliner.definitions), tuple(imports))


def named_child(node: Node, index: int) -> Node | None:
    """The node's index-th named child, or None: tree-sitter 0.26 raises IndexError past
    the end, and half-typed code is full of empty blocks and argument lists."""
    return node.named_child(index) if 0 <= index < node.named_child_count else None


def _looks_binary(data: bytes) -> bool:
    """Whether `data` is no source text (a video named .ts, a UTF-16 file): then not parsed.

    External scanners take NUL for the end of input, and some (d) then read past it and
    crash the process; v's scanner crashes now and then on random bytes without NULs.
    """
    if b"\x00" in data:
        return True
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    return controls * 100 > len(data)


def _language(name: str) -> Language | None:
    """The pack's grammar for `name`, loaded once; None when the pack has none."""
    try:
        return _languages[name]
    except KeyError:
        pass
    with _languages_lock:
        if name not in _languages:
            grammar = None
            if name in _PACK_LANGUAGES and name not in _UNSAFE_GRAMMARS:
                try:
                    grammar = get_language(cast("SupportedLanguage", name))
                except (LookupError, OSError, ValueError):
                    _log.warning("tree-sitter grammar for %s does not load", name, exc_info=True)
            _languages[name] = grammar
        return _languages[name]


def _parse(parser: Parser, data: bytes) -> Tree | None:
    """The syntax tree of `data`, or None when parsing runs past PARSE_BUDGET_S."""
    deadline = time.monotonic() + PARSE_BUDGET_S

    def read(offset: int, _point: Point) -> bytes:
        return data[offset:] if offset else data

    def over_budget(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        return parser.parse(read, encoding="utf8", progress_callback=over_budget)
    except ValueError:  # cancelled by over_budget
        parser.reset()
        return None


# --- text helpers -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _CommentStyle:
    """Which comments directly above a definition document it, in one language."""

    line_prefixes: tuple[bytes, ...]
    """Longest first, so "///" is stripped whole before "//" is tried."""
    block_openers: tuple[bytes, ...] = ()
    """Block comments ("/**") that count as docs; () for none."""
    excluded_prefixes: tuple[bytes, ...] = ()
    """Lines that look like comments but are not ("#!" shebangs)."""


_HASH_COMMENTS: Final = _CommentStyle((b"#",), excluded_prefixes=(b"#!",))
_JSDOC_COMMENTS: Final = _CommentStyle((b"//",), block_openers=(b"/**",))
_GO_COMMENTS: Final = _CommentStyle((b"//",))
_RUST_COMMENTS: Final = _CommentStyle(
    (b"///",), block_openers=(b"/**",), excluded_prefixes=(b"////",)
)
_GENERIC_COMMENTS: Final = _CommentStyle(
    (b"///", b"//", b"--", b";;", b";", b"##", b"# ", b"#"),
    block_openers=(b"/*",),
    excluded_prefixes=(b"#!", b"#include", b"#define", b"#if", b"#endif", b"#else", b"#pragma"),
)


def _one_line(text: str) -> str:
    """A header on one line: whitespace runs collapsed, cut at MAX_SIGNATURE_CHARS."""
    if "\n" in text or "  " in text or "\t" in text or "\r" in text:
        text = " ".join(text.split())
        if "( " in text or " )" in text or "[ " in text or " ]" in text:
            text = text.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]")
    else:
        text = text.strip()
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[: MAX_SIGNATURE_CHARS - 3].rstrip() + "..."
    return text


def _no_space(text: str) -> str:
    """A dotted or `::` path as written, without the whitespace a line break put in it."""
    return "".join(text.split())


def _clip_doc(text: str) -> str | None:
    """The first MAX_DOC_LINES lines of a doc, or None when nothing is left."""
    lines = text.strip().split("\n", MAX_DOC_LINES)[:MAX_DOC_LINES]
    doc = "\n".join(line.rstrip() for line in lines).strip()
    return doc or None


def _end_row(node: Node) -> int:
    """The last line a node covers (a node ending at column 0 does not cover that line)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


_SIGNATURE_SKIP: Final = frozenset(
    {
        "decorator",
        "comment",
        "line_comment",
        "block_comment",
        "annotation",
        "marker_annotation",
        "attribute_item",
    }
)


def _signature_start(node: Node) -> int:
    """Where a definition's header starts once decorators and annotations are left out."""
    for child in node.children:
        kind = child.type
        if kind in _SIGNATURE_SKIP:
            continue
        if kind == "modifiers":
            for modifier in child.children:
                if modifier.type not in _SIGNATURE_SKIP:
                    return modifier.start_byte
            continue
        return child.start_byte
    return node.start_byte


class _Outliner:
    """One file's bytes and the definitions and imports found in it so far."""

    __slots__ = ("_lines", "data", "definitions", "imports", "language")

    def __init__(self, data: bytes, language: str) -> None:
        self.data = data
        self.language = language
        self.definitions: list[Definition] = []
        self.imports: list[ImportRef] = []
        self._lines: list[bytes] | None = None

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def header(self, start: int, end: int, trailing: bytes = b"{;") -> str:
        """The text between two byte offsets as a one-line signature, without `trailing`."""
        text = self.data[start:end].rstrip().rstrip(trailing).decode("utf-8", "replace")
        return _one_line(text)

    def first_line(self, start: int, end: int, trailing: bytes = b";") -> str:
        """The first line of a span as a signature (variables, aliases, generic definitions).

        A variable keeps the `{` that opens its value (`CONFIG = {`); a header does not.
        """
        newline = self.data.find(b"\n", start, end)
        return self.header(start, end if newline < 0 else newline, trailing)

    def string_value(self, node: Node) -> str:
        """A string literal's contents as written, without its quotes."""
        text = self.text(node)
        if len(text) >= 2 and text[0] in "\"'`" and text[-1] == text[0]:
            return text[1:-1]
        return text

    def comment_above(self, first: Node, style: _CommentStyle) -> str | None:
        """The comment block on the lines just above a definition's first node, as a doc.

        Only for a definition that starts its line: in `trait T { fn a(); }` the comment
        above documents T, not `a`.
        """
        line_start = self.data.rfind(b"\n", 0, first.start_byte) + 1
        if self.data[line_start : first.start_byte].strip():
            return None
        if self._lines is None:
            self._lines = self.data.split(b"\n")
        lines = self._lines
        last = first.start_point[0] - 1
        if last < 0 or last >= len(lines):
            return None
        line = lines[last].strip()
        if style.block_openers and line.endswith(b"*/"):
            return self._block_comment(lines, last, style)
        kept: list[str] = []
        while last >= 0 and len(kept) < 200:
            line = lines[last].strip()
            prefix = next((p for p in style.line_prefixes if line.startswith(p)), None)
            if prefix is None or line.startswith(style.excluded_prefixes):
                break
            text = line[len(prefix) :]
            kept.append(text.removeprefix(b" ").decode("utf-8", "replace").rstrip())
            last -= 1
        if not kept:
            return None
        kept.reverse()
        return _clip_doc("\n".join(kept))

    @staticmethod
    def _block_comment(lines: list[bytes], last: int, style: _CommentStyle) -> str | None:
        first = last
        while first >= 0 and last - first < 200:
            opening = lines[first].strip()
            if b"/*" in opening:
                break
            first -= 1
        else:
            return None
        opener = next((o for o in style.block_openers if opening.startswith(o)), None)
        if opener is None:
            return None
        texts: list[str] = []
        for index in range(first, last + 1):
            line = lines[index].strip()
            if index == first:
                line = line[len(opener) :].lstrip(b"*!")
            if index == last:
                line = line[: line.rfind(b"*/")].rstrip(b"*")
            line = line.strip()
            if line.startswith(b"*"):
                line = line[1:].removeprefix(b" ")
            texts.append(line.decode("utf-8", "replace").rstrip())
        return _clip_doc("\n".join(texts))

    def define(
        self,
        kind: str,
        name: str,
        qualified_name: str,
        signature: str,
        doc: str | None,
        first: Node,
        node: Node,
    ) -> None:
        """Record a definition that spans from `first` (its decorator, say) to the end of `node`."""
        start_row = first.start_point[0]
        self.definitions.append(
            Definition(kind, name, qualified_name, signature, doc, start_row, _end_row(node))
        )


# --- Python -------------------------------------------------------------------------------

_PYTHON_IMPORTS: Final = frozenset(
    {"import_statement", "import_from_statement", "future_import_statement"}
)
_PYTHON_TRANSPARENT: Final = frozenset({"if_statement", "try_statement", "with_statement"})
"""Compound statements whose definitions still belong to the module or class around them."""
_PYTHON_COMPOUND: Final = _PYTHON_TRANSPARENT | {
    "for_statement",
    "while_statement",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "match_statement",
    "case_clause",
}


def _outline_python(outliner: _Outliner, root: Node) -> None:
    _python_block(outliner, root, "", in_class=False, depth=0)


def _python_block(
    outliner: _Outliner, block: Node, prefix: str, in_class: bool, depth: int
) -> None:
    """Definitions among a module's or class's statements, and in its if/try/with blocks."""
    if depth > _MAX_NESTING:
        return
    for child in block.children:
        kind = child.type
        if kind in ("function_definition", "class_definition"):
            _python_definition(outliner, child, child, prefix, in_class, depth)
        elif kind == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is not None:
                _python_definition(outliner, inner, child, prefix, in_class, depth)
        elif kind == "expression_statement":
            statement = named_child(child, 0)
            if statement is not None and statement.type == "assignment":
                _python_assignment(outliner, statement, child, prefix)
        elif kind == "assignment":
            _python_assignment(outliner, child, child, prefix)
        elif kind == "type_alias_statement":
            _python_type_alias(outliner, child, prefix)
        elif kind in _PYTHON_IMPORTS:
            _python_import(outliner, child)
        elif kind in _PYTHON_TRANSPARENT and not _is_main_guard(outliner, child):
            for inner_block in _python_blocks(child):
                _python_block(outliner, inner_block, prefix, in_class, depth + 1)
        elif kind in _PYTHON_COMPOUND:
            _python_nested_imports(outliner, child, depth + 1)
        elif kind == "ERROR":
            _python_block(outliner, child, prefix, in_class, depth + 1)


def _is_main_guard(outliner: _Outliner, statement: Node) -> bool:
    """`if __name__ == "__main__":`, whose variables are a script's locals, not the module's."""
    condition = statement.child_by_field_name("condition")
    if statement.type != "if_statement" or condition is None:
        return False
    return outliner.data.find(b"__main__", condition.start_byte, condition.end_byte) >= 0


def _python_nested_imports(outliner: _Outliner, statement: Node, depth: int) -> None:
    """Imports inside a function body (or a `match`): walked only where the bytes hold "import".

    A statement walk, not a query over every node: the query cost as much as the rest of
    the outline together.
    """
    if depth > _MAX_NESTING:
        return
    if outliner.data.find(b"import", statement.start_byte, statement.end_byte) < 0:
        return
    if statement.type == "decorated_definition":
        inner = statement.child_by_field_name("definition")
        if inner is not None:
            _python_nested_imports(outliner, inner, depth + 1)
        return
    for block in _python_blocks(statement):
        for child in block.children:
            kind = child.type
            if kind in _PYTHON_IMPORTS:
                _python_import(outliner, child)
            elif kind in _PYTHON_COMPOUND or kind == "ERROR":
                _python_nested_imports(outliner, child, depth + 1)


def _python_blocks(statement: Node) -> Iterator[Node]:
    """The blocks of a compound statement, its elif/else/except/finally clauses included."""
    if statement.type == "ERROR":
        yield statement
        return
    for child in statement.children:
        if child.type == "block":
            yield child
        elif child.type.endswith("_clause"):
            for grandchild in child.children:
                if grandchild.type == "block":
                    yield grandchild


def _python_definition(
    outliner: _Outliner, node: Node, outer: Node, prefix: str, in_class: bool, depth: int
) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = outliner.text(name_node)
    body = node.child_by_field_name("body")
    is_class = node.type == "class_definition"
    header_end = node.end_byte if body is None else body.start_byte
    for child in node.children:
        if child.start_byte >= header_end:
            break
        if child.type == ":":
            header_end = child.end_byte
            break
    doc = _python_docstring(outliner, body) if body is not None else None
    if doc is None:
        doc = outliner.comment_above(outer, _HASH_COMMENTS)
    qualified = prefix + name
    kind = "class" if is_class else "method" if in_class else "function"
    signature = _one_line(outliner.data[node.start_byte : header_end].decode("utf-8", "replace"))
    outliner.define(kind, name, qualified, signature, doc, outer, node)
    if is_class and body is not None:
        _python_block(outliner, body, qualified + ".", in_class=True, depth=depth + 1)
    elif body is not None:
        _python_nested_imports(outliner, node, depth + 1)


def _python_docstring(outliner: _Outliner, body: Node) -> str | None:
    """The first statement of a body when it is a string: Python's own idea of a docstring."""
    index = 0
    statement = named_child(body, 0)
    while statement is not None and statement.type == "comment":
        index += 1
        statement = named_child(body, index)
    if statement is not None and statement.type == "expression_statement":
        statement = named_child(statement, 0)
    if statement is None or statement.type != "string":
        return None
    raw = outliner.text(statement)
    start = 0
    while start < len(raw) and start < 3 and raw[start] not in "\"'":
        start += 1
    quote = raw[start : start + 3]
    if quote not in ('"""', "'''"):
        quote = raw[start : start + 1]
    text = raw[start + len(quote) :]
    if quote and text.endswith(quote):
        text = text[: -len(quote)]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _clip_doc(inspect.cleandoc(text))


def _python_assignment(outliner: _Outliner, assignment: Node, outer: Node, prefix: str) -> None:
    """`NAME = ...` or `NAME: T = ...`; tuple, attribute and subscript targets are skipped."""
    target = assignment.child_by_field_name("left")
    if target is None or target.type != "identifier":
        return
    name = outliner.text(target)
    outliner.define(
        "variable",
        name,
        prefix + name,
        outliner.first_line(outer.start_byte, outer.end_byte),
        outliner.comment_above(outer, _HASH_COMMENTS),
        outer,
        outer,
    )


def _python_type_alias(outliner: _Outliner, statement: Node, prefix: str) -> None:
    """`type Alias[T] = ...` (3.12)."""
    target = statement.child_by_field_name("left")
    if target is None:
        return
    name = outliner.text(target).split("[", 1)[0].strip()
    outliner.define(
        "type",
        name,
        prefix + name,
        outliner.first_line(statement.start_byte, statement.end_byte),
        outliner.comment_above(statement, _HASH_COMMENTS),
        statement,
        statement,
    )


def _python_import(outliner: _Outliner, statement: Node) -> None:
    line = statement.start_point[0]
    if statement.type == "import_statement":
        for imported in statement.children_by_field_name("name"):
            module = _python_imported_name(outliner, imported)
            if module:
                outliner.imports.append(ImportRef(module, (), line))
        return
    if statement.type == "future_import_statement":
        module = "__future__"
    else:
        module_node = statement.child_by_field_name("module_name")
        if module_node is None:
            return
        module = _no_space(outliner.text(module_node))
    names: list[str] = []
    aliases: list[tuple[str, str]] = []
    for imported in statement.children_by_field_name("name"):
        name = _python_imported_name(outliner, imported)
        if name:
            names.append(name)
            alias = imported.child_by_field_name("alias")
            if imported.type == "aliased_import" and alias is not None:
                aliases.append((_no_space(outliner.text(alias)), name))
    if any(child.type == "wildcard_import" for child in statement.children):
        names = ["*"]
    outliner.imports.append(ImportRef(module, tuple(names), line, tuple(aliases)))


def _python_imported_name(outliner: _Outliner, imported: Node) -> str | None:
    """The name as the module defines it: `b` for `b as c`."""
    if not imported.is_named:
        return None
    if imported.type == "aliased_import":
        original = imported.child_by_field_name("name")
        return _no_space(outliner.text(original)) if original is not None else None
    return _no_space(outliner.text(imported))


# --- TypeScript, TSX, JavaScript ----------------------------------------------------------

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


def _outline_typescript(outliner: _Outliner, root: Node) -> None:
    _ts_statements(outliner, root, "", depth=0)
    for keyword in (b"require", b"import"):
        _ts_calls(outliner, root, keyword)


def _ts_calls(outliner: _Outliner, root: Node, keyword: bytes) -> None:
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


def _ts_call(outliner: _Outliner, call: Node, position: int) -> None:
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


def _ts_statements(outliner: _Outliner, parent: Node, prefix: str, depth: int) -> None:
    if depth > _MAX_NESTING:
        return
    for child in parent.children:
        _ts_statement(outliner, child, child, prefix, exported=False, depth=depth)


def _ts_statement(
    outliner: _Outliner, node: Node, outer: Node, prefix: str, exported: bool, depth: int
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
    outliner: _Outliner, kind: str, node: Node, outer: Node, prefix: str, first: Node | None = None
) -> str | None:
    """Record a named declaration whose header runs to its body; its qualified name."""
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    name = (
        outliner.string_value(name_node) if name_node.type == "string" else outliner.text(name_node)
    )
    body = node.child_by_field_name("body")
    start = _signature_start(outer)
    if kind == "type":
        signature = outliner.first_line(start, node.end_byte)
    else:
        signature = outliner.header(start, node.end_byte if body is None else body.start_byte)
    first = outer if first is None else first
    qualified = prefix + name
    doc = outliner.comment_above(first, _JSDOC_COMMENTS)
    outliner.define(kind, name, qualified, signature, doc, first, node)
    return qualified


def _ts_class_body(outliner: _Outliner, body: Node, prefix: str) -> None:
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
                outliner.first_line(_signature_start(member), member.end_byte),
                outliner.comment_above(first, _JSDOC_COMMENTS),
                first,
                member,
            )


def _ts_variables(
    outliner: _Outliner, declaration: Node, outer: Node, prefix: str, exported: bool
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
            signature = outliner.header(_signature_start(outer), end)
        elif exported:
            kind = "variable"
            signature = outliner.first_line(_signature_start(outer), outer.end_byte)
        else:
            continue
        name = outliner.text(name_node)
        doc = outliner.comment_above(outer, _JSDOC_COMMENTS)
        outliner.define(kind, name, prefix + name, signature, doc, outer, outer)


def _ts_import(outliner: _Outliner, statement: Node) -> None:
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


def _ts_reexport(outliner: _Outliner, statement: Node, source: Node) -> None:
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


# --- Go -----------------------------------------------------------------------------------


def _outline_go(outliner: _Outliner, root: Node, depth: int = 0) -> None:
    if depth > _MAX_NESTING:
        return
    for child in root.children:
        kind = child.type
        if kind == "package_clause":
            name_node = named_child(child, 0)
            if name_node is not None:
                _define_package(outliner, child, outliner.text(name_node), _GO_COMMENTS)
        elif kind == "import_declaration":
            _go_imports(outliner, child)
        elif kind in ("function_declaration", "method_declaration"):
            _go_function(outliner, child)
        elif kind == "type_declaration":
            _go_types(outliner, child)
        elif kind in ("const_declaration", "var_declaration"):
            _go_values(outliner, child)
        elif kind == "ERROR":
            _outline_go(outliner, child, depth + 1)


def _go_function(outliner: _Outliner, node: Node) -> None:
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


def _go_receiver_type(outliner: _Outliner, receiver: Node) -> str | None:
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


def _go_types(outliner: _Outliner, declaration: Node) -> None:
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


def _go_values(outliner: _Outliner, declaration: Node) -> None:
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
    outliner: _Outliner,
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
    outliner.define(kind, name, name, _one_line(signature), doc, node, node)


def _go_imports(outliner: _Outliner, declaration: Node) -> None:
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


def _define_package(outliner: _Outliner, node: Node, name: str, style: _CommentStyle) -> None:
    """The file's package as a definition: the resolver maps it to directories."""
    name = _no_space(name)
    signature = outliner.first_line(node.start_byte, node.end_byte)
    doc = outliner.comment_above(node, style)
    outliner.define("package", name, name, signature, doc, node, node)


# --- Java ---------------------------------------------------------------------------------

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


def _outline_java(outliner: _Outliner, root: Node) -> None:
    _java_members(outliner, root, "", depth=0)


def _java_members(outliner: _Outliner, parent: Node, prefix: str, depth: int) -> None:
    if depth > _MAX_NESTING:
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
                _define_package(outliner, child, outliner.text(path), _JSDOC_COMMENTS)


def _java_define(
    outliner: _Outliner, node: Node, body: Node | None, prefix: str, kind: str
) -> str | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    name = outliner.text(name_node)
    end = node.end_byte if body is None else body.start_byte
    signature = outliner.header(_signature_start(node), end)
    doc = outliner.comment_above(node, _JSDOC_COMMENTS)
    qualified = prefix + name
    kind_name = _JAVA_TYPES.get(kind) or _JAVA_METHODS[kind]
    outliner.define(kind_name, name, qualified, signature, doc, node, node)
    return qualified


def _java_fields(outliner: _Outliner, field: Node, prefix: str) -> None:
    signature = outliner.first_line(_signature_start(field), field.end_byte)
    doc = outliner.comment_above(field, _JSDOC_COMMENTS)
    for declarator in field.children_by_field_name("declarator"):
        name_node = declarator.child_by_field_name("name") if declarator.is_named else None
        if name_node is not None:
            name = outliner.text(name_node)
            outliner.define("variable", name, prefix + name, signature, doc, field, field)


def _java_import(outliner: _Outliner, declaration: Node) -> None:
    """`import a.b.C;` module "a.b.C"; `a.b.*` module "a.b" names ("*",); statics name members."""
    path_node = next((c for c in declaration.named_children if "identifier" in c.type), None)
    if path_node is None:
        return
    path = _no_space(outliner.text(path_node))
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


# --- Rust ---------------------------------------------------------------------------------

_RUST_ITEMS: Final = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "struct",
    "enum_item": "enum",
    "union_item": "union",
    "trait_item": "trait",
    "type_item": "type",
    "const_item": "constant",
    "static_item": "variable",
    "mod_item": "module",
    "macro_definition": "macro",
}
_RUST_BRACED_BODIES: Final = frozenset(
    {"block", "field_declaration_list", "declaration_list", "enum_variant_list"}
)


def _outline_rust(outliner: _Outliner, root: Node) -> None:
    _rust_items(outliner, root, "", in_impl=False, depth=0)


def _rust_items(outliner: _Outliner, parent: Node, prefix: str, in_impl: bool, depth: int) -> None:
    """Items of a file, module, trait or impl; `#[...]` attributes above count as their start."""
    if depth > _MAX_NESTING:
        return
    first_attribute: Node | None = None
    for child in parent.children:
        kind = child.type
        if kind == "attribute_item":
            first_attribute = first_attribute or child
            continue
        if kind in ("line_comment", "block_comment"):
            continue
        first, first_attribute = first_attribute or child, None
        if kind in _RUST_ITEMS:
            _rust_item(outliner, child, first, prefix, in_impl, depth)
        elif kind in ("use_declaration", "extern_crate_declaration"):
            _rust_import(outliner, child)
        elif kind == "ERROR":
            _rust_items(outliner, child, prefix, in_impl, depth + 1)
        elif kind == "impl_item":
            type_name = _rust_impl_type(outliner, child)
            body = child.child_by_field_name("body")
            if type_name and body is not None:
                _rust_items(outliner, body, f"{prefix}{type_name}.", in_impl=True, depth=depth + 1)


def _rust_item(
    outliner: _Outliner, node: Node, first: Node, prefix: str, in_impl: bool, depth: int
) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = outliner.text(name_node)
    kind = _RUST_ITEMS[node.type]
    if in_impl and kind == "function":
        kind = "method"
    body = node.child_by_field_name("body")
    start = _signature_start(node)
    if body is not None and body.type in _RUST_BRACED_BODIES:
        signature = outliner.header(start, body.start_byte)
    elif body is None and node.type == "mod_item":  # `mod name;`: its file is elsewhere
        signature = outliner.first_line(start, node.end_byte, trailing=b"")
    else:
        signature = outliner.first_line(start, node.end_byte)
    qualified = prefix + name
    doc = outliner.comment_above(first, _RUST_COMMENTS)
    outliner.define(kind, name, qualified, signature, doc, first, node)
    if body is not None and node.type in ("trait_item", "mod_item"):
        in_trait = node.type == "trait_item"
        _rust_items(outliner, body, qualified + ".", in_impl=in_trait, depth=depth + 1)
    elif body is not None:
        _rust_nested_uses(outliner, body)


def _rust_nested_uses(outliner: _Outliner, body: Node) -> None:
    """`use` declarations inside a function body, found from the bytes like JS's `require`."""
    data, end = outliner.data, body.end_byte
    seen: set[int] = set()
    position = data.find(b"use", body.start_byte, end)
    while position >= 0:
        declaration = body.descendant_for_byte_range(position, position + 4)
        if (
            declaration is not None
            and declaration.type == "use_declaration"
            and declaration.start_byte not in seen
        ):
            seen.add(declaration.start_byte)
            _rust_import(outliner, declaration)
        position = data.find(b"use", position + 3, end)


def _rust_impl_type(outliner: _Outliner, impl: Node) -> str | None:
    """`Item` for `impl<T> Shape for Item<T>` and for `impl crate::m::Item`."""
    type_node = impl.child_by_field_name("type")
    for _ in range(8):
        if type_node is None:
            return None
        if type_node.type in ("generic_type", "reference_type", "pointer_type"):
            type_node = type_node.child_by_field_name("type")
        elif type_node.type in ("scoped_type_identifier", "scoped_identifier"):
            type_node = type_node.child_by_field_name("name")
        else:
            break
    return outliner.text(type_node) if type_node is not None else None


def _rust_import(outliner: _Outliner, declaration: Node) -> None:
    """One `use` tree flattened to (module, names) per module, in the order written."""
    line = declaration.start_point[0]
    if declaration.type == "extern_crate_declaration":
        crate = declaration.child_by_field_name("name")
        if crate is not None:
            outliner.imports.append(ImportRef(outliner.text(crate), (), line))
        return
    argument = declaration.child_by_field_name("argument")
    if argument is None:
        return
    paths: list[tuple[str, str | None]] = []
    _rust_use_paths(outliner, argument, "", paths, depth=0)
    names_by_module: dict[str, list[str]] = {}
    for module, name in paths:
        names = names_by_module.setdefault(module, [])
        if name is not None and name not in names:
            names.append(name)
    for module, names in names_by_module.items():
        outliner.imports.append(ImportRef(module, tuple(names), line))


def _rust_use_paths(
    outliner: _Outliner, node: Node, prefix: str, paths: list[tuple[str, str | None]], depth: int
) -> None:
    """(module, name) for each leaf of a use tree; name None for a bare `use foo;`."""
    if depth > _MAX_NESTING:
        return
    kind = node.type
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        items = node.child_by_field_name("list")
        inner = _rust_join(prefix, _no_space(outliner.text(path))) if path is not None else prefix
        if items is not None:
            _rust_use_paths(outliner, items, inner, paths, depth + 1)
    elif kind == "use_list":
        for item in node.named_children:
            if not item.type.endswith("comment"):
                _rust_use_paths(outliner, item, prefix, paths, depth + 1)
    elif kind == "use_as_clause":
        path = node.child_by_field_name("path")
        if path is not None:
            _rust_use_paths(outliner, path, prefix, paths, depth + 1)
    elif kind == "use_wildcard":
        path = next((c for c in node.named_children if not c.type.endswith("comment")), None)
        module = _rust_join(prefix, _no_space(outliner.text(path))) if path is not None else prefix
        paths.append((module, "*"))
    else:
        full = (
            prefix
            if kind == "self" and prefix
            else _rust_join(prefix, _no_space(outliner.text(node)))
        )
        module, separator, name = full.rpartition("::")
        paths.append((module, name) if separator and module else (full, None))


def _rust_join(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix else path


# --- every other grammar ------------------------------------------------------------------

_GENERIC_SUFFIXES: Final = ("_definition", "_declaration", "_item", "_specifier")
_GENERIC_EXACT: Final = frozenset(
    {"class", "module", "method", "singleton_method", "function", "struct", "enum", "trait"}
)
_GENERIC_SKIPPED_WORDS: Final = ("parameter", "argument", "import", "using", "include")
_GENERIC_DECLARATORS: Final = {
    "function_definition": "function",
    "declaration": "function",
    "field_declaration": "method",
}
"""C-family nodes named through their `declarator`; the last two only for prototypes."""
_GENERIC_NAME_STOPS: Final = ("parameter", "body", "block", "value")
_FUNCTION_LIKE: Final = ("function", "method", "constructor", "procedure", "lambda", "closure")
_NAME_LIKE_DECLARATORS: Final = frozenset({"operator_name", "destructor_name"})


def _generic_kind_ids(language: str) -> frozenset[int]:
    """The node kinds (ids, aliases included) of a grammar that may be named definitions."""
    kind_ids = _generic_kinds.get(language)
    if kind_ids is not None:
        return kind_ids
    grammar = _language(language)
    found: set[int] = set()
    if grammar is not None:
        for kind_id in range(grammar.node_kind_count):
            if not (grammar.node_kind_is_named(kind_id) and grammar.node_kind_is_visible(kind_id)):
                continue
            kind = grammar.node_kind_for_id(kind_id)
            if not kind or any(word in kind for word in _GENERIC_SKIPPED_WORDS):
                continue
            if (
                kind.endswith(_GENERIC_SUFFIXES)
                or kind in _GENERIC_EXACT
                or kind in _GENERIC_DECLARATORS
            ):
                found.add(kind_id)
    kind_ids = _generic_kinds[language] = frozenset(found)
    return kind_ids


def _outline_generic(outliner: _Outliner, root: Node) -> None:
    """Named definitions of any grammar, nested names dotted, nothing inside functions.

    A walk in Python, GENERIC_MAX_DEPTH deep and never into a function: a tree-sitter query
    would run in C, but its cursor is quadratic on some wide ERROR nodes (50 KB of "(" took
    1.7 s in half the grammars).
    """
    kind_ids = _generic_kind_ids(outliner.language)
    if kind_ids:
        _generic_walk(outliner, root, kind_ids, "", depth=1)


def _generic_walk(
    outliner: _Outliner, parent: Node, kind_ids: frozenset[int], prefix: str, depth: int
) -> None:
    for node in parent.children:
        if node.kind_id in kind_ids:
            named = _generic_name(node)
            if named is not None:
                name_node, kind = named
                name = outliner.first_line(name_node.start_byte, name_node.end_byte)[:200]
                if name:
                    body = node.child_by_field_name("body")
                    end = node.end_byte if body is None else body.start_byte
                    signature = outliner.first_line(node.start_byte, end, b"{;")
                    doc = outliner.comment_above(node, _GENERIC_COMMENTS)
                    outliner.define(kind, name, prefix + name, signature, doc, node, node)
                    if depth < GENERIC_MAX_DEPTH and not any(w in kind for w in _FUNCTION_LIKE):
                        _generic_walk(outliner, node, kind_ids, f"{prefix}{name}.", depth + 1)
                    continue
        if depth < GENERIC_MAX_DEPTH and node.child_count:
            _generic_walk(outliner, node, kind_ids, prefix, depth + 1)


def _generic_name(node: Node) -> tuple[Node, str] | None:
    """A candidate definition's name node and kind; None when it names nothing."""
    kind = node.type
    name_node = node.child_by_field_name("name")
    if name_node is not None and name_node.is_named:
        # A struct_specifier without a body is a use of the type (`struct point p;`).
        if kind.endswith("_specifier") and node.child_by_field_name("body") is None:
            return None
        return name_node, _generic_kind(kind)
    if kind in _GENERIC_DECLARATORS:
        declarator = node.child_by_field_name("declarator")
        declared = _declared_name(declarator) if declarator is not None else None
        if declared is None:
            return None
        name_node, is_function = declared
        if kind != "function_definition" and not is_function:
            return None
        return name_node, _GENERIC_DECLARATORS[kind]
    if kind.endswith("_specifier"):
        return None
    name_node = _identifier_child(node)
    return (name_node, _generic_kind(kind)) if name_node is not None else None


def _identifier_child(node: Node) -> Node | None:
    """The name of a definition whose grammar has no `name` field: an identifier child
    before its parameters or body (Kotlin's `fun f(...)`, never the `x` of R's `function(x) x`).
    """
    for index, child in enumerate(node.children):
        kind = child.type
        if index >= 8 or any(word in kind for word in _GENERIC_NAME_STOPS):
            break
        if node.field_name_for_child(index) in _GENERIC_NAME_STOPS:
            break
        if child.is_named and kind.endswith("identifier"):
            return child
    return None


def _generic_kind(node_type: str) -> str:
    for suffix in _GENERIC_SUFFIXES:
        if node_type.endswith(suffix):
            return node_type[: -len(suffix)] or node_type
    return node_type


def _declared_name(declarator: Node) -> tuple[Node, bool] | None:
    """The identifier a C declarator declares, and whether it declares a function."""
    node: Node | None = declarator
    is_function = False
    for _ in range(12):
        if node is None:
            return None
        kind = node.type
        if kind == "function_declarator":
            is_function = True
        if kind.endswith("identifier") or kind in _NAME_LIKE_DECLARATORS:
            return node, is_function
        node = node.child_by_field_name("declarator")
    return None


_EXTRACTORS: Final[dict[str, Callable[[_Outliner, Node], None]]] = {
    "python": _outline_python,
    "typescript": _outline_typescript,
    "tsx": _outline_typescript,
    "javascript": _outline_typescript,
    "go": _outline_go,
    "java": _outline_java,
    "rust": _outline_rust,
}
