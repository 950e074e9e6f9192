"""The test skeletons' model-written example values, in every language: the question put to
the model, its answer read and judged, and for TypeScript and Go the skeleton written again
with the values that pass (Python's, checked against Prism too, are in model_tests.py).

The generator's values come from the document's examples, defaults and schemas
(`contract_examples.example_value`): valid, and often dull. The model proposes values as
one JSON object per test, keyed by argument. An answer is read alone first (JSON, only
the test's arguments, every required one there, no masked value repeated, and for
TypeScript and Go each value valid against its schema as the contract judge reads it);
then the skeleton is written again by its own template with them (so a value is written
the way the generator writes one) and checked as the deterministic skeleton is: prettier
and tsc --noEmit for TypeScript's vitest file, gofmt and go vet for Go's test package. A
test the checker's errors point into gets the generator's values back, alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from server.aiapi.contract_examples import example_value
from server.aiapi.contract_judge import SchemaJudge, schema_judge
from server.aiapi.document import ContractDocument
from server.aiapi.model_parts import (
    Answer,
    PieceOutcome,
    chat_prompt,
    holds_mask,
    keep_passing,
    masked,
    read_answers,
    request_for,
)
from server.aiapi.operations import Operation, Parameter
from server.aiapi.stub_operations import StubOperation, stub_operations
from server.aiapi.test_skeletons import ExampleValues
from server.aiapi.tools import GeneratorError, ToolMissing
from server.aiapi.verify import CheckResult
from server.backend.client import CompletionRequest

TESTS_SYSTEM: Final = (
    "You write example arguments for the tests of a generated {language} API client: "
    "values the API accepts, as its schemas and descriptions say. Answer with one JSON "
    "object only."
)
MAX_SCHEMA_CHARS: Final = 1500
TYPESCRIPT_TESTS: Final = Path("tests") / "api.test.ts"
GO_TESTS: Final = Path("contracttest") / "api_test.go"
TYPESCRIPT_ERROR: Final = re.compile(r"api\.test\.ts\((\d+),\d+\): error (.*)")
TYPESCRIPT_TEST_START: Final = re.compile(r'^\s*test(?:\.skip)?\(\s*"(\w+): ')
LANGUAGES: Final = {"python": "Python", "typescript": "TypeScript", "go": "Go"}


@dataclass(frozen=True)
class Slot:
    """One argument of a test's call the model may give a value for."""

    name: str  # the key in the model's JSON object
    schema: Any
    required: bool
    where: str  # "query limit", "request body application/json"
    description: str = ""
    parameter: Parameter | None = None  # None: the request body


def operations_under_test(document: ContractDocument) -> list[StubOperation]:
    """The operations whose tests run (the skipped ones keep the generator's values)."""
    return [stub for stub in stub_operations(document) if stub.skip is None]


def operation_slots(
    op: Operation,
    names: list[tuple[Parameter, str]],
    body_name: str,
    optional: bool = True,
) -> list[Slot]:
    """The slots of one call: its parameters by the names the language gives them (the
    optional ones only where the skeleton can send them) and a JSON or form body."""
    slots = [
        Slot(name, param.schema, param.required, f"{param.location} {param.name}",
             param.description or "", param)
        for param, name in names
        if param.required or optional
    ]  # fmt: skip
    if op.body is not None and (op.body.is_json or op.body.is_form):
        where = f"request body {op.body.media_type}"
        slots.append(Slot(body_name, op.body.schema, op.body_required, where))
    return slots


def values_task(document: ContractDocument, test: str, op: Operation, slots: list[Slot]) -> str:
    """The prompt's question for one test: the arguments, their schemas, today's values."""
    lines = [f"The test of `{test}` calls {op.method.upper()} {op.route}."]
    if op.summary:
        lines.append(f"Summary: {' '.join(op.summary.split())[:400]}")
    lines.append("Its arguments (JSON Schema):")
    current: dict[str, Any] = {}
    for slot in slots:
        need = "required" if slot.required else "optional"
        what = f" - {' '.join(slot.description.split())[:300]}" if slot.description else ""
        schema = json.dumps(document.resolve(slot.schema), default=str, sort_keys=True)
        lines.append(f"- {slot.name} ({slot.where}, {need}): {schema[:MAX_SCHEMA_CHARS]}{what}")
        if slot.required:
            current[slot.name] = example_value(document, slot.schema)
    lines.append(f"The generated test sends: {json.dumps(current, default=str)[:MAX_SCHEMA_CHARS]}")
    lines.append(
        "\nAnswer with one JSON object of realistic values for the required arguments (and "
        "optional ones where they make the test more useful), keyed by argument name."
    )
    return masked("\n".join(lines), document.path.name)


