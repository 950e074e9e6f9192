"""Incremental updates of the project index on real files: edits, renames, deletes, new
files, unsaved buffers, the rules for which paths count, and outlines loaded on demand.

After every change the index must agree with a cold build of the same files: the same
dependencies for every file, and the same outlines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cache.index import OUTLINE_CACHE_FILES, ProjectIndex
from cache.scan import ScanSettings

FILES = {
    "app.py": "from shop import Item\nimport tools.helper\n\ndef main() -> None:\n    pass\n",
    "shop/__init__.py": "from shop.models import Item\n",
    "shop/models.py": '"""Models."""\n\nclass Item:\n    """An item."""\n\n    price = 0\n',
    "shop/pricing.py": "from .models import Item\n\ndef total(items: list[Item]) -> int:\n"
    "    return 0\n",
    "shop/report.py": "from shop.pricing import total\n\nVERSION = 1\n",
    "web/app.ts": "import { util } from './util';\nexport function run(): void {}\n",
    "README.md": "# Shop\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture
def index(project: Path, tmp_path: Path) -> Iterator[ProjectIndex]:
    built = ProjectIndex(project, cache_dir=tmp_path / "cache")
    built.build()
    yield built
    built.close()


def write(root: Path, path: str, text: str) -> None:
    """Write `text` to a file and make sure its mtime moves (coarse file system clocks)."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    before = target.stat().st_mtime_ns if target.exists() else 0
    target.write_text(text)
    if target.stat().st_mtime_ns == before:
        os.utime(target, ns=(before + 1_000_000, before + 1_000_000))


def dependencies(index: ProjectIndex) -> dict[str, tuple[str, ...]]:
    return {path: record.depends_on for path, record in sorted(index.records.items())}


def assert_as_if_built_afresh(index: ProjectIndex, tmp_path: Path) -> None:
    """The updated index agrees with a cold build of the same files in a new store, and
    its graph with its records."""
    fresh = ProjectIndex(index.root, cache_dir=tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}")
    fresh.build()
    assert dependencies(index) == dependencies(fresh)
    for path in fresh.records:
        assert index.outline(path) == fresh.outline(path), path
        assert index.graph.imports(path) == fresh.graph.imports(path), path
        assert index.graph.imported_by(path) == fresh.graph.imported_by(path), path
    fresh.close()


def warm(index: ProjectIndex) -> ProjectIndex:
    """Another index on the same store, as the next session would open it."""
    again = ProjectIndex(index.root, cache_dir=index.store.path.parent.parent)
    again.build()
    return again


def test_an_edit_moves_the_import_edges(index: ProjectIndex, project: Path, tmp_path: Path) -> None:
    assert index.records["shop/report.py"].depends_on == ("shop/pricing.py",)
    write(
        project, "shop/report.py", "from shop.models import Item\n\ndef report() -> str:\n    ...\n"
    )

    assert index.update_file("shop/report.py") is True
    assert index.records["shop/report.py"].depends_on == ("shop/models.py",)
    assert "shop/report.py" in index.graph.imported_by("shop/models.py")
    assert "shop/report.py" not in index.graph.imported_by("shop/pricing.py")
    outline = index.outline("shop/report.py")
    assert outline is not None and [d.name for d in outline.definitions] == ["report"]
    assert index.update_file("shop/report.py") is False  # nothing changed since
    assert_as_if_built_afresh(index, tmp_path)

    again = warm(index)  # the update was saved: the next session re-reads nothing
    assert again.records["shop/report.py"] == index.records["shop/report.py"]
    assert again.outline("shop/report.py") == outline
    again.close()


def test_reexports_of_an_edited_init_reach_its_importers(
    index: ProjectIndex, project: Path, tmp_path: Path
) -> None:
    assert index.records["app.py"].depends_on == ("shop/__init__.py", "shop/models.py")
    write(project, "shop/__init__.py", "from shop.pricing import Item\n")
    index.update_file("shop/__init__.py")
    assert index.records["app.py"].depends_on == ("shop/__init__.py", "shop/pricing.py")
    assert_as_if_built_afresh(index, tmp_path)


