"""The Go client's model-written parts: a doc comment per Client method, the test
skeleton's example values (model_test_values.py: judged by the document's schemas, then
gofmt and go vet over contracttest/) and a README (model_readme.py's rules, its Go
examples parsed by gofmt).

The same pieces and rules as the Python docstrings (server/aiapi/model_python.py), as
`//` lines above each `func (c *Client) Name(`: each answer is checked alone (plain text
with words, a few lines, no masked value repeated), then all together by the checks of
the deterministic output, gofmt and go vet. A line comment cannot break the code it sits
above, so a failing check means all of them go back to the generator's line.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from server.aiapi.document import ContractDocument
from server.aiapi.go_client import go_methods
from server.aiapi.go_server import module_name
from server.aiapi.model_parts import (
    Answer,
    ModelOptions,
    ModelReport,
    PieceOutcome,
    ask_all,
    chat_prompt,
    masked,
    request_for,
)
from server.aiapi.model_python import docstring_text
from server.aiapi.model_readme import GO, write_readme
from server.aiapi.model_readme import fallback_readme as shared_fallback_readme
from server.aiapi.model_readme import readme_task as shared_readme_task
from server.aiapi.model_test_values import apply_skeleton_answers, go_skeleton, skeleton_requests
from server.aiapi.operations import Operation
from server.aiapi.tools import ToolMissing, go_tool
from server.aiapi.verify import check_go

README_SYSTEM: Final = (
    "You write the README.md of a generated Go API client. Say only what the text given "
    "says about the API; use only the module and methods listed."
)
COMMENT_SYSTEM: Final = (
    "You write doc comments for the methods of a generated Go API client. A comment says "
    "what the operation does and what its parameters mean, only from the text given: "
    "never invent behaviour, errors, defaults or limits it does not state."
)


def write_go_parts(
    document: ContractDocument,
    out: Path,
    options: ModelOptions,
    progress: Callable[[str], None] | None = None,
) -> ModelReport:
    """Ask for a doc comment per method of out/go/client.go; keep those that pass."""
    started = time.perf_counter()
    report = ModelReport("go")
    client = out / "go" / "client.go"
    if not client.is_file():
        report.message = "no Go client to add to (generation failed?)"
        return report
    methods = go_methods(document)
    raw = {(route, method): op for route, method, op, _ in document.operations()}
    requests = {
        name: request_for(
            chat_prompt(COMMENT_SYSTEM, comment_task(document, name, op, raw)), options.max_tokens
        )
        for name, op in methods
    }
    skeleton = go_skeleton(document, client.parent)
    requests.update(skeleton_requests(document, skeleton, options.max_tokens))
    module = module_name(client.parent)
    requests["readme"] = request_for(
        chat_prompt(README_SYSTEM, readme_task(document, module, methods)),
        options.readme_max_tokens,
    )
    if progress is not None:
        progress(f"go: asking the model for {len(requests)} parts")
    answers, message = ask_all(requests, options)
    deterministic_readme = fallback_readme(document, module, methods)
    if message is not None:
        report.message = message
        (client.parent / "README.md").write_text(deterministic_readme, encoding="utf-8")
        return report
    report.pieces += apply_comments(
        client, {name: answers.get(name, Answer(None, "not asked")) for name, _ in methods},
        options.check_timeout_s,
    )  # fmt: skip
    if skeleton is not None and progress is not None:
        progress("go: checking the model's test values (schemas, go vet)")
    report.pieces += apply_skeleton_answers(document, skeleton, answers, options.check_timeout_s)
    report.pieces.append(
        write_readme(
            client.parent, answers.get("readme", Answer(None, "not asked")),
            {name for name, _ in methods}, (module, document.title), GO, deterministic_readme,
        )
    )  # fmt: skip
    report.seconds = time.perf_counter() - started
    return report


def readme_task(
    document: ContractDocument, module: str, methods: list[tuple[str, Operation]]
) -> str:
    intro = (
        f"The Go module `{module}` is a typed client for {document.title!r} "
        f"{document.api_version} (from {document.path.name}): `NewClient(baseURL)` returns "
        "a *Client whose methods each take a context.Context first, then the required "
        "parameters, the body and a params struct of the optional ones (or nil), and "
        "return the typed result and an error."
    )
    ask = (
        "Write README.md: what the API is, how to add the module (go get), one short "
        "example in a ```go block that calls one method as client.Name(ctx, ...), and the "
        "list of methods."
    )
    return shared_readme_task(document, intro, "The methods of Client:", methods, ask)


def fallback_readme(
    document: ContractDocument, module: str, methods: list[tuple[str, Operation]]
) -> str:
    """The generator's own README: what the model's replaces when it passes the checks."""
    call = (
        f"\tresult, err := client.{methods[0][0]}(context.Background() /* , arguments */)\n"
        "\tfmt.Println(result, err)\n"
        if methods
        else ""
    )
    use = (
        'package main\n\nimport (\n\t"context"\n\t"fmt"\n\n'
        f'\tapi "{module}"\n)\n\nfunc main() {{\n'
        f'\tclient := api.NewClient("https://api.example.com")\n{call}}}\n'
    )
    about = (
        f"A typed client generated by headstart aiapi from {document.path.name}: the module "
        f"`{module}`, `NewClient` and one method of `Client` per operation (the standard "
        "library only)."
    )
    return shared_fallback_readme(
        document, "Go client", about, ("sh", f"go get {module}\n"), ("go", use), methods
    )


def comment_task(
    document: ContractDocument,
    name: str,
    op: Operation,
    raw: dict[tuple[str, str], dict[str, Any]],
) -> str:
    source = raw.get((op.route, op.method), {})
    lines = [
        f"The method `{name}` of the Go client for {document.title!r} calls "
        f"{op.method.upper()} {op.route}; its first parameter is a context.Context."
    ]
    for key in ("summary", "description"):
        text = source.get(key)
        if isinstance(text, str) and text.strip():
            lines.append(f"{key.capitalize()}: {' '.join(text.split())[:600]}")
    for param in op.parameters:
        need = "required" if param.required else "optional, in params"
        what = f" - {' '.join(param.description.split())[:300]}" if param.description else ""
        lines.append(f"Parameter {param.name} ({param.location}, {need}){what}")
    lines.append(
        f"\nWrite its doc comment's text only, without the // marks: a first line that "
        f"starts with {name} and says what it does. At most 8 lines."
    )
    return masked("\n".join(lines), document.path.name)


def render_comment(name: str, text: str) -> str:
    lines = text.split("\n")
    if not lines[0].startswith(name):
        lines[0] = f"{name}: {lines[0]}"  # the generator's own form
    return "".join(f"// {line}\n" if line.strip() else "//\n" for line in lines)


def with_comments(source: str, texts: dict[str, str]) -> str:
    """`source` with the comment lines right above each named method replaced."""
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for number, line in enumerate(lines):
        found = re.match(r"func \(c \*Client\) (\w+)\(", line)
        if found is None or found.group(1) not in texts:
            continue
        first = number
        while first > 0 and lines[first - 1].startswith("//"):
            first -= 1
        edits.append((first, number, render_comment(found.group(1), texts[found.group(1)])))
    for first, end, text in reversed(edits):
        lines[first:end] = [text]
    return "".join(lines)


def apply_comments(
    client: Path, answers: dict[str, Answer], timeout_s: float
) -> list[PieceOutcome]:
    original = client.read_text(encoding="utf-8")
    outcomes: dict[str, PieceOutcome] = {}
    texts: dict[str, str] = {}
    for name, answer in answers.items():
        if answer.text is None:
            outcomes[name] = PieceOutcome("comment", name, False, answer.error or "no answer")
            continue
        text, why = docstring_text(answer.text)
        if text is None or "*/" in text:
            outcomes[name] = PieceOutcome("comment", name, False, why or "it holds */")
            continue
        texts[name] = text.replace("\r", "")
    if texts:
        client.write_text(with_comments(original, texts), encoding="utf-8")
        why = _check(client, timeout_s)
        if why:
            client.write_text(original, encoding="utf-8")
            for name in texts:
                outcomes[name] = PieceOutcome("comment", name, False, why)
            texts = {}
    for name in texts:
        outcomes[name] = PieceOutcome("comment", name, True)
    return [outcomes[name] for name in answers]


def _check(client: Path, timeout_s: float) -> str:
    """Why the module with the comments in fails gofmt or go vet ('' when it passes)."""
    try:
        done = subprocess.run(
            [go_tool("gofmt"), "-w", client.name], cwd=client.parent, capture_output=True,
            text=True, timeout=timeout_s,
        )  # fmt: skip
        if done.returncode != 0:
            return f"gofmt rejected it: {done.stderr.strip()[:200]}"
        vetted = check_go(client.parent, timeout_s)
    except ToolMissing as exc:
        return f"not checked: {exc}"
    return "" if vetted.ok else f"go vet failed: {' '.join(vetted.output.split())[:200]}"
