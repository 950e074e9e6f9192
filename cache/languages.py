"""Which tree-sitter grammar a file is written in, from its name or its shebang line.

Every name returned is a language of tree-sitter-language-pack 0.13 (its
`SupportedLanguage`), so the outline parser can load the grammar by that name. Note the
pack's spelling: C# is "csharp" (not "c_sharp"), Objective-C is "objc".
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePath

_EXTENSIONS: dict[str, str] = {
    # The languages that get import resolution first.
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    # Other programming languages.
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".tpp": "cpp",
    ".inl": "cpp",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".m": "objc",
    ".mm": "objc",
    ".cs": "csharp",
    ".csx": "csharp",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".fsi": "fsharp_signature",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".sbt": "scala",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".dart": "dart",
    ".lua": "lua",
    ".luau": "luau",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".hs": "haskell",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".clj": "clojure",
    ".cljs": "clojure",
    ".cljc": "clojure",
    ".edn": "clojure",
    ".ml": "ocaml",
    ".mli": "ocaml_interface",
    ".elm": "elm",
    ".zig": "zig",
    ".nim": "nim",
    ".odin": "odin",
    ".d": "d",
    ".v": "verilog",
    ".sv": "verilog",
    ".svh": "verilog",
    ".vh": "verilog",
    ".vhd": "vhdl",
    ".vhdl": "vhdl",
    ".sol": "solidity",
    ".gleam": "gleam",
    ".hx": "haxe",
    ".pas": "pascal",
    ".dpr": "pascal",
    ".f": "fortran",
    ".for": "fortran",
    ".f90": "fortran",
    ".f95": "fortran",
    ".f03": "fortran",
    ".f08": "fortran",
    ".cob": "cobol",
    ".cbl": "cobol",
    ".adb": "ada",
    ".ads": "ada",
    ".purs": "purescript",
    ".tcl": "tcl",
    ".lisp": "commonlisp",
    ".lsp": "commonlisp",
    ".scm": "scheme",
    ".ss": "scheme",
    ".rkt": "racket",
    ".el": "elisp",
    ".fnl": "fennel",
    ".janet": "janet",
    ".gd": "gdscript",
    ".as": "actionscript",
    ".ino": "arduino",
    ".cairo": "cairo",
    ".ha": "hare",
    ".pony": "pony",
    ".magik": "magik",
    ".agda": "agda",
    ".ispc": "ispc",
    ".asm": "asm",
    ".s": "asm",
    ".ll": "llvm",
    ".wat": "wat",
    ".wast": "wast",
    ".glsl": "glsl",
    ".vert": "glsl",
    ".frag": "glsl",
    ".geom": "glsl",
    ".comp": "glsl",
    ".hlsl": "hlsl",
    ".wgsl": "wgsl",
    ".smali": "smali",
    ".td": "tablegen",
    ".qml": "qmljs",
    ".nut": "squirrel",
    # Shells and scripting.
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".ksh": "bash",
    ".fish": "fish",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".psd1": "powershell",
    ".vim": "vim",
    # Web and templates.
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".css": "css",
    ".scss": "scss",
    ".vue": "vue",
    ".svelte": "svelte",
    ".astro": "astro",
    ".twig": "twig",
    ".erb": "embeddedtemplate",
    ".ejs": "embeddedtemplate",
    ".heex": "heex",
    ".graphql": "graphql",
    ".gql": "graphql",
    # Data, configuration, build and docs.
    ".json": "json",
    ".jsonc": "json",
    ".geojson": "json",
    ".webmanifest": "json",
    ".jsonnet": "jsonnet",
    ".libsonnet": "jsonnet",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".properties": "properties",
    ".xml": "xml",
    ".xsd": "xml",
    ".xsl": "xml",
    ".xslt": "xml",
    ".plist": "xml",
    ".csproj": "xml",
    ".dtd": "dtd",
    ".csv": "csv",
    ".tsv": "tsv",
    ".sql": "sql",
    ".proto": "proto",
    ".thrift": "thrift",
    ".capnp": "capnp",
    ".smithy": "smithy",
    ".prisma": "prisma",
    ".hcl": "hcl",
    ".tf": "terraform",
    ".tfvars": "terraform",
    ".nix": "nix",
    ".bzl": "starlark",
    ".star": "starlark",
    ".bicep": "bicep",
    ".rego": "rego",
    ".kdl": "kdl",
    ".ron": "ron",
    ".cmake": "cmake",
    ".mk": "make",
    ".mak": "make",
    ".ninja": "ninja",
    ".gn": "gn",
    ".gni": "gn",
    ".dockerfile": "dockerfile",
    ".bb": "bitbake",
    ".bbappend": "bitbake",
    ".bbclass": "bitbake",
    ".pp": "puppet",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".org": "org",
    ".tex": "latex",
    ".sty": "latex",
    ".bib": "bibtex",
    ".typ": "typst",
    ".po": "po",
    ".pot": "po",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
}
"""Lower-cased file extension → language."""

_FILE_NAMES: dict[str, str] = {
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "CMakeLists.txt": "cmake",
    "meson.build": "meson",
    "meson_options.txt": "meson",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    "WORKSPACE.bazel": "starlark",
    "MODULE.bazel": "starlark",
    "Tiltfile": "starlark",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Podfile": "ruby",
    "Vagrantfile": "ruby",
    "Guardfile": "ruby",
    "Jenkinsfile": "groovy",
    "Kconfig": "kconfig",
    "go.mod": "gomod",
    "MANIFEST.in": "pymanifest",
    "requirements.txt": "requirements",
    "Pipfile": "toml",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    ".zshrc": "bash",
    ".vimrc": "vim",
    ".editorconfig": "ini",
    ".gitconfig": "ini",
}
"""Exact file name → language, for names that an extension does not tell."""

_INTERPRETERS: dict[str, str] = {
    "python": "python",
    "pypy": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "bun": "javascript",
    "deno": "typescript",
    "ts-node": "typescript",
    "tsx": "typescript",
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "ksh": "bash",
    "dash": "bash",
    "ash": "bash",
    "fish": "fish",
    "ruby": "ruby",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "luajit": "lua",
    "rscript": "r",
    "julia": "julia",
    "tclsh": "tcl",
    "wish": "tcl",
    "pwsh": "powershell",
    "elixir": "elixir",
    "escript": "erlang",
    "runghc": "haskell",
    "runhaskell": "haskell",
    "make": "make",
    "scala": "scala",
    "groovy": "groovy",
    "swift": "swift",
    "racket": "racket",
    "guile": "scheme",
    "sbcl": "commonlisp",
    "clojure": "clojure",
    "bb": "clojure",
    "dart": "dart",
}
"""Interpreter named by a shebang (version digits stripped, lower-cased) → language."""

_LANGUAGE_IDS: dict[str, str] = {
    "typescriptreact": "tsx",
    "javascriptreact": "javascript",
    "shellscript": "bash",
    "sh": "bash",
    "zsh": "bash",
    "csharp": "csharp",
    "c_sharp": "csharp",
    "objective-c": "objc",
    "objective-cpp": "objc",
    "cuda-cpp": "cuda",
    "makefile": "make",
    "git-commit": "gitcommit",
    "ignore": "gitignore",
    "jsonc": "json",
    "json5": "json",
    "tex": "latex",
    "dockercompose": "yaml",
    "github-actions-workflow": "yaml",
    "systemverilog": "verilog",
    "fortran-modern": "fortran",
    "fortranfreeform": "fortran",
    "erb": "embeddedtemplate",
    "django-html": "html",
    "vue-html": "html",
    "java-properties": "properties",
    "pip-requirements": "requirements",
    "bazel": "starlark",
    "proto3": "proto",
    "protobuf": "proto",
    "mdx": "markdown",
    "restructuredtext": "rst",
    "emacs-lisp": "elisp",
    "lisp": "commonlisp",
    "ocaml.interface": "ocaml_interface",
    "mysql": "sql",
    "postgres": "sql",
    "pgsql": "sql",
    "plsql": "sql",
    "xsl": "xml",
    "svg": "xml",
    "viml": "vim",
    "jenkinsfile": "groovy",
    "terraform-vars": "terraform",
}
"""LSP languageIds (as VS Code and other editors send them) that differ from the pack's names."""

