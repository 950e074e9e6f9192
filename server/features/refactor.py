"""Model-backed refactorings of a selection or the enclosing function or class.

LSP-free. Four kinds: add a docstring, add type hints, extract a function, and rewrite
with the user's instruction. Offering them (`offers`) parses the file once and calls no
model, so the editor's light bulb stays instant; the model is asked only when the user
picks one (`build_prompt`, then the caller streams it), and its answer becomes an edit only
after `validate` has checked it:

- it is code (taken from its fenced block), not empty, and not the code unchanged;
- it keeps the indentation of the code it replaces (an answer written at column 0 for a
  method is shifted to the method's indentation first, uniformly; a line that then still
  sits left of it would leave the enclosing block, and is refused);
- it stays inside the target: it does not repeat the lines just before or after it;
- the file with the answer in place parses (tree-sitter), with no syntax error in the new
  code and none added elsewhere (an unterminated string would break the rest of the file);
- what the kind promises: a docstring changes no code (the code's tokens, strings and
  comments aside, are the same), type hints change nothing but annotations, an extracted
  function is a new definition next to all the old ones.

The prompt is chat-style (ChatML: `<|im_start|>` … `<|im_end|>`, what Qwen2.5-Coder
Instruct and many other instruct models read) sent through `/v1/completions`, with the
assistant's code fence already opened so that the answer is code from its first token.
It holds the definitions from other project files that the code uses, found by the
completion context builder (`gather_snippets`), and the code around the target.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from tree_sitter import Node

from server.backend.client import (
    BackendError,
    CompletionBackend,
    CompletionRequest,
    Priority,
    StreamStats,
    close_uninterrupted,
)
from server.completion.context import (
    Budget,
    ContextBuilder,
    Snippet,
    build_context,
    fit_prefix,
    fit_suffix,
)
from server.completion.cursor import analyse, parse
from server.completion.prompt import TEMPLATES
from server.completion.secrets import mask_piece, mask_secrets, restore_secrets, secret_values

Count = Callable[[str], int]


class RefactorKind(StrEnum):
    DOCSTRING = "docstring"
    TYPE_HINTS = "typeHints"
    EXTRACT = "extractFunction"
    REWRITE = "rewrite"


ACTION_KINDS: Final[dict[RefactorKind, str]] = {
    RefactorKind.DOCSTRING: "refactor.rewrite.docstring",
    RefactorKind.TYPE_HINTS: "refactor.rewrite.typeHints",
    RefactorKind.EXTRACT: "refactor.extract.function",
    RefactorKind.REWRITE: "refactor.rewrite.instruction",
}
"""LSP code action kinds: under `refactor.rewrite` and `refactor.extract`, so editors that
filter by those (`context.only`) find them."""

_DEFINITIONS: Final[dict[str, dict[str, str]]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "typescript": {
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "method_definition": "method",
        "class_declaration": "class",
        "abstract_class_declaration": "class",
        "interface_declaration": "class",
    },
    "go": {
        "function_declaration": "function",
        "method_declaration": "method",
        "type_declaration": "class",
    },
    "java": {
        "method_declaration": "method",
        "constructor_declaration": "method",
        "class_declaration": "class",
        "interface_declaration": "class",
        "enum_declaration": "class",
        "record_declaration": "class",
    },
    "rust": {
        "function_item": "function",
        "impl_item": "class",
        "struct_item": "class",
        "trait_item": "class",
        "enum_item": "class",
    },
}
"""Per language, the nodes that are functions and classes (the targets without a
selection)."""
_DEFINITIONS["tsx"] = _DEFINITIONS["javascript"] = _DEFINITIONS["typescript"]
_WRAPPERS: Final = frozenset({"decorated_definition", "export_statement"})
"""Nodes around a definition that belong to it (decorators, `export`)."""
TYPED_LANGUAGES: Final = frozenset({"python", "typescript", "tsx"})
"""Languages where type hints are optional, so adding them is a refactoring."""
_DOC_STYLE: Final = {
    "python": "a docstring (PEP 257) as the first statement of each body",
    "typescript": "a JSDoc comment (/** ... */) just above each",
    "tsx": "a JSDoc comment (/** ... */) just above each",
    "javascript": "a JSDoc comment (/** ... */) just above each",
    "go": "a Go doc comment (// Name ...) just above each",
    "java": "a Javadoc comment (/** ... */) just above each",
    "rust": "a rustdoc comment (/// ...) just above each",
}
_FENCE_NAMES: Final = {"tsx": "tsx", "javascript": "javascript", "typescript": "typescript"}
_STRINGS: Final = frozenset(
    {"string", "string_literal", "template_string", "interpreted_string_literal",
     "raw_string_literal", "char_literal", "string_fragment", "concatenated_string"}
)  # fmt: skip
_ANNOTATIONS: Final = frozenset({"type", "type_annotation"})
_ANNOTATION_MARKS: Final = frozenset({":", "->", "?"})
CHATML_STOP: Final = ("<|im_end|>", "<|endoftext|>", "<|im_start|>", "\n```")
CHATML_STOP_IDS: Final = (151643, 151644, 151645)
"""Qwen2.5's <|endoftext|>, <|im_start|>, <|im_end|> (vLLM drops special tokens from the
streamed text, so their ids stop it)."""
_CHAIN: Final = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
MAX_CHAINS: Final = 200
SNIPPET_SHARE: Final = 0.5
"""Of the prompt budget left after the task and the target: the most the definitions
from other files take; the code around the target gets the rest."""


class RefactorError(Exception):
    """Why a refactoring cannot be offered or its answer cannot be used: said to the user."""


@dataclass(frozen=True, slots=True)
class Target:
    """The code a refactoring replaces: whole lines, `start`..`end` (`str` offsets, `end`
    before the last line's newline)."""

    start: int
    end: int
    first_line: int
    last_line: int
    """0-based, inclusive."""
    indent: str
    name: str
    """The function's or class's name; "" for selected lines."""
    what: str
    """"function", "method", "class" or "lines"."""
    selected: tuple[int, int] | None = None
    """For an extraction: the selected lines (0-based, inclusive) inside the target."""

    @property
    def label(self) -> str:
        return f"`{self.name}`" if self.name else "the selected lines"

    @property
    def lines(self) -> int:
        return self.last_line - self.first_line + 1


@dataclass(frozen=True, slots=True)
class Offer:
    kind: RefactorKind
    title: str
    target: Target
    disabled: str | None = None
    """Why it cannot run (the target is too long); None when it can."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """The validated edit: `text` replaces `start`..`end` of the document."""

    start: int
    end: int
    text: str


# --- targets ----------------------------------------------------------------------------------


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _lines_target(text: str, start: int, end: int, what: str = "lines", name: str = "") -> Target:
    """Whole lines from the one holding `start` to the one holding `end` (a selection that
    ends at a line's start leaves that line out)."""
    first = _line_start(text, start)
    if end > start and end > 0 and text[end - 1] == "\n":
        end -= 1
    last = _line_end(text, max(end, first))
    first_line = text.count("\n", 0, first)
    last_line = first_line + text.count("\n", first, last)
    indent = _indent_of(text[first:last].split("\n", 1)[0])
    return Target(first, last, first_line, last_line, indent, name, what)


class _Tree:
    """One parse of the document, and offsets converted between `str` and bytes."""

    def __init__(self, text: str, language: str, root: Node | None = None) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.data) == len(text)
        self.root = root if root is not None else parse(self.data, language)

    def byte(self, offset: int) -> int:
        return offset if self.ascii else len(self.text[:offset].encode("utf-8", "surrogatepass"))

    def offset(self, byte: int) -> int:
        return byte if self.ascii else len(self.data[:byte].decode("utf-8", "surrogatepass"))


def _enclosing_definition(
    tree: _Tree, language: str, start: int, end: int, functions_only: bool = False
) -> tuple[Node, str] | None:
    """The innermost function or class around `start`..`end`, with its kind."""
    kinds = _DEFINITIONS.get(language)
    if tree.root is None or kinds is None:
        return None
    node: Node | None = tree.root.descendant_for_byte_range(tree.byte(start), tree.byte(end))
    while node is not None:
        if node.type in _WRAPPERS:
            inner = node.child_by_field_name("definition") or node.child_by_field_name(
                "declaration"
            )
            if inner is not None and inner.type in kinds:
                node = inner
        kind = kinds.get(node.type)
        if kind is not None and not (functions_only and kind == "class"):
            if kind == "function" and language == "python" and _inside_class(node):
                kind = "method"
            return node, kind
        node = node.parent
    return None


def _inside_class(node: Node) -> bool:
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    return (
        parent is not None
        and parent.type == "block"
        and parent.parent is not None
        and (parent.parent.type == "class_definition")
    )


def _definition_target(tree: _Tree, node: Node, kind: str) -> Target:
    """The lines of a definition with what belongs to it: decorators, `export`, and the
    doc comments right above it."""
    outer = node
    while outer.parent is not None and outer.parent.type in _WRAPPERS:
        outer = outer.parent
    first = outer
    sibling = first.prev_named_sibling
    while (
        sibling is not None
        and "comment" in sibling.type
        and sibling.end_point[0] >= first.start_point[0] - 1
    ):
        first = sibling
        sibling = first.prev_named_sibling
    name_node = node.child_by_field_name("name")
    if name_node is None and node.type == "type_declaration" and node.named_children:
        name_node = node.named_children[0].child_by_field_name("name")
    name = name_node.text.decode("utf-8", "replace") if name_node and name_node.text else ""
    start = tree.offset(first.start_byte)
    end = tree.offset(outer.end_byte)
    return _lines_target(tree.text, start, end, kind, name)


def _is_line_selection(text: str, start: int, end: int) -> bool:
    """Whether `start`..`end` selects lines (more than one, or one whole line), rather
    than a word: a word selected on one line stands for the cursor."""
    if end <= start:
        return False
    if "\n" in text[start:end].rstrip("\n") or text[start:end].endswith("\n"):
        return True
    before = text[_line_start(text, start) : start]
    after = text[end : _line_end(text, end)]
    return not before.strip() and not after.strip()


def offers(
    text: str,
    language: str | None,
    start: int,
    end: int,
    max_lines: int,
    root: Node | None = None,
) -> list[Offer]:
    """The refactorings for a selection `start`..`end` (`str` offsets; equal for a bare
    cursor), without calling the model. A selection within one line counts as a cursor.
    `root` is the text's parse, when the caller keeps one (`server.completion.trees`)."""
    if language is None or language not in _DEFINITIONS:
        return []
    tree = _Tree(text, language, root)
    if tree.root is None:
        return []
    selection = _is_line_selection(text, start, end)
    found = _enclosing_definition(tree, language, start, end)
    around = _definition_target(tree, *found) if found is not None else None
    target = _lines_target(text, start, end) if selection else around
    out: list[Offer] = []

    def offer(kind: RefactorKind, title: str, on: Target) -> None:
        too_long = (
            f"{on.lines} lines is more than refactor.maxLines ({max_lines})"
            if on.lines > max_lines
            else None
        )
        out.append(Offer(kind, f"Headstart: {title}", on, too_long))

    if target is not None:
        doc = "docstrings" if target.what in ("lines", "class") else "a docstring"
        offer(RefactorKind.DOCSTRING, f"add {doc} to {target.label}", target)
        if language in TYPED_LANGUAGES and target.what != "class":
            offer(RefactorKind.TYPE_HINTS, f"add type hints to {target.label}", target)
    if selection:
        lines = _lines_target(text, start, end)
        holder = _enclosing_definition(tree, language, lines.start, lines.end, functions_only=True)
        whole = _definition_target(tree, *holder) if holder is not None else lines
        extract = replace(whole, selected=(lines.first_line, lines.last_line))
        offer(RefactorKind.EXTRACT, "extract the selected lines into a function", extract)
    if target is not None:
        offer(RefactorKind.REWRITE, f"rewrite {target.label} with an instruction…", target)
    return out


def target_for(
    text: str,
    language: str | None,
    kind: RefactorKind,
    start: int,
    end: int,
    root: Node | None = None,
) -> Target | None:
    """The target the offer of `kind` at `start`..`end` had (found again at resolve)."""
    for offer in offers(text, language, start, end, max_lines=1 << 30, root=root):
        if offer.kind == kind:
            return offer.target
    return None


# --- the prompt -------------------------------------------------------------------------------


def gather_snippets(
    builder: ContextBuilder,
    file_path: str,
    text: str,
    target: Target,
    language: str | None,
    cap: int,
    count: Count,
) -> list[tuple[str, str]]:
    """Definitions from other project files that the target uses, best first within
    `cap` tokens, as (path, text): every dotted name of the target resolved the way
    completion resolves the name at a cursor (imports, re-exports, local types, bases),
    then what completion's context would offer at the end of the target. The builder's
    memory of what completions chose is not touched."""
    if builder.index is None or cap <= 0:
        return []
    cursor = analyse(text, target.end, language)
    snippets: dict[tuple[str, str], Snippet] = {}
    body = text[target.start : target.end]
    chains = list(dict.fromkeys(tuple(m.group().split(".")) for m in _CHAIN.finditer(body)))
    for rank, chain in enumerate(chains[:MAX_CHAINS]):
        found = builder.resolve(file_path, text, cursor, chain)
        if found is None or found.path == file_path:
            continue
        name = found.definition.qualified_name if found.definition is not None else ""
        if (found.path, name) in snippets:
            continue
        rendered = builder.render(found.path, found.definition)
        if rendered is not None and rendered.text.strip():
            snippets[(found.path, name)] = Snippet(
                found.path, rendered.text, rendered.start_line, 1000.0 - rank, name,
                rendered.language,
            )  # fmt: skip
    for snippet in builder.candidates(file_path, text, cursor, limit=24):
        snippets.setdefault((snippet.path, snippet.name), snippet)
    budget = Budget(total=cap, suffix_share=0.0, cross_file_share=1.0, prefix_step_lines=1)
    context = build_context("", "", snippets.values(), budget, count)
    ranked = sorted(context.snippets, key=lambda s: -s.score)
    return [(snippet.path, mask_secrets(snippet.text, snippet.path)) for snippet in ranked]


def _task(
    kind: RefactorKind, target: Target, language: str, instruction: str, text: str
) -> list[str]:
    what = target.label
    if kind is RefactorKind.DOCSTRING:
        return [
            f"Add documentation to {what}: {_DOC_STYLE.get(language, 'a doc comment')}, "
            "for the functions and classes in it that have none. Say briefly what each is "
            "for and what it returns or raises, as the code shows it.",
            "Change nothing else: every line of code must stay exactly as it is.",
        ]
    if kind is RefactorKind.TYPE_HINTS:
        return [
            f"Add type hints to {what}: to every parameter and return value that has none, "
            "using types the file imports or defines, the definitions shown above, or "
            "builtins.",
            "Change nothing else: not the names, not the logic, not the formatting.",
        ]
    if kind is RefactorKind.EXTRACT:
        assert target.selected is not None
        lines = text[target.start : target.end].split("\n")
        first, last = (line - target.first_line for line in target.selected)
        selected = TEMPLATES["qwen"].defuse("\n".join(lines[first : last + 1]))
        where = "it" if not target.name else f"`{target.name}`"
        return [
            "Extract these lines of the code to change into a new function with a "
            f"descriptive name:\n```\n{selected}\n```\n  Give it parameters for the values "
            "those lines read and a return value for what the code after them uses; "
            "replace the lines with a call to it.",
            f"Answer with the new function placed just before {where}, then the rewritten "
            f"{where}, both at the same indentation as {where}.",
        ]
    return [f"Rewrite the code to change as follows: {instruction.strip()}"]


def build_prompt(
    kind: RefactorKind,
    target: Target,
    text: str,
    language: str,
    file_path: str,
    repo_name: str,
    snippets: Sequence[tuple[str, str]],
    instruction: str = "",
    *,
    budget: int,
    count: Count,
) -> str:
    """The chat prompt, fitted into `budget` tokens: the task and the target whole, then
    the definitions (`snippets`, best first, as many as fit within half of what is left),
    then the code around the target (two thirds above, one third below)."""
    clean = TEMPLATES["qwen"].defuse
    fence_language = _FENCE_NAMES.get(language, language)
    code = clean(mask_piece(text[target.start : target.end], text, file_path))
    indent = f"{len(target.indent)} spaces" if target.indent.strip(" ") == "" else "its tabs"
    if not target.indent:
        indent = "no indentation"
    rules = [
        *_task(kind, target, language, instruction, text),
        "Answer with the complete replacement of the code to change, and only it: none of "
        "the code before or after it, no explanation.",
        f"Keep its indentation: its first line starts with {indent}.",
    ]
    head = (
        "<|im_start|>system\nYou are a careful refactoring tool inside a code editor. You "
        "answer with code only, in one fenced code block.<|im_end|>\n<|im_start|>user\n"
        f"Repository: {clean(repo_name)}. File: {clean(file_path)} ({language}).\n\n"
    )
    task = (
        f"Code to change (lines {target.first_line + 1}-{target.last_line + 1} of "
        f"{clean(file_path)}):\n```{fence_language}\n{code}\n```\n\n"
        + "\n".join(f"- {rule}" for rule in rules)
        + f"<|im_end|>\n<|im_start|>assistant\n```{fence_language}\n"
    )
    left = budget - count(head) - count(task)
    if left < 0:
        raise RefactorError(
            f"the code to change takes more than refactor.contextTokens ({budget} tokens)"
        )
    parts = [head]
    used = 0
    cap = int(left * SNIPPET_SHARE)
    shown = []
    for path, snippet in snippets:
        block = f"From {clean(path)}:\n```{fence_language}\n{clean(snippet).rstrip()}\n```\n\n"
        cost = count(block)
        if used + cost > cap:
            continue
        shown.append(block)
        used += cost
    if shown:
        parts.append("Definitions from other files of the project that this code uses:\n\n")
        parts.extend(shown)
    left -= used + 40
    before = mask_piece(text[: target.start], text, file_path)  # before fitting: a cut line
    after = mask_piece(text[target.end :].lstrip("\n"), text, file_path)  # hides no value
    before_text, _ = fit_prefix(clean(before), max(0, left * 2 // 3), count)
    after_text, _ = fit_suffix(clean(after), max(0, left // 3), count)
    if before_text.strip():
        parts.append(
            f"The code just before it (context only, keep it out of the answer):\n"
            f"```{fence_language}\n{before_text.rstrip()}\n```\n\n"
        )
    if after_text.strip():
        parts.append(
            f"The code just after it (context only, keep it out of the answer):\n"
            f"```{fence_language}\n{after_text.rstrip()}\n```\n\n"
        )
    parts.append(task)
    return "".join(parts)


def request_for(prompt: str, max_tokens: int, temperature: float) -> CompletionRequest:
    return CompletionRequest(
        prompt=prompt,
        max_tokens=max_tokens,
        stop=CHATML_STOP,
        stop_token_ids=CHATML_STOP_IDS,
        temperature=temperature,
        priority=Priority.REFACTOR,
    )


async def generate(
    backend: CompletionBackend,
    request: CompletionRequest,
    timeout_s: float,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """The model's whole answer; `progress` gets the characters and lines received so
    far after each chunk. Cancelling the caller closes the stream (and vLLM stops
    generating)."""
    received: list[str] = []
    characters = lines = 0
    stats = StreamStats()
    try:
        async with asyncio.timeout(timeout_s):
            stream = backend.stream(request, stats)
            try:
                async for chunk in stream:
                    received.append(chunk)
                    characters += len(chunk)
                    lines += chunk.count("\n")
                    if progress is not None:
                        progress(characters, lines)
            finally:
                await close_uninterrupted(stream.aclose())
    except BackendError as exc:
        raise RefactorError(f"the model did not answer: {exc}") from None
    except TimeoutError:
        raise RefactorError(
            f"the model took longer than {timeout_s:g} s (refactor.timeoutMs)"
        ) from None
    answer = "".join(received)
    if stats.finish_reason == "length":
        raise RefactorError(
            f"the answer was cut off at refactor.maxTokens ({request.max_tokens} tokens)"
        )
    return answer


# --- the answer -------------------------------------------------------------------------------


def extract_code(answer: str) -> str:
    """The code of the model's answer: inside its fence (the prompt opened one; a model
    that opens another anyway is forgiven), without blank lines around it."""
    lines = answer.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].lstrip().startswith("```"):
        lines.pop(0)
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            lines = lines[:number]
            break
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)


def reindent(code: str, indent: str) -> str:
    """`code` shifted as a whole so that its first line has `indent` (models often answer
    a method at column 0); unchanged when its lines do not all share the first line's."""
    lines = code.split("\n")
    first = next((line for line in lines if line.strip()), "")
    have = _indent_of(first)
    if have == indent or not all(not line.strip() or line.startswith(have) for line in lines):
        return code
    return "\n".join(indent + line[len(have) :] if line.strip() else "" for line in lines)


def _errors(root: Node) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append((node.start_byte, node.end_byte))
        elif node.has_error:
            stack.extend(node.children)
    return found


def _leaves(node: Node, annotations: bool) -> list[str]:
    """The code's tokens: leaves outside strings and comments (and, with `annotations`,
    outside type annotations and their `:`/`->` marks)."""
    out: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.type
        if kind in _STRINGS or "comment" in kind:
            continue
        if annotations and kind in _ANNOTATIONS:
            continue
        if current.child_count == 0:
            text = current.text.decode("utf-8", "replace") if current.text is not None else ""
            if text and not (annotations and text in _ANNOTATION_MARKS):
                out.append(text)
            continue
        stack.extend(reversed(current.children))
    return out


def _within(root: Node, start: int, end: int) -> list[Node]:
    """The top-most named nodes inside the byte span."""
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if node.start_byte >= start and node.end_byte <= end and node is not root:
            out.append(node)
            continue
        stack.extend(reversed(node.named_children))
    return out


def _definition_names(nodes: list[Node], language: str) -> list[str]:
    kinds = _DEFINITIONS.get(language, {})
    names: list[str] = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if node.type in kinds:
            name = node.child_by_field_name("name")
            if name is not None and name.text is not None:
                names.append(name.text.decode("utf-8", "replace"))
        stack.extend(reversed(node.named_children))
    return names


def _spill(code: str, text: str, target: Target) -> str | None:
    """A line of the answer that repeats the code just outside the target, if any."""
    lines = [line.strip() for line in code.split("\n") if line.strip()]
    if not lines:
        return None
    before = [line.strip() for line in text[: target.start].split("\n") if line.strip()]
    after = [line.strip() for line in text[target.end :].split("\n") if line.strip()]
    if before and len(before[-1]) > 3 and lines[0] == before[-1]:
        return before[-1]
    if after and len(after[0]) > 3 and lines[-1] == after[0]:
        return after[0]
    return None


def validate(
    kind: RefactorKind, target: Target, text: str, language: str, answer: str, path: str = ""
) -> Replacement:
    """The edit for the model's `answer`, or RefactorError saying why it cannot be used.
    The model saw the target's secrets masked (`build_prompt`): they are put back, so a
    rewrite keeps the user's own values (`path` names the syntax the masking read)."""
    code = extract_code(answer)
    code = restore_secrets(code, secret_values(text[target.start : target.end], text, path))
    if not code.strip():
        raise RefactorError("the model answered no code")
    code = reindent(code, target.indent)
    old = "\n".join(line.rstrip() for line in text[target.start : target.end].split("\n"))
    if code == old.strip("\n"):
        raise RefactorError(f"the model's answer is {target.label} unchanged: nothing to do")
    for number, line in enumerate(code.split("\n"), 1):
        if line.strip() and not line.startswith(target.indent):
            raise RefactorError(
                f"the model's answer does not keep the indentation of {target.label}: its "
                f"line {number} starts at column {len(_indent_of(line))}, left of column "
                f"{len(target.indent)} where the code is"
            )
    first = next(line for line in code.split("\n") if line.strip())
    if _indent_of(first) != target.indent:
        raise RefactorError(
            f"the model's answer does not keep the indentation of {target.label}: it starts "
            f"at column {len(_indent_of(first))}, not {len(target.indent)}"
        )
    spilled = _spill(code, text, target)
    if spilled is not None:
        raise RefactorError(
            f"the model's answer goes beyond {target.label}: it repeats `{spilled[:60]}` "
            "from the code around it"
        )
    new_text = text[: target.start] + code + text[target.end :]
    before, after = _Tree(text, language), _Tree(new_text, language)
    if before.root is None or after.root is None:
        raise RefactorError(f"cannot parse {language} to check the answer")
    old_span = (before.byte(target.start), before.byte(target.end))
    new_span = (after.byte(target.start), after.byte(target.start + len(code)))
    old_errors = [e for e in _errors(before.root) if not _overlaps(e, old_span)]
    inside = [e for e in _errors(after.root) if _overlaps(e, new_span)]
    if inside:
        row = after.data.count(b"\n", new_span[0], inside[0][0]) + 1
        raise RefactorError(
            f"the model's answer does not parse as {language} (a syntax error at its line {row})"
        )
    outside = [e for e in _errors(after.root) if not _overlaps(e, new_span)]
    if len(outside) > len(old_errors):
        raise RefactorError(
            f"the model's answer breaks the code after {target.label} (an unclosed string "
            "or bracket?)"
        )
    if language == "python":
        misaligned = _misaligned(after, new_span)
        if misaligned is not None:
            row = after.data.count(b"\n", new_span[0], misaligned) + 1
            raise RefactorError(
                f"the model's answer does not keep the indentation of {target.label}: its "
                f"line {row} is not aligned with the statements of its block"
            )
    old_nodes = _within(before.root, *old_span)
    new_nodes = _within(after.root, *new_span)
    _check_kind(kind, target, language, old_nodes, new_nodes)
    return Replacement(target.start, target.end, code)


def _misaligned(tree: _Tree, span: tuple[int, int]) -> int | None:
    """Where a Python statement of the span starts at another column than the other
    statements of its block (tree-sitter accepts a dedent to a level no block opened,
    Python does not): its byte offset, or None."""
    assert tree.root is not None
    checked: set[int] = set()
    for node in _within(tree.root, *span):
        parents = [node.parent] if node.parent is not None else []
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type in ("block", "module"):
                parents.append(current)
            stack.extend(current.named_children)
        for parent in parents:
            if parent.id in checked:
                continue
            checked.add(parent.id)
            columns: set[int] = set()
            for child in parent.named_children:
                if "comment" in child.type or not _starts_line(tree.data, child.start_byte):
                    continue
                columns.add(child.start_point[1])
                if len(columns) > 1 and span[0] <= child.start_byte < span[1]:
                    return child.start_byte
            if len(columns) > 1:
                inside = [c for c in parent.named_children if span[0] <= c.start_byte < span[1]]
                if inside:
                    return inside[0].start_byte
    return None


def _starts_line(data: bytes, offset: int) -> bool:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return not data[line_start:offset].strip()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return (a[0] < b[1] and b[0] < a[1]) or (a[0] == a[1] and b[0] <= a[0] <= b[1])


def _check_kind(
    kind: RefactorKind, target: Target, language: str, old: list[Node], new: list[Node]
) -> None:
    if kind is RefactorKind.DOCSTRING:
        if _flat(old, False) != _flat(new, False):
            raise RefactorError(
                "the model changed the code itself, not only its documentation; nothing applied"
            )
    elif kind is RefactorKind.TYPE_HINTS:
        if _flat(old, True) != _flat(new, True):
            raise RefactorError("the model changed more than the type hints; nothing applied")
    elif kind is RefactorKind.EXTRACT:
        before = _definition_names(old, language)
        after = _definition_names(new, language)
        lost = [name for name in before if name not in after]
        if lost:
            raise RefactorError(f"the model's answer lost `{lost[0]}`; nothing applied")
        if len(after) <= len(before):
            raise RefactorError("the model's answer defines no new function; nothing applied")


def _flat(nodes: list[Node], annotations: bool) -> list[str]:
    return [leaf for node in nodes for leaf in _leaves(node, annotations)]
