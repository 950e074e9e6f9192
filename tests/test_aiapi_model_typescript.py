"""The TypeScript client's model-written TSDoc comments (server/aiapi/model_typescript.py),
against the fake OpenAI-compatible model over HTTP and the real prettier and tsc: a good
comment lands above its function and the client still passes tsc --noEmit; an answer that
would end the comment early and put code in falls back alone; a check that does not pass
puts every comment back; `generate --lang typescript --with-model` uses them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT
from fake_openai import FakeBackend
from test_aiapi_model import PETSTORE, STRIPE_KEY, options, outcome_of, planted

from server.aiapi.document import ContractDocument, load_document
from server.aiapi.model_test_values import (
    TYPESCRIPT_ERROR,
    TYPESCRIPT_TEST_START,
    Skeleton,
    check_skeleton_with,
    typescript_slots,
)
from server.aiapi.model_typescript import SDK_MODULE, sdk_functions, write_typescript_parts
from server.aiapi.operations import collect_operations
from server.aiapi.scaffold import check_typescript_part, generate_scaffolds
from server.aiapi.typescript_client import generate_typescript
from server.aiapi.verify import CheckResult, check_typescript
from server.backend.client import Priority

TOOLS = Path(os.environ.get("HEADSTART_TOOLS") or ROOT / ".tools")
GOOD_COMMENT = "Lists all pets, a page at a time.\n\nlimit: how many pets to return at one time."
BREAKS_TSC = 'Info for a pet. */ export const broken: number = "x"; /*'


def require_typescript_tools() -> None:
    bins = TOOLS / "aiapi-node" / "node_modules" / ".bin"
    if all((bins / tool).exists() for tool in ("openapi-ts", "prettier", "tsc")) and (
        shutil.which("node")
    ):
        return
    reason = "openapi-ts, prettier or tsc missing: run bash server/aiapi/install_tools.sh"
    if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def comment_above(source: str, function: str) -> str:
    """The comment block right above `export const function = ...`."""
    found = re.search(
        rf"(/\*\*(?:(?!\*/).)*\*/)\nexport const {function} = ", source, flags=re.DOTALL
    )
    assert found is not None, f"no comment above {function}"
    return found.group(1)


@pytest.mark.timeout(600)
def test_good_comments_land_and_tsc_passes_and_a_breaking_one_falls_back(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_typescript_tools()
    fake.script(
        [
            {"match": "The function `listPets`", "text": GOOD_COMMENT},
            {"match": "The function `showPetById`", "text": BREAKS_TSC},
        ],
        default_text="Creates a pet from the body.",
    )
    document = planted(tmp_path)
    generate_typescript(document, tmp_path / "typescript")
    sdk = tmp_path / "typescript" / SDK_MODULE
    deterministic = sdk.read_text(encoding="utf-8")
    report = write_typescript_parts(document, tmp_path, options(fake.url))
    written = sdk.read_text(encoding="utf-8")
    assert comment_above(written, "listPets") == (
        "/**\n * Lists all pets, a page at a time.\n *\n"
        " * limit: how many pets to return at one time.\n */"
    )
    assert comment_above(written, "createPets") == "/**\n * Creates a pet from the body.\n */"
    assert comment_above(written, "showPetById") == comment_above(deterministic, "showPetById")
    assert "broken" not in written
    refused = outcome_of(report, "comment", "showPetById")
    assert not refused.kept and "*/" in refused.reason
    # the README's answer is the default text: no heading, the generator's README instead
    assert not outcome_of(report, "readme", "README.md").kept
    assert (report.kept, report.fell_back) == (2, 2)
    checked = check_typescript(tmp_path / "typescript")
    assert checked.ok, checked.output
    prompts = [e for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert len(prompts) == 4
    assert {e["body"].get("priority") for e in prompts} == {int(Priority.REFACTOR)}
    assert not any(STRIPE_KEY in str(e["prompt"]) for e in prompts)
    assert any("<redacted>" in str(e["prompt"]) for e in prompts)


@pytest.mark.timeout(600)
def test_a_check_that_does_not_pass_puts_every_comment_back(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_typescript_tools()
    fake.script([], default_text="A comment the checks never pass.")
    document = load_document(PETSTORE)
    generate_typescript(document, tmp_path / "typescript")
    sdk = tmp_path / "typescript" / SDK_MODULE
    before = sdk.read_bytes()
    # no prettier and tsc finish in a millisecond: the check fails as a failing tsc would
    report = write_typescript_parts(document, tmp_path, options(fake.url, check_timeout_s=0.001))
    assert (report.kept, report.fell_back) == (0, 4)
    comments = [piece for piece in report.pieces if piece.kind == "comment"]
    assert len(comments) == 3 and all("longer than" in piece.reason for piece in comments)
    assert sdk.read_bytes() == before


@pytest.mark.timeout(600)
def test_functions_are_matched_to_operations_by_method_and_url(tmp_path: Path) -> None:
    require_typescript_tools()
    document = load_document(ROOT / "tests" / "fixtures" / "openapi" / "nexmo_application.json")
    generate_typescript(document, tmp_path / "typescript")
    source = (tmp_path / "typescript" / SDK_MODULE).read_text(encoding="utf-8")
    found = {
        name: (op.method, op.route)
        for name, op in sdk_functions(source, collect_operations(document))
    }
    assert found == {
        "retrieveApplications": ("get", "/"),
        "createApplication": ("post", "/"),
        "deleteApplication": ("delete", "/{app_id}"),
        "retrieveApplication": ("get", "/{app_id}"),
        "updateApplication": ("put", "/{app_id}"),
    }


@pytest.mark.timeout(600)
def test_the_command_line_writes_typescript_comments_with_the_model(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_typescript_tools()
    fake.script(
        [{"match": "The function `listPets`", "text": GOOD_COMMENT}], default_text="Calls it."
    )
    env = {**os.environ, "HEADSTART_BACKEND_URL": fake.url, "HEADSTART_MODEL": fake.model}
    out = tmp_path / "api"
    command = [sys.executable, "-m", "server", "aiapi", "generate", str(PETSTORE), "--lang"]
    command += ["typescript", "--kinds", "client", "--out", str(out), "--with-model"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "typescript: model-written parts: 3 kept, 1 fell back" in done.stderr
    assert "readme README.md: it has no heading" in done.stderr  # "Calls it."
    assert "## Operations" in (out / "typescript" / "README.md").read_text(encoding="utf-8")
    written = (out / "typescript" / SDK_MODULE).read_text(encoding="utf-8")
    assert " * Lists all pets, a page at a time.\n" in comment_above(written, "listPets")
    assert check_typescript(out / "typescript").ok


TS_README = (
    "# Swagger Petstore TypeScript client\n\nA typed client for the Swagger Petstore.\n\n"
    '```ts\nimport { createClient } from "./src/client";\n'
    'import { listPets } from "./src/sdk.gen";\n\n'
    'const client = createClient({ baseUrl: "http://petstore.swagger.io/v1" });\n'
    "const { data } = await listPets({ client, query: { limit: 10 } });\n```\n"
)


def with_a_body(document: ContractDocument) -> ContractDocument:
    """The document with a Pet as createPets' required JSON body."""
    text = document.path.read_text(encoding="utf-8").replace(
        "      operationId: createPets\n",
        "      operationId: createPets\n      requestBody:\n        required: true\n"
        "        content:\n          application/json:\n            schema:\n"
        '              $ref: "#/components/schemas/Pet"\n',
    )
    document.path.write_text(text, encoding="utf-8")
    return load_document(document.path)


