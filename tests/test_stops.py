"""Where suggestions end: mode choice and the stop rules, on plain strings."""

from server.completion.stops import Mode, analyse_cursor, apply_stops, salvage


def test_mid_line_cursor_wants_one_line() -> None:
    shape = analyse_cursor("    total = compute(", "a, b)\n    return total\n")
    assert shape.mode is Mode.LINE
    assert shape.line_suffix == "a, b)"


def test_end_of_statement_wants_one_line() -> None:
    assert analyse_cursor("x = 1 + ", "\n").mode is Mode.LINE


def test_blank_line_wants_a_block_at_its_indentation() -> None:
    shape = analyse_cursor("def f():\n    x = 1\n    ", "\n")
    assert shape.mode is Mode.BLOCK
    assert shape.block_indent == 4


def test_block_opener_wants_a_deeper_block() -> None:
    shape = analyse_cursor("    def area(self) -> float:", "\n\n    def other(self): ...\n")
    assert shape.mode is Mode.BLOCK
    assert shape.block_indent == 5
    assert shape.next_line == "def other(self): ..."


def test_closing_brackets_after_cursor_still_allow_a_block() -> None:
    assert analyse_cursor("items = [\n    ", ")]\n").mode is Mode.BLOCK


def test_line_mode_stops_at_the_end_of_the_line() -> None:
    shape = analyse_cursor("x = ", "\n")
    assert apply_stops("compute(1)", shape, final=False) == ("compute(1)", False)
    assert apply_stops("compute(1)\ny = 2", shape, final=False) == ("compute(1)", True)


def test_line_mode_drops_a_repeated_rest_of_line() -> None:
    shape = analyse_cursor("total = compute(", "a, b)\n")
    assert apply_stops("a, b)\n", shape, final=False) == ("", True)
    assert apply_stops("x, y, a, b)", shape, final=True) == ("x, y,", True)


def test_block_mode_stops_when_indentation_falls_below_the_block() -> None:
    shape = analyse_cursor("def f(x):", "\n")
    text = "\n    y = x + 1\n    return y\n\ndef g():\n    pass"
    assert apply_stops(text, shape, final=False) == ("\n    y = x + 1\n    return y", True)


def test_block_mode_waits_for_more_while_the_block_goes_on() -> None:
    shape = analyse_cursor("def f(x):", "\n")
    assert apply_stops("\n    y = x", shape, final=False) == ("\n    y = x", False)


def test_block_mode_stops_before_a_line_that_repeats_the_suffix() -> None:
    shape = analyse_cursor("def f(x):\n    ", "\n    return y\n")
    text = "y = x * 2\n    return y\n"
    assert apply_stops(text, shape, final=False) == ("y = x * 2", True)


def test_block_mode_caps_the_number_of_lines() -> None:
    shape = analyse_cursor("def f():\n    ", "", max_lines=3)
    assert apply_stops("a = 1\n    b = 2\n    c = 3\n    d = 4", shape, final=False) == (
        "a = 1\n    b = 2\n    c = 3",
        True,
    )


def test_block_mode_handles_tabs_as_indentation() -> None:
    shape = analyse_cursor("func f() {", "\n}")
    assert shape.mode is Mode.BLOCK
    assert apply_stops("\n\treturn 1\n}", shape, final=False) == ("\n\treturn 1", True)


def test_salvage_of_a_broken_stream_keeps_whole_lines_of_a_block_only() -> None:
    block = analyse_cursor("def f():\n    ", "")
    assert salvage("a = 1\n    b = 2\n    c = wor", block) == "a = 1\n    b = 2"
    assert salvage("a = partial", block) == ""
    assert salvage("anything", analyse_cursor("x = ", "")) == ""


def test_unindented_blank_line_takes_its_block_from_the_lines_around() -> None:
    shape = analyse_cursor('def f(xs):\n    """Doc."""\n', "\n        return x\n")
    assert shape.mode is Mode.BLOCK
    assert shape.block_indent == 4
    restart = "    for x in xs:\n        print(x)\nfrom typing import List\n"
    assert apply_stops(restart, shape, final=False) == ("    for x in xs:\n        print(x)", True)


def test_unindented_blank_line_under_an_opener_wants_a_deeper_block() -> None:
    shape = analyse_cursor("def f(xs):\n", "\n\ndef g():\n    pass\n")
    assert shape.block_indent == 1
    assert apply_stops("    return 1\ndef h():", shape, final=False) == ("    return 1", True)


def test_the_line_above_a_blank_line_is_found_however_far_up() -> None:
    """Read from the end of a long prefix a few KB at a time: blank lines past the first
    read, and a long file above, change nothing."""
    long_file = "x = 1\n" * 20_000
    shape = analyse_cursor(long_file + "def f(xs):\n" + "\n" * 5_000, "\n\ndef g():\n")
    assert shape.block_indent == 1
    shape = analyse_cursor("  " * 3_000 + "\n" * 100, "\n")
    assert shape.block_indent == 0  # nothing filled above: the line below decides


def test_line_mode_stops_before_a_bracket_the_suffix_closes() -> None:
    shape = analyse_cursor("total = compute(", ")\n")
    assert shape.closer == ")"
    assert apply_stops("a, b(c)) + 1", shape, final=False) == ("a, b(c)", True)
    assert apply_stops("a, b(c", shape, final=False) == ("a, b(c", False)