_ONLY_BY_LANGUAGE_ID: frozenset[str] = frozenset({"matlab", "apex", "gitattributes", "gosum"})
"""Pack names that editors send as languageIds but no file name maps to here (".m" is objc)."""

_KNOWN: frozenset[str] = frozenset(
    (
        *_EXTENSIONS.values(),
        *_FILE_NAMES.values(),
        *_INTERPRETERS.values(),
        *_LANGUAGE_IDS.values(),
        *_ONLY_BY_LANGUAGE_ID,
    )
)
"""Every name this module returns; a languageId equal to one of them needs no mapping."""

_VERSION_SUFFIX = re.compile(r"[\d.]+$")


def language_for(path: PurePath, first_line: bytes = b"") -> str | None:
    """The language of a file, from its name or (when the name does not tell) its shebang."""
    return language_for_name(path.name) or language_from_shebang(first_line)


@lru_cache(maxsize=8192)
def language_for_name(name: str) -> str | None:
    """The language a file name tells by itself: an exact name, a family of names, or an
    extension. Cheap enough to call on every file of a scan before reading anything."""
    exact = _FILE_NAMES.get(name)
    if exact is not None:
        return exact
    dot = name.rfind(".")
    if dot > 0:
        by_extension = _EXTENSIONS.get(name[dot:].lower())
        if by_extension is not None:
            return by_extension
    if name.startswith(("Dockerfile.", "Containerfile.")):
        return "dockerfile"
    if name.startswith("requirements") and name.endswith((".txt", ".in")):
        return "requirements"
    return None


def has_extension(name: str) -> bool:
    """Whether the name has an extension; files without one may say their language in a
    shebang. A leading dot (".bashrc") is not an extension."""
    return name.rfind(".") > 0


def language_from_shebang(first_line: bytes) -> str | None:
    """The language of the interpreter a `#!` line names ("#!/usr/bin/env -S python3 -u")."""
    if not first_line.startswith(b"#!"):
        return None
    words = first_line[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "env":
        arguments = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not arguments:
            return None
        program = arguments[0].rsplit("/", 1)[-1]
    program = program.lower()
    return _INTERPRETERS.get(program) or _INTERPRETERS.get(_VERSION_SUFFIX.sub("", program))


def all_languages() -> frozenset[str]:
    """Every name this module can return (all of them grammars of the pack)."""
    return _KNOWN


def from_language_id(language_id: str) -> str | None:
    """The pack's name for an LSP languageId ("typescriptreact" → "tsx"); None when the pack
    has no grammar for it ("plaintext", "bat", ...)."""
    key = language_id.strip().lower()
    return _LANGUAGE_IDS.get(key) or (key if key in _KNOWN else None)
