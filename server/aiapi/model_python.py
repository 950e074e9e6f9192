"""The Python client's model-written parts: a docstring per method, a README, and the test
skeleton's example arguments (server/aiapi/model_tests.py).

A docstring is written from the operation's own summary, description and parameters and
replaces the one-line summary the generator wrote in both Client and AsyncClient. Each
answer is checked alone first (plain text of a few lines, no repeated masked value, the
module still compiles with it in place), then all of them together by the checks of the
deterministic output: ruff format and mypy --strict over the package. A docstring that
mypy's errors point into goes back to the generator's, and the rest are checked again.

The README (python/README.md) is the model's when it passes model_readme.py's rules (its
Python examples parse and call only methods the client has); else the generator's own.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from server.aiapi import model_tests
from server.aiapi.document import ContractDocument
from server.aiapi.model_parts import (
    Answer,
    ModelOptions,
    ModelReport,
    PieceOutcome,
    ask_all,
    chat_prompt,
    holds_mask,
    keep_passing,
    masked,
    operation_words,
    parameter_words,
    read_answers,
    request_for,
)
from server.aiapi.model_readme import PYTHON, write_readme
from server.aiapi.model_readme import fallback_readme as shared_fallback_readme
from server.aiapi.model_readme import readme_task as shared_readme_task
from server.aiapi.model_test_values import operations_under_test
from server.aiapi.operations import Operation
from server.aiapi.python_client import (
    argument_names,
    client_methods,
    package_name,
    ruff_format,
)
from server.aiapi.tools import GeneratorError
from server.aiapi.verify import check_python

CLIENT_CLASSES: Final = ("Client", "AsyncClient")
MAX_DOC_LINES: Final = 12
MAX_DOC_CHARS: Final = 900
DOCSTRING_SYSTEM: Final = (
    "You write docstrings for the methods of a generated Python API client. A docstring "
    "says what the operation does and what its arguments mean, only from the text given: "
    "never invent behaviour, errors, defaults or limits it does not state."
)
README_SYSTEM: Final = (
    "You write the README.md of a generated Python API client. Say only what the text "
    "given says about the API; use only the package, classes and methods listed."
)


def write_python_parts(
    document: ContractDocument,
    out: Path,
    options: ModelOptions,
    progress: Callable[[str], None] | None = None,
) -> ModelReport:
    """Ask for the docstrings, the test skeleton's arguments (when out/python/tests has
    one) and the README of out/python in one batch; keep the pieces that pass their checks,
    and report on each."""
    started = time.perf_counter()
    report = ModelReport("python")
    folder = out / "python"
    package = folder / package_name(document)
    if not (package / "client.py").is_file():
        report.message = "no Python client to add to (generation failed?)"
        return report
    methods = client_methods(document)
    raw = {(route, method): op for route, method, op, _ in document.operations()}
    requests = {
        f"docstring:{name}": request_for(
            chat_prompt(DOCSTRING_SYSTEM, docstring_task(document, name, op, raw)),
            options.max_tokens,
        )
        for name, op in methods
    }
    tests = operations_under_test(document) if model_tests.skeleton_module(folder) else []
    for stub in tests:
        requests[f"test:{stub.python_name}"] = request_for(
            chat_prompt(model_tests.TESTS_SYSTEM, model_tests.arguments_task(document, stub)),
            options.max_tokens,
        )
    requests["readme"] = request_for(
        chat_prompt(README_SYSTEM, readme_task(document, package.name, methods)),
        options.readme_max_tokens,
    )
    if progress is not None:
        progress(f"python: asking the model for {len(requests)} parts")
    answers, message = ask_all(requests, options)
    report.seconds = time.perf_counter() - started
    deterministic_readme = fallback_readme(document, package.name, methods)
    if message is not None:
        report.message = message
        (folder / "README.md").write_text(deterministic_readme, encoding="utf-8")
        return report
    docstrings = {
        name: answers.get(f"docstring:{name}", Answer(None, "not asked")) for name, _ in methods
    }
    report.pieces += apply_docstrings(package, docstrings, options.check_timeout_s)
    if tests:
        if progress is not None:
            progress("python: checking the model's test arguments (mypy --strict, Prism)")
        proposed = {
            stub.python_name: answers.get(f"test:{stub.python_name}", Answer(None, "not asked"))
            for stub in tests
        }
        report.pieces += model_tests.apply_test_arguments(
            document, folder, package, proposed, options.check_timeout_s
        )
    report.pieces.append(
        write_readme(
            folder, answers.get("readme", Answer(None, "not asked")),
            {name for name, _ in methods}, (package.name, document.title), PYTHON,
            deterministic_readme,
        )
    )  # fmt: skip
    report.seconds = time.perf_counter() - started
    return report


# --- prompts ----------------------------------------------------------------------------------


def docstring_task(
    document: ContractDocument,
    name: str,
    op: Operation,
    raw: dict[tuple[str, str], dict[str, Any]],
) -> str:
    """What the model is told about one method: the operation's own words, masked."""
    source = raw.get((op.route, op.method), {})
    arguments = {param.name: python for param, python in argument_names(op)}
    lines = [
        f"The method `{name}` of the Python client for {document.title!r} calls "
        f"{op.method.upper()} {op.route}"
        + (f" (operationId {op.operation_id})." if op.operation_id else "."),
    ]
    lines += operation_words(source)
    for param in op.parameters:
        need = "required" if param.required else "optional"
        what = parameter_words(param.description)
        lines.append(
            f"Argument `{arguments[param.name]}` ({param.location} {param.name}, {need}){what}"
        )
    if op.body is not None:
        lines.append(
            f"Request body: {op.body.media_type} ({'required' if op.body_required else 'optional'})"
        )
    answer = f"JSON ({op.result.media_type})" if op.result.is_json else op.result.media_type
    lines.append(f"Answer: {answer or 'none'}")
    lines.append(
        "\nWrite its docstring's text only, without the quotes: a first line that says what "
        "it does, then, when there are arguments, one line per argument. At most 8 lines."
    )
    return masked("\n".join(lines), document.path.name)


