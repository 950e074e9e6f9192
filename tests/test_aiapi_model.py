"""The model-written parts of `headstart aiapi generate --with-model`, against the fake
OpenAI-compatible model over HTTP: a good piece is kept and the client still passes mypy
--strict; a piece that breaks the module (unbalanced quotes, a type error mypy finds)
falls back to the generator's text alone; a backend that is down leaves the deterministic
output and one message; every request carries the refactor priority; and a credential
planted in the document never reaches a prompt."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from fake_openai import FakeBackend

from server.aiapi.document import ContractDocument, load_document
from server.aiapi.go_client import generate_go
from server.aiapi.model_go import write_go_parts
from server.aiapi.model_parts import PRIORITY, ModelOptions, ModelReport
from server.aiapi.model_python import render_docstring, write_python_parts
from server.aiapi.model_readme import readme_problem
from server.aiapi.model_test_values import operations_under_test
from server.aiapi.model_tests import proposal
from server.aiapi.python_client import generate_python
from server.aiapi.test_skeletons import generate_python_tests
from server.aiapi.verify import check_go, check_python
from server.backend.client import Priority
from server.config import BackendSettings

PETSTORE = ROOT / "tests" / "fixtures" / "openapi" / "petstore.yaml"
GITHUB_TOKEN = "ghp_4f9Qk2LmZx8RtY7bVw3NcP0aSdE6hJ1uKo5i"
STRIPE_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
GOOD_DOC = "List all pets, a page at a time.\n\nlimit: how many items to return at one time."
README = (
    "# Swagger Petstore client\n\nA typed client for the Swagger Petstore.\n\n"
    "```python\nfrom swagger_petstore_client import Client\n\n"
    'with Client("http://petstore.swagger.io/v1") as client:\n'
    "    pets = client.list_pets(limit=10)\n```\n"
)


def planted(tmp_path: Path) -> ContractDocument:
    """The petstore with example credentials in its descriptions."""
    text = PETSTORE.read_text(encoding="utf-8")
    text = text.replace(
        "  title: Swagger Petstore\n",
        "  title: Swagger Petstore\n"
        f"  description: 'Send the header X-Api-Key: {GITHUB_TOKEN} in each call'\n",
    )
    text = text.replace(
        "      operationId: listPets\n",
        f"      operationId: listPets\n      description: 'example key {STRIPE_KEY}'\n",
    )
    spec = tmp_path / "petstore.yaml"
    spec.write_text(text, encoding="utf-8")
    return load_document(spec)


def options(url: str, **limits: Any) -> ModelOptions:
    return ModelOptions(
        BackendSettings.model_validate({"url": url, "model": "fake-coder"}), **limits
    )


@dataclass
class Run:
    report: ModelReport
    client: str
    deterministic: str
    readme: str
    events: list[dict[str, Any]]
    package: Path
    tests: str


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, fake_server: FakeBackend) -> Iterator[Run]:
    """One run with a good docstring, one mypy rejects, one that does not compile, and a
    good README."""
    fake_server.reset()
    fake_server.script(
        [
            {"match": "The method `list_pets`", "text": GOOD_DOC},
            # compiles (a string expression), but mypy --strict rejects str + int
            {"match": "The method `create_pets`", "text": 'Create a pet.""" + 1 + """'},
            # unbalanced quotes: the module no longer parses
            {"match": "The method `show_pet_by_id`", "text": 'Info for a specific pet."'},
            {"match": "Write README.md", "text": README},
            # past int32: Prism answers 422, the test fails against the mock
            {"match": "The test of `list_pets`", "text": '{"limit": 99999999999}'},
            {"match": "The test of `show_pet_by_id`", "text": '```json\n{"pet_id": "7"}\n```'},
            {"match": "The test of `create_pets`", "text": '{"owner": "me"}'},
        ]
    )
    tmp_path = tmp_path_factory.mktemp("mixed")
    document = planted(tmp_path)
    package = generate_python(document, tmp_path / "out" / "python")
    tests = generate_python_tests(document, tmp_path / "out" / "python", package)
    deterministic = (package / "client.py").read_text(encoding="utf-8")
    report = write_python_parts(document, tmp_path / "out", options(fake_server.url))
    yield Run(
        report,
        (package / "client.py").read_text(encoding="utf-8"),
        deterministic,
        (tmp_path / "out" / "python" / "README.md").read_text(encoding="utf-8"),
        fake_server.events(),
        package,
        next(tests.glob("test_*.py")).read_text(encoding="utf-8"),
    )
    fake_server.reset()


def outcome(report: ModelReport, name: str) -> Any:
    return outcome_of(report, "docstring" if name != "README.md" else "readme", name)


def outcome_of(report: ModelReport, kind: str, name: str) -> Any:
    return next(piece for piece in report.pieces if (piece.kind, piece.name) == (kind, name))


def test_a_good_docstring_is_kept_and_the_client_passes_mypy(mixed: Run) -> None:
    assert outcome(mixed.report, "list_pets").kept
    assert '"""List all pets, a page at a time.\n' in mixed.client
    assert mixed.client.count("List all pets, a page at a time.") == 2  # Client, AsyncClient
    assert mixed.report.message is None
    checked = check_python(mixed.package, 600)
    assert checked.ok, checked.output


