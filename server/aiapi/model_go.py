"""The Go client's model-written parts: a doc comment per Client method.

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
from server.aiapi.operations import Operation
from server.aiapi.tools import ToolMissing, go_tool
from server.aiapi.verify import check_go

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
    if progress is not None:
        progress(f"go: asking the model for {len(requests)} parts")
    answers, message = ask_all(requests, options)
    if message is not None:
        report.message = message
        return report
    report.pieces += apply_comments(
        client, {name: answers.get(name, Answer(None, "not asked")) for name, _ in methods},
        options.check_timeout_s,
    )  # fmt: skip
    report.seconds = time.perf_counter() - started
    return report


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
