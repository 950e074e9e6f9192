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

Modules: `grammars` (loading and parsing), `outliner` (what the extractors share), one
extractor per language (`python`, `typescript`, `go`, `java`, `rust`) and `generic` for
every other grammar.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from tree_sitter import Node, Tree

from cache.model import Outline
from cache.outline import grammars
from cache.outline.generic import generic_kind_ids, outline_generic
from cache.outline.go import outline_go
from cache.outline.grammars import supported
from cache.outline.java import outline_java
from cache.outline.outliner import MAX_DOC_LINES, MAX_SIGNATURE_CHARS, Outliner, named_child
from cache.outline.python import outline_python
from cache.outline.rust import outline_rust
from cache.outline.typescript import outline_typescript

__all__ = [
    "MAX_DOC_LINES",
    "MAX_SIGNATURE_CHARS",
    "named_child",
    "parse_outline",
    "runs_grammar",
    "supported",
]

_log = logging.getLogger(__name__)


def runs_grammar(language: str) -> bool:
    """Whether outlining a file of `language` parses it. Not for grammars without a kind of
    node that could be a named definition (html, json, po, toml, ...): their outline is
    always empty, and parsing them cost a tenth of a cold index for nothing."""
    return language in _EXTRACTORS or bool(generic_kind_ids(language))


def parse_outline(source: bytes, language: str, tree: Tree | None = None) -> Outline | None:
    """The definitions and imports of one file; None if there is no usable grammar for it.

    Never raises for a supported language: syntax errors are normal in files being edited,
    and tree-sitter outlines whatever parses around them. A file with NUL bytes, or one
    whose parse runs past `grammars.PARSE_BUDGET_S`, or that looks binary gets an empty outline.
    `tree`, where one is kept, is a parse of exactly `source` in `language` (an open
    document's, re-parsed incrementally as it is edited): it spares a whole parse.
    """
    grammar = grammars.load_grammar(language)
    if grammar is None:
        return None
    if not runs_grammar(language):
        return Outline(language=language)
    bom = source.startswith(grammars.UTF8_BOM)
    data = source[len(grammars.UTF8_BOM) :] if bom else source
    if grammars.looks_binary(data):
        return Outline(language=language)
    if tree is None or bom:  # a tree of the bytes with a BOM has its offsets shifted
        tree = grammars.parse_within_budget(grammars.parser_for(language, grammar), data)
    if tree is None:
        _log.info(
            "gave up parsing a %s file of %d bytes after %.1f s",
            language,
            len(data),
            grammars.PARSE_BUDGET_S,
        )
        return Outline(language=language)
    root = tree.root_node
    outliner = Outliner(data, language)
    extract = _EXTRACTORS.get(language, outline_generic)
    try:
        extract(outliner, root)
    except Exception:
        # A bug here must not cost the whole index; say so, and keep the file without outline.
        _log.warning("could not outline a %s file", language, exc_info=True)
        return Outline(language=language)
    imports = sorted(outliner.imports, key=lambda ref: ref.line)
    return Outline(language, tuple(outliner.definitions), tuple(imports))


_EXTRACTORS: Final[dict[str, Callable[[Outliner, Node], None]]] = {
    "python": outline_python,
    "typescript": outline_typescript,
    "tsx": outline_typescript,
    "javascript": outline_typescript,
    "go": outline_go,
    "java": outline_java,
    "rust": outline_rust,
}
