"""Judging an answer by the document's own schema, when a generated client rejected it:
if the answer breaks the schema the client was right and the mock or the document is to
blame (contract.py counts such calls as notes). Reads patterns as ECMA-262, formats as
OpenAPI's, and discriminators as the document maps them."""

from __future__ import annotations

import json
import re
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.operations import is_json_media

# Judging an answer by the document's schema


def ecma_regex(pattern: str) -> Any:
    """The pattern as ECMA-262 reads it (regress), or None where it cannot be compiled."""
    import regress

    for flags in ("u", ""):
        try:
            return regress.Regex(pattern, flags)
        except Exception:
            continue
    return None


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


ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S")


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
            regex = ecma_regex(pattern)
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
        # a URL is absolute: a scheme first (zod's url(); Prism's "string" for GitHub's
        # page_url is none)
        for name in ("uri", "url"):
            checker.checks(name)(
                lambda text: not isinstance(text, str) or bool(ABSOLUTE.match(text))
            )
        for name, kind in TEXT_NUMBERS.items():
            original = checker.checkers.get(name)
            checker.checks(name)(_text_number_check(kind, original))
        checker.checks("regex")(
            lambda text: not isinstance(text, str) or ecma_regex(text) is not None
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


def _members(name: str, schema: dict[str, Any], children: dict[str, list[str]]) -> list[str]:
    """The schemas a discriminated schema tells apart: those that extend it, and its
    oneOf/anyOf alternatives (microcks' Exchange picks RequestResponsePair, whose Python
    model then takes only its own tag, as its mapping says)."""
    members = _descendants(name, children)
    for key in ("oneOf", "anyOf"):
        for branch in schema.get(key) or []:
            ref = branch.get("$ref") if isinstance(branch, dict) else None
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                alternative = ref.rsplit("/", 1)[-1]
                if alternative not in members and alternative != name:
                    members.append(alternative)
    return members


def own_tags(document: ContractDocument) -> dict[int, tuple[str, Any]]:
    """For each schema a discriminated schema tells apart (by id): the property and the
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
        for member in _members(name, schema, children):
            member_schema = schemas.get(member)
            if not isinstance(member_schema, dict):
                continue
            keys = sorted(map(str, _tags([member], schemas, mapping))) if mapping else []
            tag = keys[0] if keys else member_schema.get("x-ms-discriminator-value", member)
            found.setdefault(id(member_schema), (discriminator["propertyName"], tag))
    return found


def narrowed_tags(document: ContractDocument) -> dict[int, tuple[str, set[Any]]]:
    """For each schema a discriminated schema tells apart (by id): the property and the
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
        for member in _members(name, schema, children):
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
