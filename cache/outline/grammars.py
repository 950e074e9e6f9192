"""tree-sitter-language-pack's grammars, loaded once, and parses that give up on binary
input and past a time budget.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final, cast, get_args

from tree_sitter import Language, Parser, Point, Tree
from tree_sitter_language_pack import SupportedLanguage, get_language

_log = logging.getLogger(__name__)

PARSE_BUDGET_S: Final = 2.0
"""A parse that takes longer is given up. Some grammars' error recovery is pathological on
garbage (bicep: ~30 s for 64 KB of random bytes); the file is then kept without outline."""

_PACK_LANGUAGES: Final = frozenset(get_args(SupportedLanguage))
_UNSAFE_GRAMMARS: Final = frozenset({"cobol"})
"""Pack grammars never used: cobol's parser loops forever, holding the GIL and growing
memory, on free-format text as plain as "end" (0.13.0)."""
UTF8_BOM: Final = b"\xef\xbb\xbf"
_CONTROL_BYTES: Final = bytes([*range(0x01, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
"""Control characters that text does not use (tab, newlines, form feed and ESC it does)."""

_languages: dict[str, Language | None] = {}
_languages_lock = threading.Lock()


class _ThreadParsers(threading.local):
    """Parsers per thread: a tree-sitter Parser must not be used by two threads at once."""

    def __init__(self) -> None:
        self.by_language: dict[str, Parser] = {}


_parsers = _ThreadParsers()


def supported(language: str) -> bool:
    """Whether `parse_outline` can outline files of `language` (a language pack name).

    Every pack language but the few in _UNSAFE_GRAMMARS.
    """
    return load_grammar(language) is not None


def parser_for(language: str, grammar: Language) -> Parser:
    """This thread's parser for `language`, made on first use."""
    parser = _parsers.by_language.get(language)
    if parser is None:
        parser = _parsers.by_language[language] = Parser(grammar)
    return parser


def looks_binary(data: bytes) -> bool:
    """Whether `data` is no source text (a video named .ts, a UTF-16 file): then not parsed.

    External scanners take NUL for the end of input, and some (d) then read past it and
    crash the process; v's scanner crashes now and then on random bytes without NULs.
    """
    if b"\x00" in data:
        return True
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    return controls * 100 > len(data)


def load_grammar(name: str) -> Language | None:
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


def parse_within_budget(parser: Parser, data: bytes) -> Tree | None:
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
