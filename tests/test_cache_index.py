"""The project index end to end on real files: cold build, warm start, changes on disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cache.index import IndexSummary, ProjectIndex

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ROOT / "examples" / "sample_project", tmp_path / "project"))


def build(project: Path, cache: Path) -> tuple[ProjectIndex, IndexSummary]:
    """A built index, closed (its records, graph and outlines in memory stay usable)."""
    index = ProjectIndex(project, cache_dir=cache)
    summary = index.build()
    index.close()
    return index, summary


def test_cold_build_outlines_every_file_and_resolves_imports(project: Path, tmp_path: Path) -> None:
    index, summary = build(project, tmp_path / "cache")
    assert summary.outlined == summary.files == len(index.records)
    report = index.records["inventory/report.py"]
    assert report.language == "python"
    assert report.depends_on == ("inventory/models.py", "inventory/pricing.py")
    assert index.graph.imported_by("inventory/models.py") >= {
        "inventory/pricing.py",
        "inventory/stock.py",
        "inventory/report.py",
    }
    models = index.outline("inventory/models.py")
    assert models is not None
    names = {d.qualified_name for d in models.definitions}
    assert {"Item", "Item.value", "Warehouse", "Warehouse.add"} <= names


def test_warm_start_reuses_unchanged_files_and_redoes_changed_ones(
    project: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    build(project, cache)

    _, warm = build(project, cache)
    assert (warm.outlined, warm.rehashed) == (0, 0)
    assert warm.reused == warm.files

    stock = project / "inventory" / "stock.py"
    stock.write_text(
        stock.read_text() + "\n\ndef audit(warehouse: Warehouse) -> int:\n    return 0\n"
    )
    models = project / "inventory" / "models.py"
    stat = models.stat()
    os.utime(models, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touched only
    (project / "main.py").unlink()
    (project / "inventory" / "audit.py").write_text("from inventory.stock import audit\n")

    index, summary = build(project, cache)
    assert summary.outlined == 2  # stock.py and the new audit.py
    assert summary.rehashed == 1  # models.py: same hash
    assert summary.removed == 1  # main.py
    assert "main.py" not in index.records
    assert index.records["inventory/audit.py"].depends_on == ("inventory/stock.py",)
    outline = index.outline("inventory/stock.py")
    assert outline is not None and "audit" in {d.name for d in outline.definitions}


def test_a_corrupt_store_is_rebuilt_not_trusted(
    project: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    index, _ = build(project, cache)
    for file in index.store.path.rglob("*.db"):
        file.write_bytes(b"this is not sqlite" * 100)
    again, summary = build(project, cache)
    assert summary.outlined == summary.files
    assert again.records.keys() == index.records.keys()
    assert any("rebuil" in r.getMessage() or "discard" in r.getMessage() for r in caplog.records)


def test_related_files_rank_the_directory_then_dependencies_then_importers(
    project: Path, tmp_path: Path
) -> None:
    index, _ = build(project, tmp_path / "cache")
    assert index.related("inventory/report.py") == [
        "inventory/__init__.py",  # same package
        "inventory/models.py",  # (also imported by report.py)
        "inventory/pricing.py",
        "inventory/stock.py",
        "main.py",  # imports report.py
    ]
    assert index.related("main.py") == [
        "README.md",  # same directory
        "inventory/models.py",  # imported by main.py
        "inventory/report.py",
        "inventory/stock.py",
        "inventory/pricing.py",  # second hop
    ]


def test_a_grammar_that_crashes_costs_one_outline_not_the_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """tree-sitter's YAML grammar segfaults on deep nesting; outlining runs in worker
    processes, so the index survives and records that file without an outline."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "deep.yaml").write_text("".join("  " * i + f"k{i}:\n" for i in range(400)))
    (project / "config.yaml").write_text("name: demo\nversion: 1\n")
    (project / "app.py").write_text("def main() -> None:\n    pass\n")

    index = ProjectIndex(project, cache_dir=tmp_path / "cache")
    summary = index.build()

    assert summary.files == 3
    assert index.records["deep.yaml"].digest  # still fingerprinted
    assert index.outline("config.yaml") is not None
    app = index.outline("app.py")
    assert app is not None and [d.name for d in app.definitions] == ["main"]
    assert "yaml grammar crashed on" in caplog.text and "deep.yaml" in caplog.text
    assert index.outline("deep.yaml") is None  # asked again: crashes a worker, not us
    index.close()
