"""Similar code: the chunks of related files that read most like the lines above the cursor.

Definitions say what a name is; code that already uses it says how it is called (which
arguments, which keywords, what comes next). The BM25 baseline of the repository-level
benchmark wins where Headstart loses mostly by showing such call sites, so the context
builder also retrieves them, from a bounded pool of files (`ContextBuilder.similar_files`).

- **Chunks**: windows of CHUNK_LINES lines every CHUNK_STRIDE lines (so a use is whole
  in some window), blank edges trimmed. A file's chunks and their postings are made once
  per file version (`chunk_index`, cached by digest) and hold line numbers, not text.
- **Terms**: identifiers, lower-cased (as the baseline does), less keywords and one-letter
  names; import lines give none, or an import block would top every query that names
  what it imports.
- **Query**: the terms of the last QUERY_LINES lines of the prefix, the cursor's own line
  included.
- **Score**: Okapi BM25 (k1 1.5, b 0.75), with document frequencies over the pool's
  chunks; a chunk must share at least MIN_SHARED_TERMS distinct terms with the query.
  Overlapping windows of one file are never both kept: the better one is.
"""

from __future__ import annotations

import heapq
import keyword
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

CHUNK_LINES: Final = 12
"""Lines per window: a call and the statements around it, ~100-150 tokens."""
CHUNK_STRIDE: Final = 6
QUERY_LINES: Final = 8
MIN_SHARED_TERMS: Final = 2
"""A chunk that shares one word with the query is more often noise than a use."""
K1: Final = 1.5
B: Final = 0.75
MAX_HITS: Final = 8
"""Chunks returned per query: a few more than a budget share ever holds."""
MAX_SCORED: Final = 256

_WORD: Final = re.compile(r"[a-z_][a-z0-9_]+")
"""Identifiers of two characters or more, in lower-cased text."""
STOP_WORDS: Final = frozenset(
    [w.lower() for w in keyword.kwlist]
    + ["self", "cls", "this", "let", "const", "var", "func", "function", "new", "null"]
    + ["true", "false", "nil", "fn", "pub", "impl", "mut", "struct", "public", "private"]
    + ["static", "void", "int", "str", "bool", "none", "string", "type", "package"]
)


class Chunk(NamedTuple):
    """A window of lines (a tuple: a file makes hundreds at once)."""

    start: int
    """First line (0-based)."""
    end: int
    """Line after the last."""
    length: int
    """Terms in it, repeats counted (BM25's document length)."""
    terms: dict[str, int]
    """Its terms and how often each occurs."""


@dataclass(frozen=True, slots=True)
class ChunkIndex:
    """One file version's chunks, and for each term the chunks that hold it."""

    chunks: tuple[Chunk, ...]
    postings: dict[str, tuple[int, ...]]
    total_length: int


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    chunk: Chunk
    score: float


EMPTY: Final = ChunkIndex((), {}, 0)


def terms_of(line: str) -> list[str]:
    """The terms of one line (none for an import line)."""
    if line.lstrip().startswith(_IMPORT_STARTS):
        return []
    return [w for w in _WORD.findall(line.lower()) if w not in STOP_WORDS]


_IMPORT_STARTS: Final = ("import ", "from ", "#include", "use ")


def chunk_index(lines: Sequence[str]) -> ChunkIndex:
    """The windows of a file's lines and their postings. A window is two blocks of
    CHUNK_STRIDE lines, so each block's terms are counted once."""
    blocks: list[list[str]] = []
    for start in range(0, len(lines), CHUNK_STRIDE):
        blocks.append(
            [term for line in lines[start : start + CHUNK_STRIDE] for term in terms_of(line)]
        )
    chunks: list[Chunk] = []
    postings: dict[str, list[int]] = {}
    total = last_end = 0
    for number, block in enumerate(blocks):
        start = number * CHUNK_STRIDE
        end = min(len(lines), start + CHUNK_LINES)
        while start < end and not lines[start].strip():
            start += 1
        while end > start and not lines[end - 1].strip():
            end -= 1
        if end <= last_end:
            continue  # nothing new past the window before it
        tally = Counter(block + blocks[number + 1] if number + 1 < len(blocks) else block)
        if len(tally) < MIN_SHARED_TERMS:
            continue
        length = sum(tally.values())
        for term in tally:
            postings.setdefault(term, []).append(len(chunks))
        chunks.append(Chunk(start, end, length, dict(tally)))
        total += length
        last_end = end
        if end == len(lines):
            break
    return ChunkIndex(tuple(chunks), {t: tuple(p) for t, p in postings.items()}, total)