def readme_task(
    document: ContractDocument, package: str, methods: list[tuple[str, Operation]]
) -> str:
    intro = (
        f"The package `{package}` is a typed Python client for {document.title!r} "
        f"{document.api_version} (from {document.path.name}): pydantic v2 models in "
        f"`{package}.models`, and `Client` (blocking, httpx) and `AsyncClient` (asyncio) in "
        f"`{package}`, both taking the base URL and used as context managers."
    )
    ask = (
        "Write README.md: what the API is, how to install the dependencies (httpx, "
        "pydantic), one short example in a ```python block, and the list of methods."
    )
    return shared_readme_task(
        document, intro, "The methods (the same on both classes):", methods, ask
    )


# --- docstrings -------------------------------------------------------------------------------


def docstring_text(answer: str) -> tuple[str | None, str]:
    """The docstring's text from an answer, or None and why it cannot be one."""
    text = answer.strip()
    if text.startswith("```"):
        text = "\n".join(line for line in text.split("\n") if not line.startswith("```")).strip()
    for quotes in ('"""', "'''"):
        if text.startswith(quotes) and text.endswith(quotes) and len(text) >= 6:
            text = text[3:-3].strip()
    lines = [line.rstrip() for line in text.split("\n")]
    if not text:
        return None, "the answer is empty"
    if holds_mask(text):
        return None, "it repeats a masked credential"
    if len(lines) > MAX_DOC_LINES or len(text) > MAX_DOC_CHARS:
        return None, f"longer than {MAX_DOC_LINES} lines or {MAX_DOC_CHARS} characters"
    if "```" in text:
        return None, "it holds code"
    if not re.search(r"[^\W\d_]{2,}", text):
        return None, "it holds no words"
    return "\n".join(lines), ""


def render_docstring(text: str, indent: str) -> str:
    """The docstring at `indent`; backslashes doubled, so `\\d` reads as written and
    Python warns of no invalid escape."""
    lines = text.replace("\\", "\\\\").split("\n")
    if len(lines) == 1:
        return f'{indent}"""{lines[0]}"""\n'
    rest = "".join(f"{indent}{line}\n" if line.strip() else "\n" for line in lines[1:])
    return f'{indent}"""{lines[0]}\n{rest}{indent}"""\n'


