"""Per-language syntax: for each language, the tree-sitter node types that name, call, open
a scope or hold statements, and its import statement pattern; and the node kinds and words
that the walk and the text readers skip.

Data only: what differs between languages is looked up here, so the code that reads the
trees and the text stays the same for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

# --- per-language syntax --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Syntax:
    identifiers: frozenset[str]
    """Leaf types that name something and are recorded on their own."""
    members: Mapping[str, tuple[str, str]]
    """Node type -> (object field, member name field): `a.b`, `a::b`."""
    calls: Mapping[str, str]
    """Node type -> the field holding what is called (or constructed)."""
    scopes: Mapping[str, str]
    """Node type -> "class" or "function"."""
    blocks: frozenset[str]
    """Nodes whose children are statements."""
    selves: frozenset[str] = frozenset()
    """How the current object is written: "self", "this"."""
    import_pattern: re.Pattern[str] | None = None
    """An import statement, matched at the start of a line."""
    import_keywords: tuple[str, ...] = ()
    """Words every import statement holds on its first line."""


_TS_SYNTAX: Final = _Syntax(
    identifiers=frozenset({"identifier", "type_identifier", "this"}),
    members={
        "member_expression": ("object", "property"),
        "nested_type_identifier": ("module", "name"),
    },
    calls={"call_expression": "function", "new_expression": "constructor"},
    scopes={
        "class_declaration": "class",
        "abstract_class_declaration": "class",
        "interface_declaration": "class",
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "method_definition": "function",
    },
    blocks=frozenset({"program", "statement_block", "class_body"}),
    selves=frozenset({"this"}),
    import_pattern=re.compile(
        r"^[ \t]*import[ \t\n]+(?:type[ \t]+)?(?:[^;'\"]*?[ \t\n}]from[ \t\n]*)?"
        r"[\"'][^\"'\n]*[\"']"
        r"|^[ \t]*(?:const|let|var)[ \t]+\w+[ \t]*=[ \t]*"
        r"require\([ \t]*[\"'][^\"'\n]*[\"'][ \t]*\)",
        re.M,
    ),
    import_keywords=("import", "require"),
)

_PY_IMPORTED = r"(?:[ \t]*(?=[(*])|(?:[ \t]|\\\n)+(?=[(*]|[^\W\d]))"
"""After `from M import`: what it imports starts here (a name, `*` or `(`). A bare `import`,
or one followed by nothing a name can start with, is no statement: matched as one, a line
of text reading "import " came back as an import of the file's head."""
_PY_IMPORT = re.compile(  # a statement runs on in (...) or past lines ending in a backslash
    rf"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import{_PY_IMPORTED}(?:\([^)]*\)|(?:[^\n]*\\\n)*[^\n]*)"
    r"|import(?:[ \t]|\\\n)+(?=[^\W\d])(?:[^\n]*\\\n)*[^\n]*)",
    re.M,
)

_SYNTAX: Final[dict[str, _Syntax]] = {
    "python": _Syntax(
        identifiers=frozenset({"identifier"}),
        members={"attribute": ("object", "attribute")},
        calls={"call": "function"},
        scopes={"function_definition": "function", "class_definition": "class"},
        blocks=frozenset({"module", "block"}),
        selves=frozenset({"self", "cls"}),
        import_pattern=_PY_IMPORT,
        import_keywords=("import",),
    ),
    "typescript": _TS_SYNTAX,
    "tsx": _TS_SYNTAX,
    "javascript": _TS_SYNTAX,
    "go": _Syntax(
        identifiers=frozenset({"identifier", "type_identifier"}),
        members={
            "selector_expression": ("operand", "field"),
            "qualified_type": ("package", "name"),
        },
        calls={"call_expression": "function", "composite_literal": "type"},
        scopes={
            "function_declaration": "function",
            "method_declaration": "function",
            "type_spec": "class",
        },
        blocks=frozenset({"source_file", "block", "statement_list"}),
        import_pattern=re.compile(r"^import[ \t]*(?:\([^)]*\)|[^\n]*)", re.M),
        import_keywords=("import",),
    ),
    "java": _Syntax(
        identifiers=frozenset({"identifier", "type_identifier", "this"}),
        members={"field_access": ("object", "field"), "method_invocation": ("object", "name")},
        calls={"object_creation_expression": "type"},
        scopes={
            "class_declaration": "class",
            "interface_declaration": "class",
            "enum_declaration": "class",
            "record_declaration": "class",
            "method_declaration": "function",
            "constructor_declaration": "function",
        },
        blocks=frozenset({"program", "block", "class_body", "constructor_body"}),
        selves=frozenset({"this"}),
        import_pattern=re.compile(r"^[ \t]*import[ \t]+(?:static[ \t]+)?[\w.*]+[ \t]*;", re.M),
        import_keywords=("import",),
    ),
    "rust": _Syntax(
        identifiers=frozenset({"identifier", "type_identifier", "self"}),
        members={
            "field_expression": ("value", "field"),
            "scoped_identifier": ("path", "name"),
            "scoped_type_identifier": ("path", "name"),
        },
        calls={"call_expression": "function", "struct_expression": "name"},
        scopes={
            "function_item": "function",
            "impl_item": "class",
            "struct_item": "class",
            "trait_item": "class",
            "enum_item": "class",
            "mod_item": "class",
        },
        blocks=frozenset({"source_file", "block", "declaration_list"}),
        selves=frozenset({"self"}),
        import_pattern=re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+[^;]+;", re.M),
        import_keywords=("use",),
    ),
}

