"""Similar code: chunking, scoring, and the chunks the context builder shows."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cache.index import ProjectIndex
from server.completion.context import (
    Budget,
    ContextBuilder,
    Snippet,
    build_context,
    estimate_tokens,
)
from server.completion.cursor import analyse
from server.completion.similar import (
    CHUNK_LINES,
    CHUNK_STRIDE,
    K1,
    MAX_SCORED,
    MIN_SHARED_TERMS,
    B,
    ChunkIndex,
    chunk_index,
    frequencies,
    make_pool,
    query_terms,
    search,
    terms_of,
)

# --- chunks and terms --------------------------------------------------------------------------


def numbered(n: int) -> list[str]:
    return [f"value_{i} = compute_{i}(arg_{i})" for i in range(n)]


def test_windows_overlap_by_a_stride_and_cover_every_line() -> None:
    index = chunk_index(numbered(40))
    starts = [c.start for c in index.chunks]
    assert starts == list(range(0, 40 - CHUNK_STRIDE, CHUNK_STRIDE))
    assert all(c.end - c.start <= CHUNK_LINES for c in index.chunks)
    assert index.chunks[-1].end == 40
    covered = {line for c in index.chunks for line in range(c.start, c.end)}
    assert covered == set(range(40))


def test_blank_edges_are_trimmed_and_blank_windows_dropped() -> None:
    lines = ["", "", "alpha_name = beta_name", *[""] * 20, "gamma_name(delta_name)", ""]
    index = chunk_index(lines)
    assert [(c.start, c.end) for c in index.chunks] == [(2, 3), (23, 24)]


def test_postings_and_counts_agree() -> None:
    index = chunk_index(numbered(30))
    for term, chunks in index.postings.items():
        for number in chunks:
            assert index.chunks[number].terms[term] >= 1
    assert index.total_length == sum(c.length for c in index.chunks)


def test_terms_are_lowercased_identifiers_without_keywords_or_imports() -> None:
    assert terms_of("    if self.Client.send(request, x):") == ["client", "send", "request"]
    assert terms_of("from httpx import Client") == []
    assert terms_of("import os.path") == []


def test_the_query_is_the_last_lines_before_the_cursor() -> None:
    text = "far_away = 1\n" + "filler_word = 2\n" * 10 + "near_name = client.send("
    assert query_terms(text, len(text)) == {"filler_word", "near_name", "client", "send"}
    assert "far_away" in query_terms(text, len(text), lines=20)


def test_import_lines_above_the_cursor_query_the_names_they_import() -> None:
    """Chunks do not index import lines, but the lines that use an imported name do: a
    cursor under `from .typeutils import make_sentinel` finds the files that call it."""
    text = "from .typeutils import make_sentinel as ms, Other\nimport os.path\n_MISSING = "
    assert query_terms(text, len(text)) == {
        "make_sentinel",
        "ms",
        "other",
        "os",
        "path",
        "_missing",
    }


def test_a_word_being_typed_counts_once_complete() -> None:
    text = "result = client.sen"
    assert query_terms(text, len(text)) == {"result", "client"}
    assert query_terms(text + "d(", len(text) + 2) == {"result", "client", "send"}


# --- scoring ------------------------------------------------------------------------------------

CALLER = """\
def handle(request):
    client = make_client(request.app)
    response = client.send_json(request, timeout=settings.TIMEOUT, retries=3)
    return response
