"""Load an OpenAPI 3.x document, validate it, and point at the line of each problem.

openapi-spec-validator checks the document against the OpenAPI schema and its own rules
(unique operationIds, path parameters declared...). Its errors carry a JSON path; the YAML
is composed once into nodes that keep their marks, so each path maps back to a line.
References are resolved with jsonschema-path's resolver (the validator's own), never by
hand.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Pointer = tuple[str | int, ...]

MAX_PROBLEMS = 10


@dataclass(frozen=True)
class ContractProblem:
    """One thing wrong with the document, where it is, and the line it starts on."""

    message: str
    pointer: Pointer = ()
    line: int | None = None

    def describe(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line is not None else source
        at = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in self.pointer)
        return f"{where}: {'#' + at + ': ' if at else ''}{self.message}"


class ContractError(Exception):
    """The document cannot be used: unreadable, not OpenAPI 3.x, or invalid."""

    def __init__(self, source: Path, problems: list[ContractProblem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(p.describe(str(source)) for p in problems))


class _ContractLoader(yaml.SafeLoader):
    """YAML 1.1 without the surprises: dates stay strings, only true/false are booleans."""


_ContractLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:bool")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ContractLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _line_map(node: yaml.Node, pointer: Pointer, lines: dict[Pointer, int]) -> None:
    lines[pointer] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*pointer, str(key.value))
            _line_map(value, child, lines)
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _line_map(item, (*pointer, index), lines)


def _plain(value: Any) -> Any:
    """Keys as strings (YAML reads an unquoted `200:` as an int), as JSON would have them."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass
class ContractDocument:
    """A validated OpenAPI 3.x document, with its references resolvable."""

    path: Path
    data: dict[str, Any]
    text: str
    _lines: dict[Pointer, int] | None = field(default=None, repr=False)
    _resolver: Any = field(default=None, repr=False)

    @property
    def openapi_version(self) -> str:
        return str(self.data.get("openapi", ""))

    @property
    def title(self) -> str:
        return str(self.info.get("title") or self.path.stem)

    @property
    def api_version(self) -> str:
        return str(self.info.get("version") or "")

    @property
    def info(self) -> dict[str, Any]:
        info = self.data.get("info")
        return info if isinstance(info, dict) else {}

    def line_of(self, pointer: Pointer) -> int | None:
        """The line a JSON path starts on (the nearest enclosing node's, if not itself)."""
        if self._lines is None:
            self._lines = {}
            with contextlib.suppress(yaml.YAMLError):
                root = yaml.compose(self.text, Loader=_ContractLoader)
                if root is not None:
                    _line_map(root, (), self._lines)
        parts = tuple(str(p) if isinstance(p, str) else p for p in pointer)
        while parts:
            if parts in self._lines:
                return self._lines[parts]
            parts = parts[:-1]
        return self._lines.get(())

    def resolve(self, node: Any) -> Any:
        """The node a `$ref` points at (following chains), or the node itself."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
            node = self._reference_resolver().lookup(node["$ref"]).contents
            seen += 1
        return node

    def _reference_resolver(self) -> Any:
        if self._resolver is None:
            from jsonschema_path import SchemaPath

            schema_path = SchemaPath.from_dict(self.data, base_uri=self.path.resolve().as_uri())
            with schema_path.resolve() as resolved:
                self._resolver = resolved.resolver
        return self._resolver

    def operations(self) -> Iterator[tuple[str, str, dict[str, Any], list[Any]]]:
        """(path, method, operation, path-level parameters) in the document's order."""
        paths = self.data.get("paths") or {}
        for route, item in paths.items():
            item = self.resolve(item)
            if not isinstance(item, dict):
                continue
            shared = item.get("parameters") or []
            for method in ("get", "put", "post", "delete", "options", "head", "patch", "trace"):
                operation = item.get(method)
                if isinstance(operation, dict):
                    yield route, method, operation, shared


def load_document(path: Path) -> ContractDocument:
    """Read and validate; raise ContractError with the problems and their lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(path, [ContractProblem(f"cannot read the document: {exc}")]) from exc
    return load_text(path, text)


def load_text(path: Path, text: str) -> ContractDocument:
    """`load_document` of text already read: an editor's buffer, unsaved. `path` names it
    (JSON or YAML by its suffix) and is the base of its relative `$ref`s."""
    data = _parse(path, text)
    document = ContractDocument(path=path, data=data, text=text)
    problems = _validate(document)
    if problems:
        raise ContractError(path, problems)
    return document


def _parse(path: Path, text: str) -> dict[str, Any]:
    data: Any
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = ContractProblem(f"not valid JSON: {exc.msg}", line=exc.lineno)
            raise ContractError(path, [problem]) from exc
    else:
        try:
            data = _plain(yaml.load(text, Loader=_ContractLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            reason = getattr(exc, "problem", None) or str(exc)
            problem = ContractProblem(f"not valid YAML: {reason}", line=line)
            raise ContractError(path, [problem]) from exc
    if not isinstance(data, dict):
        raise ContractError(path, [ContractProblem("not an OpenAPI document (no mapping)")])
    return data


def _deepest(error: Any) -> tuple[Pointer, str]:
    """Of a oneOf's alternatives, the errors that go deepest into the document: for a
    misspelt `in: querry` that is the `in` line, with every value the alternatives allow."""
    leaves: list[Any] = []

    def walk(node: Any) -> None:
        leaves.append(node)
        for child in node.context or ():
            walk(child)

    walk(error)
    depth = max(len(leaf.absolute_path) for leaf in leaves)
    first = next(leaf for leaf in leaves if len(leaf.absolute_path) == depth)
    deepest = [leaf for leaf in leaves if leaf.absolute_path == first.absolute_path]
    if len(deepest) > 1 and all(leaf.validator == "enum" for leaf in deepest):
        allowed: list[Any] = []
        for leaf in deepest:
            allowed.extend(v for v in leaf.validator_value if v not in allowed)
        return tuple(first.absolute_path), f"{first.instance!r} is not one of {allowed!r}"
    return tuple(first.absolute_path), str(first.message)


def _validate(document: ContractDocument) -> list[ContractProblem]:
    from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator

    version = document.openapi_version
    if "swagger" in document.data and not version:
        return [
            ContractProblem(
                f"Swagger {document.data['swagger']} is not OpenAPI 3.x: convert it first "
                "(for example with swagger2openapi)",
                ("swagger",),
                document.line_of(("swagger",)),
            )
        ]
    if version.startswith("3.0"):
        validator_class: Any = OpenAPIV30SpecValidator
    elif version.startswith("3.1"):
        validator_class = OpenAPIV31SpecValidator
    else:
        where = ("openapi",) if "openapi" in document.data else ()
        message = f"openapi: {version!r} is not 3.0.x or 3.1.x" if version else "no `openapi` key"
        return [ContractProblem(message, where, document.line_of(where))]
    validator = validator_class(document.data, base_uri=document.path.resolve().as_uri())
    problems: list[ContractProblem] = []
    try:
        for error in validator.iter_errors():
            pointer, message = _deepest(error)
            if pointer and pointer[0] not in document.data:
                pointer = ()  # a rule's error, relative to a schema it does not name
            if not pointer and problems:
                continue  # the same problem again, as a rule saw it, with no place to show
            message = message if len(message) <= 300 else message[:300] + "…"
            problems.append(ContractProblem(message, pointer, document.line_of(pointer)))
            if len(problems) >= MAX_PROBLEMS:
                break
    except Exception as exc:  # an unresolvable $ref surfaces here, not as a ValidationError
        problems.append(ContractProblem(f"cannot resolve the document: {exc}"))
    return problems
