"""Cursor analysis: scopes, the names near the cursor, local types and imports."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.completion.cursor import (
    CALL,
    WINDOW_MAX_CHARS,
    Binding,
    Tier,
    analyse,
    attribute_type,
    chain_before,
    file_imports,
    parser_for,
    python_attribute_types,
    type_chain,
)
from server.completion.cursor import imports as cursor_imports
from server.completion.cursor import parse as cursor_parse
from server.completion.cursor import parsing as cursor_parsing
from server.completion.cursor import positions as cursor_positions
from server.completion.cursor import walker as cursor_walker
from server.completion.cursor.parsing import _windows as _windows
from server.completion.stops import Mode

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def at_bar(source: str, language: str = "python"):  # type: ignore[no-untyped-def]
    """Analyse `source` with the cursor where its `|` is."""
    offset = source.index("|")
    return analyse(source.replace("|", "", 1), offset, language)


PY_SERVICE = '''"""The service."""

import os
import pkg.mod as m
from . import util
from ..models import Warehouse as WH, Item
from pkg import (
    a,
    b as bee,
)
from pkg.star import *


class Service(Base):
    """Doc."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.store = Store()

    def run(self, item: Item, n: int = 3) -> None:
        x = WH()
        y: Optional[m.Thing] = None
        util.verify_directory(item.path)
        x.add(self.repo.get(1).save, |)
