"""`headstart aiapi generate` end to end: real OpenAPI documents (tests/fixtures/openapi,
see its README for where each comes from) through the CLI, with the real generators, the
real checkers (mypy --strict, tsc --noEmit, go vet) and the Python client's contract tests
against a real Prism mock.

The TypeScript, Go and Prism tools come from server/aiapi/install_tools.sh, which `make test`
runs (its e2e-deps step); without them these tests skip, or fail under
HEADSTART_REQUIRE_E2E=1 as `make test` sets it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "openapi"
REAL_DOCUMENTS = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".yaml"))
TOOLS = Path(os.environ.get("HEADSTART_TOOLS") or ROOT / ".tools")
OPENAPI_TS = TOOLS / "aiapi-node" / "node_modules" / ".bin" / "openapi-ts"
PRISM = TOOLS / "aiapi-mock" / "node_modules" / ".bin" / "prism"


def require_aiapi_tools() -> None:
    """Skip without Go or openapi-ts, unless `make test` promised them (then fail)."""
    missing = [
        what
        for what, present in (
            ("go (Debian golang-go)", shutil.which("go") and shutil.which("gofmt")),
            (f"openapi-ts ({OPENAPI_TS})", OPENAPI_TS.exists()),
            (f"prism ({PRISM})", PRISM.exists()),
            ("node", shutil.which("node")),
        )
        if not present
    ]
    if missing:
        reason = f"{', '.join(missing)} missing: run bash server/aiapi/install_tools.sh"
        if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def headstart(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", REAL_DOCUMENTS)
def test_real_document_generates_and_passes_every_checker(name: str, tmp_path: Path) -> None:
    require_aiapi_tools()
    out = tmp_path / "out"
    done = headstart(  # the clients; tests/test_aiapi_stubs.py covers the other kinds
        "aiapi", "generate", FIXTURES / name, "--kinds", "client", "--out", out, "--verify", "--zip"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for checker in ("mypy --strict passed", "tsc --noEmit passed", "go vet passed"):
        assert checker in done.stderr
    assert "python: contract tests against Prism passed" in done.stderr
    assert " ok;" in done.stderr  # at least one operation called
    (package,) = (out / "python").iterdir()
    client = (package / "client.py").read_text()
    assert "class Client:" in client and "class AsyncClient:" in client
    assert "import httpx" in client
    assert client.startswith('"""An httpx client for ')
    # dotted schema names (twilio's `lookups.v1.phone_number`) make models a package
    models = package / "models.py"
    models = models if models.exists() else package / "models" / "__init__.py"
    assert models.read_text().startswith('"""Models for ')
    assert (out / "typescript" / "src" / "zod.gen.ts").exists()
    assert "// A typed fetch client for" in (out / "typescript" / "src" / "sdk.gen.ts").read_text()
    go_client = (out / "go" / "client.go").read_text()
    assert "ctx context.Context" in go_client
    assert (out / "go" / "go.mod").read_text().startswith("module ")
    with zipfile.ZipFile(tmp_path / "out.zip") as bundle:
        assert "go/client.go" in bundle.namelist()


@pytest.mark.timeout(600)
def test_same_document_gives_byte_identical_output(tmp_path: Path) -> None:
    require_aiapi_tools()
    document = FIXTURES / "petstore.yaml"
    for run in ("first", "second"):
        done = headstart("aiapi", "generate", document, "--out", tmp_path / run, "--zip")
        assert done.returncode == 0, done.stderr
    first, second = tree_bytes(tmp_path / "first"), tree_bytes(tmp_path / "second")
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []
    assert (tmp_path / "first.zip").read_bytes() == (tmp_path / "second.zip").read_bytes()
    assert any(k.startswith("python/") for k in first)
    assert any(k.startswith("typescript/src/") for k in first)
    assert "go/client.go" in first


def write_broken(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The petstore with one line changed; the path and that line's number."""
    lines = (FIXTURES / "petstore.yaml").read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.strip() == old)
    lines[number - 1] = lines[number - 1].replace(old, new)
    broken = tmp_path / "broken.yaml"
    broken.write_text("".join(lines))
    return broken, number


