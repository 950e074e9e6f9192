"""The warm queue: priority order, recency, bounds, preloaded text."""

from __future__ import annotations

import shutil
from pathlib import Path

from cache.index import ProjectIndex
from cache.queue import FileQueue

ROOT = Path(__file__).resolve().parent.parent


def sample_index(tmp_path: Path) -> ProjectIndex:
    project = Path(shutil.copytree(ROOT / "examples" / "sample_project", tmp_path / "p"))
    (project / "notes").mkdir()
    for name in ("a.md", "b.md"):  # related to nothing
        (project / "notes" / name).write_text(f"# {name}\n")
    index = ProjectIndex(project, cache_dir=tmp_path / "cache")
    index.build()
    return index


def test_priority_order_is_directory_dependencies_second_hop_then_recent(tmp_path: Path) -> None:
    queue = FileQueue(sample_index(tmp_path))
    queue.activate("README.md")
    assert queue.activate("inventory/pricing.py") == [
        "inventory/__init__.py",  # same package (models.py is also a direct dependency)
        "inventory/models.py",
        "inventory/report.py",
        "inventory/stock.py",
        "README.md",  # recently used, related otherwise to nothing here
    ]
    order = queue.activate("main.py")
    assert order[:4] == [
        "README.md",
        "inventory/models.py",
        "inventory/report.py",
        "inventory/stock.py",
    ]  # directory, then what main.py imports
    assert order[4] == "inventory/pricing.py"  # second hop, through report.py


def test_recently_used_files_come_last_newest_first(tmp_path: Path) -> None:
    queue = FileQueue(sample_index(tmp_path))
    queue.activate("notes/a.md")
    queue.activate("notes/b.md")
    order = queue.activate("inventory/models.py")
    assert order[-2:] == ["notes/b.md", "notes/a.md"]
    assert "inventory/models.py" not in order


def test_the_queue_is_bounded_in_files_and_bytes_and_preloads_its_files(tmp_path: Path) -> None:
    index = sample_index(tmp_path)
    queue = FileQueue(index, max_files=2)
    order = queue.activate("inventory/report.py")
    assert order == ["inventory/__init__.py", "inventory/models.py"]
    assert set(queue.texts) == set(order)
    assert queue.texts["inventory/models.py"] == (index.root / "inventory/models.py").read_text()

    small = index.records["inventory/__init__.py"].size
    tight = FileQueue(index, max_bytes=small)
    assert tight.activate("inventory/report.py") == ["inventory/__init__.py"]
