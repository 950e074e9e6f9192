"""Server stubs and test skeletons (`headstart aiapi generate --kinds server,tests`) on real
documents (tests/fixtures/openapi): generated, checked by mypy --strict, tsc and go vet,
served for real (every route answers 501 as generated; with handlers answering the
contract's examples the generated client's tests pass against them) and the Python test
skeleton passing against a Prism mock. The checkers also reject a handler of the wrong
type, so a pass means something.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_aiapi_cli import TOOLS, headstart, require_aiapi_tools
from test_aiapi_clients import go_env, require_go

from server.aiapi.document import load_document
from server.aiapi.go_client import generate_go
from server.aiapi.go_server import generate_go_server
from server.aiapi.pipeline import generate_contract
from server.aiapi.python_client import generate_python
from server.aiapi.python_server import generate_python_server
from server.aiapi.scaffold import (
    check_go_package,
    check_typescript_part,
    generate_scaffolds,
    parse_kinds,
)
from server.aiapi.test_skeletons import generate_go_tests
from server.aiapi.verify import check_python

FIXTURES = ROOT / "tests" / "fixtures" / "openapi"
PETSTORE = FIXTURES / "petstore.yaml"
NEXMO = FIXTURES / "nexmo_application.json"


def require_scaffold_tools() -> None:
    """Skip without the tools (Go, openapi-ts, Prism, vitest), unless `make test` promised
    them (then fail)."""
    require_aiapi_tools()
    if not (TOOLS / "aiapi-scaffold" / "node_modules" / "vitest").exists():
        reason = "vitest missing: run bash server/aiapi/install_tools.sh"
        if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.timeout(900)
def test_every_kind_of_a_real_document_passes_its_checks_and_serves(tmp_path: Path) -> None:
    """Nexmo's document: JSON bodies, path parameters, a 204, credentials in the query."""
    require_scaffold_tools()
    out = tmp_path / "out"
    done = headstart("aiapi", "generate", NEXMO, "--out", out, "--verify")
    assert done.returncode == 0, done.stdout + done.stderr
    for line in (
        "python server stub: mypy --strict passed",
        "python server stub: served, its tests against it (5 as generated: reached its "
        "handler (501), 5 with example handlers, the tests passed) passed",
        "python test skeleton: mypy --strict passed",
        "python test skeleton: pytest against Prism (5 passed) passed",
        "typescript server stub: tsc --noEmit passed",
        "typescript test skeleton: tsc --noEmit passed",
        "go server stub: go vet passed",
        "go server stub: served, its tests against it (5 as generated: reached its handler "
        "(501), 5 with an example service, the tests passed) passed",
        "go test skeleton: go vet passed",
    ):
        assert line in done.stderr, done.stderr
    server = out / "python" / "nexmo_application_api_server"
    assert {p.name for p in server.iterdir()} >= {
        "__init__.py", "__main__.py", "app.py", "handlers.py", "models.py", "py.typed",
    }  # fmt: skip
    client_models = out / "python" / "nexmo_application_api_client" / "models.py"
    assert (server / "models.py").read_bytes() == client_models.read_bytes()
    tests = (out / "python" / "tests" / "test_nexmo_application_api.py").read_text()
    assert tests.count("\ndef test_") == 5 and "NEXMO_APPLICATION_API_BASE_URL" in tests
    assert "models.Application.model_validate(" not in tests  # the bodies are inline schemas
    assert (out / "typescript" / "server" / "index.ts").exists()
    assert (out / "typescript" / "tests" / "api.test.ts").read_text().count("  test(") == 5
    assert "type Service interface" in (out / "go" / "server" / "server.go").read_text()
    go_tests = (out / "go" / "contracttest" / "api_test.go").read_text()
    assert go_tests.count("\nfunc Test") == 5 and "func TestUpdateApplication(" in go_tests


@pytest.mark.timeout(600)
def test_go_skeleton_sends_query_credentials_and_passes_go_vet(tmp_path: Path) -> None:
    """APOD's api_key is a security scheme in the query, which the Go client cannot send
    by itself: the skeleton adds it with a RoundTripper."""
    require_go()
    document = load_document(FIXTURES / "nasa_apod.json")
    module = generate_go(document, tmp_path / "go")
    folder = generate_go_tests(document, module)
    source = (folder / "api_test.go").read_text()
    assert 'queryCredentials{"api_key": "contract-test-key"}' in source
    result = check_go_package(folder)
    assert result.ok, result.output


@pytest.fixture
def petstore_server(tmp_path: Path) -> Iterator[Any]:
    document = load_document(PETSTORE)
    client = generate_python(document, tmp_path)
    server = generate_python_server(document, tmp_path, client)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(server.name)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] in (client.name, server.name)]:
            del sys.modules[name]


