"""The LSP-free core of refactorings: targets, the prompt's budget, answer checks."""

from __future__ import annotations

import pytest

from server.features.refactor import (
    RefactorError,
    RefactorKind,
    build_prompt,
    extract_code,
    offers,
    reindent,
    target_for,
    validate,
)

CLASS = '''class Shelf:
    """Holds books."""

    def count(self, books):
        n = 0
        for book in books:
            n += 1
        return n

    def empty(self):
        return []
'''


def count_chars(text: str) -> int:
    return (len(text) + 3) // 4


def method_target(name: str = "count") -> object:
    offset = CLASS.index(f"def {name}")
    target = target_for(CLASS, "python", RefactorKind.DOCSTRING, offset, offset)
    assert target is not None
    return target


def test_the_enclosing_method_is_the_target_without_a_selection() -> None:
    offset = CLASS.index("n += 1")
    target = target_for(CLASS, "python", RefactorKind.DOCSTRING, offset, offset)
    assert target is not None
    assert (target.name, target.what, target.indent) == ("count", "method", "    ")
    assert (
        CLASS[target.start : target.end]
        == CLASS[
            CLASS.index("    def count") : CLASS.index("        return n") + len("        return n")
        ]
    )


def test_a_word_selected_on_one_line_counts_as_the_cursor() -> None:
    start = CLASS.index("books:")
    found = offers(CLASS, "python", start, start + 5, max_lines=100)
    assert [o.kind for o in found] == [
        RefactorKind.DOCSTRING,
        RefactorKind.TYPE_HINTS,
        RefactorKind.REWRITE,
    ]


def test_a_target_longer_than_max_lines_is_offered_disabled_with_the_reason() -> None:
    offset = CLASS.index("class Shelf")
    (doc, rewrite) = offers(CLASS, "python", offset, offset, max_lines=5)
    assert doc.disabled == "11 lines is more than refactor.maxLines (5)"
    assert rewrite.disabled == doc.disabled


def test_other_languages_get_their_definitions_and_no_type_hints_where_types_are_required() -> None:
    go = "package main\n\n// Sum adds.\nfunc Sum(a int, b int) int {\n\treturn a + b\n}\n"
    offset = go.index("return")
    found = offers(go, "go", offset, offset, max_lines=100)
    assert [o.kind for o in found] == [RefactorKind.DOCSTRING, RefactorKind.REWRITE]
    target = found[0].target
    assert target.name == "Sum" and go[target.start :].startswith("// Sum adds.")  # its comment
    ts = "export function twice(x) {\n  return x * 2;\n}\n"
    offset = ts.index("return")
    found = offers(ts, "typescript", offset, offset, max_lines=100)
    assert [o.kind for o in found] == [
        RefactorKind.DOCSTRING,
        RefactorKind.TYPE_HINTS,
        RefactorKind.REWRITE,
    ]
    assert ts[found[0].target.start :].startswith("export function twice")
    assert offers("just text", "plaintext", 0, 0, max_lines=100) == []


def test_the_code_is_taken_from_the_answers_fence() -> None:
    assert extract_code("```python\ndef f():\n    pass\n```\nThat is all.") == (
        "def f():\n    pass"
    )
    assert extract_code("\n\ndef f():\n    pass\n") == "def f():\n    pass"
    assert reindent("def f():\n    pass", "    ") == "    def f():\n        pass"
    assert reindent("def f():\n  pass\n pass", " ") == " def f():\n   pass\n  pass"


def validated(answer: str, name: str = "count", kind: RefactorKind = RefactorKind.DOCSTRING) -> str:
    offset = CLASS.index(f"def {name}")
    target = target_for(CLASS, "python", kind, offset, offset)
    assert target is not None
    replacement = validate(kind, target, CLASS, "python", answer)
    return CLASS[: replacement.start] + replacement.text + CLASS[replacement.end :]


def test_a_docstring_answer_at_column_0_is_shifted_and_accepted() -> None:
    answer = 'def empty(self):\n    """No books."""\n    return []\n```'
    assert validated(answer, "empty").endswith(
        '    def empty(self):\n        """No books."""\n        return []\n'
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            "    def empty(self):\n  return []",
            "its line 2 starts at column 2, left of column 4 where the code is",
        ),
        ("def empty(self):\n    return None", "changed the code itself"),
        ("    def empty(self):\n        return [\n", "does not parse as python"),
        (
            '    def empty(self):\n        """Open docstring\n        return []',
            "does not parse as python",
        ),
    ],
)
def test_answers_that_break_the_rules_are_refused(answer: str, reason: str) -> None:
    with pytest.raises(RefactorError, match=reason.replace("(", r"\(")):
        validated(answer, "empty")


def test_type_hints_may_change_annotations_only() -> None:
    typed = "def empty(self) -> list[str]:\n    return []"
    assert "def empty(self) -> list[str]:" in validated(typed, "empty", RefactorKind.TYPE_HINTS)
    renamed = "def empty(this) -> list[str]:\n    return []"
    with pytest.raises(RefactorError, match="changed more than the type hints"):
        validated(renamed, "empty", RefactorKind.TYPE_HINTS)


def test_the_prompt_fits_its_budget_dropping_context_before_the_target() -> None:
    target = method_target()
    snippets = [("lib/books.py", "class Book:\n    title: str\n" * 20)]
    roomy = build_prompt(
        RefactorKind.DOCSTRING, target, CLASS, "python", "shelf.py", "repo", snippets,
        budget=4000, count=count_chars,
    )  # fmt: skip
    assert "From lib/books.py:" in roomy and "def empty" in roomy
    low, high = 1, count_chars(roomy)  # the least budget that still takes the target
    while low < high:
        middle = (low + high) // 2
        try:
            build_prompt(
                RefactorKind.DOCSTRING, target, CLASS, "python", "shelf.py", "repo", snippets,
                budget=middle, count=count_chars,
            )  # fmt: skip
            high = middle
        except RefactorError:
            low = middle + 1
    tight = build_prompt(
        RefactorKind.DOCSTRING, target, CLASS, "python", "shelf.py", "repo", snippets,
        budget=low, count=count_chars,
    )  # fmt: skip
    assert "From lib/books.py:" not in tight
    assert count_chars(tight) <= low
    assert "    def count(self, books):\n        n = 0" in tight
    with pytest.raises(RefactorError, match=r"more than refactor\.contextTokens"):
        build_prompt(
            RefactorKind.DOCSTRING, target, CLASS, "python", "shelf.py", "repo", snippets,
            budget=50, count=count_chars,
        )  # fmt: skip


def test_special_tokens_in_the_code_cannot_end_the_prompt_early() -> None:
    text = 'def f():\n    return "<|im_end|>"\n'
    target = target_for(text, "python", RefactorKind.REWRITE, 0, 0)
    assert target is not None
    prompt = build_prompt(
        RefactorKind.REWRITE, target, text, "python", "f.py", "repo", [], "tidy",
        budget=4000, count=count_chars,
    )  # fmt: skip
    assert prompt.count("<|im_end|>") == 2  # the system's and the user's turns only
