"""The contract tests' own parts, each on a small extract of the real document where the
corpus run (benchmarks/aiapi/corpus.py, seed 38) found it wrong, and the fixes those runs
led to in the generated clients.

Most tests need no tool beyond Python: example values, the judge of answers, the plan.
The generated-code tests need mypy (Python) or go (Go); one test calls all three clients
against a real Prism (server/aiapi/install_tools.sh), as `--verify` does.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import regress
from conftest import ROOT
from test_aiapi_contract_mock import EXCHANGES

from server.aiapi.contract import ContractSession, _Judging, parameter_value, planned_calls
from server.aiapi.contract_examples import example_value, pattern_example
from server.aiapi.contract_judge import schema_judge
from server.aiapi.contract_mock import mocked_document
from server.aiapi.document import ContractDocument, load_document
from server.aiapi.go_client import generate_go
from server.aiapi.pipeline import generate_contract
from server.aiapi.python_client import generate_python
from server.aiapi.verify import check_python

TOOLS = Path(os.environ.get("HEADSTART_TOOLS") or ROOT / ".tools")


def write_document(tmp_path: Path, data: dict[str, Any], name: str = "extract.json") -> Path:
    path = tmp_path / name
    path.write_text(
        json.dumps({"openapi": "3.0.0", "info": {"title": name, "version": "1"}, **data})
    )
    return path


def load(tmp_path: Path, data: dict[str, Any], name: str = "extract.json") -> ContractDocument:
    return load_document(write_document(tmp_path, data, name))


def require(*tools: tuple[str, bool]) -> None:
    missing = [name for name, present in tools if not present]
    if missing:
        reason = f"{', '.join(missing)} missing: run bash server/aiapi/install_tools.sh"
        if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


# --- example values -----------------------------------------------------------------------

# amazonaws.com/chime-sdk-identity (ChimeArn), amazonaws.com/location (an ARN with
# repeated groups), azure.com/apimanagement (serviceName): Prism refused the plain "a" the
# arguments used to be (422), as they break the pattern.
PATTERNS = [
    ("arn:[a-z0-9-\\.]{1,63}:[a-z0-9-\\.]{0,63}:[a-z0-9-\\.]{0,63}:[a-z0-9-\\.]{0,63}"
     ":[^/].{0,1023}", 5, 1600),
    ("^arn(:[a-z0-9]+([.-][a-z0-9]+)*){2}(:([a-z0-9]+([.-][a-z0-9]+)*)?){2}:([^/].*)?$", 0, None),
    ("^[a-zA-Z](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$", 1, 50),
    ("^\\d{3}-[A-F]{2,}$", 8, 12),
    ("\\d+", 12, 12),  # amazonaws.com/cleanrooms' AccountId
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "low", "high"), PATTERNS)
def test_string_arguments_match_their_patterns(pattern: str, low: int, high: int | None) -> None:
    text = pattern_example(pattern, low, high)
    assert text is not None
    assert regress.Regex(pattern).find(text) is not None, text
    assert low <= len(text) <= (high or len(text))


def test_path_arguments_are_never_empty(tmp_path: Path) -> None:
    """chime-sdk-identity's endpointId (`.*`, minLength 0): an empty path segment made
    Prism miss the parameter."""
    document = load(tmp_path, {"paths": {}})
    assert example_value(document, {"type": "string", "pattern": ".*"}) == "a"
    assert example_value(document, {"type": "string", "maxLength": 0}) == ""


# GitHub's (github.ae) request bodies: properties beside a oneOf/anyOf that only adds
# `required`, and alternatives an empty object satisfies all at once (Prism: 422)
GITHUB_BODIES: list[dict[str, Any]] = [
    {  # POST /repos/{owner}/{repo}/check-runs
        "type": "object", "required": ["name", "head_sha"],
        "properties": {
            "name": {"type": "string"}, "head_sha": {"type": "string"},
            "status": {"type": "string", "enum": ["queued", "in_progress", "completed"],
                       "default": "queued"},
            "conclusion": {"type": "string", "enum": ["action_required", "success"]},
        },
        "oneOf": [
            {"properties": {"status": {"enum": ["completed"]}},
             "required": ["status", "conclusion"], "additionalProperties": True},
            {"properties": {"status": {"enum": ["queued", "in_progress"]}},
             "additionalProperties": True},
        ],
    },
    {  # POST /repos/{owner}/{repo}/issues/{issue_number}/labels
        "oneOf": [
            {"type": "object", "properties": {"labels": {
                "type": "array", "minItems": 1, "items": {"type": "string"}}}},
            {"type": "array", "minItems": 1, "items": {"type": "string"}},
            {"type": "object", "properties": {"labels": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}}}}}},
        ],
    },
    {  # amazonaws.com/kinesisvideo's TagStream: a map of at least one tag (Prism refused {})
        "type": "object", "required": ["Tags"],
        "properties": {"Tags": {"type": "object", "minProperties": 1, "maxProperties": 50,
                                "additionalProperties": {"type": "string", "maxLength": 256}}},
    },
    {  # docker.com/hub's PUT /v2/orgs/{name}/settings: one part describes the booleans,
        # another only makes them required (the example had "a" for each: Prism 422)
        "type": "object", "required": ["restricted_images"],
        "properties": {"restricted_images": {"allOf": [
            {"type": "object", "properties": {"enabled": {"type": "boolean"},
                                              "allow_official_images": {"type": "boolean"}}},
            {"type": "object", "required": ["enabled", "allow_official_images"]},
        ]}},
    },
    {  # POST /repos/{owner}/{repo}/pages
        "anyOf": [{"required": ["source"]}, {"required": ["build_type"]}],
        "nullable": True,
        "properties": {
            "build_type": {"type": "string", "enum": ["legacy", "workflow"]},
            "source": {"type": "object", "required": ["branch"],
                       "properties": {"branch": {"type": "string"}}},
        },
    },
]  # fmt: skip


@pytest.mark.parametrize("schema", GITHUB_BODIES)
def test_bodies_fit_schemas_of_alternatives(tmp_path: Path, schema: dict[str, Any]) -> None:
    document = load(tmp_path, {"paths": {}})
    value = example_value(document, schema)
    assert schema_judge(document).problems(schema, value) == [], value


def test_parameters_read_the_same_as_text(tmp_path: Path) -> None:
    """GitHub's workflow_id, `oneOf: [integer, string]`: 1 is sent as "1", which both
    alternatives accept, so Prism refused it."""
    document = load(tmp_path, {"paths": {}})
    schema = {"oneOf": [{"type": "integer"}, {"type": "string"}]}
    assert parameter_value(document, schema) == "a"
    assert parameter_value(document, {"type": "integer", "minimum": 3}) == 3


def test_answers_built_from_a_schema_fit_it(tmp_path: Path) -> None:
    """location's GetGeofenceResponse (a date-time and a \\p{L} pattern behind allOf) and
    servicefabric's SafetyCheck (a discriminator whose enum starts with 'Invalid'):
    Prism's answers broke both schemas, the examples built instead must not."""
    document = load(tmp_path, {"paths": {}, "components": {"schemas": SCHEMAS}})
    judge = schema_judge(document)
    for name in ("GetGeofenceResponse", "SafetyCheck", "HealthEvent", "SshPublicKey", "Key"):
        schema = {"$ref": f"#/components/schemas/{name}"}
        built = example_value(document, schema, full=3)
        assert judge.problems(schema, built) == [], (name, built)
    assert example_value(document, {"$ref": "#/components/schemas/SafetyCheck"}) == {
        "Kind": "EnsureSeedNodeQuorum"  # the first schema that extends it, by its tag
    }
    built = example_value(document, {"$ref": "#/components/schemas/FailedPropertyBatchInfo"})
    assert built["Kind"] == "Failed"  # its own tag, not the parent enum's first value


