"""The context builder: retrieval through imports and types, ranking, dedup, the budget."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from context_helpers import SERVICE, edited, index_of, service
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tree_sitter import Tree

import cache.index
from cache.index import ProjectIndex
from cache.model import Outline
from cache.outline import parse_outline
from server.completion.context import (
    DUPLICATE_JACCARD,
    Budget,
    Context,
    ContextBuilder,
    Snippet,
    build_context,
    estimate_tokens,
    imported_names,
    jaccard,
    leaf_tokens,
    near_duplicates,
)
from server.completion.context import builder as context_builder
from server.completion.cursor import analyse, parser_for
from server.completion.cursor import parsing as cursor_parsing


@pytest.fixture(scope="module")
def py_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProjectIndex]:
    index = index_of("context_py", tmp_path_factory.mktemp("py"))
    yield index
    index.close()


def resolved(index: ProjectIndex, body: str, chain: tuple[str, ...]) -> tuple[str, str] | None:
    text, offset = service(index, body)
    cursor = analyse(text, offset, "python")
    target = ContextBuilder(index).resolve(SERVICE, text, cursor, chain)
    if target is None:
        return None
    return target.path, target.definition.qualified_name if target.definition else ""


# --- retrieval (Python) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "chain", "expected"),
    [
        # `from inventory.models import Item as StockItem`: an alias
        ("        StockItem|\n", ("StockItem",), ("inventory/models.py", "Item")),
        # `import inventory.storage.repo as storage`, then `storage.attr`
        (
            "        storage.open_repo|\n",
            ("storage", "open_repo"),
            ("inventory/storage/repo.py", "open_repo"),
        ),
        # through a function's return annotation
        (
            "        storage.open_repo().|\n",
            ("storage", "open_repo", "()"),
            ("inventory/storage/repo.py", "Repo"),
        ),
        # `from inventory import Warehouse`: re-exported by the package's __init__
        ("        Warehouse|\n", ("Warehouse",), ("inventory/models.py", "Warehouse")),
        # `from inventory import util`: a submodule, also re-exported with `from . import util`
        (
            "        util.verify_directory|\n",
            ("util", "verify_directory"),
            ("inventory/util.py", "verify_directory"),
        ),
        # a class attribute chain
        (
            "        Warehouse.add|\n",
            ("Warehouse", "add"),
            ("inventory/models.py", "Warehouse.add"),
        ),
        # a variable assigned from a constructor nearby
        (
            "        w = Warehouse('x')\n        w.find|\n",
            ("w", "find"),
            ("inventory/models.py", "Warehouse.find"),
        ),
        # `self.repo = repo` with `repo: Repo` in __init__
        (
            "        self.repo.save|\n",
            ("self", "repo", "save"),
            ("inventory/storage/repo.py", "Repo.save"),
        ),
        # a member the class does not define (half-typed): the class
        (
            "        w = Warehouse('x')\n        w.fi|\n",
            ("w", "fi"),
            ("inventory/models.py", "Warehouse"),
        ),
        # `storage` module itself
        ("        storage.|\n", ("storage",), ("inventory/storage/repo.py", "")),
        # outside the project
        ("        os.path.join|\n", ("os", "path", "join"), None),
    ],
)
def test_names_resolve_through_imports_and_types(
    py_index: ProjectIndex, body: str, chain: tuple[str, ...], expected: tuple[str, str] | None
) -> None:
    assert resolved(py_index, body, chain) == expected


def test_relative_imports_resolve_from_inside_a_package(py_index: ProjectIndex) -> None:
    path = "inventory/storage/repo.py"
    text, offset = edited(
        py_index, path, "        Item|\n", "    def get(self, sku: str) -> Item:\n"
    )
    cursor = analyse(text, offset, "python")
    target = ContextBuilder(py_index).resolve(path, text, cursor, ("Item",))
    assert target is not None and target.path == "inventory/models.py"
    assert target.definition is not None and target.definition.name == "Item"


def test_inherited_members_resolve_to_the_base_class(py_index: ProjectIndex) -> None:
    text, offset = service(py_index, "        c = ColdStore('x')\n        c.add|\n")
    text = "from inventory.cold import ColdStore\n" + text
    cursor = analyse(text, offset + len("from inventory.cold import ColdStore\n"), "python")
    builder = ContextBuilder(py_index)
    target = builder.resolve(SERVICE, text, cursor, ("c", "add"))
    assert target is not None and target.path == "inventory/models.py"
    assert target.definition is not None and target.definition.qualified_name == "Warehouse.add"
    own = builder.resolve(SERVICE, text, cursor, ("c", "chill"))
    assert own is not None and own.definition is not None
    assert (own.path, own.definition.qualified_name) == ("inventory/cold.py", "ColdStore.chill")


def test_long_class_is_shown_by_its_outline(py_index: ProjectIndex) -> None:
    builder = ContextBuilder(py_index)
    text, offset = service(py_index, "        w = Warehouse('x')\n        w.|\n")
    best = builder.candidates(SERVICE, text, analyse(text, offset, "python"))[0]
    assert (best.path, best.name) == ("inventory/models.py", "Warehouse")
    assert best.text.startswith("class Warehouse:\n")
    assert '"""A named place that holds items, keyed by SKU."""' in best.text
    assert "    def add(self, item: Item) -> None:\n        ...\n" in best.text
    assert "    def total(self) -> int:\n        ...\n" in best.text
    assert "held.quantity" not in best.text  # no bodies


def test_short_method_is_shown_whole_inside_its_class(py_index: ProjectIndex) -> None:
    builder = ContextBuilder(py_index)
    text, offset = service(py_index, "        Warehouse.add(|\n")
    snippets = builder.candidates(SERVICE, text, analyse(text, offset, "python"))
    add = next(s for s in snippets if s.name == "Warehouse.add")
    assert add.text.startswith("class Warehouse:\n    def add(self, item: Item) -> None:\n")
    assert "            held.quantity += item.quantity\n" in add.text


def test_a_short_file_is_shown_whole_instead_of_its_definitions(py_index: ProjectIndex) -> None:
    builder = ContextBuilder(py_index)
    text, offset = service(py_index, "        storage.open_repo(|\n")
    snippets = builder.candidates(SERVICE, text, analyse(text, offset, "python"))
    assert snippets[0].path == "inventory/storage/repo.py" and snippets[0].name == ""
    assert "def open_repo(url: str) -> Repo:" in snippets[0].text
    assert not any(s.path == "inventory/storage/repo.py" and s.name for s in snippets)


# --- ranking -----------------------------------------------------------------------------------


def test_ranking_direct_answers_then_graph_distance_then_recency(py_index: ProjectIndex) -> None:
    text, offset = service(py_index, "        util.verify_directory(|\n")
    cursor = analyse(text, offset, "python")
    ranked = ContextBuilder(py_index).candidates(SERVICE, text, cursor)
    assert ranked[0].path == "inventory/util.py"  # the function being called
    scores = {s.path: s.score for s in ranked if not s.name}
    assert scores["inventory/models.py"] > scores["app/copy_of_util.py"]  # dependency > sibling
    recent = ContextBuilder(py_index, recent=["inventory/storage/repo.py", "inventory/models.py"])
    again = {s.path: s.score for s in recent.candidates(SERVICE, text, cursor) if not s.name}
    gain = {path: again[path] - scores[path] for path in scores}
    assert gain["inventory/models.py"] > gain["inventory/storage/repo.py"] > 0  # most recent last
    assert gain["inventory/__init__.py"] == 0


def test_imported_names_not_used_yet_rank_above_the_lines_above(
    py_index: ProjectIndex,
) -> None:
    """`Repo` is used before the cursor, `StockItem` (models.Item) is not: a name imported
    but not used yet is the likeliest to be typed next."""
    text, offset = service(py_index, "        item = |\n")
    cursor = analyse(text, offset, "python")
    ranked = ContextBuilder(py_index).candidates(SERVICE, text, cursor)
    scores = {(s.path, s.name): s.score for s in ranked}
    unused = scores[("inventory/models.py", "Item")]
    used = scores[("inventory/storage/repo.py", "")]  # a short file: Repo is shown whole
    assert unused > used
    assert unused > scores[("inventory/models.py", "")]  # and above its file's outline


def test_imported_names_near_the_cursor_come_from_the_files_uses() -> None:
    """`prepare` records where each imported name is used, so a build finds those used
    near its line by bisection, as a scan of the lines above would (a name imported
    since is looked for again); a name is used only outside import statements, even
    where the lines read start inside one."""
    head = "from shapes import (\n    Circle,\n    Square,\n)\nfrom colours import Red, Blue\n"
    body = "".join(f"def f{n}():\n    return Circle({n})\n\n" for n in range(400))
    text = head + body + "def late():\n    return Blue(Square())\n\n" + body + "x = 1\n"
    cursor = analyse(text, 0, "python")
    named = frozenset(local for local, _ in imported_names._named_imports(cursor.imports))
    uses = imported_names._Uses(text, named, imported_names._use_starts(text, named))
    late = text.index("def late") + len("def late():\n")
    for line_start in (0, len(head), len(head) + 4000, late, len(text) - 6):
        cursor = analyse(text, line_start, "python")
        indexed = imported_names._imported_names(text, cursor, line_start, uses)
        assert indexed == imported_names._imported_names(text, cursor, line_start, None)
    cursor = analyse(text, late, "python")
    scores = dict(imported_names._imported_names(text, cursor, late, uses))
    assert scores == {"Circle": 50.0, "Square": 150.0, "Red": 150.0, "Blue": 150.0}
    cursor = analyse(text, len(text) - 6, "python")
    scores = dict(imported_names._imported_names(text, cursor, len(text) - 6, uses))
    assert scores == {"Circle": 50.0, "Square": 80.0, "Red": 150.0, "Blue": 80.0}
    before_blue = named - {"Blue"}  # prepared before `Blue` was imported
    older = imported_names._Uses(text, before_blue, imported_names._use_starts(text, before_blue))
    assert dict(imported_names._imported_names(text, cursor, len(text) - 6, older)) == scores
    imports = head + "import os\n"
    filler = imported_names.IMPORT_WINDOW_CHARS - (len(imports) - imports.index("Red"))
    short = imports + "#" * (filler - 1) + "\n"  # the lines read start at "Red, Blue"
    cursor = analyse(short, len(short), "python")
    uses = imported_names._Uses(short, named, imported_names._use_starts(short, named))
    scores = dict(imported_names._imported_names(short, cursor, len(short), uses))
    assert scores == dict.fromkeys(["Circle", "Square", "Red", "Blue"], 150.0)


def test_an_imported_name_follows_its_file_changed_after_it_was_memoised(
    tmp_path: Path,
) -> None:
    """Where an imported name is defined is memoised per import; an edit to a file read on
    the way (here the defining module, as an unsaved buffer) must be seen."""
    index = index_of("context_py", tmp_path)
    builder = ContextBuilder(index)
    text, offset = service(index, "        |\n")
    cursor = analyse(text, offset, "python")
    binding = cursor.imports.bindings["Warehouse"]  # `from inventory import Warehouse`

    def defined_at() -> tuple[str, str, int]:
        target = builder.imported_target(index, SERVICE, text, cursor, binding)
        assert target is not None and target.definition is not None
        return target.path, target.definition.qualified_name, target.definition.start_line

    before = defined_at()
    assert before[:2] == ("inventory/models.py", "Warehouse")
    assert defined_at() == before  # from the memo
    models = index.root / "inventory" / "models.py"
    index.update_file("inventory/models.py", b"# moved\n# down\n" + models.read_bytes())
    assert defined_at() == (*before[:2], before[2] + 2)
    index.close()


def test_imported_names_are_looked_up_once_while_the_imports_hold(tmp_path: Path) -> None:
    """The builds of one file share where its imported names are defined, checked once a
    build; another import of the name, or an edit to the index, looks them up again."""
    files = {
        "app/main.py": "from lib.tools import Wrench\n\nx = 1\n",
        "lib/tools.py": "class Wrench:\n    size: int\n",
        "lib/other.py": "class Wrench:\n    weight: int\n",
    }
    index = indexed(tmp_path, files)
    builder = ContextBuilder(index)

    def wrench_from(text: str) -> list[str]:
        cursor = analyse(text, len(text), "python")
        found = builder.candidates("app/main.py", text, cursor, 8)
        return [s.path for s in found if "class Wrench" in s.text]

    text = files["app/main.py"]
    assert wrench_from(text) == ["lib/tools.py"]
    memo = builder._import_targets.get("app/main.py")
    assert memo is not None and "Wrench" in memo.targets
    assert wrench_from(text + "y = 2\n") == ["lib/tools.py"]
    assert builder._import_targets.get("app/main.py") is memo  # the same imports
    moved = text.replace("lib.tools", "lib.other")
    index.update_file("app/main.py", moved.encode(), persist=False)
    assert wrench_from(moved) == ["lib/other.py"]
    assert builder._import_targets.get("app/main.py") is not memo
    index.close()


def test_a_files_standing_candidates_follow_the_recent_files_and_edits(tmp_path: Path) -> None:
    """A file's candidates that no cursor changes (its related files, where its imported
    names are defined) are kept with their rendered text across its builds; a file used
    since, or an edit to one, must still show in the next build's scores and texts."""
    files = {
        "app/main.py": "from lib.tools import Wrench\n\nx = 1\n",
        "lib/tools.py": "class Wrench:\n    size: int\n",
        "app/other.py": "y = 2\n",
    }
    index = indexed(tmp_path, files)
    recent: list[str] = []
    builder = ContextBuilder(index, recent=recent)
    text = files["app/main.py"]

    def found() -> dict[str, tuple[float, str]]:
        cursor = analyse(text, len(text), "python")
        return {s.path: (s.score, s.text) for s in builder.candidates("app/main.py", text, cursor)}

    before = found()
    assert found() == before
    assert builder._file_candidates.get("app/main.py") is not None
    recent.extend(["app/other.py", "lib/tools.py"])  # lib/tools.py used last
    after = found()
    assert after["lib/tools.py"][0] > after["app/other.py"][0] > before["app/other.py"][0]
    assert after["lib/tools.py"][0] - before["lib/tools.py"][0] == 9
    edited = b"class Wrench:\n    size: int\n    grip: str\n"
    (index.root / "lib" / "tools.py").write_bytes(edited)
    index.update_file("lib/tools.py", edited)
    assert "grip: str" in found()["lib/tools.py"][1]
    index.close()