"""


def test_the_chunk_that_uses_the_same_rare_names_ranks_first() -> None:
    noise = [f"def unrelated_{i}(request):\n    return request.path_{i}\n" for i in range(30)]
    pool = make_pool(
        [
            ("a/noise.py", chunk_index("".join(noise).split("\n"))),
            ("a/caller.py", chunk_index(CALLER.split("\n"))),
        ]
    )
    typed = "def other(request):\n    client = make_client(request.app)\n    client."
    hits = search(frequencies(query_terms(typed, len(typed)), pool), pool)
    assert hits[0].path == "a/caller.py"
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_one_shared_word_is_not_enough() -> None:
    pool = make_pool([("a.py", chunk_index(["unique_word = 1", "other_thing = 2"]))])
    assert frequencies(frozenset({"unique_word", "missing"}), pool) == {"unique_word": 1}
    assert search(frequencies(frozenset({"unique_word", "missing"}), pool), pool) == []
    assert search(frequencies(frozenset({"unique_word", "other_thing"}), pool), pool) != []


def test_overlapping_windows_of_a_file_are_not_both_returned() -> None:
    lines = ["filler_a = filler_b"] * 6 + ["target_call(special_arg)"] + ["filler_c = 1"] * 20
    pool = make_pool([("a.py", chunk_index(lines))])
    hits = search(frequencies(frozenset({"target_call", "special_arg"}), pool), pool)
    spans = sorted((h.chunk.start, h.chunk.end) for h in hits)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def reference_bm25(dfs: dict[str, int], files: list[tuple[str, ChunkIndex]]) -> list[tuple]:
    """BM25 as the module documents it, a chunk at a time: (path, start, score) of the
    chunks `search` may return, best first (ties: path, line), overlaps not dropped."""
    chunks = [(path, c) for path, index in files for c in index.chunks]
    if not chunks:
        return []
    average = (sum(c.length for _, c in chunks) / len(chunks)) or 1.0
    rarest = sorted(dfs, key=lambda t: (dfs[t], t))
    scored_terms, total = set(), 0
    for term in rarest:
        if total and total + dfs[term] > MAX_SCORED:
            break
        total += dfs[term]
        scored_terms.add(term)
    ranked = []
    for path, c in chunks:
        shared = c.terms.keys() & dfs.keys()
        if len(shared) < MIN_SHARED_TERMS or not shared & scored_terms:
            continue
        norm = K1 * (1 - B + B * c.length / average)
        score = sum(
            math.log(1 + (len(chunks) - dfs[t] + 0.5) / (dfs[t] + 0.5))
            * c.terms[t]
            * (K1 + 1)
            / (c.terms[t] + norm)
            for t in shared
        )
        ranked.append((-score, path, c.start))
    return [(path, start, -negative) for negative, path, start in sorted(ranked)]


WORDS = ["alpha_x", "beta_y", "gamma_z", "delta_w", "eps_v", "zeta_u", "eta_t"]


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(
        st.lists(st.lists(st.sampled_from(WORDS), max_size=4).map(" + ".join), max_size=40),
        min_size=1,
        max_size=4,
    ),
    query=st.sets(st.sampled_from(WORDS), min_size=1),
)
def test_search_ranks_as_bm25_a_chunk_at_a_time(files: list[list[str]], query: set[str]) -> None:
    """The pool's arrays score as the formula does chunk by chunk: the same chunks, in the
    same order, with the same scores."""
    indexed = [(f"f{n}.py", chunk_index(lines)) for n, lines in enumerate(files)]
    pool = make_pool(indexed)
    dfs = frequencies(frozenset(query), pool)
    expected = reference_bm25(dfs, indexed)
    hits = search(dfs, pool, limit=len(expected) or 1)
    scores = {(path, start): score for path, start, score in expected}
    kept = [(h.path, h.chunk.start) for h in hits]
    assert kept == [(path, start) for path, start, _ in expected if (path, start) in kept]
    assert all(h.score == pytest.approx(scores[h.path, h.chunk.start]) for h in hits)
    if expected:
        assert (hits[0].path, hits[0].chunk.start) == expected[0][:2]


# --- in the context -----------------------------------------------------------------------------


def chunk(path: str, text: str, line: int, score: float) -> Snippet:
    return Snippet(path, text, line, score, f"lines {line + 1}-{line + 2}", "python", True)


def cost_of(snippets: list[Snippet]) -> int:
    return sum(
        estimate_tokens(f"<|file_sep|>{s.path}\n") + 1 + estimate_tokens(s.text) for s in snippets
    )


def test_chunks_get_their_own_share_and_what_definitions_leave_and_render_last() -> None:
    definition = Snippet("a.py", "def f(x):\n    return x\n", 0, 300.0, "f", "python")
    chunks = [chunk(f"c{i}.py", f"call_{i} = f(value_{i})\n" * 8, 0, 10.0 - i) for i in range(9)]
    budget = Budget(total=1000, cross_file_share=0.3, suffix_share=0.1, similar_share=0.2)
    context = build_context("x = 1\n" * 400, "", [definition, *chunks], budget)
    taken = [s for s in context.snippets if s.similar]
    room = budget.similar_cap + budget.cross_file_cap - cost_of([definition])
    assert budget.similar_cap < cost_of(taken) <= room < 9 * 60
    assert [s.path for s in taken] == sorted(s.path for s in taken)  # the best ones, by path
    assert context.snippets[0] == definition  # definitions first, chunks after
    assert all(s.text.count("\n") == 8 for s in taken)  # never cut


def test_chunks_keep_to_their_own_share_when_definitions_fill_theirs() -> None:
    definitions = [
        Snippet(f"d{i}.py", f"def f{i}(x):\n    return x + {i}\n" * 4, 0, 300.0 - i, f"f{i}")
        for i in range(12)
    ]
    chunks = [chunk(f"c{i}.py", f"call_{i} = f(value_{i})\n" * 8, 0, 10.0 - i) for i in range(9)]
    budget = Budget(total=1000, cross_file_share=0.3, suffix_share=0.1, similar_share=0.2)
    context = build_context("x = 1\n" * 400, "", [*definitions, *chunks], budget)
    chosen = [s for s in context.snippets if not s.similar]
    assert budget.cross_file_cap - cost_of(chosen) < cost_of(definitions[:1])  # full
    assert 0 < cost_of([s for s in context.snippets if s.similar]) <= budget.similar_cap


def test_a_zero_share_turns_chunks_off() -> None:
    chunks = [chunk("c.py", "call_it(value)\n", 0, 10.0)]
    budget = Budget(total=1000, similar_share=0.0)
    assert build_context("", "", chunks, budget).snippets == ()


def test_a_chunk_that_a_chosen_definition_shows_is_skipped() -> None:
    body = "def f(x):\n    y = x + 1\n    return y * 2\n"
    definition = Snippet("a.py", body, 10, 300.0, "f", "python")
    inside = chunk("a.py", "    y = x + 1\n    return y * 2\n", 11, 9.0)
    elsewhere = chunk("b.py", "    z = f(3)\n    print(z)\n", 4, 8.0)
    context = build_context("", "", [definition, inside, elsewhere], Budget(total=2000))
    assert [s.path for s in context.snippets if s.similar] == ["b.py"]


LIBRARY = '''\
"""The connection API."""


def connect(host: str, port: int, *, retries: int = 0, secure: bool = False) -> object:
    """Open a connection."""
    return object()
'''

CLIENT_LINES = [
    '"""A long module that calls the API the way the project does."""',
    "",
    "from pkg.api import connect",
    "",
    "",
    "class Uploader:",
    "    def __init__(self, host: str, port: int) -> None:",
    "        self.host = host",
    "        self.port = port",
    "",
    "    def upload(self, blob: bytes) -> None:",
    "        conn = connect(self.host, self.port, retries=5, secure=True)",
    "        conn.write(blob)",
    "",
    *[f"    def helper_{i}(self) -> int:\n        return {i}\n" for i in range(30)],
]

WORKER = """\
from pkg.api import connect


