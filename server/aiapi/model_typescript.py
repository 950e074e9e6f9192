"""The TypeScript client's model-written parts: a TSDoc comment per operation function, the
test skeleton's example values (model_test_values.py: judged by the document's schemas,
then prettier and tsc over tests/api.test.ts) and a README (model_readme.py's rules, its
TypeScript examples parsed by prettier; not asked when the client has one already, the
React Query README).

The same pieces and rules as the Go doc comments (server/aiapi/model_go.py), as the
`/** ... */` block above each `export const name = <ThrowOnError ...` that openapi-ts writes
into src/sdk.gen.ts: each answer is checked alone (plain text with words, a few lines, no
masked value repeated, nothing that would end the comment), then all together by the
checks of the deterministic output, prettier and tsc --noEmit. A block comment that cannot
end early cannot break the code it sits above, so a failing check means all of them go
back to openapi-ts's own comments.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from server.aiapi.document import ContractDocument
from server.aiapi.model_batch import ClientBatch, ReadmePlan, write_batch
from server.aiapi.model_parts import (
    Answer,
    ModelOptions,
    ModelReport,
    PieceOutcome,
    comments_in,
    masked,
    operation_words,
    parameter_words,
)
from server.aiapi.model_python import docstring_text
from server.aiapi.model_readme import TYPESCRIPT
from server.aiapi.model_readme import fallback_readme as shared_fallback_readme
from server.aiapi.model_readme import readme_task as shared_readme_task
from server.aiapi.model_test_values import typescript_skeleton
from server.aiapi.operations import Operation, collect_operations
from server.aiapi.tools import ToolMissing, node_tool
from server.aiapi.verify import check_typescript

COMMENT_SYSTEM: Final = (
    "You write TSDoc comments for the functions of a generated TypeScript API client. A "
    "comment says what the operation does and what its parameters mean, only from the text "
    "given: never invent behaviour, errors, defaults or limits it does not state."
)
README_SYSTEM: Final = (
    "You write the README.md of a generated TypeScript API client. Say only what the text "
    "given says about the API; use only the package and functions listed."
)
SDK_MODULE: Final = Path("src") / "sdk.gen.ts"
_FUNCTION: Final = re.compile(r"^export const (\w+) = <ThrowOnError\b")
_CALL: Final = re.compile(r"\.(get|put|post|delete|options|head|patch|trace)<")
_URL: Final = re.compile(r'^\s*url: "([^"]*)",')
_PLACES: Final = {"path": "options.path", "query": "options.query", "header": "options.headers",
                  "cookie": "options.headers (as a cookie)"}  # fmt: skip


def write_typescript_parts(
    document: ContractDocument,
    out: Path,
    options: ModelOptions,
    progress: Callable[[str], None] | None = None,
) -> ModelReport:
    """Ask for a TSDoc comment per function of out/typescript/src/sdk.gen.ts, the values of
    tests/api.test.ts (when there is one) and a README; keep those that pass."""
    folder = out / "typescript"
    sdk = folder / SDK_MODULE
    if not sdk.is_file():
        report = ModelReport("typescript")
        report.message = "no TypeScript client to add to (generation failed?)"
        return report
    functions = sdk_functions(sdk.read_text(encoding="utf-8"), collect_operations(document))
    raw = {(route, method): op for route, method, op, _ in document.operations()}
    package = package_name(folder)
    readme = None
    if not (folder / "README.md").is_file():  # the React Query README stays
        readme = ReadmePlan(
            README_SYSTEM, readme_task(document, package, functions), (package, document.title),
            TYPESCRIPT, fallback_readme(document, package, functions),
        )  # fmt: skip
    batch = ClientBatch(
        "typescript", folder, functions, COMMENT_SYSTEM,
        lambda name, op: comment_task(document, name, op, raw),
        lambda answers, timeout_s: apply_comments(folder, answers, timeout_s),
        typescript_skeleton(document, folder), readme,
    )  # fmt: skip
    return write_batch(document, batch, options, progress)


def package_name(folder: Path) -> str:
    """The name in the client's package.json (what an import of it names)."""
    try:
        name = json.loads((folder / "package.json").read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError):
        name = None
    return name if isinstance(name, str) and name else folder.name


def readme_task(
    document: ContractDocument, package: str, functions: list[tuple[str, Operation]]
) -> str:
    intro = (
        f"The package `{package}` is a typed TypeScript client for {document.title!r} "
        f"{document.api_version} (from {document.path.name}), written by openapi-ts: "
        "`createClient({ baseUrl })` in `./src/client`, and one async function per "
        "operation in `./src/sdk.gen`, each taking one options object ({ client, path, "
        "query, headers, body }) and resolving to { data, error, response }."
    )
    ask = (
        "Write README.md: what the API is, how to install the dependency (zod), one short "
        "example in a ```ts block that awaits one of the functions, and the list of functions."
    )
    return shared_readme_task(document, intro, "The functions:", functions, ask)


