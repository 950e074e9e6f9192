"""Incremental re-parses give the tree a whole parse gives, and trees handed out stay put."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Node

from server.completion.cursor import parse, parser_for
from server.completion.reparse import edit_span, nearby_tree
from server.completion.trees import DocumentTrees

SOURCE = "def f(a):\n    return a + 1\n\n\nclass C:\n    x = 'é😀'\n"
EDITS = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 6), st.sampled_from(["", "x", "\n", "(", "'", "é"])),
    min_size=1,
    max_size=6,
)


def shape(root: Node) -> list[tuple[str, int, int, tuple[int, int]]]:
    """Every node's type, byte span and start point, in order."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append((node.type, node.start_byte, node.end_byte, tuple(node.start_point)))
        stack.extend(reversed(node.children))
    return out


@settings(max_examples=60, deadline=None)
@given(edits=EDITS)
def test_incremental_trees_equal_whole_parses(edits: list[tuple[float, int, str]]) -> None:
    trees = DocumentTrees()
    text = SOURCE
    first = trees.tree("file:///a.py", text, "python")
    assert first is not None
    before = shape(first.root_node)
    for where, span, inserted in edits:
        start = int(where * len(text))
        text = text[:start] + inserted + text[start + span :]
        tree = trees.tree("file:///a.py", text, "python")
        fresh = parse(text.encode(), "python")
        assert tree is not None and fresh is not None
        assert shape(tree.root_node) == shape(fresh), text
    assert shape(first.root_node) == before  # the first tree was never edited


def test_the_edit_span_is_the_smallest_changed_run() -> None:
    assert edit_span(b"abcdef", b"abXYef") == (2, 4, 4)
    assert edit_span(b"aaa", b"aaaa") == (3, 3, 4)
    assert edit_span(b"same", b"same") == (4, 4, 4)


def test_a_tree_is_reused_only_for_a_nearby_text() -> None:
    """One key typed: the old tree, edited, gives the fresh parse's tree. Another place
    of the file: no old tree (parsing from an unrelated one costs more than afresh)."""
    parser = parser_for("python")
    assert parser is not None
    old = b"def f(a):\n    return a + 1\n" * 20
    tree = parser.parse(old)
    typed = old.replace(b"a + 1", b"a + 12", 1)
    edited = nearby_tree(old, tree, typed)
    assert edited is not None
    assert str(parser.parse(typed, edited).root_node) == str(parser.parse(typed).root_node)
    elsewhere = b"class K:\n    x: int = 0\n" * 30
    assert nearby_tree(old, tree, elsewhere) is None


def test_the_current_tree_is_handed_out_only_for_the_text_it_was_parsed_from() -> None:
    """`current` never parses: a completion request takes the tree when the document is
    as it was parsed, and analyses its window itself after an edit."""
    trees = DocumentTrees()
    assert trees.current("file:///a.py", SOURCE, "python") is None
    tree = trees.tree("file:///a.py", SOURCE, "python")
    assert trees.current("file:///a.py", SOURCE, "python") is tree
    assert trees.current("file:///a.py", "".join(SOURCE), "python") is tree  # equal, not same
    assert trees.current("file:///a.py", SOURCE + "x", "python") is None
    assert trees.current("file:///a.py", SOURCE, "typescript") is None
    assert trees.current("file:///b.py", SOURCE, "python") is None
    trees.forget("file:///a.py")
    assert trees.current("file:///a.py", SOURCE, "python") is None


def test_kept_reparses_only_a_tree_kept_in_that_language() -> None:
    """The project cache asks by the file's name: it reads the editor's tree where the
    languages agree, and never starts keeping one or swaps its language."""
    trees = DocumentTrees()
    assert trees.kept("file:///a.py", SOURCE, "python") is None
    assert len(trees) == 0
    trees.tree("file:///a.py", SOURCE, "python")
    edited = SOURCE + "y = 2\n"
    tree = trees.kept("file:///a.py", edited, "python")
    assert tree is not None and tree.root_node.end_byte == len(edited.encode())
    assert trees.current("file:///a.py", edited, "python") is tree
    assert trees.kept("file:///a.py", edited, "javascript") is None
    assert trees.current("file:///a.py", edited, "python") is tree
