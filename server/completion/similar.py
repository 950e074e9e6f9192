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
  Overlapping windows of one file are never both kept: the better one is. The pool
  holds its postings as numpy arrays, each with its BM25 weight but for the idf, so a
  query is a few array sums (`search`), not a Python loop over the chunks it scores.
"""

from __future__ import annotations

import itertools
import keyword
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

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
    """One file version's chunks, and for each term the chunks that hold it; the same
    postings flat, as arrays a pool concatenates without a Python step per posting."""

    chunks: tuple[Chunk, ...]
    postings: dict[str, tuple[int, ...]]
    total_length: int
    posting_term: npt.NDArray[np.intp] = field(default_factory=lambda: _NO_INTS)
    """Per posting (in `postings` order): its term's place in `postings`."""
    posting_chunk: npt.NDArray[np.intp] = field(default_factory=lambda: _NO_INTS)
    posting_tf: npt.NDArray[np.float64] = field(default_factory=lambda: _NO_FLOATS)
    """Per posting: how often the chunk holds the term."""
    lengths: npt.NDArray[np.float64] = field(default_factory=lambda: _NO_FLOATS)
    """Per chunk: its `Chunk.length`."""


class Hit(NamedTuple):
    """A chunk found, and its score (a tuple: a frozen dataclass sets each field through
    `object.__setattr__`, and a search makes eight)."""

    path: str
    chunk: Chunk
    score: float


_NO_INTS: Final[npt.NDArray[np.intp]] = np.zeros(0, dtype=np.intp)
_NO_FLOATS: Final[npt.NDArray[np.float64]] = np.zeros(0, dtype=np.float64)
EMPTY: Final = ChunkIndex((), {}, 0)


def terms_of(line: str) -> list[str]:
    """The terms of one line (none for an import line)."""
    if line.lstrip().startswith(_IMPORT_STARTS):
        return []
    return [w for w in _WORD.findall(line.lower()) if w not in STOP_WORDS]


_IMPORT_STARTS: Final = ("import ", "from ", "#include", "use ")
_IMPORT_WORDS: Final = frozenset(["import", "from", "as", "include", "use"])


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
    counts: dict[str, list[int]] = {}
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
        for term, count in tally.items():
            postings.setdefault(term, []).append(len(chunks))
            counts.setdefault(term, []).append(count)
        chunks.append(Chunk(start, end, length, dict(tally)))
        total += length
        last_end = end
        if end == len(lines):
            break
    sizes = [len(found) for found in postings.values()]
    size = sum(sizes)
    return ChunkIndex(
        tuple(chunks),
        {term: tuple(found) for term, found in postings.items()},
        total,
        np.repeat(np.arange(len(sizes), dtype=np.intp), sizes),
        np.fromiter(itertools.chain.from_iterable(postings.values()), np.intp, size),
        np.fromiter(itertools.chain.from_iterable(counts.values()), np.float64, size),
        np.fromiter((chunk.length for chunk in chunks), np.float64, len(chunks)),
    )


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
    word_start = end  # of the word `end` may be in (as regex `\w`: alphanumerics, "_")
    while word_start > start and (text[word_start - 1].isalnum() or text[word_start - 1] == "_"):
        word_start -= 1
    head = text[start:word_start]
    return frozenset(t for line in head.split("\n") for t in _query_terms_of(line))


def _query_terms_of(line: str) -> list[str]:
    """A query line's terms: an import line gives the names it imports (chunks do not
    index import lines, but their call sites name the same APIs: a file that starts
    `from .typeutils import make_sentinel` finds the `make_sentinel(...)` lines of the
    other files that import it)."""
    stripped = line.lstrip()
    if not stripped.startswith(_IMPORT_STARTS):
        return terms_of(line)
    imported = stripped.rsplit(" import ", 1)[-1] if " import " in stripped else stripped
    words = _WORD.findall(imported.lower())
    return [w for w in words if w not in STOP_WORDS and w not in _IMPORT_WORDS]


@dataclass(frozen=True, slots=True)
class Pool:
    """The files searched together, their postings merged once per version of the pool
    into arrays sorted by term (one slice per term) that hold each posting's BM25 weight
    but for the idf: a query then sums a few slices in numpy, not a Python loop over the
    chunks it scores (about 3 times faster, and no chunk's dictionary is touched)."""

    files: tuple[tuple[str, ChunkIndex], ...]
    terms: dict[str, int]
    """Term -> its number: its postings are `chunk_of[starts[number]:starts[number + 1]]`."""
    starts: list[int]
    chunk_of: npt.NDArray[np.intp]
    """Per posting: the chunk's number in the pool (files in order, then their chunks)."""
    weight_of: npt.NDArray[np.float64]
    """Per posting: tf * (k1 + 1) / (tf + norm), BM25's term weight less the idf."""
    file_of: list[int]
    """Per pool chunk: its file's number."""
    first_chunk: list[int]
    """Per file: the pool number of its first chunk."""
    n_chunks: int