def test_invalid_document_is_refused_with_its_line(tmp_path: Path) -> None:
    broken, line = write_broken(tmp_path, "in: query", "in: querry")
    done = headstart("aiapi", "generate", broken, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert f"broken.yaml:{line}: #/paths/~1pets/get/parameters/0/in: 'querry'" in done.stderr
    assert "'query'" in done.stderr  # what it could have been
    assert not (tmp_path / "out").exists()


def test_misspelt_schema_type_points_at_its_line(tmp_path: Path) -> None:
    broken, line = write_broken(tmp_path, "type: string", "type: strin")
    done = headstart("aiapi", "generate", broken, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert f"broken.yaml:{line}: " in done.stderr
    assert "'strin' is not one of" in done.stderr


def test_yaml_syntax_error_and_swagger_2_are_clear(tmp_path: Path) -> None:
    syntax = tmp_path / "syntax.yaml"
    syntax.write_text("openapi: 3.0.0\ninfo:\n  title: x\n  version: '1'\npaths: {\n")
    done = headstart("aiapi", "generate", syntax, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "syntax.yaml:6: not valid YAML" in done.stderr

    swagger = tmp_path / "swagger.yaml"
    swagger.write_text('swagger: "2.0"\ninfo: {title: x, version: "1"}\npaths: {}\n')
    done = headstart("aiapi", "generate", swagger, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "swagger.yaml:1: #/swagger: Swagger 2.0 is not OpenAPI 3.x" in done.stderr


def test_unknown_language_is_refused(tmp_path: Path) -> None:
    done = headstart(
        "aiapi", "generate", FIXTURES / "petstore.yaml", "--lang", "cobol", "--out", tmp_path
    )
    assert done.returncode == 2
    assert "unknown --lang cobol" in done.stderr


@pytest.mark.timeout(600)
def test_patterns_javascript_cannot_compile_do_not_break_the_typescript(tmp_path: Path) -> None:
    """AWS's documents carry Java-style patterns (\\p{XDigit}) and \\u0009 escapes, which
    openapi-ts would copy into regex literals that tsc rejects."""
    require_aiapi_tools()
    document = tmp_path / "patterns.yaml"
    document.write_text(
        "openapi: 3.0.3\n"
        "info: {title: Patterns, version: '1'}\n"
        "paths: {}\n"
        "components:\n"
        "  schemas:\n"
        "    Serial: {type: string, pattern: '^[\\p{XDigit}{2}:?]*'}\n"
        "    Body: {type: string, pattern: '^[\\u0009\\u000A\\u000D\\u0020-\\u00FF]*'}\n"
        "    Code: {type: string, pattern: '^[A-Z]{3}$'}\n"
    )
    out = tmp_path / "out"
    done = headstart(
        "aiapi", "generate", document, "--lang", "typescript", "--out", out, "--verify"
    )
    assert done.returncode == 0, done.stderr
    zod = (out / "typescript" / "src" / "zod.gen.ts").read_text()
    assert "XDigit" not in zod
    assert "\\x09\\x0A\\x0D" in zod
    assert "/^[A-Z]{3}$/" in zod


SPLIT = """\
openapi: 3.0.3
info: {title: Split, version: "1.0.0"}
paths:
  /names:
    get:
      operationId: listNames
      responses:
        "200":
          description: the names
          content:
            application/json:
              schema:
                $ref: "REF"
"""
NAMES = "Names:\n  type: array\n  items: {type: string}\n"


def split_document(folder: Path, ref: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    document = folder / "split.yaml"
    document.write_text(SPLIT.replace("REF", ref))
    return document


def test_refs_outside_the_documents_folder_or_to_urls_are_refused_with_their_lines(
    tmp_path: Path,
) -> None:
    planted = "PLANTED-SECRET-c0de"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "credentials.yaml").write_text(
        f"Names: {{type: array, items: {{type: string, default: '{planted}'}}}}\n"
    )
    document = split_document(tmp_path / "repo", "../home/credentials.yaml#/Names")
    text = document.read_text().replace(
        "paths:\n",
        'paths:\n  /remote:\n    $ref: "https://attacker.example/paths.yaml#/remote"\n',
    )
    document.write_text(text)
    lines = text.splitlines()
    outside = next(i for i, line in enumerate(lines, 1) if "../home/credentials.yaml" in line)
    remote = next(i for i, line in enumerate(lines, 1) if "https://attacker.example" in line)

    done = headstart("aiapi", "generate", document, "--lang", "python", "--out", tmp_path / "out")
    assert done.returncode == 2, done.stderr
    assert "refused: 2 $refs outside the document's folder or to a URL" in done.stderr
    assert (
        f"split.yaml:{outside}: #/paths/~1names/get/responses/200/content/application~1json/"
        "schema/$ref: $ref '../home/credentials.yaml#/Names' is refused: it resolves outside "
        "the document's folder" in done.stderr
    )
    assert f"split.yaml:{remote}: #/paths/~1remote/$ref: $ref 'https://attacker.example/" in (
        done.stderr
    )
    assert "it is a URL (https:)" in done.stderr
    assert done.stderr.count("(--allow-outside-refs follows it)") == 2
    assert planted not in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()


def test_allow_outside_refs_follows_them_as_before(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "names.yaml").write_text(NAMES)
    document = split_document(tmp_path / "repo", "../shared/names.yaml#/Names")
    out = tmp_path / "out"
    refused = headstart("aiapi", "generate", document, "--lang", "python", "--out", out)
    assert refused.returncode == 2 and "--allow-outside-refs" in refused.stderr
    done = headstart(
        "aiapi", "generate", document, "--lang", "python", "--kinds", "client", "--out", out,
        "--allow-outside-refs",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    client = (out / "python" / "split_client" / "client.py").read_text()
    assert "def list_names(self) -> list[str]:" in client  # the type shared/names.yaml gives

    help_text = headstart("aiapi", "generate", "--help").stdout
    assert "--allow-outside-refs" in help_text and "URLs" in help_text


def test_a_multi_file_document_beside_it_generates_by_default(tmp_path: Path) -> None:
    document = split_document(tmp_path / "repo", "schemas/names.yaml#/Names")
    (tmp_path / "repo" / "schemas").mkdir()
    (tmp_path / "repo" / "schemas" / "names.yaml").write_text(NAMES)
    out = tmp_path / "out"
    done = headstart(
        "aiapi", "generate", document, "--lang", "python", "--kinds", "client", "--out", out
    )
    assert done.returncode == 0, done.stderr
    client = (out / "python" / "split_client" / "client.py").read_text()
    assert "def list_names(self) -> list[str]:" in client