# --- judging an answer by the document --------------------------------------------------

SCHEMAS: dict[str, Any] = {
    # amazonaws.com/location
    "Timestamp": {"type": "string", "format": "date-time"},
    "Id": {"type": "string", "pattern": "^[-._\\p{L}\\p{N}]+$", "minLength": 1, "maxLength": 100},
    "GetGeofenceResponse": {
        "type": "object",
        "required": ["CreateTime", "GeofenceId"],
        "properties": {
            "CreateTime": {"allOf": [{"$ref": "#/components/schemas/Timestamp"},
                                     {"description": "x"}]},
            "GeofenceId": {"allOf": [{"$ref": "#/components/schemas/Id"}, {"description": "x"}]},
        },
    },
    # azure.com/servicefabric
    "SafetyCheckKind": {
        "type": "string",
        "enum": ["Invalid", "EnsureSeedNodeQuorum", "EnsurePartitionQuorum"],
    },
    "SafetyCheck": {
        "discriminator": {"propertyName": "Kind"},
        "properties": {"Kind": {"$ref": "#/components/schemas/SafetyCheckKind"}},
        "required": ["Kind"],
    },
    "SeedNodeSafetyCheck": {
        "allOf": [{"$ref": "#/components/schemas/SafetyCheck"}],
        "x-ms-discriminator-value": "EnsureSeedNodeQuorum",
    },
    "PartitionSafetyCheck": {
        "allOf": [{"$ref": "#/components/schemas/SafetyCheck"}],
        "properties": {"PartitionId": {"type": "string", "format": "uuid"}},
    },
    "HealthEvent": {
        "properties": {"TimeToLiveInMilliSeconds": {"type": "string", "format": "duration"}}
    },
    # googleapis.com/oslogin: an int64 as text; keyserv.solutions: a `guid`
    "SshPublicKey": {"type": "object", "properties": {
        "expirationTimeUsec": {"type": "string", "format": "int64"}}},
    "Key": {"type": "object", "properties": {"serial": {"type": "string", "format": "guid"}}},
    # azure.com/servicefabric: SubmitBatch answers SuccessfulPropertyBatchInfo with the
    # document's example of a failure
    "PropertyBatchInfo": {"discriminator": {"propertyName": "Kind"}, "required": ["Kind"],
                          "properties": {"Kind": {"type": "string",
                                                  "enum": ["Invalid", "Successful", "Failed"]}}},
    "SuccessfulPropertyBatchInfo": {"allOf": [{"$ref": "#/components/schemas/PropertyBatchInfo"}],
                                    "x-ms-discriminator-value": "Successful",
                                    "properties": {"Properties": {"type": "object"}}},
    "FailedPropertyBatchInfo": {"allOf": [{"$ref": "#/components/schemas/PropertyBatchInfo"}],
                                "x-ms-discriminator-value": "Failed",
                                "properties": {"ErrorMessage": {"type": "string"}}},
    "PropertyBatchInfoChoice": {
        "discriminator": {"propertyName": "Kind"},
        "oneOf": [{"$ref": "#/components/schemas/SuccessfulPropertyBatchInfo"},
                  {"$ref": "#/components/schemas/FailedPropertyBatchInfo"}],
    },
    # github.com/ghes-3.8: Prism's "string" for a uri, which zod's url() refuses
    "PageDeployment": {"type": "object", "properties": {
        "page_url": {"type": "string", "format": "uri"}}},
    # npr.org/station-finder: an allOf of parts that name no type
    "StationListDocument": {
        "allOf": [{"properties": {"href": {"type": "string"}}},
                  {"properties": {"items": {"type": "array"}}}]
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "answer", "fits"),
    [
        ("GetGeofenceResponse", {"CreateTime": "2024-01-02T03:04:05Z", "GeofenceId": "g-1"}, True),
        # Prism's static placeholder where allOf hides the format
        ("GetGeofenceResponse", {"CreateTime": "string", "GeofenceId": "g-1"}, False),
        # Prism's dynamic answer: its regex generator does not read \p{L}
        ("GetGeofenceResponse", {"CreateTime": "2024-01-02T03:04:05Z", "GeofenceId": "}p{"}, False),
        ("HealthEvent", {"TimeToLiveInMilliSeconds": "PT1H30M"}, True),
        ("HealthEvent", {"TimeToLiveInMilliSeconds": "string"}, False),
        ("HealthEvent", {"TimeToLiveInMilliSeconds": "P"}, False),
        ("SafetyCheck", {"Kind": "EnsureSeedNodeQuorum"}, True),  # x-ms-discriminator-value
        ("SafetyCheck", {"Kind": "Invalid"}, False),  # in the enum, but names no schema
        ("SshPublicKey", {"expirationTimeUsec": "1700000000000000"}, True),
        ("SshPublicKey", {"expirationTimeUsec": "string"}, False),  # zod's coerce.bigint
        ("Key", {"serial": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}, True),
        ("Key", {"serial": "string"}, False),  # zod's guid()
        ("SuccessfulPropertyBatchInfo", {"Kind": "Successful", "Properties": {}}, True),
        ("SuccessfulPropertyBatchInfo", {"Kind": "Failed", "ErrorMessage": "x"}, False),
        ("PropertyBatchInfo", {"Kind": "Failed"}, True),
        # a oneOf's alternative named by x-ms-discriminator-value, not a schema name
        ("PropertyBatchInfoChoice", {"Kind": "Failed", "ErrorMessage": "x"}, True),
        ("PageDeployment", {"page_url": "https://octocat.github.io/hello"}, True),
        ("PageDeployment", {"page_url": "mailto:octocat@github.com"}, True),
        ("PageDeployment", {"page_url": "string"}, False),  # no scheme: not absolute
        ("StationListDocument", {"href": "/x"}, True),
        ("StationListDocument", None, False),  # Prism's answer to a schema with no type
        ("StationListDocument", [{"href": "/x"}], False),  # applicationinsights' example
    ],
)
def test_answers_are_judged_as_openapi_reads_the_schema(
    tmp_path: Path, name: str, answer: Any, fits: bool
) -> None:
    document = load(tmp_path, {"paths": {}, "components": {"schemas": SCHEMAS}})
    problems = schema_judge(document).problems({"$ref": f"#/components/schemas/{name}"}, answer)
    assert (problems == []) is fits, problems


