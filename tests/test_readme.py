"""The README is for users: short enough to read (details live under docs/), and every
local link in it and in docs/ points at a file that exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_stays_within_15_kb() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= 15 * 1024


def test_local_links_in_the_readme_and_docs_resolve() -> None:
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert broken == []
