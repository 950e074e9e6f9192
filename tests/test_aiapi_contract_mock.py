"""The contract tests' answers built from the schema, which a second Prism plays where
Prism's own answer breaks the document's schema (server/aiapi/contract.py's `_repair`,
contract_mock.py, against a real Prism), and the judge that finds them broken
(contract_judge.py), on extracts of documents of the seed-38 sample's held-out part."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT

from server.aiapi.contract import ContractSession, planned_calls
from server.aiapi.contract_examples import example_value
from server.aiapi.contract_judge import schema_judge
from server.aiapi.contract_mock import PrismMock
from server.aiapi.document import load_document

TOOLS = Path(os.environ.get("HEADSTART_TOOLS") or ROOT / ".tools")

# github.com/ghes-3.8's SCIM groups: each member has a "$ref" property (SCIM's URI of the
# member), and `meta.location` is a uri Prism answers as "string", so an answer built
# from the schema stands in; with "$ref" in it, Prism's ref parser took the example for a
# reference to a file "a", and the mock exited for every operation of the document.
SCIM_GROUP = {
    "type": "object",
    "required": ["members"],
    "properties": {
        "members": {"type": "array", "items": {"type": "object", "required": ["value"],
                    "properties": {"value": {"type": "string"}, "$ref": {"type": "string"}}}},
        "meta": {"type": "object", "properties": {"location": {"type": "string",
                                                                "format": "uri"}}},
    },
}  # fmt: skip


def scim_document(tmp_path: Path, member_ref_required: bool) -> Any:
    schema = json.loads(json.dumps(SCIM_GROUP))
    if member_ref_required:
        schema["properties"]["members"]["items"]["required"].append("$ref")
    path = tmp_path / "scim.json"
    path.write_text(json.dumps({
        "openapi": "3.0.0", "info": {"title": "scim", "version": "1"},
        "paths": {"/scim/v2/Groups/{id}": {"get": {
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "content": {
                "application/scim+json": {"schema": schema}}}},
        }}},
    }))  # fmt: skip
    return load_document(path)


def test_answers_built_from_the_schema_hold_no_ref_key_prism_would_follow(
    tmp_path: Path,
) -> None:
    prism = TOOLS / "aiapi-mock" / "node_modules" / ".bin" / "prism"
    if not prism.exists():
        pytest.skip("prism missing: run bash server/aiapi/install_tools.sh")
    document = scim_document(tmp_path, member_ref_required=False)
    (call,) = planned_calls(document)
    session = ContractSession(document)
    answer = {"status": 200, "contentType": "application/scim+json"}
    assert session._repair(call, answer)
    (example,) = session._repairs.values()
    assert "$ref" not in json.dumps(example)  # the optional "$ref" left out
    (tmp_path / "mock").mkdir()
    mock = PrismMock(document, tmp_path / "mock", session._repairs)
    mock.start()
    try:
        played = httpx.get(f"{mock.base_url}/scim/v2/Groups/g1", timeout=30)
    finally:
        mock.stop()
    assert played.status_code == 200 and played.json() == example
    # required, "$ref" leaves no answer to build: the call goes on to Prism's dynamic mode
    required = scim_document(tmp_path, member_ref_required=True)
    (call,) = planned_calls(required)
    assert not ContractSession(required)._repair(call, answer)


# microcks.local: Exchange tells RequestResponsePair and UnidirectionalEvent apart by a
# mapping; both extend AbstractExchange, whose `type` is an enum of both tags. The Python
# model of UnidirectionalEvent takes only "unidirEvent", as the mapping says, and refused
# Prism's answer to GET /tests/{id}/events/{testCaseId}, tagged "reqRespPair".
EXCHANGES = {
    "AbstractExchange": {"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": ["reqRespPair", "unidirEvent"]}}},
    "RequestResponsePair": {"type": "object", "allOf": [
        {"type": "object", "properties": {"request": {"type": "string"}}},
        {"$ref": "#/components/schemas/AbstractExchange"}]},
    "UnidirectionalEvent": {"type": "object", "allOf": [
        {"type": "object", "properties": {"eventMessage": {"type": "string"}}},
        {"$ref": "#/components/schemas/AbstractExchange"}]},
    "Exchange": {"oneOf": [{"$ref": "#/components/schemas/RequestResponsePair"},
                           {"$ref": "#/components/schemas/UnidirectionalEvent"}],
                 "discriminator": {"propertyName": "type", "mapping": {
                     "reqRespPair": "#/components/schemas/RequestResponsePair",
                     "unidirEvent": "#/components/schemas/UnidirectionalEvent"}}},
}  # fmt: skip


def test_a_oneofs_alternative_carries_the_tag_its_mapping_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "microcks.json"
    path.write_text(json.dumps({
        "openapi": "3.0.2", "info": {"title": "microcks", "version": "1"}, "paths": {},
        "components": {"schemas": EXCHANGES},
    }))  # fmt: skip
    document = load_document(path)
    judge = schema_judge(document)
    event = {"$ref": "#/components/schemas/UnidirectionalEvent"}
    assert judge.problems(event, {"type": "unidirEvent", "eventMessage": "m"}) == []
    assert judge.problems(event, {"type": "reqRespPair", "eventMessage": "m"})
    built = example_value(document, {"type": "array", "items": event}, full=1)
    assert [item["type"] for item in built] == ["unidirEvent"]