# --- the plan -------------------------------------------------------------------------------


def operation(**fields: Any) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok"}}, **fields}


def test_calls_the_document_itself_rules_out_are_skipped_with_the_reason(tmp_path: Path) -> None:
    document = load(
        tmp_path,
        {
            "paths": {
                # trakt.tv: integer, with an enum of strings
                "/sync/ratings/{rating}": {"get": operation(parameters=[
                    {"name": "rating", "in": "path", "required": True,
                     "schema": {"type": "integer", "enum": ["1", "2", "10"]}},
                ])},
                # apache.org/qakka: an octet-stream body declared as an array
                "/queues/{q}/messages": {"post": operation(
                    parameters=[{"name": "q", "in": "path", "required": True,
                                 "schema": {"type": "string"}}],
                    requestBody={"required": True, "content": {"application/octet-stream": {
                        "schema": {"type": "array", "items": {"type": "string", "format": "byte"}}
                    }}},
                )},
                # avaza.com: no success answer at all
                "/api/Bill/{id}": {"get": {"parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ], "responses": {"401": {"description": "Unauthorized"},
                                 "404": {"description": "Not Found"}}}},
                "/fine": {"get": operation()},
                # jellyfin.local: a path parameter whose every property is read-only
                "/Plugins/{version}": {"delete": operation(parameters=[
                    {"name": "version", "in": "path", "required": True,
                     "schema": {"$ref": "#/components/schemas/Version"}}])},
                # formapi.io: two operations on one path, told apart by a ?query Prism
                # does not route by; a ?query route alone is called
                "/templates": {"post": operation()},
                "/templates?desc=html": {"post": operation()},
                "/submissions?v=2": {"post": operation()},
            },
            "components": {"schemas": {"Version": {
                "type": "object", "additionalProperties": False, "properties": {
                    "Major": {"type": "integer", "readOnly": True},
                    "Minor": {"type": "integer", "readOnly": True}}}}},
        },
    )  # fmt: skip
    skips = [call.skip for call in planned_calls(document)]
    assert "contradicts its type integer" in str(skips[0])
    assert "application/octet-stream body as array" in str(skips[1])
    assert "no success answer (only 401, 404)" in str(skips[2])
    assert skips[3] is None
    assert "every property is read-only" in str(skips[4])
    assert skips[5] is None
    assert "Prism routes by the path alone" in str(skips[6])
    assert skips[7] is None


