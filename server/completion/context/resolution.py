"""Where a name at the cursor is defined. `_Request` follows it, for one build, through the
current file's imports as written (aliases, relative imports, `module.attr` chains,
`__init__` re-exports to the defining file, star imports), through local types (`x =
Warehouse()`, `self.repo`, a function's return annotation) and base classes, and tells
how near each file is to the current one (which ranking adds to a score).
`ImportResolver` keeps across builds where each name a file imports is defined (it
depends on the import, not on the cursor), and the re-export answers, while the files
they were read from stay the same."""

from __future__ import annotations

import dataclasses
import itertools
import posixpath
from collections.abc import Mapping, Reversible
from dataclasses import dataclass, field
from typing import Final

from cache.index import ProjectIndex
from cache.model import Definition, FileRecord
from server.completion.context.definitions import (
    _ALIASED,
    _NAMED,
    CLASS_KINDS,
    _bases,
    _FileDefs,
    _return_type,
    _variable_type,
)
from server.completion.context.files import ProjectFiles
from server.completion.context.lru import _Lru
from server.completion.context.model import Target
from server.completion.context.module_files import (
    _SAME_PACKAGE,
    _python_module_files,
    _stem,
    _ts_files,
)
from server.completion.cursor import (
    CALL,
    Binding,
    CursorInfo,
    Imports,
    Reference,
    Tier,
    attribute_type,
)

MAX_DEPTH: Final = 4
"""How many imports, re-exports and types one name is followed through."""
MAX_LOOKUPS: Final = 200
"""Re-export lookups per build: star imports of star imports (networkx's packages) could
otherwise cost tens of milliseconds for a name that is not in the project at all."""


@dataclass(frozen=True, slots=True)
class _ImportedTarget:
    """Where one imported name was found, and what the answer depended on."""

    target: Target | None
    generation: tuple[int, int]
    """The index's file set then (`id` and size of its records, as the other memos)."""
    deps: frozenset[str]
    """The importing file's dependencies then (they pick the file of an absolute import)."""
    files: tuple[tuple[str, str | None], ...]
    """The files read on the way, with their digests then."""
    edits: int
    """`ProjectIndex.edits` when they were last read: while it stays, nothing changed (a
    file may import dozens of names, each read through ~20 files of re-exports)."""


@dataclass(slots=True)
class _ImportTargets:
    """Where each name a file imports is defined, as `ContextBuilder.imported_target`
    found it, while the file's imports (the same `Imports`), its dependencies and the
    index stay the same: checked once a build, not once a name (a test file imports
    dozens of names, and every build ranks them all)."""

    imports: Imports
    generation: tuple[int, int]
    deps: frozenset[str]
    edits: int
    targets: dict[str, Target | None] = field(default_factory=dict)


