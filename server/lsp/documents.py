"""Open documents with their lines counted as LSP counts them.

LSP ends a line at `\\n`, `\\r\\n` or `\\r` and nowhere else. pygls's `TextDocument` splits
with `str.splitlines`, which also breaks at `\\v`, `\\f`, `\\x1c`-`\\x1e`, `\\x85`, U+2028
and U+2029: a document holding one of them has more lines on the server than in the
editor, and every edit below it lands on the wrong line. Its position codec also clamps a
character past a line's end to one before the end (and counts a lone `\\r` ending as a
character). `LspWorkspace` keeps documents that split, clamp and edit as LSP says; every
position the server converts goes through their `lines` and `position_codec`.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from server import tracing

log = logging.getLogger(__name__)

LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""One line with its ending, as LSP splits a text (the last one may have no ending)."""


SPLITLINES_ONLY = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
"""Where `str.splitlines` ends a line and LSP does not."""


RECENT_SPLITS: deque[tuple[str, tuple[str, ...]]] = deque(maxlen=4)
"""The last texts split into lines, and their lines (each text by identity)."""


def lsp_lines(text: str) -> list[str]:
    """`text` split after each `\\n`, `\\r\\n` and `\\r`; each line keeps its ending.

    `str.splitlines` where the text holds none of `SPLITLINES_ONLY` (five times faster than
    the regular expression: 0.6 ms for 120 KB, where a keystroke's budget is 5 ms)."""
    if not any(char in text for char in SPLITLINES_ONLY):
        return text.splitlines(True)
    return LINE.findall(text)


def line_content(line: str) -> str:
    """A line without its ending."""
    return line.rstrip("\r\n")


class LspPositionCodec(PositionCodec):
    """pygls's codec, except where a character is past its line's end: LSP says it means the
    line's end (before its ending); a line past the document's end means the end."""

    def position_from_client_units(
        self, lines: Sequence[str], position: types.Position
    ) -> ServerTextPosition:
        if not lines:
            return ServerTextPosition(0, 0)
        if position.line >= len(lines):
            return ServerTextPosition(len(lines) - 1, len(lines[-1]))
        content = line_content(lines[position.line])
        wanted = max(position.character, 0)
        if content.isascii():
            return ServerTextPosition(position.line, min(wanted, len(content)))
        units = 0
        for index, char in enumerate(content):
            if units >= wanted:
                return ServerTextPosition(position.line, index)
            units += self.impl.code_units_for_char(char)
        return ServerTextPosition(position.line, len(content))


class LspTextDocument(TextDocument):
    """A document whose lines end where LSP's do; its incremental edits splice the text at
    the range's offsets (a reversed range taken the right way round, as VS Code does)."""

    @property
    def lines(self) -> tuple[str, ...]:
        """Split once per version of the text: pygls splits again on every access, and a
        request reads the lines several times. The last few splits are kept, not one per
        open document (the lines of a text take several times its memory)."""
        source = self.source
        for text, lines in tuple(RECENT_SPLITS):  # a copy: a worker thread may split too
            if text is source:
                return lines
        lines = tuple(lsp_lines(source))
        RECENT_SPLITS.appendleft((source, lines))
        return lines

    def server_position_at_offset(self, offset: int) -> ServerTextPosition:
        """pygls's puts the end of a text without a final line ending on a line after the
        last, and fails on an empty text."""
        lines = self.lines
        remaining = max(offset, 0)
        for number, line in enumerate(lines):
            if remaining < len(line):
                return ServerTextPosition(number, remaining)
            remaining -= len(line)
        if lines and line_content(lines[-1]) == lines[-1]:
            return ServerTextPosition(len(lines) - 1, len(lines[-1]))
        return ServerTextPosition(len(lines), 0)

    def apply_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        if not (
            isinstance(change, types.TextDocumentContentChangePartial)
            and self._is_sync_kind_incremental
        ):
            super().apply_change(change)
            return
        lines = self.lines
        ends = sorted(
            offset_in(lines, self.position_codec.position_from_client_units(lines, at))
            for at in (change.range.start, change.range.end)
        )
        source = self.source
        # pygls keeps the text in `_source` and offers no setter
        self._source = source[: ends[0]] + change.text + source[ends[1] :]


def offset_in(lines: Sequence[str], position: ServerTextPosition) -> int:
    """The code-point offset of a position in code points."""
    return position.character + sum(map(len, lines[: position.line]))


class LspWorkspace(Workspace):
    """pygls's workspace, holding `LspTextDocument`s; an edit to a document that is not open
    is logged and ignored (pygls raises a KeyError naming its URI, which the user saw)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lsp_codec = LspPositionCodec(encoding=self.position_encoding)
        self.edits_started: dict[str, int] = {}
        """Per document URI, when the didChange being applied began (wall-clock ns), while
        tracing: the start of its `headstart.document.sync` span."""

    @classmethod
    def like(cls, workspace: Workspace) -> LspWorkspace:
        """A new workspace with the roots, folders and encoding of pygls's `workspace`
        (and its sync kind, which pygls keeps private)."""
        return cls(
            workspace.root_uri,
            workspace._sync_kind,
            list(workspace.folders.values()),
            workspace.position_encoding,
        )

    @property
    def position_codec(self) -> PositionCodec:
        return self._lsp_codec

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        """pygls's only way to choose the document class (a private method)."""
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._lsp_codec,
        )

    def update_text_document(
        self,
        text_doc: types.VersionedTextDocumentIdentifier,
        change: types.TextDocumentContentChangeEvent,
    ) -> None:
        if unquote(text_doc.uri) not in self.text_documents:
            log.warning("an edit to %s, which is not open, ignored (didOpen first)", text_doc.uri)
            return
        if tracing.enabled():
            self.edits_started.setdefault(text_doc.uri, time.time_ns())
        super().update_text_document(text_doc, change)


@dataclass(frozen=True, slots=True)
class Synced:
    """One didChange: when it began and ended being applied (wall-clock ns), and the
    document version it made (server.lsp.request_spans)."""

    start_ns: int
    end_ns: int
    version: int | None


def edit_started(workspace: Workspace, uri: str) -> int | None:
    """When the didChange just applied to `uri` began (wall-clock ns), while tracing."""
    if not isinstance(workspace, LspWorkspace):
        return None
    return workspace.edits_started.pop(uri, None)
