"""The Python test skeleton's model-written parts: example arguments for each test's call.

The generator's arguments come from the document's examples, defaults and schemas
(`contract_examples.example_value`): valid, and often dull (`name='string'`). The model proposes
values as one JSON object per test, from the operation's parameters and schemas; they are
written by the skeleton's own literal rules (so a model class is built the way the
generator builds it), then checked as the skeleton is: the test module compiles, passes
ruff format and mypy --strict with the client, and each test passes against a Prism mock
of the document (the contract tests' mock). A test whose check fails gets the
generator's arguments back; the others keep the model's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Final

from server.aiapi import model_test_values
from server.aiapi.document import ContractDocument
from server.aiapi.model_parts import Answer, PieceOutcome, keep_passing, read_answers
from server.aiapi.model_test_values import (
    Slot,
    operation_slots,
    operations_under_test,
    proposed_values,
    values_task,
)
from server.aiapi.operations import Operation
from server.aiapi.python_client import _top_level_names, argument_names, ruff_format
from server.aiapi.stub_operations import StubOperation
from server.aiapi.test_skeletons import PythonTestTemplate
from server.aiapi.tools import GeneratorError, ToolMissing
from server.aiapi.verify import check_python

TESTS_SYSTEM: Final = model_test_values.TESTS_SYSTEM.format(language="Python")


def skeleton_module(folder: Path) -> Path | None:
    """The skeleton's one test module under python/tests, if there is one."""
    modules = sorted((folder / "tests").glob("test_*.py"))
    return modules[0] if modules else None


def python_slots(op: Operation) -> list[Slot]:
    """The method's arguments by their Python names; the body as `body` (JSON) or `data`
    (a form)."""
    body = "data" if op.body is not None and op.body.is_form else "body"
    return operation_slots(op, argument_names(op), body)


def arguments_task(document: ContractDocument, stub: StubOperation) -> str:
    """The prompt's question for one test: the arguments, their schemas, today's values."""
    return values_task(document, stub.python_name, stub.op, python_slots(stub.op))


def proposal(answer: str, op: Operation) -> tuple[dict[str, Any] | None, str]:
    """The answer's arguments, or None and why they cannot be used (Prism judges the
    values: the test runs against it)."""
    return proposed_values(answer, python_slots(op))


def call_arguments(template: PythonTestTemplate, op: Operation, values: dict[str, Any]) -> str:
    """The call's arguments from the proposed values, by the skeleton's own literal rules."""
    parts = []
    for param, name in argument_names(op):
        if name in values:
            parts.append(f"{name}={template.parameter_literal(param, values[name])}")
    if op.body is not None and op.body.is_json and "body" in values:
        parts.append(
            f"body={template.literal(template.types.type_of(op.body.schema), values['body'])}"
        )
    elif op.body is not None and op.body.is_form and "data" in values:
        data = values["data"]
        parts.append(f"data={data if isinstance(data, dict) else {}!r}")
    elif op.body is not None and op.body_required and not (op.body.is_json or op.body.is_form):
        parts.append("content=b'a'")
    return ", ".join(parts)


def template_for(document: ContractDocument, package: Path) -> PythonTestTemplate:
    models = package / "models.py"
    if not models.exists():
        models = package / "models" / "__init__.py"
    source = models.read_text(encoding="utf-8")
    return PythonTestTemplate(document, package.name, _top_level_names(source), source)


def with_arguments(source: str, calls: dict[str, str]) -> str:
    """The test module with each named method's call (`client.NAME(...)` inside
    `test_NAME`) given the new arguments."""
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        method = node.name.removeprefix("test_")
        if method not in calls:
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "client"
                and call.func.attr == method
                and call.end_lineno is not None
                and call.end_col_offset is not None
            ):
                text = f"client.{method}({calls[method]})"
                edits.append(
                    (call.lineno, call.col_offset, call.end_lineno, call.end_col_offset, text)
                )
                break
    for first, start, last, end, text in sorted(edits, reverse=True):
        head = lines[first - 1][:start]
        tail = lines[last - 1][end:]
        lines[first - 1 : last] = [head + text + tail]
    return "".join(lines)