def test_python_stub_answers_501_until_a_handler_is_written(petstore_server: Any) -> None:
    from fastapi.testclient import TestClient

    models = importlib.import_module(f"{petstore_server.__name__}.models")
    with TestClient(petstore_server.create_app()) as http:
        answer = http.get("/pets/7")
        assert answer.status_code == 501
        assert "show_pet_by_id (GET /pets/{petId})" in answer.json()["detail"]
        assert "TODO" in answer.json()["detail"]
        assert http.delete("/pets").status_code == 405
        assert http.get("/owners").status_code == 404
        assert http.get("/pets", params={"limit": "ten"}).status_code == 422

    seen: list[Any] = []

    class Pets(petstore_server.Handlers):  # type: ignore[misc,name-defined]
        async def list_pets(self, *, limit: int | None = None) -> Any:
            seen.append(limit)
            return models.Pets([models.Pet(id=1, name="Rex")])

        async def create_pets(self) -> None:
            return None

    with TestClient(petstore_server.create_app(Pets(), prefix="/v1")) as http:
        assert http.get("/v1/pets", params={"limit": "3"}).json() == [{"id": 1, "name": "Rex"}]
        assert seen == [3]
        created = http.post("/v1/pets")
        assert (created.status_code, created.content) == (201, b"")
        assert http.get("/v1/pets/7").status_code == 501  # not overridden


GO_STUB_TEST = """package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	api "MODULE"
)

type apps struct{ Unimplemented }

func (apps) UpdateApplication(
	ctx context.Context, request UpdateApplicationRequest,
) (*api.Application, error) {
	name, _ := request.Body["name"].(string) // an inline object schema: a map
	if request.AppId != "a b" || name != "Rex" {
		return nil, &HTTPError{Status: 418, Body: request.Body}
	}
	return &api.Application{Name: name}, nil
}

func (apps) DeleteApplication(ctx context.Context, request DeleteApplicationRequest) error {
	return nil
}

func send(t *testing.T, handler http.Handler, method, target, body string) (
	int, string, http.Header,
) {
	t.Helper()
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, httptest.NewRequest(method, target, strings.NewReader(body)))
	data, _ := io.ReadAll(recorder.Result().Body)
	return recorder.Code, string(data), recorder.Result().Header
}

func TestStub(t *testing.T) {
	stub := NewHandler(Unimplemented{})
	if code, body, _ := send(t, stub, "GET", "/x?api_key=k&api_secret=s", ""); code != 501 ||
		!strings.Contains(body, "RetrieveApplication (GET /{app_id})") {
		t.Fatalf("want 501 naming the operation, got %d %s", code, body)
	}
	if code, body, _ := send(t, stub, "GET", "/x?api_key=k", ""); code != 400 ||
		!strings.Contains(body, "missing query parameter 'api_secret'") {
		t.Fatalf("want 400 for a missing parameter, got %d %s", code, body)
	}
	if code, _, header := send(t, stub, "POST", "/x", ""); code != 405 ||
		header.Get("Allow") != "GET, PUT, DELETE" {
		t.Fatalf("want 405 with Allow, got %d %v", code, header)
	}
	if code, _, _ := send(t, stub, "GET", "/x/y", ""); code != 404 {
		t.Fatalf("want 404, got %d", code)
	}
	served := NewHandler(apps{})
	body := `{"name": "Rex", "type": "voice", "api_key": "k", "api_secret": "s"}`
	if code, answer, _ := send(t, served, "PUT", "/a%20b", body); code != 200 ||
		!strings.Contains(answer, `"name":"Rex"`) {
		t.Fatalf("want 200 with the application, got %d %s", code, answer)
	}
	if code, _, _ := send(t, served, "PUT", "/a", "{not json"); code != 400 {
		t.Fatalf("want 400 for a broken body, got %d", code)
	}
	if code, answer, _ := send(t, served, "DELETE", "/a", ""); code != 204 || answer != "" {
		t.Fatalf("want an empty 204, got %d %q", code, answer)
	}
}
"""