def proposed_values(
    answer: str, slots: list[Slot], judge: SchemaJudge | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The answer's values by slot name, or None and why they cannot be used; with a
    judge, each value must be valid against its slot's schema."""
    text = answer.strip()
    if text.startswith("```"):
        text = "\n".join(line for line in text.split("\n") if not line.startswith("```"))
    if holds_mask(text):
        return None, "it repeats a masked credential"
    try:
        values = json.loads(text)
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(values, dict):
        return None, "not a JSON object"
    by_name = {slot.name: slot for slot in slots}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        return None, f"no such argument: {', '.join(unknown)}"
    missing = sorted(slot.name for slot in slots if slot.required and slot.name not in values)
    if missing:
        return None, f"leaves out the required {', '.join(missing)}"
    for name, value in values.items():
        problems = judge.problems(by_name[name].schema, value, limit=1) if judge else []
        if problems and not problems[0].startswith("(cannot judge"):
            return None, f"{name} does not fit its schema: {problems[0]}"
    return values, ""


def example_values(slots: list[Slot], values: dict[str, Any]) -> ExampleValues:
    """The values as the skeleton's templates take them: by the document's parameter name."""
    chosen = ExampleValues()
    for slot in slots:
        if slot.name not in values:
            continue
        if slot.parameter is None:
            chosen = ExampleValues(chosen.parameters, values[slot.name], True)
        else:
            chosen.parameters[slot.parameter.name] = values[slot.name]
    return chosen


# --- TypeScript and Go: the skeleton written again, checked ------------------------------------


@dataclass(frozen=True)
class Skeleton:
    """One language's test skeleton as the model's values are put into it."""

    language: str
    module: Path  # the test file
    slots: Callable[[Operation], list[Slot]]
    render: Callable[[dict[tuple[str, str], ExampleValues]], str]
    format: Callable[[], None]  # as the generator formats it; raises GeneratorError
    check: Callable[[float], CheckResult]
    error: re.Pattern[str]  # a checker error in the module: group 1 its line, 2 the message
    test_start: re.Pattern[str]  # a test's first line: group 1 names it


def typescript_slots(op: Operation) -> list[Slot]:
    """By the document's parameter names (openapi-ts's own keys); no cookies (the skeleton
    sends none)."""
    names = [(param, param.name) for param in op.parameters if param.location != "cookie"]
    taken = {param.name for param in op.parameters}
    return operation_slots(op, names, "body" if "body" not in taken else "requestBody")


def go_slots(op: Operation) -> list[Slot]:
    """The required parameters (an optional one is a field of the method's params struct,
    which the skeleton passes as nil) and the body."""
    names = [(param, param.name) for param in op.parameters]
    taken = {param.name for param in op.parameters}
    return operation_slots(op, names, "body" if "body" not in taken else "requestBody", False)


def typescript_skeleton(document: ContractDocument, folder: Path) -> Skeleton | None:
    """folder/tests/api.test.ts as the model's values go in; None when there is none."""
    if not (folder / TYPESCRIPT_TESTS).is_file():
        return None
    from server.aiapi.scaffold import check_typescript_part, prettier
    from server.aiapi.test_skeletons import TypeScriptTestTemplate
    from server.aiapi.typescript_server import sdk_functions

    template = TypeScriptTestTemplate(document, sdk_functions(folder / "src"))
    return Skeleton(
        "typescript",
        folder / TYPESCRIPT_TESTS,
        typescript_slots,
        lambda values: template.render(values),
        lambda: prettier(folder, TYPESCRIPT_TESTS.parent.name),
        lambda timeout_s: check_typescript_part(folder / TYPESCRIPT_TESTS.parent, timeout_s),
        TYPESCRIPT_ERROR,
        TYPESCRIPT_TEST_START,
    )


def go_skeleton(document: ContractDocument, folder: Path) -> Skeleton | None:
    """folder/contracttest/api_test.go as the model's values go in; None when there is none."""
    if not (folder / GO_TESTS).is_file():
        return None
    from server.aiapi.go_server import gofmt, module_name
    from server.aiapi.scaffold import check_go_package
    from server.aiapi.test_skeletons import GoTestTemplate, client_signatures

    client = (folder / "client.go").read_text(encoding="utf-8")
    template = GoTestTemplate(document, module_name(folder), client_signatures(client))
    return Skeleton(
        "go",
        folder / GO_TESTS,
        go_slots,
        lambda values: template.render(values),
        lambda: gofmt(folder / GO_TESTS.parent, GO_TESTS.name),
        lambda timeout_s: check_go_package(folder / GO_TESTS.parent, timeout_s),
        re.compile(r"api_test\.go:(\d+):(?:\d+:)? (.*)"),
        re.compile(r"^func Test(\w+)\("),
    )


def tests_by_name(document: ContractDocument, skeleton: Skeleton, folder: Path) -> dict[str, Any]:
    """The tests the model writes values for, by the name their pieces carry (the SDK
    function's for TypeScript, the Client method's for Go), with their operations."""
    if skeleton.language == "typescript":
        from server.aiapi.typescript_server import sdk_functions

        functions = sdk_functions(folder / "src")
        named = {key: function.name for key, function in functions.items()}
    else:
        from server.aiapi.go_client import go_methods

        named = {(op.method, op.route): name for name, op in go_methods(document)}
    found = {}
    for stub in operations_under_test(document):
        name = named.get((stub.op.method, stub.op.route))
        if name is not None:
            found[name] = stub.op
    return found


def apply_skeleton_values(
    document: ContractDocument, skeleton: Skeleton, answers: dict[str, Answer], timeout_s: float
) -> list[PieceOutcome]:
    """Put in the proposed values that pass; the other tests keep the generator's."""
    operations = tests_by_name(document, skeleton, skeleton.module.parent.parent)
    original = skeleton.module.read_text(encoding="utf-8")
    judge = schema_judge(document)

    def read(name: str, text: str) -> tuple[ExampleValues | None, str]:
        op = operations.get(name)
        if op is None:
            return None, "no such test"
        slots = skeleton.slots(op)
        values, why = proposed_values(text, slots, judge)
        return (None, why) if values is None else (example_values(slots, values), "")

    candidates, outcomes = read_answers("test", answers, read)

    def check(chosen: dict[str, ExampleValues]) -> dict[str, str]:
        by_operation = {(operations[n].method, operations[n].route): v for n, v in chosen.items()}
        return check_skeleton_with(skeleton, by_operation, set(chosen), timeout_s)

    kept, failed = keep_passing("test", candidates, check)
    outcomes.update(failed)
    if not kept:
        skeleton.module.write_text(original, encoding="utf-8")
    for name in kept:
        outcomes[name] = PieceOutcome("test", name, True)
    return [outcomes[name] for name in answers]


def check_skeleton_with(
    skeleton: Skeleton,
    values: dict[tuple[str, str], ExampleValues],
    names: set[str],
    timeout_s: float,
) -> dict[str, str]:
    """The tests (of `names`) the checker blames with the values in, and why."""
    skeleton.module.write_text(skeleton.render(values), encoding="utf-8")
    try:
        skeleton.format()
        checked = skeleton.check(timeout_s)
    except (GeneratorError, ToolMissing) as exc:
        return dict.fromkeys(names, f"not checked: {' '.join(str(exc).split())[:200]}")
    if checked.ok:
        return {}
    checker = checked.checker
    owners = _test_lines(skeleton, skeleton.module.read_text(encoding="utf-8"))
    failing: dict[str, str] = {}
    for match in skeleton.error.finditer(checked.output):
        owner = owners.get(int(match.group(1)))
        why = f"{checker} failed: {' '.join(match.group(2).split())[:200]}"
        if owner not in names:
            return dict.fromkeys(names, why)
        failing.setdefault(owner, why)
    output = " ".join(checked.output.split())[:200]
    return failing or dict.fromkeys(names, f"{checker} failed: {output}")


def _test_lines(skeleton: Skeleton, source: str) -> dict[int, str]:
    """Each 1-based line of the module inside a test, with the test's name (read from the
    line that opens it, and the next when the formatter wrapped its label there)."""
    owners: dict[int, str] = {}
    current: str | None = None
    lines = source.splitlines()
    for number, line in enumerate(lines, start=1):
        opened = (
            line + " " + lines[number].strip()
            if line.endswith("(") and number < len(lines)
            else line
        )
        started = skeleton.test_start.match(opened)
        if started is not None:
            current = started.group(1)
        elif line.startswith(("}", "  });", "  );")):
            if current is not None:
                owners[number] = current
            current = None
        if current is not None:
            owners[number] = current
    return owners


def skeleton_requests(
    document: ContractDocument, skeleton: Skeleton | None, max_tokens: int
) -> dict[str, CompletionRequest]:
    """One request per test of the skeleton (none without one), keyed `test:NAME`."""
    if skeleton is None:
        return {}
    system = TESTS_SYSTEM.format(language=LANGUAGES[skeleton.language])
    folder = skeleton.module.parent.parent
    return {
        f"test:{name}": request_for(
            chat_prompt(system, values_task(document, name, op, skeleton.slots(op))), max_tokens
        )
        for name, op in tests_by_name(document, skeleton, folder).items()
    }


def apply_skeleton_answers(
    document: ContractDocument,
    skeleton: Skeleton | None,
    answers: dict[str, Answer],
    timeout_s: float,
) -> list[PieceOutcome]:
    """`apply_skeleton_values` over the `test:NAME` answers of one batch."""
    if skeleton is None:
        return []
    tests = {
        key.removeprefix("test:"): answer
        for key, answer in answers.items()
        if key.startswith("test:")
    }
    return apply_skeleton_values(document, skeleton, tests, timeout_s) if tests else []
