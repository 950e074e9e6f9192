"""Contract tests: each generated client (Python, TypeScript, Go) calls every operation of a
mock that plays the contract (Prism, from npm, validating each request against the
document and answering from its examples or schemas).

One plan for the three languages: the arguments of every operation are built here, once
(`example_value`: the parameters' examples, defaults, enums and schemas, strings made to
match their patterns), and handed as JSON to a small driver per language
(contract_driver.py, contract_drivers/driver.cjs, contract_drivers/driver.go) that calls
the generated client and reports, per call, what happened and the raw answer. Credentials
for every security scheme are sent, as Prism only checks that they are there.

An operation passes when Prism accepts the request and the client reads the answer into
the type it declares (Python: pydantic; TypeScript: the SDK's zod response validator; Go:
encoding/json into the struct, unknown fields allowed). When the client rejects an
answer, the answer is judged against the document's own schema: if the answer breaks the
schema, the client was right and the mock or the document is to blame (an example that
contradicts its schema, or Prism's static placeholder such as "string" for a pattern), so
the call is made again with Prism generating an answer from the schema (`Prefer:
dynamic=true`, seeded) and the client is judged on that one. Those cases are counted as
notes of their own (`ContractTestResult.notes`), never hidden and never a pass by default.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.operations import Operation, collect_operations, is_json_media, schema_types
from server.aiapi.tools import GeneratorError, ToolMissing, go_tool, node_tool, tools_folder

DRIVERS = Path(__file__).resolve().parent / "contract_drivers"
PRISM_ERROR = "stoplight.io/prism/errors#"
PRISM_SEED = "38"
MAX_MOCK_RESTARTS = 5
# Headers an HTTP library sends on its own (Node's fetch: `accept-language: *`): an optional
# header parameter of that name is given a value, or the library's would be judged
LIBRARY_HEADERS = frozenset({"accept-language", "accept-encoding", "user-agent"})

STRING_FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05",
    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "YWJj",
    "duration": "PT1H",
    "uri-reference": "/a",
    "idn-hostname": "example.com",
    "idn-email": "someone@example.com",
    "json-pointer": "/a",
    "guid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    # numbers as text (Google's documents: `type: string, format: int64`)
    "int32": "1",
    "int64": "1",
    "uint32": "1",
    "uint64": "1",
    "float": "1.5",
    "double": "1.5",
    "decimal": "1.5",
}


@dataclass
class ContractTestResult:
    ok: bool
    seconds: float
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    output: str = ""
    # the document's or the mock's part, counted apart from the client's (see the module)
    notes: Counter[str] = field(default_factory=Counter)
    untested: list[str] = field(default_factory=list)  # each skipped call, and why


# ---------------------------------------------------------------------------------------
# Example values


def example_value(
    document: ContractDocument, schema: Any, depth: int = 0, full: int = 0, inherited: bool = False
) -> Any:
    """A value the schema accepts, as plain as possible, the same every time.

    Objects get their required properties, and their optional ones too down to depth
    `full` (an answer built from the schema, when the mock's breaks it). A parent told
    apart by a discriminator gives the value of its first subschema, tagged as such."""
    schema = document.resolve(schema)
    if not isinstance(schema, dict) or depth > 8:
        return "a"
    declared, _ = schema_types(schema)
    if "const" in schema:
        return schema["const"]
    judge = schema_judge(document)
    for key in ("example", "default"):  # trusted only where the schema accepts it
        if key in schema and _has_type(schema[key], declared) and judge.fits(schema, schema[key]):
            return schema[key]
    examples = schema.get("examples")  # 3.1: a list
    first = examples[0] if isinstance(examples, list) and examples else None
    if first is not None and _has_type(first, declared) and judge.fits(schema, first):
        return first
    enum = [v for v in schema.get("enum") or [] if v is not None]
    if enum:
        return enum[0]
    subtype = None if inherited else judge.subtypes.get(id(schema))
    if subtype is not None:  # the first schema the discriminator names, with its tag
        field_name, tag, child = subtype
        value = example_value(document, child, depth + 1, full)
        if isinstance(value, dict):
            return {**value, field_name: tag}
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = example_value(document, part, depth + 1, full, inherited=True)
            if isinstance(value, dict):
                merged.update(value)
            else:
                return value
        own = {k: v for k, v in schema.items() if k != "allOf"}
        if own.get("properties"):
            extra = example_value(document, own, depth + 1, full, inherited=True)
            if isinstance(extra, dict):
                merged.update(extra)
        if not inherited and id(schema) in judge.own_tags:  # it extends a discriminated parent
            field_name, own = judge.own_tags[id(schema)]
            others = sorted(judge.narrowed.get(id(schema), ("", set()))[1] - {own}, key=str)
            for tag in [own, *others]:  # its own tag, else one of a schema extending it
                tagged = {**merged, field_name: tag}
                if judge.fits(schema, tagged):
                    return tagged
        return merged
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _alternative_example(document, schema, key, depth, full)
    if declared is None and "properties" in schema:
        declared = "object"
    if declared == "string":
        return _string_example(schema)
    if declared in ("integer", "number"):
        return _number_example(schema, declared)
    if declared == "boolean":
        return True
    if declared == "array":
        count = max(int(schema.get("minItems") or 1), 1)
        item = example_value(document, schema.get("items"), depth + 1, full)
        if schema.get("uniqueItems") and count > 1 and isinstance(item, str):
            return [item + "_" * i for i in range(count)]
        return [item] * count
    if declared == "object" or declared is None:
        properties = schema.get("properties") or {}
        names = [r for r in schema.get("required") or [] if isinstance(r, str)]
        if depth < full:
            names += [n for n in properties if n not in names]
        # a required name the properties do not describe takes any value (sakari.io's
        # webhook body requires `callbackUrl` and describes `url`)
        return {
            name: example_value(document, properties.get(name), depth + 1, full) for name in names
        }
    return "a"


def _alternative_example(
    document: ContractDocument, schema: dict[str, Any], key: str, depth: int, full: int
) -> Any:
    """A value for a oneOf/anyOf: each alternative in turn, merged with what the schema
    says beside it (GitHub's check-runs body lists its properties beside a oneOf that only
    adds `required`), first with fewer properties then with more (an empty object is valid
    under each of GitHub's label alternatives, which a oneOf refuses); the first value the
    whole schema accepts."""
    judge = schema_judge(document)
    beside = {k: v for k, v in schema.items() if k not in (key, "discriminator")}
    first = None
    for branch in schema[key]:
        for more in (full, depth + 1, depth + 2):
            merged = _merged_alternative(document, beside, branch)
            value = example_value(document, merged, depth + 1, more)
            tagged = _branch_tag(schema, branch)
            if tagged is not None and isinstance(value, dict):
                value = {**value, tagged[0]: tagged[1]}
            if first is None:
                first = value
            if judge.fits(schema, value):
                return value
    return first


def _merged_alternative(document: ContractDocument, beside: dict[str, Any], branch: Any) -> Any:
    """One alternative of a oneOf/anyOf with the properties and `required` beside it."""
    if not beside.get("properties") and not beside.get("required"):
        return branch
    resolved = document.resolve(branch)
    if not isinstance(resolved, dict):
        return branch
    properties = dict(beside.get("properties") or {})
    for name, extra in (resolved.get("properties") or {}).items():
        properties[name] = {"allOf": [properties[name], extra]} if name in properties else extra
    required = [*(beside.get("required") or []), *(resolved.get("required") or [])]
    merged = {
        **beside,
        **{k: v for k, v in resolved.items() if k not in ("properties", "required")},
    }
    merged["properties"] = properties
    if required:
        merged["required"] = list(dict.fromkeys(r for r in required if isinstance(r, str)))
    if "type" not in merged:
        merged["type"] = "object"
    return merged


def _branch_tag(schema: dict[str, Any], branch: Any) -> tuple[str, str] | None:
    """(property, value) that tags a oneOf branch, where a discriminator tells them apart."""
    discriminator = schema.get("discriminator")
    if not isinstance(discriminator, dict) or not isinstance(
        discriminator.get("propertyName"), str
    ):
        return None
    ref = branch.get("$ref") if isinstance(branch, dict) else None
    if not isinstance(ref, str):
        return None
    for key, target in (discriminator.get("mapping") or {}).items():
        if target == ref:
            return discriminator["propertyName"], str(key)
    return discriminator["propertyName"], ref.rsplit("/", 1)[-1]


def _string_example(schema: dict[str, Any]) -> str:
    # never empty where the schema allows more: an empty path segment is no segment
    low = max(int(schema.get("minLength") or 0), 1)
    high = schema.get("maxLength")
    high = int(high) if isinstance(high, int | float) else None
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        matching = pattern_example(pattern, low, high)
        if matching is not None:
            return matching
    if schema.get("format") in STRING_FORMATS:
        return STRING_FORMATS[schema["format"]]
    return "a" * (min(low, high) if high is not None else low)


def _number_example(schema: dict[str, Any], declared: str) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    value: float = low if isinstance(low, int | float) and not isinstance(low, bool) else 1
    exclusive_low = schema.get("exclusiveMinimum")
    if exclusive_low is True and isinstance(low, int | float):
        value = low + 1
    elif isinstance(exclusive_low, int | float) and not isinstance(exclusive_low, bool):
        value = max(value, exclusive_low + 1)  # 3.1: the bound itself
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = -(-value // step) * step
    exclusive_high = schema.get("exclusiveMaximum")
    if isinstance(high, int | float) and (
        value > high or (value == high and exclusive_high is True)
    ):
        value = high - 1 if exclusive_high is True else high
    return int(value) if declared == "integer" else float(value)


def _has_type(value: Any, declared: str | None) -> bool:
    if value is None:
        return False
    expected: dict[str | None, Any] = {
        "string": str, "integer": int, "number": int | float, "boolean": bool,
        "array": list, "object": dict,
    }  # fmt: skip
    if declared not in expected:
        return not isinstance(value, str) or declared is None
    if declared in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, expected[declared])


@functools.lru_cache(maxsize=4096)
def _ecma_regex(pattern: str) -> Any:
    """The pattern as ECMA-262 reads it (regress), or None where it cannot be compiled."""
    import regress

    for flags in ("u", ""):
        try:
            return regress.Regex(pattern, flags)
        except Exception:
            continue
    return None


def pattern_example(pattern: str, min_length: int = 0, max_length: int | None = None) -> str | None:
    """A short string that the pattern (ECMA-262, unanchored as JSON Schema reads it)
    matches, within the lengths; None where none is found.

    Built from the pattern's parse tree (Python's own regex parser, which reads the common
    syntax the same way), each repeat taken as few times as it allows, then more until the
    lengths fit; the result is checked by an ECMA-262 engine."""
    sre_parse: Any = importlib.import_module("re._parser")
    regex = _ecma_regex(pattern)
    if regex is None:
        return None
    try:
        with warnings.catch_warnings():  # "possible nested set": read as ECMA-262 would
            warnings.simplefilter("ignore")
            parsed = sre_parse.parse(pattern)
    except Exception:
        return None
    repeats = _repeats(parsed)
    # every repeat as few times as it allows, then one repeat at a time taken more times
    # (AWS's AccountId, `\d+` of exactly 12 characters), then all of them more times
    tries: list[tuple[int, dict[int, int]]] = [(0, {})]
    tries += [(0, {node: extra}) for node in repeats for extra in range(1, 257)]
    tries += [(stretch, {}) for stretch in (1, 2, 3, 5, 8, 13, 21, 34, 64, 128)]
    for stretch, extra in tries:
        for branch in (0, 1, 2):
            try:
                text = _emit(parsed, stretch, branch, {}, extra)
            except _NoExample:
                return None
            if len(text) < min_length or (max_length is not None and len(text) > max_length):
                continue
            if regex.find(text) is not None:
                return text
    return None


def _repeats(parsed: Any) -> list[int]:
    """The repeats of a parsed pattern (by id), in the order they appear."""
    found = []
    for op, value in parsed:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            found.append(id(value))
            found.extend(_repeats(value[2]))
        elif name == "SUBPATTERN":
            found.extend(_repeats(value[3]))
        elif name == "ATOMIC_GROUP":
            found.extend(_repeats(value))
        elif name == "BRANCH":
            for alternative in value[1]:
                found.extend(_repeats(alternative))
    return found


class _NoExample(Exception):
    pass


_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
}


def _emit(
    parsed: Any, stretch: int, branch: int, groups: dict[int, str], extra: dict[int, int]
) -> str:
    out = []
    for op, value in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name == "NOT_LITERAL":
            out.append("a" if value != ord("a") else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_in_char(value))
        elif name == "CATEGORY":
            out.append(_CATEGORY_CHARS.get(str(value), "a"))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, inner = value
            count = low + stretch + extra.get(id(value), 0)
            count = min(count, high, low + 300)
            out.append("".join(_emit(inner, stretch, branch, groups, extra) for _ in range(count)))
        elif name == "SUBPATTERN":
            group, _, _, inner = value
            text = _emit(inner, stretch, branch, groups, extra)
            if group is not None:
                groups[group] = text
            out.append(text)
        elif name == "ATOMIC_GROUP":
            out.append(_emit(value, stretch, branch, groups, extra))
        elif name == "BRANCH":
            alternatives = value[1]
            choice = alternatives[min(branch, len(alternatives) - 1)]
            out.append(_emit(choice, stretch, branch, groups, extra))
        elif name == "GROUPREF":
            out.append(groups.get(value, ""))
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise _NoExample(name)
    return "".join(out)


def _in_char(items: list[Any]) -> str:
    negate = bool(items) and str(items[0][0]) == "NEGATE"
    allowed: list[str] = []
    for op, value in items[1:] if negate else items:
        name = str(op)
        if name == "LITERAL":
            allowed.append(chr(value))
        elif name == "RANGE":
            allowed.append(chr(value[0]))
        elif name == "CATEGORY":
            allowed.append(_CATEGORY_CHARS.get(str(value), "a"))
    if not negate:
        return allowed[0] if allowed else "a"
    for candidate in "a0A_-. xz9Z":
        if candidate not in allowed:
            return candidate
    return "~"


# ---------------------------------------------------------------------------------------
# Judging an answer by the document's schema


ISO_DURATION = re.compile(
    r"^P(?!$)(\d+(\.\d+)?Y)?(\d+(\.\d+)?M)?(\d+(\.\d+)?W)?(\d+(\.\d+)?D)?"
    r"(T(?=\d)(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$"
)


TEXT_NUMBERS = {
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
    "float": None, "double": None, "decimal": None,
}  # fmt: skip


def _text_number_check(bounds: tuple[int, int] | None, original: Any) -> Any:
    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return original[0](value) if original is not None else True
        try:
            number = int(value) if bounds is not None else float(value)
        except ValueError:
            return False
        return bounds is None or bounds[0] <= number <= bounds[1]

    return check


class SchemaJudge:
    """Validates values against the document's schemas as OpenAPI reads them: 3.0's
    nullable, formats (`duration` as ISO 8601 too), patterns as ECMA-262 regexes, and a
    discriminator's value naming one of the schemas it tells apart; `$ref`s resolved in
    the document."""

    def __init__(self, document: ContractDocument) -> None:
        from jsonschema import FormatChecker, ValidationError
        from jsonschema.validators import extend
        from openapi_schema_validator import (
            OAS30ReadValidator,
            OAS31Validator,
            oas30_format_checker,
            oas31_format_checker,
        )

        def ecma_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
            if not isinstance(instance, str) or not isinstance(pattern, str):
                return
            regex = _ecma_regex(pattern)
            if regex is not None and regex.find(instance) is None:
                yield ValidationError(f"{instance[:80]!r} does not match {pattern!r}")

        tags = discriminator_values(document)
        narrowed = narrowed_tags(document)
        self.narrowed = narrowed
        self.own_tags = own_tags(document)
        self.subtypes = discriminator_subtypes(document)
        # jsonschema's own allOf/oneOf/anyOf: openapi-schema-validator's resolve a
        # discriminator's value as `#/components/schemas/<value>` only, and Azure's values
        # (x-ms-discriminator-value) name no schema that way; `discriminator` above checks them
        from jsonschema import _keywords as plain

        all_of_keyword = plain.allOf

        def alternatives(kind: str) -> Any:
            plain_keyword = getattr(plain, kind)

            def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
                branch = _tagged_branch(document, schema, value, instance)
                if branch is not None:  # the alternative its discriminator value names
                    yield from validator.descend(instance, branch)
                else:
                    yield from plain_keyword(validator, value, instance, schema)

            return check

        def all_of(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            field_name, allowed = narrowed.get(id(schema), ("", set()))
            tag = instance.get(field_name) if isinstance(instance, dict) else None
            if allowed and tag is not None and tag not in allowed:
                yield ValidationError(
                    f"{field_name} {tag!r} names another schema than this one "
                    f"({', '.join(sorted(map(str, allowed)))[:200]})"
                )
            yield from all_of_keyword(validator, value, instance, schema)

        properties_keyword = base_validators(document)["properties"]

        def object_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            # A schema that lists properties but names no type is read as an object, as
            # every generated client reads it (a pydantic model, a zod object, a Go
            # struct); JSON Schema alone would let a list, a string or null through, and
            # Prism answers such a schema with null.
            allowed_null = instance is None and schema.get("nullable")
            if "type" not in schema and not isinstance(instance, dict) and not allowed_null:
                kind = "null" if instance is None else type(instance).__name__
                yield ValidationError(
                    f"a {kind} where the schema describes an object's properties (and "
                    "names no type)"
                )
            yield from properties_keyword(validator, value, instance, schema)

        def discriminator(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            name = value.get("propertyName") if isinstance(value, dict) else None
            allowed = tags.get(id(schema))
            if not isinstance(instance, dict) or not isinstance(name, str) or not allowed:
                return
            if name in instance and instance[name] not in allowed:
                yield ValidationError(
                    f"{name} {instance[name]!r} names none of the schemas the discriminator "
                    f"tells apart ({', '.join(sorted(map(str, allowed)))[:200]})"
                )

        if document.openapi_version.startswith("3.0"):
            base, formats = OAS30ReadValidator, oas30_format_checker
        else:
            base, formats = OAS31Validator, oas31_format_checker
        checker = FormatChecker(formats=())
        checker.checkers = dict(formats.checkers)
        checker.checks("duration")(
            lambda text: not isinstance(text, str) or bool(ISO_DURATION.match(text))
        )
        # `guid` as the uuid it names (keyserv.solutions); numbers' formats on a string as
        # that number in text (Google's int64 strings), as the clients' validators read them
        checker.checkers["guid"] = checker.checkers["uuid"]
        for name, kind in TEXT_NUMBERS.items():
            original = checker.checkers.get(name)
            checker.checks(name)(_text_number_check(kind, original))
        checker.checks("regex")(
            lambda text: not isinstance(text, str) or _ecma_regex(text) is not None
        )
        validator_class = extend(
            base,
            {"pattern": ecma_pattern, "discriminator": discriminator,
             "properties": object_properties, "allOf": all_of,
             "oneOf": alternatives("oneOf"), "anyOf": alternatives("anyOf")},
        )  # fmt: skip
        self.root = validator_class(document.data, format_checker=checker)

    def problems(self, schema: Any, value: Any, limit: int = 3) -> list[str]:
        found = []
        try:
            for error in self.root.evolve(schema=schema).iter_errors(value):
                where = "/".join(str(p) for p in error.absolute_path)
                found.append(f"{where or '(the answer)'}: {error.message[:200]}")
                if len(found) >= limit:
                    break
        except Exception as exc:  # an unresolvable $ref: nothing to judge by
            return [f"(cannot judge: {type(exc).__name__}: {str(exc)[:100]})"]
        return found

    def fits(self, schema: Any, value: Any) -> bool:
        problems = self.problems(schema, value, limit=1)
        return not problems or problems[0].startswith("(cannot judge")


def _tagged_branch(document: ContractDocument, schema: Any, branches: Any, instance: Any) -> Any:
    """The oneOf/anyOf alternative a discriminator's value names (mapping key, schema name
    or `x-ms-discriminator-value`), or None."""
    discriminator = schema.get("discriminator") if isinstance(schema, dict) else None
    if not isinstance(discriminator, dict) or not isinstance(instance, dict):
        return None
    tag = instance.get(discriminator.get("propertyName"))
    if tag is None or not isinstance(branches, list):
        return None
    given = discriminator.get("mapping")
    mapping: dict[str, Any] = given if isinstance(given, dict) else {}
    for branch in branches:
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if not isinstance(ref, str):
            continue
        resolved = document.resolve(branch)
        names = {ref.rsplit("/", 1)[-1]}
        if isinstance(resolved, dict) and "x-ms-discriminator-value" in resolved:
            names.add(resolved["x-ms-discriminator-value"])
        if mapping.get(tag) == ref or (not mapping and tag in names):
            return branch
    return None


def base_validators(document: ContractDocument) -> dict[str, Any]:
    from openapi_schema_validator import OAS30ReadValidator, OAS31Validator

    base = OAS30ReadValidator if document.openapi_version.startswith("3.0") else OAS31Validator
    return dict(base.VALIDATORS)


def discriminator_subtypes(document: ContractDocument) -> dict[int, tuple[str, str, Any]]:
    """For each component schema whose discriminator tells apart schemas that extend it
    (allOf), by id: (property, tag, schema) of the first of them."""
    schemas = (document.data.get("components") or {}).get("schemas") or {}
    prefix = "#/components/schemas/"
    first_child: dict[str, str] = {}
    for name, schema in schemas.items():
        for part in (schema.get("allOf") if isinstance(schema, dict) else None) or []:
            ref = part.get("$ref") if isinstance(part, dict) else None
            if isinstance(ref, str) and ref.startswith(prefix):
                first_child.setdefault(ref[len(prefix) :], name)
    found: dict[int, tuple[str, str, Any]] = {}
    for name, schema in schemas.items():
        discriminator = schema.get("discriminator") if isinstance(schema, dict) else None
        if not isinstance(discriminator, dict) or name not in first_child:
            continue
        field_name = discriminator.get("propertyName")
        if not isinstance(field_name, str) or schema.get("oneOf") or schema.get("anyOf"):
            continue
        child = first_child[name]
        tag = next(
            (k for k, v in (discriminator.get("mapping") or {}).items() if v == prefix + child),
            None,
        )
        if tag is None:
            child_schema = schemas[child] if isinstance(schemas[child], dict) else {}
            tag = str(child_schema.get("x-ms-discriminator-value", child))
        found[id(schema)] = (field_name, tag, {"$ref": prefix + child})
    return found


def _family_tree(document: ContractDocument) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The component schemas and, for each, the schemas that extend it (allOf a `$ref`)."""
    schemas = (document.data.get("components") or {}).get("schemas") or {}
    prefix = "#/components/schemas/"
    children: dict[str, list[str]] = {}
    for name, schema in schemas.items():
        for part in (schema.get("allOf") if isinstance(schema, dict) else None) or []:
            ref = part.get("$ref") if isinstance(part, dict) else None
            if isinstance(ref, str) and ref.startswith(prefix) and "/" not in ref[len(prefix) :]:
                children.setdefault(ref[len(prefix) :], []).append(name)
    return schemas, children


