"""Which snippets say the same thing: near-duplicates by the Jaccard index of their sets
of tree-sitter leaf tokens (>= DUPLICATE_JACCARD; words and punctuation without a
grammar, or where the parse fails), and snippets whose lines the current file's window
already shows. Token sets, line sets and the answers for pairs are memoised here, by
text, across builds: the same candidates meet at every keystroke."""

from __future__ import annotations

import re
from typing import Final

from server.completion.context.lru import _Lru
from server.completion.context.model import Snippet
from server.completion.cursor import parse, parser_for

DUPLICATE_JACCARD: Final = 0.85


IN_WINDOW_SHARE: Final = 0.85
"""A snippet with at least this share of its lines already in the window is dropped."""


def _line_set(text: str) -> frozenset[str]:
    return frozenset(stripped for line in text.split("\n") if (stripped := line.strip()))


def leaf_tokens(text: str, language: str | None) -> frozenset[str]:
    """The set of the texts of the tree-sitter leaves of `text` (words for no grammar)."""
    ends = _leaf_ends(text, language)
    return frozenset(_WORD_OR_MARK.findall(text) if ends is None else ends)


def _leaf_ends(text: str, language: str | None) -> dict[str, int] | None:
    """Each distinct leaf text of `text`'s tree-sitter tree, with where (in bytes) its
    first occurrence ends; None without a grammar. A parse that meets a syntax error or
    runs past its steps (`leaf_parse_steps`) gives way to words and punctuation
    (`_word_ends`)."""
    if not language or parser_for(language) is None:
        return None
    source = text.encode("utf-8", "surrogatepass")
    root = parse(source, language, leaf_parse_steps(len(source)), clean=True)
    if root is None:
        return _word_ends(text, len(source) == len(text))
    tokens: dict[str, int] = {}
    walker = root.walk()
    while True:
        if walker.goto_first_child():
            continue
        leaf = walker.node
        assert leaf is not None  # a cursor always stands on a node
        start, end = leaf.start_byte, leaf.end_byte
        if end > start:  # the source sliced: a step-limited tree's `Node.text` reads it
            # back through the parse's callback, 5x slower in all (0.9 against 0.18 ms
            # for a snippet of 850 bytes)
            tokens.setdefault(source[start:end].decode("utf-8", "replace"), end)
        while not walker.goto_next_sibling():
            if not walker.goto_parent():
                return tokens


def leaf_parse_steps(size: int) -> int:
    """The most steps (`server.completion.cursor.parse`) a snippet of `size` bytes may take to parse
    for its tokens: 8 and 12 a KB, where code takes 2-9 a KB (none of 3,800 clean parses
    on /tmp/bigws took more). Outlines keep the first line of a long assignment
    (`theLogPublisher = LogPublisher(`), and the unclosed bracket sends the parser into
    error recovery (1.4 KB took 2-3 ms): a snippet whose parse reports a syntax error is
    not parsed further. Steps, not time: the tokens, and so which snippets are
    near-duplicates, depend on the text alone."""
    return 8 + 12 * size // 1024


def _word_ends(text: str, ascii_only: bool) -> dict[str, int]:
    """The tokens `leaf_tokens` makes without a grammar, with where (in bytes) each first
    occurrence ends, as `_leaf_ends` gives leaves."""
    ends: dict[str, int] = {}
    for match in _WORD_OR_MARK.finditer(text):
        if match.group() not in ends:
            end = match.end()
            ends[match.group()] = end if ascii_only else len(text[:end].encode("utf-8", "replace"))
    return ends


_WORD_OR_MARK: Final = re.compile(r"\w+|[^\w\s]")


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def _similar_sets(a: frozenset[str], b: frozenset[str]) -> bool:
    """jaccard(a, b) >= DUPLICATE_JACCARD, without the intersection when the sizes alone
    rule it out (the share is at most the smaller size over the larger)."""
    small, large = sorted((len(a), len(b)))
    if large and small < DUPLICATE_JACCARD * large:
        return False
    return jaccard(a, b) >= DUPLICATE_JACCARD


_token_sets: _Lru[tuple[str, str | None], frozenset[str]] = _Lru(4096)
_line_sets: _Lru[str, frozenset[str]] = _Lru(4096)
_first_ends: _Lru[tuple[str, str | None], dict[str, int]] = _Lru(2048)
"""`_leaf_ends` of the snippets `_tokens_of` parsed: the tokens of their cut heads."""


def _tokens_of(snippet: Snippet) -> frozenset[str]:
    """Leaf tokens of a snippet, memoised by its text (rendered texts are cached, so a
    snippet's text is parsed once per file version)."""
    key = (snippet.text, snippet.language)
    tokens = _token_sets.get(key)
    if tokens is None:
        ends = _leaf_ends(snippet.text, snippet.language)
        if ends is None:
            return _token_sets.put(key, leaf_tokens(snippet.text, None))
        _first_ends.put(key, ends)
        tokens = _token_sets.put(key, frozenset(ends))
    return tokens


def _lines_of(snippet: Snippet) -> frozenset[str]:
    lines = _line_sets.get(snippet.text)
    if lines is None:
        lines = _line_sets.put(snippet.text, _line_set(snippet.text))
    return lines


def _remember_head_tokens(whole: Snippet, head: Snippet) -> None:
    """Memoise the leaf tokens of `head`, a snippet cut from `whole`, as those of `whole`'s
    leaves that end inside it: its text is new at each cut, and parsing it for the
    near-duplicate check cost a build with cuts up to half a millisecond."""
    ends = _first_ends.get((whole.text, whole.language))
    key = (head.text, head.language)
    if ends is None or _token_sets.get(key) is not None:
        return
    size = len(head.text.encode("utf-8", "surrogatepass"))
    _token_sets.put(key, frozenset(token for token, end in ends.items() if end <= size))


def _near_duplicate(a: Snippet, b: Snippet) -> bool:
    shorter, longer = len(a.text), len(b.text)
    if shorter > longer:
        shorter, longer = longer, shorter
    if longer and shorter / longer < DUPLICATE_JACCARD * 0.8:
        return False  # sizes this far apart cannot share 85% of their tokens
    words = a.similar or b.similar  # new chunks come with new queries: no parse for them
    key = (a.text, a.language, b.text, b.language, words)
    known = _duplicates.get(key)
    if known is None:
        if words:
            known = _similar_sets(_words_of(a), _words_of(b))
        else:
            known = _similar_sets(_tokens_of(a), _tokens_of(b))
        if len(_duplicates) >= _DUPLICATES_SIZE:
            _duplicates.clear()
        _duplicates[key] = known
    return known


_DUPLICATES_SIZE: Final = 16384
_duplicates: dict[tuple[str, str | None, str, str | None, bool], bool] = {}
"""Pairs of snippet texts compared: the same candidates meet at every build in a file
(a dict, not an `_Lru`: a lookup is most of what a comparison costs)."""


def _words_of(snippet: Snippet) -> frozenset[str]:
    """`leaf_tokens` without a grammar (words and punctuation), memoised by the text."""
    key = (snippet.text, None)
    words = _token_sets.get(key)
    if words is None:
        words = _token_sets.put(key, leaf_tokens(snippet.text, None))
    return words


def _in_window(snippet: Snippet, window: frozenset[str]) -> bool:
    lines = _lines_of(snippet)
    return bool(lines) and len(lines & window) >= IN_WINDOW_SHARE * len(lines)
