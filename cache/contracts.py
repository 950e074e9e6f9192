"""OpenAPI 3 documents of the workspace, summarised per operation for completion prompts.

An OpenAPI document is a dependency like an imported module: code that calls one of its
operations is completed better when the prompt shows that operation's parameters and
schemas. This module turns a document's text into a compact `Contract` (method, path
template, operationId, parameters, request body and responses, each bounded in size).

Security: only local `$ref`s (`#/...`) are followed; a reference to another file or a URL
is shown by its name and never read or fetched. Cost: detection reads a file's head
(`looks_like_openapi`); a document is parsed once per version, by the caller, off the
keystroke path; documents and what is taken from them are bounded (`MAX_*`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import yaml

MAX_DOCUMENT_BYTES: Final = 8_000_000
"""Larger documents are not parsed (GitHub's 13 MB description takes ~1 s of JSON parsing
and most of a gigabyte as YAML); the project scan's own file limit is usually lower."""
MAX_YAML_BYTES: Final = 2_000_000
"""PyYAML is ~50x slower than json: a bigger YAML document is left out."""
MAX_OPERATIONS: Final = 5_000
SCHEMA_CHARS: Final = 320
"""Most characters of one schema's summary: enough for a dozen typed properties."""
SCHEMA_DEPTH: Final = 2
"""Nested objects (and `$ref`s) expanded this deep; deeper ones are shown by name."""
MAX_PARAMETERS: Final = 24
HEAD_CHARS: Final = 4096
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

_YAML_KEY = re.compile(r"^openapi\s*:\s*['\"]?3\.", re.MULTILINE)
_JSON_KEY = re.compile(r"\"openapi\"\s*:\s*\"3\.")


