"""`with_model` jobs of `headstart aiapi serve`: the real service as a subprocess, its
model the fake OpenAI-compatible server named in the operator's own settings
(HEADSTART_AIAPI_MODEL_SETTINGS). A job asked with_model gets the model's docstring in its
zip and a report that counts the pieces; a job without it sends the model nothing; and
nothing in a request can point the model elsewhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeBackend
from test_aiapi_service import (
    PETSTORE,
    Service,
    extract,
    finished,
    keys,  # noqa: F401 (the module's keys fixture)
    start_service,
    submit,
)

GOOD_DOC = "List all pets, a page at a time.\n\nlimit: how many pets to return at one time."


@pytest.fixture(scope="module")
def modelled(
    keys: tuple[Path, dict[str, str]],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
    fake_server: FakeBackend,
) -> Iterator[Service]:
    settings = {"backend": {"url": fake_server.url, "model": fake_server.model}}
    yield from start_service(
        keys[0], tmp_path_factory.mktemp("modelled"), model_settings=json.dumps(settings)
    )


def completions(fake: FakeBackend) -> list[dict[str, object]]:
    return [e for e in fake.events() if isinstance(e["body"], dict) and "prompt" in e["body"]]


@pytest.mark.timeout(600)
def test_a_with_model_job_keeps_the_models_docstring_and_counts_the_pieces(
    modelled: Service,
    keys: tuple[Path, dict[str, str]],  # noqa: F811
    fake: FakeBackend,
    tmp_path: Path,
) -> None:
    fake.script(
        [
            {"match": "The method `list_pets`", "text": GOOD_DOC},
            {"match": "The method `show_pet_by_id`", "text": "{}"},
            {"match": "Write README.md", "text": "no heading, so the generator's README stays"},
        ],
        default_text="Create a pet from the body.",
    )
    with modelled.client(keys[1]["alice"]) as alice:
        # a request cannot name a model: unknown parameters are not read
        job_id = submit(alice, PETSTORE, with_model="true", backend_url="http://127.0.0.1:9/v1")
        job = finished(alice, job_id, timeout=300)
        assert job["status"] == "completed", job
        assert job["with_model"] is True
        zipped = alice.get(job["result_url"])
    assert [part["language"] for part in job["model_parts"]] == ["python"]
    python = job["model_parts"][0]
    # kept: two docstrings; fell back: a docstring with no words, the README
    assert (python["kept"], python["fell_back"]) == (2, 2), python
    assert python["message"] is None
    assert any(why.startswith("docstring show_pet_by_id:") for why in python["fell_back_why"])
    assert any(why.startswith("readme README.md:") for why in python["fell_back_why"])
    assert any("model-written parts: 2 kept, 2 fell back" in line for line in job["progress"])
    extract(zipped.content, tmp_path / "unzipped")
    client = tmp_path / "unzipped" / "python" / "swagger_petstore_client" / "client.py"
    text = client.read_text()
    assert text.count("List all pets, a page at a time.") == 2  # Client and AsyncClient
    assert text.count('"""Info for a specific pet"""') == 2  # the generator's own
    asked = completions(fake)
    assert len(asked) == 4  # three docstrings and the README, all to the service's model
    assert all(e["body"]["model"] == fake.model for e in asked)  # type: ignore[index]


@pytest.mark.timeout(600)
def test_a_job_without_with_model_sends_the_model_nothing(
    modelled: Service,
    keys: tuple[Path, dict[str, str]],  # noqa: F811
    fake: FakeBackend,
) -> None:
    with modelled.client(keys[1]["bob"]) as bob:
        job = finished(bob, submit(bob, PETSTORE), timeout=300)
    assert job["status"] == "completed", job
    assert job["with_model"] is False and job["model_parts"] == []
    assert completions(fake) == []
