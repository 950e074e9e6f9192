#!/usr/bin/env python3
"""Score fill-in-the-middle completions: pass@1 and exact match on HumanEval infilling and SAFIM.

    python3 benchmarks/quality/fim_score.py --dataset single --completions single.jsonl \\
        [--summary summary.json] [--out per_problem.jsonl] [--workers K] [--timeout S]

The project's own scorer for docs/results.md's fill-in-the-middle figures, on the data in
benchmarks/quality/fim/data (see the README there). It scores exactly as the workspace's
first runner, ../shared/eval/fim/fim_eval.py (outside the repository), does in its
`--completions` mode, so that the published numbers come out again; it does not generate.

How a problem is scored (`--completions` rows are `{"task_id", "completion"}`, the first row
of a task wins, a missing task is scored as the empty completion and counted in
`missing_completions`):

- single | multi | light (HumanEval infilling): the program `prefix + completion + suffix`,
  then the problem's `test`, `check(entry_point)` and the printing of a random per-run token.
  It passes if it exits 0 and its output ends with that token, so a completion that exits
  early with status 0 (`os._exit(0)`) fails.
- safim-block | safim-control: the program `prefix + completion + suffix` (the record's
  `eval_prompt` with its one `{{completion}}` hole filled) is run once per stdin/stdout test
  and passes if every run exits 0 and prints an accepted output (tokens compared; YES/NO
  in any case; numbers within 1e-6).
- safim-api: no tests; the completion must equal the ground truth as a Python expression
  (same `ast.dump`), or as text without whitespace where either does not parse.

Exact match compares the completion with the reference middle as is (`exact_match`) and
after `str.strip()` (`exact_match_stripped`).

Every run is a separate `python -I -S -B` process (isolated: no site-packages, no user
environment) in a fresh temporary folder, with a minimal environment, rlimits (address space
`--memory-mb`, CPU timeout+1 s, file size `--max-output-mb`, 256 open files, no core dumps),
a wall-clock `--timeout` (5 s HumanEval, 30 s per test for SAFIM) and its own process group,
SIGKILLed as a whole afterwards. Under `--net-isolation auto` (the default) it runs inside an
empty network namespace (`unshare -rn`) where user namespaces allow it. This limits damage;
it is no security boundary: run untrusted models' code in a disposable machine.

Standard library only, so that it runs on the GPU machine without the project installed.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import gzip
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "fim" / "data"

HUMANEVAL, STDIO, MATCH = "humaneval", "stdio", "match"
"""The three ways a problem is scored: unit tests in-process, stdin/stdout tests, AST match."""


@dataclass(frozen=True)
class Dataset:
    file: str
    scoring: str
    timeout_s: float
    """Default wall-clock limit of one run: SAFIM's reference runs under PyPy, and a few of
    its ground-truth programs need ~13 s of CPU under CPython."""


DATASETS = {
    "single": Dataset("HumanEval-SingleLineInfilling.jsonl.gz", HUMANEVAL, 5.0),
    "multi": Dataset("HumanEval-MultiLineInfilling.jsonl.gz", HUMANEVAL, 5.0),
    "light": Dataset("HumanEval-RandomSpanInfillingLight.jsonl.gz", HUMANEVAL, 5.0),
    "safim-block": Dataset("safim_python_block.jsonl.gz", STDIO, 30.0),
    "safim-control": Dataset("safim_python_control.jsonl.gz", STDIO, 30.0),
    "safim-api": Dataset("safim_python_api.jsonl.gz", MATCH, 5.0),
}
SAFIM_HOLE = "{{completion}}"
CASELESS_ANSWERS = {"yes", "no"}
"""Codeforces accepts these in any case."""


@dataclass(frozen=True)
class Problem:
    task_id: str
    prefix: str
    suffix: str
    reference: str
    """The middle the dataset gives: what exact match compares with."""
    test: str = ""
    entry_point: str = ""
    stdio_tests: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """SAFIM: (stdin, accepted stdouts) per test."""


@dataclass(frozen=True)
class Limits:
    """How each program runs: `python` with `flags`, under these limits."""

    timeout_s: float
    memory_mb: int = 2048
    max_output_mb: int = 16
    python: str = sys.executable
    site_packages: bool = False
    netns: tuple[str, ...] = ()
    """Command prefix that runs the interpreter without network (`unshare -rn`), or ()."""


@dataclass
class Outcome:
    """One problem's result; also one line of `--out`."""

    task_id: str
    completion: str
    passed: bool | None
    """None where the problem cannot be scored (a SAFIM record without tests)."""
    status: str
    exact_match: bool
    exact_match_stripped: bool
    finish_reason: str | None = None
    stderr_tail: str = field(default="")