def test_plan_sends_what_the_document_requires(tmp_path: Path) -> None:
    """sakari.io requires a body property it does not describe (Prism: 422); evetech.net
    declares an optional Accept-Language enum that Node's fetch would fill with `*` (400);
    circuitsandbox.net requires a form body none of whose fields is required."""
    document = load(
        tmp_path,
        {
            "paths": {
                "/v1/accounts/{accountId}/webhooks": {"post": operation(
                    parameters=[{"name": "accountId", "in": "path", "required": True,
                                 "schema": {"type": "string"}}],
                    requestBody={"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["callbackUrl"],
                        "properties": {"url": {"type": "string", "format": "uri"}},
                    }}}},
                )},
                "/search/": {"get": operation(parameters=[
                    {"name": "Accept-Language", "in": "header",
                     "schema": {"type": "string", "enum": ["de", "en-us"], "default": "en-us"}},
                    {"name": "page", "in": "query", "schema": {"type": "integer"}},
                ])},
                # circuitsandbox.net: a required form with no required field (Prism: an
                # empty form is no body, 400)
                "/webhooks/incoming/{id}": {"post": operation(
                    parameters=[{"name": "id", "in": "path", "required": True,
                                 "schema": {"type": "string"}}],
                    requestBody={"required": True, "content": {
                        "application/x-www-form-urlencoded": {"schema": {
                            "type": "object", "properties": {"text": {"type": "string"}}}}}},
                )},
            }
        },
    )  # fmt: skip
    webhook, search, incoming = planned_calls(document)
    assert webhook.body == {"callbackUrl": "a"}
    assert incoming.body == {"text": "a"}
    assert [(p.name, value) for p, value in search.parameters] == [("Accept-Language", "en-us")]


def test_mock_leaves_out_response_headers_that_describe_the_transport(tmp_path: Path) -> None:
    """notion.com's document, recorded from real traffic, declares `Content-Encoding: gzip`;
    Prism sent it over a plain body, and no client could read the answer. Azure batch's
    HEADs declare a Content-Type of type string, which OpenAPI says to ignore: Prism sent
    `string` as one and failed on it (500)."""
    headers = {
        "Content-Encoding": {"schema": {"type": "string", "example": "gzip"}},
        "Content-Type": {"schema": {"type": "string"}},
        "X-Request-Id": {"schema": {"type": "string"}},
    }
    document = load(
        tmp_path,
        {"paths": {"/v1/blocks/{id}": {"get": {
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "headers": headers, "content": {
                "application/json": {"schema": {"type": "object"}}}}},
        }}}},
    )  # fmt: skip
    (tmp_path / "scratch").mkdir()
    mocked = json.loads(mocked_document(document, tmp_path / "scratch").read_text())
    answer = mocked["paths"]["/v1/blocks/{id}"]["get"]["responses"]["200"]
    assert list(answer["headers"]) == ["X-Request-Id"]


# --- the Python client --------------------------------------------------------------------

DANIWEB = {
    "paths": {
        "/conversations/{ID}/statuses": {
            "get": operation(parameters=[
                {"in": "path", "name": "ID", "required": True, "style": "simple", "schema": {
                    "type": "array", "maxItems": 100,
                    "items": {"type": "integer", "format": "int32", "minimum": 1}}},
            ]),
            "patch": operation(
                parameters=[{"in": "path", "name": "ID", "required": True,
                             "schema": {"type": "integer", "minimum": 1}}],
                requestBody={"required": True, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "required": ["archived_status"],
                    "properties": {"archived_status": {"type": "boolean"}}}}}},
            ),
        },
        # amazonaws.com/cleanrooms: Prism answers an empty object schema with no body
        "/collaborations/{id}": {"delete": {"parameters": [
            {"in": "path", "name": "id", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/DeleteCollaborationOutput"}}}}}}},
        "/users/~": {"get": {"responses": {"200": {"description": "ok", "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Endpoint-get-users--"}}
        }}}}},
        # peoplegeneratorapi.live: any media type, a string
        "/api/person/bloodtype": {"get": {"responses": {"200": {"description": "ok", "content": {
            "*/*": {"schema": {"type": "string"}}}}}}},
    },
    "components": {"schemas": {
        "Endpoint-get-users": {"type": "object", "properties": {"data": {"type": "array"}}},
        "Endpoint-get-users--": {"type": "object", "properties": {"data": {"type": "object"}}},
        "DeleteCollaborationOutput": {"type": "object", "properties": {}},
    }},
}  # fmt: skip


@pytest.fixture
def daniweb_client(tmp_path: Path) -> Iterator[Any]:
    package = generate_python(load(tmp_path, DANIWEB, "daniweb.json"), tmp_path / "out")
    sys.path.insert(0, str(package.parent))
    try:
        yield importlib.import_module(f"{package.name}.client")
    finally:
        sys.path.remove(str(package.parent))
        for name in [m for m in sys.modules if m.split(".")[0] == package.name]:
            del sys.modules[name]


def test_python_client_sends_lists_booleans_and_reads_any_media_type(daniweb_client: Any) -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("bloodtype"):
            return httpx.Response(200, text="AB+", headers={"content-type": "text/plain"})
        if request.url.path.endswith("~"):
            return httpx.Response(200, json={"data": {"id": 1}})
        return httpx.Response(200, headers={"content-type": "application/json"})

    transport = httpx.MockTransport(handle)
    with daniweb_client.Client("http://api", transport=transport) as client:
        client.get_conversations_id_statuses([3, 4])
        client.patch_conversations_id_statuses(7, data={"archived_status": False})
        assert client.get_api_person_bloodtype() == "AB+"  # text, not JSON
        assert client.get_users().data == {"id": 1}  # the schema of "Endpoint-get-users--"
        client.delete_collaborations_id("c1")  # an empty body, read as {} as openapi-ts does
    assert seen[0].url.raw_path == b"/conversations/3,4/statuses"  # simple style
    assert b'name="archived_status"\r\n\r\nfalse\r\n' in seen[1].read()


