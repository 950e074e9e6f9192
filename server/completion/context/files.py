"""The builder's view of the project's files (`ProjectFiles`): each indexed file's record,
text and lines, its outline arranged for lookups (`_FileDefs`), its rendered snippets,
whether it is short enough to show whole, and the files around it (its directory, its
related files, those two import hops out); each cached by the file's digest or until the
index changes, as every build asks them of dozens of files."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Mapping
from typing import Final

from cache.index import ProjectIndex
from cache.model import Definition, FileRecord
from cache.secrets import mask_known, masked_lines, masked_text, secret_strings
from server.completion.context.definitions import _FileDefs
from server.completion.context.lru import V, _Lru
from server.completion.context.rendering import (
    SHORT_CHARS,
    _is_short_file,
    _render_definition,
    _render_file,
    _Rendered,
    _rendered_key,
)

log = logging.getLogger(__name__)

RELATED_FILES: Final = 8


def _until_edited(
    memo: _Lru[tuple[str, int, int], V],
    index: ProjectIndex,
    file_path: str,
    make: Callable[[ProjectIndex, str], V],
) -> V:
    """`make(index, file_path)`, kept in `memo` while the index has no edit."""
    key = (file_path, id(index.records), index.edits)
    known = memo.get(key)
    if known is None:
        known = memo.put(key, make(index, file_path))
    return known


class ProjectFiles:
    """What `ContextBuilder` knows of the project's files, cached per file version (the
    builder makes the caches, in `ContextBuilder.__init__`)."""

    index: ProjectIndex | None
    texts: Mapping[str, str]
    _defs: _Lru[tuple[str, str], _FileDefs]
    _rendered: _Lru[tuple[str, str, str], _Rendered]
    _lines: _Lru[tuple[str, str], list[str]]
    _short: _Lru[tuple[str, str], bool]
    _directories: tuple[int, int, dict[str, list[str]]] | None
    _related: _Lru[tuple[str, int, int], list[str]]
    _hops: _Lru[tuple[str, int, int], dict[str, int]]

    def related_files(self, file_path: str) -> list[str]:
        """`related_files`, memoised until the index changes: ranking a package of
        hundreds of files and walking the import graph two hops out costs a large
        file's build up to half a millisecond."""
        index = self.index
        if index is None:
            return []
        return _until_edited(self._related, index, file_path, related_files)

    def hops(self, file_path: str) -> dict[str, int]:
        """The files two import hops out from `file_path`, with their distance (ranking
        reads it on every build), memoised until the index changes."""
        index = self.index
        if index is None:
            return {}
        return _until_edited(
            self._hops, index, file_path, lambda i, p: i.graph.neighbourhood(p, hops=2)
        )

    def _record(self, path: str) -> FileRecord | None:
        """The index's record of `path`; None without an index or for a file not in it."""
        return self.index.records.get(path) if self.index is not None else None

    def _text_of(self, path: str) -> str | None:
        """The text of an indexed file: in memory if there (an open buffer's), else read."""
        text = self.texts.get(path)
        if text is not None:
            return text
        record = self._record(path)
        if self.index is None or record is None or record.size > 2_000_000:
            return None
        try:
            return (self.index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.debug("cannot read %s: %s", path, exc)
            return None

    def _is_short(self, path: str) -> bool:
        """Whether `path` is shown whole (`_is_short_file`), per version of the file: a
        build asks it of every candidate."""
        record = self._record(path)
        if record is None or record.size > SHORT_CHARS:
            return False
        key = (path, record.digest)
        known = self._short.get(key)
        if known is None:
            lines = self.file_lines(path)
            if lines is None:
                return False
            known = self._short.put(key, _is_short_file(lines))
        return known

    def file_defs(self, path: str) -> _FileDefs | None:
        record = self._record(path)
        if self.index is None or record is None:
            return None
        key = (path, record.digest)
        cached = self._defs.get(key)
        if cached is not None:
            return cached
        outline = self.index.outline(path)
        if outline is None:
            return None
        by_name: dict[str, Definition] = {}
        members: dict[str, list[Definition]] = {}
        for definition in outline.definitions:
            by_name.setdefault(definition.qualified_name, definition)
        for definition in outline.definitions:
            parent = definition.qualified_name.rpartition(".")[0]
            if parent and parent not in by_name:
                parent = ""
            members.setdefault(parent, []).append(definition)
        return self._defs.put(key, _FileDefs(outline.language, by_name, members, outline.imports))

    def file_lines(self, path: str) -> list[str] | None:
        """The file's lines with its secrets masked (`cache.secrets`): every snippet, chunk
        and definition is cut from these, so no window starts inside a secret."""
        record = self._record(path)
        if record is None:
            return None
        key = (path, record.digest)
        cached = self._lines.get(key)
        if cached is not None:
            return cached
        text = self._text_of(path)
        if text is None:
            return None
        return self._lines.put(key, masked_lines(text, path, (record.digest, record.secrets)))

    def render(self, path: str, definition: Definition | None) -> _Rendered | None:
        """The snippet text of a definition of `path`, or of the file's outline."""
        record = self._record(path)
        if record is None:
            return None
        key = _rendered_key(record, definition)
        cached = self._rendered.get(key)
        if cached is not None:
            return cached
        defs = self.file_defs(path)
        lines = self.file_lines(path)
        if defs is None or lines is None:
            return None
        if definition is None:
            text, start = _render_file(defs, lines), 0
        else:
            text, start = _render_definition(defs, definition, lines), definition.start_line
        text = masked_text(self._mask_outline(path, record, text), path)
        return self._rendered.put(key, _Rendered(text, start, defs.language, not text.strip()))

    def _mask_outline(self, path: str, record: FileRecord, text: str) -> str:
        """A rendering with the file's secrets masked where its outline (signatures,
        docstrings, made from the file as it is, maybe clipped) shows them."""
        if not record.secrets:
            return text
        source = self._text_of(path)
        if source is None:
            return text
        return mask_known(text, secret_strings(source, path, (record.digest, record.secrets)))

    def directories(self) -> dict[str, list[str]]:
        """Directory -> its files, rebuilt when the index's file set changes size."""
        index = self.index
        if index is None:
            return {}
        records = index.records
        if self._directories is None or self._directories[:2] != (id(records), len(records)):
            by_directory: dict[str, list[str]] = {}
            for path in sorted(records):
                by_directory.setdefault(posixpath.dirname(path), []).append(path)
            self._directories = (id(records), len(records), by_directory)
        return self._directories[2]


def related_files(index: ProjectIndex, file_path: str) -> list[str]:
    """The files shown as outlines even when no name points at them: the direct
    dependencies, then `ProjectIndex.related` (same package, two hops, importers)."""
    files = dict.fromkeys(sorted(index.graph.imports(file_path)))
    files.update(dict.fromkeys(index.related(file_path, limit=RELATED_FILES)))
    files.pop(file_path, None)
    return list(files)