def apply_test_arguments(
    document: ContractDocument,
    folder: Path,
    package: Path,
    answers: dict[str, Answer],
    timeout_s: float,
) -> list[PieceOutcome]:
    """Put in the proposed arguments that pass the checks; the others stay the generator's."""
    module = skeleton_module(folder)
    if module is None:
        return []
    original = module.read_text(encoding="utf-8")
    template = template_for(document, package)
    by_name = {stub.python_name: stub for stub in operations_under_test(document)}

    def read(name: str, text: str) -> tuple[str | None, str]:
        stub = by_name.get(name)
        if stub is None:
            return None, "no such test"
        values, why = proposal(text, stub.op)
        if values is None:
            return None, why
        try:
            call = call_arguments(template, stub.op, values)
            compile(with_arguments(original, {name: call}), str(module), "exec")
        except (SyntaxError, ValueError, TypeError) as exc:
            return None, f"the test no longer compiles: {exc}"
        return call, ""

    candidates, outcomes = read_answers("test", answers, read)

    def check(calls: dict[str, str]) -> dict[str, str]:
        failed, reasons = _check_with(document, folder, module, original, calls, timeout_s)
        return {name: reasons.get(name, "the checks failed") for name in failed}

    kept, failed = keep_passing("test", candidates, check)
    outcomes.update(failed)
    if not kept:
        module.write_text(original, encoding="utf-8")
    for name in kept:
        outcomes[name] = PieceOutcome("test", name, True)
    return [outcomes[name] for name in answers]


def _check_with(
    document: ContractDocument,
    folder: Path,
    module: Path,
    original: str,
    calls: dict[str, str],
    timeout_s: float,
) -> tuple[set[str], dict[str, str]]:
    """The tests whose new arguments fail a check, and why, with `calls` in place."""
    from server.aiapi.stub_check import check_python_tests_against_prism

    module.write_text(with_arguments(original, calls), encoding="utf-8")
    everyone = set(calls)
    try:
        ruff_format(module.parent)
    except GeneratorError as exc:
        module.write_text(original, encoding="utf-8")
        return everyone, dict.fromkeys(everyone, f"ruff format rejected it: {exc}")
    typed = check_python(module.parent, timeout_s)
    if not typed.ok:
        failing: dict[str, str] = {}
        spans = _test_spans(module.read_text(encoding="utf-8"))
        for match in re.finditer(
            rf"{re.escape(module.name)}:(\d+):(?:\d+:)? error: (.*)", typed.output
        ):
            line = int(match.group(1))
            owner = next(
                (name for name, (s, e) in spans.items() if name in calls and s <= line <= e), None
            )
            if owner is None:
                return everyone, dict.fromkeys(everyone, f"mypy --strict failed: {match.group(2)}")
            failing.setdefault(owner, f"mypy --strict failed: {match.group(2)}")
        return (
            (set(failing), failing)
            if failing
            else (everyone, dict.fromkeys(everyone, "mypy --strict failed"))
        )
    try:
        ran = check_python_tests_against_prism(document, module.parent, folder, timeout_s)
    except ToolMissing as exc:
        return everyone, dict.fromkeys(everyone, f"not run against Prism: {exc}")
    if ran.ok:
        return set(), {}
    failing = {}
    for failure in ran.failures:
        name = failure.split(":", 1)[0].removeprefix("test_")
        if failure.startswith("no test ran"):
            return everyone, dict.fromkeys(everyone, f"pytest did not run: {failure[:200]}")
        if name in calls:
            why = " ".join(failure.split(":", 1)[-1].split())[:200]
            failing[name] = f"failed against Prism: {why}"
    if not failing:  # failures of tests with the generator's arguments are not the model's
        return set(), {}
    return set(failing), failing


def _test_spans(source: str) -> dict[str, tuple[int, int]]:
    return {
        node.name.removeprefix("test_"): (node.lineno, node.end_lineno or node.lineno)
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
