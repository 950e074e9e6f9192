"""The editor's TypeScript generate action with `aiapi.reactQuery`, end to end over LSP:
the server spawned and driven by pytest-lsp as VS Code. With the setting, the files it
writes hold openapi-ts's React Query options and the dependency on @tanstack/react-query;
without it, neither."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CONFIG, ROOT
from fake_openai import FakeBackend
from lsp_helpers import open_document
from pytest_lsp import LanguageClient
from test_aiapi_cli import require_aiapi_tools
from test_lsp_contracts import generate, scripted_editor, settings

PETSTORE = ROOT / "tests" / "fixtures" / "openapi" / "petstore.yaml"
TYPESCRIPT = Path("generated") / "typescript"
HOOKS = TYPESCRIPT / "src" / "@tanstack" / "react-query.gen.ts"


@pytest.fixture
def api(tmp_path: Path) -> Path:
    """A project holding the petstore."""
    require_aiapi_tools()
    folder = tmp_path / "api"
    folder.mkdir()
    shutil.copy(PETSTORE, folder / "petstore.yaml")
    return folder


@pytest_lsp.fixture(config=CONFIG)
async def with_react_query(
    lsp_client: LanguageClient, fake: FakeBackend, api: Path
) -> AsyncIterator[None]:
    options = {**settings(fake.url), "aiapi": {"reactQuery": True}}
    await scripted_editor(lsp_client, "vscode", api, options)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def without_react_query(
    lsp_client: LanguageClient, fake: FakeBackend, api: Path
) -> AsyncIterator[None]:
    await scripted_editor(lsp_client, "vscode", api, settings(fake.url))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.timeout(300)
async def test_with_the_setting_the_typescript_client_has_the_options(
    with_react_query: LanguageClient, api: Path
) -> None:
    uri = open_document(with_react_query, api / "petstore.yaml", language_id="yaml")
    summary = await generate(with_react_query, uri, "client.typescript")
    assert summary["applied"], summary
    hooks = (api / HOOKS).read_text()
    assert "export const listPetsOptions = " in hooks
    assert "export const createPetsMutation = " in hooks
    package = json.loads((api / TYPESCRIPT / "package.json").read_text())
    assert "@tanstack/react-query" in package["dependencies"]
    assert "useQuery(listPetsOptions(options))" in (api / TYPESCRIPT / "README.md").read_text()


@pytest.mark.timeout(300)
async def test_without_the_setting_there_are_none(
    without_react_query: LanguageClient, api: Path
) -> None:
    uri = open_document(without_react_query, api / "petstore.yaml", language_id="yaml")
    summary = await generate(without_react_query, uri, "client.typescript")
    assert summary["applied"], summary
    assert (api / TYPESCRIPT / "src" / "sdk.gen.ts").exists()
    assert not (api / HOOKS).exists() and not (api / TYPESCRIPT / "README.md").exists()
    package = json.loads((api / TYPESCRIPT / "package.json").read_text())
    assert list(package["dependencies"]) == ["zod"]
