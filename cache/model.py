"""The records the project cache keeps per file, plain and picklable for the store."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition in a file: what a prompt needs to use it without its body."""

    kind: str
    """"class", "function", "method", "variable", "interface", "type", "module", ..."""
    name: str
    qualified_name: str
    """Dotted within the file: "Warehouse.add"."""
    signature: str
    """The header up to the body, e.g. "def add(self, item: Item) -> None:"."""
    doc: str | None
    """Docstring, or the comment just above the definition."""
    start_line: int
    end_line: int
    """0-based, inclusive."""


@dataclass(frozen=True, slots=True)
class ImportRef:
    """One import statement's target, as written (resolution to files is separate)."""

    module: str
    """"inventory.models", "..models" (relative, dots kept), "./util" (JS/TS), "fmt" (Go)."""
    names: tuple[str, ...] = ()
    """Names taken from it ("Item", "Warehouse"); () for a plain `import x`."""
    line: int = 0
    aliases: tuple[tuple[str, str], ...] = ()
    """(name here, name there) for each name imported under another (Python's `b as c`:
    ("c", "b")): a package's `__init__` re-exports names so."""


@dataclass(frozen=True, slots=True)
class Outline:
    language: str
    definitions: tuple[Definition, ...] = ()
    imports: tuple[ImportRef, ...] = ()


ImportSpec = tuple[str, tuple[str, ...]]
"""One import as resolution reads it: (`ImportRef.module`, `ImportRef.names`)."""


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the cache knows about one file of the workspace.

    Small on purpose: the index holds one per file. The outline (definitions) is kept apart
    and loaded on demand through `ProjectIndex.outline`.
    """

    path: str
    """Relative to its workspace root, with forward slashes."""
    language: str | None
    size: int
    mtime_ns: int
    digest: str
    """xxh3-64 of the contents, hex."""
    outline: Outline | None = None
    """Not kept in the index's records (None there): ask `ProjectIndex.outline`."""
    depends_on: tuple[str, ...] = field(default=())
    """Paths (as `path`) of the project files this file imports."""
    imports: tuple[ImportSpec, ...] = ()
    """What the file imports, for the languages whose imports resolve to files (Rust's
    `mod name;` declarations as `self::name`)."""
    package: str = ""
    """The package a Java file declares; "" for every other file."""
    secrets: tuple[tuple[int, int, int], ...] = ()
    """(line, start column, end column) of each credential in the file (`cache.secrets`),
    found once when this version (`digest`) was indexed: prompts show it masked."""
