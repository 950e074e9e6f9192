"""Resolve import statements to files of the project.

Each language finds its imports in its own way: Python by module name under source roots
(with relative imports and `__init__` re-exports), TypeScript/JavaScript by relative path
(with index files and tsconfig `paths`), Go by package directory under the go.mod module
path, Java by package, Rust by `mod`/`use` within a crate. Imports of anything outside the
project (the standard library, dependencies) resolve to nothing.

The resolver reads the index's records (their `imports` and `package`) and keeps its own
tables (modules, packages, directories) in step with them one file at a time, so that an
edit re-resolves one file, and a new or deleted file only the files whose imports mention
its name (`ImportResolver.file_added` and friends say which).
"""

from __future__ import annotations

import bisect
import json
import logging
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from pathlib import Path

from cache.model import FileRecord, ImportRef, ImportSpec, Outline

log = logging.getLogger(__name__)

TS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
PY_EXTENSIONS = (".py", ".pyi")
READS_CONFIG = ("go.mod", "tsconfig.json", "jsconfig.json", "Cargo.toml")
"""Files whose contents change how imports resolve."""
RESOLVED_LANGUAGES = frozenset({"python", "typescript", "tsx", "javascript", "go", "java", "rust"})
_TS_LANGUAGES = frozenset({"typescript", "tsx", "javascript"})
_SOURCE_SUFFIXES = (".d.ts", *TS_EXTENSIONS, *PY_EXTENSIONS, ".go", ".java", ".rs")

Everything = None
"""What `file_added` and friends return when every file must be resolved again."""


def import_facts(
    language: str | None, outline: Outline | None
) -> tuple[tuple[ImportSpec, ...], str]:
    """What resolution reads from a tree-sitter outline: the imports (Rust's `mod name;`
    declarations among them, as `self::name`) and a Java file's package. Python's imports
    come from `cache.python_imports` instead, without a parse."""
    if outline is None or language not in RESOLVED_LANGUAGES:
        return (), ""
    imports = tuple((ref.module, ref.names) for ref in outline.imports)
    package = ""
    if language == "rust":
        imports += tuple(
            (f"self::{d.name}", ())
            for d in outline.definitions
            if d.kind == "module" and d.signature.endswith(";")
        )
    elif language == "java":
        package = next((d.name for d in outline.definitions if d.kind == "package"), "")
    return imports, package


