"""benchmarks/quality/score.py: the metrics docs/results.md quotes, on hand-checked answers and
on a stored run whose published table must come out again."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "quality" / "score.py"
STORED = ROOT / "docs" / "results" / "repo_eval_dev_imports"


def load_score() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality_score", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality_score"] = module
    spec.loader.exec_module(module)
    return module


score = load_score()


def record(prediction: str, groundtruth: str, **extra: Any) -> dict[str, Any]:
    base = {"task_id": "t", "package": "p", "strategy": "in-file", "model": "m"}
    return {**base, "prediction": prediction, "groundtruth": groundtruth, **extra}


# (prediction, groundtruth, EM, ES, ID-EM, ID-F1), worked out by hand:
HAND_CHECKED = [
    # equal after strip
    ("  foo(bar)\n", "foo(bar)", 100.0, 100.0, 100.0, 100.0),
    # one substitution in 8 characters; identifiers [foo, baz] against [foo, bar]: P = R = 1/2
    ("foo(baz)", "foo(bar)", 0.0, 100 * (1 - 1 / 8), 0.0, 50.0),
    # string (with its f prefix) and comment are not identifiers: [name] both; 15 deletions of 19
    ('f"x" + name  # note', "name", 0.0, 100 * (1 - 15 / 19), 100.0, 100.0),
    # keywords (None, if, else, return) dropped: [x, y] against [x]: P 1/2, R 1, F1 2/3
    ("return None if x else y", "return x", 0.0, None, 0.0, 200 / 3),
    # both empty: a perfect answer by every metric
    ("", "  ", 100.0, 100.0, 100.0, 100.0),
    # no identifier in common
    ("a.b", "c", 0.0, 0.0, 0.0, 0.0),
]


@pytest.mark.parametrize(("prediction", "groundtruth", "em", "es", "id_em", "id_f1"), HAND_CHECKED)
def test_metrics_of_one_answer(
    prediction: str, groundtruth: str, em: float, es: float | None, id_em: float, id_f1: float
) -> None:
    got = score.score_record(record(prediction, groundtruth))
    assert got["EM"] == em
    if es is not None:
        assert got["ES"] == pytest.approx(es)
    assert got["ID-EM"] == id_em
    assert got["ID-F1"] == pytest.approx(id_f1)


def test_levenshtein_and_identifiers() -> None:
    assert score.levenshtein("kitten", "sitting") == 3
    assert score.levenshtein("", "abc") == 3
    assert score.identifiers("x = rb'a\\'b' + y  # z") == ["x", "y"]
    assert score.identifiers("self.get(key, None)") == ["self", "get", "key"]


def test_paired_table_keeps_tasks_every_strategy_answered(tmp_path: Path) -> None:
    rows = [
        record("a", "a", task_id="1", strategy="bm25"),
        record("b", "a", task_id="2", strategy="bm25"),
        record("a", "a", task_id="1", strategy="in-file"),
        record("zzzz", "a", task_id="3", strategy="in-file"),  # bm25 has no task 3
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))

    lines = score.score_files([results], pair=True)
    assert lines[0].split() == ["strategy", "model", "package", "n", "EM", "ES", "ID-EM", "ID-F1"]
    # in-file before bm25 (the baselines' order); each has task 1 only: all 100
    assert [line.split() for line in lines[2:]] == [
        ["in-file", "m", "1", "100.0", "100.0", "100.0", "100.0"],
        ["bm25", "m", "1", "100.0", "100.0", "100.0", "100.0"],
    ]
    unpaired = score.score_files([results], by_package=True)
    assert unpaired[2].split() == ["in-file", "m", "p", "2", "50.0", "50.0", "50.0", "50.0"]
    assert unpaired[3].split() == ["bm25", "m", "p", "2", "50.0", "50.0", "50.0", "50.0"]


def test_stored_run_gives_its_published_table() -> None:
    """docs/results/repo_eval_dev_imports.txt is `score.py --paired` then `--paired
    --by-package` of the .jsonl beside it (1,200 answers, 6 strategies, 10 packages)."""
    published = [
        line
        for line in STORED.with_suffix(".txt").read_text().splitlines()
        if not line.startswith("#")
    ]
    results = [STORED.with_suffix(".jsonl")]
    scored = score.score_files(results, pair=True)
    scored += ["", *score.score_files(results, by_package=True, pair=True)]
    assert scored == published
    headstart = next(line for line in scored if line.startswith("headstart "))
    assert headstart.split()[2:] == ["200", "53.5", "73.8", "58.5", "70.8"]