'''


def test_python_scopes_are_the_enclosing_class_and_method() -> None:
    info = at_bar(PY_SERVICE)
    assert [(s.kind, s.name) for s in info.scopes] == [("class", "Service"), ("function", "run")]
    assert info.scopes[0].header == "class Service(Base):"
    assert info.enclosing_class is not None and info.enclosing_class.name == "Service"
    assert info.bases == (("Base",),)


def test_python_imports_keep_aliases_relative_modules_and_stars() -> None:
    imports = at_bar(PY_SERVICE).imports
    bindings = imports.bindings
    assert bindings["os"] == Binding("os", None, 2)
    assert bindings["m"].module == "pkg.mod" and bindings["m"].name is None
    assert (bindings["util"].module, bindings["util"].name) == (".", "util")
    assert (bindings["WH"].module, bindings["WH"].name) == ("..models", "Warehouse")
    assert (bindings["Item"].module, bindings["Item"].name) == ("..models", "Item")
    assert (bindings["bee"].module, bindings["bee"].name) == ("pkg", "b")
    assert "a" in bindings
    assert imports.star == ("pkg.star",)


def test_python_plain_dotted_import_binds_the_dotted_name() -> None:
    bindings = file_imports("import a.b.c\nimport x.y as z\n", "python").bindings
    assert bindings["a.b.c"] == Binding("a.b.c", None, 0)
    assert bindings["z"] == Binding("x.y", None, 1)


def test_python_local_types_come_from_constructors_annotations_and_parameters() -> None:
    info = at_bar(PY_SERVICE)
    assert info.types["x"] == ("WH", CALL)
    assert info.types["y"] == ("m", "Thing")
    assert info.types["item"] == ("Item",)


def test_python_references_most_direct_first() -> None:
    info = at_bar(PY_SERVICE)
    chains = [r.chain for r in info.references]
    assert info.callee == ("x", "add")
    assert info.references[0].chain == ("x", "add") and info.references[0].tier == Tier.TYPED
    statement = [r.chain for r in info.references if r.tier == Tier.STATEMENT]
    assert ("self", "repo", "get", CALL, "save") in statement
    above = [r.chain for r in info.references if r.tier == Tier.ABOVE]
    assert above.index(("util", "verify_directory")) < above.index(("WH",))  # nearest first
    assert ("m", "Thing") in chains


def test_object_before_the_dot_is_the_target() -> None:
    info = at_bar("import util\n\ndef f(w: Warehouse):\n    w.ad|\n")
    assert info.target == ("w",) and info.partial == "ad"
    assert info.references[0].chain == ("w",) and info.references[0].tier == Tier.TARGET
    assert all(r.chain[:2] != ("w", "ad") for r in info.references)  # not the half-typed name


def test_chain_before_reads_calls_and_stops_at_expressions() -> None:
    text = "x = self.repo.get(1).sa"
    assert chain_before(text, len(text), "python") == (("self", "repo", "get", CALL), "sa", True)
    assert chain_before("verify_dir", 10, "python") == ((), "verify_dir", False)
    assert chain_before("(a + b).x", 9, "python") == ((), "x", True)
    assert chain_before("value = 1.5", 11, "python") == ((), "", False)
    assert chain_before("Repo::new", 9, "rust") == (("Repo",), "new", True)


def test_line_or_block_is_the_stop_rules_decision() -> None:
    assert at_bar("def f():\n    |\n").shape.mode is Mode.BLOCK
    assert at_bar("def f():\n    x = g(|)\n").shape.mode is Mode.LINE


def test_words_in_comments_and_strings_are_not_names() -> None:
    info = at_bar("import linecache\n\ndef f():\n    # see linecache.get|\n")
    assert info.in_prose == "comment"
    assert info.target == () and not any(r.tier >= Tier.TYPED for r in info.references)
    info = at_bar('def f():\n    """Check lin|\n')  # not closed yet
    assert info.in_prose == "string"
    assert not any(r.tier >= Tier.TYPED for r in info.references)


def test_a_cursor_in_a_docstring_reads_its_words_as_prose_not_names() -> None:
    """A window that would start inside a docstring starts at the cursor's line; that
    line's words were then read as names (`param`, `the`, ...) and looked up as
    definitions. The cursor is in a string, with no names to read."""
    prose = "".join(f"    :param arg_{n}: the argument number {n}.\n" for n in range(30))
    text = 'def f(repo):\n    """Summary.\n\n' + prose + '    :param re|po: the repo.\n    """\n'
    info = at_bar(text)
    assert info.in_prose == "string"
    assert {r.chain for r in info.references} <= {("re",)}  # the typed word alone


def test_a_multi_line_signature_is_the_cursors_statement() -> None:
    """The parameters above the cursor in a `def`'s signature are names of the cursor's
    statement, as they are while the `def` is unfinished and its window's parse cut it
    (a scope's body is never the statement; its header is)."""
    text = (
        "class C:\n    def run(\n        self,\n        repo: Repo,\n"
        "        store: Store,\n        lim|it: int,\n    ) -> None:\n        pass\n"
    )
    info = at_bar(text)
    tiers = {r.chain: r.tier for r in info.references}
    assert tiers[("Repo",)] == tiers[("Store",)] == Tier.STATEMENT
    assert tiers[("lim",)] == Tier.TYPED


def test_self_attribute_types_are_found_anywhere_in_the_file() -> None:
    text = (
        "class A:\n    cache: Cache\n\n"
        "    def __init__(self, repo: Repo, store):\n"
        "        self.repo = repo\n        self.store = Store(1)\n        self.n: int | None = 0\n"
    )
    assert attribute_type(text, "repo", "python") == ("Repo",)
    assert attribute_type(text, "store", "python") == ("Store",)
    assert attribute_type(text, "cache", "python") == ("Cache",)
    assert attribute_type(text, "n", "python") == ()
    assert attribute_type(text, "missing", "python") == ()


def test_every_attribute_type_of_a_file_at_once_equals_each_alone() -> None:
    """`python_attribute_types` (one pass, for a prepared file) answers as
    `attribute_type` does for each attribute: the first assignment that says a type, a
    parameter's annotation for a plain name, else a line-start annotation."""
    text = (
        "class A(Base):\n    cache: Cache\n    limit: int = 3\n\n"
        "    def __init__(self, repo: Repo, store, n):\n"
        "        self.count = 0\n        self.count = Counter()\n"
        "        self.repo = repo\n        self.store = store\n        self.stores = store\n"
        "        self.stores: list[Store] = []\n        self.n = n\n"
        "        self.cache.get(1)\n        myself.other = Other()\n"
        "        self.assertEqual(1, 1)\n"
    )
    names = ["count", "repo", "store", "stores", "cache", "limit", "n", "other", "assertEqual"]
    together = python_attribute_types(text)
    for name in names:
        assert together.get(name, ()) == attribute_type(text, name, "python"), name
    assert together["count"] == ("Counter",) and together["repo"] == ("Repo",)
    assert "other" not in together and "store" not in together


def test_attribute_types_are_found_past_hundreds_of_uses() -> None:
    """A test file uses `self.client` hundreds of times before (or without) assigning it:
    past the first few uses a regex skips to those an assignment follows, with the same
    answers (whole words only; a class-level annotation only at a line's start; `==` is
    not an assignment, and hundreds of comparisons do not hide the assignment)."""
    uses = (
        "    def test_{0}(self):\n        self.client.get({0})\n        myself.client = No()\n"
        "        assert self.client == Other()\n"
    )
    text = "class T:\n" + "".join(uses.format(n) for n in range(150))
    assigned = text + "    def setUp(self):\n        self.client = Client(app)\n"
    assert attribute_type(assigned, "client", "python") == ("Client",)
    assert attribute_type(text, "client", "python") == ()  # `myself.client` is not it
    annotated = text + "    x = 1; client: Session\n    client: Client\n"
    assert attribute_type(annotated, "client", "python") == ("Client",)


def test_type_chain_skips_wrappers() -> None:
    assert type_chain("Optional[repo.Repo]") == ("repo", "Repo")
    assert type_chain("list[Item] | None") == ("Item",)
    assert type_chain("Result<Vec<Store>, Error>") == ("Store",)
    assert type_chain("*store.Store") == ("store", "Store")
    assert type_chain("int") == ()


def test_large_file_is_analysed_from_a_window_with_scopes_above_it() -> None:
    methods = "".join(
        f"    def method_{i}(self, value: int) -> int:\n"
        + "".join(f"        value = value + {j}\n" for j in range(8))
        + "        return value\n\n"
        for i in range(200)
    )
    text = "from store import Store\n\n\nclass Big(Base):\n" + methods
    offset = text.index("def method_150") + 40
    offset = text.index("\n", offset) + 1 + len("        value = ")
    info = analyse(text, offset, "python")
    assert [s.name for s in info.scopes] == ["Big", "method_150"]
    assert info.scopes[0].line == 3
    assert info.window_start_line > 1000  # only the method was parsed
    assert info.imports.bindings["Store"].name == "Store"


def test_a_window_of_very_long_lines_is_kept_to_its_character_cap() -> None:
    """A generated table (10 KB string literals a line) parses in milliseconds a window:
    the window keeps the cursor's line and drops lines from the top."""
    ranges = "\\u0041-\\u005a" * 200
    table = "".join(f"T{i} = '{ranges}'\n" for i in range(40))
    text = "import store\n\n" + table + "def f(x):\n    return store.get(x)\n"
    offset = text.index("store.get(x)") + len("store.get(")
    info = analyse(text, offset, "python")
    parsed = _windows.last["python"][0]
    assert len(parsed) <= WINDOW_MAX_CHARS
    assert parsed.endswith(b"    return store.get(x)\n")
    assert ("store", "get") in [r.chain for r in info.references]
    assert info.callee == ("store", "get")


def test_a_window_does_not_start_inside_a_docstring() -> None:
    """Where the window's first line would be prose in a docstring, it starts after the
    docstring: prose parsed as code took error recovery milliseconds, and cost the
    analysis the names and types below it."""
    prose = "".join(
        f"    Paragraph {n} of the story, with no code in it at all.\n" for n in range(120)
    )
    body = "".join(f"    step_{n} = Step({n})\n" for n in range(30))
    text = (
        'import store\n\n\ndef long(repo: Repo):\n    """Summary.\n\n' + prose + '    """\n'
        "    found = store.Finder(repo)\n" + body + "    found.|"
    )
    info = at_bar(text)
    after_docstring = text.split("\n").index('    """')  # the docstring's last line
    assert info.window_start_line == after_docstring + 1
    assert info.types["found"] == ("store", "Finder", "()")
    assert info.target == ("found",)


TS_APP = """import { Warehouse as WH, Item } from "./models";
import * as util from "../util";
import Default from "./d";
const fs = require("fs");

export class App {
  constructor(private repo: Repo) {}

  run(item: Item): void {
    const w = new WH();
    const s: Store = make();
    w.|
  }
}
"""


def test_typescript_imports_types_and_scopes() -> None:
    info = at_bar(TS_APP, "typescript")
    bindings = info.imports.bindings
    assert (bindings["WH"].module, bindings["WH"].name) == ("./models", "Warehouse")
    assert (bindings["util"].module, bindings["util"].name) == ("../util", None)
    assert (bindings["Default"].module, bindings["Default"].name) == ("./d", "Default")
    assert (bindings["fs"].module, bindings["fs"].name) == ("fs", None)
    assert info.types["w"] == ("WH", CALL)
    assert info.types["s"] == ("Store",)
    assert info.types["item"] == ("Item",)
    assert attribute_type(TS_APP, "repo", "typescript") == ("Repo",)  # a parameter property
    assert [s.name for s in info.scopes] == ["App", "run"]
    assert info.target == ("w",)


GO_MAIN = """package main

import (
\t"fmt"
\tu "example.com/shop/util"
\t"example.com/shop/store"
\t"example.com/shop/api/v2"
)

func (a *App) Run(r repo.Repo) {
\ts := store.NewStore()
\tx := &Item{}
\tu.Verify(|)
}
"""


def test_go_imports_types_and_scopes() -> None:
    info = at_bar(GO_MAIN, "go")
    bindings = info.imports.bindings
    assert bindings["u"].module == "example.com/shop/util"
    assert bindings["store"].module == "example.com/shop/store"
    assert bindings["fmt"].module == "fmt"
    assert bindings["api"].module == "example.com/shop/api/v2"
    assert info.types["s"] == ("store", "NewStore", CALL)
    assert info.types["x"] == ("Item",)
    assert info.types["r"] == ("repo", "Repo")
    assert info.types["a"] == ("App",)
    assert info.callee == ("u", "Verify")
    assert [s.name for s in info.scopes] == ["Run"]


def test_java_and_rust_imports() -> None:
    java = file_imports(
        "import com.x.repo.Repo;\nimport static com.x.Util.verify;\nimport java.util.*;\n",
        "java",
    )
    assert java.bindings["Repo"].module == "com.x.repo" and java.bindings["Repo"].name == "Repo"
    assert java.bindings["verify"].name == "Util.verify"
    assert java.star == ("java.util",)
    rust = file_imports(
        "use crate::repo::{Repo, Item as It, sub::{A}};\nuse super::util;\nuse std::io::*;\n",
        "rust",
    )
    assert (rust.bindings["Repo"].module, rust.bindings["Repo"].name) == ("crate::repo", "Repo")
    assert (rust.bindings["It"].module, rust.bindings["It"].name) == ("crate::repo", "Item")
    assert rust.bindings["A"].module == "crate::repo::sub"
    assert (rust.bindings["util"].module, rust.bindings["util"].name) == ("super", "util")
    assert rust.star == ("std::io",)


def test_languages_without_a_grammar_still_get_the_text_parts() -> None:
    info = analyse("foo.bar.ba", 10, "plaintext")
    assert info.target == ("foo", "bar") and info.partial == "ba"
    assert info.scopes == () and info.imports.bindings == {}
    info = analyse("x.y", 3, None)
    assert info.target == ("x",)


IMPORTING = """from shapes import (
    Circle,
|)
from colours import Red
import os


def draw(canvas):
    \"\"\"Draws; see `import this` for the Zen.\"\"\"
    canvas.paint(Red)
|
    return canvas
"""


@pytest.mark.parametrize(
    ("typed", "reread"),
    [
        ("    x = Circle(1).area()", False),  # code: the imports stay
        ("    import json", True),  # a keyword
        ("    Square,", True),  # inside a parenthesised import
        ("    Square)", True),  # in an unfinished import (its ")" taken away): finishes it
    ],
)
def test_imports_follow_every_keystroke(
    typed: str, reread: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keystroke in a line of no import statement, with no import keyword, in a file
    with no unfinished import, reuses the last imports; any other edit reads them again.
    Either way each answer is that of a fresh read."""
    unfinished = typed == "    Square)"
    template = IMPORTING.replace("|)", "|", 1) if unfinished else IMPORTING
    first, second = (i for i, c in enumerate(template) if c == "|")
    place = first if typed.startswith("    Square") else second - 1
    source = template.replace("|", "")
    reads = []
    scan = cursor_imports._import_statements
    monkeypatch.setattr(
        cursor_imports, "_import_statements", lambda *a: reads.append(a) or scan(*a)
    )
    file_imports(source, "python")
    fresh = 0
    for length in range(1, len(typed) + 1):
        text = source[:place] + typed[:length] + source[place:]
        answer = file_imports(text, "python", place + length)
        cursor_imports._last_imports.clear()
        assert answer == file_imports(text, "python"), typed[:length]
        fresh += 1
    assert (len(reads) - 1 - fresh > 0) == reread
    if unfinished:
        assert "Square" in answer.bindings


def test_local_types_far_above_come_from_a_memo_of_their_statements() -> None:
    """Statements above the lines whose names count give only local types; those are
    kept by statement text, and a second analysis reads them back the same."""
    text = (
        "def f(store: Store):\n    repo = Repo()\n    if store:\n        cache: Cache = make()\n"
        + "    x = 1\n" * 20
        + "    repo."
    )
    cursor_walker._declared.by_statement.clear()
    first = analyse(text, len(text), "python")
    assert {k: first.types[k] for k in ("store", "repo", "cache")} == {
        "store": ("Store",),
        "repo": ("Repo", "()"),  # a call: resolved to what it returns
        "cache": ("Cache",),
    }
    assert len(cursor_walker._declared.by_statement) >= 3  # repo, the if (and cache in it), x
    cursor_parsing._windows.last.clear()
    assert analyse(text, len(text), "python") == first


def test_typing_key_by_key_analyses_as_a_fresh_parse_would() -> None:
    """The window is re-parsed incrementally from the previous keystroke's (and from
    another file's in between), the local types of the statements above the names and
    the names of those between them and the cursor's statement come from memos; every
    answer equals that of a parse and a walk from scratch."""
    typed = "        self.store.save(item, n=n, label=os.path.join('a', util.x))\n"
    head = PY_SERVICE.replace("|", "")
    other = "def other(a):\n    return a.b(\n"
    for length in range(len(typed) + 1):
        text = head + typed[:length]
        if length % 7 == 0:
            analyse(other, len(other), "python")  # a hover in another file
        incremental = analyse(text, len(text), "python")
        walked = len(cursor_walker._declared.walked)
        cursor_parsing._windows.last.clear()
        cursor_walker._declared.by_statement.clear()
        cursor_walker._declared.walked.clear()
        assert analyse(text, len(text), "python") == incremental, typed[:length]
        assert walked > 0  # the lines between the names' first and the cursor's


def test_the_whole_files_tree_analyses_as_its_window_does() -> None:
    """With the document's tree (the server's, from its opening), the analysis walks the
    same lines without parsing them: the same scopes, names and local types, here for
    every cursor of a file, away from where a window's cut changes the parse."""
    text = PY_SERVICE.replace("|", "") + "\n\ndef helper(x: WH) -> None:\n    y = x.run()\n"
    tree = parser_for("python").parse(text.encode())
    differ = []
    for offset in range(0, len(text), 3):
        cursor_walker._declared.by_statement.clear()
        cursor_walker._declared.walked.clear()
        window = analyse(text, offset, "python")
        whole = analyse(text, offset, "python", tree=tree)
        if whole != window:
            differ.append(offset)
    assert len(differ) <= len(text) // 3 // 20, differ  # a cut statement or two at most
    info = analyse(text, text.index("x.add(") + 2, "python", tree=tree)
    assert info.types["x"] == ("WH", "()") and info.types["item"] == ("Item",)
    assert info.target == ("x",)


def test_the_whole_files_tree_skips_the_statements_above_the_window() -> None:
    """In a long module the walk starts at the window's first line: the statements
    above it are neither names nor local types of the cursor."""
    above = "".join(f"far_{n} = Far{n}()\n" for n in range(400))
    text = above + "def f(store: Store):\n    near = Near()\n    near.\n"
    tree = parser_for("python").parse(text.encode())
    info = analyse(text, len(text) - 1, "python", tree=tree)
    assert info.types == {"store": ("Store",), "near": ("Near", "()")}
    assert all(not r.chain[0].startswith(("far", "Far")) for r in info.references)
    assert info == analyse(text, len(text) - 1, "python")


@pytest.mark.parametrize("whole_tree", [False, True])
def test_async_methods_far_below_their_class_are_scoped_in_it(whole_tree: bool) -> None:
    """An `async def` is indented like any method: its header was read as top-level, so a
    cursor in a method past WINDOW_ABOVE lines of the class's other async methods was
    scoped in the method above it instead of the class."""
    methods = "".join(f"    async def step_{n}(self):\n" + "        pass\n" * 30 for n in range(5))
    text = (
        "class Pipeline(Base):\n"
        + methods
        + "    async  def last(self):\n"
        + ("        x = 1\n" * 120)
        + "        self.|\n"
    )
    offset = text.index("|")
    text = text.replace("|", "")
    tree = parser_for("python").parse(text.encode()) if whole_tree else None
    info = analyse(text, offset, "python", tree=tree)
    assert [(s.kind, s.name) for s in info.scopes] == [("class", "Pipeline"), ("function", "last")]
    assert info.bases == (("Base",),)


def test_a_window_trees_node_texts_are_sliced_from_its_bytes() -> None:
    """A window is parsed with a step limit, through a callback, and `Node.text` then reads
    the bytes back through it (the rest of them each time); the analysis slices them from
    the window's bytes instead (`_bytes_of`): the same text for every node, non-ASCII
    included, and a window's analysis the same as the document tree's."""
    text = 'def grüße(name: Name = "Zoë") -> str:\n    ziel = Ziel(name)  # «ok»\n    ziel.\n'
    source = text.encode()
    root = cursor_parse(source, "python", 1000)
    assert root is not None
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        assert cursor_parsing._bytes_of(node, source) == node.text
    window = analyse(text, len(text) - 1, "python")
    assert window.types["ziel"] == ("Ziel", "()") and window.types["name"] == ("Name",)
    assert window.scopes[-1].name == "grüße"
    document = parser_for("python").parse(source)
    assert window == analyse(text, len(text) - 1, "python", tree=document)


def test_a_parse_is_given_up_after_its_steps() -> None:
    """`parse` counts the parser's progress reports, so whether a parse is given up
    depends on the text alone; `clean` gives up at the first syntax error."""
    source = b"def f(x):\n    return x\n" * 2000
    assert cursor_parse(source, "python", 2) is None
    whole = cursor_parse(source, "python", 10_000)  # the parser reset after giving up
    assert whole is not None and whole.child_count == 2000
    assert cursor_parse(b"x = f(\n" + source, "python", 10_000, clean=True) is None
    assert cursor_parse(b"x = f(\n" + source, "python", 10_000) is not None
    assert cursor_parse(source, "python", 10_000, clean=True) is not None


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="\"'x \\", max_size=12), max_size=12),
    data=st.data(),
)
def test_counts_by_positions_are_counts_by_str_count(lines: list[str], data: st.DataObject) -> None:
    """`_Positions` answers as `str.count` does: newlines in any span, triple quotes in
    a span from a line start (runs of four or more quotes included)."""
    text = "\n".join(lines)
    positions, counter = cursor_positions._Positions(text), cursor_positions._Counter(text)
    line_starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    start = data.draw(st.sampled_from(line_starts))
    end = data.draw(st.integers(0, len(text)))
    anywhere = data.draw(st.integers(0, len(text)))
    assert positions.triple_quotes(start, end) == counter.triple_quotes(start, end)
    assert positions.newlines(anywhere, end) == counter.newlines(anywhere, end)


def test_the_analysis_is_the_same_with_the_texts_positions() -> None:
    """The second analysis in a row of one text counts by positions, the first by
    `str.count`: both see the same cursor, docstrings included."""
    text = (FIXTURES / "context_py" / "app" / "service.py").read_text()
    text = text.replace("\n\n", '\n    """A doc\n    string."""\n\n', 3)
    for offset in range(0, len(text), 7):
        _windows.last.clear()
        cursor_positions._seen.text = cursor_positions._seen.positions = None
        first = analyse(text, offset, "python")
        assert cursor_positions._seen.positions is None
        _windows.last.clear()
        again = analyse(text, offset, "python")
        assert cursor_positions._seen.positions is not None
        assert again == first