def test_python_client_types_by_the_class_each_schema_got(tmp_path: Path) -> None:
    """daniweb's `Endpoint-get-users` and `Endpoint-get-users--` are both EndpointGetUsers
    made PascalCase, and GitHub's `team` lost the name Team to a webhook's inline `team`
    property: the client read /users/~ and /teams answers into the other schema's class."""
    extract = json.loads(json.dumps(DANIWEB))
    extract["components"]["schemas"].update(
        {
            "webhook": {"type": "object", "properties": {"team": {
                "type": "object", "properties": {"parent": {"type": "string"}}}}},
            "team": {"type": "object", "properties": {"parent": {"type": "integer"}}},
        }
    )  # fmt: skip
    extract["paths"]["/teams"] = {"get": {"responses": {"200": {"description": "ok", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/team"}}}}}}}  # fmt: skip
    package = generate_python(load(tmp_path, extract, "daniweb.json"), tmp_path / "out")
    client = (package / "client.py").read_text()
    models = (package / "models.py").read_text()
    assert "def get_users(self) -> models.EndpointGetUsers1:" in client
    assert "class EndpointGetUsers1(BaseModel):\n    data: dict[str, Any]" in models
    team = client.split("def get_teams(self) -> models.", 1)[1].split(":", 1)[0]
    assert f"class {team}(BaseModel):\n    parent: int | None" in models
    assert check_python(package).ok


def test_python_models_of_azure_discriminators_and_defaults_pass_mypy(tmp_path: Path) -> None:
    """machinelearningservices: subclasses tagged by x-ms-discriminator-value under a parent
    whose tag is an enum (mypy: incompatible override; at run time the tag 'AKS' matched no
    subclass); sql-jobs' date-time and batchai's duration defaults, servicefabric's bare
    boolean component with a default, theracingapi's model property defaulting to {} (mypy:
    str, bool or dict where a datetime, timedelta, RootModel or model was declared), and
    microcks' oneOf of subclasses of a parent whose tag is an enum (incompatible override)."""
    schemas = {
        "ComputeType": {"type": "string", "enum": ["AKS", "DataFactory"]},
        "Compute": {
            "discriminator": {"propertyName": "computeType"},
            "required": ["computeType"],
            "properties": {"computeType": {"$ref": "#/components/schemas/ComputeType"},
                           "description": {"type": "string"}},
        },
        "ManagedAKS": {"x-ms-discriminator-value": "AKS", "allOf": [
            {"$ref": "#/components/schemas/Compute"},
            {"properties": {"properties": {"type": "object",
                                           "properties": {"agentCount": {"type": "integer"}}}}},
        ]},
        "DataFactory": {"x-ms-discriminator-value": "DataFactory",
                        "allOf": [{"$ref": "#/components/schemas/Compute"}]},
        "ComputeResource": {"type": "object",
                            "properties": {"properties": {"$ref": "#/components/schemas/Compute"}}},
        "JobSchedule": {"type": "object", "properties": {
            "endTime": {"default": "9999-12-31T11:59:59Z", "format": "date-time", "type": "string"},
            "maxWallClockTime": {"default": "7.00:00:00", "format": "duration", "type": "string"},
            "ForceRestart": {"$ref": "#/components/schemas/ForceRestart"},
        }},
        "ForceRestart": {"default": False, "type": "boolean"},
        # theracingapi.com: a model property defaulting to {} (mypy: dict where the model)
        "Runner": {"type": "object", "properties": {"trainer_14_days": {
            "allOf": [{"$ref": "#/components/schemas/RunnerTrainer14Days"}], "default": {}}}},
        "RunnerTrainer14Days": {"type": "object", "properties": {"runs": {"type": "integer"}}},
        # microcks.local: a oneOf's alternatives extend a parent whose tag is an enum
        **EXCHANGES,
    }  # fmt: skip
    document = load(tmp_path, {"paths": {}, "components": {"schemas": schemas}}, "azure.json")
    package = generate_python(document, tmp_path / "out")
    result = check_python(package)
    assert result.ok, result.output
    sys.path.insert(0, str(package.parent))
    try:
        models = importlib.import_module(f"{package.name}.models")
        resource = models.ComputeResource.model_validate(
            {"properties": {"computeType": "AKS", "properties": {"agentCount": 3}}}
        )
        assert type(resource.properties).__name__ == "ManagedAKS"
        assert models.JobSchedule().endTime is None  # not the string it used to default to
        assert models.Runner().trainer_14_days is None
        event = models.Exchange.model_validate({"type": "unidirEvent", "eventMessage": "m"})
        assert type(event.root).__name__ == "UnidirectionalEvent"
    finally:
        sys.path.remove(str(package.parent))
        for name in [m for m in sys.modules if m.split(".")[0] == package.name]:
            del sys.modules[name]


# --- the Go client ------------------------------------------------------------------------

GO_FORMS_TEST = """package PACKAGE

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestFormsListsAndText(t *testing.T) {
	var seen []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PATCH" {
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				t.Errorf("multipart: %v (%s)", err, r.Header.Get("Content-Type"))
			}
			seen = append(seen, r.URL.Path+" "+r.FormValue("archived_status"))
		} else if r.Method == "POST" {
			body, _ := io.ReadAll(r.Body)
			seen = append(seen, r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
		} else {
			seen = append(seen, r.URL.RawPath+r.URL.Path)
		}
		if strings.HasSuffix(r.URL.Path, "bloodtype") {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("AB+"))
		}
	}))
	defer server.Close()
	client := NewClient(server.URL)
	ctx := context.Background()
	if err := client.GetConversationsIDStatuses(ctx, []int64{3, 4}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"archived_status": {"false"}}
	if err := client.PatchConversationsIDStatuses(ctx, 7, form); err != nil {
		t.Fatal(err)
	}
	if err := client.PostV1DeviceCode(ctx, url.Values{"Scopes": {"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	text, err := client.GetApiPersonBloodtype(ctx)
	if err != nil || *text != "AB+" {
		t.Fatalf("bloodtype: %v %v", text, err)
	}
	want := []string{
		"/conversations/3,4/statuses",
		"/conversations/7/statuses false",
		"/v1/device/code application/x-www-form-urlencoded Scopes=a&Scopes=b",
	}
	for i, line := range want {
		if seen[i] != line {
			t.Errorf("request %d: %q, want %q", i, seen[i], line)
		}
	}
}
"""


@pytest.mark.timeout(600)
def test_go_client_sends_forms_and_lists_and_reads_text(tmp_path: Path) -> None:
    """daniweb's multipart bodies went without their boundary (Prism: 415) and its list
    path parameter as "[3 4]"; twilio_oauth_v1's urlencoded Scopes list as JSON text;
    peoplegeneratorapi's text answers were decoded as JSON."""
    require(("go", bool(shutil.which("go"))))
    extract = json.loads(json.dumps(DANIWEB))
    extract["paths"]["/v1/device/code"] = {"post": operation(requestBody={
        "required": True, "content": {"application/x-www-form-urlencoded": {"schema": {
            "type": "object",
            "properties": {"Scopes": {"type": "array", "items": {"type": "string"}}},
        }}}})}  # fmt: skip
    out = generate_go(load(tmp_path, extract, "daniweb.json"), tmp_path / "go")
    package = (out / "go.mod").read_text().split()[1]
    (out / "forms_test.go").write_text(GO_FORMS_TEST.replace("PACKAGE", package))
    env = {
        **os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off",
        "GOCACHE": str(TOOLS / "aiapi-go-cache" / "build"), "GOPATH": str(tmp_path / "gopath"),
    }  # fmt: skip
    done = subprocess.run(
        ["go", "test", "./..."], cwd=out, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- all three clients against Prism ------------------------------------------------------

# amazonaws.com/location's GetGeofence (Prism answers "string" for a date-time behind
# allOf, and its dynamic mode cannot write \p{L}), azure.com/apimanagement's required
# If-Match header (openapi-ts' request validator refused it), evetech.net's optional
# Accept-Language enum (Node's fetch sends `*`), googleapis.com/checks' optional
# octet-stream body with an object schema (the Go client sent one, which Prism refused).
THREE_CLIENTS = {
    "paths": {
        "/geofencing/v0/collections/{CollectionName}/geofences/{GeofenceId}": {"get": {
            "operationId": "GetGeofence",
            "parameters": [
                {"name": "CollectionName", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[-._\\w]+$", "minLength": 1}},
                {"name": "GeofenceId", "in": "path", "required": True,
                 "schema": {"$ref": "#/components/schemas/Id"}},
            ],
            "responses": {"200": {"description": "Success", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/GetGeofenceResponse"}}}}},
        }},
        "/loggers/{loggerId}": {"delete": {
            "operationId": "Logger_Delete",
            "parameters": [
                {"name": "loggerId", "in": "path", "required": True,
                 "schema": {"type": "string", "maxLength": 256, "pattern": "^[^*#&+:<>?]+$"}},
                {"name": "If-Match", "in": "header", "required": True,
                 "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "deleted"}},
        }},
        # trakt.tv: a GET with a required body, which OpenAPI says to ignore (fetch threw a
        # TypeError, Prism answered the Python and Go clients' bodies with 415)
        "/shows/{id}/progress/collection": {"get": {
            "operationId": "get_progress_collection",
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"type": "string", "enum": ["aired", "collected"]}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        # id4i.de: an operation named `list` (the Python client's method stood for the
        # builtin in every later annotation), and a `*/*` body the Go client sent as JSON
        # under the Content-Type `*/*`, which Prism read as text
        "/api/v1/lists": {"get": {
            "operationId": "list",
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {"type": "string"}}}}}},
        }},
        "/api/v1/microstorage/{id4n}": {"put": {
            "operationId": "writeToMicrostorage",
            "parameters": [{"name": "id4n", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "requestBody": {"content": {"*/*": {"schema": {"type": "string", "format": "byte"}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        # googleapis.com/checks: an optional octet-stream body Prism reads as an object
        "/v1alpha/{parent}/reports:analyzeUpload": {"post": {
            "operationId": "checks.accounts.apps.reports.analyzeUpload",
            "parameters": [{"name": "parent", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/octet-stream": {"schema": {
                "type": "object", "properties": {"codeReferenceId": {"type": "string"}}}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        # jellyfin.local: `application/*+json` listed before `application/json` (the Go
        # and TypeScript clients sent the wildcard as the Content-Type, Prism read no body)
        "/Devices/Options": {"post": {
            "operationId": "UpdateDeviceOptions",
            "requestBody": {"required": True, "content": {
                media: {"schema": {"type": "object", "required": ["customName"],
                                   "properties": {"customName": {"type": "string"}}}}
                for media in ("application/*+json", "application/json", "text/json")}},
            "responses": {"204": {"description": "ok"}},
        }},
        # circuitsandbox.net: a list form field, and a required form with no required
        # field; elevenlabs.io: a list of files (Prism read no list it was not told the
        # encoding of, and an empty form as no body)
        "/conversations/group": {"post": {
            "operationId": "createGroupConversation",
            "requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {
                "schema": {"type": "object", "required": ["participants"], "properties": {
                    "participants": {"type": "array", "items": {"type": "string"}},
                    "topic": {"type": "string"}}}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        "/webhooks/incoming/{webhookId}": {"post": {
            "operationId": "sendIncomingWebhook",
            "parameters": [{"name": "webhookId", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {
                "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        "/v1/voices/add": {"post": {
            "operationId": "Add_voice_v1_voices_add_post",
            "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                "type": "object", "required": ["name", "files"], "properties": {
                    "name": {"type": "string"},
                    "files": {"type": "array",
                              "items": {"type": "string", "format": "binary"}}}}}}},
            "responses": {"200": {"description": "ok"}},
        }},
        # azure.com/batch-BatchService: a HEAD's answer declares a Content-Type header of
        # type string (Prism sent `string` as the content type and failed on it: 500)
        "/jobs/{jobId}/files/{filePath}": {"head": {
            "operationId": "File_GetPropertiesFromTask",
            "parameters": [{"name": name, "in": "path", "required": True,
                            "schema": {"type": "string"}} for name in ("jobId", "filePath")],
            "responses": {"200": {"description": "ok", "headers": {
                "Content-Type": {"schema": {"type": "string"}},
                "ETag": {"schema": {"type": "string"}}}}},
        }},
        # nrel.gov/transportation-incentives-laws: of two templated paths that match
        # /v1/pocs.json equally well, Prism took the one declared last (422: id not integer)
        "/v1/pocs.{output_format}": {"get": {
            "operationId": "getPocs",
            "parameters": [{"name": "output_format", "in": "path", "required": True,
                            "schema": {"type": "string", "enum": ["json", "xml"]}}],
            "responses": {"200": {"description": "ok"}},
        }},
        "/v1/{id}.{output_format}": {"get": {
            "operationId": "getLaw",
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "integer"}},
                           {"name": "output_format", "in": "path", "required": True,
                            "schema": {"type": "string", "enum": ["json", "xml"]}}],
            "responses": {"200": {"description": "ok"}},
        }},
        "/search/": {"get": {
            "operationId": "get_search",
            "parameters": [{"name": "Accept-Language", "in": "header", "schema": {
                "type": "string", "enum": ["de", "en-us", "fr"], "default": "en-us"}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {"type": "integer"}}}}}},
        }},
    },
    "components": {"schemas": {
        k: SCHEMAS[k] for k in ("Timestamp", "Id", "GetGeofenceResponse")
    }},
}  # fmt: skip


@pytest.mark.timeout(900)
def test_three_clients_pass_against_prism_where_its_answers_break_the_schema(
    tmp_path: Path,
) -> None:
    modules = TOOLS / "aiapi-node" / "node_modules" / ".bin"
    require(
        ("go", bool(shutil.which("go"))),
        ("node", bool(shutil.which("node"))),
        ("openapi-ts", (modules / "openapi-ts").exists()),
        ("prism", (TOOLS / "aiapi-mock" / "node_modules" / ".bin" / "prism").exists()),
    )
    document = load(tmp_path, THREE_CLIENTS, "location.json")
    result = generate_contract(document, tmp_path / "out", verify=True, contract=True)
    for entry in result.languages:
        assert entry.generate_error is None, entry.generate_error
        assert entry.check is not None and entry.check.ok, entry.check.output
        tested = entry.contract
        assert tested is not None
        assert tested.ok and tested.outcomes == {"ok": 14}, (entry.language, tested.output)
    notes = {entry.language: entry.contract.notes for entry in result.languages if entry.contract}
    # pydantic and zod read the date-time and reject "string"; Go keeps it as text
    for language in ("python", "typescript"):
        assert notes[language]["answered instead with an example built from the schema"] == 1
    sdk = (tmp_path / "out" / "typescript" / "src" / "sdk.gen.ts").read_text()
    assert "responseValidator" in sdk and "requestValidator" not in sdk


# --- the TypeScript client ----------------------------------------------------------------

# amazonaws.com/location's RefererPattern (a PCRE `\x{60}`: tsc, "Hexadecimal digit
# expected"), github.ae's `is_alphanumeric` (a boolean defaulting to the string "true":
# TS2769), codat.io's `$ref`s into another schema's allOf and properties (openapi-ts:
# "Symbol finalName has not been resolved yet"), vtex.local's required Content-Type header
# on a GET (Prism demanded it; fetch drops it from a request without a body).
TYPESCRIPT_EXTRACT = {
    "paths": {
        "/profiles/{profileId}": {"get": {
            "operationId": "GetProfile",
            "parameters": [
                {"name": "Content-Type", "in": "header", "required": True,
                 "schema": {"type": "string", "example": "application/json"}},
                {"name": "profileId", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Transaction"}}}}},
        }},
        # vtex.local's UpdateClientAddress: three properties `$ref` address's countryName
        "/profiles/{profileId}/addresses/{addressId}": {"patch": {
            "operationId": "UpdateClientAddress",
            "parameters": [
                {"name": "profileId", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "addressId", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {
                "countryName": {"$ref": "#/components/schemas/address/properties/countryName"},
                "route": {"$ref": "#/components/schemas/address/properties/countryName"},
                "streetNumber": {"$ref": "#/components/schemas/address/properties/countryName"},
                "postalCode": {"$ref": "#/components/schemas/address/properties/postalCode"},
            }}}}},
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"type": "object"}}}}},
        }},
        # azure.com/servicefabric: three levels of events tagged by x-ms-discriminator-value
        # (openapi-ts gave the last level two literals at once), a uuid zod's uuid() refuses,
        # and (automation) a date-time with an offset, which zod's default refuses
        "/EventsStore/Applications/Events": {"get": {
            "operationId": "GetApplicationsEventList",
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {
                    "$ref": "#/components/schemas/ApplicationEvent"}},
                "example": [{
                    "Kind": "ApplicationContainerInstanceExited", "ApplicationId": "app",
                    "EventInstanceId": "00000000-0000-0000-0000-000000000010",
                    "TimeStamp": "2017-03-26T01:13:43.267+01:00", "ExitCode": 1,
                }],
            }}}},
        }},
        # jellyfin.local: a font/* answer, which openapi-ts' client parsed as JSON
        "/FallbackFont/Fonts/{name}": {"get": {
            "operationId": "GetFallbackFont",
            "parameters": [{"name": "name", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "content": {"font/*": {
                "schema": {"type": "string", "format": "binary"}}}}},
        }},
        "/repos/{owner}/autolinks": {"post": {
            "operationId": "repos/create-autolink",
            "parameters": [{"name": "owner", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["key_prefix"],
                "properties": {
                    "key_prefix": {"type": "string"},
                    "is_alphanumeric": {"type": "boolean", "default": "true"},
                    "referer": {"type": "string", "pattern":
                        "^([$\\-._+!*\\x{60}(),;/?:@=&\\w]|%([0-9a-fA-F?]{2}))+$"},
                    # amazonaws.com/iam's PathType: a bare `/` ended the regex literal
                    "path": {"type": "string", "pattern": "(/)|(/[!-~]+/)"},
                    # and as IAM's document writes it (openapi-ts unescaped \u002F into /)
                    "iam_path": {"type": "string",
                                 "pattern": "(\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)"},
                },
            }}}},
            "responses": {"201": {"description": "created"}},
        }},
    },
    "components": {"schemas": {
        "address": {"type": "object", "required": ["postalCode", "countryName"], "properties": {
            "countryName": {"type": "string", "example": "Brasil"},
            "postalCode": {"type": "string", "example": "20200-000"},
        }},
        "FabricEvent": {
            "discriminator": {"propertyName": "Kind"},
            "required": ["Kind", "EventInstanceId", "TimeStamp"],
            "properties": {
                "Kind": {"type": "string", "enum": [
                    "ApplicationEvent", "ApplicationContainerInstanceExited", "NodeDown"]},
                "EventInstanceId": {"type": "string", "format": "uuid"},
                "TimeStamp": {"type": "string", "format": "date-time"},
            },
        },
        "ApplicationEvent": {"allOf": [{"$ref": "#/components/schemas/FabricEvent"}],
                             "x-ms-discriminator-value": "ApplicationEvent",
                             "required": ["ApplicationId"],
                             "properties": {"ApplicationId": {"type": "string"}}},
        "ApplicationContainerInstanceExitedEvent": {
            "allOf": [{"$ref": "#/components/schemas/ApplicationEvent"}],
            "x-ms-discriminator-value": "ApplicationContainerInstanceExited",
            "properties": {"ExitCode": {"type": "integer", "format": "int64"}},
        },
        "NodeDownEvent": {"allOf": [{"$ref": "#/components/schemas/FabricEvent"}],
                          "x-ms-discriminator-value": "NodeDown"},
        "Order": {"allOf": [{"type": "object", "properties": {"id": {"type": "string"}}}]},
        "Transaction": {"allOf": [
            {"$ref": "#/components/schemas/Order/allOf/0"},
            {"type": "object", "properties": {
                "currency": {"type": "string", "format": "ISO4217"},
                "price": {"$ref": "#/components/schemas/Transaction/allOf/1/properties/currency"},
            }},
        ]},
    }},
}  # fmt: skip


