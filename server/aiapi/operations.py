"""The operations of a contract as the client templates need them, references resolved.

Both hand-written templates (the Python client and the Go package) read the document
through this one view: each operation's parameters, its request body and the response a
caller gets on success, in the document's order so the output is stable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.naming import words

SUCCESS_CODES = ("200", "201", "202", "203", "204", "205", "206", "2XX", "2xx")


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # path, query or header (cookies are left out)
    required: bool
    schema: Any
    description: str = ""


@dataclass(frozen=True)
class Payload:
    """A request or response body: its media type and schema (None when it has no body)."""

    media_type: str | None
    schema: Any

    @property
    def is_json(self) -> bool:
        return self.media_type is not None and is_json_media(self.media_type)

    @property
    def is_form(self) -> bool:
        """A form (urlencoded or multipart): a mapping of fields, not a blob."""
        base = (self.media_type or "").split(";")[0].strip().lower()
        return base in ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class Operation:
    route: str
    method: str
    operation_id: str | None
    summary: str
    parameters: tuple[Parameter, ...]
    body: Payload | None
    body_required: bool
    result: Payload

    @property
    def name_words(self) -> list[str]:
        if self.operation_id and words(self.operation_id):
            return words(self.operation_id)
        return [self.method, *words(self.route)] if words(self.route) else [self.method, "root"]


def is_json_media(media_type: str) -> bool:
    base = media_type.split(";")[0].strip().lower()
    return base == "application/json" or base.endswith("+json") or base == "*/*"


def _choose_media(content: Any) -> Payload:
    if not isinstance(content, dict) or not content:
        return Payload(None, None)
    # a JSON type without a wildcard first: jellyfin lists `application/*+json` before
    # `application/json`, and a client cannot send a wildcard as its Content-Type
    for concrete in (True, False):
        for media_type, media in content.items():
            if (
                is_json_media(media_type)
                and media_type != "*/*"
                and ("*" not in media_type) == concrete
            ):
                return Payload(media_type, (media or {}).get("schema"))
    media_type, media = next(iter(content.items()))
    schema = media.get("schema") if isinstance(media, dict) else None
    return Payload(str(media_type), schema)


def collect_operations(document: ContractDocument) -> list[Operation]:
    operations = []
    for route, method, raw, shared in document.operations():
        parameters: dict[tuple[str, str], Parameter] = {}
        for entry in [*shared, *(raw.get("parameters") or [])]:
            param = document.resolve(entry)
            if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                continue
            location = param.get("in")
            if location not in ("path", "query", "header"):
                continue
            schema = param.get("schema")
            if schema is None and isinstance(param.get("content"), dict):
                schema = _choose_media(param["content"]).schema
            parameters[(param["name"], location)] = Parameter(
                name=param["name"],
                location=location,
                required=bool(param.get("required")) or location == "path",
                schema=schema if schema is not None else {},
                description=str(param.get("description") or ""),
            )
        body = None
        body_required = False
        # "SHALL be ignored by consumers" where HTTP gives a body no meaning (OpenAPI 3.0.3):
        # fetch will not send one with GET or HEAD, and Prism refuses one it was not told of
        request = None if method in ("get", "head") else document.resolve(raw.get("requestBody"))
        if isinstance(request, dict):
            payload = _choose_media(request.get("content"))
            if payload.media_type is not None:
                body, body_required = payload, bool(request.get("required"))
        operations.append(
            Operation(
                route=route,
                method=method,
                operation_id=raw.get("operationId")
                if isinstance(raw.get("operationId"), str)
                else None,
                summary=str(raw.get("summary") or raw.get("description") or ""),
                parameters=tuple(parameters.values()),
                body=body,
                body_required=body_required,
                result=_success(document, raw.get("responses")),
            )
        )
    return operations


def _success(document: ContractDocument, responses: Any) -> Payload:
    if not isinstance(responses, dict):
        return Payload(None, None)
    for code in SUCCESS_CODES:
        if code in responses:
            response = document.resolve(responses[code])
            if isinstance(response, dict):
                return _choose_media(response.get("content"))
    return Payload(None, None)


def component_schema_name(schema: Any) -> str | None:
    """'Pet' for {'$ref': '#/components/schemas/Pet'}; None for anything else."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        prefix = "#/components/schemas/"
        ref = schema["$ref"]
        if ref.startswith(prefix) and "/" not in ref[len(prefix) :]:
            return str(ref[len(prefix) :]).replace("~1", "/").replace("~0", "~")
    return None


def schema_types(schema: dict[str, Any]) -> tuple[str | None, bool]:
    """The schema's one non-null type (3.0 `type` or 3.1 `type: [x, 'null']`) and nullability."""
    declared = schema.get("type")
    nullable = bool(schema.get("nullable"))
    if isinstance(declared, list):
        others = [t for t in declared if t != "null"]
        nullable = nullable or len(others) < len(declared)
        declared = others[0] if len(others) == 1 else None
    return (declared if isinstance(declared, str) else None), nullable