def _descendants(name: str, children: dict[str, list[str]]) -> list[str]:
    found: list[str] = []
    queue = list(children.get(name, []))
    while queue:
        child = queue.pop(0)
        if child not in found and child != name:
            found.append(child)
            queue.extend(children.get(child, []))
    return found


def _tags(names: list[str], schemas: dict[str, Any], mapping: Any) -> set[Any]:
    """The discriminator values that name these schemas: their mapping keys, else their
    names and their `x-ms-discriminator-value` (Azure's)."""
    if isinstance(mapping, dict) and mapping:
        targets = {"#/components/schemas/" + n for n in names}
        return {key for key, target in mapping.items() if target in targets}
    tags: set[Any] = set(names)
    for name in names:
        schema = schemas.get(name)
        if isinstance(schema, dict) and "x-ms-discriminator-value" in schema:
            tags.add(schema["x-ms-discriminator-value"])
    return tags


def discriminator_values(document: ContractDocument) -> dict[int, set[Any]]:
    """For each component schema with a discriminator (by id): the values its property may
    take, each naming the schema or one that extends it."""
    schemas, children = _family_tree(document)
    values: dict[int, set[Any]] = {}
    for name, schema in schemas.items():
        if not isinstance(schema, dict) or not isinstance(schema.get("discriminator"), dict):
            continue
        family = [name, *_descendants(name, children)]
        for key in ("oneOf", "anyOf"):  # the alternatives it tells apart
            for branch in schema.get(key) or []:
                ref = branch.get("$ref") if isinstance(branch, dict) else None
                if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                    family.append(ref.rsplit("/", 1)[-1])
        if len(family) > 1:
            values[id(schema)] = _tags(family, schemas, schema["discriminator"].get("mapping"))
    return values