@pytest.mark.timeout(900)
def test_typescript_client_of_documents_openapi_ts_or_tsc_stopped_on(tmp_path: Path) -> None:
    modules = TOOLS / "aiapi-node" / "node_modules" / ".bin"
    require(
        ("node", bool(shutil.which("node"))),
        ("openapi-ts", (modules / "openapi-ts").exists()),
        ("prism", (TOOLS / "aiapi-mock" / "node_modules" / ".bin" / "prism").exists()),
    )
    document = load(tmp_path, TYPESCRIPT_EXTRACT, "extract.json")
    result = generate_contract(
        document, tmp_path / "out", ("typescript",), verify=True, contract=True
    )
    (entry,) = result.languages
    assert entry.generate_error is None, entry.generate_error
    assert entry.check is not None and entry.check.ok, entry.check.output
    assert entry.contract is not None and entry.contract.ok, entry.contract.output
    assert entry.contract.outcomes == {"ok": 5}
    assert not entry.contract.notes  # the example above was taken as it is
    zod = (tmp_path / "out" / "typescript" / "src" / "zod.gen.ts").read_text()
    assert "\\x60" in zod and "x{60}" not in zod
    assert ".regex(/(\\/)|(\\/[!-~]+\\/)/)" in zod
    assert ".regex(/(\\x2F)|(\\x2F[\\x21-\\x7E]+\\x2F)/)" in zod
    assert 'default("true")' not in zod


def test_a_5xx_to_an_accepted_request_is_the_mocks(tmp_path: Path) -> None:
    """azure.com/storage-DataLakeStorage's HEAD: Prism answered 500 as the header it wrote
    broke the document's pattern; a HEAD has no body to name Prism's own error, its log
    does (a violation of the response, none of the request)."""
    document = load(tmp_path, {"paths": {"/{filesystem}": {"head": {
        "parameters": [{"name": "filesystem", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}, "default": {"description": "error"}},
    }}}})  # fmt: skip
    (call,) = planned_calls(document)
    session = ContractSession(document)
    log = (
        "[HTTP SERVER] head /a info Request received\n"
        "[VALIDATOR] warning Violation: response.header.x-ms-request-id Response header "
        "parameter x-ms-request-id must match pattern"
    )
    for violation, expected in [
        (log, "skipped: the mock cannot answer (its answer broke the document)"),
        (log.replace("response.header", "request.header"), "mock answered 500"),
    ]:
        state = _Judging()
        report = {"kind": "status", "sent": True, "answer": {"status": 500, "body": ""}}
        session._judge_batch("static", [call], {call.index: report}, [violation], False, state)
        assert state.outcomes[call.index][0] == expected