def looks_like_openapi(head: str) -> bool:
    """Whether a file's first HEAD_CHARS may be an OpenAPI 3 document: a top-level
    `openapi: 3.x` YAML key or an `"openapi": "3.x"` JSON member (cheap; `summarise`
    confirms it)."""
    head = head[:HEAD_CHARS]
    return bool(_YAML_KEY.search(head) or _JSON_KEY.search(head))


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    location: str
    """path, query, header or cookie."""
    type: str
    required: bool

    def render(self) -> str:
        flags = f"{self.location}, {self.type}" + (", required" if self.required else "")
        return f"{self.name} ({flags})"


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    """Lower case, as the document spells the key."""
    path: str
    """The path template, `/pets/{petId}`."""
    operation_id: str
    summary: str
    parameters: tuple[Parameter, ...]
    request_body: str
    """The JSON body's schema summarised; "" when none."""
    responses: tuple[tuple[str, str], ...]
    """(status, schema summary) of the responses that have a JSON body, or a description."""

    def render(self) -> str:
        """The operation as the prompt shows it: a few YAML-like lines."""
        lines = [f"{self.method.upper()} {self.path}:"]
        if self.operation_id:
            lines.append(f"  operationId: {self.operation_id}")
        if self.summary:
            lines.append(f"  summary: {self.summary}")
        if self.parameters:
            lines.append("  parameters: " + "; ".join(p.render() for p in self.parameters))
        if self.request_body:
            lines.append(f"  requestBody: {self.request_body}")
        for status, schema in self.responses:
            lines.append(f"  response {status}: {schema}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Contract:
    title: str
    version: str
    operations: tuple[Operation, ...]


def summarise(text: str, json_text: bool | None = None) -> Contract | None:
    """The contract of an OpenAPI 3 document's text (JSON when `json_text`, YAML when
    False, guessed from its first character when None); None when it is not one or does
    not parse. Never raises on bad input."""
    if len(text) > MAX_DOCUMENT_BYTES:
        return None
    if json_text is None:
        json_text = text.lstrip()[:1] == "{"
    try:
        if json_text:
            document = json.loads(text)
        else:
            if len(text) > MAX_YAML_BYTES:
                return None
            document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (ValueError, yaml.YAMLError, RecursionError):
        return None
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3"):
        return None
    try:
        return _contract(document)
    except RecursionError:
        return None


def _contract(document: dict[str, Any]) -> Contract:
    info = document.get("info")
    info = info if isinstance(info, dict) else {}
    paths = document.get("paths")
    operations: list[Operation] = []
    for path, item in paths.items() if isinstance(paths, dict) else ():
        item = _resolve(document, item)
        if not isinstance(item, dict) or not isinstance(path, str):
            continue
        shared = item.get("parameters")
        for method in METHODS:
            operation = _resolve(document, item.get(method))
            if isinstance(operation, dict):
                operations.append(_operation(document, method, path, operation, shared))
                if len(operations) >= MAX_OPERATIONS:
                    break
        if len(operations) >= MAX_OPERATIONS:
            break
    return Contract(
        _one_line(info.get("title"), 80), _one_line(info.get("version"), 40), tuple(operations)
    )


def _operation(
    document: dict[str, Any], method: str, path: str, operation: dict[str, Any], shared: Any
) -> Operation:
    parameters: dict[tuple[str, str], Parameter] = {}
    for raw in [*_list(shared), *_list(operation.get("parameters"))]:  # the operation's win
        param = _resolve(document, raw)
        if not isinstance(param, dict) or not isinstance(param.get("name"), str):
            continue
        location = str(param.get("in", ""))
        schema = param.get("schema")
        parameters[(param["name"], location)] = Parameter(
            param["name"],
            location,
            _schema(document, schema, 1, 80) if schema is not None else "any",
            bool(param.get("required")) or location == "path",
        )
    body = _resolve(document, operation.get("requestBody"))
    request_body = ""
    if isinstance(body, dict):
        request_body = _media_schema(document, body.get("content"))
    responses: list[tuple[str, str]] = []
    raw_responses = operation.get("responses")
    for status, response in raw_responses.items() if isinstance(raw_responses, dict) else ():
        response = _resolve(document, response)
        if not isinstance(response, dict):
            continue
        schema = _media_schema(document, response.get("content"))
        text = schema or _one_line(response.get("description"), 80)
        if text:
            responses.append((str(status), text))
        if len(responses) >= 4:
            break
    return Operation(
        method,
        path,
        _one_line(operation.get("operationId"), 120),
        _one_line(operation.get("summary") or operation.get("description"), 120),
        tuple(list(parameters.values())[:MAX_PARAMETERS]),
        request_body,
        tuple(responses),
    )


def _media_schema(document: dict[str, Any], content: Any) -> str:
    """The summary of a content map's JSON schema (else its first media type's)."""
    if not isinstance(content, dict) or not content:
        return ""
    chosen = next(
        (media for kind, media in content.items() if "json" in str(kind).lower()),
        next(iter(content.values())),
    )
    if not isinstance(chosen, dict) or "schema" not in chosen:
        return ""
    return _schema(document, chosen["schema"], 0, SCHEMA_CHARS)


def _schema(document: dict[str, Any], schema: Any, depth: int, limit: int) -> str:
    """A schema as a TypeScript-like type: `Pet {id: integer, tag?: string}`, `Pet[]`,
    `"a"|"b"`; cut to `limit` characters, nesting shown to SCHEMA_DEPTH."""
    text = _type(document, schema, depth, set())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _type(document: dict[str, Any], schema: Any, depth: int, seen: set[str]) -> str:
    if not isinstance(schema, dict):
        return "any"
    name = ""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/") or ref in seen or depth >= SCHEMA_DEPTH:
            return name or "any"
        target = _pointer(document, ref)
        if not isinstance(target, dict):
            return name or "any"
        schema, seen = target, seen | {ref}
    for key, joiner in (("oneOf", " | "), ("anyOf", " | "), ("allOf", " & ")):
        parts = schema.get(key)
        if isinstance(parts, list) and parts:
            inner = joiner.join(_type(document, part, depth + 1, seen) for part in parts[:6])
            return f"{name} {inner}".strip() if name else inner
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(value, default=str) for value in enum[:12])
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "any") if isinstance(kind, list) else kind
    if kind == "array":
        item = _type(document, schema.get("items"), depth, seen)
        return f"{item}[]" if " " not in item else f"({item})[]"
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        if depth + 1 > SCHEMA_DEPTH:
            return name or "object"
        required = {key for key in _list(schema.get("required")) if isinstance(key, str)}
        fields = [
            f"{key}{'' if key in required else '?'}: {_type(document, value, depth + 1, seen)}"
            for key, value in list(properties.items())[:24]
        ]
        body = "{" + ", ".join(fields) + "}"
        return f"{name} {body}" if name else body
    if isinstance(kind, str):
        fmt = schema.get("format")
        return f"{kind}({fmt})" if isinstance(fmt, str) else kind
    return name or "object"


def _resolve(document: dict[str, Any], value: Any, hops: int = 8) -> Any:
    """`value` with a local `$ref` followed (a few hops); other refs stay as they are."""
    while hops > 0 and isinstance(value, dict) and isinstance(value.get("$ref"), str):
        ref = value["$ref"]
        if not ref.startswith("#/"):
            return value
        value, hops = _pointer(document, ref), hops - 1
    return value


def _pointer(document: dict[str, Any], ref: str) -> Any:
    """What a local JSON pointer (`#/components/schemas/Pet`) points at; None if nothing."""
    node: Any = document
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _one_line(value: Any, limit: int) -> str:
    if not isinstance(value, (str, int, float)):
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