def own_tags(document: ContractDocument) -> dict[int, tuple[str, Any]]:
    """For each schema that extends a discriminated parent (by id): the property and the
    value that names the schema itself (its mapping key, `x-ms-discriminator-value` or
    name)."""
    schemas, children = _family_tree(document)
    found: dict[int, tuple[str, Any]] = {}
    for name, schema in schemas.items():
        discriminator = schema.get("discriminator") if isinstance(schema, dict) else None
        if not isinstance(discriminator, dict) or not isinstance(
            discriminator.get("propertyName"), str
        ):
            continue
        mapping = discriminator.get("mapping")
        for member in _descendants(name, children):
            member_schema = schemas.get(member)
            if not isinstance(member_schema, dict):
                continue
            keys = sorted(map(str, _tags([member], schemas, mapping))) if mapping else []
            tag = keys[0] if keys else member_schema.get("x-ms-discriminator-value", member)
            found.setdefault(id(member_schema), (discriminator["propertyName"], tag))
    return found


def narrowed_tags(document: ContractDocument) -> dict[int, tuple[str, set[Any]]]:
    """For each schema that extends a discriminated parent (by id): the property and the
    values it may take there, naming this schema or one that extends it. Azure's
    servicefabric answers SubmitBatch's SuccessfulPropertyBatchInfo with its example of a
    failure (Kind "Failed"), which no client reads as a success."""
    schemas, children = _family_tree(document)
    found: dict[int, tuple[str, set[Any]]] = {}
    for name, schema in schemas.items():
        discriminator = schema.get("discriminator") if isinstance(schema, dict) else None
        if not isinstance(discriminator, dict) or not isinstance(
            discriminator.get("propertyName"), str
        ):
            continue
        for member in _descendants(name, children):
            family = [member, *_descendants(member, children)]
            tags = _tags(family, schemas, discriminator.get("mapping"))
            if tags and isinstance(schemas.get(member), dict):
                found.setdefault(id(schemas[member]), (discriminator["propertyName"], tags))
    return found


