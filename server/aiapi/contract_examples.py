"""Example values for contract tests, test skeletons and stubs: an operation's arguments
and bodies built from the document (examples, defaults, enums, schemas), strings made to
match their formats and ECMA-262 patterns."""

from __future__ import annotations

import functools
import importlib
import warnings
from typing import Any

from server.aiapi.contract_judge import ecma_regex, schema_judge
from server.aiapi.document import ContractDocument
from server.aiapi.operations import schema_types

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
        if key in schema and has_type(schema[key], declared) and judge.fits(schema, schema[key]):
            return schema[key]
    examples = schema.get("examples")  # 3.1: a list
    first = examples[0] if isinstance(examples, list) and examples else None
    if first is not None and has_type(first, declared) and judge.fits(schema, first):
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
        # a part that only makes a property required wrote a placeholder for it; the part
        # that describes it says what it takes (docker hub's restricted_images: booleans)
        described = _all_of_properties(document, schema)
        for name, value in list(merged.items()):
            if name in described and not judge.fits(described[name], value):
                merged[name] = example_value(document, described[name], depth + 1, full)
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
        value = {
            name: example_value(document, properties.get(name), depth + 1, full) for name in names
        }
        return _with_entries(document, schema, value, depth, full)
    return "a"


def _with_entries(
    document: ContractDocument, schema: dict[str, Any], value: dict[str, Any], depth: int, full: int
) -> dict[str, Any]:
    """A map given as many entries as its minProperties asks (kinesisvideo's Tags: Prism
    refused {}), keys made to match propertyNames' pattern where there is one."""
    low = schema.get("minProperties")
    extra = schema.get("additionalProperties")
    if not isinstance(low, int) or len(value) >= low or extra is False:
        return value
    keys = document.resolve(schema.get("propertyNames"))
    key_pattern = keys.get("pattern") if isinstance(keys, dict) else None
    entry = extra if isinstance(extra, dict) else {}
    for n in range(low - len(value)):
        key = pattern_example(key_pattern, 1) if isinstance(key_pattern, str) else None
        value[f"{key or 'key'}{n}" if key is None or key in value else key] = example_value(
            document, entry, depth + 1, full
        )
    return value


def _all_of_properties(document: ContractDocument, schema: Any, depth: int = 0) -> dict[str, Any]:
    """The properties an allOf's parts describe, each part's schema of a property merged."""
    schema = document.resolve(schema)
    found: dict[str, Any] = {}
    if not isinstance(schema, dict) or depth > 8:
        return found
    parts = [*(schema.get("allOf") or []), {"properties": schema.get("properties") or {}}]
    for part in parts:
        resolved = document.resolve(part)
        if not isinstance(resolved, dict):
            continue
        nested = _all_of_properties(document, resolved, depth + 1) if "allOf" in resolved else {}
        for name, sub in {**nested, **(resolved.get("properties") or {})}.items():
            found[name] = {"allOf": [found[name], sub]} if name in found else sub
    return found


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


def has_type(value: Any, declared: str | None) -> bool:
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
def pattern_example(pattern: str, min_length: int = 0, max_length: int | None = None) -> str | None:
    """A short string that the pattern (ECMA-262, unanchored as JSON Schema reads it)
    matches, within the lengths; None where none is found.

    Built from the pattern's parse tree (Python's own regex parser, which reads the common
    syntax the same way), each repeat taken as few times as it allows, then more until the
    lengths fit; the result is checked by an ECMA-262 engine."""
    sre_parse: Any = importlib.import_module("re._parser")
    regex = ecma_regex(pattern)
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
