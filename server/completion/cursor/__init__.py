"""What the code around the cursor refers to: scopes, names, their types, the imports.

The context builder asks this package one question per keystroke: which names would the
model need to see defined to complete the code here? It answers from a tree-sitter parse
of a *window* of the file (from the nearest top-level line above the cursor, at most
`WINDOW_ABOVE` lines, to a few lines below), never the whole file, so the cost does not
grow with the file: a 2,000-line file costs what a 150-line one does.

- Scopes (the enclosing classes and functions) come from indentation for Python — it is
  right on half-typed code, where the tree is not — and from the tree for the others.
- References are the attribute chains, calls, type names and identifiers of the current
  statement and of the `NAMES_ABOVE` lines above it, nearest first, each with a tier
  that says how directly it bears on the cursor. The chain being typed (`self.repo.` or
  `verify_dir`) and the call whose arguments hold the cursor are read from the text, so
  they are found even when the line does not parse yet.
- Local types: `x = Warehouse()`, `x: Warehouse`, typed parameters, `self.repo = Repo()`
  (the last also anywhere in the file, on demand: `attribute_type`).
- Imports: every import statement of the file, found by a regex and parsed one statement
  at a time with tree-sitter, memoised by the statement's text, so typing elsewhere costs
  a regex scan and dictionary lookups. Aliases are kept (the cache's outlines drop them).

Line or block is `server.completion.stops.analyse_cursor`'s decision, carried along unchanged.
Offsets are `str` indices; tree-sitter's byte offsets stay inside this package.

The modules, each importing only those listed before it:
- `results`: what an analysis returns (`CursorInfo` and its parts).
- `syntax`: the per-language node types, import patterns and skipped words.
- `parsing`: parsers, step-limited and incremental parses, node texts.
- `positions`: counts of newlines and triple quotes in spans of the text.
- `window`: which lines around the cursor are parsed.
- `chains`: the chain being typed and the call around the cursor, read from the text.
- `scopes`: the enclosing classes and functions.
- `attribute_types`: types read from text (`type_chain`, `attribute_type`).
- `walker`: the walk of the window's tree: references and local types.
- `imports`: the file's import statements (`file_imports`).
- `analysis`: `analyse`, which puts them together.

This `__init__` re-exports what the rest of the server imports; the modules import each
other directly.
"""

from server.completion.cursor.analysis import analyse
from server.completion.cursor.attribute_types import (
    attribute_type,
    python_attribute_types,
    type_chain,
)
from server.completion.cursor.chains import chain_before
from server.completion.cursor.imports import file_imports, import_statement_matches
from server.completion.cursor.parsing import parse, parser_for
from server.completion.cursor.results import CALL, Binding, CursorInfo, Imports, Reference, Tier
from server.completion.cursor.window import WINDOW_MAX_CHARS

__all__ = [
    "CALL",
    "WINDOW_MAX_CHARS",
    "Binding",
    "CursorInfo",
    "Imports",
    "Reference",
    "Tier",
    "analyse",
    "attribute_type",
    "chain_before",
    "file_imports",
    "import_statement_matches",
    "parse",
    "parser_for",
    "python_attribute_types",
    "type_chain",
]