def indexed(tmp_path: Path, files: dict[str, str]) -> ProjectIndex:
    """A project of `files` (path -> text) under tmp_path, indexed."""
    for path, text in files.items():
        (tmp_path / "ws" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "ws" / path).write_text(text)
    index = ProjectIndex(tmp_path / "ws", cache_dir=tmp_path / "cache")
    index.build()
    return index


def outlines_parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The languages of the outlines made from now on, one entry per file parsed."""
    parsed: list[str] = []

    def counting(data: bytes, language: str, tree: Tree | None = None) -> Outline | None:
        parsed.append(language)
        return parse_outline(data, language, tree)

    monkeypatch.setattr(cache.index, "parse_outline", counting)
    return parsed


def test_prepare_makes_the_outlines_a_first_build_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python outlines are made on first use. `prepare` resolves the names the file imports
    (`Gear`), the dotted names that start with one (`lib.Wrench`) and walks the base
    classes on the way (`Car(Engine)`, `Engine(Base)`), so that builds parse none, even
    of files that are not related files (eight siblings come first)."""
    files = {
        "app/main.py": (
            "import lib\nfrom lib import Gear\nfrom lib.c import Engine\n\n\nclass Car(Engine):\n"
            "    def go(self) -> None:\n        x = 1\n        lib.Wrench\n        self.stop\n"
        ),
        **{f"app/s{i}.py": "" for i in range(8)},
        "lib/__init__.py": "from .a import Gear\nfrom .tools import Wrench\n",
        "lib/a.py": "from .b import Gear\n",
        "lib/b.py": "class Gear:\n    teeth = 12\n",
        "lib/tools.py": "class Wrench:\n    size = 1\n",
        "lib/c.py": "from .base import Base\n\n\nclass Engine(Base):\n    def start(self): ...\n",
        "lib/base.py": "class Base:\n    def stop(self) -> None: ...\n",
    }
    index = indexed(tmp_path, files)
    parsed = outlines_parsed(monkeypatch)
    builder = ContextBuilder(index)
    builder.prepare("app/main.py")
    assert parsed  # the outlines were not made before
    parsed.clear()
    text = files["app/main.py"]
    for after, shown in (("x = 1", {"lib/b.py"}), ("Wrench\n", {"lib/tools.py", "lib/base.py"})):
        context = builder.build("app/main.py", text, text.index(after) + len(after), "python")
        assert shown <= {s.path for s in context.snippets}
        assert parsed == []
    index.close()


