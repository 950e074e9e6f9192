"""benchmarks/load/prompt_cache_sim.py: vLLM's block prefix cache, simulated over a trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from conftest import ROOT, load_benchmark
from tokenizer_helpers import real_qwen_tokenizer_file, tiny_tokenizer

SCRIPT = ROOT / "benchmarks" / "load" / "prompt_cache_sim.py"


def simulator() -> ModuleType:
    return load_benchmark("load/prompt_cache_sim")


def test_only_whole_leading_blocks_seen_before_are_cached() -> None:
    sim = simulator()
    first = list(range(40))  # two full blocks and 8 tokens
    edited = [*first[:20], 999, *first[21:]]  # an edit in the second block
    (_, cold), (_, warm), (_, again) = sim.uncached([first, edited, list(first)])
    assert cold == 0
    assert warm == 16  # the first block only: the second differs from the edit on
    assert again == 32  # both full blocks; the last 8 tokens never fill a block


def test_each_replica_caches_only_the_prompts_it_was_sent() -> None:
    sim = simulator()
    prompt = list(range(32))
    alternating = [hit for _, hit in sim.uncached([prompt] * 4, lambda n, ids: n % 2)]
    assert alternating == [0, 0, 32, 32]
    together = [hit for _, hit in sim.uncached([prompt] * 4, lambda n, ids: 0)]
    assert together == [0, 32, 32, 32]


def test_a_prompts_document_is_the_path_before_its_fim_prefix() -> None:
    sim = simulator()
    file_sep, fim_prefix = 90, 91
    ids = [file_sep, 2, 3, 4, file_sep, 5, 6, fim_prefix, 9, 10]
    assert sim.document_of(ids, file_sep, fim_prefix) == (5, 6)
    route = sim.routings(4, lambda ids: sim.document_of(ids, file_sep, fim_prefix))["by document"]
    edited = [file_sep, 7, file_sep, 5, 6, fim_prefix, 11]
    assert route(0, ids) == route(1, edited)  # one document, one replica


def test_the_suffix_cut_keeps_the_markers() -> None:
    sim = simulator()
    suffix, middle = 7, 8
    ids = [1, 2, suffix, 30, 31, 32, 33, middle]
    assert sim.cut_suffix(ids, (suffix, middle), 2) == [1, 2, suffix, 30, 31, middle]
    assert sim.cut_suffix([1, 2, 3], (suffix, middle), 2) == [1, 2, 3]


def test_a_trace_of_typing_puts_the_uncached_tokens_after_the_cursor(tmp_path: Path) -> None:
    """Typing at the cursor changes the text there, so the text after it (which follows
    it in a fill-in-the-middle prompt) is computed again on every request."""
    before = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40))
    after = "".join(f"def g{i}(y):\n    return y * {i}\n\n" for i in range(40))
    typed = "value = compute(items"
    lines = []
    for n in range(1, len(typed) + 1):
        prompt = f"<|fim_prefix|>{before}{typed[:n]}<|fim_suffix|>{after}<|fim_middle|>"
        lines.append(json.dumps({"sent": float(n), "body": {"prompt": prompt}}))
    (tmp_path / "user-0.jsonl").write_text("\n".join(lines) + "\n")
    command = [sys.executable, str(SCRIPT), str(tmp_path)]
    command += ["--tokenizer", str(real_qwen_tokenizer_file())]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert f"{len(typed)} requests" in printed
    by_segment = dict(
        part.split(" ")[:2] for part in printed.split("by segment: ")[1].strip().split(", ")
    )
    prefix, suffix = (int(by_segment[name].split("/")[0]) for name in ("prefix", "suffix"))
    assert suffix > 4 * prefix


def test_computed_tokens_are_put_down_to_their_cause() -> None:
    """A user's first request, a keystroke at the cursor, a snippet changed before the
    current file, a move to another document: each computes its own share, and the
    prefetch is counted apart from the keystrokes."""
    sim = simulator()
    file_sep, fim_prefix = 90, 91
    snippet = [file_sep, 1, *range(100, 130)]  # another file's snippet, two blocks
    other = [file_sep, 2, *range(200, 230)]
    here = [file_sep, 5, fim_prefix, *range(300, 340)]  # the current file, a.py
    elsewhere = [file_sep, 6, fim_prefix, *range(400, 440)]
    prompts = [
        ("alice", 0, snippet + here),  # first
        ("alice", 0, snippet + here + [7] * 16),  # typed at the cursor
        ("alice", 2, other + here + [7] * 16),  # the snippet changed: a.py again
        ("alice", 0, snippet + elsewhere),  # another document
        ("bob", 0, snippet + here),  # bob's first: alice's prompt is cached
    ]
    requests = [sim.Sent(user, priority, ids) for user, priority, ids in prompts]
    hits = [hit for _, hit in sim.uncached(request.ids for request in requests)]

    def document(ids: list[int]) -> tuple[int, ...]:
        return tuple(sim.document_of(ids, file_sep, fim_prefix))

    lines = sim.by_cause(requests, hits, document, fim_prefix)
    table = {line.split("  ")[1].strip(): line for line in lines}
    computed = {name: int(line.split()[-2]) for name, line in table.items()}
    assert set(table) == {
        "first request", "at the cursor", "context changed", "another document",
        "keystroke", "prefetch",
    }  # fmt: skip
    assert " 2 requests" in table["first request"]
    assert computed["at the cursor"] < 32 < computed["context changed"]
    assert computed["another document"] >= len(elsewhere) - 16
    assert computed["prefetch"] == computed["context changed"]


def test_the_same_snippets_what_if_swaps_only_the_part_before_the_current_file() -> None:
    """A prefetch gets its keystroke's snippets (`prefetch`); with `visit` every request in
    the document gets the first's. Another document, or a prefetch in one, keeps its own."""
    sim = simulator()
    sep, fim = 90, 91

    def prompt(snippet: int, path: int, typed: int) -> list[int]:
        return [sep, snippet, sep, path, fim, typed]

    keystroke = sim.Sent("u", 0, prompt(1, 5, 10))
    prefetch = sim.Sent("u", 2, prompt(2, 5, 11))
    next_key = sim.Sent("u", 0, prompt(3, 5, 12))
    elsewhere = sim.Sent("u", 2, prompt(4, 6, 13))
    trace = [keystroke, prefetch, next_key, elsewhere]

    by_prefetch = [r.ids for r in sim.same_snippets(trace, "prefetch", sep, fim)]
    assert by_prefetch == [prompt(1, 5, 10), prompt(1, 5, 11), prompt(3, 5, 12), prompt(4, 6, 13)]
    by_visit = [r.ids for r in sim.same_snippets(trace, "visit", sep, fim)]
    assert by_visit == [prompt(1, 5, 10), prompt(1, 5, 11), prompt(1, 5, 12), prompt(4, 6, 13)]


