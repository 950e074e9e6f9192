"""benchmarks/quality/repo_eval.py answers eval tasks through the server, in the baselines'
format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from conftest import ROOT, load_benchmark
from fake_openai import FakeBackend

SCRIPT = ROOT / "benchmarks" / "quality" / "repo_eval.py"
UTIL = 'def helper(a, b):\n    """Add two numbers."""\n    return a + b\n'
MAIN = "from tinypkg import util\n\n\ndef run(x):\n    y = util.helper(x, 2)\n    return y\n"
RECORD_FIELDS = {
    "task_id",
    "package",
    "strategy",
    "model",
    "prediction",
    "groundtruth",
    "prompt_chars",
    "latency_s",
}


def repo_eval() -> ModuleType:
    return load_benchmark("quality/repo_eval")


def make_task_set(out: Path) -> dict[str, Any]:
    """One repository and one task, laid out as the eval's make_tasks.py writes them."""
    package = out / "repos" / "tinypkg-0.1" / "tinypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "util.py").write_text(UTIL)
    (package / "main.py").write_text(MAIN)
    cursor = MAIN.index("helper(x, 2)")
    task: dict[str, Any] = {
        "task_id": "tinypkg-0.1/tinypkg/main.py:4:13",
        "package": "tinypkg",
        "version": "0.1",
        "repo_dir": "repos/tinypkg-0.1",
        "file": "tinypkg/main.py",
        "cursor": {"line": 4, "character": 13},
        "prefix": MAIN[:cursor],
        "suffix": MAIN[cursor + len("helper(x, 2)") :],
        "groundtruth": "helper(x, 2)",
        "cross_file_symbols": [
            {"name": "helper", "defined_in": "tinypkg/util.py", "def_line": 0, "span": [0, 2]}
        ],
        "language": "python",
    }
    assert task["prefix"] + task["groundtruth"] + task["suffix"] == MAIN
    (out / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    return task


def test_the_server_answers_a_task_in_the_baselines_format(
    fake: FakeBackend, tmp_path: Path
) -> None:
    task = make_task_set(tmp_path / "dev")
    fake.script([{"match": "<|repo_name|>tinypkg", "text": "helper(x, 2)\n    return y"}])
    results = tmp_path / "results.jsonl"
    command = [sys.executable, str(SCRIPT), "--tasks", str(tmp_path / "dev" / "tasks.jsonl")]
    command += ["--endpoint", fake.url, "--out", str(results), "--timeout", "20"]

    subprocess.run(command, check=True, capture_output=True, timeout=60)

    [record] = [json.loads(line) for line in results.read_text().splitlines()]
    assert set(record) == RECORD_FIELDS
    assert record["task_id"] == task["task_id"]
    assert record["package"] == "tinypkg"
    assert record["strategy"] == "headstart"
    assert record["model"] == fake.model  # the first of /v1/models, as run_baselines.py does
    assert record["prediction"] == "helper(x, 2)"  # the fake's text, to the end of the line
    assert record["groundtruth"] == "helper(x, 2)"
    assert record["latency_s"] > 0
    [event] = fake.events()
    assert event["body"]["temperature"] == 0
    assert event["body"]["max_tokens"] == 128  # a line, then the block in the background
    prompt = event["prompt"]
    assert prompt.startswith("<|repo_name|>tinypkg\n")
    assert "<|file_sep|>tinypkg/util.py\ndef helper(a, b):" in prompt  # the module's definition
    assert "<|file_sep|>tinypkg/main.py\n<|fim_prefix|>" in prompt
    assert "    y = util.<|fim_suffix|>\n    return y\n" in prompt  # the rest of the line cut

    again = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
    assert "1 done, 0 to run" in again.stderr
    assert len(results.read_text().splitlines()) == 1


def test_the_workspace_copy_has_no_answer_on_disk(tmp_path: Path) -> None:
    task = make_task_set(tmp_path / "dev")
    workspace = tmp_path / "ws" / "tinypkg"

    warnings = repo_eval().prepare_workspace(
        tmp_path / "dev" / "repos" / "tinypkg-0.1", workspace, [task]
    )

    assert warnings == []
    assert (workspace / "tinypkg" / "main.py").read_text() == task["prefix"] + task["suffix"]
    assert (workspace / "tinypkg" / "util.py").read_text() == UTIL
    assert (tmp_path / "dev" / "repos" / "tinypkg-0.1" / "tinypkg" / "main.py").read_text() == MAIN
