"""The OpenAPI summaries (cache.contracts) and the call matching that picks one for a
prompt (server.completion.contracts), on a real project index of a temporary workspace:
the spellings of a call each language uses, what must not match, and the bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cache.contracts import SCHEMA_CHARS, looks_like_openapi, summarise
from cache.index import ProjectIndex
from server.completion.contracts import ContractIndex

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Shop", "version": "2"},
    "paths": {
        "/v2/orders": {
            "get": {"operationId": "listOrders", "responses": {"200": {"description": "ok"}}},
            "post": {
                "operationId": "create_order",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Order"}}
                    }
                },
                "responses": {"201": {"description": "made"}},
            },
        },
        "/v2/orders/{orderId}": {
            "parameters": [{"$ref": "#/components/parameters/OrderId"}],
            "get": {"responses": {"200": {"$ref": "#/components/responses/One"}}},
            "delete": {"operationId": "cancelOrder", "responses": {"204": {"description": "x"}}},
        },
        "/v2/orders/{orderId}/items/{itemId}": {
            "get": {"operationId": "items/get", "responses": {"200": {"description": "ok"}}},
        },
    },
    "components": {
        "parameters": {"OrderId": {"name": "orderId", "in": "path", "schema": {"type": "string"}}},
        "responses": {
            "One": {
                "description": "one",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}},
            }
        },
        "schemas": {
            "Order": {
                "type": "object",
                "required": ["sku"],
                "properties": {
                    "sku": {"type": "string"},
                    "lines": {"type": "array", "items": {"$ref": "#/components/schemas/Order"}},
                    "note": {"$ref": "../secret.yaml#/Note"},
                },
            }
        },
    },
}


@pytest.fixture
def contracts(tmp_path: Path) -> ContractIndex:
    (tmp_path / "shop.json").write_text(json.dumps(DOCUMENT))
    (tmp_path / "package.json").write_text('{"name": "not-a-contract"}')
    index = ProjectIndex(tmp_path, cache_dir=tmp_path / ".cache")
    index.build()
    found = ContractIndex(index, {})
    assert found.refresh() == 2  # both JSON files looked at, once
    assert found.refresh() == 0 and not found.stale()
    return found


def called(contracts: ContractIndex, typed: str) -> list[str]:
    offset = typed.index("█")
    text = typed.replace("█", "")
    return [f"{op.method} {op.path}" for _, op in contracts.match(text, offset)]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ('r = requests.post(f"{BASE}/v2/orders", json=█', ["post /v2/orders"]),
        ('r = client.get(f"/v2/orders/{order_id}", █)', ["get /v2/orders/{orderId}"]),
        ("fetch(`${b}/v2/orders/${i}/items/${t}`, █", ["get /v2/orders/{orderId}/items/{itemId}"]),
        ('session.delete(API + "/v2/orders/" + str(oid), █)', ["delete /v2/orders/{orderId}"]),
        ('httpx.request("DELETE", "http://x/v2/orders/%s" % o█)', ["delete /v2/orders/{orderId}"]),
        ("api.createOrder(█", ["post /v2/orders"]),
        ("shop.items.get(order, █", ["get /v2/orders/{orderId}/items/{itemId}"]),
        ("api.cancel_order(order_id=█", ["delete /v2/orders/{orderId}"]),
        ("client.get_v2_orders_order_id(█", ["get /v2/orders/{orderId}"]),
        ('fetch(url("/v2/orders"), {\n  method: "POST",\n  █', ["post /v2/orders"]),
        ('requests.get(\n    BASE + "/v2/orders",\n    █', ["get /v2/orders"]),
    ],
)  # fmt: skip
def test_a_call_finds_its_operation(
    contracts: ContractIndex, typed: str, expected: list[str]
) -> None:
    assert called(contracts, typed) == expected


def test_without_a_method_the_paths_operations_are_shown(contracts: ContractIndex) -> None:
    assert called(contracts, 'url = f"{BASE}/v2/orders/{oid}"█') == [
        "get /v2/orders/{orderId}",
        "delete /v2/orders/{orderId}",
    ]


@pytest.mark.parametrize(
    "typed",
    [
        'requests.get(f"{BASE}/v2/customers", █)',
        'requests.get("/orders", █)',  # the document's paths start with /v2
        'requests.get(f"{BASE}/{kind}/{oid}", █)',  # variables alone match any path
        'print("v2/orders is the route")\nx = 1█',  # a call on another line, closed
        "orders.get(█",
    ],
)
def test_what_is_no_call_of_an_operation_matches_nothing(
    contracts: ContractIndex, typed: str
) -> None:
    assert called(contracts, typed) == []


def test_the_summary_expands_local_refs_bounded_and_never_reads_others() -> None:
    contract = summarise(json.dumps(DOCUMENT), json_text=True)
    assert contract is not None and contract.title == "Shop"
    one = next(op for op in contract.operations if op.path.endswith("{orderId}"))
    assert one.render() == (
        "GET /v2/orders/{orderId}:\n"
        "  parameters: orderId (path, string, required)\n"
        "  response 200: Order {sku: string, lines?: Order[], note?: Note}\n"
    )
    big = {"type": "object", "properties": {f"field{n}": {"type": "string"} for n in range(90)}}
    huge = dict(DOCUMENT, components={"schemas": {"Order": big}})
    contract = summarise(json.dumps(huge), json_text=True)
    assert contract is not None
    create = next(op for op in contract.operations if op.operation_id == "create_order")
    assert len(create.request_body) <= SCHEMA_CHARS


def test_what_is_not_an_openapi_3_document_is_left_alone() -> None:
    assert summarise("openapi: 3.0.0\npaths:\n  /x: [unclosed\n") is None
    assert summarise('{"swagger": "2.0", "paths": {}}') is None
    assert summarise("- just\n- a list\n") is None
    assert summarise("a: &a [*a]\n") is None  # a self-referencing alias
    odd = (  # a list of objects where names belong, a number for a schema
        "openapi: 3.0.0\npaths:\n  /x:\n    get:\n      parameters: [{name: q, in: query,"
        " schema: {type: object, required: [{a: 1}], properties: {a: 7}}}]\n"
    )
    contract = summarise(odd)
    assert contract is not None
    assert contract.operations[0].parameters[0].render() == "q (query, {a?: any})"
    assert looks_like_openapi('{\n  "openapi": "3.1.0",')
    assert looks_like_openapi("# comment\nopenapi: '3.0.2'\n")
    assert not looks_like_openapi("info:\n  openapi: 3.0.0\n")


def test_a_changed_document_is_seen_as_stale(contracts: ContractIndex, tmp_path: Path) -> None:
    assert contracts.index is not None
    changed = dict(DOCUMENT, paths={"/v2/refunds": {"post": {"operationId": "refund"}}})
    (tmp_path / "shop.json").write_text(json.dumps(changed))
    contracts.index.update_file("shop.json")
    assert contracts.stale()
    assert contracts.refresh() == 1
    assert called(contracts, 'requests.post("/v2/refunds", █') == ["post /v2/refunds"]