class ImportResolver:
    """Maps a file's imports to project files, given every file of one workspace root.

    `records` is read live (the index's own dict); after the index adds, replaces or
    deletes a record it tells the resolver with `file_added`, `file_changed` or
    `file_removed`, which return the other files to resolve again (or `Everything`).
    """

    def __init__(
        self, records: Mapping[str, FileRecord], read_text: Callable[[str], str | None]
    ) -> None:
        self.records = records
        self._read_text = read_text
        self._tokens: dict[str, set[str]] | None = None
        """Token (a name an import mentions) -> files: built when first needed."""
        self._build()

    def _build(self) -> None:
        """Every table, from the records: at the start, and when config files or Python's
        source roots change."""
        self._go_module, self._go_root = self._go_module_path()
        self._ts_base, self._ts_paths = self._tsconfig()
        self._py_packages = {
            posixpath.dirname(p) for p in self.records if posixpath.basename(p) == "__init__.py"
        }
        self._py_roots = _python_roots(self._py_packages)
        self._py_candidates: dict[str, list[str]] = defaultdict(list)
        """Module name -> the files that could be it, in path order: the first one is."""
        self._java_packages: dict[str, set[str]] = defaultdict(set)
        self._by_dir: dict[str, set[str]] = defaultdict(set)
        for path in sorted(self.records):
            self._add_to_tables(path, self.records[path])
        if self._tokens is not None:
            self._tokens = None
            self._mentioning(set())

    def resolve(self, path: str) -> tuple[str, ...]:
        """The project files `path` depends on, sorted, without itself."""
        record = self.records.get(path)
        if record is None or not record.imports:
            return ()
        resolve_one = {
            "python": self._python,
            "typescript": self._typescript,
            "tsx": self._typescript,
            "javascript": self._typescript,
            "go": self._go,
            "java": self._java,
            "rust": self._rust,
        }.get(record.language or "")
        if resolve_one is None:
            return ()
        found: set[str] = set()
        for module, names in record.imports:
            found.update(resolve_one(path, ImportRef(module, names)))
        found.discard(path)
        return tuple(sorted(found))

    # ------------------------------------------------------- one file at a time

    def file_added(self, path: str) -> set[str] | None:
        """`path` is new in the records: the files whose imports may now find it."""
        record = self.records[path]
        if self._changes_everything(path):
            return Everything
        self._add_to_tables(path, record)
        if self._tokens is not None:
            self._index_tokens(path, record)
        return self._mentioning(_file_tokens(path, record))

    def file_removed(self, path: str, old: FileRecord) -> set[str] | None:
        """`path` (whose record was `old`) is gone: the files whose imports may have found
        it (besides those that did, which the graph knows)."""
        if self._changes_everything(path):
            return Everything
        self._remove_from_tables(path, old)
        if self._tokens is not None:
            self._forget_tokens(path, old)
        return self._mentioning(_file_tokens(path, old))

    def file_changed(self, path: str, old: FileRecord) -> set[str] | None:
        """The contents of `path` changed: the other files that may resolve differently
        (a Java file that moved to another package; the graph knows those that import it,
        such as the users of an `__init__.py`'s re-exports)."""
        record = self.records[path]
        if posixpath.basename(path) in READS_CONFIG:
            if self._config_differs():
                self._build()
                return Everything
            return set()
        affected: set[str] = set()
        if record.package != old.package:
            self._remove_from_tables(path, old)
            self._add_to_tables(path, record)
            affected = self._mentioning(_file_tokens(path, old) | _file_tokens(path, record))
        if self._tokens is not None and record.imports != old.imports:
            self._forget_tokens(path, old)
            self._index_tokens(path, record)
        return affected

    def _changes_everything(self, path: str) -> bool:
        """A config file, or an `__init__.py` that makes or unmakes a source root."""
        name = posixpath.basename(path)
        changes = name in READS_CONFIG
        if name == "__init__.py":
            packages = self._py_packages - {posixpath.dirname(path)}
            if path in self.records:
                packages.add(posixpath.dirname(path))
            changes = _python_roots(packages) != self._py_roots
        if changes:
            self._build()
        return changes

    def _config_differs(self) -> bool:
        return (self._go_module_path(), self._tsconfig()) != (
            (self._go_module, self._go_root),
            (self._ts_base, self._ts_paths),
        )

    def _add_to_tables(self, path: str, record: FileRecord) -> None:
        directory, _, name = path.rpartition("/")
        self._by_dir[directory].add(path)
        if path.endswith(PY_EXTENSIONS):
            if name == "__init__.py":
                self._py_packages.add(directory)
            for module in self._python_module_names(path):
                candidates = self._py_candidates[module]
                if not candidates or candidates[-1] < path:
                    candidates.append(path)
                else:
                    bisect.insort(candidates, path)
        elif path.endswith(".java"):
            self._java_packages[record.package].add(path)

    def _remove_from_tables(self, path: str, old: FileRecord) -> None:
        directory = posixpath.dirname(path)
        _discard(self._by_dir, directory, path)
        if path.endswith(PY_EXTENSIONS):
            if posixpath.basename(path) == "__init__.py":
                self._py_packages.discard(directory)
            for module in self._python_module_names(path):
                candidates = self._py_candidates.get(module)
                if candidates is not None and path in candidates:
                    candidates.remove(path)
                    if not candidates:
                        del self._py_candidates[module]
        elif path.endswith(".java"):
            _discard(self._java_packages, old.package, path)

    def _mentioning(self, tokens: set[str]) -> set[str]:
        """The files with an import that mentions one of `tokens`."""
        if self._tokens is None:
            self._tokens = defaultdict(set)
            for path, record in self.records.items():
                self._index_tokens(path, record)
        found: set[str] = set()
        for token in tokens:
            found.update(self._tokens.get(token, ()))
        return found

    def _index_tokens(self, path: str, record: FileRecord) -> None:
        assert self._tokens is not None
        for token in self._import_tokens(path, record):
            self._tokens[token].add(path)

    def _forget_tokens(self, path: str, old: FileRecord) -> None:
        assert self._tokens is not None
        for token in self._import_tokens(path, old):
            _discard(self._tokens, token, path)

    def _import_tokens(self, path: str, record: FileRecord) -> set[str]:
        """Every name the imports of `record` mention: a superset of the file names and
        directory names any of them can resolve to (see `_file_tokens`)."""
        language = record.language
        imports = record.imports
        if language == "python":  # the common case, in a few C-speed passes
            modules = " ".join([module for module, _ in imports])
            tokens = set(modules.replace(".", " ").split())
            tokens.update(chain.from_iterable([names for _, names in imports]))
            if " ." in modules or modules.startswith("."):
                folders = path.split("/")[:-1]  # `from . import x` may find the package's
                for module, _ in imports:  # own __init__.py: its folder's name counts
                    dots = len(module) - len(module.lstrip("."))
                    if dots:
                        tokens.add(folders[-dots] if dots <= len(folders) else "")
            return tokens
        tokens = set()
        for module, names in imports:
            tokens.update(names)
            if language in _TS_LANGUAGES:
                tokens.update(_stem(segment) for segment in module.split("/"))
                if not module.startswith("."):
                    for target in self._ts_targets(module):
                        tokens.update(_stem(segment) for segment in target.split("/"))
            elif language == "go":
                tokens.update(module.split("/"))
            elif language == "java":
                tokens.update(module.split("."))
            elif language == "rust":
                tokens.update(module.split("::"))
        return tokens

    # ------------------------------------------------------------------ Python

    def _python_module_names(self, path: str) -> list[str]:
        """The dotted names `path` is importable as: one per source root above it."""
        parts = path.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        first = len(parts)  # parts[first:] are all identifiers
        while first > 0 and parts[first - 1].isidentifier():
            first -= 1
        names = []
        roots = self._py_roots
        ancestor = ""
        for depth in range(len(parts)):  # every ancestor directory that is a source root
            if depth >= first and ancestor in roots:
                names.append(".".join(parts[depth:]))
            ancestor = f"{ancestor}/{parts[depth]}" if depth else parts[0]
        return names

    def _py_module(self, name: str) -> str:
        return self._py_candidates[name][0]

    def _python(self, path: str, ref: ImportRef) -> list[str]:
        if ref.module.startswith("."):
            return self._python_relative(path, ref)
        found = []
        module = self._py_longest(ref.module)
        if module is not None:
            found.append(self._py_module(module))
            for name in ref.names:
                found.extend(self._python_name(module, name))
        return found

    def _py_longest(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self._py_candidates:
                return candidate
        return None

    def _python_name(self, module: str, name: str) -> list[str]:
        """`from module import name`: a submodule, or a name re-exported by __init__."""
        if name == "*":
            return []
        submodule = f"{module}.{name}"
        if submodule in self._py_candidates:
            return [self._py_module(submodule)]
        init = self._py_module(module)
        if not init.endswith("__init__.py"):
            return []
        for imported, names in self.records[init].imports:
            if name in names:
                return [p for p in self._python(init, ImportRef(imported)) if p != init]
        return []

    def _python_relative(self, path: str, ref: ImportRef) -> list[str]:
        dots = len(ref.module) - len(ref.module.lstrip("."))
        base = posixpath.dirname(path)
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rest = ref.module[dots:].replace(".", "/")
        target = posixpath.join(base, rest) if rest else base
        found = [f for f in self._py_file_or_package(target)]
        if not found and rest:
            return []
        for name in ref.names:
            found.extend(self._py_file_or_package(posixpath.join(target, name)))
        return found

    def _py_file_or_package(self, stem: str) -> list[str]:
        for candidate in (f"{stem}.py", f"{stem}.pyi", f"{stem}/__init__.py"):
            if candidate.lstrip("/") in self.records:
                return [candidate.lstrip("/")]
        return []

    # ------------------------------------------------------ TypeScript / JS

    def _tsconfig(self) -> tuple[str, dict[str, list[str]]]:
        for name in ("tsconfig.json", "jsconfig.json"):
            text = self._read_text(name) if name in self.records else None
            if text is None:
                continue
            try:
                options = json.loads(_strip_json_comments(text)).get("compilerOptions", {})
            except (ValueError, AttributeError):
                log.debug("%s is not valid JSON; ignoring its paths", name)
                continue
            base = posixpath.normpath(options.get("baseUrl", ".")).lstrip("./")
            paths = options.get("paths", {})
            if isinstance(paths, dict):
                return base, {
                    k: [str(t) for t in v] for k, v in paths.items() if isinstance(v, list)
                }
        return "", {}

    def _typescript(self, path: str, ref: ImportRef) -> list[str]:
        spec = ref.module
        if spec.startswith("."):
            return self._ts_file(posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)))
        for target in self._ts_targets(spec):
            if found := self._ts_file(target):
                return found
        return []

    def _ts_targets(self, spec: str) -> Iterable[str]:
        """Where tsconfig `paths` map a non-relative import, in the order they are tried."""
        for pattern, targets in self._ts_paths.items():
            prefix, star, suffix = pattern.partition("*")
            if star and spec.startswith(prefix) and spec.endswith(suffix):
                middle = spec[len(prefix) : len(spec) - len(suffix)]
            elif not star and spec == pattern:
                middle = ""
            else:
                continue
            for target in targets:
                yield posixpath.normpath(posixpath.join(self._ts_base, target.replace("*", middle)))

    def _ts_file(self, stem: str) -> list[str]:
        stem = stem.lstrip("/")
        if stem in self.records:
            return [stem]
        base = re.sub(r"\.(js|jsx|mjs|cjs)$", "", stem)  # TS imports name the compiled .js
        for candidate in [base + ext for ext in TS_EXTENSIONS] + [
            f"{base}/index{ext}" for ext in TS_EXTENSIONS
        ]:
            if candidate in self.records:
                return [candidate]
        return []

    # --------------------------------------------------------------------- Go

    def _go_module_path(self) -> tuple[str | None, str]:
        mods = sorted((p for p in self.records if posixpath.basename(p) == "go.mod"), key=len)
        for mod in mods:
            text = self._read_text(mod) or ""
            if match := re.search(r"^module\s+(\S+)", text, re.M):
                return match.group(1), posixpath.dirname(mod)
        return None, ""

    def _go(self, path: str, ref: ImportRef) -> list[str]:
        if self._go_module is None or not (
            ref.module == self._go_module or ref.module.startswith(self._go_module + "/")
        ):
            return []
        relative = ref.module[len(self._go_module) :].lstrip("/")
        directory = (
            posixpath.join(self._go_root, relative).strip("/") if relative else self._go_root
        )
        return [
            f
            for f in self._by_dir.get(directory, [])
            if f.endswith(".go") and not f.endswith("_test.go")
        ]

    # ------------------------------------------------------------------- Java

    def _java(self, path: str, ref: ImportRef) -> list[str]:
        if "*" in ref.names:
            return list(self._java_packages.get(ref.module, []))
        package, _, name = ref.module.rpartition(".")
        found = [
            f
            for f in self._java_packages.get(package, [])
            if posixpath.basename(f) == f"{name}.java"
        ]
        if not found:  # import static a.b.C.member
            outer, _, cls = package.rpartition(".")
            found = [
                f
                for f in self._java_packages.get(outer, [])
                if posixpath.basename(f) == f"{cls}.java"
            ]
        return found

    # ------------------------------------------------------------------- Rust

    def _rust(self, path: str, ref: ImportRef) -> list[str]:
        parts = [p for p in ref.module.split("::") if p]
        if not parts:
            return []
        if parts[0] not in ("crate", "super", "self"):
            return []  # another crate
        module_dir = self._rust_module_dir(path)
        if parts[0] == "crate":
            module_dir, parts = self._rust_crate_dir(path), parts[1:]
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                module_dir = posixpath.dirname(module_dir)
            parts = parts[1:]
        found = []
        for end in range(len(parts), 0, -1):  # the longest prefix that is a module file
            if file := self._rust_file(posixpath.join(module_dir, *parts[:end])):
                found.append(file)
                break
        for name in ref.names:
            if file := self._rust_file(posixpath.join(module_dir, *parts, name)):
                found.append(file)
        return found

    def _rust_module_dir(self, path: str) -> str:
        """Where `mod x;` in `path` looks for x: beside lib.rs/main.rs/mod.rs, else in a/."""
        directory, name = posixpath.split(path)
        if name in ("lib.rs", "main.rs", "mod.rs"):
            return directory
        return posixpath.join(directory, name.removesuffix(".rs"))

    def _rust_crate_dir(self, path: str) -> str:
        directory = posixpath.dirname(path)
        while True:
            if any(posixpath.join(directory, n) in self.records for n in ("lib.rs", "main.rs")):
                return directory
            if not directory:
                return ""
            directory = posixpath.dirname(directory)

    def _rust_file(self, stem: str) -> str | None:
        stem = stem.lstrip("/")
        for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
            if candidate in self.records:
                return candidate
        return None


