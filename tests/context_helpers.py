"""The context tests' project indexes: a fixture project copied and indexed."""

from __future__ import annotations

import shutil
from pathlib import Path

from cache.index import ProjectIndex

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def index_of(name: str, tmp: Path) -> ProjectIndex:
    root = Path(shutil.copytree(FIXTURES / name, tmp / name))
    index = ProjectIndex(root, cache_dir=tmp / "cache")
    index.build()
    return index


SERVICE = "app/service.py"


def edited(index: ProjectIndex, path: str, body: str, anchor: str) -> tuple[str, int]:
    """The file's text with `body` inserted after `anchor`, and the offset of its `|`."""
    base = (index.root / path).read_text()
    at = base.index(anchor) + len(anchor)
    return base[:at] + body.replace("|", "", 1) + base[at:], at + body.index("|")


def service(index: ProjectIndex, body: str) -> tuple[str, int]:
    return edited(index, SERVICE, body, "    def restock(self, sku: str) -> None:\n")