_TYPE_WRAPPERS: Final = frozenset(
    {
        "Optional", "Union", "List", "list", "Dict", "dict", "Set", "set", "FrozenSet",
        "frozenset", "Tuple", "tuple", "None", "Sequence", "Iterable", "Iterator", "Mapping",
        "MutableMapping", "Awaitable", "Coroutine", "Callable", "Type", "type", "ClassVar",
        "Final", "Annotated", "Literal", "Any", "typing", "collections", "abc", "Generator",
        "AsyncIterator", "AsyncGenerator", "str", "int", "float", "bool", "bytes", "object",
        "Box", "Rc", "Arc", "Option", "Result", "Vec", "RefCell", "Cell", "Mutex", "RwLock",
        "Promise", "Array", "ReadonlyArray", "Partial", "Readonly", "Record", "Map",
        "string", "number", "boolean", "void", "any", "unknown", "never", "undefined", "null",
        "error", "var", "mut", "dyn", "impl", "Self", "String", "Integer", "Long", "Boolean",
        "Double", "Object", "ArrayList", "HashMap", "HashSet", "const",
        "self", "crate", "super", "func", "chan", "map", "interface",
    }
)  # fmt: skip
"""Generic wrappers and builtins skipped when reading a type: `Optional[Repo]` is a Repo."""

_OPAQUE: Final = frozenset(
    {
        "call", "argument_list", "string", "concatenated_string", "binary_operator",
        "boolean_operator", "comparison_operator", "not_operator", "unary_operator",
        "list", "dictionary", "tuple", "set", "subscript", "attribute", "lambda",
        "conditional_expression", "parenthesized_expression", "list_comprehension",
        "dictionary_comprehension", "set_comprehension", "generator_expression",
        "keyword_argument", "return_statement", "raise_statement", "assert_statement",
        "delete_statement", "comment", "decorator", "call_expression", "arguments",
        "member_expression", "binary_expression", "template_string", "object", "array",
        "arrow_function", "selector_expression", "composite_literal", "literal_value",
        "interpreted_string_literal", "raw_string_literal", "method_invocation",
        "field_access", "object_creation_expression", "string_literal", "field_expression",
        "macro_invocation", "token_tree", "struct_expression", "line_comment", "block_comment",
    }
)  # fmt: skip
"""Expressions that hold no declarations: not walked into above the lines whose names
are read."""
_STRING_KINDS: Final = frozenset(
    {
        "string", "string_content", "string_fragment", "template_string", "string_literal",
        "interpreted_string_literal", "raw_string_literal", "char_literal", "escape_sequence",
    }
)  # fmt: skip
_TEXT_ONLY: Final = frozenset(
    {"string_content", "string_fragment", "escape_sequence", "string_start", "string_end"}
)
"""The parts of a string literal outside its interpolations: no names in them (a table of
`\\u0041-\\u005a` ranges is thousands of escape sequences)."""
_NO_NAMES: Final = _TEXT_ONLY | {"integer", "float", "true", "false", "none", "comment"}
"""Leaves a walk has nothing to read in: the string parts, numbers, constants, comments."""
_KEYWORDS: Final = frozenset(
    {"if", "elif", "while", "for", "return", "switch", "catch", "and", "or", "not", "in",
     "with", "assert", "yield", "await", "match", "case", "sizeof", "typeof", "def", "fn", "func"}
)  # fmt: skip
"""Words before a "(" that are not calls."""
_PY_HEADER: Final = re.compile(r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_PY_CLAUSES: Final = ("else", "elif", "except", "finally", "case")
_WORD: Final = re.compile(r"[A-Za-z_$][\w$]*")
_IDENT_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
