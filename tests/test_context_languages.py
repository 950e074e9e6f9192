"""The context builder on TypeScript and Go projects: types and imports resolved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from context_helpers import edited, index_of

from cache.index import ProjectIndex
from server.completion.context import (
    ContextBuilder,
    Snippet,
)
from server.completion.cursor import analyse

# --- TypeScript and Go -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ts_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProjectIndex]:
    index = index_of("context_ts", tmp_path_factory.mktemp("ts"))
    yield index
    index.close()


@pytest.fixture(scope="module")
def go_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProjectIndex]:
    index = index_of("context_go", tmp_path_factory.mktemp("go"))
    yield index
    index.close()


def best(index: ProjectIndex, path: str, language: str, anchor: str, body: str) -> Snippet:
    text, offset = edited(index, path, body, anchor)
    cursor = analyse(text, offset, language)
    return ContextBuilder(index).candidates(path, text, cursor)[0]


def test_typescript_constructed_variable_resolves_to_its_class(ts_index: ProjectIndex) -> None:
    top = best(ts_index, "src/app.ts", "typescript", "const w = new WH();\n", "  w.|\n")
    assert (top.path, top.name) == ("src/models.ts", "Warehouse")
    assert "add(item: Item): void" in top.text


def test_typescript_namespace_import_attribute(ts_index: ProjectIndex) -> None:
    body = "  util.verifyDirectory(|\n"
    top = best(ts_index, "src/app.ts", "typescript", "const w = new WH();\n", body)
    assert top.path == "src/util.ts"
    assert "export function verifyDirectory(path: string): boolean" in top.text


def test_go_constructor_result_resolves_to_the_struct_and_its_methods(
    go_index: ProjectIndex,
) -> None:
    top = best(go_index, "cmd/main.go", "go", "s := store.NewStore()\n", "\ts.|\n")
    assert top.path == "store/store.go"
    assert "func (s *Store) Add(sku string, n int)" in top.text


def test_go_aliased_package_import(go_index: ProjectIndex) -> None:
    top = best(go_index, "cmd/main.go", "go", "s := store.NewStore()\n", "\tu.Verify(|\n")
    assert top.path == "util/util.go" and "func Verify(path string) bool" in top.text