def make_pool(files: Sequence[tuple[str, ChunkIndex]]) -> Pool:
    terms: dict[str, int] = {}
    term_parts, chunk_parts, tf_parts, length_parts = [], [], [], []
    first_chunk, file_of = [], []
    n_chunks = 0
    for number, (_, index) in enumerate(files):
        own = np.fromiter(
            (terms.setdefault(term, len(terms)) for term in index.postings),
            np.intp,
            len(index.postings),
        )
        term_parts.append(own[index.posting_term])
        chunk_parts.append(index.posting_chunk + n_chunks)
        tf_parts.append(index.posting_tf)
        length_parts.append(index.lengths)
        first_chunk.append(n_chunks)
        file_of += [number] * len(index.chunks)
        n_chunks += len(index.chunks)
    if not n_chunks:
        return Pool(tuple(files), {}, [0], _NO_INTS, _NO_FLOATS, [], first_chunk, 0)
    term_of = np.concatenate(term_parts)
    order = np.argsort(term_of, kind="stable")  # a term's postings: files, then chunks
    chunk_of = np.concatenate(chunk_parts)[order]
    tf = np.concatenate(tf_parts)[order]
    lengths = np.concatenate(length_parts)
    average = float(lengths.sum()) / n_chunks or 1.0
    norms = K1 * (1 - B + B * lengths / average)
    weight_of = tf * (K1 + 1) / (tf + norms[chunk_of])
    starts = np.searchsorted(term_of[order], np.arange(len(terms) + 1)).tolist()
    return Pool(tuple(files), terms, starts, chunk_of, weight_of, file_of, first_chunk, n_chunks)


def frequencies(terms: frozenset[str], pool: Pool) -> dict[str, int]:
    """How many chunks of the pool hold each query term, for those some chunk holds (the
    others change no score, so they need not change a memo's key)."""
    known, starts = pool.terms, pool.starts
    return {
        term: starts[number + 1] - starts[number]
        for term in terms
        if (number := known.get(term)) is not None
    }


def search(dfs: Mapping[str, int], pool: Pool, limit: int = MAX_HITS) -> list[Hit]:
    """The best `limit` chunks of the pool for the query whose `frequencies` are `dfs`,
    best first (ties: path, line), overlapping windows of one file dropped for the
    better one.

    Only chunks that hold one of the query's rarer terms are scored (the rarest terms'
    chunks, while they number at most MAX_SCORED; always the rarest one's): a chunk
    that shares only common words with the query is seldom a use of what it calls, and
    this bounds the cost whatever the pool's size."""
    n_chunks = pool.n_chunks
    bounds = [  # each term's slice of the postings, rarest first
        (pool.starts[number], pool.starts[number + 1])
        for term in sorted(dfs, key=lambda t: (dfs[t], t))
        if (number := pool.terms.get(term)) is not None
    ]
    if not n_chunks or not bounds:
        return []
    total = 0  # postings of the rarest terms, whose chunks are scored
    for low, high in bounds:
        if total and total + high - low > MAX_SCORED:
            break
        total += high - low
    chunks = np.concatenate([pool.chunk_of[low:high] for low, high in bounds])
    scored = np.zeros(n_chunks, dtype=bool)
    scored[chunks[:total]] = True
    # BM25: each posting's weight times its term's idf, all in one product
    idf = [
        math.log(1 + (n_chunks - (high - low) + 0.5) / (high - low + 0.5)) for low, high in bounds
    ]
    weights = np.concatenate([pool.weight_of[low:high] for low, high in bounds])
    weights *= np.repeat(idf, [high - low for low, high in bounds])
    scores = np.bincount(chunks, weights=weights, minlength=n_chunks)
    shared = np.bincount(chunks, minlength=n_chunks)
    eligible = np.flatnonzero(scored & (shared >= MIN_SHARED_TERMS))
    keep = 4 * limit
    if len(eligible) > keep:  # those that can make the best `keep`, ties at the cut kept
        values = scores[eligible]
        cut = np.partition(values, len(values) - keep)[len(values) - keep]
        eligible = eligible[values >= cut]
    ranked = []
    for number, score in zip(eligible.tolist(), scores[eligible].tolist(), strict=True):
        f = pool.file_of[number]
        path, index = pool.files[f]
        chunk = index.chunks[number - pool.first_chunk[f]]
        ranked.append((-score, path, chunk.start, chunk))
    ranked.sort(key=lambda r: r[:3])
    hits: list[Hit] = []
    for negative, path, _, chunk in ranked[:keep]:
        for hit in hits:  # a loop, not any() over a generator: a search checks ~11
            if hit.path == path and hit.chunk.start < chunk.end and chunk.start < hit.chunk.end:
                break
        else:
            hits.append(Hit(path, chunk, -negative))
            if len(hits) >= limit:
                break
    return hits