def test_a_new_file_resolves_imports_that_found_nothing(
    index: ProjectIndex, project: Path, tmp_path: Path
) -> None:
    assert index.records["app.py"].depends_on == ("shop/__init__.py", "shop/models.py")
    assert index.records["web/app.ts"].depends_on == ()
    write(project, "tools/helper.py", "def helps() -> bool:\n    return True\n")
    write(project, "web/util.ts", "export const util = 1;\n")

    assert index.update_file("tools/helper.py") is True
    assert index.update_file("web/util.ts") is True
    assert "tools/helper.py" in index.records["app.py"].depends_on
    assert index.records["web/app.ts"].depends_on == ("web/util.ts",)
    assert index.related("tools/helper.py")[0] == "app.py"  # its importer
    assert_as_if_built_afresh(index, tmp_path)


def test_a_new_package_init_makes_a_source_root(
    index: ProjectIndex, project: Path, tmp_path: Path
) -> None:
    write(project, "libs/inner/engine.py", "RPM = 1\n")
    write(project, "app.py", "import inner.engine\n")
    index.update_file("libs/inner/engine.py")
    index.update_file("app.py")
    assert index.records["app.py"].depends_on == ()  # libs/ is no source root yet
    write(project, "libs/inner/__init__.py", "")
    index.update_file("libs/inner/__init__.py")
    assert index.records["app.py"].depends_on == ("libs/inner/engine.py",)
    assert_as_if_built_afresh(index, tmp_path)


def test_delete_and_rename(index: ProjectIndex, project: Path, tmp_path: Path) -> None:
    (project / "shop" / "pricing.py").rename(project / "shop" / "prices.py")
    assert index.remove_file("shop/pricing.py") is True
    assert index.update_file("shop/prices.py") is True
    assert "shop/pricing.py" not in index.records
    assert index.records["shop/prices.py"].depends_on == ("shop/models.py",)
    # `from shop.pricing import total` now finds only the package
    assert index.records["shop/report.py"].depends_on == ("shop/__init__.py",)
    assert index.outline("shop/pricing.py") is None

    (project / "shop" / "models.py").unlink()
    assert index.update_file("shop/models.py") is True  # gone from disk: removed
    assert "shop/models.py" not in index.records
    assert index.records["shop/prices.py"].depends_on == ()
    assert index.graph.imported_by("shop/models.py") == frozenset()
    assert index.remove_file("shop/models.py") is False  # already gone
    assert_as_if_built_afresh(index, tmp_path)

    again = warm(index)
    assert sorted(again.records) == sorted(index.records)
    assert dependencies(again) == dependencies(index)
    again.close()


def test_an_unsaved_buffer_wins_but_is_never_saved(
    index: ProjectIndex, project: Path, tmp_path: Path
) -> None:
    buffer = b"from shop.models import Item\n\ndef draft(item: Item) -> None:\n    pass\n"
    assert index.update_file("shop/report.py", buffer, persist=False) is True
    assert index.records["shop/report.py"].depends_on == ("shop/models.py",)
    outline = index.outline("shop/report.py")
    assert outline is not None and [d.name for d in outline.definitions] == ["draft"]
    assert index.update_file("shop/report.py", buffer, persist=False) is False

    again = warm(index)  # the store still has the disk's version
    assert again.records["shop/report.py"].depends_on == ("shop/pricing.py",)
    disk_outline = again.outline("shop/report.py")
    assert disk_outline is not None and [d.name for d in disk_outline.definitions] == ["VERSION"]
    again.close()

    # saved: the same bytes on disk, and now persisted
    write(project, "shop/report.py", buffer.decode())
    assert index.update_file("shop/report.py", buffer) is False  # nothing new to know
    again = warm(index)
    assert again.records["shop/report.py"].depends_on == ("shop/models.py",)
    assert again.outline("shop/report.py") == outline
    again.close()


