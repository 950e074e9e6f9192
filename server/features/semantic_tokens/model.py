"""What every language's semantic-token classifier produces and reads: tokens, and the
project's answer about imported names.

Kept apart from `project` (which fills in the project's answer) and the classifiers (one
module per language) so that each language's classifier can use these without importing
the others.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

CROSS_FILE: Final = "crossFile"
"""The custom modifier of names defined in another file of the project."""
CONSTANT: Final = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
"""How constants are spelled (`TAX_RATE`), in every language we classify."""


@dataclass(frozen=True, slots=True)
class Token:
    """One classified name: 0-based line, byte column and byte length in that line."""

    line: int
    column: int
    length: int
    kind: str
    modifiers: frozenset[str] = frozenset()


@dataclass(slots=True)
class Binding:
    """What a name is bound to in a scope: its token kind and modifiers."""

    kind: str
    modifiers: frozenset[str]


@dataclass(frozen=True, slots=True)
class ProjectName:
    kind: str
    """One of the legend's token types."""
    cross_file: bool
    readonly: bool = False
    members: Mapping[str, ProjectName] | None = None
    """For a module (or a class) of the project: its top-level names (its members)."""


@dataclass(frozen=True, slots=True)
class ProjectNames:
    """The file's imported names, resolved through the project cache (local name -> what
    it is). Names absent here are not from the project."""

    names: Mapping[str, ProjectName] = field(default_factory=dict)


def guess_imported(name: str) -> str:
    """What a name imported from outside the project probably is, by its spelling."""
    if CONSTANT.match(name) and len(name) > 1:
        return "variable"
    if name[:1].isupper():
        return "class"
    return "function"


def sorted_unique(tokens: list[Token]) -> list[Token]:
    """Tokens by position, one per position (the first classified wins)."""
    tokens.sort(key=lambda t: (t.line, t.column))
    out: list[Token] = []
    for token in tokens:
        if not out or (out[-1].line, out[-1].column) != (token.line, token.column):
            out.append(token)
    return out
