"""The context builder's budget: prefix, snippets and the whole prompt within it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from context_helpers import SERVICE, index_of, service
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cache.index import ProjectIndex
from server.completion.context import (
    Budget,
    ContextBuilder,
    Snippet,
    build_context,
    default_overhead,
    definitions,
    estimate_tokens,
    fit_prefix,
    fit_prefix_kept,
    module_files,
)


@pytest.fixture(scope="module")
def py_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProjectIndex]:
    index = index_of("context_py", tmp_path_factory.mktemp("py"))
    yield index
    index.close()


# --- the budget ----------------------------------------------------------------------------


def test_unused_cross_file_budget_goes_to_the_prefix() -> None:
    prefix = "".join(f"line_{i} = {i}\n" for i in range(400))
    budget = Budget(total=1000, cross_file_share=0.5, suffix_share=0.1)
    alone = build_context(prefix, "", [], budget)
    crowded = build_context(prefix, "", [Snippet("a.py", "A = 1\n" * 200, 0, 1.0)], budget)
    assert estimate_tokens(alone.prefix) > 900
    assert estimate_tokens(crowded.prefix) < estimate_tokens(alone.prefix)
    assert alone.tokens <= 1000 and crowded.tokens <= 1000


def test_prefix_starts_on_a_line_that_is_a_multiple_of_the_step() -> None:
    prefix = "".join(f"value_{i} = {i}\n" for i in range(300)) + "tail = "
    kept, tokens = fit_prefix(prefix, 500, estimate_tokens, step_lines=8)
    first_line = prefix[: len(prefix) - len(kept)].count("\n")
    assert first_line % 8 == 0 and kept.startswith("value_")
    assert tokens == estimate_tokens(kept) <= 500
    longer, _ = fit_prefix(prefix + "x", 500, estimate_tokens, step_lines=8)
    assert longer == kept + "x"  # one more key: the same start


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab =\n", max_size=30), max_size=60),
    cap=st.integers(min_value=0, max_value=120),
    step=st.integers(min_value=1, max_value=9),
)
def test_the_prefix_fits_the_same_with_its_line_count_given(
    lines: list[str], cap: int, step: int
) -> None:
    """`build_context` hands `fit_prefix` the cursor's line number, so that the line of each
    try is counted from the end of a 200 KB prefix, not from its top: the same cut."""
    prefix = "\n".join(lines)
    given = fit_prefix(prefix, cap, estimate_tokens, step, lines=prefix.count("\n"))
    assert given == fit_prefix(prefix, cap, estimate_tokens, step)


@settings(max_examples=120, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab =\n", max_size=30), max_size=60),
    cap=st.integers(min_value=0, max_value=120),
    step=st.integers(min_value=1, max_value=9),
    first_line=st.one_of(st.none(), st.integers(min_value=-2, max_value=70)),
    slack=st.integers(min_value=0, max_value=60),
)
def test_a_kept_window_start_is_a_tail_within_the_cap(
    lines: list[str], cap: int, step: int, first_line: int | None, slack: int
) -> None:
    """Whatever the stay kept, the window is a tail of the text above the cursor that fits
    the cap; kept, it starts at the kept line and shows at most `slack` tokens less than a
    fresh window; with nothing kept, it is the fresh window."""
    prefix = "\n".join(lines)
    newlines = prefix.count("\n")
    fresh = fit_prefix(prefix, cap, estimate_tokens, step, lines=newlines)
    text, tokens = fit_prefix_kept(prefix, cap, estimate_tokens, step, newlines, first_line, slack)
    assert prefix.endswith(text) and tokens == (estimate_tokens(text) if text else 0) <= max(
        cap, fresh[1]
    )
    if first_line is None or slack == 0:
        assert (text, tokens) == fresh
    elif newlines - text.count("\n") == first_line != newlines - fresh[0].count("\n"):
        assert prefix[: len(prefix) - len(text)].count("\n") == first_line
        assert fresh[1] - slack <= tokens <= cap


def reference_module_file(module: str, deps: frozenset[str]) -> list[str]:
    """How an absolute import found its file among the importer's dependencies before
    `_python_deps_by_tail`: the first in sorted order whose module path ends with it."""
    tail = module.replace(".", "/")
    for dep in sorted(deps):
        if dep.endswith((".py", ".pyi")):
            stem = module_files._stem(dep)
            if stem == tail or stem.endswith("/" + tail):
                return [dep]
    return []


PARTS = ["a", "b", "pkg", "src", "util"]


@settings(max_examples=150, deadline=None)
@given(
    deps=st.frozensets(
        st.tuples(
            st.lists(st.sampled_from(PARTS), min_size=1, max_size=4).map("/".join),
            st.sampled_from([".py", ".pyi", "/__init__.py", ".ts"]),
        ).map("".join),
        max_size=12,
    ),
    module=st.lists(st.sampled_from(PARTS), min_size=1, max_size=3).map(".".join),
)
def test_an_absolute_import_finds_the_file_the_linear_search_found(
    deps: frozenset[str], module: str
) -> None:
    found = module_files._python_deps_by_tail(deps).get(module.replace(".", "/"))
    assert ([found] if found else []) == reference_module_file(module, deps)


def test_a_files_imports_are_indexed_by_the_names_they_bring_in() -> None:
    """A re-export lookup reads `_FileDefs.importing`: per name, the imports in file order
    and how each brings the name in, as the loop over every import decided it (an alias
    before a plain name of the same import; a module's head only for `import a.b`)."""
    from cache.model import ImportRef

    first = ImportRef(".cold", ("ColdStore", "Item"), 1, (("Store", "ColdStore"),))
    second = ImportRef(".hot", ("Store",), 2)
    star = ImportRef(".more", ("*",), 3)
    dotted = ImportRef("os.path", (), 4)
    renamed = ImportRef(".warm", ("Item",), 5, (("Item", "WarmItem"), ("Item", "Other")))
    defs = definitions._FileDefs("python", {}, {}, (first, second, star, dotted, renamed))
    assert defs.importing["Store"] == [
        (definitions._ALIASED, first, "ColdStore"),
        (definitions._NAMED, second, ""),
    ]
    assert defs.importing["Item"] == [
        (definitions._NAMED, first, ""),
        (definitions._ALIASED, renamed, "WarmItem"),
    ]
    assert defs.importing["os"] == [(definitions._MODULE, dotted, "")]
    assert defs.stars == (star,)
    go = definitions._FileDefs("go", {}, {}, (ImportRef("fmt"),))
    assert "fmt" not in go.importing and go.stars == ()


def test_snippets_compare_and_hash_by_value() -> None:
    """Snippets are not a frozen dataclass (it made them 5x dearer to make) and still
    behave as values: equal fields, equal snippets, one entry in a set."""
    one = Snippet("a.py", "def f(): ...\n", 3, 1.5, "f", "python")
    assert one == one.with_score(1.5) and len({one, one.with_score(1.5)}) == 1
    assert one != one.with_score(2.0)


def words(text: str) -> int:
    return len(text.split()) + text.count("\n")


COUNTERS = [estimate_tokens, len, words]
IMPORT_LINES = [
    "import os\n",
    "from pkg.models import (\n    Item,\n    Warehouse,\n)\n",
    "from . import util\n",
    "if TYPE_CHECKING:\n    from pkg.stock import ship\n",
]
IMPORT_LINES_SPLIT = "".join(IMPORT_LINES).replace("    from", "from").splitlines()
lines = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=60)
texts = st.lists(lines, max_size=60).map("\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=texts,
    suffix=texts,
    bodies=st.lists(
        st.tuples(st.sampled_from(["a.py", "pkg/b.py", "c.ts"]), texts, st.booleans()),
        max_size=8,
    ),
    total=st.integers(min_value=0, max_value=3000),
    reserved=st.integers(min_value=0, max_value=200),
    cross=st.floats(min_value=0, max_value=1),
    suffix_share=st.floats(min_value=0, max_value=1),
    similar_share=st.floats(min_value=0, max_value=1),
    head_share=st.floats(min_value=0, max_value=1),
    fim_suffix=st.integers(min_value=0, max_value=300),
    imports=st.lists(st.sampled_from(IMPORT_LINES), max_size=30).map("".join),
    step=st.integers(min_value=1, max_value=16),
    counter=st.sampled_from(COUNTERS),
)
@example(  # a line of text reading "import " was taken for an import the prefix had lost
    prefix="import \n" + "x = 1\n" * 40,
    suffix="",
    bodies=[],
    total=80,
    reserved=0,
    cross=0.5,
    suffix_share=0.0,
    similar_share=0.0,
    head_share=1.0,
    fim_suffix=0,
    imports="",
    step=1,
    counter=len,
)
def test_the_budget_is_never_exceeded(
    prefix: str,
    suffix: str,
    bodies: list[tuple[str, str, bool]],
    total: int,
    reserved: int,
    cross: float,
    suffix_share: float,
    similar_share: float,
    head_share: float,
    fim_suffix: int,
    imports: str,
    step: int,
    counter: object,
) -> None:
    """Definitions, similar-code chunks (`similar`), the current file's imports (`head`)
    and the suffix past its fill-in-the-middle share (`tail`) alike, each kind within its
    cap (similar code may also take what the definitions leave of theirs)."""
    count = counter if callable(counter) else estimate_tokens
    budget = Budget(
        total,
        suffix_share,
        cross,
        reserved,
        prefix_step_lines=step,
        similar_share=similar_share,
        head_share=head_share,
        fim_suffix_tokens=fim_suffix,
    )
    prefix = imports + prefix
    snippets = [
        Snippet(p, t, i, float(i), f"n{i}", similar=similar)
        for i, (p, t, similar) in enumerate(bodies)
    ]
    overhead = default_overhead(count)
    context = build_context(
        prefix, suffix, snippets, budget, count, overhead, file_path="cur.py", language="python"
    )
    counted = (
        count(context.prefix)
        + count(context.suffix)
        + sum(overhead(s.path) + count(s.text) for s in context.snippets)
    )
    assert context.tokens == counted <= max(0, total - reserved)
    assert prefix.endswith(context.prefix) and suffix.startswith(context.suffix)
    definitions = sum(
        overhead(s.path) + count(s.text)
        for s in context.snippets
        if not (s.head or s.similar or s.tail)
    )
    similar = sum(overhead(s.path) + count(s.text) for s in context.snippets if s.similar)
    assert definitions <= budget.cross_file_cap
    if budget.similar_cap == 0:
        assert similar == 0
    assert similar <= budget.similar_cap + budget.cross_file_cap - definitions
    heads = [s for s in context.snippets if s.head]
    assert sum(overhead(s.path) + count(s.text) for s in heads) <= budget.head_cap
    for head in heads:  # only what the prefix lost, each statement whole
        assert len(context.prefix) < len(prefix)
        assert set(head.text.splitlines()) <= set(IMPORT_LINES_SPLIT)
    for tail in [s for s in context.snippets if s.tail]:  # the suffix past the slot's share
        assert suffix.startswith(context.suffix + tail.text)
        assert 0 < count(context.suffix) <= fim_suffix
    assert budget.cross_file_cap + budget.suffix_cap + budget.similar_cap <= budget.available


def test_the_server_budget_holds_on_a_real_build(py_index: ProjectIndex) -> None:
    builder = ContextBuilder(py_index)
    text, offset = service(py_index, "        util.verify_directory(|\n")
    for total in (0, 50, 300, 800, 4000):
        context = builder.build(SERVICE, text, offset, "python", Budget(total=total, reserved=20))
        assert context.tokens <= max(0, total - 20)
