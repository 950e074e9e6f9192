"""OpenAPI documents in the editor, end to end over LSP: schema errors as diagnostics at
their lines (and gone once fixed), the generate actions, "Generate client (Python)"
applying through workspace/applyEdit the very files `headstart aiapi generate` writes,
replacing changed files only after the user agrees, a clear message on an invalid
document, a Swagger 2.0 one or a missing tool, and completions answered meanwhile.

The documents are real (tests/fixtures/openapi, see its README); the generators, the
validator and the worker processes are the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import pytest_lsp
from conftest import CONFIG, ROOT, fast_settings, server_env, server_with_env, start_session
from fake_openai import FakeBackend
from lsp_helpers import (
    cursor_at,
    logs,
    open_document,
    partial_change,
    read_code_actions_as_editors_do,
    suggestion,
    wait_for_log,
    wait_for_shown,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from server.features.contracts import ContractKind, detect

FIXTURES = ROOT / "tests" / "fixtures" / "openapi"
GENERATE = "headstart.generateFromContract"
CLIENT_FILES = ["__init__.py", "client.py", "models.py", "py.typed"]
REQUEST_FAILED = -32803
SETTINGS = {"contracts": {"diagnosticsDelayMs": 300}}
SWAGGER = """swagger: "2.0"
info:
  title: Old
  version: "1"
paths: {}
"""


def settings(url: str) -> dict[str, Any]:
    return {**fast_settings(url), **SETTINGS}


@pytest.fixture
def api(tmp_path: Path) -> Path:
    """A project holding the petstore and a copy with a misspelt parameter location."""
    folder = tmp_path / "api"
    folder.mkdir()
    shutil.copy(FIXTURES / "petstore.yaml", folder / "petstore.yaml")
    broken = (FIXTURES / "petstore.yaml").read_text().replace("in: query", "in: querry")
    (folder / "broken.yaml").write_text(broken)
    (folder / "old.yaml").write_text(SWAGGER)
    return folder


@pytest_lsp.fixture(config=CONFIG)
async def editor(lsp_client: LanguageClient, fake: FakeBackend, api: Path) -> AsyncIterator[None]:
    """A VS Code session that applies the server's edits as an editor would, writing the
    files, and answers "Replace?" with what the test put in `answers`."""
    await scripted_editor(lsp_client, "vscode", api, settings(fake.url))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def either_editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, fake: FakeBackend, api: Path
) -> AsyncIterator[None]:
    """The same, as VS Code (which shows disabled actions) and as Neovim (which does not)."""
    await scripted_editor(lsp_client, request.param, api, settings(fake.url))
    yield
    await lsp_client.shutdown_session()


async def scripted_editor(
    client: LanguageClient, editor: str, api: Path, options: dict[str, Any]
) -> None:
    applied: list[types.ApplyWorkspaceEditParams] = []
    answers: list[str] = []
    asked: list[types.ShowMessageRequestParams] = []
    client.applied = applied  # type: ignore[attr-defined]
    client.answers = answers  # type: ignore[attr-defined]
    client.asked = asked  # type: ignore[attr-defined]
    client.editor = editor  # type: ignore[attr-defined]
    read_code_actions_as_editors_do(client)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        apply_to_disk(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        asked.append(params)
        return types.MessageActionItem(title=answers.pop(0)) if answers else None

    await start_session(client, editor, api, options)


def apply_to_disk(edit: types.WorkspaceEdit) -> None:
    """Create each file (emptying it with `overwrite`) and insert its text, as editors do."""
    for change in edit.document_changes or []:
        if isinstance(change, types.CreateFile):
            path = Path(unquote(urlsplit(change.uri).path))
            exists = path.exists()
            overwrite = change.options is not None and change.options.overwrite
            assert not exists or overwrite, f"{path} would be overwritten without `overwrite`"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
        elif isinstance(change, types.TextDocumentEdit):
            path = Path(unquote(urlsplit(change.text_document.uri).path))
            (text_edit,) = change.edits
            assert isinstance(text_edit, types.TextEdit)
            assert text_edit.range.start == text_edit.range.end == types.Position(0, 0)
            path.write_bytes(path.read_bytes() + text_edit.new_text.encode())
        else:
            raise AssertionError(f"unexpected change {change!r}")


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


async def diagnostics_of(
    client: LanguageClient, uri: str, settled: Any, timeout: float = 60
) -> list[types.Diagnostic]:
    """The document's diagnostics once `settled(diagnostics)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        found = client.diagnostics.get(uri)
        if found is not None and settled(found):
            return list(found)
        if time.monotonic() > deadline:
            raise AssertionError(f"diagnostics of {uri} never settled; last: {found}")
        await asyncio.sleep(0.05)