def test_line_mode_keeps_a_bracket_the_suffix_does_not_close() -> None:
    shape = analyse_cursor("total = compute(", "\n")
    assert apply_stops("a, b) + 1\n", shape, final=False) == ("a, b) + 1", True)


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    shape = analyse_cursor("log(", ")\n")
    assert apply_stops("')' + x)", shape, final=False) == ("')' + x", True)
    block = analyse_cursor("int f() {\n", "}\n")
    text = "    // a } in a comment\n    return 1;\n}\n"
    assert apply_stops(text, block, final=False) == ("    // a } in a comment\n    return 1;", True)


def test_block_mode_stops_at_a_closing_bracket_the_suffix_supplies() -> None:
    shape = analyse_cursor("items = [\n", "];\nnext();\n")
    assert shape.closer == "]"
    assert apply_stops("    1,\n    2,\n];\nmore", shape, final=False) == ("    1,\n    2,", True)


def test_block_mode_drops_a_line_repeated_in_a_loop() -> None:
    shape = analyse_cursor("def f():\n    ", "\n")
    text = "x += 1\n    x += 1\n    x += 1\n"
    assert apply_stops(text, shape, final=False) == ("x += 1", True)


def test_trailing_whitespace_is_trimmed_from_every_line() -> None:
    shape = analyse_cursor("def f():\n    ", "\n")
    assert apply_stops("a = 1   \n    b = 2\t\n\n", shape, final=True) == ("a = 1\n    b = 2", True)


def test_at_the_end_of_a_line_the_suggestion_may_be_the_next_line() -> None:
    shape = analyse_cursor("def f():\n    x = 1", "\n")
    assert apply_stops("\n    y = 2\n    z = 3", shape, final=False) == ("\n    y = 2", True)
    middle = analyse_cursor("def f():\n    x = (1", ")\n")
    assert apply_stops("\n    y = 2", middle, final=False) == ("", True)


def test_a_block_leaves_its_indentation_only_to_open_the_block_below() -> None:
    """The text after the cursor may be the body of a block the hole opens: here the
    `else` whose body the line below is. A sibling branch the model adds before a line
    that is not in it is cut."""
    shape = analyse_cursor("def f(x):\n    if x == 1:\n", "\n        y = 2\n    return y\n")
    assert shape.block_indent == 5
    text = "        y = 1\n    else:\n        y = 2\n    return y\n"
    assert apply_stops(text, shape, final=False) == ("        y = 1\n    else:", True)
    shape = analyse_cursor("def f(x):\n    if x == 1:\n", "\n    else:\n        y = 2\n")
    text = "        y = 1\n    elif x == 2:\n        y = 3\n    else:\n"
    assert apply_stops(text, shape, final=False) == ("        y = 1", True)


def test_a_block_goes_below_the_line_below_only_to_end_in_its_opener() -> None:
    """Lines below both the block and the line below the cursor are kept when the block
    ends in an opener that line belongs under, and cut when it does not."""
    prefix = "def f(xs):\n    total = 0\n    for x in xs:\n        if x < 0:\n"
    shape = analyse_cursor(prefix, "\n        return total\n    return 0\n")
    opens = "            continue\n        total += x\n    if total > 10:\n        return total\n"
    assert apply_stops(opens, shape, final=False) == (
        "            continue\n        total += x\n    if total > 10:",
        True,
    )
    returns = "            continue\n        total += x\n    return total\n"
    assert apply_stops(returns, shape, final=True) == ("            continue", True)
    shape = analyse_cursor("def f(x):\n    if x:\n", "\n        return 1\n")
    top_level = "        y = 1\nif y:\n        return 1\n"
    assert apply_stops(top_level, shape, final=False) == ("        y = 1", True)


def test_the_line_below_is_repeated_only_at_its_own_indentation() -> None:
    """The same statement deeper in the block is new code, not the model running on."""
    prefix = "def f(s):\n    out = []\n    for c in s:\n"
    shape = analyse_cursor(prefix, "\n        out.append(c)\n    return out\n")
    text = "        if c == '(':\n            out.append(c)\n        out.append(c)\n"
    assert apply_stops(text, shape, final=False) == (
        "        if c == '(':\n            out.append(c)",
        True,
    )


def test_a_blank_line_of_a_crlf_file_wants_a_block() -> None:
    """The carriage return ending the cursor's line is part of the line break, not text
    after the cursor."""
    shape = analyse_cursor("def f(x):\r\n    ", "\r\n    return y\r\n")
    assert shape.mode is Mode.BLOCK
    assert shape.line_suffix == ""
    text = "y = x + 1\r\n    y *= 2\r\n    return y\r\n"
    assert apply_stops(text, shape, final=False) == ("y = x + 1\n    y *= 2", True)


def test_at_the_end_of_the_file_a_block_may_leave_its_indentation() -> None:
    """Nothing below to fit: the rest of the function is kept, the next top-level
    statement is not."""
    shape = analyse_cursor("def f(xs):\n    total = 0\n    for x in xs:\n", "")
    assert shape.block_indent == 5
    text = "        total += x\n    return total\n\nprint(f([1]))\n"
    assert apply_stops(text, shape, final=False) == ("        total += x\n    return total", True)