def query_terms(text: str, end: int, lines: int = QUERY_LINES) -> frozenset[str]:
    """The terms of the last `lines` lines of `text[:end]` (the cursor's line among them),
    less a word that `end` may be in the middle of: it counts once it is complete, so
    typing it changes nothing."""
    start = end
    for _ in range(lines):
        start = text.rfind("\n", 0, start)
        if start <= 0:
            start = 0
            break
    head = _TYPED_WORD.sub("", text[start:end])
    return frozenset(t for line in head.split("\n") for t in terms_of(line))


_TYPED_WORD: Final = re.compile(r"\w+\Z")


@dataclass(frozen=True, slots=True)
class Pool:
    """The files searched together, their chunk indexes merged once per version of the
    pool: a query then reads one posting list per term, not one per term and file."""

    files: tuple[tuple[str, ChunkIndex], ...]
    postings: dict[str, tuple[tuple[int, tuple[int, ...]], ...]]
    """Term -> (file number, its chunks that hold the term), files in order."""
    frequencies: dict[str, int]
    """Term -> how many chunks of the pool hold it."""
    n_chunks: int
    norms: tuple[tuple[float, ...], ...]
    """BM25's length normalisation of each file's chunks."""


def make_pool(files: Sequence[tuple[str, ChunkIndex]]) -> Pool:
    merged: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for number, (_, index) in enumerate(files):
        for term, chunks in index.postings.items():
            merged.setdefault(term, []).append((number, chunks))
    n_chunks = sum(len(index.chunks) for _, index in files)
    total = sum(index.total_length for _, index in files)
    average = (total / n_chunks if n_chunks else 0.0) or 1.0
    norms = tuple(
        tuple(K1 * (1 - B + B * chunk.length / average) for chunk in index.chunks)
        for _, index in files
    )
    return Pool(
        tuple(files),
        {term: tuple(found) for term, found in merged.items()},
        {term: sum(len(chunks) for _, chunks in found) for term, found in merged.items()},
        n_chunks,
        norms,
    )


def frequencies(terms: frozenset[str], pool: Pool) -> dict[str, int]:
    """How many chunks of the pool hold each query term, for those some chunk holds (the
    others change no score, so they need not change a memo's key)."""
    known = pool.frequencies
    return {term: known[term] for term in terms if term in known}


def search(dfs: Mapping[str, int], pool: Pool, limit: int = MAX_HITS) -> list[Hit]:
    """The best `limit` chunks of the pool for the query whose `frequencies` are `dfs`,
    best first (ties: path, line), overlapping windows of one file dropped for the
    better one.

    Only chunks that hold one of the query's rarer terms are scored (the rarest terms'
    chunks, while they number at most MAX_SCORED; always the rarest one's): a chunk
    that shares only common words with the query is seldom a use of what it calls, and
    this bounds the cost whatever the pool's size."""
    n_chunks = pool.n_chunks
    if not n_chunks or not dfs:
        return []
    idf = {term: math.log(1 + (n_chunks - df + 0.5) / (df + 0.5)) for term, df in dfs.items()}
    scored: list[set[int]] = [set() for _ in pool.files]
    total = 0
    for term in sorted(dfs, key=lambda t: (dfs[t], t)):
        if total and total + dfs[term] > MAX_SCORED:
            break
        total += dfs[term]
        for f, holding in pool.postings.get(term, ()):
            scored[f].update(holding)
    wanted = idf.keys()
    k1_plus_one = K1 + 1
    scores: list[tuple[float, str, int, int, int]] = []
    for f, numbers in enumerate(scored):
        if not numbers:
            continue
        path, chunks, norms = pool.files[f][0], pool.files[f][1].chunks, pool.norms[f]
        for number in numbers:
            chunk = chunks[number]
            counts = chunk.terms
            shared = counts.keys() & wanted
            if len(shared) < MIN_SHARED_TERMS:
                continue
            norm = norms[number]
            score = 0.0
            for term in shared:
                tf = counts[term]
                score += idf[term] * tf * k1_plus_one / (tf + norm)
            scores.append((-score, path, chunk.start, f, number))
    hits: list[Hit] = []
    for negative, path, _, f, number in heapq.nsmallest(4 * limit, scores):
        chunk = pool.files[f][1].chunks[number]
        if any(
            h.path == path and h.chunk.start < chunk.end and chunk.start < h.chunk.end for h in hits
        ):
            continue
        hits.append(Hit(path, chunk, -negative))
        if len(hits) >= limit:
            break
    return hits
