"""`analyse`, the cursor analysis: it finds the window, the scopes, the names and local
types of the window's tree and the file's imports, and puts them together into a
`CursorInfo`, with the references read from the text at the cursor.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node, Tree

from server.completion.cursor.chains import _callee, chain_before
from server.completion.cursor.imports import file_imports
from server.completion.cursor.parsing import _parse_window
from server.completion.cursor.positions import _counter, _inside_triple_quotes
from server.completion.cursor.results import CursorInfo, Imports, Reference, Scope, Tier
from server.completion.cursor.scopes import _locate, _python_bases, _python_scopes
from server.completion.cursor.syntax import _STRING_KINDS, _SYNTAX
from server.completion.cursor.walker import _Walker
from server.completion.cursor.window import (
    NAMES_ABOVE,
    _after_open_string,
    _capped_window,
    _line_start_above,
    _window_start,
)
from server.completion.stops import analyse_cursor

MAX_REFERENCES: Final = 40
WINDOW_PARSE_STEPS: Final = 40
"""A window parse that takes more steps (`parse`) is given up for a smaller one: about
2 ms at 0.05 ms a step; of 8,600 windows on /tmp/bigws 11 took more, and those within it
took at most 2.4 ms."""


# --- the analysis -----------------------------------------------------------------------------


def analyse(
    text: str, offset: int, language: str | None, *, names: bool = True, tree: Tree | None = None
) -> CursorInfo:
    """Analyse the cursor at `offset` (a `str` index into `text`) of a file in `language`.

    Without `names`, the names referenced around the cursor (`references`, `callee`) are
    not collected: resolving one name (`ContextBuilder.resolve`, a hover) reads only the
    local types, imports, scopes and bases, which come out the same.

    `tree`, the whole file's tree of exactly `text` where the caller holds one, is read
    instead of parsing the cursor's window: the same lines are walked, with nothing to
    parse (a window of 100 lines costs up to 1.5 ms at a new place)."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_prefix = text[line_start:offset]
    counter = _counter(text)
    row = counter.newlines(0, line_start)
    shape = analyse_cursor(text[:offset], _suffix_head(text, offset))
    target, partial, after_dot = chain_before(text, offset, language)
    callee = _callee(text, offset - len(partial), language) if names else ()
    syntax = _SYNTAX.get(language) if language else None
    imports = file_imports(text, language, offset) if syntax is not None else Imports({})
    if syntax is None or language is None:
        references = _typed_references(target, partial, after_dot, callee, row, "")
        return CursorInfo(
            language, row, line_prefix, "", target if after_dot else (), partial, callee,
            (), tuple(references.values()), {}, imports, shape, row,
        )  # fmt: skip

    scopes: list[Scope] = []
    bases: tuple[tuple[str, ...], ...] = ()
    if language == "python":
        # Indentation gives the scopes, and the window starts at the innermost `def`:
        # its parameters and assignments are the local types; a class body's are found
        # on demand (`attribute_type`).
        whole = tree.root_node if tree is not None else None
        scopes, function_at = _python_scopes(text, line_start, line_prefix, row, whole)
        bases = _python_bases(scopes)
        window_start = (
            function_at if function_at is not None else _window_start(text, line_start, language)
        )
    else:
        window_start = _window_start(text, line_start, language)
    in_docstring = False
    if language == "python":  # the quotes above the window are counted once (200 KB: 0.4 ms)
        above = counter.triple_quotes(0, window_start)
        window = counter.triple_quotes(window_start, offset)
        in_docstring = any((a + b) % 2 for a, b in zip(above, window, strict=True))
        if in_docstring:
            window_start = line_start  # no names to read, little to parse
        elif window_start < line_start:
            window_start = _after_open_string(text, window_start, line_start, above)
    window_start, window_end = _capped_window(text, window_start, line_start, offset)
    window_row = row - counter.newlines(window_start, line_start)
    window_source: bytes | None = None  # the bytes of a window parse, which `_bytes_of` reads
    if tree is not None:  # rows are the file's: the window's first row bounds the walk
        root: Node | None = tree.root_node
        floor, origin = window_row, 0
    elif in_docstring:  # its words are no names, and the line is all there is to parse
        root = None
        floor, origin = 0, window_row
    else:
        source = text[window_start:window_end].encode("utf-8", "surrogatepass")
        root = _parse_window(source, language, WINDOW_PARSE_STEPS)
        if root is None and window_row < row - NAMES_ABOVE:  # too slow: the nearest lines only
            window_start = _line_start_above(text, line_start, NAMES_ABOVE)
            window_row = row - counter.newlines(window_start, line_start)
            source = text[window_start:window_end].encode("utf-8", "surrogatepass")
            root = _parse_window(source, language, WINDOW_PARSE_STEPS)
        floor, origin = 0, window_row
        window_source = source
    walker = _Walker(
        syntax, row - origin, row - origin - NAMES_ABOVE, record=names, source=window_source
    )
    prose = "string" if in_docstring else ""
    if root is not None:
        cursor_point = (row - origin, len(line_prefix.encode("utf-8", "surrogatepass")))
        prose = _prose_at(root, (cursor_point[0], max(0, cursor_point[1] - 1)))
        if not prose and language == "python" and _inside_triple_quotes(text, window_start, offset):
            prose = "string"  # an unterminated docstring parses as an error
        statement_row, tree_scopes, scope_nodes = _locate(root, cursor_point, syntax, window_source)
        walker.statement_row = statement_row
        walker.types_from = max(floor, scope_nodes[-1].start_point[0] if scope_nodes else 0)
        walker.walk(root)
        if language != "python":
            scopes = [
                Scope(k, n, h, line + origin) for k, n, h, line in tree_scopes if line >= floor
            ]
    references = _typed_references(target, partial, after_dot, callee, row, prose) if names else {}
    typing = (*target, partial) if after_dot else (partial,)
    for tier, found_row, _column, chain in walker.found():
        line = found_row + origin
        if partial and line == row and chain[: len(typing)] == typing:
            continue  # the half-typed name: what it resolves to changes with every key
        if len(references) >= MAX_REFERENCES:
            break
        if chain not in references:
            references[chain] = Reference(chain, tier, line)
    return CursorInfo(
        language=language,
        line=row,
        line_prefix=line_prefix,
        in_prose=prose,
        target=target if after_dot and not prose else (),
        partial=partial,
        callee=callee,
        scopes=tuple(scopes),
        references=tuple(references.values()),
        types=walker.types,
        imports=imports,
        shape=shape,
        window_start_line=window_row,
        bases=bases,
    )