_JUDGES: dict[int, tuple[ContractDocument, SchemaJudge]] = {}


def schema_judge(document: ContractDocument) -> SchemaJudge:
    """One judge per document (its validator resolves references once)."""
    cached = _JUDGES.get(id(document))
    if cached is None or cached[0] is not document:
        if len(_JUDGES) > 8:
            _JUDGES.clear()
        cached = (document, SchemaJudge(document))
        _JUDGES[id(document)] = cached
    return cached[1]


def response_media(
    document: ContractDocument, raw_operation: dict[str, Any], status: int, content_type: str
) -> tuple[str, str, dict[str, Any]] | None:
    """(response code, media type, media object) the document declares for an answer."""
    responses = raw_operation.get("responses") or {}
    response, code = None, ""
    for code in (str(status), f"{status // 100}XX", f"{status // 100}xx", "default"):
        if code in responses:
            response = document.resolve(responses[code])
            break
    if not isinstance(response, dict) or not isinstance(response.get("content"), dict):
        return None
    content = response["content"]
    base = content_type.split(";")[0].strip().lower()
    wanted = [base, base.split("/")[0] + "/*", "*/*"]
    for media_type in wanted:
        for key, media in content.items():
            if str(key).split(";")[0].strip().lower() == media_type and isinstance(media, dict):
                return code, str(key), media
    first_key, first = next(iter(content.items()))
    return (code, str(first_key), first) if isinstance(first, dict) else None