class ImportResolver(ProjectFiles):
    """The builder's memos of where names are defined: each name a file imports, the
    re-exports followed on the way, and which files a module stands for (`_Request`
    reads and fills them)."""

    recent: Reversible[str] | None
    _module_files: _Lru[tuple[int, int, str, str, str | None], list[str]]
    _reexports: _Lru[tuple[int, int, str, str, tuple[str, ...]], tuple[Target | None, str | None]]
    _imported: _Lru[tuple[str, str | None, str, str], _ImportedTarget]
    _import_targets: _Lru[str, _ImportTargets]
    _attribute_types: tuple[str, dict[str, tuple[str, ...]]]

    def attribute_types(self, text: str) -> dict[str, tuple[str, ...]] | None:
        """`python_attribute_types` of `text` if it is the prepared file's, as opened: its
        builds then look attributes up instead of searching the text for each."""
        known, types = self._attribute_types
        return types if text and (text is known or text == known) else None

    def import_targets(
        self, index: ProjectIndex, file_path: str, imports: Imports
    ) -> _ImportTargets:
        """The memo of where `file_path`'s imported names are defined, kept while its
        imports, its dependencies and the index are as they were (`_ImportTargets`)."""
        generation = (id(index.records), len(index.records))
        deps = index.graph.imports(file_path)
        known = self._import_targets.get(file_path)
        if (
            known is not None
            and known.imports is imports
            and known.generation == generation
            and known.edits == index.edits
            and (known.deps is deps or known.deps == deps)
        ):
            return known
        return self._import_targets.put(
            file_path, _ImportTargets(imports, generation, deps, index.edits)
        )

    def imported_target(
        self, index: ProjectIndex, file_path: str, text: str, cursor: CursorInfo, binding: Binding
    ) -> Target | None:
        """Where the name `binding` imports into `file_path` is defined, found as a
        request of its own would (with its own re-export lookups), and memoised: it
        depends on the import, not on the cursor, and a file may import hundreds of names
        that every keystroke ranks. The memo holds while the file set, the file's
        dependencies and the files read on the way stay the same."""
        records, edits = index.records, index.edits  # read first: a later edit voids it
        generation = (id(records), len(records))
        deps = index.graph.imports(file_path)
        key = (file_path, cursor.language, binding.module, binding.name or "")
        known = self._imported.get(key)
        if (
            known is not None
            and known.generation == generation
            and (known.deps is deps or known.deps == deps)
        ):
            if known.edits == edits:  # no record changed since: the files read still hold
                return known.target
            if all(_digest(records, path) == digest for path, digest in known.files):
                self._imported.put(key, dataclasses.replace(known, edits=edits))
                return known.target
        request = _Request(self, index, file_path, text, cursor)
        request.read = {}
        parts = tuple(binding.name.split(".")) if binding.name else ()
        target = request.in_module(binding.module, parts, file_path, 1)
        if target is not None:
            request.read.setdefault(target.path, _digest(records, target.path))
        self._imported.put(
            key, _ImportedTarget(target, generation, deps, tuple(request.read.items()), edits)
        )
        return target

    def resolve(
        self, file_path: str, text: str, cursor: CursorInfo, chain: tuple[str, ...]
    ) -> Target | None:
        """Where `chain`, as written at this cursor, is defined (None: not in the project)."""
        if self.index is None:
            return None
        return _Request(self, self.index, file_path, text, cursor).resolve(chain, 0)


