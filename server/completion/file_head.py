"""The import statements of the part of a file that its prompt no longer shows.

When a long file's prefix is cut to fit the budget, its imports are the first thing
lost, and with them what the model most needs to know about the names it may use next:
which ones are in scope, and where they come from. The context builder shows them again
(`server.completion.context`), taken from the part of the file the prefix no longer holds.

The statements are found as `server.completion.cursor.file_imports` finds them (one pattern per
language, tried only at lines holding an import keyword, so a file that does not parse
costs the same); Python ones inside a docstring (examples) are skipped. Indented imports
(under `if TYPE_CHECKING:`, `try:`) are kept, dedented: the list says what is imported,
not under which condition.
"""

from __future__ import annotations

from server.completion.cursor import import_statement_matches


def import_statements(text: str, language: str | None) -> list[str]:
    """`text`'s import statements, in order, each whole and dedented; exact repeats
    dropped. [] for a language whose imports are not read."""
    statements: dict[str, None] = {}
    counted, double, single = 0, 0, 0
    for match in import_statement_matches(text, language):
        if language == "python":  # the parity of the triple quotes above: in a string?
            double += text.count('"""', counted, match.start())
            single += text.count("'''", counted, match.start())
            counted = match.start()
            if double % 2 or single % 2:
                continue
        statement = match.group().rstrip()
        statements.setdefault(_dedented(statement, len(statement) - len(statement.lstrip())))
    return list(statements)


def _dedented(statement: str, indent: int) -> str:
    if not indent:
        return statement
    return "\n".join(
        line[indent:] if line[:indent].isspace() else line.lstrip()
        for line in statement.split("\n")
    )
