"""`headstart aiapi generate --react-query`: openapi-ts's @tanstack/react-query plugin adds
query and mutation options to the TypeScript client, the real tsc accepts them (and the
README's example) against the pinned @tanstack/react-query, and rejects a wrong use, so a
pass means the options are typed; without the flag nothing of it is written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT
from test_aiapi_cli import FIXTURES, OPENAPI_TS, headstart, require_aiapi_tools

from server.aiapi.document import load_document
from server.aiapi.typescript_client import generate_typescript
from server.aiapi.typescript_react_query import HOOKS_FILE, REACT_QUERY_RANGE
from server.aiapi.verify import check_typescript

PETSTORE = FIXTURES / "petstore.yaml"


@pytest.mark.timeout(600)
def test_react_query_options_are_generated_and_pass_tsc(tmp_path: Path) -> None:
    require_aiapi_tools()
    out = tmp_path / "out"
    done = headstart(
        "aiapi", "generate", PETSTORE, "--lang", "typescript", "--kinds", "client",
        "--react-query", "--out", out, "--verify",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "typescript: tsc --noEmit passed" in done.stderr
    assert "typescript: contract tests against Prism passed" in done.stderr
    folder = out / "typescript"
    hooks = (folder / HOOKS_FILE).read_text()
    assert hooks.startswith("// A typed fetch client for Swagger Petstore")
    assert 'from "@tanstack/react-query"' in hooks
    # the petstore's two reads get queryOptions, its one write mutationOptions
    queries = re.findall(r"^export const (\w+)Options = \([^;]*?\) =>\s+queryOptions<", hooks, re.M)
    mutations = re.findall(
        r"^export const (\w+)Mutation = \([^;]*?\): UseMutationOptions<", hooks, re.M
    )
    assert sorted(queries) == ["listPets", "showPetById"]
    assert mutations == ["createPets"]
    package = json.loads((folder / "package.json").read_text())
    assert package["dependencies"]["@tanstack/react-query"] == REACT_QUERY_RANGE
    readme = (folder / "README.md").read_text()
    (example,) = re.findall(r"```tsx\n(.*?)```", readme, re.DOTALL)
    assert "useQuery(listPetsOptions(options))" in example
    assert "useMutation(createPetsMutation())" in example

    # the README's example, as the user's code beside the client: tsc takes it as it is
    (folder / "src" / "readme_example.ts").write_text(example.replace("./src/", "./"))
    checked = check_typescript(folder)
    assert checked.ok, checked.output
    # and refuses a wrong use, so the options are typed by @tanstack/react-query, not any
    (folder / "src" / "wrong_use.ts").write_text(
        'import { listPetsOptions } from "./@tanstack/react-query.gen";\n'
        "export const limit: number = listPetsOptions({ query: { limit: 2 } }).queryKey;\n"
    )
    wrong = check_typescript(folder)
    assert not wrong.ok
    assert "wrong_use.ts(2," in wrong.output and "not assignable to type 'number'" in wrong.output


def test_without_the_flag_there_are_no_hooks_and_no_dependency(tmp_path: Path) -> None:
    if not OPENAPI_TS.exists():
        pytest.skip("openapi-ts missing: run bash server/aiapi/install_tools.sh")
    folder = generate_typescript(load_document(PETSTORE), tmp_path / "typescript")
    assert (folder / "src" / "sdk.gen.ts").exists()
    assert not (folder / "src" / "@tanstack").exists()
    assert not (folder / "README.md").exists()
    package = json.loads((folder / "package.json").read_text())
    assert list(package["dependencies"]) == ["zod"]
    assert "tanstack" not in "".join(p.read_text() for p in (folder / "src").rglob("*.ts"))


def test_react_query_without_typescript_is_refused(tmp_path: Path) -> None:
    done = headstart(
        "aiapi", "generate", PETSTORE, "--lang", "python,go", "--react-query",
        "--out", tmp_path / "out",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--react-query adds hooks to the TypeScript client" in done.stderr
    assert "add typescript to --lang (now python,go)" in done.stderr
    assert not (tmp_path / "out").exists()


def test_generated_range_admits_the_version_tsc_checks_against() -> None:
    """The package.json a user installs asks for what the hooks were checked with."""
    tools = json.loads((ROOT / "server" / "aiapi" / "node" / "package.json").read_text())
    assert "^" + tools["dependencies"]["@tanstack/react-query"] == REACT_QUERY_RANGE