def judge_answer(
    document: ContractDocument, raw_operation: dict[str, Any], answer: dict[str, Any]
) -> tuple[list[str] | None, str]:
    """(problems, source): None when there is no schema to judge by, [] when the answer
    fits the document's schema; source says where a static answer came from."""
    found = response_media(
        document, raw_operation, int(answer.get("status") or 0), str(answer.get("contentType"))
    )
    if found is None:
        return None, ""
    _, media_type, media = found
    source = (
        "the document's example"
        if "example" in media or media.get("examples")
        else "Prism's static answer (from the schema and its property examples)"
    )
    schema = media.get("schema")
    if schema is None:
        return None, source
    body = str(answer.get("body") or "")
    answered = str(answer.get("contentType"))
    if "json" in answered or (is_json_media(media_type) and media_type.strip() != "*/*"):
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            return [f"the answer is not JSON: {body[:60]!r}"], source
    else:
        value = body
    return schema_judge(document).problems(schema, value), source


# ---------------------------------------------------------------------------------------
# The plan: one call per operation, its arguments built once for every language


@dataclass
class PlannedCall:
    index: int
    operation: Operation
    raw: dict[str, Any]
    parameters: list[tuple[Any, Any]]  # (Parameter, value) for the required ones
    body: Any = None  # the body's value (also for an optional body: Go's signature takes one)
    skip: str | None = None

    @property
    def label(self) -> str:
        return f"{self.operation.method.upper()} {self.operation.route}"


def planned_calls(document: ContractDocument) -> list[PlannedCall]:
    raw_by_key = {(route, method): raw for route, method, raw, _ in document.operations()}
    calls = []
    for index, op in enumerate(collect_operations(document)):
        parameters = [
            (param, parameter_value(document, param.schema))
            for param in op.parameters
            if param.required
            or (param.location == "header" and param.name.lower() in LIBRARY_HEADERS)
        ]
        body = None
        if op.body is not None:
            body = example_value(document, op.body.schema)
            if op.body.is_form and not isinstance(body, dict):
                body = {}
            elif not op.body.is_json and not op.body.is_form:
                body = "a"  # bytes or text, made so by each driver
        call = PlannedCall(index, op, raw_by_key.get((op.route, op.method), {}), parameters, body)
        if "#" in op.route:
            call.skip = "the route has a #fragment (AWS's X-Amz-Target), which HTTP never sends"
        else:
            call.skip = _uncallable(document, op, call.raw)
        calls.append(call)
    return calls


def parameter_value(document: ContractDocument, schema: Any) -> Any:
    """A parameter's example value, one that reads the same once it is text on the wire:
    GitHub's workflow_id is `oneOf: [integer, string]`, so 1, sent as "1", is valid under
    both alternatives and Prism refuses it; "a" is valid under the string one only."""
    value = example_value(document, schema)
    resolved = document.resolve(schema)
    branches = resolved.get("oneOf") if isinstance(resolved, dict) else None
    if not isinstance(branches, list) or len(branches) < 2:
        return value
    judge = schema_judge(document)

    def readings(candidate: Any) -> int:
        text = candidate if isinstance(candidate, str) else json.dumps(candidate)
        forms = [candidate, text]
        with contextlib.suppress(ValueError):
            forms.append(json.loads(text))
        return sum(any(judge.fits(branch, form) for form in forms) for branch in branches)

    for candidate in [value, *(example_value(document, b) for b in branches)]:
        if readings(candidate) == 1:
            return candidate
    return value


def _uncallable(document: ContractDocument, op: Operation, raw: Any) -> str | None:
    """Why no request can pass the mock, where the document itself rules every one out."""
    for param in op.parameters:
        schema = document.resolve(param.schema)
        if not param.required or not isinstance(schema, dict):
            continue
        declared, _ = schema_types(schema)
        enum = [v for v in schema.get("enum") or [] if v is not None]
        if enum and declared and not any(_has_type(v, declared) for v in enum):
            return (
                f"the document is inconsistent: every value of parameter {param.name}'s enum "
                f"contradicts its type {declared} ({enum[:3]!r}...)"
            )
    responses = raw.get("responses") if isinstance(raw, dict) else None
    if (
        isinstance(responses, dict)
        and responses
        and not any(str(code).startswith("2") or str(code) == "default" for code in responses)
    ):
        return (
            "the document declares no success answer (only "
            f"{', '.join(map(str, list(responses)[:4]))}), so the mock answers with one of those"
        )
    if op.body is not None and op.body_required and not op.body.is_json and not op.body.is_form:
        schema = document.resolve(op.body.schema)
        declared = schema_types(schema)[0] if isinstance(schema, dict) else None
        if declared not in (None, "string"):
            return (
                f"the document declares a {op.body.media_type} body as {declared}: Prism reads "
                "such a body as text, so no request passes it"
            )
    return None


def call_plan(document: ContractDocument) -> list[dict[str, Any]]:
    """For each Python client method: the arguments to call it with."""
    return _python_calls(document, planned_calls(document))


def credentials(document: ContractDocument) -> tuple[dict[str, str], dict[str, str]]:
    """Headers and query parameters carrying a credential for every security scheme."""
    headers: dict[str, str] = {}
    params: dict[str, str] = {}
    schemes = (document.data.get("components") or {}).get("securitySchemes") or {}
    for raw in schemes.values():
        scheme = document.resolve(raw)
        if not isinstance(scheme, dict):
            continue
        kind = scheme.get("type")
        if kind == "apiKey" and isinstance(scheme.get("name"), str):
            if scheme.get("in") == "header":
                headers[scheme["name"]] = "contract-test-key"
            elif scheme.get("in") == "query":
                params[scheme["name"]] = "contract-test-key"
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(b"user:pass").decode()
        elif kind in ("http", "oauth2", "openIdConnect"):
            headers["Authorization"] = "Bearer contract-test-token"
    return headers, params


