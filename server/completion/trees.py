"""Each open document's latest tree-sitter tree, kept so that the next request re-parses
only what changed.

Code actions are listed on every cursor move and semantic tokens after every pause in
typing; a whole parse of a 2,000-line file costs ~10 ms, an incremental one a fraction of
that. The edit between two versions is found by comparing the texts (`server.completion.reparse`),
so no didChange hook is needed and any caller with the current text gets the current
tree. A tree handed out is never edited afterwards (the next parse edits a copy),
so callers in other threads can keep reading it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from tree_sitter import Tree

from server.completion.cursor import parser_for
from server.completion.reparse import reparse


@dataclass(slots=True)
class _Parsed:
    language: str
    source: bytes
    tree: Tree
    text: str


class DocumentTrees:
    """The latest tree per document URI; thread-safe (one lock per document)."""

    def __init__(self) -> None:
        self._parsed: dict[str, _Parsed] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, uri: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(uri, threading.Lock())

    def tree(self, uri: str, text: str, language: str) -> Tree | None:
        """The tree of `text` (the document's current content); None for a language
        without a grammar."""
        parser = parser_for(language)
        if parser is None:
            return None
        source = text.encode("utf-8", "surrogatepass")
        with self._lock(uri):
            old = self._parsed.get(uri)
            if old is not None and old.language != language:
                old = None
            if old is not None and old.source == source:
                old.text = text
                return old.tree
            if old is not None:
                tree = reparse(parser, old.source, old.tree, source)
            else:
                tree = parser.parse(source)
            self._parsed[uri] = _Parsed(language, source, tree, text)
            return tree

    def kept(self, uri: str, text: str, language: str) -> Tree | None:
        """`tree`, for a document whose tree is kept in `language`; else None, so that a
        caller reading in another language (the project cache goes by the file's name, the
        editor by its language id) neither starts keeping a tree nor replaces one."""
        old = self._parsed.get(uri)
        if old is None or old.language != language:
            return None
        return self.tree(uri, text, language)

    def current(self, uri: str, text: str, language: str | None) -> Tree | None:
        """The tree of `text` if it is the one held, else None: never parses, so a
        completion request can take it when it is there (the document is unchanged since
        semantic tokens, a code action or its opening parsed it) at the cost of a lookup."""
        old = self._parsed.get(uri)
        if old is None or old.language != language:
            return None
        return old.tree if old.text is text or old.text == text else None

    def forget(self, uri: str) -> None:
        self._parsed.pop(uri, None)
        with self._guard:
            self._locks.pop(uri, None)

    def __len__(self) -> int:
        """Documents with a tree kept."""
        return len(self._parsed)