@pytest.mark.timeout(600)
def test_test_values_and_readme_land_when_the_schema_and_tsc_pass(
    tmp_path: Path, fake: FakeBackend
) -> None:
    require_typescript_tools()
    if not (TOOLS / "aiapi-scaffold" / "node_modules" / "vitest").exists():
        pytest.skip("vitest missing: run bash server/aiapi/install_tools.sh")
    fake.script(
        [
            {"match": "The test of `listPets`", "text": '{"limit": 20}'},
            # petId is a string in the document: refused before any checker runs
            {"match": "The test of `showPetById`", "text": '{"petId": 42}'},
            # valid JSON Schema (Pet allows more properties), but tsc refuses the literal
            {"match": "The test of `createPets`",
             "text": '{"body": {"id": 7, "name": "Rex", "owner": "me"}}'},
            {"match": "Write README.md", "text": TS_README},
        ],
        default_text="Calls the operation.",
    )  # fmt: skip
    document = with_a_body(planted(tmp_path))
    folder = tmp_path / "typescript"
    generate_typescript(document, folder)
    generate_scaffolds(document, tmp_path, "typescript", ("tests",))
    tests = folder / "tests" / "api.test.ts"
    deterministic = tests.read_text(encoding="utf-8")
    report = write_typescript_parts(document, tmp_path, options(fake.url))
    written = tests.read_text(encoding="utf-8")
    assert outcome_of(report, "test", "listPets").kept
    assert (
        "query: { limit: 20 }" in written
        and "query" not in deterministic.split("listPets(")[1][:40]
    )
    misfit = outcome_of(report, "test", "showPetById")
    assert not misfit.kept and "petId does not fit its schema" in misfit.reason
    refused = outcome_of(report, "test", "createPets")
    assert not refused.kept and "tsc --noEmit failed" in refused.reason, refused.reason
    assert "owner" not in written and "Rex" not in written
    assert outcome_of(report, "readme", "README.md").kept
    assert "await listPets({ client, query: { limit: 10 } })" in (folder / "README.md").read_text()
    checked = check_typescript_part(folder / "tests")
    assert checked.ok, checked.output
    prompts = [str(e["prompt"]) for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert len(prompts) == 7  # three comments, three tests' values, the README
    assert not any(STRIPE_KEY in prompt for prompt in prompts)


def test_a_tsc_error_is_blamed_on_the_test_it_points_into_even_when_the_label_wraps(
    tmp_path: Path,
) -> None:
    wrapped = (
        'describe.skipIf(!baseUrl)("Petstore", () => {\n'
        '  test("listPets: GET /pets", async () => {\n    a;\n  });\n\n'
        "  test(\n"
        '    "createPetsWithAVeryLongName: POST /pets/with/a/route/long/enough/to/wrap",\n'
        "    async () => {\n      b;\n    },\n  );\n});\n"
    )
    module = tmp_path / "api.test.ts"
    module.write_text(wrapped, encoding="utf-8")
    error = "tests/api.test.ts(9,7): error TS2353: Object literal may only specify known.\n"
    names = {"listPets", "createPetsWithAVeryLongName"}
    skeleton = Skeleton(
        "typescript", module, typescript_slots, lambda values: wrapped, lambda: None,
        lambda timeout_s: CheckResult("typescript", "tsc --noEmit", False, 0.1, error),
        TYPESCRIPT_ERROR, TYPESCRIPT_TEST_START,
    )  # fmt: skip
    blamed = check_skeleton_with(skeleton, {}, names, 1.0)
    assert blamed == {"createPetsWithAVeryLongName": "tsc --noEmit failed: TS2353: Object "
                      "literal may only specify known."}  # fmt: skip
    outside = CheckResult("typescript", "tsc --noEmit", False, 0.1, error.replace("(9,", "(12,"))
    elsewhere = replace(skeleton, check=lambda timeout_s: outside)
    blamed = check_skeleton_with(elsewhere, {}, names, 1.0)
    assert set(blamed) == names  # an error outside every test blames all of them