async def actions_of(client: LanguageClient, uri: str) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def generate(client: LanguageClient, uri: str, target: str) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=GENERATE, arguments=[{"uri": uri, "target": target}])
    )


async def suggest_in_a_new_file(client: LanguageClient, folder: Path, name: str) -> str:
    """A suggestion in a file of its own: a model request (no cached suggestion serves it)."""
    code, position = cursor_at(f"def total_{name}(items):\n    █\n")
    return await suggestion(
        client, open_document(client, folder / f"total_{name}.py", code), position
    )


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on this machine that answers any GET with a schema and records its
    path: (its base URL, the paths asked for). A `$ref` the editor follows would show here."""
    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"type: object\n")

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{web.server_address[1]}", hits
        finally:
            web.shutdown()


def cli_output(spec: Path, out: Path, kinds: str) -> dict[str, bytes]:
    """What `headstart aiapi generate SPEC --lang python --kinds KINDS` writes."""
    done = subprocess.run(
        [sys.executable, "-m", "server", "aiapi", "generate", str(spec), "--lang", "python",
         "--kinds", kinds, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tree_bytes(out / "python")


# --- detection, before any parse ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "line"),
    [
        ('openapi: "3.0.0"\ninfo: {}\n', ContractKind.OPENAPI3, 0),
        ("info:\n  title: x\nopenapi: 3.1.0\n", ContractKind.OPENAPI3, 2),
        ('{"openapi":"3.0.1","info":{}}', ContractKind.OPENAPI3, 0),
        ('{\n  "info": {"openapi": "3.0.0"},\n  "openapi": "3.1.0"\n}', ContractKind.OPENAPI3, 2),
        (SWAGGER, ContractKind.SWAGGER2, 0),
        ('{"swagger": "2.0"}', ContractKind.SWAGGER2, 0),
    ],
)
def test_a_top_level_openapi_or_swagger_key_is_detected(
    text: str, kind: ContractKind, line: int
) -> None:
    detected = detect(text)
    assert detected is not None and detected.kind is kind and detected.line == line


@pytest.mark.parametrize(
    "text",
    [
        "info:\n  openapi: 3.0.0\n",  # nested in YAML
        '{\n  "tool": {\n    "openapi": "3.0.0"\n  }\n}',  # nested in JSON
        '{"tool": {"openapi": "3.0.0"}}',  # nested, minified
        "openapi: 2.0\n",  # not 3.x
        'openapi: "3.0.0"\x00\x01',  # binary
        "name: ci\non: push\n",
    ],
)
def test_anything_else_is_not_a_contract(text: str) -> None:
    assert detect(text) is None


# --- over LSP -----------------------------------------------------------------------------------


async def test_schema_errors_are_diagnostics_at_their_lines_and_the_actions_say_why(
    editor: LanguageClient, api: Path
) -> None:
    path = api / "broken.yaml"
    text = path.read_text()
    uri = open_document(editor, path, language_id="yaml")
    (problem,) = await diagnostics_of(editor, uri, bool)
    assert problem.range.start.line == 17  # line 18, `in: querry`
    assert problem.range.start.character == text.splitlines()[17].index("in:")
    assert problem.severity == types.DiagnosticSeverity.Error
    assert "'querry' is not one of" in problem.message and "'query'" in problem.message
    assert problem.message.startswith("#/paths/~1pets/get/parameters/0/in")

    # the actions are offered; run, they say why nothing is generated
    titles = [action.title for action in await actions_of(editor, uri)]
    assert titles == [
        f"Headstart: Generate {what} ({language})"
        for what in ("client", "server stub", "contract tests")
        for language in ("Python", "TypeScript", "Go")
    ]
    with pytest.raises(JsonRpcException) as failed:
        await generate(editor, uri, "client.python")
    assert failed.value.code == REQUEST_FAILED
    shown = await wait_for_shown(editor, "not a valid OpenAPI 3.x document")
    assert "broken.yaml" in shown and "line 18" in shown and "'querry'" in shown
    assert "nothing generated" in shown
    assert editor.applied == []  # type: ignore[attr-defined]
    assert not (api / "generated").exists()

    at = text.splitlines()[17].index("querry")
    end = at + len("querry")
    for version, typed in enumerate(("quer", "que", "query"), start=2):  # typing on, then fixed
        editor.text_document_did_change(
            partial_change(uri, version, types.Position(17, at), types.Position(17, end), typed)
        )
        end = at + len(typed)
    assert await diagnostics_of(editor, uri, lambda found: not found) == []
    checks = [line for line in logs(editor).splitlines() if "OpenAPI validation of" in line]
    assert len(checks) == 2, checks  # as opened, then once typing paused: not per keystroke


async def test_diagnostics_never_fetch_a_ref_to_a_url(editor: LanguageClient, api: Path) -> None:
    """A document someone else wrote must not make the editor fetch URLs as it is typed in."""
    with recording_server() as (base, hits):
        remote = f"{base}/pet.yaml"
        text = (
            (FIXTURES / "petstore.yaml")
            .read_text()
            .replace('$ref: "#/components/schemas/Pet"', f'$ref: "{remote}"', 1)
        )
        assert remote in text
        uri = open_document(editor, api / "remote.yaml", text, language_id="yaml")
        (problem,) = await diagnostics_of(editor, uri, bool)
    assert f"$ref '{remote}' is refused: it is a URL (http:)" in problem.message
    assert hits == []


async def test_generate_client_python_applies_the_files_the_cli_writes(
    editor: LanguageClient, api: Path, fake: FakeBackend, tmp_path: Path
) -> None:
    spec = api / "petstore.yaml"
    uri = open_document(editor, spec, language_id="yaml")
    actions = {action.title: action for action in await actions_of(editor, uri)}
    python = actions["Headstart: Generate client (Python)"]
    assert python.kind == "source.headstart.generate.client.python" and python.disabled is None
    assert python.command is not None and python.command.command == GENERATE
    fake.script([{"text": "return total\n", "chunk_chars": 4}])
    await suggest_in_a_new_file(editor, api, "warm")  # the session's first request: its setup

    job = asyncio.ensure_future(
        editor.workspace_execute_command_async(
            types.ExecuteCommandParams(command=GENERATE, arguments=python.command.arguments)
        )
    )
    answered_during = []
    while not job.done():  # completions keep coming while the generator runs
        started = time.perf_counter()
        shown = await suggest_in_a_new_file(editor, api, str(len(answered_during)))
        answered_during.append((time.perf_counter() - started, job.done()))
        assert shown == "return total"
        await asyncio.sleep(0.1)
    summary = await job
    during = [seconds for seconds, finished in answered_during if not finished]
    assert during, "the generator finished before a completion was asked for"
    assert max(during) < 1.0, answered_during

    assert summary["applied"] and not summary["replaced"] and not summary["left"]
    (applied,) = editor.applied  # type: ignore[attr-defined]
    assert applied.label == "Headstart: Generate client (Python)"
    expected = cli_output(spec, tmp_path / "cli", "client")
    assert tree_bytes(api / "generated" / "python") == expected
    assert list(expected) == [f"swagger_petstore_client/{name}" for name in CLIENT_FILES]
    shown = await wait_for_shown(editor, "4 created in generated/python")
    assert "Swagger Petstore 1.0.0" in shown
    progress = [
        reports
        for token, reports in editor.progress_reports.items()
        if str(token).startswith("headstart-contract-")
    ]
    (reports,) = progress
    assert reports[0].kind == "begin" and reports[0].cancellable
    assert reports[-1].kind == "end" and reports[-1].message == "done"

    # again: nothing to write
    summary = await generate(editor, uri, "client.python")
    assert not summary["applied"] and len(summary["unchanged"]) == 4
    await wait_for_shown(editor, "generated/python is up to date (4 files)")

    # a changed file is replaced only once the user says so; other files are left alone
    package = next((api / "generated" / "python").iterdir())
    (package / "client.py").write_text("# mine\n")
    (package / "notes.txt").write_text("kept\n")
    editor.answers.append("Keep them")  # type: ignore[attr-defined]
    summary = await generate(editor, uri, "client.python")
    assert not summary["applied"] and (package / "client.py").read_text() == "# mine\n"
    (question,) = editor.asked  # type: ignore[attr-defined]
    assert "1 files already there differ" in question.message and "client.py" in question.message
    editor.answers.append("Replace")  # type: ignore[attr-defined]
    summary = await generate(editor, uri, "client.python")
    assert summary["applied"] and [Path(p).name for p in summary["replaced"]] == ["client.py"]
    assert tree_bytes(api / "generated" / "python") == {
        **expected,
        f"{package.name}/notes.txt": b"kept\n",
    }
    await wait_for_shown(editor, "1 files there that it did not write were left")

    # the server stub comes with the client it builds on, which is there already
    summary = await generate(editor, uri, "server.python")
    assert summary["applied"] and len(summary["unchanged"]) == 4 and not summary["replaced"]
    assert tree_bytes(api / "generated" / "python") == {
        **cli_output(spec, tmp_path / "cli-server", "server"),
        f"{package.name}/notes.txt": b"kept\n",
    }
    assert any(
        name.startswith("swagger_petstore_server/")
        for name in tree_bytes(api / "generated" / "python")
    )
    await wait_for_shown(editor, "Generate server stub (Python): 6 created, 4 unchanged")


async def test_swagger_2_is_not_supported_and_says_so(
    either_editor: LanguageClient, api: Path
) -> None:
    uri = open_document(either_editor, api / "old.yaml", language_id="yaml")
    (diagnostic,) = await diagnostics_of(either_editor, uri, bool)
    assert diagnostic.range.start.line == 0
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    assert "Swagger 2.0 is not supported" in diagnostic.message
    actions = await actions_of(either_editor, uri)
    if either_editor.editor == "vscode":  # type: ignore[attr-defined]
        assert actions and all(
            a.disabled and "Swagger 2.0 is not supported" in a.disabled.reason for a in actions
        )
    else:  # Neovim shows no disabled actions: none are offered
        assert actions == []
    with pytest.raises(JsonRpcException):
        await generate(either_editor, uri, "client.python")
    await wait_for_shown(either_editor, "Swagger 2.0 is not supported")


async def test_a_missing_tool_unsaved_changes_huge_and_binary_documents(
    api: Path, tmp_path: Path
) -> None:
    """A server whose PATH has no Go; an unsaved buffer; documents it leaves alone."""
    empty = tmp_path / "bin"
    empty.mkdir()
    async with server_with_env(server_env(PATH=str(empty))) as client:
        await scripted_editor(client, "vscode", api, SETTINGS)
        spec = api / "petstore.yaml"
        uri = open_document(client, spec, language_id="yaml")
        with pytest.raises(JsonRpcException) as failed:
            await generate(client, uri, "client.go")
        assert failed.value.code == REQUEST_FAILED
        shown = await wait_for_shown(client, "Generate client (Go)")
        assert "gofmt is not on PATH" in shown and "install_tools.sh" in shown
        assert "nothing written" in shown
        assert client.applied == []  # type: ignore[attr-defined]

        typed = spec.read_text() + "# typed\n"
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=typed)],
            )
        )
        with pytest.raises(JsonRpcException):
            await generate(client, uri, "client.python")
        await wait_for_shown(client, "save petstore.yaml first")

        binary = api / "blob.json"
        binary.write_bytes(b'{"openapi": "3.0.0"}\x00' + bytes(range(1, 32)))
        blob = open_document(client, binary, binary.read_bytes().decode(), language_id="json")
        assert await actions_of(client, blob) == []
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"headstart": {"contracts": {"maxDocumentBytes": 2000}}}
            )
        )
        await wait_for_log(client, "settings applied")
        big = open_document(client, api / "broken.yaml", language_id="yaml")  # 3 KB
        assert await actions_of(client, big) == []
        await wait_for_log(client, "larger than 2000 characters (contracts.maxDocumentBytes)")
        await asyncio.sleep(0.5)  # past the diagnostics delay
        assert blob not in client.diagnostics and big not in client.diagnostics


# --- $refs the editor does not follow (server.aiapi.local_refs) --------------------------------

PLANTED = "PLANTED-SECRET-7f3a"
LEAKY = """\
openapi: 3.0.3
info: {title: Leaky, version: "1.0.0"}
paths:
  /keys:
    get:
      operationId: listKeys
      responses:
        "200":
          description: the keys
          content:
            application/json:
              schema:
                $ref: "../outside/credentials.yaml#/Credentials"
  /remote:
    get:
      operationId: getRemote
      responses:
        "200":
          description: remote
          content:
            application/json:
              schema:
                $ref: "https://attacker.example/x.yaml#/X"
  /local:
    get:
      operationId: getLocal
      responses:
        "200":
          description: local
          content:
            application/json:
              schema:
                $ref: "RECORDER"