class Downloader:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def download(self) -> bytes:
        conn = connect(self.host, self.port, """


@pytest.fixture
def project(tmp_path: Path) -> ProjectIndex:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "api.py").write_text(LIBRARY)
    (root / "pkg" / "client.py").write_text("\n".join(CLIENT_LINES) + "\n")
    (root / "pkg" / "worker.py").write_text(WORKER + "\n")
    index = ProjectIndex(root, cache_dir=tmp_path / "cache")
    index.build()
    return index


def test_a_call_site_from_another_file_reaches_the_context(project: ProjectIndex) -> None:
    builder = ContextBuilder(project)
    builder.prepare("pkg/worker.py")
    context = builder.build("pkg/worker.py", WORKER, len(WORKER), "python", Budget(total=2048))
    chunks = [s for s in context.snippets if s.similar]
    assert any("retries=5, secure=True" in s.text for s in chunks)
    assert all(s.path != "pkg/worker.py" for s in chunks)
    assert context.snippets[-1].similar  # nearest the current file

    off = ContextBuilder(project).build(
        "pkg/worker.py", WORKER, len(WORKER), "python", Budget(total=2048, similar_share=0.0)
    )
    assert not any(s.similar for s in off.snippets)


def test_typing_keeps_the_chunks(project: ProjectIndex) -> None:
    builder = ContextBuilder(project)
    builder.prepare("pkg/worker.py")
    line = "retries=5, secure=True)\n        conn.read()"
    previous, changes = None, 0
    for typed in range(len(line) + 1):
        text = WORKER + line[:typed]
        context = builder.build("pkg/worker.py", text, len(text), "python", Budget(total=2048))
        chosen = [(s.path, s.start_line) for s in context.snippets if s.similar]
        changes += previous is not None and chosen != previous
        previous = chosen
    assert changes <= 2


def test_chunks_no_longer_found_stay_put_rather_than_take_turns() -> None:
    """Chunks remembered from earlier in the function fade once, not on every build: when
    two such compete for one slot, the better keeps it (they once took turns, changing
    the prompt on every keystroke)."""
    builder = ContextBuilder(None)
    cursor = analyse("def f():\n    x = 1\n", 18, "python")
    first = chunk("a.py", "alpha_call(one, two)\n" * 3, 0, 10.0)
    second = chunk("b.py", "beta_call(three, four)\n" * 3, 0, 9.0)
    budget = Budget(total=600, cross_file_share=0.0, suffix_share=0.0, similar_share=0.05)
    builder._with_memory("f.py", cursor, [])
    builder._remember("f.py", (first, second))  # both chosen once, then no longer found
    chosen = []
    for _ in range(6):
        candidates = builder._with_memory("f.py", cursor, [])
        context = build_context("", "", candidates, budget)
        builder._remember("f.py", context.snippets)
        chosen.append([s.path for s in context.snippets])
    assert chosen == [["a.py"]] * 6


def test_without_the_cursor_line_the_chunks_change_only_with_the_line(tmp_path: Path) -> None:
    """`Budget.similar_cursor_line` off: similar code is looked for with the lines above the
    cursor's line alone, so whatever is typed along the line a fresh build chooses the
    same chunks; with the line in the query, the words typed on it bring in the chunk
    that uses them."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "api.py").write_text(
        "def connect(host, port):\n    return (host, port)\n\n\n"
        "def upload_blob(payload, checksum, compress):\n    return payload\n"
    )
    helpers = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(20))
    (root / "pkg" / "hosts.py").write_text(  # long: a short file is shown whole
        "from pkg.api import connect\n\n\ndef open_link(host_name, port_number):\n"
        "    link = connect(host_name, port_number)\n    return link\n" + helpers
    )
    (root / "pkg" / "blobs.py").write_text(
        "from pkg.api import upload_blob\n\n\ndef send_payload(payload, checksum):\n"
        "    receipt = upload_blob(payload, checksum, compress=True)\n    return receipt\n"
        + helpers
    )
    above = "from pkg.api import connect, upload_blob\n\n\ndef main(host_name, port_number):\n"
    (root / "pkg" / "main.py").write_text(above)
    index = ProjectIndex(root, cache_dir=tmp_path / "cache")
    index.build()
    line = "    receipt = upload_blob(payload, checksum, compress=True)"

    def chunks_along_the_line(budget: Budget) -> set[tuple[str, ...]]:
        seen = set()
        for typed in range(len(line) + 1):
            text = above + line[:typed]
            context = ContextBuilder(index).build("pkg/main.py", text, len(text), "python", budget)
            seen.add(tuple(s.path for s in context.snippets if s.similar))
        return seen

    above_only = chunks_along_the_line(Budget(total=2048, similar_cursor_line=False))
    assert above_only == {("pkg/hosts.py",)}
    with_the_line = chunks_along_the_line(Budget(total=2048))
    assert any("pkg/blobs.py" in chosen for chosen in with_the_line)
