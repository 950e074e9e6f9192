"""Identifiers from the free text of a contract (operationIds, parameter and schema names).

One place decides how `api-version`, `$filter` or `2fa.Status` become snake_case or
PascalCase names, so the Python and Go templates agree and the output is stable.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z0-9]+|[A-Z]+|[0-9]+")


def words(text: str) -> list[str]:
    """The words of a name, split at case changes and punctuation: 'getHTTPStatus_v2'."""
    ascii_only = re.sub(r"[^A-Za-z0-9]+", " ", text)
    return [w for part in ascii_only.split() for w in _WORD.findall(part)]


def snake(text: str, fallback: str = "value") -> str:
    """A Python identifier in snake_case: never a keyword, never starting with a digit."""
    name = "_".join(w.lower() for w in words(text)) or fallback
    if name[0].isdigit():
        name = f"{fallback}_{name}"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


def pascal(text: str, fallback: str = "Value") -> str:
    """An exported Go (or Python class) name: PascalCase, never starting with a digit."""
    name = "".join(w[:1].upper() + w[1:] for w in words(text)) or fallback
    if name[0].isdigit():
        name = f"{fallback}{name}"
    return name


def camel(text: str, fallback: str = "value") -> str:
    """An unexported Go name: camelCase, never a Go keyword."""
    name = pascal(text, fallback.capitalize())
    name = name[0].lower() + name[1:]
    return name + "_" if name in GO_KEYWORDS else name


GO_KEYWORDS = frozenset(
    {
        "break", "case", "chan", "const", "continue", "default", "defer", "else",
        "fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map",
        "package", "range", "return", "select", "struct", "switch", "type", "var",
    }
)  # fmt: skip


class UniqueNames:
    """Hands out names that do not clash with each other or with the reserved ones."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = set(reserved)

    def claim(self, name: str, separator: str = "_") -> str:
        candidate, n = name, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{name}{separator}{n}"
        self._taken.add(candidate)
        return candidate


def comment_text(text: object, limit: int = 200) -> str:
    """One line of a summary, safe inside a docstring or a // comment."""
    line = " ".join(str(text or "").split())
    line = line.replace("\\", "/").replace('"', "'").replace("*/", "* /")
    return line[:limit].rstrip()
