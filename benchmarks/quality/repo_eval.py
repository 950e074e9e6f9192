"""Headstart's own suggestions on the repository-level benchmark (benchmarks/quality).

Every task is answered through `headstart serve` exactly as an editor gets it: one server
per repository, spawned over stdio with the repository as its workspace folder; after its
start-up indexing has finished, each task's file is opened (didOpen) with the text
`prefix + suffix` (the rest of the cursor line deleted), an inline completion is asked for
at the cursor, the first line of the first suggestion is kept, and the file is closed.

The output is the format of benchmarks/quality/run_baselines.py, with strategy "headstart",
so that benchmarks/quality/score.py scores Headstart next to the in-file, BM25 and oracle
prompts:

    python benchmarks/quality/repo_eval.py --tasks DEV/tasks.jsonl \\
        --endpoint http://127.0.0.1:8000/v1 --out results.jsonl [--limit N] [--model NAME]
    python benchmarks/quality/score.py results.jsonl --paired

Fairness: the server works on a copy of each repository, named after the package (as the
baselines' <|repo_name|> is), in which every task's line is cut at its cursor, so no
answer is on disk for the index to find. Requests are not cut by the typing timeouts:
the eval raises them (--timeout) and asks for greedy decoding, like the baselines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.bench.editor_session import EditorSession  # noqa: E402
from server.metrics import percentile  # noqa: E402

STRATEGY = "headstart"


def completion_overrides(pairs: list[str]) -> dict[str, Any]:
    """`--set contextTokens=4096` pairs as completion settings (values read as JSON when
    they parse, else as strings), to compare configurations under their own strategy names."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        try:
            overrides[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[key.strip()] = raw
    return overrides


def eval_settings(endpoint: str, model: str, timeout_s: float) -> dict[str, Any]:
    """initializationOptions for the eval: the typing timeouts raised, greedy decoding."""
    wait_ms = int(min(timeout_s * 1000, 300_000))
    return {
        "backend": {
            "url": endpoint,
            "model": model,
            "connectTimeoutMs": min(wait_ms, 30_000),
            "firstChunkTimeoutMs": wait_ms,
            "chunkGapMs": wait_ms,
            "totalTimeoutMs": int(min(2 * timeout_s * 1000, 600_000)),
        },
        "completion": {"temperature": 0.0},
    }


def server_env(endpoint: str, cache_dir: Path, log_file: Path | None) -> dict[str, str]:
    """This environment without the machine's HEADSTART_* settings, plus the eval's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADSTART_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["HEADSTART_BACKEND_URL"] = endpoint
    env["HEADSTART_CACHE_DIR"] = str(cache_dir)
    if log_file is not None:
        env["HEADSTART_LOG_FILE"] = str(log_file)
    return env


def default_model(endpoint: str, timeout_s: float) -> str:
    """The first model the backend lists, as run_baselines.py picks it."""
    with urllib.request.urlopen(f"{endpoint}/models", timeout=timeout_s) as resp:
        return str(json.load(resp)["data"][0]["id"])


def prepare_workspace(source: Path, dest: Path, tasks: Iterable[dict[str, Any]]) -> list[str]:
    """Copy a repository to `dest`, every task's line cut at its cursor; return warnings."""
    shutil.copytree(source, dest, symlinks=True)
    cuts: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        cuts.setdefault(task["file"], []).append(task)
    warnings = []
    for rel, file_tasks in cuts.items():
        path = dest / rel
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        for task in file_tasks:
            if task["prefix"] + task["groundtruth"] + task["suffix"] != text:
                warnings.append(f"{task['task_id']}: the file on disk is not the task's file")
            row, column = task["cursor"]["line"], task["cursor"]["character"]
            lines[row] = lines[row][:column]
        path.write_text("\n".join(lines), encoding="utf-8")
    return warnings


@dataclass
class RepoRun:
    """What one repository's server did, for the summary."""

    repo_dir: str
    index_s: float = 0.0
    indexed: bool = False
    latencies_s: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def run_repo(
    repo_dir: str,
    todo: list[dict[str, Any]],
    all_tasks: list[dict[str, Any]],
    args: argparse.Namespace,
    model: str,
    work: Path,
    out: TextIO,
) -> RepoRun:
    run = RepoRun(repo_dir)
    package = todo[0]["package"]
    workspace = work / repo_dir.replace("/", "_") / package
    workspace.parent.mkdir(parents=True)
    own = [t for t in all_tasks if t["repo_dir"] == repo_dir]
    run.warnings += prepare_workspace(args.root / repo_dir, workspace, own)
    log_file = args.server_log_dir / f"{package}.log" if args.server_log_dir else None
    env = server_env(args.endpoint, work / "cache", log_file)
    settings = eval_settings(args.endpoint, model, args.timeout)
    settings["completion"].update(completion_overrides(args.set))
    started = time.monotonic()
    async with EditorSession(workspace, settings, server_env=env) as editor:
        run.indexed = await editor.wait_until_indexed(args.index_timeout)
        run.index_s = time.monotonic() - started
        if not run.indexed:
            run.warnings.append(f"indexing did not end within {args.index_timeout:.0f} s")
        print(
            f"{package}: server ready, indexed in {run.index_s:.1f} s"
            + ("" if run.indexed else " (timed out; going on)"),
            file=sys.stderr,
        )
        for n, task in enumerate(todo, 1):
            seen = len(editor.warnings)
            document = editor.open(workspace / task["file"], task["prefix"] + task["suffix"])
            line, character = task["cursor"]["line"], task["cursor"]["character"]
            try:
                text, latency_ms = await asyncio.wait_for(
                    editor.inline_completion(document, line, character), args.timeout + 30
                )
            except TimeoutError:
                text, latency_ms = "", (args.timeout + 30) * 1000
                editor.warnings.append("no reply to inlineCompletion within the timeout")
            editor.close(document)
            run.latencies_s.append(latency_ms / 1000)
            record = {
                "task_id": task["task_id"],
                "package": task["package"],
                "strategy": args.strategy,
                "model": model,
                "prediction": text.split("\n")[0],
                "groundtruth": task["groundtruth"],
                "prompt_chars": None,  # the server builds the prompt; the client cannot see it
                "latency_s": round(latency_ms / 1000, 3),
            }
            if len(editor.warnings) > seen:
                record["server_warnings"] = editor.warnings[seen:]
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"[{package} {n}/{len(todo)}] {task['task_id']}", file=sys.stderr)
    return run


