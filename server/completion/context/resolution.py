"""The context of one completion: which code from other files goes into the prompt.

For a document and a cursor (`server.completion.cursor.analyse`), the builder

1. **resolves** the names referenced near the cursor to definitions in other project
   files, through the file's imports as written (aliases, relative imports, `module.attr`
   chains, `__init__` re-exports followed to the defining file, `Class.member` chains) and
   through the local types (`x = Warehouse()`, `repo: Repo`, `self.repo = Repo()`,
   `make().save` through a function's return annotation);
2. adds **related files** — direct dependencies, then `ProjectIndex.related` (same
   package, second hops, importers) — as outlines;
3. **ranks** every candidate snippet by how directly it answers a name (the object before
   the dot being completed first, then the name being typed and the function being
   called, then the current statement, then the lines above), then by graph distance
   (direct dependency > two hops > same directory > importer), then by recency;
4. adds **similar code** (`server.completion.similar`): the 12-line chunks of related files (the
   same files, plus those that import the same project modules) that read most like the
   last lines above the cursor by BM25 — call sites showing how the APIs being called
   are called — as candidates that compete only with each other, for a share of their
   own (`Budget.similar_share`, 0 turns them off);
5. **fits** the budget greedily by score, skipping near-duplicates (Jaccard >= 0.85 of the
   sets of tree-sitter leaf tokens) and snippets already visible in the current file's
   window (and chunks that a chosen snippet of their file already shows), then renders
   the chosen ones in a **stable order** (below), and trims the prefix from the top and
   the suffix from the bottom at line boundaries.

Snippets: a definition as its source when short (<= SHORT_LINES lines), otherwise its
signature and docstring (a class: header, docstring and member signatures); a related
file as its outline (or whole, when short). Rendered texts are cached per file digest, so a
keystroke's build re-renders nothing that did not change.

Render order (for vLLM's prefix cache): file outlines first, then definitions, then
similar code (it follows the lines being typed, so it changes most); within each, by
path, then line. The order depends only on which snippets were chosen, never on
their scores, so consecutive keystrokes that choose the same set render the same bytes;
file outlines depend only on the active file, so they change least and come first, and the
definitions that answer the names at the cursor sit nearest to the current file, where the
model attends most. The prefix's first line moves in steps of `Budget.prefix_step_lines`
lines, so typing at the end of a long prefix does not shift its start on every keystroke.
The chosen set is kept steady too: what was chosen for a file stays a (low-scored)
candidate for STICKY_BUILDS builds while the cursor stays in the same function, so a
half-typed word or a just-finished statement does not swap snippets in and out; words typed
in comments and strings are not names; a bare word being typed never pulls in a whole
module. Similar-code chunks are kept the same way, their search memoised by the query
terms the chunks know (a half-typed word changes nothing), a chosen chunk winning
near-ties and fading out when no longer found. On /tmp/bigws this keeps the shared prompt
prefix between keystrokes at 90-93%.

State: the builder is per workspace and keeps per-file caches (outlines arranged for
lookups, rendered snippets, token sets, similar-code chunk indexes, all keyed by file
digest) and the per-file memory above (`forget` drops it), and where each name a file
imports is defined (it depends on the import, not on the cursor). `prepare(path)` does
ahead of a file's first keystroke what its builds would otherwise wait for: outlines are
made on first use, so it resolves the names the file imports and the dotted names that
start with one, walks the base classes they lead to, renders related files and
definitions, chunks the files similar code is looked for in, and indexes which lines use
which imported name; the server calls it where it activates the cache queue. Only answers
that do not depend on the cursor are kept from it, so a build chooses what it would
without it.

The budget counts with the `count` it is given (the model's tokenizer in the server; the
chars/4 `estimate_tokens` by default) and includes each snippet's rendering overhead
(`overhead(path)`: the template's file marker and path). `Context.tokens` is the sum
that never exceeds `Budget.total - Budget.reserved`; the template's fixed parts (repo
header, FIM markers) are the caller's `reserved`.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import logging
import posixpath
from collections.abc import Callable, Mapping, Reversible
from dataclasses import dataclass, field
from typing import Final

from tree_sitter import Tree

from cache.index import ProjectIndex
from cache.languages import language_for_name
from cache.model import Definition, FileRecord
from server.completion import similar as similar_code
from server.completion.context.definitions import (
    _ALIASED,
    _NAMED,
    CLASS_KINDS,
    _bases,
    _FileDefs,
    _return_type,
    _variable_type,
)
from server.completion.context.imported_names import (
    _imported_chains,
    _imported_names,
    _named_imports,
    _use_starts,
    _Uses,
)
from server.completion.context.lru import V, _Lru
from server.completion.context.model import (
    Budget,
    Context,
    Count,
    Overhead,
    Snippet,
    Target,
    estimate_tokens,
)
from server.completion.context.module_files import (
    _SAME_PACKAGE,
    _python_module_files,
    _stem,
    _ts_files,
)
from server.completion.context.near_duplicates import _lines_of, _tokens_of
from server.completion.context.packing import build_context, default_overhead
from server.completion.context.rendering import (
    SHORT_CHARS,
    _is_short_file,
    _render_definition,
    _render_file,
    _Rendered,
    _rendered_key,
)
from server.completion.cursor import (
    CALL,
    Binding,
    CursorInfo,
    Imports,
    Reference,
    Tier,
    analyse,
    attribute_type,
    python_attribute_types,
)

log = logging.getLogger(__name__)


RELATED_FILES: Final = 8
MAX_DEPTH: Final = 4
"""How many imports, re-exports and types one name is followed through."""
MAX_LOOKUPS: Final = 200
"""Re-export lookups per build: star imports of star imports (networkx's packages) could
otherwise cost tens of milliseconds for a name that is not in the project at all."""
STICKY_BUILDS: Final = 40
"""How many builds a chosen snippet stays a candidate after nothing points at it."""
STICKY_SCORE: Final = 60.0
"""Its score then: above related files (< 50), below any name near the cursor (>= 100)."""
STICKY_BONUS: Final = 5.0
SIMILAR_FILES: Final = 16
"""Files whose chunks similar-code retrieval scores (`ContextBuilder.similar_files`)."""
SIMILAR_MAX_FILE_BYTES: Final = 300_000
SIMILAR_STICKY_BONUS: Final = 1.5
"""A similar chunk chosen last time and found again: its score times this (BM25 scores
of the best chunks are often within a few percent of each other)."""
SIMILAR_FADE: Final = 0.7
"""A chosen chunk the query no longer finds: its score when last found times this (it
stays while nothing clearly better turns up)."""
_DIRECTNESS: Final = {Tier.TARGET: 4, Tier.TYPED: 3, Tier.STATEMENT: 2, Tier.ABOVE: 1}


# --- small caches -----------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class _SimilarPool:
    """A file's similar-code pool as merged, and what it was made from."""

    files: list[str]
    edits: int
    versions: tuple[tuple[str, str], ...]
    pool: similar_code.Pool


@dataclass(frozen=True, slots=True)
class _ImportedTarget:
    """Where one imported name was found, and what the answer depended on."""

    target: Target | None
    generation: tuple[int, int]
    """The index's file set then (`id` and size of its records, as the other memos)."""
    deps: frozenset[str]
    """The importing file's dependencies then (they pick the file of an absolute import)."""
    files: tuple[tuple[str, str | None], ...]
    """The files read on the way, with their digests then."""
    edits: int
    """`ProjectIndex.edits` when they were last read: while it stays, nothing changed (a
    file may import dozens of names, each read through ~20 files of re-exports)."""


@dataclass(slots=True)
class _ImportTargets:
    """Where each name a file imports is defined, as `ContextBuilder.imported_target`
    found it, while the file's imports (the same `Imports`), its dependencies and the
    index stay the same: checked once a build, not once a name (a test file imports
    dozens of names, and every build ranks them all)."""

    imports: Imports
    generation: tuple[int, int]
    deps: frozenset[str]
    edits: int
    targets: dict[str, Target | None] = field(default_factory=dict)


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


@dataclass(slots=True)
class _Memory:
    """The snippets lately chosen for one file, while the cursor stays in one scope."""

    scope: tuple[str, ...]
    chosen: dict[tuple[str, str], tuple[Snippet, int]] = field(default_factory=dict)
    """(path, name) -> the snippet and how many more builds it is remembered for."""
    last: frozenset[tuple[str, str]] = frozenset()
    """(path, name) of the snippets the latest build put in the prompt."""
    faded: set[tuple[str, str]] = field(default_factory=set)
    """Similar-code chunks the latest build had only from here, at a faded score."""


# --- the builder ------------------------------------------------------------------------------


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


class ContextBuilder:
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
            candidates += self.similar(file_path, text, offset, cursor.language)
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
        )
        self._remember(file_path, context.snippets)
        return context

    def forget(self, file_path: str) -> None:
        """Drop what was chosen for `file_path` (its document closed)."""
        self._memory.pop(file_path, None)

    def shown_in_context(self, file_path: str, path: str, qualified_name: str) -> str | None:
        """How the latest completion prompt for `file_path` shows the definition
        `qualified_name` of `path` ("" for the file itself): "definition" (its own
        snippet, or its class's), "file" (the file whole or as an outline), or None (not
        at all). Hovers say so, so users can see what the model was given."""
        memory = self._memory.get(file_path)
        if memory is None:
            return None
        parts = qualified_name.split(".") if qualified_name else []
        for end in range(len(parts), 0, -1):
            if (path, ".".join(parts[:end])) in memory.last:
                return "definition"
        return "file" if (path, "") in memory.last else None

    def _with_memory(
        self, file_path: str, cursor: CursorInfo, candidates: list[Snippet]
    ) -> list[Snippet]:
        """Candidates plus the snippets chosen lately for this file that nothing points at
        now. A name that is half-typed, or a statement just finished, would otherwise
        swap snippets in and out on every key and cost the prompt its cached prefix. The
        remembered ones score just above related files, so fresh references still win the
        budget; those chosen last time get a small bonus to win near-ties. Similar-code
        chunks compete only with each other: a remembered one gets a bonus when found
        again and fades when not (SIMILAR_STICKY_BONUS, SIMILAR_FADE). Moving to
        another function forgets them."""
        memory = self._memory.get(file_path)
        scope = tuple(s.name for s in cursor.scopes)
        if memory is None or memory.scope != scope:
            self._memory[file_path] = _Memory(scope)
            return candidates
        out = []
        for snippet in candidates:
            key = (snippet.path, snippet.name)
            if key in memory.chosen:
                if snippet.similar:
                    score = snippet.score * SIMILAR_STICKY_BONUS
                else:
                    score = snippet.score + STICKY_BONUS
                snippet = snippet.with_score(score)
            out.append(snippet)
        present = {(snippet.path, snippet.name) for snippet in candidates}
        memory.faded = set()
        for key, (snippet, _) in memory.chosen.items():
            if key not in present:
                if snippet.similar:
                    score = snippet.score * SIMILAR_FADE
                    memory.faded.add(key)
                else:
                    score = min(snippet.score, STICKY_SCORE)
                out.append(snippet.with_score(score))
        return out

    def _remember(self, file_path: str, chosen: tuple[Snippet, ...]) -> None:
        memory = self._memory.get(file_path)
        if memory is None:
            return
        kept = {k: (s, ttl - 1) for k, (s, ttl) in memory.chosen.items() if ttl > 1}
        chosen = tuple(snippet for snippet in chosen if not snippet.head)  # not a candidate
        for snippet in chosen:
            key = (snippet.path, snippet.name)
            if key in memory.faded:  # its score as last found, or the fading compounds
                snippet = memory.chosen[key][0]
            kept[key] = (snippet, STICKY_BUILDS)
        memory.chosen = kept
        memory.last = frozenset((snippet.path, snippet.name) for snippet in chosen)
        while len(self._memory) > 64:
            del self._memory[next(iter(self._memory))]

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
        # caches hold acyclic records, snippets and outlines, freed by reference counts.)
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        return rendered

    def attribute_types(self, text: str) -> dict[str, tuple[str, ...]] | None:
        """`python_attribute_types` of `text` if it is the prepared file's, as opened: its
        builds then look attributes up instead of searching the text for each."""
        known, types = self._attribute_types
        return types if text and (text is known or text == known) else None

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

    def import_targets(
        self, index: ProjectIndex, file_path: str, imports: Imports
    ) -> _ImportTargets:
        """The memo of where `file_path`'s imported names are defined, kept while its
        imports, its dependencies and the index are as they were (`_ImportTargets`)."""
        generation = (id(index.records), len(index.records))
        deps = index.graph.imports(file_path)
        known = self._import_targets.get(file_path)
        if (
            known is not None
            and known.imports is imports
            and known.generation == generation
            and known.edits == index.edits
            and (known.deps is deps or known.deps == deps)
        ):
            return known
        return self._import_targets.put(
            file_path, _ImportTargets(imports, generation, deps, index.edits)
        )

    def imported_target(
        self, index: ProjectIndex, file_path: str, text: str, cursor: CursorInfo, binding: Binding
    ) -> Target | None:
        """Where the name `binding` imports into `file_path` is defined, found as a
        request of its own would (with its own re-export lookups), and memoised: it
        depends on the import, not on the cursor, and a file may import hundreds of names
        that every keystroke ranks. The memo holds while the file set, the file's
        dependencies and the files read on the way stay the same."""
        records, edits = index.records, index.edits  # read first: a later edit voids it
        generation = (id(records), len(records))
        deps = index.graph.imports(file_path)
        key = (file_path, cursor.language, binding.module, binding.name or "")
        known = self._imported.get(key)
        if (
            known is not None
            and known.generation == generation
            and (known.deps is deps or known.deps == deps)
        ):
            if known.edits == edits:  # no record changed since: the files read still hold
                return known.target
            if all(_digest(records, path) == digest for path, digest in known.files):
                self._imported.put(key, dataclasses.replace(known, edits=edits))
                return known.target
        request = _Request(self, index, file_path, text, cursor)
        request.read = {}
        parts = tuple(binding.name.split(".")) if binding.name else ()
        target = request.in_module(binding.module, parts, file_path, 1)
        if target is not None:
            request.read.setdefault(target.path, _digest(records, target.path))
        self._imported.put(
            key, _ImportedTarget(target, generation, deps, tuple(request.read.items()), edits)
        )
        return target

    def resolve(
        self, file_path: str, text: str, cursor: CursorInfo, chain: tuple[str, ...]
    ) -> Target | None:
        """Where `chain`, as written at this cursor, is defined (None: not in the project)."""
        if self.index is None:
            return None
        return _Request(self, self.index, file_path, text, cursor).resolve(chain, 0)

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

    # internals ----------------------------------------------------------------------------

    def _memo_count(self, text: str) -> int:
        if len(text) > 4096 or self._count is None:
            return (self._count or estimate_tokens)(text)
        cached = self._counts.get(text)
        if cached is None:
            cached = self._counts.put(text, self._count(text))
        return cached

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

    def _record(self, path: str) -> FileRecord | None:
        """The index's record of `path`; None without an index or for a file not in it."""
        return self.index.records.get(path) if self.index is not None else None

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
        return self._lines.put(key, text.split("\n"))

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
        return self._rendered.put(key, _Rendered(text, start, defs.language, not text.strip()))

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