def _python_roots(packages: set[str]) -> frozenset[str]:
    """Python's source roots: "", src and lib, and the parent of every top-level package."""
    roots = {"", "src", "lib"}
    for package in packages:
        parent = posixpath.dirname(package)
        if parent not in packages:
            roots.add(parent)
    return frozenset(roots)


def _file_tokens(path: str, record: FileRecord) -> set[str]:
    """The names by which an import can reach `path`: its stem, its directory's name (a
    package, an index or mod.rs file, a Go package), its Java package's last part, and
    "crate" for a Rust crate root."""
    directory, name = posixpath.split(path)
    tokens = {_stem(name), posixpath.basename(directory)}
    if name in ("lib.rs", "main.rs"):
        tokens.add("crate")
    if record.package:
        tokens.add(record.package.rsplit(".", 1)[-1])
    return tokens


def _stem(name: str) -> str:
    """A file or import path segment without its source extension ("util.d.ts" -> "util")."""
    for suffix in _SOURCE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _discard(table: dict[str, set[str]], key: str, path: str) -> None:
    paths = table.get(key)
    if paths is not None:
        paths.discard(path)
        if not paths:
            del table[key]


def _strip_json_comments(text: str) -> str:
    """tsconfig.json allows // and /* */ comments and trailing commas; json does not."""
    text = re.sub(
        r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text, flags=re.S
    )
    return re.sub(r",(\s*[}\]])", r"\1", text)


def read_text_under(root: Path) -> Callable[[str], str | None]:
    """A reader of small config files under `root`, for the resolver."""

    def read(relative: str) -> str | None:
        try:
            return (root / relative).read_text(encoding="utf-8", errors="replace")[:100_000]
        except OSError:
            return None

    return read
