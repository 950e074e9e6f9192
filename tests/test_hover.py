"""The LSP-free hover: the quick test for names that cannot resolve never hides a hover."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cache.index import ProjectIndex
from server.completion.context import ContextBuilder
from server.completion.cursor import analyse, chain_before
from server.features.hover import _declared, hover_at, may_resolve

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


def declared_by_regex(text: str, head: str) -> bool:
    """The declaration test as it was first written, one regex per name: the reference
    that the regex-free scan (`server.features.hover._declared`) must agree with."""
    escaped = re.escape(head)
    for pattern in (rf"{escaped}[ \t]*\??[ \t]*(?::(?!:)|=(?!=))", rf"as[ \t]+{escaped}\b"):
        for match in re.finditer(pattern, text):
            before = text[match.start() - 1] if match.start() else " "
            if not (before.isalnum() or before in "_.$"):
                return True
    return False


def test_the_declaration_scan_agrees_with_the_regex_on_real_files() -> None:
    files = [*FIXTURES.rglob("*.py"), *FIXTURES.rglob("*.ts"), Path(re.__file__)]
    checked = 0
    for path in files:
        text = path.read_text()
        for name in sorted(set(re.findall(r"[A-Za-z_$][\w$]*", text))):
            assert _declared(text, name) == declared_by_regex(text, name), (path, name)
            checked += 1
    assert checked > 500


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(["a", "ab", "as", " ", "\t", ":", "::", "=", "==", "?", ".", "$", "é",
                         "_", "1", "\n", "x", "(", ")"]),
        max_size=30,
    ).map("".join),
    name=st.sampled_from(["a", "ab", "as", "x", "$a", "a$", "_", "a1", "é", ""]),
)  # fmt: skip
def test_the_declaration_scan_never_turns_away_what_the_regex_lets_through(
    text: str, name: str
) -> None:
    """Where the regex finds a declaration, so does the scan. (The scan also finds one in
    a few texts where the regex's matches overlap, `xas as as` for `as`: that costs a full
    analysis, never a hover.)"""
    if declared_by_regex(text, name):
        assert _declared(text, name)
    elif _declared(text, name):
        assert name == "as" or "as" in text, (text, name)


def test_a_name_written_many_times_is_left_to_the_regexes() -> None:
    calls = "x(1)\n" * 100
    assert not _declared(calls, "x")
    assert _declared(calls + "x = 2\n", "x")
    assert _declared(calls + "with f() as x:\n", "x")
    assert not _declared(calls + "y.x = 2\n", "x")


@pytest.mark.parametrize(
    ("project", "language", "suffix"),
    [("refactor_py", "python", "*.py"), ("context_py", "python", "*.py"),
     ("context_ts", "typescript", "*.ts"), ("context_go", "go", "*.go")],
)  # fmt: skip
def test_the_analysis_without_names_resolves_the_same(
    project: str, language: str, suffix: str
) -> None:
    """A hover's analysis skips the names around the cursor; what resolution reads from
    it is the same as the full analysis's."""
    for path in (FIXTURES / project).rglob(suffix):
        text = path.read_text()
        for match in re.finditer(r"[A-Za-z_$][\w$]*", text):
            full = analyse(text, match.end(), language)
            light = analyse(text, match.end(), language, names=False)
            assert light.references == () and light.callee == ()
            for field in ("types", "imports", "bases", "scopes", "in_prose", "target", "line"):
                assert getattr(light, field) == getattr(full, field), (path, match, field)
