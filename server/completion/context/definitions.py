"""A file's definitions as the builder reads them: its outline arranged for lookups
(`_FileDefs`: by qualified name, by parent, and the imports that bring each name in),
which kinds of definition are classes, and what a signature says of the types it leads
to (a function's return type, a class's bases, a variable's type): what name resolution
follows and what rendering lays out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from cache.model import Definition, ImportRef
from server.completion.cursor import CALL, type_chain

CLASS_KINDS: Final = frozenset(
    {"class", "struct", "interface", "trait", "enum", "record", "type", "impl", "object"}
)


_ALIASED, _NAMED, _MODULE = range(3)
"""How an import brings a name in: `b as name`, `from m import name`, `import name.x`."""


@dataclass(slots=True)
class _FileDefs:
    """One file's outline arranged for lookups."""

    language: str | None
    by_name: dict[str, Definition]
    members: dict[str, list[Definition]]
    """Parent qualified name ("" for top level) -> its direct members, in file order."""
    imports: tuple[ImportRef, ...]
    importing: dict[str, list[tuple[int, ImportRef, str]]] = field(default_factory=dict)
    """Name -> the imports that bring it in, in file order, each with how (`_ALIASED`,
    `_NAMED`, `_MODULE`) and, aliased, the name in its module: a re-export lookup reads
    these instead of every import of the file (a package's `__init__` has hundreds)."""
    stars: tuple[ImportRef, ...] = ()
    """The star imports, in file order."""

    def __post_init__(self) -> None:
        python = self.language == "python"
        for ref in self.imports:
            seen: set[str] = set()
            for local, original in ref.aliases:  # the first alias of a name wins
                if local not in seen:
                    seen.add(local)
                    self.importing.setdefault(local, []).append((_ALIASED, ref, original))
            for name in ref.names:
                if name not in seen:
                    seen.add(name)
                    self.importing.setdefault(name, []).append((_NAMED, ref, ""))
            head = ref.module.split(".")[0]
            if not ref.names and python and head not in seen:
                self.importing.setdefault(head, []).append((_MODULE, ref, ""))
        self.stars = tuple(ref for ref in self.imports if "*" in ref.names)


def _return_type(definition: Definition, language: str | None) -> tuple[str, ...]:
    """The type a function's signature says it returns, as a chain."""
    signature = definition.signature
    if language in ("python", "rust"):
        arrow = signature.rfind("->")
        return type_chain(signature[arrow + 2 :].rstrip(":{ ")) if arrow >= 0 else ()
    if language in ("typescript", "tsx", "javascript"):
        close = signature.rfind(")")
        rest = signature[close + 1 :].strip() if close >= 0 else ""
        return type_chain(rest[1:]) if rest.startswith(":") else ()
    if language == "go":
        match = re.search(
            rf"\b{re.escape(definition.name)}\s*(?:\[[^\]]*\])?\([^)]*\)\s*(.*)$", signature
        )
        return type_chain(match.group(1)) if match else ()
    if language == "java":
        before = signature.split(definition.name + "(", 1)[0].split()
        return type_chain(before[-1]) if before else ()
    return ()


def _bases(cls: Definition, language: str | None) -> list[tuple[str, ...]]:
    """The base classes a class header names, as chains."""
    signature = cls.signature
    if language == "python":
        opened = signature.find("(")
        inside = signature[opened + 1 : signature.rfind(")")] if opened >= 0 else ""
        parts = [p.strip() for p in inside.split(",")]
        return [tuple(p.split(".")) for p in parts if re.fullmatch(r"[A-Za-z_][\w.]*", p)]
    if language in ("typescript", "tsx", "javascript", "java"):
        return [
            tuple(m.split(".")) for m in re.findall(r"\bextends\s+([A-Za-z_$][\w$.]*)", signature)
        ]
    return []


def _variable_type(definition: Definition, language: str | None) -> tuple[str, ...]:
    """The type of a module- or class-level variable, from `x: T = ...` or `x = T(...)`."""
    signature = definition.signature
    name = re.escape(definition.name)
    if language == "python":
        annotated = re.match(rf"\s*{name}\s*:\s*([^=]+)", signature)
        if annotated:
            return type_chain(annotated.group(1))
        constructed = re.match(rf"\s*{name}\s*=\s*([A-Za-z_][\w.]*)\s*\(", signature)
        return (*constructed.group(1).split("."), CALL) if constructed else ()
    if language in ("typescript", "tsx", "javascript"):
        annotated = re.search(rf"\b{name}\s*[?!]?:\s*([^=;]+)", signature)
        if annotated:
            return type_chain(annotated.group(1))
        constructed = re.search(rf"\b{name}\s*=\s*new\s+([A-Za-z_$][\w$.]*)", signature)
        return tuple(constructed.group(1).split(".")) if constructed else ()
    return ()
