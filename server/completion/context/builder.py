"""`ContextBuilder`, a workspace's context builder: `build`, once per completion request
(analyse the cursor, gather the candidates and similar code, keep the chosen set steady,
pack them into the budget, keep the previous set over a stay in the document), and
`prepare`, which does ahead of a file's first keystroke what its builds would otherwise
wait for, down to rehearsing builds spread over the file. It makes the caches that the
parts it is built from use: the project's files (`files`), name resolution
(`resolution`), candidate gathering (`candidates`), similar code (`similar_chunks`), the
per-file memory of chosen snippets (`memory`) and the kept set (`keeping`)."""

from __future__ import annotations

import gc
import posixpath
from collections.abc import Mapping, Reversible
from typing import Final

from tree_sitter import Tree

from cache import memory
from cache.index import ProjectIndex
from cache.languages import language_for_name
from cache.model import Definition
from server.completion import similar as similar_code
from server.completion.context.candidates import CandidateRanking, _FileCandidates
from server.completion.context.definitions import CLASS_KINDS, _FileDefs
from server.completion.context.imported_names import (
    _imported_chains,
    _named_imports,
    _use_starts,
    _Uses,
)
from server.completion.context.keeping import SnippetKeeping
from server.completion.context.lru import _Lru
from server.completion.context.memory import _Memory
from server.completion.context.model import (
    Budget,
    Context,
    Count,
    Overhead,
    Snippet,
    Target,
    estimate_tokens,
)
from server.completion.context.near_duplicates import _lines_of, _tokens_of
from server.completion.context.packing import build_context, default_overhead
from server.completion.context.rendering import _Rendered, _rendered_key
from server.completion.context.resolution import _ImportedTarget, _ImportTargets, _Request
from server.completion.context.similar_chunks import SimilarCode, _SimilarPool
from server.completion.cursor import CursorInfo, analyse, python_attribute_types

REHEARSALS: Final = 12
"""Builds `prepare` rehearses, spread evenly over the file (the first at its top): the
first build at a random place in a file then finds more of what it reads made (0.86-0.92
per random build in lockstep), for ~20 ms more at open. A fixed number, not a time budget:
what the rehearsals leave in the memos can decide a later build's re-export answers (the
per-build lookup limit), so a budget would make contexts depend on the machine's speed."""
GC_THRESHOLDS: Final = (20_000, 20, 20)
"""Young collections every 20,000 net allocations instead of 700: a build keeps a few
dozen objects in its memos, so at 700 one build in thirty paid a collection (up to
1.7 ms); `prepare` freezes what it made, so a collection walks only what came since."""


