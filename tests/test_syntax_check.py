"""The parse filter: a suggestion may not break a file that parsed."""

from server.completion.syntax_check import keep_parsing

FILE = "import os\n\n\ndef f(xs):\n    total = 0\n    \n    return total\n\n\ndef g():\n    pass\n"
CURSOR = FILE.index("    \n    return") + 4


def test_a_suggestion_that_parses_is_kept() -> None:
    assert keep_parsing(FILE, CURSOR, "for x in xs:\n        total += x", "python") == (
        "for x in xs:\n        total += x"
    )


def test_a_block_is_cut_back_to_the_lines_that_parse() -> None:
    broken = "for x in xs:\n        total += x\n    if total >"
    assert keep_parsing(FILE, CURSOR, broken, "python") == "for x in xs:\n        total += x"


def test_a_line_that_breaks_the_file_is_dropped() -> None:
    assert keep_parsing(FILE, CURSOR, "total = (1 +", "python") == ""


def test_a_file_that_did_not_parse_before_is_left_alone() -> None:
    typing = FILE.replace("    return total", "    return (total")
    assert keep_parsing(typing, CURSOR, "total = (1 +", "python") == "total = (1 +"


def test_languages_without_a_grammar_are_not_checked() -> None:
    assert keep_parsing(FILE, CURSOR, "total = (1 +", None) == "total = (1 +"


def test_the_window_ignores_errors_far_from_the_cursor() -> None:
    far = "def broken(:\n    pass\n\n\n" + FILE
    cursor = far.index("    \n    return") + 4
    assert keep_parsing(far, cursor, "total = (1 +", "python") == ""


def test_other_languages_are_checked_with_their_grammar() -> None:
    source = "function f(xs) {\n  let t = 0;\n  \n  return t;\n}\n"
    cursor = source.index("  \n  return") + 2
    assert keep_parsing(source, cursor, "t += xs.length;", "javascript") == "t += xs.length;"
    assert keep_parsing(source, cursor, "t += (xs.length;", "javascript") == ""
