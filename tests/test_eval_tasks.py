"""benchmarks/quality/make_tasks.py: from a cached sdist to tasks.jsonl, offline."""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "quality" / "make_tasks.py"
UTIL = 'LIMIT = 3\n\n\n@decorate\ndef helper(a, b):\n    """Add."""\n    return a + b\n'
MAIN = (
    "from tinypkg import util\n"
    "from tinypkg.util import LIMIT\n\n\n"
    "def run(x):\n"
    "    y = util.helper(x, 2)\n"  # line 5: a task at `helper`
    "    z = util.helper(y, 3)\n"  # helper already used above: no task
    "    return min(z, LIMIT)\n"  # line 7: a task at `LIMIT`
)
TEST = "from tinypkg.util import helper\n\n\ndef test():\n    assert helper(1, 2)\n"


def load_make_tasks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality_make_tasks", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality_make_tasks"] = module
    spec.loader.exec_module(module)
    return module


def make_sdist(cache: Path) -> None:
    source = cache / "src" / "tinypkg-0.1"
    for rel, text in {
        "tinypkg/__init__.py": "",
        "tinypkg/util.py": UTIL,
        "tinypkg/main.py": MAIN,
        "tinypkg/tests/__init__.py": "",
        "tinypkg/tests/test_util.py": TEST,  # under tests/: indexed, but gives no task
    }.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    with tarfile.open(cache / "tinypkg-0.1.tar.gz", "w:gz") as archive:
        archive.add(source, arcname="tinypkg-0.1")


def test_tasks_from_a_cached_sdist(tmp_path: Path) -> None:
    make_tasks = load_make_tasks()
    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    make_sdist(cache)
    packages = tmp_path / "packages.txt"
    packages.write_text("# seed: 5\nTinyPkg==0.1  # a comment\n")
    assert make_tasks.read_package_list(packages) == [("TinyPkg", "0.1")]
    assert make_tasks.list_seed(packages) == 5

    assert make_tasks.build(packages, out, per_package=20, seed=0, cache=cache) == 2
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    by_line = {task["cursor"]["line"]: task for task in tasks}
    assert sorted(by_line) == [5, 7]

    helper = by_line[5]
    assert helper["task_id"] == "TinyPkg-0.1/tinypkg/main.py:5:13"
    assert helper["repo_dir"] == "repos/TinyPkg-0.1"
    assert helper["groundtruth"] == "helper(x, 2)"
    assert helper["prefix"].endswith("    y = util.")
    assert helper["cross_file_symbols"] == [
        {"name": "helper", "defined_in": "tinypkg/util.py", "def_line": 4, "span": [3, 6]}
    ]
    limit = by_line[7]
    assert limit["groundtruth"] == "LIMIT)"
    assert limit["cross_file_symbols"][0]["span"] == [0, 0]
    for task in tasks:
        text = (out / task["repo_dir"] / task["file"]).read_text()
        assert task["prefix"] + task["groundtruth"] + task["suffix"] == text
        assert task["suffix"].startswith("\n")