class _Request:
    """Resolution for one build: the current file, its cursor, its dependencies."""

    def __init__(
        self,
        builder: ContextBuilder,
        index: ProjectIndex,
        file_path: str,
        text: str,
        cursor: CursorInfo,
    ) -> None:
        self.builder = builder
        self.index = index
        self.file_path = file_path
        self.text = text
        self.cursor = cursor
        self.language = cursor.language
        self.directory = posixpath.dirname(file_path)
        self.deps = index.graph.imports(file_path)
        self._hops: dict[str, int] | None = None
        self._importers: frozenset[str] | None = None
        self._recency: dict[str, int] | None = None
        self._recent: tuple[str, ...] | None = None
        self._standing: dict[str, int] = {}
        self._attribute_types: dict[str, tuple[str, ...]] = {}
        self._imported: dict[tuple[str, tuple[str, ...]], Target | None] = {}
        self._import_targets: _ImportTargets | None = None
        self._lookups = 0
        self.read: dict[str, str | None] | None = None
        """When a dict: every file whose definitions were looked at, with its digest."""
        self.warming = False
        """Only making outlines ahead (`ContextBuilder._warming`)."""

    # ranking inputs ---------------------------------------------------------------------

    def standing(self, path: str) -> int:
        """What `path` adds to a candidate's score: its `distance` (tens) and `recency`;
        memoised, as a build adds a hundred candidates from a few dozen files."""
        known = self._standing.get(path)
        if known is None:
            known = self._standing[path] = self.distance(path) * 10 + self.recency(path)
        return known

    def distance(self, path: str) -> int:
        """4 direct dependency, 3 two hops, 2 same directory, 1 importer, 0 otherwise."""
        if path in self.deps:
            return 4
        if self._hops is None:
            self._hops = self.builder.hops(self.file_path)
        if self._hops.get(path) == 2:
            return 3
        if posixpath.dirname(path) == self.directory:
            return 2
        if self._importers is None:
            self._importers = self.index.graph.imported_by(self.file_path)
        return 1 if path in self._importers else 0

    def recency(self, path: str) -> int:
        if self._recency is None:
            self._recency = {p: 9 - rank for rank, p in enumerate(self.recent_files())}
        return self._recency.get(path, 0)

    def recent_files(self) -> tuple[str, ...]:
        """The nine files used most recently but this one, newest first."""
        if self._recent is None:
            recent = self.builder.recent
            newest = (p for p in reversed(recent) if p != self.file_path) if recent else ()
            self._recent = tuple(itertools.islice(newest, 9))
        return self._recent

    def related_files(self) -> list[str]:
        return self.builder.related_files(self.file_path)

    # names -> definitions -----------------------------------------------------------------

    def targets(self, reference: Reference) -> list[Target]:
        """What one reference points at. The word being typed also matches the names
        imported from modules that start with it; it never stands for a whole module (a
        module's outline answers `name.`, and the word may be on its way to another:
        `re` to `return`)."""
        chain = reference.chain
        typing = reference.tier == Tier.TYPED and chain == (self.cursor.partial,)
        found = self.resolve(chain, 0)
        if found is not None and not (typing and found.definition is None):
            return [found]
        if typing and len(chain[0]) >= 3:
            bindings = self.cursor.imports.bindings
            matches = sorted(
                n for n, b in bindings.items() if b.name is not None and n.startswith(chain[0])
            )
            resolved = [self.resolve((n,), 0) for n in matches[:2]]
            return [t for t in resolved if t is not None and t.definition is not None]
        return []

    def imported(self, local: str) -> list[Target]:
        """`targets` of a bare name the file imports: the builder's memo
        (`ContextBuilder.imported_target`) answers, unless a local type at the cursor
        shadows the name."""
        binding = self.cursor.imports.bindings.get(local)
        if binding is None or not binding.name or self.shadowed(local):
            return self.targets(Reference((local,), Tier.ABOVE, self.cursor.line))
        known = self.import_targets().targets
        if local in known:
            found = known[local]
        else:
            found = known[local] = self.builder.imported_target(
                self.index, self.file_path, self.text, self.cursor, binding
            )
        return [found] if found is not None else []

    def shadowed(self, local: str) -> bool:
        """Whether, at this cursor, `local` is not the name the file imports: a local
        type says it is something else, or it is the instance itself."""
        local_type = self.cursor.types.get(local)
        return local in ("self", "this", "cls") or bool(local_type and local_type[0] != local)

    def import_targets(self) -> _ImportTargets:
        """The builder's memo of where this file's imported names are defined."""
        if self._import_targets is None:
            self._import_targets = self.builder.import_targets(
                self.index, self.file_path, self.cursor.imports
            )
        return self._import_targets

    def resolve(self, chain: tuple[str, ...], depth: int) -> Target | None:
        if not chain or depth > MAX_DEPTH:
            return None
        cursor = self.cursor
        head = chain[0]
        if head in ("self", "this", "cls"):
            if len(chain) > 1:
                return self._resolve_self(chain, depth)
            for base in self.cursor.bases:  # `self.`: the members it inherits
                found = self.resolve(base, depth + 1)
                if found is not None:
                    return found
            return None
        local_type = cursor.types.get(head)
        if local_type and local_type[0] != head:
            return self.resolve((*local_type, *chain[1:]), depth + 1)
        bindings = cursor.imports.bindings
        for end in range(len(chain), 0, -1):
            key = ".".join(chain[:end])
            binding = bindings.get(key) if CALL not in chain[:end] else None
            if binding is None:
                continue
            rest = chain[end:]
            parts = (*binding.name.split("."), *rest) if binding.name else rest
            return self.in_module(binding.module, parts, self.file_path, depth + 1)
        for module in cursor.imports.star:
            found = self.in_module(module, chain, self.file_path, depth + 1)
            if found is not None and found.definition is not None:
                return found
        if self.language in ("go", "java", "rust"):  # the package's other files see each other
            for path in self.builder.directories().get(self.directory, []):
                if path != self.file_path and path.endswith(_SAME_PACKAGE.get(self.language, "")):
                    found = self.in_file(path, chain, depth + 1, follow_imports=False)
                    if found is not None:
                        return found
        return None

    def _resolve_self(self, chain: tuple[str, ...], depth: int) -> Target | None:
        head, attribute = chain[0], chain[1]
        declared = self.cursor.types.get(f"{head}.{attribute}")
        if not declared:
            python = self.language == "python"
            prepared = self.builder.attribute_types(self.text) if python else None
            if prepared is not None:
                declared = prepared.get(attribute, ())
            else:
                if attribute not in self._attribute_types:
                    self._attribute_types[attribute] = attribute_type(
                        self.text, attribute, self.language
                    )
                declared = self._attribute_types[attribute]
        if declared:
            return self.resolve((*declared, *chain[2:]), depth + 1)
        for base in self.cursor.bases:  # an inherited member
            found = self.resolve((*base, *chain[1:]), depth + 1)
            if found is not None:
                return found
        return None

    def in_module(
        self, module: str, parts: tuple[str, ...], from_path: str, depth: int
    ) -> Target | None:
        """`parts` looked up in the module `module` as imported by `from_path`."""
        if depth > MAX_DEPTH:
            return None
        language = self._language_of(from_path)
        files = self.module_files(module, from_path, language)
        for path in files:
            found = self.in_file(path, parts, depth)
            if found is not None:
                return found
        if language == "python" and parts and parts[0] != CALL:  # a submodule
            submodule = module + parts[0] if module.endswith(".") else f"{module}.{parts[0]}"
            if self.module_files(submodule, from_path, language):
                return self.in_module(submodule, parts[1:], from_path, depth + 1)
        if files and not parts:
            return Target(files[0], None)
        if not files and language != "python" and parts:  # unresolved module path: look around
            for path in sorted(self.index.graph.imports(from_path)):
                found = self.in_file(path, parts, depth, follow_imports=False)
                if found is not None and found.definition is not None:
                    return found
        return None

    def in_file(
        self, path: str, parts: tuple[str, ...], depth: int, follow_imports: bool = True
    ) -> Target | None:
        """`parts` looked up among the definitions of `path`, following its imports (a
        re-export) when the first part is not defined there."""
        if not parts:
            return Target(path, None)
        if self.read is not None and path not in self.read:
            self.read[path] = _digest(self.index.records, path)
        defs = self.builder.file_defs(path)
        if defs is None:
            return None
        definition = defs.by_name.get(parts[0])
        if definition is None:
            if not follow_imports:
                return None
            return self._reexported(path, defs, parts, depth)
        index = 1
        while index < len(parts):
            part = parts[index]
            if part == CALL:
                if definition.kind in CLASS_KINDS:  # an instance of the class
                    index += 1
                    continue
                returned = _return_type(definition, defs.language)
                following = self._in_namespace(path, returned, depth + 1) if returned else None
                if following is None or following.definition is None:
                    return Target(path, definition)
                rest = parts[index + 1 :]
                if not rest:
                    return following
                qualified = tuple(following.definition.qualified_name.split("."))
                return self.in_file(following.path, (*qualified, *rest), depth + 1) or following
            member = defs.by_name.get(f"{definition.qualified_name}.{part}")
            if member is not None:
                definition = member
                index += 1
                continue
            if definition.kind not in CLASS_KINDS:  # a variable: through its type
                declared = _variable_type(definition, defs.language)
                following = self._in_namespace(path, declared, depth + 1) if declared else None
                if following is not None and following.definition is not None:
                    qualified = tuple(following.definition.qualified_name.split("."))
                    return (
                        self.in_file(following.path, (*qualified, *parts[index:]), depth + 1)
                        or following
                    )
            else:
                inherited = self._inherited(path, definition, defs, parts[index:], depth)
                if inherited is not None:
                    return inherited
            return Target(path, definition)  # a member it lacks: half-typed, or unknown
        return Target(path, definition)

    def _inherited(
        self, path: str, cls: Definition, defs: _FileDefs, rest: tuple[str, ...], depth: int
    ) -> Target | None:
        """`rest` looked up in the base classes of `cls` (defined or imported in `path`)."""
        if depth >= MAX_DEPTH:
            return None
        for base in _bases(cls, defs.language):
            found = self._in_namespace(path, base, depth + 1)
            if found is None or found.definition is None or found.definition is cls:
                continue
            qualified = tuple(found.definition.qualified_name.split("."))
            member = self.in_file(found.path, (*qualified, *rest), depth + 1)
            if (
                member is not None
                and member.definition is not None
                and member.definition.name == rest[0]
            ):
                return member
        return None

    def _reexported(
        self, path: str, defs: _FileDefs, parts: tuple[str, ...], depth: int
    ) -> Target | None:
        """`_imported_into`, memoised: star re-exports revisit the same files often (and
        may cycle), and the answer depends on the project's files, not on the cursor, so
        it is kept across builds while the file set, this file and the file of the
        definition found stay the same (an edit there moves the definition's lines)."""
        key = (path, parts)
        if key in self._imported:
            return self._imported[key]
        records = self.index.records
        record = records.get(path)
        lasting = (id(records), len(records), path, record.digest if record else "", parts)
        known = self.builder._reexports.get(lasting)
        if known is not None and (known[0] is None or _digest(records, known[0].path) == known[1]):
            return known[0]
        self._lookups += 1
        if self._lookups > MAX_LOOKUPS:
            return None
        self._imported[key] = None
        found = self._imported_into(path, defs, parts, depth)
        self._imported[key] = found
        # Kept only from the first level: deeper answers depend on the depth.
        if self._lookups <= MAX_LOOKUPS and depth <= 1 and not self.warming:
            found_digest = _digest(records, found.path) if found is not None else None
            self.builder._reexports.put(lasting, (found, found_digest))
        return found

    def _in_namespace(self, path: str, chain: tuple[str, ...], depth: int) -> Target | None:
        """`chain` as a name seen from inside `path` (defined there or imported)."""
        if depth > MAX_DEPTH or not chain:
            return None
        return self.in_file(path, chain, depth)

    def _imported_into(
        self, path: str, defs: _FileDefs, parts: tuple[str, ...], depth: int
    ) -> Target | None:
        if depth >= MAX_DEPTH:
            return None
        name = parts[0]
        language = defs.language
        for how, ref, original in defs.importing.get(name, ()):
            if how == _ALIASED:  # `from .cold import ColdStore as Warehouse`
                found = self.in_module(ref.module, (original, *parts[1:]), path, depth + 1)
                if found is not None:
                    return found
            elif how == _NAMED:
                found = self.in_module(ref.module, parts, path, depth + 1)
                if found is not None:
                    return found
            else:  # `import a.b`: `a.b.c` is c in a.b
                dotted = ref.module.split(".")
                if tuple(parts[: len(dotted)]) == tuple(dotted):
                    return self.in_module(ref.module, parts[len(dotted) :], path, depth + 1)
        # A package's submodule of that name, before its star imports: those may be
        # hundreds (transformers' __init__), each a failed search, for what the
        # submodule answers at once.
        package = language == "python" and posixpath.basename(path) == "__init__.py"
        if package and name != CALL and self.module_files(f".{name}", path, language):
            return self.in_module(f".{name}", parts[1:], path, depth + 1)
        for ref in defs.stars:
            found = self.in_module(ref.module, parts, path, depth + 1)
            if found is not None and found.definition is not None:
                return found
        return None

    # modules -> files ------------------------------------------------------------------------

    def _language_of(self, path: str) -> str | None:
        if path == self.file_path:
            return self.language
        record = self.index.records.get(path)
        return record.language if record is not None else None

    def module_files(self, module: str, from_path: str, language: str | None) -> list[str]:
        """The project files that `module`, imported from `from_path`, stands for
        (memoised per importing file while the index's file set stays the same)."""
        records = self.index.records
        key = (id(records), len(records), from_path, module, language)
        cached = self.builder._module_files.get(key)
        if cached is None:
            cached = self.builder._module_files.put(
                key, self._module_files(module, from_path, language)
            )
        return cached

    def _module_files(self, module: str, from_path: str, language: str | None) -> list[str]:
        records = self.index.records
        deps = self.deps if from_path == self.file_path else self.index.graph.imports(from_path)
        if language == "python":
            return _python_module_files(module, from_path, records, deps)
        if language in ("typescript", "tsx", "javascript"):
            if module.startswith("."):
                stem = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), module))
                return _ts_files(stem, records)
            tail = module.rstrip("/").rsplit("/", 1)[-1]
            return sorted(d for d in deps if _stem(d).endswith("/" + tail) or _stem(d) == tail)
        if language == "go":
            tail = module.rstrip("/").rsplit("/", 1)[-1]
            return sorted(d for d in deps if posixpath.basename(posixpath.dirname(d)) == tail)
        if language == "java":
            package = module.replace(".", "/")
            return sorted(d for d in deps if posixpath.dirname(d).endswith(package)) or sorted(deps)
        if language == "rust":
            segments = [s for s in module.split("::") if s not in ("crate", "self", "super", "")]
            if not segments:
                return sorted(deps)
            tail = segments[-1]
            return sorted(
                d
                for d in deps
                if _stem(d).endswith("/" + tail) or _stem(d).endswith(f"/{tail}/mod")
            ) or sorted(deps)
        return []


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


def _digest(records: Mapping[str, FileRecord], path: str) -> str | None:
    record = records.get(path)
    return record.digest if record is not None else None


def related_files(index: ProjectIndex, file_path: str) -> list[str]:
    """The files shown as outlines even when no name points at them: the direct
    dependencies, then `ProjectIndex.related` (same package, two hops, importers)."""
    files = dict.fromkeys(sorted(index.graph.imports(file_path)))
    files.update(dict.fromkeys(index.related(file_path, limit=RELATED_FILES)))
    files.pop(file_path, None)
    return list(files)


# --- rendering --------------------------------------------------------------------------------


# --- dedup ------------------------------------------------------------------------------------


# --- budget -----------------------------------------------------------------------------------