# ------------------------------------------------------------------------------------------
# data


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def load_problems(dataset: str, data: Path = DATA) -> list[Problem]:
    spec = DATASETS[dataset]
    problems = []
    for rec in read_jsonl(data / spec.file):
        if spec.scoring == HUMANEVAL:
            problems.append(
                Problem(
                    task_id=rec["task_id"],
                    prefix=rec["prompt"],
                    suffix=rec["suffix"],
                    reference=rec["canonical_solution"],
                    test=rec["test"],
                    entry_point=rec["entry_point"],
                )
            )
            continue
        if rec.get("lang") != "python":
            continue
        program = rec["eval_prompt"]
        if program.count(SAFIM_HOLE) != 1:
            raise ValueError(f"{rec['task_id']}: expected exactly one {SAFIM_HOLE}")
        prefix, suffix = program.split(SAFIM_HOLE)
        tests = tuple((t["input"], tuple(t["output"])) for t in rec.get("unit_tests") or [])
        problems.append(
            Problem(rec["task_id"], prefix, suffix, rec["ground_truth"], stdio_tests=tests)
        )
    return problems


def load_completions(path: Path) -> dict[str, str]:
    """task_id -> completion; the first row of a task wins, a null completion is ""."""
    completions: dict[str, str] = {}
    for row in read_jsonl(path):
        completions.setdefault(row["task_id"], row.get("completion") or "")
    return completions


# ------------------------------------------------------------------------------------------
# running a program

# Runs first in the child: sets the limits, then replaces itself with the interpreter that
# runs the program (limits survive exec, and the program's interpreter starts clean).
_SET_LIMITS_AND_EXEC = r"""
import os, resource, sys
mem, cpu, fsize = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
program, python, flags = sys.argv[4], sys.argv[5], sys.argv[6].split()
def limit(what, soft, hard=None):
    try:
        resource.setrlimit(what, (soft, soft if hard is None else hard))
    except (ValueError, OSError):
        pass
if mem > 0:
    limit(resource.RLIMIT_AS, mem)
limit(resource.RLIMIT_CPU, cpu, cpu + 1)
limit(resource.RLIMIT_FSIZE, fsize)
limit(resource.RLIMIT_CORE, 0)
limit(resource.RLIMIT_NOFILE, 256)
os.execv(python, [python, *flags, program])
"""