@pytest.mark.timeout(600)
def test_go_stub_routes_parses_and_answers(tmp_path: Path) -> None:
    require_go()
    document = load_document(NEXMO)
    module = generate_go(document, tmp_path / "go")
    folder = generate_go_server(document, module)
    name = (module / "go.mod").read_text().split()[1]
    (folder / "stub_test.go").write_text(GO_STUB_TEST.replace("MODULE", name))
    done = subprocess.run(
        ["go", "test", "./server"],
        cwd=module,
        capture_output=True,
        text=True,
        env=go_env(tmp_path),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(600)
def test_checkers_reject_a_handler_of_the_wrong_type(tmp_path: Path) -> None:
    require_scaffold_tools()
    document = load_document(PETSTORE)
    client = generate_python(document, tmp_path / "python")
    server = generate_python_server(document, tmp_path / "python", client)
    (server / "mine.py").write_text(
        "from .handlers import Handlers\n\n\n"
        "class Mine(Handlers):\n"
        "    async def show_pet_by_id(self, *, pet_id: str) -> int:\n"
        "        return 7\n"
    )
    result = check_python(server)
    assert not result.ok and "show_pet_by_id" in result.output, result.output

    out = tmp_path / "out"
    result = generate_contract(document, out, ("typescript",), kinds=("client", "server"))
    assert result.ok and [s.kind for s in result.scaffolds] == ["server"]
    assert not (out / "typescript" / "tests").exists()
    stub = out / "typescript" / "server"
    assert check_typescript_part(stub).ok
    (stub / "mine.ts").write_text(
        'import { createHandler } from "./index";\n\n'
        "export const handler = createHandler({\n"
        "  showPetById: async ({ path }) => [{ id: path.petId, name: 7 }],\n"
        "});\n"
    )
    result = check_typescript_part(stub)
    assert not result.ok and "mine.ts" in result.output, result.output


ODD_SHAPES = """\
openapi: 3.0.3
info: {title: Odd Shapes, version: '1'}
servers: [{url: 'http://odd.example/api'}]
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
  schemas:
    Note:
      type: object
      required: [id, text]
      properties:
        id: {type: integer, format: int64}
        text: {type: string}
        tags: {type: array, items: {type: string}}
security: [{token: []}]
paths:
  /notes/mine:
    get:
      operationId: myNotes
      tags: [notes]
      parameters:
        - {name: tag, in: query, required: true, schema: {type: array, items: {type: string}}}
        - {name: X-Trace-Id, in: header, required: true, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Note'}}
              example: [{id: 7, text: seven}]
  /notes/{noteId}:
    parameters:
      - {name: noteId, in: path, required: true, schema: {type: integer}}
    get:
      operationId: getNote
      tags: [notes]
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Note'}}}
    put:
      operationId: putNoteText
      tags: [notes]
      requestBody:
        required: true
        content: {text/plain: {schema: {type: string}}}
      responses:
        '204': {description: done}
    delete:
      operationId: deleteNote
      tags: [notes]
      responses:
        '204': {description: done}
  /files/{name}.{ext}:
    post:
      operationId: upload
      tags: [files]
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
        - {name: ext, in: path, required: true, schema: {type: string, enum: [png, txt]}}
      requestBody:
        required: true
        content: {application/octet-stream: {schema: {type: string, format: binary}}}
      responses:
        '201': {description: made, content: {image/png: {schema: {type: string, format: binary}}}}
  /forms:
    post:
      operationId: sendForm
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [a]
              properties: {a: {type: string}, b: {type: integer}}
      responses:
        '200':
          description: ok
          content:
            application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}
"""


@pytest.mark.timeout(900)
def test_odd_shapes_are_served_and_called(tmp_path: Path) -> None:
    """What the real documents above lack: a literal route beside a templated one
    (/notes/mine, /notes/{noteId}), two parameters in one segment ({name}.{ext}), text,
    binary and form bodies, a binary answer, required header and array parameters,
    path-level parameters, bearer credentials. Python and Go, served and called."""
    require_scaffold_tools()
    path = tmp_path / "odd.yaml"
    path.write_text(ODD_SHAPES)
    document = load_document(path)
    out = tmp_path / "out"
    generate_contract(document, out, ("python", "go"))  # the clients
    results = [
        result
        for language in ("python", "go")
        for result in generate_scaffolds(
            document, out, language, ("client", "server", "tests"), verify=True, run=True
        )
    ]
    report = {r.label: (r.ok, r.run.outcomes if r.run else None) for r in results}
    assert all(r.ok for r in results), [
        (r.label, r.generate_error, r.check and r.check.output, r.run and r.run.output)
        for r in results
    ]
    assert report["python server stub"][1]["as generated: reached its handler (501)"] == 6
    assert report["python test skeleton"][1] == {"passed": 6}  # against Prism
    assert report["go server stub"][1]["with an example service, the tests passed"] == 6


def test_kinds_are_parsed_with_the_client_always_first() -> None:
    assert parse_kinds("tests,server") == ("client", "server", "tests")
    assert parse_kinds("server") == ("client", "server")
    assert parse_kinds("client") == ("client",)
    with pytest.raises(ValueError, match="stub"):
        parse_kinds("client,stub")


def test_kinds_option_of_the_cli(tmp_path: Path) -> None:
    only_client = tmp_path / "client"
    done = headstart(
        "aiapi", "generate", PETSTORE, "--lang", "python", "--kinds", "client", "--out", only_client
    )
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (only_client / "python").iterdir()] == ["swagger_petstore_client"]

    tests_only = tmp_path / "tests"
    done = headstart(
        "aiapi", "generate", PETSTORE, "--lang", "python", "--kinds", "tests", "--out", tests_only
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tests_only / "python").iterdir()) == [
        "swagger_petstore_client",
        "tests",
    ]
    assert "python test skeleton: " in done.stdout

    done = headstart("aiapi", "generate", PETSTORE, "--kinds", "stub", "--out", tmp_path / "x")
    assert done.returncode == 2
    assert "unknown --kinds stub; choose from client,server,tests" in done.stderr
