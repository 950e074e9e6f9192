"""What the project says about a file's imported names, for semantic tokens.

`project_names` resolves them through the project cache (the context builder's
import-graph resolution): which imported names are defined in another project file, and as
what (class, function, variable, module; a module's top-level names, a class's members).
The classifiers give those names that kind and the custom `crossFile` modifier. It runs on
the event loop before them, and they read only its answer (`model.ProjectNames`): kept
apart so that no classifier depends on the completion context.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from server.completion.context import CLASS_KINDS, ContextBuilder
from server.completion.cursor import analyse, file_imports
from server.features.semantic_tokens.model import CONSTANT, ProjectName, ProjectNames


def _kind_of(kind: str) -> str:
    if kind in CLASS_KINDS and kind != "type":
        return "class"
    if kind == "type":
        return "type"
    if kind in ("function", "method"):
        return kind
    if kind in ("module", "package", "namespace"):
        return "namespace"
    return "variable"


def _project_name(
    kind: str, name: str, members: Mapping[str, ProjectName] | None = None, member: bool = False
) -> ProjectName:
    mapped = _kind_of(kind)
    if member and mapped == "variable":
        mapped = "property"
    constant = kind == "constant" or bool(CONSTANT.match(name))
    return ProjectName(
        mapped, True, readonly=mapped in ("variable", "property") and constant, members=members
    )


def project_names(
    builder: ContextBuilder, file_path: str, text: str, language: str = "python"
) -> ProjectNames:
    """Resolve what `text` (the content of `file_path`) imports, through the builder's
    import-graph resolution (the same as completion's context uses): which imported names
    are defined in other project files, and as what; for a module, its top-level names
    (a Go package: those of every file of its directory), for a class, its members. Run
    it on the event loop: the builder is not meant for several threads."""
    if builder.index is None:
        return ProjectNames()
    imports = file_imports(text, language)
    if not imports.bindings:
        return ProjectNames()
    cursor = analyse(text, 0, language, names=False)
    names: dict[str, ProjectName] = {}
    for local in imports.bindings:
        target = builder.resolve(file_path, text, cursor, tuple(local.split(".")))
        if target is None or target.path == file_path:
            continue
        head = local.split(".")[0]
        if target.definition is None:
            members: dict[str, ProjectName] = {}
            for path in _module_files(builder, target.path, language):
                defs = builder.file_defs(path)
                for definition in defs.members.get("", ()) if defs is not None else ():
                    members.setdefault(
                        definition.name, _project_name(definition.kind, definition.name)
                    )
            names[local if "." not in local else head] = ProjectName(
                "namespace", True, members=members if "." not in local else None
            )
        else:
            definition = target.definition
            defs = builder.file_defs(target.path)
            own = defs.members.get(definition.qualified_name, ()) if defs is not None else ()
            names[local] = _project_name(
                definition.kind,
                definition.name,
                {m.name: _project_name(m.kind, m.name, member=True) for m in own} or None,
            )
    return ProjectNames(names)


def _module_files(builder: ContextBuilder, path: str, language: str) -> list[str]:
    """The files that make up the module `path` stands for: a Go package is its
    directory's Go files."""
    if language != "go":
        return [path]
    files = builder.directories().get(posixpath.dirname(path), [path])
    return [f for f in files if f.endswith(".go") and not f.endswith("_test.go")]
