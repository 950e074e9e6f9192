"""A file's imports as local name -> binding (`file_imports`).

Every import statement is found by a regex tried only at lines that hold an import
keyword, parsed one statement at a time with tree-sitter and memoised by the statement's
text, and the last file's answer is reused for an edit that cannot have changed them, so
typing elsewhere costs a regex scan and dictionary lookups. Aliases are kept (the cache's
outlines drop them).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from tree_sitter import Node

from cache.outline import named_child
from server.completion.cursor.parsing import _text, parse
from server.completion.cursor.results import Binding, Imports
from server.completion.cursor.syntax import _SYNTAX, _Syntax

# --- imports ------------------------------------------------------------------------------------

_IMPORTS_MEMO_SIZE: Final = 4096
_imports_memo: OrderedDict[tuple[str, str], tuple[tuple[str, Binding], ...]] = OrderedDict()
_imports_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class _FileImports:
    """A file's imports as `file_imports` last found them, and what tells whether an
    edit of the text can have changed them."""

    text: str
    head: str
    """The text up to its last import statement."""
    spans: tuple[tuple[int, int], ...]
    """Where the import statements are, in order."""
    open: bool
    """Whether a statement is unfinished (an open parenthesis, a trailing backslash): a
    line typed below it, keyword or not, may finish it."""
    imports: Imports


_last_imports: dict[str, _FileImports] = {}
"""Per language, the last file's imports: the same text (another cursor in it), a
keystroke below its last import statement with no import keyword further down, or one
that changes a line of no import statement (`near`), reuses them."""


def file_imports(text: str, language: str | None, near: int | None = None) -> Imports:
    """Every import statement of the file, as local name -> binding. `near`, where the
    text was just edited (the cursor), lets a keystroke reuse the last answer.

    A regex finds the statements (cheap); each statement's text is parsed once with
    tree-sitter and memoised, so a keystroke re-parses only a statement being edited."""
    syntax = _SYNTAX.get(language) if language else None
    if syntax is None or syntax.import_pattern is None or language is None:
        return Imports({})
    last = _last_imports.get(language)
    if last is not None:  # the previous file, as it was or edited away from its imports?
        if text is last.text or text == last.text:
            return last.imports
        head = last.head
        if (
            text.startswith(head)
            and (not head or text.startswith("\n", len(head)))  # its last line not extended
            and all(
                text.find(keyword, max(0, len(head) - len(keyword))) < 0
                for keyword in syntax.import_keywords
            )
        ):
            return last.imports
        if near is not None and not last.open:
            edited = _line_edited(last, text, near, syntax.import_keywords)
            if edited is not None:
                _last_imports[language] = edited
                return edited.imports
    bindings: dict[str, Binding] = {}
    star: list[str] = []
    line, counted, end = 0, 0, 0
    matches = _import_statements(text, syntax)
    for match in matches:
        end = match.end()
        statement = match.group()
        key = (language, statement.strip())
        with _imports_lock:
            found = _imports_memo.get(key)
            if found is not None:
                _imports_memo.move_to_end(key)
        if found is None:
            found = _parse_imports(statement.strip(), language)
            with _imports_lock:
                _imports_memo[key] = found
                while len(_imports_memo) > _IMPORTS_MEMO_SIZE:
                    _imports_memo.popitem(last=False)
        line += text.count("\n", counted, match.start())
        counted = match.start()
        for local, binding in found:
            if local == "*":
                star.append(binding.module)
            else:
                bindings[local] = Binding(binding.module, binding.name, line)
    imports = Imports(bindings, tuple(star))
    spans = tuple((m.start(), m.end()) for m in matches)
    unfinished = any(_unfinished(m.group()) for m in matches)
    _last_imports[language] = _FileImports(text, text[:end], spans, unfinished, imports)
    return imports


def _unfinished(statement: str) -> bool:
    return statement.count("(") > statement.count(")") or statement.rstrip().endswith("\\")


def _line_edited(
    last: _FileImports, text: str, near: int, keywords: tuple[str, ...]
) -> _FileImports | None:
    """`last` for `text`, when `text` differs from `last.text` only inside the line at
    `near` (no line added or removed) and that line is no part of an import statement,
    before or after, and holds no import keyword; else None."""
    old = last.text
    start = text.rfind("\n", 0, near) + 1
    end = text.find("\n", near)
    end = len(text) if end < 0 else end
    old_end = end - (len(text) - len(old))
    if not start <= old_end <= len(old) or "\n" in old[start:old_end]:
        return None
    if not (text[:start] == old[:start] and text[end:] == old[old_end:]):
        return None
    if any(k in text[start:end] or k in old[start:old_end] for k in keywords):
        return None
    first_after = bisect.bisect_left(last.spans, (old_end, 0))
    if first_after and last.spans[first_after - 1][1] >= start:
        return None  # inside a statement (a parenthesised one's names)
    shift = len(text) - len(old)
    spans = last.spans[:first_after] + tuple(
        (a + shift, b + shift) for a, b in last.spans[first_after:]
    )
    head = text[: spans[-1][1]] if spans else ""
    return _FileImports(text, head, spans, last.open, last.imports)


def import_statement_matches(text: str, language: str | None) -> list[re.Match[str]]:
    """The import statements of `text` as matches of the language's pattern, in file
    order (each statement whole; a Python one inside a docstring too); [] for a language
    whose imports are not read."""
    syntax = _SYNTAX.get(language) if language else None
    return _import_statements(text, syntax) if syntax is not None else []


def _import_statements(text: str, syntax: _Syntax) -> list[re.Match[str]]:
    """Matches of the language's import statement pattern, in file order, tried only at
    the starts of lines that hold an import keyword: `str.find` is much faster than the
    regex engine trying every position of a large file."""
    pattern = syntax.import_pattern
    found: dict[int, re.Match[str]] = {}
    if pattern is None:
        return []
    for keyword in syntax.import_keywords:
        position = text.find(keyword)
        while position >= 0:
            line_start = text.rfind("\n", 0, position) + 1
            if line_start not in found:
                match = pattern.match(text, line_start)
                if match is not None and match.end() > position:
                    found[line_start] = match
            position = text.find(keyword, position + len(keyword))
    return [found[start] for start in sorted(found)]


def _parse_imports(statement: str, language: str) -> tuple[tuple[str, Binding], ...]:
    root = parse(statement.encode("utf-8", "surrogatepass"), language)
    if root is None:
        return ()
    out: list[tuple[str, Binding]] = []
    extract = _IMPORT_EXTRACTORS.get(language)
    if extract is not None:
        for node in root.named_children:
            extract(node, out)
    return tuple(out)


def _bind(out: list[tuple[str, Binding]], local: str, module: str, name: str | None) -> None:
    local = "".join(local.split())
    if local:
        out.append((local, Binding("".join(module.split()), name, 0)))


def _python_import(node: Node, out: list[tuple[str, Binding]]) -> None:
    if node.type == "import_statement":
        for imported in node.children_by_field_name("name"):
            if imported.type == "aliased_import":
                module = _text(imported.child_by_field_name("name"))
                _bind(out, _text(imported.child_by_field_name("alias")), module, None)
            else:
                _bind(out, _text(imported), _text(imported), None)
    elif node.type == "import_from_statement":
        module = _text(node.child_by_field_name("module_name"))
        if any(child.type == "wildcard_import" for child in node.children):
            _bind(out, "*", module, None)
            return
        for imported in node.children_by_field_name("name"):
            if imported.type == "aliased_import":
                original = _text(imported.child_by_field_name("name"))
                _bind(out, _text(imported.child_by_field_name("alias")), module, original)
            else:
                _bind(out, _text(imported), module, _text(imported))


def _ts_import(node: Node, out: list[tuple[str, Binding]]) -> None:
    if node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            name = declarator.child_by_field_name("name")
            arguments = value.child_by_field_name("arguments") if value is not None else None
            source = named_child(arguments, 0) if arguments is not None else None
            if name is not None and source is not None and name.type == "identifier":
                _bind(out, _text(name), _text(source).strip("\"'`"), None)
        return
    if node.type != "import_statement":
        return
    source = node.child_by_field_name("source")
    module = _text(source).strip("\"'`")
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        return
    for part in clause.named_children:
        if part.type == "identifier":  # default import: usually named like its definition
            _bind(out, _text(part), module, _text(part))
        elif part.type == "namespace_import":
            _bind(out, _text(named_child(part, 0)), module, None)
        elif part.type == "named_imports":
            for specifier in part.named_children:
                if specifier.type != "import_specifier":
                    continue
                original = _text(specifier.child_by_field_name("name"))
                alias = specifier.child_by_field_name("alias")
                _bind(out, _text(alias) if alias is not None else original, module, original)


def _go_import(node: Node, out: list[tuple[str, Binding]]) -> None:
    if node.type != "import_declaration":
        return
    specs: list[Node] = []
    for child in node.named_children:
        if child.type == "import_spec":
            specs.append(child)
        elif child.type == "import_spec_list":
            specs.extend(c for c in child.named_children if c.type == "import_spec")
    for spec in specs:
        path = _text(spec.child_by_field_name("path")).strip('"`')
        name = spec.child_by_field_name("name")
        local = _text(name) if name is not None else path.rsplit("/", 1)[-1]
        if local == ".":
            _bind(out, "*", path, None)
        elif local != "_":
            if name is None and re.fullmatch(r"v\d+", local) and "/" in path:
                local = path.rsplit("/", 2)[-2]  # example.com/m/store/v2 is package store
            _bind(out, local.replace("-", "_"), path, None)


def _java_import(node: Node, out: list[tuple[str, Binding]]) -> None:
    if node.type != "import_declaration":
        return
    dotted = next(
        (_text(c) for c in node.named_children if c.type in ("scoped_identifier", "identifier")), ""
    )
    if not dotted:
        return
    if any(c.type == "asterisk" for c in node.children):
        _bind(out, "*", dotted, None)
        return
    static = any(c.type == "static" for c in node.children)
    parts = dotted.split(".")
    if static and len(parts) >= 3:
        _bind(out, parts[-1], ".".join(parts[:-2]), ".".join(parts[-2:]))
    elif len(parts) >= 2:
        _bind(out, parts[-1], ".".join(parts[:-1]), parts[-1])


def _rust_import(node: Node, out: list[tuple[str, Binding]]) -> None:
    if node.type != "use_declaration":
        return
    argument = node.child_by_field_name("argument")
    if argument is not None:
        _rust_use(argument, "", out)


def _rust_use(node: Node, prefix: str, out: list[tuple[str, Binding]]) -> None:
    kind = node.type

    def join(head: str, tail: str) -> str:
        return f"{head}::{tail}" if head and tail else head or tail

    if kind in ("identifier", "self", "crate", "super"):
        name = _text(node)
        if name == "self":
            module, _, last = prefix.rpartition("::")
            _bind(out, last, module, last)
        else:
            _bind(out, name, prefix, name)
    elif kind == "scoped_identifier":
        path = join(prefix, _text(node.child_by_field_name("path")))
        name = _text(node.child_by_field_name("name"))
        _bind(out, name, path, name)
    elif kind == "use_as_clause":
        path_node = node.child_by_field_name("path")
        full = join(prefix, _text(path_node))
        module, _, name = full.rpartition("::")
        _bind(out, _text(node.child_by_field_name("alias")), module, name)
    elif kind == "scoped_use_list":
        path_node = node.child_by_field_name("path")
        inner = node.child_by_field_name("list")
        if inner is not None:
            _rust_use(inner, join(prefix, _text(path_node)), out)
    elif kind == "use_list":
        for child in node.named_children:
            _rust_use(child, prefix, out)
    elif kind == "use_wildcard":
        path_node = named_child(node, 0)
        _bind(out, "*", join(prefix, _text(path_node)), None)


_IMPORT_EXTRACTORS: Final = {
    "python": _python_import,
    "typescript": _ts_import,
    "tsx": _ts_import,
    "javascript": _ts_import,
    "go": _go_import,
    "java": _java_import,
    "rust": _rust_import,
}