def docstring_spans(source: str) -> dict[str, list[tuple[int, int, str]]]:
    """Per method name: the (first, end) 0-based line spans of its docstrings in Client and
    AsyncClient, with their indentation."""
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.ClassDef) and node.name in CLIENT_CLASSES):
            continue
        for item in node.body:
            if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) or not item.body:
                continue
            first = item.body[0]
            # the generator's first statement is the docstring; in a model's version
            # it may be any expression (a string with code spliced in), still its span
            if isinstance(first, ast.Expr) and first.end_lineno is not None:
                spans.setdefault(item.name, []).append(
                    (first.lineno - 1, first.end_lineno, " " * first.col_offset)
                )
    return spans


def with_docstrings(source: str, texts: dict[str, str]) -> str:
    """`source` with each named method's docstrings (sync and async) replaced."""
    lines = source.splitlines(keepends=True)
    edits = [
        (start, end, render_docstring(texts[name], indent))
        for name, spans in docstring_spans(source).items()
        if name in texts
        for start, end, indent in spans
    ]
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def apply_docstrings(
    package: Path, answers: dict[str, Answer], timeout_s: float
) -> list[PieceOutcome]:
    """Put in the docstrings that pass the checks; the others stay the generator's."""
    client = package / "client.py"
    original = client.read_text(encoding="utf-8")

    def read(name: str, text: str) -> tuple[str | None, str]:
        docstring, why = docstring_text(text)
        if docstring is None:
            return None, why
        try:
            compile(with_docstrings(original, {name: docstring}), str(client), "exec")
        except (SyntaxError, ValueError) as exc:
            return None, f"the module no longer compiles: {getattr(exc, 'msg', exc)}"
        return docstring, ""

    candidates, outcomes = read_answers("docstring", answers, read)

    def check(texts: dict[str, str]) -> dict[str, str]:
        failed, why = _check_with(package, original, texts, timeout_s)
        return dict.fromkeys(failed, why)

    kept, failed = keep_passing("docstring", candidates, check)
    outcomes.update(failed)
    if not kept:
        _restore(package, original)
    for name in kept:
        outcomes[name] = PieceOutcome("docstring", name, True)
    return [outcomes[name] for name in answers]


def _check_with(
    package: Path, original: str, texts: dict[str, str], timeout_s: float
) -> tuple[set[str], str]:
    """Write the module with `texts` in, format and check it; the names whose docstrings the
    errors point into (all of them when the errors point elsewhere) and the first error."""
    client = package / "client.py"
    client.write_text(with_docstrings(original, texts), encoding="utf-8")
    try:
        ruff_format(package)
    except GeneratorError as exc:
        _restore(package, original)
        return set(texts), f"ruff format rejected it: {exc}"
    result = check_python(package, timeout_s)
    if result.ok:
        return set(), ""
    source = client.read_text(encoding="utf-8")
    spans = docstring_spans(source)
    failing: set[str] = set()
    first_error = ""
    for match in re.finditer(r"client\.py:(\d+):(?:\d+:)? error: (.*)", result.output):
        line = int(match.group(1)) - 1
        first_error = first_error or match.group(2)
        owners = [
            name
            for name, ranges in spans.items()
            if name in texts
            for s, e, _ in ranges
            if s <= line < e
        ]
        if not owners:
            return set(texts), f"mypy --strict failed: {first_error or result.output[:200]}"
        failing.update(owners)
    if not failing:
        return set(texts), f"mypy --strict failed: {result.output[:200]}"
    return failing, f"mypy --strict failed: {first_error}"


def _restore(package: Path, original: str) -> None:
    (package / "client.py").write_text(original, encoding="utf-8")


# --- README -----------------------------------------------------------------------------------


def fallback_readme(
    document: ContractDocument, package: str, methods: list[tuple[str, Operation]]
) -> str:
    """The generator's own README: what the model's replaces when it passes the checks."""
    example = f"    result = client.{methods[0][0]}(...)\n" if methods else ""
    about = (
        f"A typed client generated by headstart aiapi from {document.path.name}: pydantic v2 "
        f"models in `{package}.models`, `Client` (httpx, blocking) and `AsyncClient` "
        f"(asyncio) in `{package}`."
    )
    use = f'from {package} import Client\n\nwith Client("https://api.example.com") as client:\n'
    return shared_fallback_readme(
        document, "Python client", about, ("sh", "pip install httpx pydantic\n"),
        ("python", use + example), methods,
    )  # fmt: skip
