"""An offline proxy for the repository-level benchmark: does the context hold the answer?

    python benchmarks/quality/context_recall.py --tasks DEV/tasks.jsonl [--limit N] \\
        [--set similarCodeShare=0 ...]

No model: for every task (benchmarks/quality/make_tasks.py's tasks.jsonl) the
context is built as the server builds it (the repository copied with every task's line
cut at its cursor, as benchmarks/quality/repo_eval.py does; `prepare`, then `build` at the cursor,
the completion settings' budget counted at chars/4) and checked for the expected line:

- sym: the cross-file name at the cursor appears in the snippets (other files' code);
- ids: every identifier of the expected rest of line appears in the context (snippets,
  prefix and suffix), so the model could copy each of them;
- line: the expected rest of line appears whole in the snippets (a call site to copy).

The eval's BM25 prompt (its 5 chunks, 1,000 tokens) is scored the same way, for scale.
`--set` takes completion settings as quality/repo_eval.py does, e.g. similarCodeShare=0.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "quality"))

from repo_eval import completion_overrides, group_by_repo, prepare_workspace  # noqa: E402

from cache.index import ProjectIndex  # noqa: E402
from server.completion.context import Budget, Context, ContextBuilder  # noqa: E402
from server.completion.prompt import choose_template  # noqa: E402
from server.completion.request import settings_budget  # noqa: E402
from server.completion.trees import DocumentTrees  # noqa: E402
from server.config import CompletionSettings  # noqa: E402

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = frozenset(keyword.kwlist)


def identifiers(text: str) -> set[str]:
    return {w for w in _WORD.findall(text) if w not in _KEYWORDS}


def checks(task: dict[str, Any], snippets: str, window: str) -> dict[str, bool]:
    expected = task["groundtruth"].strip()
    symbol = task["cross_file_symbols"][0]["name"]
    words = identifiers(expected)
    return {
        "sym": re.search(rf"\b{re.escape(symbol)}\b", snippets) is not None,
        "ids": all(re.search(rf"\b{re.escape(w)}\b", snippets + window) for w in words),
        "line": expected in snippets,
    }


def budget_of(settings: CompletionSettings) -> Budget:
    """The server's budget for these settings (`server.completion.request.budget_for`), less the
    template's few fixed tokens."""
    return settings_budget(settings, reserved=16)


def bm25_snippets(task: dict[str, Any], root: Path, cache: dict[str, Any]) -> str:
    """The BM25 baseline's chunks for the task (none without --eval-dir's baselines.py)."""
    try:
        from baselines import RepoIndex  # type: ignore[import-not-found]
    except ImportError:
        return ""
    repo = task["repo_dir"]
    if repo not in cache:
        cache[repo] = RepoIndex(root / repo)
    return "\n".join(text for _, text in cache[repo].retrieve(task))


def write_prompt(folder: Path, task: dict[str, Any], context: Context) -> None:
    """The prompt the server would send for the task, with the expected line at the end."""
    text = choose_template("qwen", None).render(
        repo_name=task["package"],
        snippets=context.files(),
        file_path=task["file"],
        prefix=context.prefix,
        suffix=context.suffix,
    )
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", task["task_id"]) + ".txt"
    (folder / name).write_text(f"{text}\n\n### expected: {task['groundtruth']}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=ROOT / "benchmarks" / "quality",
        help="where baselines.py is",
    )
    parser.add_argument("--per-task", type=Path, help="write each task's checks here (jsonl)")
    parser.add_argument(
        "--prompts", type=Path, help="write each task's prompt here (Qwen template), to read"
    )
    args = parser.parse_args()
    tasks = [json.loads(line) for line in args.tasks.open() if line.strip()][: args.limit]
    settings = CompletionSettings.model_validate(completion_overrides(args.set))
    budget = budget_of(settings)
    sys.path.insert(0, str(args.eval_dir))
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_package: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    bm25_cache: dict[str, Any] = {}
    rows = []
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="headstart-recall-") as tmp:
        for repo_dir, repo_tasks in group_by_repo(tasks).items():
            workspace = Path(tmp) / repo_dir.replace("/", "_") / repo_tasks[0]["package"]
            workspace.parent.mkdir(parents=True)
            prepare_workspace(args.tasks.parent / repo_dir, workspace, repo_tasks)
            index = ProjectIndex(workspace, cache_dir=Path(tmp) / "cache")
            index.build()
            builder = ContextBuilder(index)
            trees = DocumentTrees()
            for task in repo_tasks:
                text = task["prefix"] + task["suffix"]
                builder.prepare(task["file"])  # as the server does when a document opens,
                trees.tree(task["file"], text, "python")  # and parses it
                started = time.perf_counter()
                context: Context = builder.build(
                    task["file"],
                    text,
                    len(task["prefix"]),
                    "python",
                    budget,
                    tree=trees.current(task["file"], text, "python"),
                )
                times.append((time.perf_counter() - started) * 1000)
                builder.forget(task["file"])
                trees.forget(task["file"])
                if args.prompts:
                    write_prompt(args.prompts, task, context)
                snippets = "\n".join(s.text for s in context.snippets)
                row = {"task_id": task["task_id"], "package": task["package"]}
                for name, found in checks(task, snippets, context.prefix + context.suffix).items():
                    row[name] = found
                bm25 = bm25_snippets(task, args.tasks.parent, bm25_cache)
                for name, found in checks(task, bm25, task["prefix"][-6000:]).items():
                    row["bm25_" + name] = found
                row["similar_chunks"] = sum(s.similar for s in context.snippets)
                rows.append(row)
                for key, value in row.items():
                    if isinstance(value, bool):
                        totals["all"][key] += value
                        by_package[task["package"]][key] += value
                by_package[task["package"]]["n"] += 1
            index.close()
    n = len(rows)
    print(
        f"{n} tasks; budget {budget.total} tokens, similar share {budget.similar_share:g}; "
        f"build p50 {sorted(times)[n // 2]:.1f} ms"
    )
    keys = ["sym", "ids", "line", "bm25_sym", "bm25_ids", "bm25_line"]
    print(f"{'package':14}" + "".join(f"{k:>10}" for k in keys))
    for package, counts in sorted(by_package.items()):
        m = counts["n"]
        print(f"{package:14}" + "".join(f"{100 * counts[k] / m:10.1f}" for k in keys))
    print(f"{'all':14}" + "".join(f"{100 * totals['all'][k] / n:10.1f}" for k in keys))
    print(f"similar chunks per context: {sum(r['similar_chunks'] for r in rows) / n:.1f}")
    if args.per_task:
        with args.per_task.open("w") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
