"""Similar code as candidates (`SimilarCode`): the 12-line chunks of the files around the
current one (`similar_files`: its related files, then those that import the same project
modules) that read most like the lines above the cursor by BM25
(`server.completion.similar`), as snippets of their own kind that compete only with each
other. Chunk indexes are made once per file version and merged into one pool per current
file; a search is memoised by the query terms the pool knows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from server.completion import similar as similar_code
from server.completion.context.files import ProjectFiles
from server.completion.context.lru import _Lru
from server.completion.context.model import Snippet

SIMILAR_FILES: Final = 16
"""Files whose chunks similar-code retrieval scores (`ContextBuilder.similar_files`)."""
SIMILAR_MAX_FILE_BYTES: Final = 300_000


@dataclass(frozen=True, slots=True)
class _SimilarPool:
    """A file's similar-code pool as merged, and what it was made from."""

    files: list[str]
    edits: int
    versions: tuple[tuple[str, str], ...]
    pool: similar_code.Pool


class SimilarCode(ProjectFiles):
    """The builder's similar-code search: which files, their chunk indexes and pools, and
    the hits as snippets."""

    _chunks: _Lru[tuple[str, str], similar_code.ChunkIndex]
    _similar_files: _Lru[tuple[int, int, str, str | None, frozenset[str]], list[str]]
    _pools: _Lru[tuple[str, str | None], _SimilarPool]
    _chunk_texts: _Lru[tuple[str, str, int, int], str]
    _hits: _Lru[tuple[frozenset[str], tuple[tuple[str, str], ...]], list[similar_code.Hit]]

    def similar(
        self, file_path: str, text: str, offset: int, language: str | None
    ) -> list[Snippet]:
        """Chunks of `similar_files` that read like the lines above `offset`, best first,
        as candidates of their own kind (`Snippet.similar`). Chunk indexes are made once
        per file version (`prepare` makes the pool's, so a build makes only those of
        files changed since), and the search is memoised by the pool's versions and the
        query terms the pool knows, so typing inside a word costs a few set lookups."""
        index = self.index
        if index is None:
            return []
        pool = self.similar_pool(file_path, language)
        if not pool.pool.files:
            return []
        dfs = similar_code.frequencies(similar_code.query_terms(text, offset), pool.pool)
        key = (frozenset(dfs), pool.versions)
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits.put(key, similar_code.search(dfs, pool.pool))
        snippets = []
        for hit in hits:
            record = index.records.get(hit.path)
            if record is None:
                continue
            chunk = hit.chunk
            where = (hit.path, record.digest, chunk.start, chunk.end)
            body = self._chunk_texts.get(where)
            if body is None:
                lines = self.file_lines(hit.path)
                if lines is None:
                    continue
                body = self._chunk_texts.put(
                    where, "\n".join(lines[chunk.start : chunk.end]) + "\n"
                )
            name = f"lines {chunk.start + 1}-{chunk.end}"
            snippets.append(
                Snippet(hit.path, body, chunk.start, hit.score, name, record.language, True)
            )
        return snippets

    def similar_files(self, file_path: str, language: str | None) -> list[str]:
        """Where similar code is looked for, at most SIMILAR_FILES files in `language` (the
        current file's: its record may not exist yet): its direct dependencies and
        `ProjectIndex.related` (what the definitions come from), then the files that
        import the same project modules, weighted by how few import each (call sites of
        the same APIs live there). Memoised while the file set and the imports hold."""
        index = self.index
        if index is None:
            return []
        records = index.records
        deps = index.graph.imports(file_path)
        key = (id(records), len(records), file_path, language, deps)
        known = self._similar_files.get(key)
        if known is not None:
            return known
        ranked = dict.fromkeys(self.related_files(file_path))
        weights: dict[str, float] = {}
        for dep in sorted(deps):
            importers = index.graph.imported_by(dep)
            for other in importers:
                weights[other] = weights.get(other, 0.0) + 1.0 / len(importers)
        ranked.update(dict.fromkeys(sorted(weights, key=lambda p: (-weights[p], p))))
        ranked.pop(file_path, None)
        files = []
        for path in ranked:
            candidate = records.get(path)
            if (
                candidate is not None
                and candidate.language == language
                and candidate.size <= SIMILAR_MAX_FILE_BYTES
            ):
                files.append(path)
                if len(files) == SIMILAR_FILES:
                    break
        return self._similar_files.put(key, files)

    def similar_pool(self, file_path: str, language: str | None) -> _SimilarPool:
        """The chunk indexes of `similar_files`, merged (`server.completion.similar.make_pool`) once
        per version of those files: checked by the index's edit count, then by their
        digests (an edit elsewhere, the current file's own, leaves the pool as it is)."""
        index = self.index
        assert index is not None
        files = self.similar_files(file_path, language)
        edits = index.edits
        key = (file_path, language)
        known = self._pools.get(key)
        if known is not None and known.files is files and known.edits == edits:
            return known
        members: list[tuple[str, similar_code.ChunkIndex]] = []
        versions = []
        for path in files:
            record = index.records.get(path)
            chunks = self.chunk_index(path)
            if record is not None and chunks is not None and chunks.chunks:
                members.append((path, chunks))
                versions.append((path, record.digest))
        if known is not None and known.versions == tuple(versions):
            made = known.pool
        else:
            made = similar_code.make_pool(members)
        return self._pools.put(key, _SimilarPool(files, edits, tuple(versions), made))

    def chunk_index(self, path: str) -> similar_code.ChunkIndex | None:
        """The chunks of `path`'s current version (`similar.chunk_index`), cached."""
        record = self._record(path)
        if record is None:
            return None
        key = (path, record.digest)
        cached = self._chunks.get(key)
        if cached is not None:
            return cached
        lines = self.file_lines(path)
        made = similar_code.chunk_index(lines) if lines is not None else similar_code.EMPTY
        return self._chunks.put(key, made)
