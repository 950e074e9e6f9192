"""The LSP-free core of semantic tokens: Python's scoping rules, position units, deltas."""

from __future__ import annotations

from server.completion.cursor import parse
from server.features.semantic_tokens.encoding import Columns, apply_delta, delta, encode
from server.features.semantic_tokens.legend import FULL_LEGEND, Legend
from server.features.semantic_tokens.model import ProjectName, ProjectNames
from server.features.semantic_tokens.python import classify


def kinds(source: str, project: ProjectNames | None = None) -> list[str]:
    root = parse(source.encode(), "python")
    assert root is not None
    lines = source.split("\n")
    out = []
    for token in classify(root, project):
        word = lines[token.line][token.column : token.column + token.length]
        out.append(f"{token.line}:{word} {token.kind} {' '.join(sorted(token.modifiers))}".rstrip())
    return out


def test_class_bodies_are_not_seen_from_their_methods() -> None:
    source = "x = 1\nclass A:\n    x = 2\n    def m(self):\n        return x\n"
    assert kinds(source) == [
        "0:x variable declaration",
        "1:A class declaration",
        "2:x property declaration",
        "3:m method declaration",
        "3:self parameter declaration",
        "4:x variable",  # the module's x, not the class attribute
    ]


def test_a_name_bound_anywhere_in_a_function_is_local_to_all_of_it() -> None:
    source = "def f():\n    print(y)\n    y = 1\n"
    assert "1:y variable" in kinds(source)
    assert "2:y variable declaration" in kinds(source)


def test_global_nonlocal_comprehension_and_walrus_scopes() -> None:
    source = (
        "LIMIT = 3\n"
        "def f(items):\n"
        "    global LIMIT\n"
        "    LIMIT = 4\n"
        "    total = 0\n"
        "    def g():\n"
        "        nonlocal total\n"
        "        total += 1\n"
        "    return [n for n in items if (big := n) > LIMIT], big\n"
    )
    found = kinds(source)
    assert "3:LIMIT variable declaration readonly" not in found  # bound in the module
    assert "3:LIMIT variable readonly" in found
    assert "7:total variable" in found
    assert "8:n variable declaration" in found
    assert "8:big variable declaration" in found  # `:=` binds in f, not the comprehension
    assert "8:big variable" in found


def test_builtins_unknown_imports_and_project_imports() -> None:
    project = ProjectNames(
        {"Repo": ProjectName("class", True), "CAPACITY": ProjectName("variable", True, True)}
    )
    source = (
        "from os import path\nfrom store import Repo, CAPACITY\nfrom typing import Any\n"
        "len(Repo, CAPACITY, Any, path, undefined_name)\n"
    )
    found = kinds(source, project)
    assert "3:len function defaultLibrary" in found
    assert "3:Repo class crossFile" in found
    assert "3:CAPACITY variable crossFile readonly" in found
    assert "3:Any class" in found
    assert "3:path function" in found
    assert not any("undefined_name" in token for token in found)


def test_columns_count_utf16_units_after_non_bmp_characters() -> None:
    source = 's = "😀é"; t = s\n'
    root = parse(source.encode(), "python")
    assert root is not None
    tokens = classify(root)
    data = encode(tokens, FULL_LEGEND, Columns(source, "utf-16"))
    # `t` follows `s = "` (5), the emoji (a surrogate pair: 2), `é` (1) and `"; ` (3)
    assert data[5:7] == [0, 11] and data[10:12] == [0, 4]
    data8 = encode(tokens, FULL_LEGEND, Columns(source, "utf-8"))
    assert data8[5:7] == [0, 14]  # 4 bytes for the emoji, 2 for é
    data32 = encode(tokens, FULL_LEGEND, Columns(source, "utf-32"))
    assert data32[5:7] == [0, 10]


def test_a_legend_without_some_kinds_falls_back_or_drops_them() -> None:
    legend = Legend.for_client(["function", "variable"], [])
    assert legend.token_types == ("function", "variable")
    assert legend.type_index["method"] == 0
    assert legend.type_index["property"] == 1
    assert "class" not in legend.type_index  # no class nor type: class names are not sent
    assert legend.token_modifiers == ("crossFile",)


def test_delta_and_apply_delta_round_trip() -> None:
    old = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    for new in ([0, 1, 9], [], old, [7, *old, 7], [0, 1, 2, 30, 40, 5, 6, 7, 8, 9]):
        start, count, inserted = delta(old, new)
        assert apply_delta(old, [(start, count, inserted)]) == new