def netns_prefix(mode: str) -> tuple[str, ...]:
    """`unshare -rn` where an empty network namespace can be made ("auto"), always ("on":
    exits otherwise) or never ("off")."""
    if mode == "off":
        return ()
    unshare = shutil.which("unshare")
    if unshare:
        try:
            probe = subprocess.run(
                [unshare, "-rn", "true"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
            )
            if probe.returncode == 0:
                return (unshare, "-rn")
        except (OSError, subprocess.SubprocessError):
            pass
    if mode == "on":
        sys.exit("--net-isolation on: `unshare -rn` is not usable on this machine")
    return ()


def run_program(source: str, limits: Limits, stdin: str = "") -> tuple[str, str, str]:
    """Run `source` once in its own limited process: (status, stdout, stderr's last 2,000
    bytes). Status is "ok" (exit 0), "error" (other exit or a signal) or "timeout"."""
    folder = tempfile.mkdtemp(prefix="fim_score_")
    try:
        tmp = Path(folder)
        program = tmp / "prog.py"
        program.write_text(source, encoding="utf-8")
        (tmp / "stdin").write_text(stdin, encoding="utf-8")
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": folder,
            "TMPDIR": folder,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        max_output = limits.max_output_mb * 1024 * 1024
        flags = "-I -B" if limits.site_packages else "-I -S -B"
        command = [
            *limits.netns,
            limits.python,
            "-I",
            "-S",
            "-c",
            _SET_LIMITS_AND_EXEC,
            str(limits.memory_mb * 1024 * 1024),
            str(max(1, int(limits.timeout_s + 1))),
            str(max_output),
            str(program),
            limits.python,
            flags,
        ]
        with (
            open(tmp / "stdin", "rb") as fin,
            open(tmp / "stdout", "wb") as fout,
            open(tmp / "stderr", "wb") as ferr,
        ):
            proc = subprocess.Popen(
                command,
                cwd=folder,
                env=env,
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                start_new_session=True,
                close_fds=True,
            )
            try:
                status = "ok" if proc.wait(timeout=limits.timeout_s) == 0 else "error"
            except subprocess.TimeoutExpired:
                status = "timeout"
            finally:
                # The whole group: children the program started die with it.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with open(tmp / "stdout", "rb") as f:
            out = f.read(max_output).decode("utf-8", "replace")
        with open(tmp / "stderr", "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 2000))
            err = f.read().decode("utf-8", "replace")
        return status, out, err
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# scoring


def humaneval_program(problem: Problem, completion: str, token: str) -> str:
    """The filled file, its tests, and the token printed only once `check` has returned."""
    return (
        f"{problem.prefix}{completion}{problem.suffix}\n\n{problem.test}\n\n"
        f"check({problem.entry_point})\nprint({token!r}, flush=True)\n"
    )


def score_humaneval(
    problem: Problem, completion: str, limits: Limits
) -> tuple[bool | None, str, str]:
    token = f"__FIM_EVAL_OK_{secrets.token_hex(8)}__"
    status, out, err = run_program(humaneval_program(problem, completion, token), limits)
    passed = status == "ok" and out.rstrip().endswith(token)
    if status == "ok" and not passed:
        status = "no_sentinel"
    return passed, status, err


def outputs_match(got: str, expected: str) -> bool:
    """Codeforces-style: whitespace-separated tokens; YES/NO in any case; numbers equal
    within 1e-6, absolute below 1, relative above."""
    a, b = got.split(), expected.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y or (x.lower() == y.lower() and y.lower() in CASELESS_ANSWERS):
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if abs(fx - fy) > 1e-6 * max(1.0, abs(fy)):
            return False
    return True


def score_stdio(problem: Problem, completion: str, limits: Limits) -> tuple[bool | None, str, str]:
    if not problem.stdio_tests:
        return None, "no_tests", ""
    source = problem.prefix + completion + problem.suffix
    for stdin, accepted in problem.stdio_tests:
        status, out, err = run_program(source, limits, stdin)
        if status != "ok":
            return False, status, err
        if not any(outputs_match(out, expected) for expected in accepted):
            return False, "wrong_answer", ""
    return True, "ok", ""


def normalized_expression(code: str) -> str:
    try:
        return "AST:" + ast.dump(ast.parse(code.strip(), mode="eval"))
    except SyntaxError:
        return "TXT:" + re.sub(r"\s+", "", code)


def score_match(problem: Problem, completion: str, limits: Limits) -> tuple[bool | None, str, str]:
    same = normalized_expression(completion) == normalized_expression(problem.reference)
    return same, "match" if same else "mismatch", ""


SCORERS = {HUMANEVAL: score_humaneval, STDIO: score_stdio, MATCH: score_match}


def score_one(problem: Problem, completion: str, scoring: str, limits: Limits) -> Outcome:
    passed, status, err = SCORERS[scoring](problem, completion, limits)
    return Outcome(
        task_id=problem.task_id,
        completion=completion,
        passed=passed,
        status=status,
        exact_match=completion == problem.reference,
        exact_match_stripped=completion.strip() == problem.reference.strip(),
        stderr_tail=err[-500:] if err and not passed else "",
    )


def score_all(
    problems: Sequence[Problem],
    completions: dict[str, str],
    scoring: str,
    limits: Limits,
    workers: int = 1,
) -> list[Outcome]:
    """Outcomes in the problems' order; a missing completion is scored as ""."""
    workers = 1 if scoring == MATCH else max(1, workers)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(
            pool.map(
                lambda p: score_one(p, completions.get(p.task_id, ""), scoring, limits), problems
            )
        )


def summarize(outcomes: Sequence[Outcome], missing: int) -> dict[str, Any]:
    """pass@1 over the scorable problems; exact match over all of them."""
    n = len(outcomes)
    scored = [o for o in outcomes if o.passed is not None]
    return {
        "n": n,
        "n_scored": len(scored),
        "missing_completions": missing,
        "pass@1": sum(bool(o.passed) for o in scored) / len(scored) if scored else None,
        "exact_match": sum(o.exact_match for o in outcomes) / n if n else None,
        "exact_match_stripped": sum(o.exact_match_stripped for o in outcomes) / n if n else None,
        "status_counts": dict(Counter(o.status for o in outcomes)),
    }


# ------------------------------------------------------------------------------------------
# command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    parser.add_argument(
        "--completions", type=Path, required=True, help="JSONL: task_id, completion"
    )
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, help="only the first N problems")
    parser.add_argument("--out", type=Path, help="per-problem results (JSONL)")
    parser.add_argument("--summary", type=Path, help="also write the summary JSON here")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--timeout", type=float, help="seconds a run (5 HumanEval, 30 SAFIM)")
    parser.add_argument("--memory-mb", type=int, default=2048, help="address space (0: no limit)")
    parser.add_argument("--max-output-mb", type=int, default=16)
    parser.add_argument("--python", default=sys.executable, help="interpreter of the programs")
    parser.add_argument("--allow-site-packages", action="store_true")
    parser.add_argument("--net-isolation", choices=["auto", "on", "off"], default="auto")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    spec = DATASETS[args.dataset]
    limits = Limits(
        timeout_s=args.timeout if args.timeout is not None else spec.timeout_s,
        memory_mb=args.memory_mb,
        max_output_mb=args.max_output_mb,
        python=args.python,
        site_packages=args.allow_site_packages,
        netns=netns_prefix(args.net_isolation),
    )
    problems = load_problems(args.dataset, args.data_dir)[: args.limit or None]
    completions = load_completions(args.completions)
    missing = sum(p.task_id not in completions for p in problems)
    if not args.quiet:
        print(
            f"dataset={args.dataset} problems={len(problems)} scorer={spec.scoring} "
            f"net_isolation={'on' if limits.netns else 'off'} missing={missing}",
            file=sys.stderr,
        )
    started = time.monotonic()
    outcomes = score_all(problems, completions, spec.scoring, limits, args.workers)
    summary = {
        "dataset": args.dataset,
        "scorer": spec.scoring,
        "source": str(args.completions),
        **summarize(outcomes, missing),
        "timeout_s": limits.timeout_s,
        "scoring_s": round(time.monotonic() - started, 1),
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(vars(o), ensure_ascii=False) + "\n" for o in outcomes)
    if args.summary:
        args.summary.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
