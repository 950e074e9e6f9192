"""Semantic tokens of TypeScript, TSX, JavaScript, Go, Rust and Java: golden files of the
`tokens_multi` project, classified with what the real project cache resolves its imports
to (so `crossFile` is tested end to end below the LSP layer).

Regenerate the golden files after an intended change with
`HEADSTART_UPDATE_GOLDEN=1 pytest tests/test_semantic_tokens_other.py`, and review the diff.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cache.index import ProjectIndex
from cache.languages import language_for
from server.completion.context import ContextBuilder
from server.completion.cursor import parse
from server.completion.trees import DocumentTrees
from server.features.semantic_tokens.document import DocumentTokens, classify_any
from server.features.semantic_tokens.encoding import Columns, delta, encode
from server.features.semantic_tokens.legend import FULL_LEGEND
from server.features.semantic_tokens.model import ProjectNames
from server.features.semantic_tokens.project import project_names

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROJECT = FIXTURES / "tokens_multi"
GOLDEN = FIXTURES / "tokens_golden"
FILES = [
    "web/checkout.ts",
    "web/models.ts",
    "web/view.tsx",
    "web/util.js",
    "go/cmd/main.go",
    "go/store/store.go",
    "rs/src/till.rs",
    "rs/src/store.rs",
    "java/com/acme/shop/Till.java",
    "java/com/acme/shop/Store.java",
]


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextBuilder]:
    tmp = tmp_path_factory.mktemp("tokens")
    root = Path(shutil.copytree(PROJECT, tmp / "tokens_multi"))
    index = ProjectIndex(root, cache_dir=tmp / "cache")
    index.build()
    yield ContextBuilder(index)
    index.close()


def rendered(path: str, builder: ContextBuilder | None) -> list[str]:
    """The file's tokens as `line:column word kind modifiers` (the golden format)."""
    text = (PROJECT / path).read_text()
    language = language_for(Path(path))
    assert language is not None
    names = project_names(builder, path, text, language) if builder else ProjectNames()
    root = parse(text.encode(), language)
    assert root is not None
    tokens = classify_any(root, language, names)
    assert tokens is not None
    lines = text.split("\n")
    return [
        f"{t.line}:{t.column} {lines[t.line][t.column : t.column + t.length]} {t.kind} "
        f"{' '.join(sorted(t.modifiers))}".rstrip()
        for t in tokens
    ]


@pytest.mark.parametrize("path", FILES)
def test_tokens_match_the_golden_file(path: str, builder: ContextBuilder) -> None:
    found = rendered(path, builder)
    golden = GOLDEN / (path.replace("/", "__") + ".txt")
    if os.environ.get("HEADSTART_UPDATE_GOLDEN"):
        golden.write_text("\n".join(found) + "\n")
    assert found == golden.read_text().splitlines()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("web/checkout.ts", ["0:9 Basket class crossFile",
                             "0:17 TAX_RATE variable crossFile readonly",
                             "10:23 makeBasket function crossFile"]),
        ("web/view.tsx", ["2:44 Basket class crossFile"]),
        ("web/util.js", ["5:17 makeBasket function crossFile"]),
        ("go/cmd/main.go", ["20:12 NewStore function crossFile",
                            "21:22 Capacity variable crossFile readonly",
                            "26:5 Println function"]),
        ("rs/src/till.rs", ["0:19 Store class crossFile",
                            "12:38 CAPACITY variable crossFile readonly",
                            "18:27 new method crossFile"]),
        ("java/com/acme/shop/Till.java", ["7:12 Store class crossFile",
                                          "16:46 CAPACITY property crossFile readonly"]),
    ],
)  # fmt: skip
def test_names_from_other_project_files_are_cross_file(
    path: str, expected: list[str], builder: ContextBuilder
) -> None:
    found = rendered(path, builder)
    for line in expected:
        assert line in found
    without_project = rendered(path, None)
    assert not any("crossFile" in line for line in without_project if "namespace" not in line)


def test_every_language_keeps_full_and_delta_in_step_through_document_tokens() -> None:
    """Each supported language through `DocumentTokens` (incremental re-parses): after an
    edit, the delta applied to the old data equals the new full data."""
    store = DocumentTokens(DocumentTrees())
    for path in FILES:
        text = (PROJECT / path).read_text()
        language = language_for(Path(path))
        assert language is not None
        first = store.tokens(path, text, language, ProjectNames())
        assert first, path
        old = encode(first, FULL_LEGEND, Columns(text))
        edited = text.replace("\n", "\n\n", 3)
        second = store.tokens(path, edited, language, ProjectNames())
        assert second is not None
        new = encode(second, FULL_LEGEND, Columns(edited))
        start, count, inserted = delta(old, new)
        assert old[:start] + inserted + old[start + count :] == new
        assert len(second) == len(first)