def test_a_packages_submodule_is_found_before_its_star_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`from pkg import tools` names pkg/tools.py, though pkg/__init__.py star-imports
    thirty modules: their outlines are not read on the way (transformers' __init__ has
    hundreds; searching them cost a build 10 ms, on every keystroke)."""
    main = "from pkg import tools\n\n\ndef go():\n    tools.Wrench\n"
    files = {
        "app/main.py": main,
        "pkg/__init__.py": "".join(f"from .m{i} import *\n" for i in range(30)),
        **{f"pkg/m{i}.py": f"def helper_{i}(): ...\n" for i in range(30)},
        "pkg/tools.py": "class Wrench:\n    size = 1\n",
    }
    index = indexed(tmp_path, files)
    parsed = outlines_parsed(monkeypatch)
    cursor = analyse(main, len(main), "python")
    target = ContextBuilder(index).resolve("app/main.py", main, cursor, ("tools", "Wrench"))
    assert target is not None and target.definition is not None
    assert (target.path, target.definition.name) == ("pkg/tools.py", "Wrench")
    assert len(parsed) == 2  # pkg/__init__.py and pkg/tools.py, none of the thirty
    index.close()


def test_a_name_re_exported_under_an_alias_resolves_to_its_definition(tmp_path: Path) -> None:
    """`from .cold import ColdStore as Warehouse` in a package's __init__: the package's
    `Warehouse` is cold.py's `ColdStore`, and its members are ColdStore's."""
    main = "from store import Warehouse\n\n\ndef go(w: Warehouse):\n    w.add\n"
    files = {
        "app/main.py": main,
        "store/__init__.py": "from .cold import ColdStore as Warehouse, Shelf\n",
        "store/cold.py": "class ColdStore:\n    def add(self, item): ...\n\n\nclass Shelf: ...\n",
    }
    index = indexed(tmp_path, files)
    builder = ContextBuilder(index)
    cursor = analyse(main, len(main), "python")
    found = {
        chain: builder.resolve("app/main.py", main, cursor, chain)
        for chain in [("Warehouse",), ("w", "add")]
    }
    assert {
        chain: (t.path, t.definition.qualified_name)
        for chain, t in found.items()
        if t and t.definition
    } == {
        ("Warehouse",): ("store/cold.py", "ColdStore"),
        ("w", "add"): ("store/cold.py", "ColdStore.add"),
    }
    index.close()


def test_related_files_follow_an_edited_import(tmp_path: Path) -> None:
    """The related files are memoised, until the index changes: a new import brings its
    file in at once."""
    files = {"app/main.py": "import os\n", "lib/tools.py": "class Wrench: ...\n"}
    index = indexed(tmp_path, files)
    builder = ContextBuilder(index)
    assert "lib/tools.py" not in builder.related_files("app/main.py")
    index.update_file("app/main.py", b"from lib.tools import Wrench\n", persist=False)
    assert builder.related_files("app/main.py")[0] == "lib/tools.py"
    index.close()


SERVICE_WORDS = [
    *("StockItem", "Repo", "Warehouse", "util", "x", "(", ")", " ", "    ", "#"),
    *("self.repo.", "self.cache = Warehouse()", "self.cache."),
]
FAR = "#" * 9000
"""Pushes what is above it out of the window where an import counts as used nearby."""
service_lines = st.lists(
    st.sampled_from(
        [*SERVICE_WORDS, "import os", "from a import (", "from b import c", "\r", "\x0c", FAR]
    ),
    max_size=6,
).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.lists(service_lines, max_size=12).map("\n".join))
@example(body=f"StockItem{FAR}")  # used on the line just above, but far from the cursor
@example(body=f"from inventory.models import (\n    Item as StockItem,\n){FAR}")  # no use
def test_prepare_changes_no_choice(py_index: ProjectIndex, body: str) -> None:
    """What `prepare` works out ahead (where the imported names are defined, which lines
    use them) gives the scores a build works out alone, on every line of the file, whether
    the file was prepared as it is or before `body` was typed into it."""
    text, _ = service(py_index, body + "|\n")
    as_it_is = ContextBuilder(py_index, texts={SERVICE: text})
    as_it_is.prepare(SERVICE)
    as_on_disk = ContextBuilder(py_index)
    as_on_disk.prepare(SERVICE)
    for start in [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]:
        cursor = analyse(text, start, "python")
        alone = ContextBuilder(py_index).candidates(SERVICE, text, cursor, 64)
        expected = [(s.path, s.name, s.score) for s in alone]
        for prepared in (as_it_is, as_on_disk):
            ahead = prepared.candidates(SERVICE, text, cursor, 64, line_start=start)
            assert [(s.path, s.name, s.score) for s in ahead] == expected


def test_the_first_build_after_prepare_chooses_as_an_unprepared_builder(
    py_index: ProjectIndex,
) -> None:
    """`prepare` rehearses a build and forgets its choice, and looks up the attributes
    the file assigns to `self` ahead: the builds that follow choose as they would alone."""
    text, _ = service(py_index, "        self.repo.|\n        self.cache = Warehouse()\n")
    prepared = ContextBuilder(py_index, texts={SERVICE: text})
    prepared.prepare(SERVICE)
    assert prepared.attribute_types(text) == {"repo": ("Repo",), "cache": ("Warehouse",)}
    assert prepared.attribute_types(text + " ") is None  # an edit: searched as before
    assert prepared.shown_in_context(SERVICE, SERVICE, "") is None  # the rehearsal forgotten
    for start in [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]:
        first = ContextBuilder(py_index).build(SERVICE, text, start, "python")
        ahead = prepared.build(SERVICE, text, start, "python")
        assert (ahead.prefix, ahead.suffix, ahead.snippets) == (
            first.prefix,
            first.suffix,
            first.snippets,
        )
        prepared.forget(SERVICE)


def test_prepare_rehearses_builds_spread_over_the_file(
    py_index: ProjectIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first build at a random place reads memos that a build at the top of the file
    does not make: the rehearsals are spread over the file, the first at its top."""
    text, _ = service(py_index, "        self.repo.|\n")
    prepared = ContextBuilder(py_index, texts={SERVICE: text})
    offsets: list[int] = []
    build = prepared.build

    def counted(file_path: str, text: str, offset: int, *args: object) -> Context:
        offsets.append(offset)
        return build(file_path, text, offset, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(prepared, "build", counted)
    prepared.prepare(SERVICE)
    assert offsets[0] == 0 and len(offsets) == context_builder.REHEARSALS
    assert offsets == sorted(offsets) and offsets[-1] > len(text) * 3 // 4


def test_near_duplicates_are_dropped(py_index: ProjectIndex) -> None:
    a = (py_index.root / "inventory/util.py").read_text()
    b = (py_index.root / "app/copy_of_util.py").read_text()
    assert jaccard(leaf_tokens(a, "python"), leaf_tokens(b, "python")) >= 0.85
    text, offset = service(py_index, "        x = 1|\n")
    context = ContextBuilder(py_index).build(SERVICE, text, offset, "python", Budget(total=4000))
    paths = [s.path for s in context.snippets]
    assert "inventory/util.py" in paths and "app/copy_of_util.py" not in paths


def test_dedup_keeps_the_better_scored_copy() -> None:
    body = "def slugify(text: str) -> str:\n    return '-'.join(text.lower().split())\n"
    snippets = [
        Snippet("b.py", body, 0, 10.0, "", "python"),
        Snippet("a.py", body.replace("text", "text "), 0, 50.0, "", "python"),
    ]
    context = build_context("x = 1\n", "", snippets, Budget(total=1000))
    assert [s.path for s in context.snippets] == ["a.py"]


def test_a_cut_snippets_tokens_come_from_its_whole_snippets_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snippet cut to fit is compared with those chosen before it for near-duplicates
    by tokens found in the parse of the whole (memoised when it was rendered), not by a
    parse of each cut's new text."""
    methods = "".join(
        f"    def method_{i}(self, value: int) -> int:\n        return value * {i}\n\n"
        for i in range(60)
    )
    whole = Snippet("big.py", f"class Big:\n{methods}", 0, 10.0, "Big", "python")
    small = Snippet("small.py", methods[:400], 0, 50.0, "m", "python")
    near_duplicates._tokens_of(whole)  # as `_render_ahead` does, before any build
    near_duplicates._tokens_of(small)
    parses = []
    monkeypatch.setattr(near_duplicates, "parse", lambda *a, **k: parses.append(a))
    built = build_context("x = 1\n", "", [small, whole], Budget(total=700))
    cut = next(s for s in built.snippets if s.path == "big.py")
    assert len(cut.text) < len(whole.text) and parses == []
    monkeypatch.undo()
    assert near_duplicates._tokens_of(cut) == leaf_tokens(cut.text, "python")


def test_snippets_already_in_the_window_are_dropped() -> None:
    shown = "def helper(a, b):\n    return a + b\n"
    snippets = [Snippet("lib.py", shown, 0, 100.0), Snippet("other.py", "X = 1\n", 0, 1.0)]
    prefix = "import lib\n\n" + shown + "\nhelper("
    context = build_context(prefix, ")\n", snippets, Budget(total=1000))
    assert [s.path for s in context.snippets] == ["other.py"]


# --- the current file's imports ---------------------------------------------------------------

LONG_FILE_HEAD = """\
\"\"\"Shipping.

    from example import not_an_import
\"\"\"
import os
from pkg.models import (
    Item,
    Warehouse,
)
"""


def long_file(lines: int) -> str:
    return LONG_FILE_HEAD + "".join(f"value_{i} = os.getcwd()\n" for i in range(lines))


def test_a_cut_prefix_brings_its_import_statements_right_before_the_file() -> None:
    prefix = long_file(400) + "stock = "
    snippets = [Snippet("lib.py", "def helper(): ...\n", 0, 100.0, "helper")]
    budget = Budget(total=1000)
    context = build_context(
        prefix, "\n", snippets, budget, file_path="pkg/ship.py", language="python"
    )
    assert "import os" not in context.prefix
    assert context.files()[-1] == (
        "pkg/ship.py",
        "import os\nfrom pkg.models import (\n    Item,\n    Warehouse,\n)\n",
    )
    assert context.tokens <= budget.available

    short = build_context(
        long_file(3) + "stock = ",
        "\n",
        snippets,
        budget,
        file_path="pkg/ship.py",
        language="python",
    )
    assert [path for path, _ in short.files()] == ["lib.py"]  # the prefix shows them
    off = build_context(
        prefix,
        "\n",
        snippets,
        Budget(total=1000, head_share=0),
        file_path="pkg/ship.py",
        language="python",
    )
    assert [path for path, _ in off.files()] == ["lib.py"]


def test_imports_over_their_share_keep_the_last_whole_statements() -> None:
    imports = "".join(f"import module_{i}\n" for i in range(100))
    prefix = imports + long_file(400) + "stock = "
    budget = Budget(total=1000, head_share=0.05)
    context = build_context(prefix, "", [], budget, file_path="a.py", language="python")
    (head,) = [s for s in context.snippets if s.head]
    shown = head.text.splitlines()
    assert shown[-5:] == [
        "import os",
        "from pkg.models import (",
        "    Item,",
        "    Warehouse,",
        ")",
    ]
    assert shown[0].startswith("import module_") and shown[0] != "import module_0"
    assert estimate_tokens(head.text) <= budget.head_cap


def test_the_import_head_stays_while_typing_and_is_not_remembered(
    py_index: ProjectIndex,
) -> None:
    builder = ContextBuilder(py_index)
    text = long_file(600)
    budget = Budget(total=800)
    first = builder.build("pkg/ship.py", text + "x", len(text) + 1, "python", budget)
    second = builder.build("pkg/ship.py", text + "xy", len(text) + 2, "python", budget)
    assert first.files()[-1][0] == "pkg/ship.py" and "import os" in first.files()[-1][1]
    assert rendered(first) == rendered(second)
    assert [s for s in second.snippets if s.head] == [s for s in first.snippets if s.head]


def test_the_suffix_past_its_fim_share_goes_before_the_file_and_stays_while_typing(
    py_index: ProjectIndex,
) -> None:
    """`Budget.fim_suffix_tokens`: the suffix's head stays in the fill-in-the-middle slot;
    the rest becomes the file's tail snippet, before the similar code and the file, and
    does not change while the user types at the cursor (so the prefix cache keeps it)."""
    after = "".join(f"after_{i} = os.getcwd()\n" for i in range(40))
    budget = Budget(total=2000, suffix_share=0.3, fim_suffix_tokens=20)
    whole = build_context("x = ", "1\n" + after, [], Budget(total=2000, suffix_share=0.3))
    split = build_context("x = ", "1\n" + after, [], budget, file_path="pkg/ship.py")
    (tail,) = [s for s in split.snippets if s.tail]
    assert split.suffix.startswith("1\n") and split.suffix.endswith("\n")
    assert estimate_tokens(split.suffix) <= 20
    assert tail.path == "pkg/ship.py" and split.suffix + tail.text == whole.suffix
    assert tail.start_line == split.suffix.count("\n")  # the file's line (the cursor's is 0)
    assert split.tokens <= budget.available

    builder = ContextBuilder(py_index)
    text = long_file(20) + "stock = "
    later = "\n" + after
    first = builder.build("pkg/ship.py", text + later, len(text), "python", budget)
    typed = text + "Ware"
    second = builder.build("pkg/ship.py", typed + later, len(typed), "python", budget)
    assert [s.text for s in first.snippets if s.tail] == [
        tail.text for tail in second.snippets if tail.tail
    ]
    assert [s for s in second.snippets if s.tail] != []
    shown = second.snippets
    at = next(i for i, snippet in enumerate(shown) if snippet.tail)
    assert not any(snippet.similar or snippet.head for snippet in shown[:at])
    assert all(snippet.similar or snippet.head for snippet in shown[at + 1 :])
    off = builder.build(
        "pkg/ship.py", typed + later, len(typed), "python", Budget(total=2000, suffix_share=0.3)
    )
    assert not [s for s in off.snippets if s.tail] and off.suffix == second.suffix + "".join(
        s.text for s in second.snippets if s.tail
    )


# --- stable order ----------------------------------------------------------------------------


def rendered(context: Context) -> str:
    return "".join(f"<|file_sep|>{path}\n{text}" for path, text in context.files())


def test_render_order_is_by_kind_path_and_line_not_score() -> None:
    snippets = [
        Snippet("z.py", "def z(): ...\n", 5, 400.0, "z"),
        Snippet("a.py", "def a(): ...\n", 9, 300.0, "a"),
        Snippet("a.py", "def b(): ...\n", 2, 200.0, "b"),
        Snippet("m.py", "M = 1\n", 0, 10.0, ""),
    ]
    context = build_context("", "", snippets, Budget(total=1000))
    assert [(s.path, s.start_line) for s in context.snippets] == [
        ("m.py", 0),
        ("a.py", 2),
        ("a.py", 9),
        ("z.py", 5),
    ]


def test_typing_keeps_the_snippets_and_their_order(py_index: ProjectIndex) -> None:
    builder = ContextBuilder(py_index)
    line = "        self.repo.save(StockItem(sku, sku))"
    text, start = service(py_index, "|\n")
    previous = None
    changes = 0
    for typed in range(len(line) + 1):
        current = text[:start] + line[:typed] + text[start:]
        context = builder.build(SERVICE, current, start + typed, "python", Budget(total=1200))
        assert list(context.snippets) == sorted(context.snippets, key=lambda s: s.order)
        snippets = rendered(context)
        if previous is not None and snippets != previous:
            changes += 1
        previous = snippets
    assert changes <= 3  # `self.repo`, `StockItem` arrive once each and then stay


def test_a_chosen_snippet_stays_while_the_cursor_stays_in_its_function(
    py_index: ProjectIndex,
) -> None:
    builder = ContextBuilder(py_index)
    text, offset = service(py_index, "        w = Warehouse('x')\n        w.|\n")
    first = builder.build(SERVICE, text, offset, "python", Budget(total=1200))
    assert ("inventory/models.py", "Warehouse") in {(s.path, s.name) for s in first.snippets}
    text, offset = service(py_index, "        n = 1|\n")
    later = builder.build(SERVICE, text, offset, "python", Budget(total=1200))
    assert ("inventory/models.py", "Warehouse") in {(s.path, s.name) for s in later.snippets}
    builder.forget(SERVICE)
    fresh = builder.build(SERVICE, text, offset, "python", Budget(total=1200))
    new = ContextBuilder(py_index).build(SERVICE, text, offset, "python", Budget(total=1200))
    assert fresh.snippets == new.snippets  # forgotten: as if the file had just been opened


def test_without_an_index_the_context_is_the_current_file() -> None:
    text = "import os\n\ndef f():\n    os.path.|\n    return 1\n"
    offset = text.index("|")
    text = text.replace("|", "")
    context = ContextBuilder(None).build("f.py", text, offset, "python")
    assert context.snippets == ()
    assert context.prefix == text[:offset] and context.suffix == text[offset:]
    assert context.names[0] == "os.path"


def test_a_snippet_slow_to_parse_is_compared_by_its_words() -> None:
    """An outline keeps the first line of a long assignment (`x = Publisher(`); the
    unclosed bracket sends tree-sitter into error recovery that cost builds milliseconds.
    A snippet that does not parse cleanly is compared by its words and punctuation."""
    stubs = "".join(f"def handler_{n}(event) -> None:\n    ...\n" for n in range(400))
    broken = "publisher = Publisher(\n" + stubs
    ends = near_duplicates._leaf_ends(broken, "python")
    assert ends is not None and "->" not in ends and ends["-"] < ends[">"]  # words, marks
    assert leaf_tokens(broken, "python") == frozenset(ends)
    assert jaccard(leaf_tokens(broken, "python"), leaf_tokens(broken + "\n", "python")) == 1.0
    clean = "def handler(event) -> None:\n    return None\n"
    assert "->" in near_duplicates._leaf_ends(clean, "python")  # parsed: the arrow is a leaf


def test_a_snippets_leaves_are_read_from_its_bytes() -> None:
    """`_leaf_ends` slices each leaf out of the snippet's bytes (a step-limited tree reads
    `Node.text` back through the parse's callback, 5x slower): the tokens, and where each
    first ends, are those of the leaves of an ordinary parse, non-ASCII text included."""
    snippet = (
        'def grüße(name: str = "Zoë") -> str:\n'
        '    """Grüße, «name»."""\n'
        "    return f'hallo {name!r}' + \"→\"  # ok\n"
    )
    source = snippet.encode()
    parser = parser_for("python")
    assert parser is not None
    tree = parser.parse(source)
    expected: dict[str, int] = {}
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.child_count:
            stack.extend(reversed(node.children))
        elif node.text:
            expected.setdefault(node.text.decode(), node.end_byte)
    assert near_duplicates._leaf_ends(snippet, "python") == expected
    assert "grüße" in expected and "→" in expected


@given(
    a=st.frozensets(st.integers(0, 40).map(str), max_size=40),
    b=st.frozensets(st.integers(0, 40).map(str), max_size=40),
)
def test_the_size_bound_never_changes_a_near_duplicate_answer(
    a: frozenset[str], b: frozenset[str]
) -> None:
    """Sizes alone rule a pair out only where the Jaccard index could not reach 0.85."""
    assert near_duplicates._similar_sets(a, b) == (jaccard(a, b) >= DUPLICATE_JACCARD)


def test_a_context_does_not_depend_on_the_clock(
    py_index: ProjectIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parses on the request path (the cursor's window, a snippet's tokens) are given up
    after a number of parser steps, not after a time: on a machine slow enough that every
    clock read is a second later, every build chooses as it does here."""
    text, _ = service(py_index, "        self.repo.|\n        theLogPublisher = Publisher(\n")
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]

    def builds() -> list[tuple[str, str, tuple[Snippet, ...]]]:
        for memo in (near_duplicates._token_sets, near_duplicates._first_ends):
            memo.clear()
        near_duplicates._duplicates.clear()
        cursor_parsing._windows.last.clear()
        builder = ContextBuilder(py_index, texts={SERVICE: text})
        builder.prepare(SERVICE)
        out = []
        for start in starts:
            context = builder.build(SERVICE, text, start, "python")
            out.append((context.prefix, context.suffix, context.snippets))
        return out

    on_time = builds()
    now = [time.perf_counter()]

    def slow_clock() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", slow_clock)
    assert builds() == on_time