def fallback_readme(
    document: ContractDocument, package: str, functions: list[tuple[str, Operation]]
) -> str:
    """The generator's own README: what the model's replaces when it passes the checks."""
    first = functions[0][0] if functions else None
    imports = f'import {{ {first} }} from "./src/sdk.gen";\n' if first else ""
    call = f"const {{ data, error }} = await {first}({{ client }});\n" if first else ""
    use = (
        f'import {{ createClient }} from "./src/client";\n{imports}\n'
        f'const client = createClient({{ baseUrl: "https://api.example.com" }});\n{call}'
    )
    about = (
        f"`{package}`: a typed fetch client generated by headstart aiapi (openapi-ts) from "
        f"{document.path.name}: `createClient` in `src/client`, one function per operation "
        "in `src/sdk.gen.ts`, zod schemas checking the answers."
    )
    return shared_fallback_readme(
        document, "TypeScript client", about, ("sh", "npm install zod\n"), ("ts", use),
        functions, "Function",
    )  # fmt: skip


def sdk_functions(source: str, operations: list[Operation]) -> list[tuple[str, Operation]]:
    """Each operation function openapi-ts wrote, with its operation: matched by the HTTP
    method and URL template in its body, so openapi-ts's own naming need not be copied."""
    by_request = {(op.method.lower(), op.route): op for op in operations}
    found: list[tuple[str, Operation]] = []
    name: str | None = None
    method: str | None = None
    for line in source.splitlines():
        declared = _FUNCTION.match(line)
        if declared is not None:
            name, method = declared.group(1), None
            continue
        called = _CALL.search(line)
        if called is not None and name is not None:
            method = called.group(1).lower()
        url = _URL.match(line)
        if url is not None and name is not None and method is not None:
            op = by_request.get((method, url.group(1)))
            if op is not None:
                found.append((name, op))
            name = method = None
    return found


def comment_task(
    document: ContractDocument,
    name: str,
    op: Operation,
    raw: dict[tuple[str, str], dict[str, Any]],
) -> str:
    """What the model is told about one function: the operation's own words, masked."""
    source = raw.get((op.route, op.method), {})
    lines = [
        f"The function `{name}` of the TypeScript client for {document.title!r} calls "
        f"{op.method.upper()} {op.route}; it takes one options object and returns a promise "
        "of the result."
    ]
    lines += operation_words(source)
    for param in op.parameters:
        need = "required" if param.required else "optional"
        what = parameter_words(param.description)
        place = _PLACES.get(param.location, f"options.{param.location}")
        lines.append(f"Parameter {param.name} (in {place}, {need}){what}")
    if op.body is not None:
        need = "required" if op.body_required else "optional"
        lines.append(f"Request body: {op.body.media_type} in options.body ({need})")
    lines.append(
        "\nWrite its doc comment's text only, without the /** */ marks: a first line that "
        "says what it does, then one line per parameter when there are any. At most 8 lines."
    )
    return masked("\n".join(lines), document.path.name)


def render_comment(text: str) -> str:
    """A TSDoc block as prettier leaves it."""
    body = "".join(f" * {line}\n" if line.strip() else " *\n" for line in text.split("\n"))
    return f"/**\n{body} */\n"


def with_comments(source: str, texts: dict[str, str]) -> str:
    """`source` with the comment block right above each named function replaced (or put
    there when openapi-ts wrote none: an operation without summary or description)."""
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for number, line in enumerate(lines):
        found = _FUNCTION.match(line)
        if found is None or found.group(1) not in texts:
            continue
        first = number
        if first > 0 and lines[first - 1].strip() == "*/":
            while first > 0 and not lines[first - 1].lstrip().startswith("/**"):
                first -= 1
            first -= 1
        first = max(first, 0)
        text = texts[found.group(1)]
        if "@deprecated" in "".join(lines[first:number]) and "@deprecated" not in text:
            text += "\n\n@deprecated"  # the document's word, kept
        edits.append((first, number, render_comment(text)))
    for first, end, text in reversed(edits):
        lines[first:end] = [text]
    return "".join(lines)


def apply_comments(
    folder: Path, answers: dict[str, Answer], timeout_s: float
) -> list[PieceOutcome]:
    """Put in the comments that pass alone; when the checks then fail, none of them."""
    return comments_in(
        folder / SDK_MODULE, answers, _comment_text, with_comments,
        lambda: _check(folder, timeout_s),
    )  # fmt: skip


def _comment_text(_name: str, answer: str) -> tuple[str | None, str]:
    text, why = docstring_text(answer)
    if text is not None and "*/" in text:
        return None, "it holds */, which would end the comment"
    return (None, why) if text is None else (text.replace("\r", ""), "")


def _check(folder: Path, timeout_s: float) -> str:
    """Why the client with the comments in fails prettier or tsc --noEmit ('' when it
    passes); prettier as the generator runs it, so the output stays formatted."""
    try:
        formatted = subprocess.run(
            [node_tool("prettier"), "--write", "--log-level=warn", "--no-config",
             "--print-width=100", str(SDK_MODULE)],
            cwd=folder, capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        if formatted.returncode != 0:
            return f"prettier rejected it: {' '.join(formatted.stderr.split())[:200]}"
        checked = check_typescript(folder, timeout_s)
    except ToolMissing as exc:
        return f"not checked: {exc}"
    except subprocess.TimeoutExpired:
        return f"prettier took longer than {timeout_s:.0f} s"
    if checked.ok:
        return ""
    return f"tsc --noEmit failed: {' '.join(checked.output.split())[:200]}"
