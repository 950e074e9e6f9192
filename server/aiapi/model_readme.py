"""The model-written README of each client (python/, typescript/, go/README.md), kept only
when it passes the same rules in every language: a heading; it names the package or the
API; no masked value repeated; at most 200 lines; its code blocks closed; and each block
in the client's language parses (Python's `ast`, prettier's TypeScript parser, gofmt,
which takes Go fragments) and calls only operations the client has. Else the generator's
own README (install, use, the table of operations) is written.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from server.aiapi.document import ContractDocument
from server.aiapi.model_parts import Answer, PieceOutcome, holds_mask, masked
from server.aiapi.naming import comment_text
from server.aiapi.operations import Operation
from server.aiapi.tools import ToolMissing, go_tool, node_tool

MAX_README_LINES: Final = 200


@dataclass(frozen=True)
class ReadmeRules:
    """How one language's examples in a README are read."""

    language: str  # as a person names it: "Python"
    fences: tuple[str, ...]  # the code blocks' info strings
    calls: re.Pattern[str]  # a call of an operation: group 1 its name
    always: frozenset[str]  # names an example may call that are not operations
    problem: Callable[[str], str]  # why a block does not parse ('' when it does)


def python_problem(block: str) -> str:
    try:
        ast.parse(block)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    return ""


def _tool_problem(command: Callable[[], list[str]], block: str) -> str:
    """What a parser run over `block` on stdin says is wrong ('' when nothing)."""
    try:
        done = subprocess.run(command(), input=block, capture_output=True, text=True, timeout=60)
    except (ToolMissing, OSError, subprocess.TimeoutExpired) as exc:
        return f"not parsed: {exc}"
    return "" if done.returncode == 0 else " ".join(done.stderr.split())[:200] or "no parse"


def typescript_problem(block: str) -> str:
    return _tool_problem(lambda: [node_tool("prettier"), "--stdin-filepath", "example.ts"], block)


def go_problem(block: str) -> str:
    return _tool_problem(lambda: [go_tool("gofmt")], block)


PYTHON: Final = ReadmeRules(
    "Python", ("python",), re.compile(r"\b(?:client|api|async_client)\.([A-Za-z_]\w*)\s*\("),
    frozenset({"close", "aclose"}), python_problem,
)  # fmt: skip
TYPESCRIPT: Final = ReadmeRules(
    "TypeScript", ("ts", "typescript"), re.compile(r"\bawait\s+([A-Za-z_$][\w$]*)\s*\("),
    frozenset(), typescript_problem,
)  # fmt: skip
GO: Final = ReadmeRules(
    "Go", ("go",), re.compile(r"\bclient\.([A-Za-z_]\w*)\s*\("), frozenset(), go_problem
)


def readme_problem(
    text: str, methods: set[str], names: tuple[str, ...] = (), rules: ReadmeRules = PYTHON
) -> str:
    """Why a README cannot be kept ('' when it can); `names` are the package's and the
    API's, one of which a README about them names."""
    if not text:
        return "the answer is empty"
    if not re.search(r"^#", text, flags=re.MULTILINE):
        return "it has no heading"
    if names and not any(name.lower() in text.lower() for name in names):
        return "it names neither the package nor the API"
    if holds_mask(text):
        return "it repeats a masked credential"
    if len(text.split("\n")) > MAX_README_LINES:
        return f"longer than {MAX_README_LINES} lines"
    if text.count("```") % 2:
        return "a code block is not closed"
    fences = "|".join(re.escape(fence) for fence in rules.fences)
    for block in re.findall(rf"```(?:{fences})\n(.*?)```", text, flags=re.DOTALL):
        why = rules.problem(block)
        if why:
            return f"a {rules.language} example does not parse: {why}"
        for called in rules.calls.findall(block):
            if called not in methods and called not in rules.always:
                return f"an example calls {called}(), which the client does not have"
    return ""


def checked_readme(
    answer: Answer, methods: set[str], names: tuple[str, ...] = (), rules: ReadmeRules = PYTHON
) -> tuple[str | None, PieceOutcome]:
    """The model's README when it passes the checks; else None and why."""
    if answer.text is None:
        return None, PieceOutcome("readme", "README.md", False, answer.error or "no answer")
    text = answer.text.strip()
    if text.startswith("```markdown") or text.startswith("```md"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.removesuffix("```").strip()
    why = readme_problem(text, methods, names, rules)
    if why:
        return None, PieceOutcome("readme", "README.md", False, why)
    return text + "\n", PieceOutcome("readme", "README.md", True)


def write_readme(
    folder: Path,
    answer: Answer,
    methods: set[str],
    names: tuple[str, ...],
    rules: ReadmeRules,
    fallback: str,
) -> PieceOutcome:
    """folder/README.md: the model's when it passes, else `fallback`."""
    readme, outcome = checked_readme(answer, methods, names, rules)
    (folder / "README.md").write_text(readme or fallback, encoding="utf-8")
    return outcome


def readme_task(
    document: ContractDocument,
    intro: str,
    listed: str,
    operations: list[tuple[str, Operation]],
    ask: str,
) -> str:
    """What the model is told for a README: what the client is, the API's description,
    its operations by the client's names, and what to write; masked."""
    lines = [intro]
    description = document.info.get("description")
    if isinstance(description, str) and description.strip():
        lines.append(f"The API's description: {' '.join(description.split())[:1500]}")
    lines.append(listed)
    lines += [
        f"- {name}: {op.method.upper()} {op.route} - {comment_text(op.summary)}"
        for name, op in operations
    ]
    lines.append(f"\n{ask}")
    return masked("\n".join(lines), document.path.name)


def fallback_readme(
    document: ContractDocument,
    what: str,
    about: str,
    install: tuple[str, str],
    use: tuple[str, str],
    operations: list[tuple[str, Operation]],
    column: str = "Method",
) -> str:
    """The generator's own README: what the model's replaces when it passes the checks.
    `install` and `use` are (fence, code)."""
    rows = "".join(
        f"| `{name}` | `{op.method.upper()} {comment_text(op.route)}` | "
        f"{comment_text(op.summary).replace('|', '/')} |\n"
        for name, op in operations
    )
    return (
        f"# {comment_text(document.title)} {document.api_version}: {what}\n\n{about}\n\n"
        f"## Install\n\n```{install[0]}\n{install[1]}```\n\n"
        f"## Use\n\n```{use[0]}\n{use[1]}```\n\n"
        f"## Operations\n\n| {column} | Request | Summary |\n|---|---|---|\n{rows}"
    )
