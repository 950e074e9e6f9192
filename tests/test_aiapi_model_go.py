"""The Go output's model-written test values and README (server/aiapi/model_go.py,
model_test_values.py, model_readme.py), against the fake OpenAI-compatible model over HTTP
and the real gofmt and go vet: a value that fits its schema lands in contracttest/ and the
package still passes go vet; one that does not fit, or names an argument the test does not
take, falls back alone with its reason; the README is the model's when its Go example
parses and calls only methods the client has."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_openai import FakeBackend
from test_aiapi_model import STRIPE_KEY, options, outcome_of, planted
from test_aiapi_model_typescript import TS_README, require_typescript_tools, with_a_body

from server.aiapi.go_client import generate_go
from server.aiapi.model_go import write_go_parts
from server.aiapi.model_readme import GO, TYPESCRIPT, readme_problem
from server.aiapi.scaffold import check_go_package, generate_scaffolds

GO_README = (
    "# Swagger Petstore Go client\n\nA typed Go client for the Swagger Petstore.\n\n"
    '```go\nclient := api.NewClient("http://petstore.swagger.io/v1")\n'
    'pets, err := client.ShowPetById(context.Background(), "7")\n```\n'
)


def require_go() -> None:
    if not (shutil.which("go") and shutil.which("gofmt")):
        pytest.skip("go missing (Debian golang-go): run bash server/aiapi/install_tools.sh")


@pytest.mark.timeout(600)
def test_go_test_values_and_readme_land_when_the_schema_and_go_vet_pass(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_go()
    fake.script(
        [
            {"match": "The test of `ShowPetById`", "text": '{"petId": "rex-7"}'},
            # id is an integer in the document: refused before go vet runs
            {"match": "The test of `CreatePets`",
             "text": '{"body": {"id": "seven", "name": "Rex"}}'},
            # limit is optional: the Go test passes its params struct as nil
            {"match": "The test of `ListPets`", "text": '{"limit": 20}'},
            {"match": "Write README.md", "text": GO_README},
        ],
        default_text="Calls the operation.",
    )  # fmt: skip
    document = with_a_body(planted(tmp_path))
    generate_go(document, tmp_path / "go")
    generate_scaffolds(document, tmp_path, "go", ("tests",))
    tests = tmp_path / "go" / "contracttest" / "api_test.go"
    report = write_go_parts(document, tmp_path, options(fake.url))
    written = tests.read_text(encoding="utf-8")
    assert outcome_of(report, "test", "ShowPetById").kept
    assert 'client.ShowPetById(context.Background(), "rex-7")' in written
    misfit = outcome_of(report, "test", "CreatePets")
    assert not misfit.kept and "body does not fit its schema" in misfit.reason
    assert "seven" not in written
    unknown = outcome_of(report, "test", "ListPets")
    assert not unknown.kept and "no such argument: limit" in unknown.reason
    assert outcome_of(report, "readme", "README.md").kept
    readme = (tmp_path / "go" / "README.md").read_text(encoding="utf-8")
    assert 'client.ShowPetById(context.Background(), "7")' in readme
    # three comments and ShowPetById's values and the README kept; two tests fell back
    assert (report.kept, report.fell_back) == (5, 2)
    checked = check_go_package(tests.parent)
    assert checked.ok, checked.output
    prompts = [str(e["prompt"]) for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert len(prompts) == 7
    assert not any(STRIPE_KEY in prompt for prompt in prompts)


@pytest.mark.timeout(600)
def test_without_the_model_the_go_readme_is_the_generators(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_go()
    fake.script([{"match": "Write README.md", "text": "Sure, here it is."}], default_text="x")
    document = planted(tmp_path)
    generate_go(document, tmp_path / "go")
    report = write_go_parts(document, tmp_path, options(fake.url))
    refused = outcome_of(report, "readme", "README.md")
    assert not refused.kept and "heading" in refused.reason
    readme = (tmp_path / "go" / "README.md").read_text(encoding="utf-8")
    assert "## Operations" in readme and "| `ListPets` | `GET /pets` |" in readme


@pytest.mark.parametrize(
    ("language", "readme", "called", "unclosed"),
    [
        ("go", GO_README, "client.ShowPetById(", '"7")'),
        ("typescript", TS_README, "await listPets(", "limit: 10 } })"),
    ],
)
def test_a_readme_example_that_does_not_parse_or_calls_no_operation_is_refused(
    language: str, readme: str, called: str, unclosed: str
) -> None:
    if language == "go":
        require_go()
    else:
        require_typescript_tools()
    rules = {"go": GO, "typescript": TYPESCRIPT}[language]
    operations = {"ListPets", "ShowPetById", "listPets", "showPetById"}
    names = ("swagger-petstore", "Swagger Petstore")
    assert readme_problem(readme, operations, names, rules) == ""
    invented = readme.replace(called, called.replace("Pet", "AllPet").replace("list", "delete"))
    assert "which the client does not have" in readme_problem(invented, operations, names, rules)
    broken = readme.replace(unclosed, unclosed[:-1])
    assert f"{rules.language} example does not parse" in readme_problem(
        broken, operations, names, rules
    )
