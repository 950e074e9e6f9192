"""From module paths to project files: the helpers `_Request.module_files` matches an
import with (a path's stem less its extension; a Python module's file, relative or
absolute; a TypeScript or JavaScript stem's file) and the extensions they know. They
read paths and the index's records only; the most asked are memoised here with
`functools.lru_cache`."""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping
from typing import Final

_PY_EXTENSIONS: Final = (".py", ".pyi")
_TS_EXTENSIONS: Final = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


_SAME_PACKAGE: Final = {"go": ".go", "java": ".java", "rust": ".rs"}


@functools.lru_cache(maxsize=1 << 16)
def _stem(path: str) -> str:
    """`path` less its source extension and a trailing `/index` or `/__init__`; memoised:
    matching a module against a file's dependencies asks it of each of them, and a star
    re-export chain (networkx's packages) asks it thousands of times in one build."""
    for extension in (".d.ts", *_TS_EXTENSIONS, *_PY_EXTENSIONS, ".rs", ".go", ".java"):
        if path.endswith(extension):
            path = path[: -len(extension)]
            break
    return path.removesuffix("/index").removesuffix("/__init__")


def _python_module_files(
    module: str, from_path: str, records: Mapping[str, object], deps: frozenset[str]
) -> list[str]:
    if module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(from_path)
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rest = module[dots:].replace(".", "/")
        return _python_file(posixpath.join(base, rest) if rest else base, records)
    tail = module.replace(".", "/")
    dep = _python_deps_by_tail(deps).get(tail)
    if dep is not None:
        return [dep]
    directory = posixpath.dirname(from_path)
    while True:  # the source root is an ancestor of the importing file, most often
        found = _python_file(posixpath.join(directory, tail) if directory else tail, records)
        if found:
            return found
        if not directory:
            break
        directory = posixpath.dirname(directory)
    for root in ("src", "lib"):
        found = _python_file(f"{root}/{tail}", records)
        if found:
            return found
    return []


@functools.lru_cache(maxsize=256)
def _python_deps_by_tail(deps: frozenset[str]) -> Mapping[str, str]:
    """The Python files of `deps` by every tail of their module path (`a/b/c`, `b/c`,
    `c` for `a/b/c.py`), the first in sorted order for each: an absolute import's file
    at one lookup. A file of a star re-export chain searched its hundred dependencies for
    every module it asked about (30-70 ms in one networkx build)."""
    by_tail: dict[str, str] = {}
    for dep in sorted(deps):
        if dep.endswith(_PY_EXTENSIONS):
            stem = _stem(dep)
            by_tail.setdefault(stem, dep)
            slash = stem.find("/")
            while slash >= 0:
                by_tail.setdefault(stem[slash + 1 :], dep)
                slash = stem.find("/", slash + 1)
    return by_tail


def _python_file(stem: str, records: Mapping[str, object]) -> list[str]:
    stem = stem.strip("/")
    candidates = (f"{stem}.py", f"{stem}.pyi", f"{stem}/__init__.py") if stem else ("__init__.py",)
    return [c for c in candidates if c in records][:1]


def _ts_files(stem: str, records: Mapping[str, object]) -> list[str]:
    stem = stem.lstrip("/")
    if stem in records:
        return [stem]
    base = re.sub(r"\.(js|jsx|mjs|cjs)$", "", stem)
    for candidate in [base + ext for ext in _TS_EXTENSIONS] + [
        f"{base}/index{ext}" for ext in _TS_EXTENSIONS
    ]:
        if candidate in records:
            return [candidate]
    return []
