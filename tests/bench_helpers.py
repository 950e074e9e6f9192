"""A small project to type, a fake model that knows its lines, and `headstart bench` as a
process: what the bench's end-to-end tests share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import ROOT, server_env

PROJECT = {
    "shop/prices.py": '''"""Prices."""

TAX_RATE = 0.2


def with_tax(amount: float) -> float:
    # the rate is fixed for now
    return round(amount * (1 + TAX_RATE), 2)
''',
    "shop/cart.py": """from shop.prices import with_tax


def cart_total(items: list[float]) -> float:
    subtotal = sum(items)
    return with_tax(subtotal)
""",
}


def make_project(root: Path) -> Path:
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def line_rules(root: Path) -> list[dict[str, Any]]:
    """The fake answers the real rest of each line for any cursor inside it."""
    rules = []
    for path in root.rglob("*.py"):
        for line in path.read_text().split("\n"):
            start = len(line) - len(line.lstrip())
            for column in range(start + 1, len(line)):
                rules.append(
                    {"match": f"{line[:column]}<|fim_suffix|>", "text": line[column:] + "\n"}
                )
    return rules


BENCH_SETTINGS: dict[str, Any] = {
    "backend": {"chunkGapMs": 2000},
    "completion": {"prefetch": False},
}
"""Server settings of the bench tests: a loaded test machine may pause a stream for a
while, and prefetches would blur the requests the tests count."""


def answered_project(fake: Any, root: Path) -> Path:
    """The project at `root`, with `fake` scripted to answer the real rest of its lines."""
    make_project(root)
    fake.script(line_rules(root))
    return root


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", "bench", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=server_env(),
        cwd=ROOT,
    )