class _Request:
    """Resolution for one build: the current file, its cursor, its dependencies."""

    def __init__(
        self,
        builder: ImportResolver,
        index: ProjectIndex,
        file_path: str,
        text: str,
        cursor: CursorInfo,
    ) -> None:
        self.builder = builder
        self.index = index
        self.file_path = file_path
        self.text = text
        self.cursor = cursor
        self.language = cursor.language
        self.directory = posixpath.dirname(file_path)
        self.deps = index.graph.imports(file_path)
        self._hops: dict[str, int] | None = None
        self._importers: frozenset[str] | None = None
        self._recency: dict[str, int] | None = None
        self._recent: tuple[str, ...] | None = None
        self._standing: dict[str, int] = {}
        self._attribute_types: dict[str, tuple[str, ...]] = {}
        self._imported: dict[tuple[str, tuple[str, ...]], Target | None] = {}
        self._import_targets: _ImportTargets | None = None
        self._lookups = 0
        self.read: dict[str, str | None] | None = None
        """When a dict: every file whose definitions were looked at, with its digest."""
        self.warming = False
        """Only making outlines ahead (`ContextBuilder._warming`)."""

    # ranking inputs ---------------------------------------------------------------------

    def standing(self, path: str) -> int:
        """What `path` adds to a candidate's score: its `distance` (tens) and `recency`;
        memoised, as a build adds a hundred candidates from a few dozen files."""
        known = self._standing.get(path)
        if known is None:
            known = self._standing[path] = self.distance(path) * 10 + self.recency(path)
        return known

    def distance(self, path: str) -> int:
        """4 direct dependency, 3 two hops, 2 same directory, 1 importer, 0 otherwise."""
        if path in self.deps:
            return 4
        if self._hops is None:
            self._hops = self.builder.hops(self.file_path)
        if self._hops.get(path) == 2:
            return 3
        if posixpath.dirname(path) == self.directory:
            return 2
        if self._importers is None:
            self._importers = self.index.graph.imported_by(self.file_path)
        return 1 if path in self._importers else 0

    def recency(self, path: str) -> int:
        if self._recency is None:
            self._recency = {p: 9 - rank for rank, p in enumerate(self.recent_files())}
        return self._recency.get(path, 0)

    def recent_files(self) -> tuple[str, ...]:
        """The nine files used most recently but this one, newest first."""
        if self._recent is None:
            recent = self.builder.recent
            newest = (p for p in reversed(recent) if p != self.file_path) if recent else ()
            self._recent = tuple(itertools.islice(newest, 9))
        return self._recent

    def related_files(self) -> list[str]:
        return self.builder.related_files(self.file_path)

    # names -> definitions -----------------------------------------------------------------

    def targets(self, reference: Reference) -> list[Target]:
        """What one reference points at. The word being typed also matches the names
        imported from modules that start with it; it never stands for a whole module (a
        module's outline answers `name.`, and the word may be on its way to another:
        `re` to `return`)."""
        chain = reference.chain
        typing = reference.tier == Tier.TYPED and chain == (self.cursor.partial,)
        found = self.resolve(chain, 0)
        if found is not None and not (typing and found.definition is None):
            return [found]
        if typing and len(chain[0]) >= 3:
            bindings = self.cursor.imports.bindings
            matches = sorted(
                n for n, b in bindings.items() if b.name is not None and n.startswith(chain[0])
            )
            resolved = [self.resolve((n,), 0) for n in matches[:2]]
            return [t for t in resolved if t is not None and t.definition is not None]
        return []

    def imported(self, local: str) -> list[Target]:
        """`targets` of a bare name the file imports: the builder's memo
        (`ContextBuilder.imported_target`) answers, unless a local type at the cursor
        shadows the name."""
        binding = self.cursor.imports.bindings.get(local)
        if binding is None or not binding.name or self.shadowed(local):
            return self.targets(Reference((local,), Tier.ABOVE, self.cursor.line))
        known = self.import_targets().targets
        if local in known:
            found = known[local]
        else:
            found = known[local] = self.builder.imported_target(
                self.index, self.file_path, self.text, self.cursor, binding
            )
        return [found] if found is not None else []

    def shadowed(self, local: str) -> bool:
        """Whether, at this cursor, `local` is not the name the file imports: a local
        type says it is something else, or it is the instance itself."""
        local_type = self.cursor.types.get(local)
        return local in ("self", "this", "cls") or bool(local_type and local_type[0] != local)

    def import_targets(self) -> _ImportTargets:
        """The builder's memo of where this file's imported names are defined."""
        if self._import_targets is None:
            self._import_targets = self.builder.import_targets(
                self.index, self.file_path, self.cursor.imports
            )
        return self._import_targets

    def resolve(self, chain: tuple[str, ...], depth: int) -> Target | None:
        if not chain or depth > MAX_DEPTH:
            return None
        cursor = self.cursor
        head = chain[0]
        if head in ("self", "this", "cls"):
            if len(chain) > 1:
                return self._resolve_self(chain, depth)
            for base in self.cursor.bases:  # `self.`: the members it inherits
                found = self.resolve(base, depth + 1)
                if found is not None:
                    return found
            return None
        local_type = cursor.types.get(head)
        if local_type and local_type[0] != head:
            return self.resolve((*local_type, *chain[1:]), depth + 1)
        bindings = cursor.imports.bindings
        for end in range(len(chain), 0, -1):
            key = ".".join(chain[:end])
            binding = bindings.get(key) if CALL not in chain[:end] else None
            if binding is None:
                continue
            rest = chain[end:]
            parts = (*binding.name.split("."), *rest) if binding.name else rest
            return self.in_module(binding.module, parts, self.file_path, depth + 1)
        for module in cursor.imports.star:
            found = self.in_module(module, chain, self.file_path, depth + 1)
            if found is not None and found.definition is not None:
                return found
        if self.language in ("go", "java", "rust"):  # the package's other files see each other
            for path in self.builder.directories().get(self.directory, []):
                if path != self.file_path and path.endswith(_SAME_PACKAGE.get(self.language, "")):
                    found = self.in_file(path, chain, depth + 1, follow_imports=False)
                    if found is not None:
                        return found
        return None

    def _resolve_self(self, chain: tuple[str, ...], depth: int) -> Target | None:
        head, attribute = chain[0], chain[1]
        declared = self.cursor.types.get(f"{head}.{attribute}")
        if not declared:
            python = self.language == "python"
            prepared = self.builder.attribute_types(self.text) if python else None
            if prepared is not None:
                declared = prepared.get(attribute, ())
            else:
                if attribute not in self._attribute_types:
                    self._attribute_types[attribute] = attribute_type(
                        self.text, attribute, self.language
                    )
                declared = self._attribute_types[attribute]
        if declared:
            return self.resolve((*declared, *chain[2:]), depth + 1)
        for base in self.cursor.bases:  # an inherited member
            found = self.resolve((*base, *chain[1:]), depth + 1)
            if found is not None:
                return found
        return None

    def in_module(
        self, module: str, parts: tuple[str, ...], from_path: str, depth: int
    ) -> Target | None:
        """`parts` looked up in the module `module` as imported by `from_path`."""
        if depth > MAX_DEPTH:
            return None
        language = self._language_of(from_path)
        files = self.module_files(module, from_path, language)
        for path in files:
            found = self.in_file(path, parts, depth)
            if found is not None:
                return found
        if language == "python" and parts and parts[0] != CALL:  # a submodule
            submodule = module + parts[0] if module.endswith(".") else f"{module}.{parts[0]}"
            if self.module_files(submodule, from_path, language):
                return self.in_module(submodule, parts[1:], from_path, depth + 1)
        if files and not parts:
            return Target(files[0], None)
        if not files and language != "python" and parts:  # unresolved module path: look around
            for path in sorted(self.index.graph.imports(from_path)):
                found = self.in_file(path, parts, depth, follow_imports=False)
                if found is not None and found.definition is not None:
                    return found
        return None

    def in_file(
        self, path: str, parts: tuple[str, ...], depth: int, follow_imports: bool = True
    ) -> Target | None:
        """`parts` looked up among the definitions of `path`, following its imports (a
        re-export) when the first part is not defined there."""
        if not parts:
            return Target(path, None)
        if self.read is not None and path not in self.read:
            self.read[path] = _digest(self.index.records, path)
        defs = self.builder.file_defs(path)
        if defs is None:
            return None
        definition = defs.by_name.get(parts[0])
        if definition is None:
            if not follow_imports:
                return None
            return self._reexported(path, defs, parts, depth)
        index = 1
        while index < len(parts):
            part = parts[index]
            if part == CALL:
                if definition.kind in CLASS_KINDS:  # an instance of the class
                    index += 1
                    continue
                returned = _return_type(definition, defs.language)
                following = self._in_namespace(path, returned, depth + 1) if returned else None
                if following is None or following.definition is None:
                    return Target(path, definition)
                rest = parts[index + 1 :]
                if not rest:
                    return following
                qualified = tuple(following.definition.qualified_name.split("."))
                return self.in_file(following.path, (*qualified, *rest), depth + 1) or following
            member = defs.by_name.get(f"{definition.qualified_name}.{part}")
            if member is not None:
                definition = member
                index += 1
                continue
            if definition.kind not in CLASS_KINDS:  # a variable: through its type
                declared = _variable_type(definition, defs.language)
                following = self._in_namespace(path, declared, depth + 1) if declared else None
                if following is not None and following.definition is not None:
                    qualified = tuple(following.definition.qualified_name.split("."))
                    return (
                        self.in_file(following.path, (*qualified, *parts[index:]), depth + 1)
                        or following
                    )
            else:
                inherited = self._inherited(path, definition, defs, parts[index:], depth)
                if inherited is not None:
                    return inherited
            return Target(path, definition)  # a member it lacks: half-typed, or unknown
        return Target(path, definition)

    def _inherited(
        self, path: str, cls: Definition, defs: _FileDefs, rest: tuple[str, ...], depth: int
    ) -> Target | None:
        """`rest` looked up in the base classes of `cls` (defined or imported in `path`)."""
        if depth >= MAX_DEPTH:
            return None
        for base in _bases(cls, defs.language):
            found = self._in_namespace(path, base, depth + 1)
            if found is None or found.definition is None or found.definition is cls:
                continue
            qualified = tuple(found.definition.qualified_name.split("."))
            member = self.in_file(found.path, (*qualified, *rest), depth + 1)
            if (
                member is not None
                and member.definition is not None
                and member.definition.name == rest[0]
            ):
                return member
        return None

    def _reexported(
        self, path: str, defs: _FileDefs, parts: tuple[str, ...], depth: int
    ) -> Target | None:
        """`_imported_into`, memoised: star re-exports revisit the same files often (and
        may cycle), and the answer depends on the project's files, not on the cursor, so
        it is kept across builds while the file set, this file and the file of the
        definition found stay the same (an edit there moves the definition's lines)."""
        key = (path, parts)
        if key in self._imported:
            return self._imported[key]
        records = self.index.records
        record = records.get(path)
        lasting = (id(records), len(records), path, record.digest if record else "", parts)
        known = self.builder._reexports.get(lasting)
        if known is not None and (known[0] is None or _digest(records, known[0].path) == known[1]):
            return known[0]
        self._lookups += 1
        if self._lookups > MAX_LOOKUPS:
            return None
        self._imported[key] = None
        found = self._imported_into(path, defs, parts, depth)
        self._imported[key] = found
        # Kept only from the first level: deeper answers depend on the depth.
        if self._lookups <= MAX_LOOKUPS and depth <= 1 and not self.warming:
            found_digest = _digest(records, found.path) if found is not None else None
            self.builder._reexports.put(lasting, (found, found_digest))
        return found

    def _in_namespace(self, path: str, chain: tuple[str, ...], depth: int) -> Target | None:
        """`chain` as a name seen from inside `path` (defined there or imported)."""
        if depth > MAX_DEPTH or not chain:
            return None
        return self.in_file(path, chain, depth)

    def _imported_into(
        self, path: str, defs: _FileDefs, parts: tuple[str, ...], depth: int
    ) -> Target | None:
        if depth >= MAX_DEPTH:
            return None
        name = parts[0]
        language = defs.language
        for how, ref, original in defs.importing.get(name, ()):
            if how == _ALIASED:  # `from .cold import ColdStore as Warehouse`
                found = self.in_module(ref.module, (original, *parts[1:]), path, depth + 1)
                if found is not None:
                    return found
            elif how == _NAMED:
                found = self.in_module(ref.module, parts, path, depth + 1)
                if found is not None:
                    return found
            else:  # `import a.b`: `a.b.c` is c in a.b
                dotted = ref.module.split(".")
                if tuple(parts[: len(dotted)]) == tuple(dotted):
                    return self.in_module(ref.module, parts[len(dotted) :], path, depth + 1)
        # A package's submodule of that name, before its star imports: those may be
        # hundreds (transformers' __init__), each a failed search, for what the
        # submodule answers at once.
        package = language == "python" and posixpath.basename(path) == "__init__.py"
        if package and name != CALL and self.module_files(f".{name}", path, language):
            return self.in_module(f".{name}", parts[1:], path, depth + 1)
        for ref in defs.stars:
            found = self.in_module(ref.module, parts, path, depth + 1)
            if found is not None and found.definition is not None:
                return found
        return None

    # modules -> files ------------------------------------------------------------------------

    def _language_of(self, path: str) -> str | None:
        if path == self.file_path:
            return self.language
        record = self.index.records.get(path)
        return record.language if record is not None else None

    def module_files(self, module: str, from_path: str, language: str | None) -> list[str]:
        """The project files that `module`, imported from `from_path`, stands for
        (memoised per importing file while the index's file set stays the same)."""
        records = self.index.records
        key = (id(records), len(records), from_path, module, language)
        cached = self.builder._module_files.get(key)
        if cached is None:
            cached = self.builder._module_files.put(
                key, self._module_files(module, from_path, language)
            )
        return cached

    def _module_files(self, module: str, from_path: str, language: str | None) -> list[str]:
        records = self.index.records
        deps = self.deps if from_path == self.file_path else self.index.graph.imports(from_path)
        if language == "python":
            return _python_module_files(module, from_path, records, deps)
        if language in ("typescript", "tsx", "javascript"):
            if module.startswith("."):
                stem = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), module))
                return _ts_files(stem, records)
            tail = module.rstrip("/").rsplit("/", 1)[-1]
            return sorted(d for d in deps if _stem(d).endswith("/" + tail) or _stem(d) == tail)
        if language == "go":
            tail = module.rstrip("/").rsplit("/", 1)[-1]
            return sorted(d for d in deps if posixpath.basename(posixpath.dirname(d)) == tail)
        if language == "java":
            package = module.replace(".", "/")
            return sorted(d for d in deps if posixpath.dirname(d).endswith(package)) or sorted(deps)
        if language == "rust":
            segments = [s for s in module.split("::") if s not in ("crate", "self", "super", "")]
            if not segments:
                return sorted(deps)
            tail = segments[-1]
            return sorted(
                d
                for d in deps
                if _stem(d).endswith("/" + tail) or _stem(d).endswith(f"/{tail}/mod")
            ) or sorted(deps)
        return []


def _digest(records: Mapping[str, FileRecord], path: str) -> str | None:
    record = records.get(path)
    return record.digest if record is not None else None