"""
SPLIT = """\
openapi: 3.0.3
info: {title: Split, version: "1.0.0"}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        "200":
          description: the pets
          content:
            application/json:
              schema:
                $ref: "schemas/pet.yaml#/Pet"
"""
PET = """\
Pet:
  type: array
  items: {type: string}
"""


def plant_secret(outside: Path) -> None:
    """A file outside the workspace that a resolver would read into the document."""
    outside.mkdir(exist_ok=True)
    (outside / "credentials.yaml").write_text(
        "Credentials:\n  type: object\n"
        f"  description: 'aws_secret_access_key = {PLANTED}'\n"
        f"  properties:\n    key: {{type: string, default: '{PLANTED}'}}\n"
    )


def line_of(text: str, needle: str) -> int:
    """The 0-based line of the first line holding `needle`."""
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def test_refs_outside_the_workspace_or_to_urls_are_refused_unread(
    editor: LanguageClient, api: Path, tmp_path: Path
) -> None:
    plant_secret(tmp_path / "outside")
    with recording_server() as (base, hits):
        remote = f"{base}/x.yaml"
        text = LEAKY.replace("RECORDER", remote)
        (api / "leaky.yaml").write_text(text)
        uri = open_document(editor, api / "leaky.yaml", language_id="yaml")
        found = await diagnostics_of(editor, uri, bool)

        # the generate actions say why, and read and write nothing
        with pytest.raises(JsonRpcException) as failed:
            await generate(editor, uri, "client.python")
    assert failed.value.code == REQUEST_FAILED
    assert hits == []

    by_line = {problem.range.start.line: problem.message for problem in found}
    assert sorted(by_line) == [
        line_of(text, "../outside/credentials.yaml"),
        line_of(text, "https://attacker.example"),
        line_of(text, remote),
    ]
    outside = by_line[line_of(text, "../outside/credentials.yaml")]
    assert "$ref '../outside/credentials.yaml#/Credentials' is refused" in outside
    assert f"resolves outside the workspace folder {api}" in outside
    assert "it is a URL (https:)" in by_line[line_of(text, "https://attacker.example")]
    assert "it is a URL (http:)" in by_line[line_of(text, remote)]
    assert all(PLANTED not in message for message in by_line.values())

    shown = await wait_for_shown(editor, "has $refs Headstart does not follow")
    assert "leaky.yaml" in shown and "nothing generated" in shown
    assert f"line {line_of(text, '../outside/credentials.yaml') + 1}" in shown
    assert PLANTED not in shown
    assert editor.applied == []  # type: ignore[attr-defined]
    assert not (api / "generated").exists()
    assert all(PLANTED.encode() not in data for data in tree_bytes(api).values())


async def test_a_relative_ref_inside_the_workspace_is_followed(
    editor: LanguageClient, api: Path
) -> None:
    (api / "schemas").mkdir()
    (api / "schemas" / "pet.yaml").write_text(PET)
    (api / "split.yaml").write_text(SPLIT)
    uri = open_document(editor, api / "split.yaml", language_id="yaml")
    await asyncio.sleep(0.5)  # past the diagnostics delay
    assert await diagnostics_of(editor, uri, lambda found: True) == []
    summary = await generate(editor, uri, "client.python")
    assert summary["applied"]
    client = tree_bytes(api / "generated" / "python")["split_client/client.py"].decode()
    assert "def list_pets(self) -> list[str]:" in client  # the type schemas/pet.yaml gives