def _python_calls(document: ContractDocument, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    from server.aiapi.python_client import argument_names, client_methods

    methods = {(op.route, op.method): (name, op) for name, op in client_methods(document)}
    entries = []
    for call in calls:
        name, op = methods[(call.operation.route, call.operation.method)]
        argument = {(p.name, p.location): n for p, n in argument_names(op)}
        arguments = {argument[(p.name, p.location)]: value for p, value in call.parameters}
        if op.body is not None and op.body_required:
            key = "body" if op.body.is_json else "data" if op.body.is_form else "content"
            arguments[key] = call.body
        entries.append(
            {"index": call.index, "method": name, "arguments": arguments, "route": op.route}
        )
    return entries


def _typescript_calls(folder: Path, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    functions = sdk_functions(folder / "src" / "sdk.gen.ts")
    entries = []
    for call in calls:
        op = call.operation
        options: dict[str, Any] = {}
        for param, value in call.parameters:
            where = {"path": "path", "query": "query", "header": "headers"}[param.location]
            options.setdefault(where, {})[param.name] = value
        if op.body is not None and op.body_required and op.method not in BODILESS_METHODS:
            options["body"] = call.body  # openapi-ts read no GET or HEAD body (typescript_client)
        entries.append(
            {
                "index": call.index,
                "function": functions.get((op.method, op.route)),
                "options": options,
            }
        )
    return entries


def sdk_functions(sdk: Path) -> dict[tuple[str, str], str]:
    """(method, route) -> the SDK function openapi-ts wrote for it, read from sdk.gen.ts."""
    text = sdk.read_text(encoding="utf-8") if sdk.exists() else ""
    found: dict[tuple[str, str], str] = {}
    for chunk in re.split(r"\nexport const ", text)[1:]:
        name = re.match(r"\w+", chunk)
        method = re.search(r"\?\? client\)\.(?:sse\.)?(\w+)<", chunk)
        url = re.search(r"\burl: (\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')", chunk)
        if name and method and url:
            route = url.group(1)
            route = json.loads(route) if route.startswith('"') else route[1:-1].replace("\\'", "'")
            found.setdefault((method.group(1).lower(), route), name.group(0))
    return found


def _go_calls(document: ContractDocument, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    """Positional arguments as the Go method takes them: the required parameters, the body
    (the signature has one whenever the operation does), then the optional parameters as
    the fields of its Params struct."""
    from server.aiapi.go_client import go_methods
    from server.aiapi.naming import UniqueNames, pascal

    names = {(op.route, op.method): name for name, op in go_methods(document)}
    entries = []
    for call in calls:
        op = call.operation
        given = {(p.name, p.location): value for p, value in call.parameters}
        arguments = [given[(p.name, p.location)] for p in op.parameters if p.required]
        if op.body is not None:
            body = call.body
            if not op.body_required and not op.body.is_json:
                body = None  # an optional blob or form is left empty, as the others leave it
            elif op.body.is_form:  # url.Values: each field's values as text
                body = {
                    k: [str(x) for x in (v if isinstance(v, list) else [v])]
                    for k, v in ((k, _form_text(v)) for k, v in body.items())
                }
            arguments.append(body)
        fields = UniqueNames()
        optional = {}
        for param in (p for p in op.parameters if not p.required):
            field_name = fields.claim(pascal(param.name, "Param"), "")
            if (param.name, param.location) in given:
                optional[field_name] = given[(param.name, param.location)]
        if optional:
            arguments.append(optional)
        entries.append(
            {"index": call.index, "method": names[(op.route, op.method)], "args": arguments}
        )
    return entries


def _form_text(value: Any) -> Any:
    """A form field as text (a list as repeated fields, as form style explodes it)."""
    if isinstance(value, list):
        return [_form_text(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str | int | float) else json.dumps(value)


# ---------------------------------------------------------------------------------------
# The mock


def prism_command() -> str:
    path = tools_folder() / "aiapi-mock" / "node_modules" / ".bin" / "prism"
    if not path.exists():
        raise ToolMissing("contract", "prism is not installed: run server/aiapi/install_tools.sh")
    return str(path)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


TRANSPORT_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "connection"}
)


Repair = tuple[str, str, str, str]  # (route, method, response code, media type)


def mocked_document(
    document: ContractDocument, scratch: Path, repairs: dict[Repair, Any] | None = None
) -> Path:
    """The document Prism plays: the document itself, or a copy of it

    - without the response headers that describe the transport rather than the API
      (notion.com's, recorded from real traffic, declare `Content-Encoding: gzip`, which
      Prism would send over a plain body, so no client could read an answer);
    - without header parameters named Accept, Content-Type or Authorization, and request
      bodies of GET and HEAD operations, which OpenAPI says to ignore and Prism would demand;
    - answering with the given examples (built from the schema) where Prism's own answer
      breaks the document's schema."""
    found = False

    def walk(node: Any, key: str = "") -> Any:
        nonlocal found
        if isinstance(node, dict):
            if key == "headers":
                kept = {k: v for k, v in node.items() if str(k).lower() not in TRANSPORT_HEADERS}
                found = found or len(kept) != len(node)
                node = kept
            return {k: walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    if _external_refs(document.data):  # a copy elsewhere would lose them
        return document.path.resolve()
    copy = walk(document.data)
    for item in (copy.get("paths") or {}).values():
        for method in BODILESS_METHODS:
            if isinstance(item.get(method), dict) and "requestBody" in item[method]:
                item[method] = {k: v for k, v in item[method].items() if k != "requestBody"}
                found = True
        for holder in [item, *(v for v in item.values() if isinstance(v, dict))]:
            parameters = holder.get("parameters") if isinstance(holder, dict) else None
            if isinstance(parameters, list):
                kept = [p for p in parameters if not _ignored_header(document, p)]
                found = found or len(kept) != len(parameters)
                holder["parameters"] = kept
    for (route, method, code, media_type), example in (repairs or {}).items():
        try:
            operation = copy["paths"][route][method]
            response = walk(document.resolve(operation["responses"][code]))
            media = dict(response["content"][media_type])
        except (KeyError, TypeError):  # a $ref'd path item: left as it is
            continue
        media.pop("examples", None)
        media["example"] = example
        content = {**response["content"], media_type: media}
        operation["responses"][code] = {**response, "content": content}
        found = True
    if not found:
        return document.path.resolve()
    target = scratch / f"mocked-document-{len(repairs or {})}.json"
    target.write_text(json.dumps(copy), encoding="utf-8")
    return target


# "requestBody is only supported in HTTP methods where the HTTP 1.1 specification has
# explicitly defined semantics for request bodies ... SHALL be ignored by consumers"
# (OpenAPI 3.0.3); fetch refuses to send one with GET or HEAD (trakt.tv declares one)
BODILESS_METHODS = ("get", "head")

# "If in is header and the name is Accept, Content-Type or Authorization, the parameter
# definition SHALL be ignored" (OpenAPI 3.0.3, Parameter Object); Prism requires them
IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})


def _ignored_header(document: ContractDocument, parameter: Any) -> bool:
    """vtex.local's documents declare a required Content-Type header on GETs, which Prism
    then demands, and which a fetch client drops from a request without a body."""
    resolved = document.resolve(parameter)
    return (
        isinstance(resolved, dict)
        and resolved.get("in") == "header"
        and str(resolved.get("name", "")).lower() in IGNORED_HEADERS
    )


def _external_refs(node: Any) -> list[str]:
    """The `$ref`s that point outside the document (a copy elsewhere would lose them)."""
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            found.append(ref)
        for value in node.values():
            found.extend(_external_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_external_refs(value))
    return found


class PrismMock:
    """Prism mocking the document on a free port; restartable when it crashes."""

    def __init__(
        self, document: ContractDocument, scratch: Path, repairs: dict[Repair, Any] | None = None
    ) -> None:
        self.document = document
        self.repairs = dict(repairs or {})
        self.log_path = scratch / f"prism-{len(self.repairs)}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.restarts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        mocked = mocked_document(self.document, self.log_path.parent, self.repairs)
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [prism_command(), "mock", "--host", "127.0.0.1", "--port", str(self.port),
                 "--errors", "false", "--seed", PRISM_SEED, str(mocked)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self._wait_for_port(timeout_s=120)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def request_logs(self, since: int) -> list[str]:
        """The log of each request received after byte `since`, in order."""
        with self.log_path.open("rb") as log:
            log.seek(since)
            text = log.read().decode("utf-8", "replace")
        chunks = re.split(r"\n(?=.*\[HTTP SERVER\].*Request received)", "\n" + text)
        return [c for c in chunks if "Request received" in c]

    def _wait_for_port(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise GeneratorError("contract", "prism exited", self.log_path.read_text()[-3000:])
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise GeneratorError("contract", f"prism did not listen within {timeout_s:.0f} s")


# ---------------------------------------------------------------------------------------
# Running the drivers and judging what they report


class ContractSession:
    """One Prism for one document, shared by the contract tests of every language; and a
    second one, started when needed, that answers with examples built from the schema
    where the first one's answers break it."""

    def __init__(self, document: ContractDocument) -> None:
        self.document = document
        self._stack = contextlib.ExitStack()
        self._scratch: Path | None = None
        self._mock: PrismMock | None = None
        self._repaired: PrismMock | None = None
        self._repairs: dict[Repair, Any] = {}
        self._calls: list[PlannedCall] | None = None

    def __enter__(self) -> ContractSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for mock in (self._mock, self._repaired):
            if mock is not None:
                mock.stop()
        self._mock = self._repaired = None
        self._stack.close()

    @property
    def calls(self) -> list[PlannedCall]:
        if self._calls is None:
            self._calls = planned_calls(self.document)
        return self._calls

    def scratch(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(
                self._stack.enter_context(tempfile.TemporaryDirectory(prefix="headstart-contract-"))
            )
        return self._scratch

    def mock(self, repaired: bool = False) -> PrismMock:
        """The mock (alive: restarted if it crashed); `repaired`: the one answering with
        the examples built so far."""
        if repaired:
            if self._repaired is not None and self._repaired.repairs != self._repairs:
                self._repaired.stop()
                self._repaired = None
            if self._repaired is None:
                self._repaired = PrismMock(self.document, self.scratch(), self._repairs)
                self._repaired.start()
            elif not self._repaired.alive():
                self._repaired.restart()
            return self._repaired
        if self._mock is None:
            self._mock = PrismMock(self.document, self.scratch())
            self._mock.start()
        elif not self._mock.alive():
            self._mock.restart()
        return self._mock

    def test(self, language: str, folder: Path, timeout_s: float = 600) -> ContractTestResult:
        """Call every operation through the language's generated client and judge it."""
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        driver = _DRIVERS[language]
        headers, params = credentials(self.document)
        state = _Judging()
        pending = []
        for call in self.calls:
            if call.skip:
                outcome = (
                    "skipped: untestable route"
                    if "#fragment" in call.skip
                    else "skipped: no success answer (the document)"
                    if "no success answer" in call.skip
                    else "skipped: no request can pass (the document)"
                )
                state.outcomes[call.index] = (outcome, call.skip)
            else:
                pending.append(call)
        prepared = None
        if pending:  # Prism refuses a document without operations
            self.mock()
            work = self.scratch() / language
            if work.exists():
                shutil.rmtree(work)
            work.mkdir()
            prepared = driver.prepare(self.document, folder, work, timeout_s)
        for phase in ("static", "repaired", "dynamic"):
            batch = {"static": pending, "repaired": state.repaired, "dynamic": state.dynamic}[phase]
            extra = {"Prefer": "dynamic=true"} if phase == "dynamic" else {}
            while batch:
                if time.monotonic() > deadline:
                    return ContractTestResult(
                        False, time.perf_counter() - started, output="timed out"
                    )
                mock = self.mock(repaired=phase == "repaired")
                since = mock.log_size()
                reports = driver.run(
                    self.document, prepared, batch, mock.base_url, {**headers, **extra}, params,
                    max(deadline - time.monotonic(), 1),
                )  # fmt: skip
                logs = mock.request_logs(since)
                crashed = not mock.alive()
                batch = self._judge_batch(phase, batch, reports, logs, crashed, state)
                if batch and mock.restarts >= MAX_MOCK_RESTARTS:
                    for call in batch:
                        state.outcomes[call.index] = ("skipped: the mock crashed", "")
                    batch = []
        outcomes = state.outcomes
        counts: Counter[str] = Counter(outcome for outcome, _ in outcomes.values())
        by_index = {call.index: call for call in self.calls}
        failures = [
            f"{by_index[i].label}: {outcome}: {detail}"
            for i, (outcome, detail) in sorted(outcomes.items())
            if outcome != "ok" and not outcome.startswith("skipped")
        ]
        untested = [
            f"{by_index[i].label}: {outcome}: {detail}"
            for i, (outcome, detail) in sorted(outcomes.items())
            if outcome.startswith("skipped")
        ]
        output = "\n".join(failures[:20] + [f"note: {line}" for line in state.note_lines[:5]])
        return ContractTestResult(
            ok=not failures,
            seconds=time.perf_counter() - started,
            outcomes=counts,
            failures=failures,
            output=output,
            notes=state.notes,
            untested=untested,
        )

    def _repair(self, call: PlannedCall, answer: dict[str, Any]) -> bool:
        """Build an answer from the schema for the call's response; False if none fits."""
        found = response_media(
            self.document, call.raw, int(answer.get("status") or 0), str(answer.get("contentType"))
        )
        if found is None or _external_refs(self.document.data):
            return False
        code, media_type, media = found
        key = (call.operation.route, call.operation.method, code, media_type)
        if key in self._repairs:
            return True
        judge = schema_judge(self.document)
        for full in (3, 1, 0):  # optional properties down to this depth, then fewer
            example = example_value(self.document, media.get("schema"), full=full)
            if not judge.problems(media.get("schema"), example, limit=1):
                self._repairs[key] = example
                return True
        return False

    def _judge_batch(
        self,
        phase: str,
        batch: list[PlannedCall],
        reports: dict[int, dict[str, Any]],
        logs: list[str],
        crashed: bool,
        state: _Judging,
    ) -> list[PlannedCall]:
        """Judge one driver run; return the calls to run again after the mock crashed."""
        outcomes = state.outcomes
        sent = 0
        again: list[PlannedCall] = []
        blamed_crash = False
        for call in batch:
            report = reports.get(call.index)
            if report is None:
                if crashed:
                    again.append(call)
                else:
                    outcomes[call.index] = ("driver gave no report", "")
                continue
            log = ""
            if report.get("sent"):
                log = logs[sent] if sent < len(logs) else ""
                sent += 1
            kind = report.get("kind")
            detail = str(report.get("detail") or "")[:300]
            answer = report.get("answer") or {}
            if kind == "transport" and crashed:
                if not blamed_crash:
                    blamed_crash = True
                    outcomes[call.index] = ("skipped: the mock crashed on it", detail)
                else:
                    again.append(call)
                continue
            if kind == "ok":
                outcomes[call.index] = ("ok", "")
            elif kind == "status":
                body = str(answer.get("body") or "")
                status = int(answer.get("status") or 0)
                if status >= 500 and PRISM_ERROR in body:
                    reason = body.split(PRISM_ERROR, 1)[1].split('"', 1)[0]
                    outcomes[call.index] = (
                        f"skipped: the mock cannot answer ({reason})",
                        body[:200],
                    )
                else:
                    violations = [
                        line.split("Violation:", 1)[1].strip()
                        for line in log.splitlines()
                        if "Violation:" in line
                    ]
                    why = "; ".join(violations[:3]) or _prism_validation(body) or body[:300]
                    outcomes[call.index] = (f"mock answered {status}", why)
            elif kind == "invalid-answer":
                problems, source = judge_answer(self.document, call.raw, answer)
                if not problems:
                    outcomes[call.index] = ("answer did not validate", detail)
                elif phase == "static":
                    state.notes[f"static answer breaks the schema: {source}"] += 1
                    state.note_lines.append(f"{call.label}: {source}: {problems[0]}")
                    state.static[call.index] = problems[0]
                    if self._repair(call, answer):
                        state.notes["answered instead with an example built from the schema"] += 1
                        state.repaired.append(call)
                    else:
                        state.dynamic.append(call)
                elif phase == "repaired":
                    state.dynamic.append(call)  # Prism did not send the example as built
                else:
                    state.notes["Prism's dynamic answer breaks the schema too"] += 1
                    state.note_lines.append(f"{call.label}: dynamic answer: {problems[0]}")
                    outcomes[call.index] = (
                        "skipped: the mock's answers break the document's schema",
                        f"static: {state.static.get(call.index, '')}; dynamic: {problems[0]}",
                    )
            elif kind == "invalid-request":
                outcomes[call.index] = (
                    "the client's request validator refused the arguments",
                    detail,
                )
            elif kind == "missing":
                outcomes[call.index] = ("no client function for the operation", detail)
            elif kind == "transport":
                outcomes[call.index] = (f"transport: {report.get('error') or 'error'}", detail)
            else:
                outcomes[call.index] = (f"client raised {report.get('error') or 'error'}", detail)
        return again


@dataclass
class _Judging:
    """What one language's calls came to so far, across the mock's three ways to answer."""

    outcomes: dict[int, tuple[str, str]] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)
    note_lines: list[str] = field(default_factory=list)
    static: dict[int, str] = field(default_factory=dict)
    repaired: list[PlannedCall] = field(default_factory=list)
    dynamic: list[PlannedCall] = field(default_factory=list)


def _prism_validation(body: str) -> str:
    """The violations Prism lists in its own 422 answer, as one line."""
    try:
        problems = json.loads(body).get("validation") or []
    except (json.JSONDecodeError, AttributeError):
        return ""
    return "; ".join(
        f"{'.'.join(map(str, p.get('location') or []))}: {p.get('message')}"
        for p in problems[:3]
        if isinstance(p, dict)
    )


def run_contract_tests(
    document: ContractDocument, folder: Path, timeout_s: float = 600, language: str = "python"
) -> ContractTestResult:
    """Start Prism on the document and call every operation through one language's client."""
    with ContractSession(document) as session:
        try:
            return session.test(language, folder, timeout_s)
        except subprocess.TimeoutExpired:
            return ContractTestResult(False, 0.0, output="timed out")


# ---------------------------------------------------------------------------------------
# The drivers


class _Driver:
    language = ""

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        return folder

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        raise NotImplementedError

    def run(
        self,
        document: ContractDocument,
        prepared: Any,
        calls: list[PlannedCall],
        base_url: str,
        headers: dict[str, str],
        params: dict[str, str],
        timeout_s: float,
    ) -> dict[int, dict[str, Any]]:
        plan_file = Path(tempfile.mkstemp(prefix="plan-", suffix=".json")[1])
        try:
            plan_file.write_text(
                json.dumps(
                    {"calls": self.entries(document, prepared, calls), "headers": headers,
                     "params": params, "base_url": base_url}
                ),
                encoding="utf-8",
            )  # fmt: skip
            command, env, cwd = self.command(prepared, base_url, plan_file)
            report_file = plan_file.with_suffix(".report.json")
            done = subprocess.run(
                [*command, str(plan_file), str(report_file)],
                capture_output=True, text=True, timeout=timeout_s, cwd=cwd, env=env,
            )  # fmt: skip
            reports: list[dict[str, Any]] = []
            if report_file.exists():
                with contextlib.suppress(json.JSONDecodeError):
                    reports = json.loads(report_file.read_text(encoding="utf-8") or "[]")
                report_file.unlink()
            if done.returncode != 0 and not reports:
                raise GeneratorError(
                    self.language, "the contract driver failed", done.stdout + done.stderr
                )
            return {int(r["index"]): r for r in reports}
        finally:
            plan_file.unlink(missing_ok=True)


class _PythonDriver(_Driver):
    language = "python"

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _python_calls(document, calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        package: Path = prepared
        return (
            [sys.executable, "-m", "server.aiapi.contract_driver", str(package.resolve().parent),
             package.name],
            {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            Path(__file__).resolve().parents[2],
        )  # fmt: skip


class _TypeScriptDriver(_Driver):
    """The SDK's .ts files transpiled (TypeScript's transpileModule, no type check: tsc
    already checked them) to CommonJS in a scratch folder, then called by driver.cjs."""

    language = "typescript"

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        node_tool("tsc")
        modules = tools_folder() / "aiapi-node" / "node_modules"
        out = work / "js"
        done = subprocess.run(
            ["node", str(DRIVERS / "transpile.cjs"), str(modules / "typescript"),
             str((folder / "src").resolve()), str(out)],
            capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        if done.returncode != 0:
            raise GeneratorError("typescript", "could not transpile the SDK", done.stderr)
        return (folder, out)

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _typescript_calls(prepared[0], calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        modules = tools_folder() / "aiapi-node" / "node_modules"
        env = {**os.environ, "NODE_PATH": str(modules), "NO_COLOR": "1"}
        return ["node", str(DRIVERS / "driver.cjs"), str(prepared[1])], env, None


class _GoDriver(_Driver):
    """driver.go (reflection: each method found by name, each JSON argument decoded into
    its parameter's type) built beside a copy of the package."""

    language = "go"

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        go = go_tool("go")
        module = work / "module"
        shutil.copytree(folder, module)
        name = (module / "go.mod").read_text(encoding="utf-8").split()[1]
        (module / "contractdriver").mkdir()
        source = (DRIVERS / "driver.go").read_text(encoding="utf-8")
        (module / "contractdriver" / "main.go").write_text(
            source.replace('api "MODULE"', f'api "{name}"'), encoding="utf-8"
        )
        binary = work / "contract-driver"
        cache = tools_folder() / "aiapi-go-cache"
        env = {
            **os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local",
            "GO111MODULE": "on", "GOCACHE": str(cache / "build"), "GOPATH": str(cache / "path"),
        }  # fmt: skip
        done = subprocess.run(
            [go, "build", "-o", str(binary), "./contractdriver"],
            cwd=module, capture_output=True, text=True, timeout=timeout_s, env=env,
        )  # fmt: skip
        if done.returncode != 0:
            raise GeneratorError("go", "could not build the contract driver", done.stderr)
        return binary

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _go_calls(document, calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        return [str(prepared)], dict(os.environ), None


_DRIVERS: dict[str, _Driver] = {
    "python": _PythonDriver(),
    "typescript": _TypeScriptDriver(),
    "go": _GoDriver(),
}
CONTRACT_LANGUAGES = tuple(_DRIVERS)


@contextlib.contextmanager
def contract_session(document: ContractDocument) -> Iterator[ContractSession]:
    session = ContractSession(document)
    try:
        yield session
    finally:
        session.close()
