"""The LSP-free hover: the quick test for names that cannot resolve never hides a hover."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cache.index import ProjectIndex
from server.context import ContextBuilder
from server.cursor import chain_before
from server.hover import hover_at, may_resolve

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(
    ("project", "language"),
    [("refactor_py", "python"), ("context_py", "python"), ("context_ts", "typescript")],
)
def test_names_the_quick_test_turns_away_have_no_hover(
    tmp_path: Path, project: str, language: str
) -> None:
    """Wherever `may_resolve` says no, the full analysis finds nothing either. (Not the
    converse: the analysis parses under a time budget, and a loaded machine can make it
    give up, so only this direction is certain.)"""
    root = Path(shutil.copytree(FIXTURES / project, tmp_path / project))
    index = ProjectIndex(root, cache_dir=tmp_path / "cache")
    index.build()
    builder = ContextBuilder(index)
    turned_away = found = 0
    for path in sorted(index.records):
        text = (root / path).read_text()
        for match in re.finditer(r"[A-Za-z_$][\w$]*", text):
            objects, word, after_dot = chain_before(text, match.end(), language)
            chain = (*objects, word) if after_dot else (word,)
            full = hover_at(builder, path, text, match.end(), language, quick=False)
            found += full is not None
            if not may_resolve(chain, text, language):
                turned_away += 1
                assert full is None, (path, match.group(), match.end())
    assert found > 5 and turned_away > 5
    index.close()


def test_names_that_cannot_resolve() -> None:
    text = "import os\nfrom m import Repo\nx = Repo()\nwith open(p) as handle:\n    pass\n"
    assert may_resolve(("Repo",), text, "python")
    assert may_resolve(("x",), text, "python")  # x = Repo(): a local type
    assert may_resolve(("handle",), text, "python")
    assert may_resolve(("os", "path"), text, "python")
    assert may_resolve(("self", "repo"), text, "python")
    assert not may_resolve(("print",), text, "python")
    assert not may_resolve(("p",), text, "python")
    assert may_resolve(("anything",), "package main\n", "go")  # same-package names