def group_by_repo(tasks: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Tasks per repo_dir, repositories in order of first appearance."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        groups.setdefault(task["repo_dir"], []).append(task)
    return groups


async def run(args: argparse.Namespace) -> int:
    all_tasks = [json.loads(line) for line in args.tasks.open() if line.strip()]
    tasks = all_tasks[: args.limit]
    done: set[tuple[str, str]] = set()
    if args.out.exists():
        done = {(r["task_id"], r["strategy"]) for r in map(json.loads, args.out.open())}
    todo = [t for t in tasks if (t["task_id"], args.strategy) not in done]
    print(f"{args.strategy}: {len(tasks) - len(todo)} done, {len(todo)} to run", file=sys.stderr)
    if not todo:
        return 0
    model = args.model or default_model(args.endpoint, 30)
    if args.server_log_dir:
        args.server_log_dir.mkdir(parents=True, exist_ok=True)
    runs: list[RepoRun] = []
    with (
        tempfile.TemporaryDirectory(prefix="headstart-repo-eval-") as tmp,
        args.out.open("a") as out,
    ):
        for repo_dir, repo_todo in group_by_repo(todo).items():
            runs.append(await run_repo(repo_dir, repo_todo, all_tasks, args, model, Path(tmp), out))
    summarize(runs)
    return 0


def summarize(runs: list[RepoRun]) -> None:
    latencies = [s for r in runs for s in r.latencies_s]
    print(f"\nheadstart through the server: {len(latencies)} tasks", file=sys.stderr)
    for r in runs:
        print(
            f"  {r.repo_dir:<32} index {r.index_s:6.1f} s{'' if r.indexed else ' (timed out)'}"
            f"  latency p50 {statistics.median(r.latencies_s) * 1000:7.1f} ms",
            file=sys.stderr,
        )
        for warning in r.warnings:
            print(f"    warning: {warning}", file=sys.stderr)
    if latencies:
        ms = [s * 1000 for s in latencies]
        print(
            f"  all: latency p50 {statistics.median(ms):.1f} ms, p90 {percentile(ms, 90):.1f} ms,"
            f" p99 {percentile(ms, 99):.1f} ms",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", required=True, type=Path, help="make_tasks.py's tasks.jsonl")
    parser.add_argument("--endpoint", required=True, help="base URL ending in /v1")
    parser.add_argument("--out", required=True, type=Path, help="results file (appended)")
    parser.add_argument("--limit", type=int, help="only the first N tasks of the file")
    parser.add_argument("--model", help="model name (default: first of GET /models)")
    parser.add_argument(
        "--root", type=Path, help="dir that repo_dir is relative to (default: the tasks' dir)"
    )
    parser.add_argument("--strategy", default=STRATEGY, help="name in the results")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds one completion may take"
    )
    parser.add_argument(
        "--index-timeout", type=float, default=600, help="seconds to wait for indexing"
    )
    parser.add_argument("--server-log-dir", type=Path, help="one server log per package here")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a completion setting for this run, e.g. contextTokens=4096 (repeatable)",
    )
    args = parser.parse_args(argv)
    args.endpoint = args.endpoint.rstrip("/")
    args.root = args.root or args.tasks.parent
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
