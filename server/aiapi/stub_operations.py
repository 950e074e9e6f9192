"""The operations of a contract as the server stubs and test skeletons need them.

One view for the three languages: each operation's group (its first tag: a class, an
interface or an object to implement), the status it answers with on success, whether it
can be served at all, an example of what it answers (from the document's own examples,
else built from its schema), and the order in which a router has to try the routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from server.aiapi.contract_examples import example_value
from server.aiapi.document import ContractDocument
from server.aiapi.naming import UniqueNames, pascal, snake, words
from server.aiapi.operations import SUCCESS_CODES, Operation
from server.aiapi.python_client import client_methods

DEFAULT_GROUP = "default"
FRAGMENT_SKIP = "the route has a #fragment (AWS's X-Amz-Target), which HTTP never sends"


@dataclass(frozen=True)
class StubOperation:
    op: Operation
    raw: dict[str, Any]
    python_name: str  # the method's name on the Python client (and on the Python handlers)
    group: str  # the first tag, or "default"
    status: int  # the success status the stub answers with
    skip: str | None = None  # why no server can serve it

    @property
    def label(self) -> str:
        return f"{self.op.method.upper()} {self.op.route}"


def stub_operations(document: ContractDocument) -> list[StubOperation]:
    """Every operation, in the document's order."""
    raw_by_key = {(route, method): raw for route, method, raw, _ in document.operations()}
    found = []
    for name, op in client_methods(document):
        raw = raw_by_key.get((op.route, op.method), {})
        tags = [t for t in raw.get("tags") or [] if isinstance(t, str) and words(t)]
        found.append(
            StubOperation(
                op=op,
                raw=raw,
                python_name=name,
                group=tags[0] if tags else DEFAULT_GROUP,
                status=success_status(document, raw),
                skip=FRAGMENT_SKIP if "#" in op.route else None,
            )
        )
    return found


def success_status(document: ContractDocument, raw: dict[str, Any]) -> int:
    """The first 2xx the document declares (2XX as 200); 200 when it declares none."""
    responses = raw.get("responses")
    if isinstance(responses, dict):
        for code in SUCCESS_CODES:
            if code in responses:
                return int(code) if code.isdigit() else 200
    return 200


def group_names(operations: list[StubOperation], suffix: str, reserved: set[str]) -> dict[str, str]:
    """Each group's type name: `pets` -> PetsHandlers (suffix 'Handlers'), unique."""
    names = UniqueNames(reserved)
    found: dict[str, str] = {}
    for stub in operations:
        if stub.group not in found:
            found[stub.group] = names.claim(pascal(stub.group, "Default") + suffix, "")
    return found


def routing_order(operations: list[StubOperation]) -> list[StubOperation]:
    """The servable operations, literal segments before templated ones at each depth, so
    that /pets/mine is tried before /pets/{petId}; otherwise the document's order."""

    def key(stub: StubOperation) -> tuple[int, ...]:
        segments = stub.op.route.strip("/").split("/")
        return tuple(1 if "{" in segment else 0 for segment in segments)

    return sorted((s for s in operations if s.skip is None), key=key)


def route_pattern(route: str) -> tuple[str, list[str]]:
    """'/pets/{petId}' as an anchored regexp over the escaped path (each {name} one
    segment), in the syntax RE2 and JavaScript share; and the names it captures."""
    names: list[str] = []
    parts: list[str] = []
    last = 0
    for match in re.finditer(r"\{([^{}]+)\}", route):
        parts.append(_quote_meta(route[last : match.start()]))
        parts.append("([^/]+)")
        names.append(match.group(1))
        last = match.end()
    parts.append(_quote_meta(route[last:]))
    return "^" + "".join(parts) + "$", names


def _quote_meta(text: str) -> str:
    """The route's literal text as it appears in an escaped path, its metacharacters escaped
    (Go's regexp.QuoteMeta)."""
    escaped = quote(text, safe="/:@!$&'()*+,;=-._~")
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", escaped)


def response_example(document: ContractDocument, stub: StubOperation) -> Any:
    """What a stub answering from the contract sends on success: the media type's own
    example (or the first of its examples), else a value built from the schema."""
    responses = stub.raw.get("responses") or {}
    for code in SUCCESS_CODES:
        if code not in responses:
            continue
        response = document.resolve(responses[code])
        content = response.get("content") if isinstance(response, dict) else None
        media = (content or {}).get(stub.op.result.media_type or "")
        media = document.resolve(media) if isinstance(media, dict) else None
        if isinstance(media, dict):
            if "example" in media:
                return media["example"]
            examples = media.get("examples")
            if isinstance(examples, dict):
                for example in examples.values():
                    example = document.resolve(example)
                    if isinstance(example, dict) and "value" in example:
                        return example["value"]
        break
    return example_value(document, stub.op.result.schema)


def base_url_variable(document: ContractDocument) -> str:
    """The environment variable the test skeletons read: SWAGGER_PETSTORE_BASE_URL."""
    return snake(document.title, "api").upper()[:40].strip("_") + "_BASE_URL"
