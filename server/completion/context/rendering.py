"""How a snippet shows code from another file: a definition whole when short (<=
SHORT_LINES lines), otherwise by its signature and docstring (a class by its header,
docstring and member signatures), a member inside its class's header; a related file
whole when short, otherwise as its outline. A text depends only on the file's version
and the definition shown (`_rendered_key`), so the builder caches it per file digest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from cache.model import Definition, FileRecord
from server.completion.context.definitions import CLASS_KINDS, _FileDefs

SHORT_LINES: Final = 15
"""A definition this short is shown whole; a longer one by its signature and docstring."""
SHORT_CHARS: Final = 1500
SHORT_FILE_LINES: Final = 25
"""A related file this short is shown whole; a longer one by its outline."""
MAX_SKELETON_LINES: Final = 40
MAX_OUTLINE_NAMES: Final = 150
"""A file outline by name lists at most this many top-level names."""
MAX_MEMBERS: Final = 30
DOC_LINES: Final = 6


BRACE_LANGUAGES: Final = frozenset({"typescript", "tsx", "javascript", "java", "rust", "go"})


_PY_DUNDERS_SHOWN: Final = frozenset({"__init__", "__call__", "__enter__", "__exit__", "__iter__"})


@dataclass(slots=True)
class _Rendered:
    text: str
    start_line: int
    language: str | None
    blank: bool
    """Whether the text is all whitespace: asked of every candidate rendered, and a
    snippet's `strip()` copies it."""


def _rendered_key(record: FileRecord, definition: Definition | None) -> tuple[str, str, str]:
    """A rendered snippet's cache key: the file's version and the definition shown."""
    return (record.path, record.digest, definition.qualified_name if definition else "")


def _dedent(lines: list[str]) -> list[str]:
    widths = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(widths) if widths else 0
    return [line[cut:].rstrip() for line in lines]


def _indent(lines: Iterable[str], unit: str = "    ") -> list[str]:
    return [unit + line if line else line for line in lines]


def _source(defs: _FileDefs, definition: Definition, lines: list[str]) -> list[str] | None:
    """A definition's own lines, dedented, when short enough to show whole."""
    start, end = definition.start_line, definition.end_line
    if end - start + 1 > SHORT_LINES or start >= len(lines):
        return None
    body = _dedent(lines[start : end + 1])
    if sum(len(line) + 1 for line in body) > SHORT_CHARS:
        return None
    return body


def _doc_lines(doc: str | None, language: str | None, limit: int = DOC_LINES) -> list[str]:
    if not doc:
        return []
    lines = doc.strip().split("\n")
    clipped = lines[:limit] + (["..."] if len(lines) > limit else [])
    if language == "python":
        if len(clipped) == 1:
            return [f'"""{clipped[0]}"""']
        return ['"""', *clipped, '"""']
    marker = "///" if language == "rust" else "//"
    return [f"{marker} {line}".rstrip() for line in clipped]


def _is_shown_member(definition: Definition, language: str | None) -> bool:
    name = definition.name
    if language == "python" and name.startswith("_"):
        return name in _PY_DUNDERS_SHOWN
    return True


def _member_lines(definition: Definition, language: str | None) -> list[str]:
    """A member by its signature; a Python function's stub body on a line of its own, as
    real code has it (the model copies `-> X: ...` one-liners into the line it completes)."""
    signature = definition.signature
    if language == "python" and definition.kind in ("function", "method"):
        return [signature, "    ..."]
    return [signature]