class ContextBuilder(CandidateRanking, SimilarCode, SnippetKeeping):
    """Builds the context for each completion request of one workspace.

    `index` may be None while the workspace is still being indexed: the context is then
    the current file alone. `texts` are file texts already in memory (the cache queue's
    preloaded texts), read before the disk; `recent` are recently used paths, most recent
    last (the queue's `recent`). Both are read live, at every build.

    Not thread-safe for concurrent `build` calls on one instance beyond its caches; the
    server calls it from one thread (or under its lock)."""

    def __init__(
        self,
        index: ProjectIndex | None,
        texts: Mapping[str, str] | None = None,
        recent: Reversible[str] | None = None,
        cache_size: int = 4096,
    ) -> None:
        self.index = index
        self.texts: Mapping[str, str] = texts if texts is not None else {}
        self.recent = recent
        self._defs: _Lru[tuple[str, str], _FileDefs] = _Lru(cache_size)
        self._rendered: _Lru[tuple[str, str, str], _Rendered] = _Lru(cache_size)
        self._lines: _Lru[tuple[str, str], list[str]] = _Lru(256)
        self._short: _Lru[tuple[str, str], bool] = _Lru(cache_size)
        self._counts: _Lru[str, int] = _Lru(cache_size)
        self._count: Count | None = None
        self._directories: tuple[int, int, dict[str, list[str]]] | None = None
        self._memory: dict[str, _Memory] = {}
        self._module_files: _Lru[tuple[int, int, str, str, str | None], list[str]] = _Lru(
            cache_size
        )
        self._reexports: _Lru[
            tuple[int, int, str, str, tuple[str, ...]], tuple[Target | None, str | None]
        ] = _Lru(cache_size)
        """Re-exported name -> (where it is defined, that file's digest then)."""
        self._imported: _Lru[tuple[str, str | None, str, str], _ImportedTarget] = _Lru(cache_size)
        self._uses: _Lru[str, _Uses] = _Lru(64)
        self._import_targets: _Lru[str, _ImportTargets] = _Lru(64)
        self._file_candidates: _Lru[str, _FileCandidates] = _Lru(64)
        self._chunks: _Lru[tuple[str, str], similar_code.ChunkIndex] = _Lru(cache_size)
        self._similar_files: _Lru[tuple[int, int, str, str | None, frozenset[str]], list[str]] = (
            _Lru(256)
        )
        self._budget = Budget()
        """The latest build's (`prepare` rehearses a build with it)."""
        self._attribute_types: tuple[str, dict[str, tuple[str, ...]]] = ("", {})
        """The prepared file's text and `python_attribute_types` of it."""
        self._similar_wanted = True
        """Whether the latest build had a share for similar code (`prepare` chunks the
        pool only then: with completion.similarCodeShare 0 nothing needs chunks)."""
        self._related: _Lru[tuple[str, int, int], list[str]] = _Lru(256)
        self._hops: _Lru[tuple[str, int, int], dict[str, int]] = _Lru(256)
        self._pools: _Lru[tuple[str, str | None], _SimilarPool] = _Lru(64)
        self._chunk_texts: _Lru[tuple[str, str, int, int], str] = _Lru(cache_size)
        """A chunk's text, the same `str` at each hit: what the budget memoises by text
        (tokens, words, lines) is then found by its cached hash."""
        self._hits: _Lru[
            tuple[frozenset[str], tuple[tuple[str, str], ...]], list[similar_code.Hit]
        ] = _Lru(256)

    # public API ---------------------------------------------------------------------------

    def build(
        self,
        file_path: str,
        text: str,
        offset: int,
        language: str | None,
        budget: Budget | None = None,
        count: Count = estimate_tokens,
        overhead: Overhead | None = None,
        tree: Tree | None = None,
    ) -> Context:
        """The context for the cursor at `offset` (a `str` index) of `text`, the current
        content of `file_path` (as the index names it: relative, forward slashes).
        `tree`, the whole file's tree of `text` where the caller holds one, spares the
        cursor analysis its parse (`server.completion.cursor.analyse`)."""
        budget = budget or Budget()
        self._budget = budget
        cursor = analyse(text, offset, language, tree=tree)
        line_start = max(0, min(offset, len(text))) - len(cursor.line_prefix)
        candidates = self.candidates(
            file_path, text, cursor, limit=2 * budget.max_snippets, line_start=line_start
        )
        self._similar_wanted = budget.similar_cap > 0
        if self._similar_wanted:
            query_end = offset if budget.similar_cursor_line else line_start
            candidates += self.similar(file_path, text, query_end, cursor.language)
        candidates = self._with_memory(file_path, cursor, candidates)
        if count != self._count:  # memoised counts belong to one tokenizer
            self._counts.clear()
            self._count = count
        context = build_context(
            text[:offset],
            text[offset:],
            candidates,
            budget,
            self._memo_count,
            overhead or default_overhead(count),
            names=tuple(reference.dotted for reference in cursor.references),
            cursor=cursor,
            file_path=file_path,
            language=cursor.language,
            window_first_line=self._window_first_line(file_path, budget),
        )
        if budget.keep_snippets:
            context = self._kept_or_fresh(
                context,
                file_path,
                text,
                offset,
                budget,
                self._memo_count,
                overhead or default_overhead(count),
                cursor,
            )
        self._remember(file_path, context.snippets)
        self._keep_window(file_path, context, cursor, budget)
        return context

    def prepare(self, file_path: str) -> int:
        """Do ahead of the first keystroke in `file_path` what its builds would otherwise
        wait for, so that they find the outlines (made on demand) parsed and the snippets
        rendered: render its related files; resolve the names it imports (which every
        build ranks, `_imported_names`) and the dotted names that start with one; walk
        the base classes of the classes among them and of its own (where inherited
        members are looked up). Call it where the cache queue is activated, off the
        request path; how many snippets were rendered anew. (It also sets the process's
        collection thresholds, `GC_THRESHOLDS`.)"""
        index = self.index
        if index is None:
            return 0
        rendered = sum(self._render_ahead(path, None) for path in self.related_files(file_path))
        record = index.records.get(file_path)
        language = (
            record.language
            if record is not None
            else language_for_name(posixpath.basename(file_path))
        )
        if self._similar_wanted:
            # The pool and the chunk indexes it merges; and the lines of its files, which
            # hits are cut from (fewer lines than chunk indexes are cached: a hit would
            # read its file again).
            for path in self.similar_pool(file_path, language).files:
                self.file_lines(path)
        text = self._text_of(file_path) if record is not None else None
        if record is None or text is None:
            return rendered
        cursor = analyse(text, 0, record.language)
        if record.language == "python":
            self._attribute_types = (text, python_attribute_types(text))
        named = _named_imports(cursor.imports)
        names = frozenset(local for local, _ in named)
        self._uses.put(file_path, _Uses(text, names, _use_starts(text, names)))
        found = [
            self.imported_target(index, file_path, text, cursor, binding) for _, binding in named
        ]
        for chain in _imported_chains(text, cursor.imports):  # `models.CharField`, ...
            found.append(self._warming(index, file_path, text, cursor).resolve(chain, 0))
        own = self.file_defs(file_path)  # re-exports may lead back to it
        if own is not None:
            found.extend(Target(file_path, d) for d in own.by_name.values())
        for target in found:
            if target is None:
                continue
            if target.path != file_path:
                rendered += self._render_ahead(*self._shown(target))
            cls = target.definition
            defs = self.file_defs(target.path) if cls and cls.kind in CLASS_KINDS else None
            if cls is not None and defs is not None:  # a member no class has: every base
                self._warming(index, file_path, text, cursor)._inherited(
                    target.path, cls, defs, ("",), 1
                )
        self._rehearse(file_path, text, record.language)
        # What was made here is kept: collect now and freeze what is left (moved out of
        # the collected generations), or builds pay for it: young collections cost a
        # 3-5 ms pause in one first build of ten on /tmp/bigws, and full ones walking the
        # caches (outlines, rendered snippets, chunk indexes) 20-110 ms in 3 builds of
        # 1,000. Since the last prepare froze the rest, a full collection here walks only
        # what was made since (p50 1.7 ms), so no cyclic garbage is frozen with it. (What
        # is frozen alive and later dies in a reference cycle is never collected; the
        # caches hold acyclic records, snippets and outlines, freed by reference counts;
        # what else was frozen, the requests in flight, `memory.freeze` collects later.)
        memory.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        return rendered

    def _rehearse(self, file_path: str, text: str, language: str | None) -> None:
        """REHEARSALS builds spread over the file, as the latest build was budgeted and
        counted, their choices then forgotten: they make what the file's builds read and
        the rest of `prepare` does not (where its imported names' uses are, the names its
        code uses resolved and rendered, the near-duplicate answers between the snippets
        they rank first), so the first build at a place in a file is not the slowest (p50
        3.2 against 2.0 ms with one rehearsal at the top). Memos only: the contexts of the
        builds that follow are the same (on the 360 eval tasks, every prompt)."""
        wanted = self._similar_wanted
        try:
            count = self._count or estimate_tokens
            for part in range(REHEARSALS):
                offset = len(text) * part // REHEARSALS
                self.build(file_path, text, offset, language, self._budget, count)
        finally:
            self._similar_wanted = wanted
            self.forget(file_path)

    def _warming(
        self, index: ProjectIndex, file_path: str, text: str, cursor: CursorInfo
    ) -> _Request:
        """A request that only makes outlines ahead: what a build finds on the way depends
        on how deep it is, so its answers are not kept across builds."""
        request = _Request(self, index, file_path, text, cursor)
        request.warming = True
        return request

    # internals ----------------------------------------------------------------------------

    def _memo_count(self, text: str) -> int:
        if len(text) > 4096 or self._count is None:
            return (self._count or estimate_tokens)(text)
        cached = self._counts.get(text)
        if cached is None:
            cached = self._counts.put(text, self._count(text))
        return cached

    def _render_ahead(self, path: str, definition: Definition | None) -> int:
        """1 if a snippet was rendered now (it was not cached), else 0. Its tokens and
        lines, which the budget compares, are made with it."""
        record = self._record(path)
        if record is None or self._rendered.get(_rendered_key(record, definition)) is not None:
            return 0
        rendered = self.render(path, definition)
        if rendered is None:
            return 0
        snippet = Snippet(path, rendered.text, rendered.start_line, 0.0, language=rendered.language)
        _tokens_of(snippet)
        _lines_of(snippet)
        return 1
