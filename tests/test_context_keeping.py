"""The kept snippet set (`Budget.keep_snippets`, server/completion/context/keeping.py) at
the builder: when it gives way to the fresh set. Over LSP, tests/test_lsp_stable_prompts.py
shows it kept over a stay and replaced for a call that needs another definition."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from test_lsp_stable_prompts import AMOUNT, DESK, DISCOUNTED, LONG

from cache.index import ProjectIndex
from server.completion.context import Budget, Context, ContextBuilder
from server.completion.context.model import Snippet

KEEP = Budget(total=640, cross_file_share=0.3, similar_share=0.0, keep_snippets=True)


@pytest.fixture
def builder(tmp_path: Path) -> ContextBuilder:
    root = Path(shutil.copytree(ROOT / "examples" / "sample_project", tmp_path / "sample"))
    (root / "inventory" / "desk.py").write_text(DESK)
    index = ProjectIndex(root, cache_dir=tmp_path / "cache")
    index.build()
    return ContextBuilder(index)


def offset_of(line_text: str, below: int = 0) -> int:
    """The offset in DESK of the end of the line `line_text` (or the start of the line
    `below` lines under it)."""
    end = DESK.index(line_text) + len(line_text)
    for _ in range(below):
        end = DESK.index("\n", end) + 1
    return end


def shown(snippets: tuple[Snippet, ...]) -> list[tuple[str, str, str]]:
    return [(s.path, s.name, s.text) for s in snippets]


def build(builder: ContextBuilder, offset: int, budget: Budget = KEEP) -> Context:
    return builder.build("inventory/desk.py", DESK, offset, "python", budget)


def test_the_kept_set_stays_within_the_stay_and_a_closed_document_starts_anew(
    builder: ContextBuilder,
) -> None:
    first = build(builder, offset_of(DISCOUNTED))
    price = offset_of(AMOUNT, below=1)
    kept = build(builder, price)
    assert first.snippets and shown(kept.snippets) == shown(first.snippets)

    builder.forget("inventory/desk.py")
    anew = build(builder, price)
    fresh = ContextBuilder(builder.index).build("inventory/desk.py", DESK, price, "python", KEEP)
    assert shown(anew.snippets) == shown(fresh.snippets) != shown(first.snippets)


def test_a_kept_set_that_no_longer_fits_gives_way(builder: ContextBuilder) -> None:
    first = build(builder, offset_of(DISCOUNTED))
    cap = sum(len(s.text) for s in first.snippets) // 4  # chars/4: what the budget counts
    smaller = dataclasses.replace(KEEP, total=int(cap / KEEP.cross_file_share * 0.8))
    after = build(builder, offset_of(AMOUNT, below=1), smaller)
    assert shown(after.snippets) != shown(first.snippets)
    assert after.tokens <= smaller.available


def test_a_documents_first_build_is_the_same_whatever_the_window_may_keep(
    builder: ContextBuilder,
) -> None:
    """`windowKeepTokens` acts from a stay's second request on, so the task sets, which open
    each task's file fresh, build the very prompts they built with it off."""
    at = sum(len(line) + 1 for line in LONG.split("\n")[:200])
    built = [
        ContextBuilder(builder.index).build(
            "inventory/long_desk.py",
            LONG,
            at,
            "python",
            dataclasses.replace(KEEP, keep_window_tokens=keep),
        )
        for keep in (0, 256, 4096)
    ]
    assert not LONG.startswith(built[0].prefix)  # the window is cut: it has a start to keep
    assert all(b.prefix == built[0].prefix for b in built)
    assert all(shown(b.snippets) == shown(built[0].snippets) for b in built)