def test_a_docstring_that_breaks_the_code_falls_back_alone(mixed: Run) -> None:
    unbalanced = outcome(mixed.report, "show_pet_by_id")
    assert not unbalanced.kept and "no longer compiles" in unbalanced.reason
    typed = outcome(mixed.report, "create_pets")
    assert not typed.kept and "mypy --strict" in typed.reason
    assert '"""Info for a specific pet"""' in mixed.client  # the generator's own docstrings
    assert '"""Create a pet"""' in mixed.client
    assert "+ 1 +" not in mixed.client
    # kept: list_pets' docstring and test arguments, the README
    assert (mixed.report.kept, mixed.report.fell_back) == (3, 4)
    summary = mixed.report.summary()
    assert "3 kept, 4 fell back" in summary and "show_pet_by_id" in summary


def test_test_arguments_are_kept_when_mypy_and_prism_pass(mixed: Run) -> None:
    assert outcome_of(mixed.report, "test", "show_pet_by_id").kept
    assert 'client.show_pet_by_id(pet_id="7")' in mixed.tests
    rejected = outcome_of(mixed.report, "test", "list_pets")
    assert not rejected.kept and "failed against Prism" in rejected.reason
    assert "422" in rejected.reason and "99999999999" not in mixed.tests
    unknown = outcome_of(mixed.report, "test", "create_pets")
    assert not unknown.kept and "no such argument: owner" in unknown.reason
    assert "owner" not in mixed.tests


def test_test_arguments_that_are_not_a_json_object_are_refused() -> None:
    document = load_document(PETSTORE)
    op = next(
        stub.op for stub in operations_under_test(document) if stub.python_name == "list_pets"
    )
    assert "not JSON" in proposal("Sure! Here are some values:", op)[1]
    assert proposal("[1, 2]", op)[1] == "not a JSON object"
    assert proposal('{"limit": 5}', op) == ({"limit": 5}, "")


def test_the_readme_is_the_models_when_its_example_checks(mixed: Run) -> None:
    assert outcome(mixed.report, "README.md").kept
    assert "client.list_pets(limit=10)" in mixed.readme


def test_requests_carry_the_refactor_priority(mixed: Run) -> None:
    completions = [event for event in mixed.events if event["body"] and "prompt" in event["body"]]
    assert len(completions) == 7  # three docstrings, three tests' arguments, the README
    assert PRIORITY == Priority.REFACTOR
    assert {event["body"].get("priority") for event in completions} == {int(Priority.REFACTOR)}


def test_a_planted_credential_never_reaches_a_prompt(mixed: Run) -> None:
    prompts = [str(event["prompt"]) + str(event["body"]) for event in mixed.events]
    assert any("The method `list_pets`" in prompt for prompt in prompts)
    assert any("Write README.md" in prompt for prompt in prompts)
    for prompt in prompts:
        assert GITHUB_TOKEN not in prompt and STRIPE_KEY not in prompt
    assert any("<redacted>" in prompt for prompt in prompts)