def _skeleton(
    defs: _FileDefs, definition: Definition, language: str | None, with_doc: bool, member_limit: int
) -> list[str]:
    """A class-like definition as header, docstring and member signatures."""
    members = [
        m for m in defs.members.get(definition.qualified_name, []) if _is_shown_member(m, language)
    ]
    shown = [line for m in members[:member_limit] for line in _member_lines(m, language)]
    if len(members) > member_limit:
        shown.append("..." if language == "python" else "// ...")
    doc = _doc_lines(definition.doc, language) if with_doc else []
    signature = definition.signature
    if language == "python":
        body = [*doc, *shown] or ["..."]
        return [signature, *_indent(body)]
    if language == "go" or "{" in signature:
        return [*doc, signature, *shown]
    if language == "rust" and definition.kind in ("struct", "enum") and shown:
        return [*doc, signature, f"impl {definition.name} {{", *_indent(shown), "}"]
    if not shown:
        return [*doc, signature]
    return [*doc, signature + " {", *_indent(shown), "}"]


def _render_definition(defs: _FileDefs, definition: Definition, lines: list[str]) -> str:
    """A definition as a snippet: whole when short, otherwise its outline; a member inside
    its class's header."""
    language = defs.language
    parent_name = definition.qualified_name.rpartition(".")[0]
    parent = defs.by_name.get(parent_name) if parent_name else None
    source = _source(defs, definition, lines)
    members = defs.members.get(definition.qualified_name, [])
    if source is not None and any(m.start_line > definition.end_line for m in members):
        source = None  # Go and Rust methods live outside the type: show them with it
    if definition.kind in CLASS_KINDS and source is None:
        body = _skeleton(defs, definition, language, with_doc=True, member_limit=MAX_MEMBERS)
    elif source is not None:
        body = source
    else:
        body = [*_doc_lines(definition.doc, language), definition.signature]
        if language == "python":
            body = [definition.signature, *_indent([*_doc_lines(definition.doc, language), "..."])]
        elif language in BRACE_LANGUAGES and definition.kind in ("function", "method"):
            body[-1] += " { ... }"
    if parent is None or parent.kind not in CLASS_KINDS or language == "go":
        return "\n".join(body) + "\n"
    if language == "python":
        wrapped = [parent.signature, *_indent(body)]
    elif language == "rust":
        wrapped = [f"impl {parent.name} {{", *_indent(body), "}"]
    else:
        header = (
            parent.signature
            if "{" not in parent.signature
            else parent.signature.split("{")[0].rstrip()
        )
        wrapped = [header + " {", *_indent(body), "}"]
    return "\n".join(wrapped) + "\n"


def _is_short_file(lines: list[str]) -> bool:
    return len(lines) <= SHORT_FILE_LINES and sum(len(line) + 1 for line in lines) <= SHORT_CHARS


def _render_file(defs: _FileDefs, lines: list[str]) -> str:
    """A related file: whole when short; else its top-level outline with class members,
    or, when that runs past MAX_SKELETON_LINES, one line per top-level name (a module with
    forty classes is better shown whole by name than cut after its first three)."""
    language = defs.language
    if _is_short_file(lines):
        return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"
    shown = [
        d
        for d in defs.members.get("", [])
        if (d.kind not in ("package", "module") or language == "rust")
        and (d.kind != "variable" or _is_shown_member(d, language))
    ]
    out: list[str] = []
    for definition in shown:
        if definition.kind in CLASS_KINDS:
            out.extend(_skeleton(defs, definition, language, with_doc=False, member_limit=12))
        else:
            out.extend(_member_lines(definition, language))
    if len(out) > MAX_SKELETON_LINES:
        out = [line for d in shown[:MAX_OUTLINE_NAMES] for line in _top_level_lines(d, language)]
        if len(shown) > MAX_OUTLINE_NAMES:
            out.append("..." if language == "python" else "// ...")
    return "\n".join(out) + "\n" if out else ""


def _top_level_lines(definition: Definition, language: str | None) -> list[str]:
    """A top-level name alone: a class by its header, without members."""
    if definition.kind in CLASS_KINDS and language == "python":
        return [definition.signature, "    ..."]
    if definition.kind in CLASS_KINDS:
        return [definition.signature.split("{")[0].rstrip()]
    return _member_lines(definition, language)