def _typed_references(
    target: tuple[str, ...],
    partial: str,
    after_dot: bool,
    callee: tuple[str, ...],
    row: int,
    prose: str,
) -> dict[tuple[str, ...], Reference]:
    """The references read from the text at the cursor: the object before the dot, or
    the name being typed; and the function being called. Words typed in a comment or a
    string are prose, not names (a call around a string still counts)."""
    references: dict[tuple[str, ...], Reference] = {}
    if not prose:
        if after_dot and target:
            references[target] = Reference(target, Tier.TARGET, row)
        elif partial:
            references[(partial,)] = Reference((partial,), Tier.TYPED, row)
    if callee and prose != "comment" and callee not in references:
        references[callee] = Reference(callee, Tier.TYPED, row)
    return references


def _prose_at(root: Node, point: tuple[int, int]) -> str:
    """ "comment" or "string" when `point` is inside one, else ""."""
    node: Node | None = root.descendant_for_point_range(point, point)
    for _ in range(4):
        if node is None:
            break
        kind = node.type
        if "comment" in kind:
            return "comment"
        if kind in _STRING_KINDS:
            return "string"
        node = node.parent
    return ""


def _suffix_head(text: str, offset: int) -> str:
    """Enough of the suffix for `analyse_cursor`: the rest of the line and a few more."""
    end = offset
    for _ in range(8):
        newline = text.find("\n", end)
        if newline < 0:
            return text[offset:]
        end = newline + 1
    return text[offset:end]
