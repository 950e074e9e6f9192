"""The editor's generate actions with `aiapi.withModel`, end to end over LSP: the server
spawned and driven by pytest-lsp as VS Code, its backend the fake OpenAI-compatible model.
With the setting, the Python client the action writes carries the model's docstring (and
the pieces that fail their checks keep the generator's text); without it, the model gets
no request at all."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CONFIG, ROOT
from fake_openai import FakeBackend
from lsp_helpers import open_document
from pytest_lsp import LanguageClient
from test_lsp_contracts import generate, scripted_editor, settings

from server.backend.client import Priority

PETSTORE = ROOT / "tests" / "fixtures" / "openapi" / "petstore.yaml"
GOOD_DOC = "List all pets, a page at a time.\n\nlimit: how many pets to return at one time."
CLIENT = Path("generated") / "python" / "swagger_petstore_client" / "client.py"


@pytest.fixture
def api(tmp_path: Path) -> Path:
    """A project holding the petstore."""
    folder = tmp_path / "api"
    folder.mkdir()
    shutil.copy(PETSTORE, folder / "petstore.yaml")
    return folder


def asked(fake: FakeBackend) -> list[dict[str, Any]]:
    """The completion requests the model received (not the /v1/models probes)."""
    return [e for e in fake.events() if isinstance(e["body"], dict) and "prompt" in e["body"]]


@pytest_lsp.fixture(config=CONFIG)
async def with_model(
    lsp_client: LanguageClient, fake: FakeBackend, api: Path
) -> AsyncIterator[None]:
    options = {**settings(fake.url), "aiapi": {"withModel": True}}
    await scripted_editor(lsp_client, "vscode", api, options)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def without_model(
    lsp_client: LanguageClient, fake: FakeBackend, api: Path
) -> AsyncIterator[None]:
    await scripted_editor(lsp_client, "vscode", api, settings(fake.url))
    yield
    await lsp_client.shutdown_session()


async def test_with_the_setting_the_generated_client_carries_the_models_docstring(
    with_model: LanguageClient, api: Path, fake: FakeBackend
) -> None:
    fake.script(
        [
            {"match": "The method `list_pets`", "text": GOOD_DOC},
            {"match": "The method `show_pet_by_id`", "text": "{}"},  # no words: refused
        ],
        default_text="Create a pet from the body.",  # also the README: no heading, refused
    )
    uri = open_document(with_model, api / "petstore.yaml", language_id="yaml")
    summary = await generate(with_model, uri, "client.python")
    assert summary["applied"], summary
    assert "python: model-written parts: 2 kept, 2 fell back" in summary["modelParts"]
    assert "docstring show_pet_by_id: it holds no words" in summary["modelParts"]
    client = (api / CLIENT).read_text()
    assert client.count('"""List all pets, a page at a time.\n') == 2  # Client, AsyncClient
    assert client.count('"""Create a pet from the body."""') == 2
    assert client.count('"""Info for a specific pet"""') == 2  # the generator's own
    requests = asked(fake)
    assert len(requests) == 4  # three docstrings and the README
    assert {e["body"].get("priority") for e in requests} == {int(Priority.REFACTOR)}
    (reports,) = [
        reports
        for token, reports in with_model.progress_reports.items()
        if str(token).startswith("headstart-contract-")
    ]
    assert reports[0].kind == "begin" and reports[0].message == "generating, then the model's parts"
    assert reports[-1].kind == "end" and reports[-1].message == "done"


async def test_without_the_setting_the_model_gets_no_request(
    without_model: LanguageClient, api: Path, fake: FakeBackend
) -> None:
    fake.script([], default_text="Never asked for.")
    uri = open_document(without_model, api / "petstore.yaml", language_id="yaml")
    summary = await generate(without_model, uri, "client.python")
    assert summary["applied"] and "modelParts" not in summary
    assert '"""List all pets"""' in (api / CLIENT).read_text()
    assert asked(fake) == []
    assert not (api / "generated" / "python" / "README.md").exists()
