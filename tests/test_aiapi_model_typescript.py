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
from pathlib import Path

import pytest
from conftest import ROOT
from fake_openai import FakeBackend
from test_aiapi_model import PETSTORE, STRIPE_KEY, options, outcome_of, planted

from server.aiapi.document import load_document
from server.aiapi.model_typescript import SDK_MODULE, sdk_functions, write_typescript_parts
from server.aiapi.operations import collect_operations
from server.aiapi.typescript_client import generate_typescript
from server.aiapi.verify import check_typescript
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
    assert (report.kept, report.fell_back) == (2, 1)
    checked = check_typescript(tmp_path / "typescript")
    assert checked.ok, checked.output
    prompts = [e for e in fake.events() if e["body"] and "prompt" in e["body"]]
    assert len(prompts) == 3
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
    assert (report.kept, report.fell_back) == (0, 3)
    assert all("longer than" in piece.reason for piece in report.pieces)
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
    assert "typescript: model-written parts: 3 kept, 0 fell back" in done.stderr
    written = (out / "typescript" / SDK_MODULE).read_text(encoding="utf-8")
    assert " * Lists all pets, a page at a time.\n" in comment_above(written, "listPets")
    assert check_typescript(out / "typescript").ok
