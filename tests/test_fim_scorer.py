"""benchmarks/quality/fim_score.py, the scorer of docs/results.md's fill-in-the-middle figures:
right and wrong completions, a loop cut by the timeout, no network, and a stored sample whose
per-problem results (from ../shared/eval/fim/fim_eval.py, the scorer the figures were first
made with) must come out again."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "quality" / "fim_score.py"
STORED = ROOT / "docs" / "results"


def load_fim_score() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fim_score", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fim_score"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fim = load_fim_score()
LIMITS = fim.Limits(timeout_s=5.0)
SINGLE = {p.task_id: p for p in fim.load_problems("single")}
# has_close_elements: the hole is the `return True` line under `if distance < threshold:`
RETURN_TRUE = SINGLE["SingleLineInfilling/HumanEval/0/L5"]
DISTANCE = SINGLE["SingleLineInfilling/HumanEval/0/L3"]

# Per-problem results of the original scorer on the published runs' stored completions
# (docs/results/fim_{single,multi}_completions.jsonl), 2026-12-06:
#   fim_eval.py --dataset single|multi --completions ... --workers 1 --out ...
STORED_SAMPLE: dict[str, tuple[str, bool, str]] = {
    "SingleLineInfilling/HumanEval/21/L2": ("single", True, "ok"),  # not the reference's text
    "SingleLineInfilling/HumanEval/126/L0": ("single", True, "ok"),
    "SingleLineInfilling/HumanEval/43/L1": ("single", False, "error"),
    "SingleLineInfilling/HumanEval/54/L0": ("single", False, "error"),
    "MultiLineInfilling/HumanEval/1/L0_L2": ("multi", True, "ok"),
    "MultiLineInfilling/HumanEval/9/L6_L11": ("multi", True, "ok"),  # not the reference's text
    "MultiLineInfilling/HumanEval/69/L0_L9": ("multi", False, "error"),
    "MultiLineInfilling/HumanEval/95/L12_L18": ("multi", False, "error"),
}


def test_the_reference_middle_passes() -> None:
    outcome = fim.score_one(RETURN_TRUE, RETURN_TRUE.reference, fim.HUMANEVAL, LIMITS)
    assert (outcome.passed, outcome.status) == (True, "ok")
    assert outcome.exact_match and outcome.exact_match_stripped


def test_a_wrong_line_fails_its_tests() -> None:
    wrong = "                    return False\n"
    outcome = fim.score_one(RETURN_TRUE, wrong, fim.HUMANEVAL, LIMITS)
    assert (outcome.passed, outcome.status) == (False, "error")
    assert "AssertionError" in outcome.stderr_tail
    assert not outcome.exact_match


def test_exact_match_stripped_ignores_surrounding_whitespace() -> None:
    outcome = fim.score_one(RETURN_TRUE, "return True", fim.HUMANEVAL, LIMITS)
    assert not outcome.passed  # the line lost its indentation: the file no longer parses
    assert (outcome.exact_match, outcome.exact_match_stripped) == (False, True)


def test_an_early_clean_exit_is_not_a_pass() -> None:
    outcome = fim.score_one(
        RETURN_TRUE, "                    import os; os._exit(0)\n", fim.HUMANEVAL, LIMITS
    )
    assert (outcome.passed, outcome.status) == (False, "no_sentinel")


def test_a_completion_that_loops_is_stopped_by_the_timeout() -> None:
    loop = "                while True:\n                    pass\n"
    started = time.monotonic()
    outcome = fim.score_one(DISTANCE, loop, fim.HUMANEVAL, fim.Limits(timeout_s=1.0))
    assert (outcome.passed, outcome.status) == (False, "timeout")
    assert time.monotonic() - started < 10


def test_programs_run_without_network() -> None:
    netns = fim.netns_prefix("auto")
    if not netns:
        pytest.skip("no unprivileged user namespaces here: `unshare -rn` is unavailable")
    program = "import socket; print([name for _, name in socket.if_nameindex()])"
    status, out, _ = fim.run_program(program, fim.Limits(timeout_s=5.0, netns=netns))
    assert (status, out.strip()) == ("ok", "['lo']")


def test_safim_programs_read_stdin_and_compare_tokens() -> None:
    problem = fim.Problem(
        "t", "n = int(input())\nprint(", ")\n", "n * 2", stdio_tests=(("21\n", ("42",)),)
    )
    assert fim.score_one(problem, "n * 2", fim.STDIO, LIMITS).status == "ok"
    assert fim.score_one(problem, "n + 2", fim.STDIO, LIMITS).status == "wrong_answer"
    assert fim.outputs_match("YES\n 0.3000000001 ", "yes 0.3")
    assert not fim.outputs_match("1 2", "1 2 3")


def test_safim_api_completions_match_as_expressions() -> None:
    problem = fim.Problem("t", "", "", "np.sum(a, axis=0)")
    assert fim.score_one(problem, " np.sum( a,axis = 0 )\n", fim.MATCH, LIMITS).passed
    assert not fim.score_one(problem, "np.sum(a, axis=1)", fim.MATCH, LIMITS).passed


def test_missing_completions_are_counted_and_fail(tmp_path: Path) -> None:
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        json.dumps({"task_id": RETURN_TRUE.task_id, "completion": RETURN_TRUE.reference})
        + "\n"
        + json.dumps({"task_id": RETURN_TRUE.task_id, "completion": "ignored: not the first"})
        + "\n"
    )
    given = fim.load_completions(completions)
    outcomes = fim.score_all([RETURN_TRUE, DISTANCE], given, fim.HUMANEVAL, LIMITS)
    summary = fim.summarize(outcomes, missing=1)
    assert [o.passed for o in outcomes] == [True, False]
    assert {k: summary[k] for k in ("n", "missing_completions", "pass@1", "exact_match")} == {
        "n": 2,
        "missing_completions": 1,
        "pass@1": 0.5,
        "exact_match": 0.5,
    }


def stored_completion(dataset: str, task_id: str) -> str:
    with open(STORED / f"fim_{dataset}_completions.jsonl", encoding="utf-8") as f:
        for line in f:
            row: dict[str, Any] = json.loads(line)
            if row["task_id"] == task_id:
                return str(row["completion"])
    raise KeyError(task_id)


@pytest.mark.parametrize("task_id", sorted(STORED_SAMPLE))
def test_stored_completions_score_as_the_original_scorer_did(task_id: str) -> None:
    dataset, passed, status = STORED_SAMPLE[task_id]
    problem = next(p for p in fim.load_problems(dataset) if p.task_id == task_id)
    outcome = fim.score_one(problem, stored_completion(dataset, task_id), fim.HUMANEVAL, LIMITS)
    assert (outcome.passed, outcome.status) == (passed, status)