def test_the_head_first_what_if_moves_the_lines_far_above_the_cursor_before_the_snippets() -> None:
    """The prefix's lines before the split (a multiple of STRIDE lines, at least NEAR above
    the cursor) go after the repository header as a block of their own: the file's marker
    and path, then those lines. A prefix shorter than that is left as it is."""
    sim = simulator()
    repo, sep, fim_prefix, fim_suffix, nl = 80, 90, 91, 92, 99
    markers = (sep, fim_prefix, fim_suffix)
    lines = [20, nl, 21, nl, 22, nl, 23, nl, 24, nl, 25]  # five whole lines, then the cursor
    ids = [repo, sep, 1, nl, sep, 5, nl, fim_prefix, *lines, fim_suffix, 30]
    moved = sim.head_first(ids, markers, frozenset({nl}), near_lines=2, stride=2)
    head = [sep, 5, nl, 20, nl, 21, nl]  # lines 0-1: the split at 2 of 5, the 3 after stay
    near = [22, nl, 23, nl, 24, nl, 25, fim_suffix, 30]
    assert moved == [repo, *head, sep, 1, nl, sep, 5, nl, fim_prefix, *near]
    assert sim.head_first(ids, markers, frozenset({nl}), near_lines=5, stride=2) == ids


def test_the_line_start_what_if_moves_the_typed_part_after_the_middle_marker() -> None:
    """As `completion.promptLayout` lineStart renders it; healed, the last token backed off."""
    sim = simulator()
    tokenizer = tiny_tokenizer()
    markers = tuple(
        tokenizer.token_to_id(f"<fim_{name}>") for name in ("prefix", "suffix", "middle")
    )

    def moved(prompt: str, heal: bool = False) -> str:
        ids = tokenizer.encode(prompt).ids
        return tokenizer.decode(
            sim.line_start(ids, markers, tokenizer, heal), skip_special_tokens=False
        )

    typed = "<file_sep><fim_prefix>a.py\nx = 1\n    y = sel<fim_suffix>f.z\n<fim_middle>"
    assert (
        moved(typed)
        == "<file_sep><fim_prefix>a.py\nx = 1\n<fim_suffix>f.z\n<fim_middle>    y = sel"
    )
    healed = moved(typed, heal=True)
    assert healed.startswith(moved(typed)[: moved(typed).index("<fim_middle>")])
    assert "    y = sel".startswith(healed.split("<fim_middle>")[1])
    assert len(healed) < len(moved(typed))
    indented = "<fim_prefix>x = 1\n    <fim_suffix>\n<fim_middle>"
    assert moved(indented) == indented
