"""Resolve import statements to files of the project.

Each language finds its imports in its own way: Python by module name under source roots
(with relative imports and `__init__` re-exports), TypeScript/JavaScript by relative path
(with index files and tsconfig `paths`), Go by package directory under the go.mod module
path, Java by package, Rust by `mod`/`use` within a crate. Imports of anything outside the
project (the standard library, dependencies) resolve to nothing.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from cache.model import ImportRef, Outline

log = logging.getLogger(__name__)

TS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
PY_EXTENSIONS = (".py", ".pyi")
READS_CONFIG = ("go.mod", "tsconfig.json", "jsconfig.json", "Cargo.toml")
"""Files whose contents change how imports resolve."""


class ImportResolver:
    """Maps a file's imports to project files, given every file of one workspace root."""

    def __init__(
        self,
        files: Iterable[str],
        outlines: Mapping[str, Outline | None],
        read_text: Callable[[str], str | None],
    ) -> None:
        self.files = set(files)
        self.outlines = outlines
        self._read_text = read_text
        self._py_modules = self._python_modules()
        self._go_module, self._go_root = self._go_module_path()
        self._ts_base, self._ts_paths = self._tsconfig()
        self._java_packages = self._java_index()
        self._by_dir: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            self._by_dir[posixpath.dirname(path)].append(path)

    def resolve(self, path: str, language: str | None) -> tuple[str, ...]:
        """The project files `path` depends on, sorted, without itself."""
        outline = self.outlines.get(path)
        if outline is None or language is None:
            return ()
        resolve_one = {
            "python": self._python,
            "typescript": self._typescript,
            "tsx": self._typescript,
            "javascript": self._typescript,
            "go": self._go,
            "java": self._java,
            "rust": self._rust,
        }.get(language)
        if resolve_one is None:
            return ()
        found: set[str] = set()
        for ref in outline.imports:
            found.update(resolve_one(path, ref))
        if language == "rust":  # `mod name;` declarations pull in name.rs or name/mod.rs
            module_dir = self._rust_module_dir(path)
            for definition in outline.definitions:
                declared = definition.kind == "module" and definition.signature.endswith(";")
                if declared and (file := self._rust_file(f"{module_dir}/{definition.name}")):
                    found.add(file)
        found.discard(path)
        return tuple(sorted(found))

    # ------------------------------------------------------------------ Python

    def _python_modules(self) -> dict[str, str]:
        """Dotted module name -> file, under every source root of the project."""
        packages = {
            posixpath.dirname(p) for p in self.files if posixpath.basename(p) == "__init__.py"
        }
        roots = {"", "src", "lib"}
        for package in packages:  # the parent of a top-level package is a source root
            parent = posixpath.dirname(package)
            if parent not in packages:
                roots.add(parent)
        modules: dict[str, str] = {}
        for path in sorted(self.files):
            if not path.endswith(PY_EXTENSIONS):
                continue
            parts = path.rsplit(".", 1)[0].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for depth in range(len(parts)):  # every ancestor directory that is a source root
                if "/".join(parts[:depth]) in roots:
                    module = parts[depth:]
                    if module and all(part.isidentifier() for part in module):
                        modules.setdefault(".".join(module), path)
        return modules

    def _python(self, path: str, ref: ImportRef) -> list[str]:
        if ref.module.startswith("."):
            return self._python_relative(path, ref)
        found = []
        module = self._py_longest(ref.module)
        if module is not None:
            found.append(self._py_modules[module])
            for name in ref.names:
                found.extend(self._python_name(module, name))
        return found

    def _py_longest(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self._py_modules:
                return candidate
        return None

    def _python_name(self, module: str, name: str) -> list[str]:
        """`from module import name`: a submodule, or a name re-exported by __init__."""
        if name == "*":
            return []
        submodule = f"{module}.{name}"
        if submodule in self._py_modules:
            return [self._py_modules[submodule]]
        init = self._py_modules[module]
        if not init.endswith("__init__.py"):
            return []
        outline = self.outlines.get(init)
        for ref in outline.imports if outline else ():
            if name in ref.names:
                return [p for p in self._python(init, ImportRef(ref.module)) if p != init]
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
            if candidate.lstrip("/") in self.files:
                return [candidate.lstrip("/")]
        return []

    # ------------------------------------------------------ TypeScript / JS

    def _tsconfig(self) -> tuple[str, dict[str, list[str]]]:
        for name in ("tsconfig.json", "jsconfig.json"):
            text = self._read_text(name) if name in self.files else None
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
        for pattern, targets in self._ts_paths.items():
            prefix, star, suffix = pattern.partition("*")
            if star and spec.startswith(prefix) and spec.endswith(suffix):
                middle = spec[len(prefix) : len(spec) - len(suffix)]
            elif not star and spec == pattern:
                middle = ""
            else:
                continue
            for target in targets:
                joined = posixpath.normpath(
                    posixpath.join(self._ts_base, target.replace("*", middle))
                )
                if found := self._ts_file(joined):
                    return found
        return []

    def _ts_file(self, stem: str) -> list[str]:
        stem = stem.lstrip("/")
        if stem in self.files:
            return [stem]
        base = re.sub(r"\.(js|jsx|mjs|cjs)$", "", stem)  # TS imports name the compiled .js
        for candidate in [base + ext for ext in TS_EXTENSIONS] + [
            f"{base}/index{ext}" for ext in TS_EXTENSIONS
        ]:
            if candidate in self.files:
                return [candidate]
        return []

    # --------------------------------------------------------------------- Go

    def _go_module_path(self) -> tuple[str | None, str]:
        mods = sorted((p for p in self.files if posixpath.basename(p) == "go.mod"), key=len)
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

    def _java_index(self) -> dict[str, list[str]]:
        """Package name -> its files, from each file's `package` declaration."""
        packages: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if not path.endswith(".java"):
                continue
            outline = self.outlines.get(path)
            definitions = outline.definitions if outline else ()
            package = next((d.name for d in definitions if d.kind == "package"), "")
            packages[package].append(path)
        return packages

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
            if any(posixpath.join(directory, n) in self.files for n in ("lib.rs", "main.rs")):
                return directory
            if not directory:
                return ""
            directory = posixpath.dirname(directory)

    def _rust_file(self, stem: str) -> str | None:
        stem = stem.lstrip("/")
        for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
            if candidate in self.files:
                return candidate
        return None


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
