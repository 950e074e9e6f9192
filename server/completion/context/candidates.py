"""Candidate gathering (`CandidateRanking`): the snippets that may go into a prompt, before
the budget. The definitions of the names referenced at the cursor, the names the file
imports and its related files (as outlines), scored by how directly they answer a name
(the object before the dot first, then the name being typed and the function being
called, then the current statement, then the lines above), plus the standing of their
file (graph distance, recency); only the best are rendered. What no cursor changes (the
related files, where the imported names are defined) is kept per file while its imports
and the index hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from cache.model import Definition
from server.completion.context.imported_names import _imported_names, _Uses
from server.completion.context.lru import _Lru
from server.completion.context.model import Snippet, Target
from server.completion.context.rendering import _Rendered
from server.completion.context.resolution import ImportResolver, _ImportTargets, _Request
from server.completion.cursor import CursorInfo, Tier

_DIRECTNESS: Final = {Tier.TARGET: 4, Tier.TYPED: 3, Tier.STATEMENT: 2, Tier.ABOVE: 1}


@dataclass(slots=True)
class _Proto:
    """A candidate before its score: what shows a target (`ContextBuilder._shown`), its
    key (path, qualified name), and what its file's standing adds to any score."""

    key: tuple[str, str]
    definition: Definition | None
    line: int
    standing: int
    rendered: _Rendered | None = None
    """Its snippet text once rendered: a file's standing candidates are ranked again at
    every build, while the file's `_FileCandidates` hold (no record changed since)."""


@dataclass(slots=True)
class _FileCandidates:
    """A file's candidates that no cursor changes, before their scores: its related files,
    and where each name it imports is defined (filled as names are ranked). Kept while
    its `_ImportTargets` (its imports, dependencies and the index) and the recently used
    files (which the standing reads) are the same: a test file ranks fifty imported
    names and forty related files at every build, and making each candidate anew was a
    third of the time its candidates took."""

    targets: _ImportTargets
    recent: tuple[str, ...]
    related: list[_Proto]
    imported: dict[str, list[_Proto]] = field(default_factory=dict)


class CandidateRanking(ImportResolver):
    """The builder's candidates for a cursor, and the memo of each file's standing ones."""

    _uses: _Lru[str, _Uses]
    _file_candidates: _Lru[str, _FileCandidates]

    def candidates(
        self,
        file_path: str,
        text: str,
        cursor: CursorInfo,
        limit: int = 24,
        *,
        line_start: int | None = None,
    ) -> list[Snippet]:
        """The `limit` best snippets for this cursor, best first (before the budget).
        `line_start`, the offset of the cursor's line, saves finding it again.

        Scores do not depend on the rendering, so only the best `limit` are rendered."""
        index = self.index
        if index is None:
            return []
        request = _Request(self, index, file_path, text, cursor)
        scores: dict[tuple[str, str], float] = {}
        protos: dict[tuple[str, str], _Proto] = {}
        for rank, reference in enumerate(cursor.references):
            directness = _DIRECTNESS.get(reference.tier, 1)
            for target in request.targets(reference):
                proto = self._proto(request, target)
                if proto is not None:
                    _add(scores, protos, proto, directness * 100 - min(rank, 90) * 0.01)
        standing = self.file_candidates(request)
        uses = self._uses.get(file_path)
        for local, score in _imported_names(text, cursor, line_start, uses):
            shadowed = request.shadowed(local)
            found = None if shadowed else standing.imported.get(local)
            if found is None:
                found = [
                    proto
                    for target in request.imported(local)
                    if (proto := self._proto(request, target)) is not None
                ]
                if not shadowed:
                    standing.imported[local] = found
            for proto in found:
                _add(scores, protos, proto, score)
        for proto in standing.related:
            _add(scores, protos, proto, 0.0)
        ranked = sorted(scores, key=lambda key: (-scores[key], key[0], protos[key].line))
        snippets = []
        for key in ranked:
            proto = protos[key]
            rendered = proto.rendered
            if rendered is None:
                rendered = proto.rendered = self.render(key[0], proto.definition)
            if rendered is not None and not rendered.blank:
                snippets.append(
                    Snippet(
                        key[0],
                        rendered.text,
                        rendered.start_line,
                        scores[key],
                        key[1],
                        rendered.language,
                    )
                )
                if len(snippets) >= limit:
                    break
        return snippets

    def file_candidates(self, request: _Request) -> _FileCandidates:
        """The memo of the request's file's standing candidates (`_FileCandidates`)."""
        targets = request.import_targets()
        recent = request.recent_files()
        known = self._file_candidates.get(request.file_path)
        if known is not None and known.targets is targets and known.recent == recent:
            return known
        related = [
            proto
            for path in request.related_files()
            if (proto := self._proto(request, Target(path, None))) is not None
        ]
        return self._file_candidates.put(
            request.file_path, _FileCandidates(targets, recent, related)
        )

    def _proto(self, request: _Request, target: Target) -> _Proto | None:
        """The candidate that shows `target`, unscored; None in the current file (the
        prompt shows that file already)."""
        path = target.path
        if path == request.file_path:
            return None
        _, definition = self._shown(target)
        name = definition.qualified_name if definition is not None else ""
        line = definition.start_line if definition is not None else 0
        return _Proto((path, name), definition, line, request.standing(path))

    def _shown(self, target: Target) -> tuple[str, Definition | None]:
        """What shows a target: its definition, or the whole file for a package or a
        short file (its definitions are in it)."""
        definition = target.definition
        if definition is not None and (definition.kind == "package" or self._is_short(target.path)):
            definition = None
        return target.path, definition


def _add(
    scores: dict[tuple[str, str], float],
    protos: dict[tuple[str, str], _Proto],
    proto: _Proto,
    base: float,
) -> None:
    """Rank `proto` at `base` plus its standing, or at the best score it was given."""
    key = proto.key
    score = base + proto.standing
    known = scores.get(key)
    if known is None:
        scores[key] = score
        protos[key] = proto
    elif score > known:
        scores[key] = score
