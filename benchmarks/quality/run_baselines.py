#!/usr/bin/env python3
"""Answer benchmark tasks with one reference strategy through an OpenAI-compatible server.

    python benchmarks/quality/run_baselines.py --tasks .gpu/eval/dev/tasks.jsonl \\
        --endpoint http://127.0.0.1:8000/v1 --strategy bm25 --out results.jsonl \\
        [--limit 60] [--model NAME]

Each task's prompt (baselines.py) is posted to ENDPOINT/completions with temperature 0,
48 tokens at most and "\\n" as stop; the first line of the answer is appended to --out as
one JSON record (the format score.py reads, which benchmarks/quality/repo_eval.py writes too).
Tasks already in --out for the same strategy are skipped, so a cut run is restarted by
running it again; several strategies may share one file. The server must read the `<|...|>`
markers as special tokens (vLLM and llama.cpp's server do for Qwen2.5-Coder).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import STRATEGIES, PromptBuilder


def post_json(url: str, payload: dict[str, Any], timeout: float) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def default_model(endpoint: str, timeout: float) -> str:
    """The first model the server lists."""
    with urllib.request.urlopen(f"{endpoint}/models", timeout=timeout) as response:
        return str(json.load(response)["data"][0]["id"])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", required=True, type=Path)
    parser.add_argument("--endpoint", required=True, help="base URL ending in /v1")
    parser.add_argument("--strategy", required=True, choices=STRATEGIES)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--limit", type=int, help="only the first N tasks of the file")
    parser.add_argument("--model", help="model name (default: the first of GET /models)")
    parser.add_argument(
        "--root", type=Path, help="folder repo_dir is relative to (default: the tasks' folder)"
    )
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)

    endpoint = args.endpoint.rstrip("/")
    with args.tasks.open() as lines:
        tasks = [json.loads(line) for line in lines][: args.limit]
    done: set[tuple[str, str]] = set()
    if args.out.exists():
        with args.out.open() as lines:
            done = {(r["task_id"], r["strategy"]) for r in map(json.loads, lines)}
    todo = [task for task in tasks if (task["task_id"], args.strategy) not in done]
    print(f"{args.strategy}: {len(tasks) - len(todo)} done, {len(todo)} to run", file=sys.stderr)
    if not todo:
        return
    model = args.model or default_model(endpoint, args.timeout)
    builder = PromptBuilder(args.root or args.tasks.parent)

    with args.out.open("a") as out:
        for n, task in enumerate(todo, 1):
            prompt = builder.build(task, args.strategy)
            started = time.monotonic()
            answer = post_json(
                f"{endpoint}/completions",
                {
                    "model": model,
                    "prompt": prompt,
                    "temperature": 0,
                    "max_tokens": args.max_tokens,
                    "stop": ["\n"],
                    "stream": False,
                },
                args.timeout,
            )
            result = {
                "task_id": task["task_id"],
                "package": task["package"],
                "strategy": args.strategy,
                "model": model,
                "prediction": answer["choices"][0]["text"].split("\n")[0],
                "groundtruth": task["groundtruth"],
                "prompt_chars": len(prompt),
                "latency_s": round(time.monotonic() - started, 3),
            }
            out.write(json.dumps(result) + "\n")
            out.flush()
            print(f"[{n}/{len(todo)}] {task['task_id']}", file=sys.stderr)


if __name__ == "__main__":
    main()