def test_a_backend_that_is_down_leaves_the_deterministic_output(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    document = load_document(PETSTORE)
    package = generate_python(document, tmp_path / "python")
    before = (package / "client.py").read_bytes()
    report = write_python_parts(document, tmp_path, options(f"http://127.0.0.1:{port}/v1"))
    assert report.message is not None and "did not answer" in report.message
    assert "deterministic" in report.summary() and not report.pieces
    assert (package / "client.py").read_bytes() == before
    assert "## Operations" in (tmp_path / "python" / "README.md").read_text(encoding="utf-8")


def test_a_slow_model_runs_out_of_time_and_falls_back(tmp_path: Path, fake: FakeBackend) -> None:
    fake.script([{"match": "<|im_start|>", "text": "Too late.", "first_delay_ms": 3000}])
    document = load_document(PETSTORE)
    package = generate_python(document, tmp_path / "python")
    before = (package / "client.py").read_bytes()
    limits = {"request_timeout_s": 0.5, "budget_s": 5.0, "concurrency": 2}
    report = write_python_parts(document, tmp_path, options(fake.url, **limits))
    assert report.kept == 0 and report.fell_back == 4
    assert all("longer than" in piece.reason for piece in report.pieces)
    asked = [e for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert len(asked) == 4
    for event in asked:  # never more than `concurrency` requests in flight
        during = [
            other
            for other in asked
            if other["received_at"] <= event["received_at"] < (other["closed_at"] or 1e18)
        ]
        assert len(during) <= 2
    assert (package / "client.py").read_bytes() == before


def test_a_readme_whose_example_calls_an_unknown_method_is_refused() -> None:
    methods = {"list_pets"}
    assert readme_problem(README, methods) == ""
    invented = README.replace("list_pets(limit=10)", "delete_all_pets()")
    assert "delete_all_pets" in readme_problem(invented, methods)
    assert "does not parse" in readme_problem(README.replace("limit=10)", "limit=10"), methods)
    assert "masked" in readme_problem("# Pets\nkey <redacted>", methods)
    assert "heading" in readme_problem("{}", methods)
    names = ("swagger_petstore_client", "Swagger Petstore")
    assert readme_problem(README, methods, names) == ""
    assert "names neither" in readme_problem("# Hello\n", methods, names)


def test_the_command_line_keeps_the_deterministic_output_when_the_model_is_down(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HEADSTART_BACKEND_URL": f"http://127.0.0.1:{port}/v1"}
    out = tmp_path / "api"
    command = [sys.executable, "-m", "server", "aiapi", "generate", str(PETSTORE)]
    command += ["--lang", "python", "--kinds", "client", "--out", str(out), "--with-model"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "python: model-written parts: the model at" in done.stderr
    assert "did not answer" in done.stderr
    assert (out / "python" / "README.md").is_file()
    too_short = '{"backend": {"connectTimeoutMs": 1}}'
    bad = subprocess.run(
        [*command, "--settings", too_short], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert bad.returncode == 2 and "bad --settings" in bad.stderr


def test_a_backslash_in_a_docstring_is_written_as_the_model_wrote_it() -> None:
    rendered = render_docstring("Match ids like \\d+.", "    ")
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an invalid escape would warn
        exec(compile(f"def f() -> None:\n{rendered}", "<doc>", "exec"), namespace)
    assert namespace["f"].__doc__ == "Match ids like \\d+."


def test_go_doc_comments_are_kept_when_go_vet_passes(tmp_path: Path, fake: FakeBackend) -> None:
    if not (shutil.which("go") and shutil.which("gofmt")):
        pytest.skip("go missing (Debian golang-go): run bash server/aiapi/install_tools.sh")
    fake.script(
        [
            {
                "match": "The method `ListPets`",
                "text": "ListPets lists all pets.\n\nlimit: how many.",
            },
            {"match": "The method `ShowPetById`", "text": "{}"},  # no words: refused
        ],
        default_text="Creates a pet.",
    )
    document = planted(tmp_path)
    generate_go(document, tmp_path / "go")
    report = write_go_parts(document, tmp_path, options(fake.url))
    client = (tmp_path / "go" / "client.go").read_text(encoding="utf-8")
    assert (
        "// ListPets lists all pets.\n//\n// limit: how many.\nfunc (c *Client) ListPets(" in client
    )
    assert "// CreatePets: Creates a pet.\nfunc (c *Client) CreatePets(" in client
    assert "// ShowPetById: Info for a specific pet\nfunc (c *Client) ShowPetById(" in client
    refused = outcome_of(report, "comment", "ShowPetById")
    assert not refused.kept and "no words" in refused.reason
    assert not outcome_of(report, "readme", "README.md").kept  # "Creates a pet.": no heading
    assert (report.kept, report.fell_back) == (2, 2)
    assert check_go(tmp_path / "go").ok
    prompts = [e for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert {e["body"].get("priority") for e in prompts} == {int(Priority.REFACTOR)}
    assert not any(STRIPE_KEY in str(e["prompt"]) for e in prompts)
