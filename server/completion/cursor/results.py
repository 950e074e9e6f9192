"""What a cursor analysis returns: `CursorInfo` and its parts (scopes, references with their
tiers, import bindings), and `CALL`, the chain part for a call's result.

Apart from the code that finds them, so that each part of the analysis (the walk, the
scopes, the imports) builds them without importing the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from server.completion.stops import CursorShape

CALL: Final = "()"
"""A chain part meaning "the result of calling what precedes": `repo.get(1).save` is
("repo", "get", "()", "save")."""


class Tier:
    """How directly a reference bears on the cursor; higher is more direct."""

    TARGET: Final = 4
    """The object before the dot being completed (`self.repo` in `self.repo.sa|`)."""
    TYPED: Final = 3
    """The name being typed itself, or the function whose call holds the cursor."""
    STATEMENT: Final = 2
    ABOVE: Final = 1


@dataclass(frozen=True, slots=True)
class Scope:
    kind: str
    """"class" or "function"."""
    name: str
    header: str
    """The header's first line, stripped: "class Warehouse(Base):"."""
    line: int
    """0-based line of the header in the file."""


@dataclass(frozen=True, slots=True)
class Reference:
    chain: tuple[str, ...]
    """Dotted parts as written ("self", "repo", "save"); CALL marks a call result."""
    tier: int
    line: int

    @property
    def dotted(self) -> str:
        """As written, roughly: "storage.open_repo().save"."""
        return ".".join(self.chain).replace(f".{CALL}", CALL)


@dataclass(frozen=True, slots=True)
class Binding:
    """What one local name of a file is bound to by an import statement."""

    module: str
    """As written: "pkg.mod", "..models", "./repo", "example.com/m/util", "crate::repo"."""
    name: str | None
    """The name taken from the module ("Warehouse", "C.member"); None: the module itself."""
    line: int


@dataclass(frozen=True, slots=True)
class Imports:
    bindings: Mapping[str, Binding]
    """Local name -> binding; a plain `import a.b` binds the dotted "a.b"."""
    star: tuple[str, ...] = ()
    """Modules whose names are all imported (`from m import *`, `use m::*`)."""


@dataclass(frozen=True, slots=True)
class CursorInfo:
    """Everything the context builder needs to know about one cursor position."""

    language: str | None
    line: int
    """0-based line of the cursor."""
    line_prefix: str
    """The text of the cursor's line before the cursor."""
    in_prose: str
    """"comment" or "string" when the cursor is inside one, else ""."""
    target: tuple[str, ...]
    """The object chain before the dot being completed (`("self", "repo")`), else ()."""
    partial: str
    """The identifier being typed at the cursor ("sa" in `self.repo.sa|`), maybe ""."""
    callee: tuple[str, ...]
    """The function whose argument list holds the cursor, else ()."""
    scopes: tuple[Scope, ...]
    """Enclosing classes and functions, outermost first."""
    references: tuple[Reference, ...]
    """Most direct first, then nearest first; at most MAX_REFERENCES."""
    types: Mapping[str, tuple[str, ...]]
    """Local name ("x", "self.repo") -> the chain of its type ("models", "Warehouse")."""
    imports: Imports
    shape: CursorShape
    window_start_line: int = 0
    """The first line parsed; names above it were not looked at."""
    bases: tuple[tuple[str, ...], ...] = field(default=())
    """Base classes of the innermost enclosing class, as chains (for `self.inherited`)."""

    @property
    def enclosing_class(self) -> Scope | None:
        return next((s for s in reversed(self.scopes) if s.kind == "class"), None)
