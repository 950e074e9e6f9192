"""The generated clients do what their signatures say: the Python one (sync and async)
against httpx's MockTransport, the Go one against net/http/httptest in `go test`; and the
checkers really reject a wrong program, so a pass means something."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
from conftest import ROOT

from server.aiapi.contract import example_value, run_contract_tests
from server.aiapi.document import load_document
from server.aiapi.go_client import generate_go
from server.aiapi.pipeline import generate_contract
from server.aiapi.python_client import generate_python
from server.aiapi.verify import check_go, check_python

PETSTORE = ROOT / "tests" / "fixtures" / "openapi" / "petstore.yaml"
PETS = [{"id": 1, "name": "Rex", "tag": "dog"}, {"id": 2, "name": "Tom"}]


@pytest.fixture
def petstore_package(tmp_path: Path) -> Iterator[Any]:
    package = generate_python(load_document(PETSTORE), tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(f"{package.name}.client")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == package.name]:
            del sys.modules[name]


def answer(seen: list[httpx.Request]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/missing"):
            return httpx.Response(404, json={"code": 404, "message": "no such pet"})
        return httpx.Response(200, json=PETS)

    return handle


def test_python_client_sends_the_contract_and_parses_models(petstore_package: Any) -> None:
    seen: list[httpx.Request] = []
    with petstore_package.Client(transport=httpx.MockTransport(answer(seen))) as client:
        pets = client.list_pets(limit=2)
        assert [(p.id, p.name, p.tag) for p in pets.root] == [(1, "Rex", "dog"), (2, "Tom", None)]
        client.show_pet_by_id("a/b c")
        with pytest.raises(httpx.HTTPStatusError):
            client.show_pet_by_id("missing")
        client.list_pets()
    assert str(seen[0].url) == "http://petstore.swagger.io/v1/pets?limit=2"
    assert seen[0].headers["accept"] == "application/json"  # not XML, were it offered
    assert seen[1].url.raw_path == b"/v1/pets/a%2Fb%20c"
    assert str(seen[3].url) == "http://petstore.swagger.io/v1/pets"  # None is not sent


def test_python_async_client_matches_the_sync_one(petstore_package: Any) -> None:
    seen: list[httpx.Request] = []

    async def run() -> Any:
        transport = httpx.MockTransport(answer(seen))
        async with petstore_package.AsyncClient(transport=transport) as client:
            return await client.list_pets(limit=5)

    pets = asyncio.run(run())
    assert pets.root[0].name == "Rex"
    assert seen[0].method == "GET" and seen[0].url.params["limit"] == "5"


def test_mypy_rejects_a_wrong_call_of_the_generated_client(tmp_path: Path) -> None:
    package = generate_python(load_document(PETSTORE), tmp_path)
    assert check_python(package).ok
    (package / "use.py").write_text(
        "from .client import Client\n\n\n"
        "def first_name(client: Client) -> int:\n"
        "    return client.list_pets(limit='ten').root[0].name\n"
    )
    result = check_python(package)
    assert not result.ok
    assert "arg-type" in result.output and "return-value" in result.output


GO_TEST = """package PACKAGE

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestListPets(t *testing.T) {
	var seen []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI())
		if r.URL.Path == "/pets/missing" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{"id": 1, "name": "Rex"}})
	}))
	defer server.Close()
	client := NewClient(server.URL)
	limit := int64(3)
	pets, err := client.ListPets(context.Background(), &ListPetsParams{Limit: &limit})
	if err != nil || len(*pets) != 1 || (*pets)[0].Name != "Rex" || (*pets)[0].Id != 1 {
		t.Fatalf("ListPets: %v %v", pets, err)
	}
	if _, err := client.ShowPetById(context.Background(), "a/b"); err != nil {
		t.Fatal(err)
	}
	var apiError *APIError
	_, err = client.ShowPetById(context.Background(), "missing")
	if !errors.As(err, &apiError) || apiError.StatusCode != 404 {
		t.Fatalf("want a 404 APIError, got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.ListPets(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	want := []string{"/pets?limit=3", "/pets/a%2Fb", "/pets/missing"}
	if len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("requests %v, want %v", seen, want)
	}
}
"""


def go_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOCACHE": str(tmp_path / "gocache"),
        "GOPATH": str(tmp_path / "gopath"),
    }


def require_go() -> None:
    if shutil.which("go") and shutil.which("gofmt"):
        return
    reason = "go missing (Debian golang-go): run bash server/aiapi/install_tools.sh"
    if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.mark.timeout(600)
def test_go_client_calls_the_api_with_its_context(tmp_path: Path) -> None:
    require_go()
    out = generate_go(load_document(PETSTORE), tmp_path / "go")
    package = (out / "go.mod").read_text().split()[1]
    (out / "client_test.go").write_text(GO_TEST.replace("PACKAGE", package))
    done = subprocess.run(
        ["go", "test", "./..."],
        cwd=out,
        capture_output=True,
        text=True,
        env=go_env(tmp_path),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(600)
def test_go_vet_rejects_a_wrong_call_of_the_generated_client(tmp_path: Path) -> None:
    require_go()
    out = generate_go(load_document(PETSTORE), tmp_path / "go")
    assert check_go(out).ok
    package = (out / "go.mod").read_text().split()[1]
    (out / "use.go").write_text(
        f'package {package}\n\nimport "context"\n\n'
        "func use(c *Client) { _, _ = c.ShowPetById(context.Background(), 7) }\n"
    )
    result = check_go(out)
    assert not result.ok
    assert "cannot use 7" in result.output


# wealthreader.com's `entities`: an array that also lists properties (the Go client read
# it as a struct: "cannot unmarshal array"); appwrite.io's optional multipart upload
# requiring `file` (the Go client sent an empty form, which Prism checked: 422)
GO_EXTRACT = {
    "openapi": "3.0.0", "info": {"title": "extract", "version": "1"},
    "paths": {
        "/entities": {"get": {"operationId": "getEntities", "responses": {"200": {
            "description": "ok", "content": {"application/json": {"schema": {
                "type": "array", "items": {"$ref": "#/components/schemas/entities"}}}}}}}},
        "/storage/files": {"post": {
            "operationId": "storageCreateFile",
            "requestBody": {"content": {"multipart/form-data": {"schema": {
                "type": "object", "required": ["file"],
                "properties": {"file": {"type": "string"}}}}}},
            "responses": {"201": {"description": "created"}}}},
        "/storage/notes": {"post": {
            "operationId": "storageCreateNote",
            "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {
                "type": "object", "required": ["text"],
                "properties": {"text": {"type": "string"}}}}}},
            "responses": {"201": {"description": "created"}}}},
    },
    "components": {"schemas": {"entities": {
        "type": "array", "items": {"type": "object"}, "required": ["code"],
        "properties": {"code": {"type": "string"}}}}},
}  # fmt: skip


@pytest.mark.timeout(600)
def test_go_client_reads_arrays_and_leaves_optional_forms_out(tmp_path: Path) -> None:
    require_go()
    if not (ROOT / ".tools" / "aiapi-mock" / "node_modules" / ".bin" / "prism").exists():
        pytest.skip("prism missing: run bash server/aiapi/install_tools.sh")
    path = tmp_path / "extract.json"
    path.write_text(json.dumps(GO_EXTRACT))
    result = generate_contract(
        load_document(path), tmp_path / "out", ("go",), verify=True, contract=True
    )
    (entry,) = result.languages
    assert entry.check is not None and entry.check.ok, entry.check.output
    assert entry.contract is not None and entry.contract.outcomes == {"ok": 3}, entry.contract
    models = (tmp_path / "out" / "go" / "models.go").read_text()
    assert "type Entities []map[string]any" in models


def test_documents_are_read_the_way_json_would_be(tmp_path: Path) -> None:
    """Unquoted `200:` keys are strings and dates stay text, as in the JSON form."""
    document = load_document(PETSTORE)
    assert "200" in document.data["paths"]["/pets"]["get"]["responses"]
    dated = tmp_path / "dated.yaml"
    dated.write_text(
        "openapi: 3.0.3\ninfo: {title: Dated, version: 2024-01-02}\npaths: {}\n"
        "components:\n  schemas:\n    Flag: {type: string, enum: [on, off, yes]}\n"
    )
    loaded = load_document(dated)
    assert loaded.api_version == "2024-01-02"
    assert loaded.data["components"]["schemas"]["Flag"]["enum"] == ["on", "off", "yes"]
    assert json.loads(json.dumps(loaded.data)) == loaded.data


def test_contract_tests_catch_a_client_that_calls_the_wrong_route(tmp_path: Path) -> None:
    prism = ROOT / ".tools" / "aiapi-mock" / "node_modules" / ".bin" / "prism"
    if not prism.exists():
        reason = "prism missing: run bash server/aiapi/install_tools.sh"
        if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    document = load_document(PETSTORE)
    package = generate_python(document, tmp_path)
    passed = run_contract_tests(document, package)
    assert passed.ok and passed.outcomes["ok"] == 3, passed.output
    client = package / "client.py"
    client.write_text(client.read_text().replace('f"/pets/{', 'f"/pet/{'))
    broken = run_contract_tests(document, package)
    assert not broken.ok
    assert broken.outcomes["mock answered 404"] == 1  # show_pet_by_id
    assert "GET /pets/{petId}: mock answered 404" in broken.output


def test_example_values_follow_the_schema(tmp_path: Path) -> None:
    document = load_document(PETSTORE)
    schema = {
        "type": "object",
        "required": ["when", "count", "tags", "kind"],
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "minimum": 5, "example": "five"},
            "tags": {"type": "array", "minItems": 2, "items": {"type": "string"}},
            "kind": {"type": "string", "enum": ["cat", "dog"]},
            "note": {"type": "string"},
        },
    }
    assert example_value(document, schema) == {
        "when": "2024-01-02T03:04:05Z",
        "count": 5,  # the string example does not fit an integer
        "tags": ["a", "a"],
        "kind": "cat",
    }
    assert example_value(document, {"$ref": "#/components/schemas/Pet"}) == {"id": 1, "name": "a"}


def test_models_from_github_shaped_schemas_pass_mypy(tmp_path: Path) -> None:
    """GitHub's document has enums whose values are str's method names and URL fields with
    an empty default (both once failed mypy --strict), and required nullable properties
    (which once rejected the null the API sends); Azure's and sportsdata.io's say
    `nullable: false` on optional ones (which once came out as `int = None`)."""
    document = tmp_path / "github-like.yaml"
    document.write_text(
        "openapi: 3.0.3\n"
        "info: {title: GitHub-like, version: '1'}\n"
        "paths: {}\n"
        "components:\n"
        "  schemas:\n"
        "    Field: {type: string, enum: [title, count, index, labels]}\n"
        "    Status:\n"
        "      type: object\n"
        "      required: [withdrawn_at]\n"
        "      properties:\n"
        "        environment_url: {type: string, format: uri, default: ''}\n"
        "        withdrawn_at: {type: string, format: date-time, nullable: true}\n"
        "        game_id: {type: integer, nullable: false}\n"
        "        field: {$ref: '#/components/schemas/Field'}\n"
    )
    package = generate_python(load_document(document), tmp_path / "out")
    models = (package / "models.py").read_text()
    assert 'TITLE = "title"' in models
    assert 'environment_url: str = ""' in models
    assert "withdrawn_at: Annotated[AwareDatetime | None, Field(...)]" in models
    assert "game_id: int | None = None" in models  # optional; says nullable: false
    result = check_python(package)
    assert result.ok, result.output


def test_all_of_child_narrowing_a_parent_property_passes_mypy(tmp_path: Path) -> None:
    """ideal-postcodes' AbAddress narrows PafBase's `country` enum: as a subclass that
    field would be an incompatible override under mypy --strict."""
    document = tmp_path / "narrowing.yaml"
    document.write_text(
        "openapi: 3.0.3\n"
        "info: {title: Narrowing, version: '1'}\n"
        "paths: {}\n"
        "components:\n"
        "  schemas:\n"
        "    Base:\n"
        "      type: object\n"
        "      required: [country]\n"
        "      properties:\n"
        "        country: {type: string, enum: [England, Scotland, Wales, France]}\n"
        "        postcode: {type: string}\n"
        "    Uk:\n"
        "      allOf:\n"
        "        - $ref: '#/components/schemas/Base'\n"
        "        - properties:\n"
        "            country: {type: string, enum: [England, Scotland, Wales]}\n"
    )
    package = generate_python(load_document(document), tmp_path / "out")
    result = check_python(package)
    assert result.ok, result.output
    models = importlib.util.spec_from_file_location("narrowing_models", package / "models.py")
    assert models is not None and models.loader is not None
    module = importlib.util.module_from_spec(models)
    sys.modules["narrowing_models"] = module  # pydantic resolves annotations through it
    try:
        models.loader.exec_module(module)
    finally:
        del sys.modules["narrowing_models"]
    uk = module.Uk.model_validate({"country": "Wales", "postcode": "CF10"})
    assert uk.postcode == "CF10"
    with pytest.raises(pydantic.ValidationError):
        module.Uk.model_validate({"country": "France"})