def test_a_buffer_unlike_the_disk_is_not_saved_even_when_asked(
    index: ProjectIndex, project: Path
) -> None:
    index.update_file("shop/report.py", b"import shop.models\n", persist=True)
    assert index.records["shop/report.py"].depends_on == ("shop/models.py",)
    again = warm(index)
    assert again.records["shop/report.py"].depends_on == ("shop/pricing.py",)
    again.close()
    assert index.update_file("shop/report.py") is True  # the disk wins again
    assert index.records["shop/report.py"].depends_on == ("shop/pricing.py",)


def test_binary_huge_and_unindexable_input_is_dropped_not_fatal(
    project: Path, tmp_path: Path
) -> None:
    index = ProjectIndex(project, ScanSettings(max_file_bytes=1000), cache_dir=tmp_path / "cache")
    index.build()
    assert index.update_file("shop/models.py", b"x = 1\n" * 1000, persist=False) is True
    assert "shop/models.py" not in index.records  # over the size limit: out of the index
    assert "shop/models.py" not in index.graph.imports("shop/pricing.py")
    assert index.update_file("shop/pricing.py", b"\0\x01binary" * 10) is True
    assert "shop/pricing.py" not in index.records
    for path in ("../outside.py", "/etc/passwd", ".env", "shop/none.xyz", "", "a//b.py"):
        assert index.update_file(path) is False
        assert index.update_file(path, b"print(1)\n") is False
        assert index.remove_file(path) is False
    (project / ".env").write_text("SECRET=1\n")
    assert index.update_file(".env") is False
    assert ".env" not in index.records
    index.close()

    again = warm(index)  # a dropped buffer is not a deletion on disk
    assert "shop/models.py" in again.records
    again.close()


def test_relative_path_follows_the_scan_rules(index: ProjectIndex, project: Path) -> None:
    (project / ".gitignore").write_text("generated/\n*.log.py\n")
    (project / ".headstartignore").write_text("private.py\n")
    for path, data in {
        "generated/out.py": b"x = 1\n",
        "debug.log.py": b"x = 1\n",
        "private.py": b"x = 1\n",
        ".env": b"KEY=1\n",
        "notes.xyz": b"text\n",
        "data.py": b"\0\0\0binary",
        "big.py": b"x = 1\n" * 300_000,
        "script": b"#!/usr/bin/env python3\nprint(1)\n",
        "node_modules/lib/index.js": b"module.exports = 1\n",
    }.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_bytes(data)
    (project / "link.py").symlink_to(project / "app.py")

    assert index.relative_path(project / "shop" / "models.py") == "shop/models.py"
    assert index.relative_path(project / "script") == "script"  # a shebang says python
    for path in (
        "generated/out.py", "debug.log.py", "private.py", ".env", "notes.xyz", "data.py",
        "big.py", "node_modules/lib/index.js", "link.py", "missing.py",
    ):  # fmt: skip
        assert index.relative_path(project / path) is None, path
    assert index.relative_path(project.parent / "elsewhere.py") is None
    assert index.relative_path(project) is None
    (project / "shop" / "models.py").unlink()  # deleted but indexed: still its path
    assert index.relative_path(project / "shop" / "models.py") == "shop/models.py"


def test_outlines_are_loaded_on_demand_and_match_a_cold_build(
    index: ProjectIndex, project: Path, tmp_path: Path
) -> None:
    for number in range(OUTLINE_CACHE_FILES + 20):
        write(project, f"many/m{number}.py", f"def f{number}() -> int:\n    return {number}\n")
    index.build()
    cold = {path: index.outline(path) for path in index.records}
    index.close()
    assert all(record.outline is None for record in index.records.values())

    again = warm(index)
    assert all(record.outline is None for record in again.records.values())
    assert {path: again.outline(path) for path in again.records} == cold
    assert len(again._outlines) <= OUTLINE_CACHE_FILES  # a bounded LRU, not every outline
    models = again.outline("shop/models.py")
    assert models is not None
    assert [(d.qualified_name, d.doc) for d in models.definitions] == [
        ("Item", "An item."),
        ("Item.price", None),
    ]
    again.close()
