"""End to end: an OpenAPI document in the workspace reaches the prompt of code calling it.

A workspace holds a small pet store document and Python files calling it with httpx;
the editor asks for completions inside those calls, and the fake model's request log
shows what the prompt carried: the called operation's parameters and schemas, nothing
for a path the document does not have, completions unharmed by a broken document, and
nothing from a document whose `$ref`s lead outside the workspace or to a URL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient

PETSTORE = """\
openapi: 3.0.3
info:
  title: Pet store
  version: 1.0.0
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - name: limit
          in: query
          schema: {type: integer, format: int32}
      responses:
        "200":
          description: the pets
          content:
            application/json:
              schema: {type: array, items: {$ref: "#/components/schemas/Pet"}}
  /pets/{petId}/vaccinations:
    post:
      operationId: recordVaccination
      parameters:
        - name: petId
          in: path
          required: true
          schema: {type: string}
        - name: X-Clinic-Token
          in: header
          required: true
          schema: {type: string}
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Vaccination"}
      responses:
        "201":
          description: recorded
          content:
            application/json:
              schema: {$ref: "schemas/receipt.yaml#/Receipt"}
components:
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer}
        name: {type: string}
    Vaccination:
      type: object
      required: [vaccine, givenOn]
      properties:
        vaccine: {type: string, enum: [rabies, distemper]}
        givenOn: {type: string, format: date}
        batchNumber: {type: string}
"""

CALL = """\
import httpx

BASE = "https://pets.example.com/v1"


def vaccinate(pet_id: str, token: str) -> None:
    httpx.post(f"{BASE}/pets/{pet_id}/vaccinations", █)
"""

UNKNOWN = """\
import httpx

BASE = "https://pets.example.com/v1"


def groom(pet_id: str) -> None:
    httpx.post(f"{BASE}/salons/{pet_id}/bookings", █)
"""


async def wait_for(done: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not done():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def prompts(fake: FakeBackend) -> list[str]:
    return [str(event.get("prompt")) for event in fake.events()]


async def ask(client: LanguageClient, path: Path, typed: str) -> str:
    text, position = cursor_at(typed)
    return await suggestion(client, open_document(client, path, text), position)


async def test_a_call_to_a_documented_path_carries_its_operation(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    (workspace / "api").mkdir()
    (workspace / "api" / "petstore.yaml").write_text(PETSTORE)
    (workspace / "api" / "schemas").mkdir()
    (workspace / "api" / "schemas" / "receipt.yaml").write_text("Receipt: {type: object}\n")
    fake.script([{"match": "", "text": "json={}\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)

    assert await ask(fresh, workspace / "clinic.py", CALL) == "json={}"
    [prompt] = prompts(fake)
    assert "api/petstore.yaml" in prompt
    assert "POST /pets/{petId}/vaccinations:" in prompt
    assert "operationId: recordVaccination" in prompt
    assert "petId (path, string, required)" in prompt
    assert "X-Clinic-Token (header, string, required)" in prompt
    assert 'vaccine: "rabies"|"distemper"' in prompt
    assert "batchNumber?: string" in prompt
    assert "response 201: Receipt" in prompt  # a ref to a file inside is named, not read
    assert "GET /pets:" not in prompt  # only the operation called

    fake.reset()
    fake.script([{"match": "", "text": "json={}\n"}])
    assert await ask(fresh, workspace / "grooming.py", UNKNOWN) == "json={}"
    [prompt] = prompts(fake)
    assert "petstore.yaml" not in prompt
    assert "operationId" not in prompt


async def test_a_generated_clients_method_carries_its_operation_and_the_share_turns_it_off(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    (workspace / "petstore.json").write_text(
        '{"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"}, "paths": {"/pets": '
        '{"get": {"operationId": "listPets", "parameters": [{"name": "limit", "in": "query",'
        ' "schema": {"type": "integer"}}], "responses": {"200": {"description": "ok"}}}}}}'
    )
    typed = "from client import PetsClient\n\n\ndef first(api: PetsClient):\n    api.list_pets(█)\n"
    fake.script([{"match": "", "text": "limit=1\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    assert await ask(fresh, workspace / "app.py", typed) == "limit=1"
    [prompt] = prompts(fake)
    assert "GET /pets:" in prompt
    assert "limit (query, integer)" in prompt

    applied = logs(fresh).count("settings applied")
    fresh.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"headstart": fast_settings(fake.url, contractShare=0)}
        )
    )
    await wait_for(lambda: logs(fresh).count("settings applied") > applied)
    fake.reset()
    fake.script([{"match": "", "text": "limit=2\n"}])
    assert await ask(fresh, workspace / "app2.py", typed) == "limit=2"
    [prompt] = prompts(fake)
    assert "GET /pets:" not in prompt


async def test_a_broken_document_does_not_hurt_completions(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    (workspace / "broken.yaml").write_text("openapi: 3.0.0\npaths:\n  /pets: [unclosed\n  {\n")
    (workspace / "odd.yaml").write_text("openapi: 3.0.0\npaths: 12\n")
    (workspace / "petstore.yaml").write_text(PETSTORE)
    fake.script([{"match": "", "text": "json={}\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    typed = 'import httpx\n\n\ndef add() -> None:\n    httpx.get("/pets", █)\n'
    assert await ask(fresh, workspace / "app.py", typed) == "json={}"
    [prompt] = prompts(fake)
    assert "def add() -> None:" in prompt
    assert "GET /pets:\n  operationId: listPets" in prompt  # the valid document still counts
    assert prompt.count("operationId") == 1


async def test_a_document_with_refs_outside_the_workspace_stays_out_of_prompts(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The document is a repository's: its `$ref` to a file of the user's (holding a
    secret) and to a URL are refused, so none of it reaches the model."""
    planted = "PLANTED-SECRET-51c9"
    outside = workspace.parent / "home"
    outside.mkdir()
    (outside / "credentials.yaml").write_text(
        f"Vaccination: {{type: object, description: 'aws_secret_access_key = {planted}'}}\n"
    )
    leaky = PETSTORE.replace(
        '$ref: "#/components/schemas/Vaccination"',
        '$ref: "../../home/credentials.yaml#/Vaccination"',
    ).replace('$ref: "schemas/receipt.yaml#/Receipt"', '$ref: "https://attacker.example/r.yaml"')
    (workspace / "api").mkdir()
    (workspace / "api" / "petstore.yaml").write_text(leaky)
    fake.script([{"match": "", "text": "json={}\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)

    assert await ask(fresh, workspace / "clinic.py", CALL) == "json={}"
    [prompt] = prompts(fake)
    assert planted not in prompt
    assert "recordVaccination" not in prompt and "petstore.yaml" not in prompt
    left_out = [m for m in fresh.log_messages if "left out of completion" in m.message]
    assert len(left_out) == 1, left_out
    assert left_out[0].type == types.MessageType.Info
    assert "api/petstore.yaml" in left_out[0].message
    assert "$ref '../../home/credentials.yaml#/Vaccination' is refused" in left_out[0].message
    assert fresh.messages == []  # logged, no pop-up

    fake.reset()
    fake.script([{"match": "", "text": "json={}\n"}])
    assert await ask(fresh, workspace / "clinic2.py", CALL) == "json={}"
    [prompt] = prompts(fake)
    assert planted not in prompt and "recordVaccination" not in prompt
    assert len([line for line in logs(fresh).splitlines() if "left out of completion" in line]) == 1
