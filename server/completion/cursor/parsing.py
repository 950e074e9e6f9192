"""Tree-sitter parsing for the cursor analysis: this thread's parser per language, parses
given up after a number of steps (`parse`), the incremental re-parse of this thread's last
window (`_parse_window`, kept in `_windows`), and node texts sliced from the bytes parsed
(`_bytes_of`, `_text`).

Steps, not time: what is given up depends on the text alone, so the same request builds
the same context on any machine.
"""

from __future__ import annotations

import threading
from typing import cast

from tree_sitter import Language, Node, Parser, Tree
from tree_sitter_language_pack import SupportedLanguage, get_language

from server.completion.reparse import nearby_tree

# --- grammars and parsers -------------------------------------------------------------------

_grammars: dict[str, Language | None] = {}
_grammars_lock = threading.Lock()


class _ThreadParsers(threading.local):
    def __init__(self) -> None:
        self.by_language: dict[str, Parser] = {}


_parsers = _ThreadParsers()


def _parser(language: str) -> Parser | None:
    parser = _parsers.by_language.get(language)
    if parser is not None:
        return parser
    with _grammars_lock:
        if language not in _grammars:
            try:
                _grammars[language] = get_language(cast("SupportedLanguage", language))
            except (LookupError, OSError, ValueError):
                _grammars[language] = None
        grammar = _grammars[language]
    if grammar is None:
        return None
    parser = _parsers.by_language[language] = Parser(grammar)
    return parser


def parser_for(language: str) -> Parser | None:
    """This thread's tree-sitter parser for `language` (None: no grammar), for callers
    that keep a tree and re-parse it incrementally."""
    return _parser(language)


def parse(
    source: bytes, language: str, max_steps: int | None = None, *, clean: bool = False
) -> Node | None:
    """The root of a tree-sitter parse of `source`; None for a language without a grammar,
    when the parse takes more than `max_steps` steps (error recovery on prose — a window
    that starts inside a docstring — can take 10 ms for a few KB), or, with `clean`, at
    the first step that finds it has met a syntax error (a parse shorter than one step is
    returned as it is, errors and all).

    A step is one of the parser's progress reports, one every 100 parse operations. The
    budget counts steps, not time, so what is given up depends on the text alone: with a
    clock, a parse slowed by the machine (another process, a cold cache) gave way, and
    the same request built a different context (3 of 160 eval prompts differed between
    two runs of the same code). A step takes 0.05 ms on plain code here, up to 0.5 ms in
    error recovery."""
    parser = _parser(language)
    if parser is None:
        return None
    tree = _parse_tree(parser, source, max_steps, clean=clean)
    return tree.root_node if tree is not None else None


class _Windows(threading.local):
    def __init__(self) -> None:
        self.last: dict[str, tuple[bytes, Tree]] = {}


_windows = _Windows()


def _bytes_of(node: Node, source: bytes | None) -> bytes:
    """The text of `node`: sliced from `source`, the bytes parsed, where the tree is a
    step-limited parse's (a window's), else `Node.text`. A step-limited parse reads its
    source through a callback, and `Node.text` reads the bytes back through it, the rest
    of them each time: ~4 us a node on a 4 KB window, 33 us on 35 KB, against 0.3 us."""
    if source is not None:
        return source[node.start_byte : node.end_byte]
    return node.text or b""


def _parse_window(source: bytes, language: str, max_steps: int) -> Node | None:
    """`parse` for the cursor analysis's window, incremental from this thread's last
    window in the language: on consecutive keystrokes the windows differ by a few bytes,
    and a re-parse costs a fraction of a parse (0.2 instead of 0.9 ms on 6 KB)."""
    parser = _parser(language)
    if parser is None:
        return None
    last = _windows.last.get(language)
    if last is not None and last[0] == source:
        return last[1].root_node
    old_tree = nearby_tree(last[0], last[1], source) if last is not None else None
    tree = _parse_tree(parser, source, max_steps, old_tree=old_tree)
    if tree is None:
        _windows.last.pop(language, None)
        return None
    _windows.last[language] = (source, tree)
    return tree.root_node


def _parse_tree(
    parser: Parser,
    source: bytes,
    max_steps: int | None,
    *,
    old_tree: Tree | None = None,
    clean: bool = False,
) -> Tree | None:
    # Two calls each: parse() refuses old_tree=None at run time, though its stubs allow it.
    if max_steps is None and not clean:
        return parser.parse(source) if old_tree is None else parser.parse(source, old_tree)
    steps = 0

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        return source[offset:] if offset else source

    def give_up(_offset: int, has_error: bool) -> bool:
        nonlocal steps
        steps += 1
        return (max_steps is not None and steps > max_steps) or (clean and has_error)

    try:
        if old_tree is None:
            return parser.parse(read, encoding="utf8", progress_callback=give_up)
        return parser.parse(read, old_tree, encoding="utf8", progress_callback=give_up)
    except ValueError:  # given up
        parser.reset()
        return None


def _text(node: Node | None, source: bytes | None = None) -> str:
    """The text of `node` ("" for none), read as `_bytes_of` reads it."""
    return "" if node is None else _bytes_of(node, source).decode("utf-8", "replace")
