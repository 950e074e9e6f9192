"""HumanEval infilling through `headstart serve`, scored by benchmarks/quality/fim_score.py.

Each problem is a file the user is writing: the text before the hole, an empty line where
the missing code goes, and the text after it. The file is opened in a running server
(didOpen, a path outside the workspace folder, so no other problem is ever in its
context), an inline completion is asked for at column 0 of the empty line, and the
suggestion is what an editor would insert. The filled program is `prefix + suggestion +
"\\n" + suffix`, so the completion handed to fim_score.py is the suggestion plus a newline.

    python benchmarks/quality/fim_server_eval.py --dataset single \\
        --endpoint http://127.0.0.1:8000/v1 --out single.jsonl [--limit N] [--concurrency 16]
    python benchmarks/quality/fim_score.py --dataset single --completions single.jsonl

`--raw FILE` asks the backend directly instead, with the prompt the server would build
(server.completion.request.plan_request) and no stop rules of ours (only the template's stop
strings, up to --max-tokens), laid out at the cursor and unhealed (`promptLayout` auto
heals only a request the server sends, where a vLLM has the model's tokenizer here; set
promptLayout cursor to compare a server run with it): the model's raw output, kept to
replay the server's filters offline (`--replay FILE`) while working on them; `--ceiling`
replays a perfect model's output instead. SAFIM's block and control sets (`--dataset
safim-block`) run the same way, the cursor where the program's `{{completion}}` is.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import lzma
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.bench.editor_session import EditorSession  # noqa: E402
from server.completion.prompt import choose_template  # noqa: E402
from server.completion.request import CursorContext, Prompting, finish_text, plan_request  # noqa: E402
from server.completion.stops import CursorShape, apply_stops  # noqa: E402
from server.completion.token_count import load_token_counter  # noqa: E402
from server.config import load_settings  # noqa: E402
from server.metrics import percentile  # noqa: E402

DATA = ROOT / "benchmarks" / "quality" / "fim" / "data"  # the sets and their licences
FILES = {
    "single": "HumanEval-SingleLineInfilling.jsonl.gz",
    "multi": "HumanEval-MultiLineInfilling.jsonl.gz",
    "light": "HumanEval-RandomSpanInfillingLight.jsonl.gz",
    "safim-block": "safim_python_block.jsonl.gz",
    "safim-control": "safim_python_control.jsonl.gz",
}
HOLE = "{{completion}}"
"""Where a SAFIM program's missing code goes: the cursor, after the line's indentation."""


def load_problems(data: Path, dataset: str, limit: int | None, stride: int) -> list[dict[str, Any]]:
    with gzip.open(data / FILES[dataset], "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [_as_infilling(row) for row in rows[::stride][:limit]]


def _as_infilling(row: dict[str, Any]) -> dict[str, Any]:
    """A SAFIM record as HumanEval infilling has it: the text before and after the hole."""
    if "eval_prompt" not in row:
        return row
    before, after = row["eval_prompt"].split(HOLE, 1)
    return {
        "task_id": row["task_id"],
        "prompt": before,
        "suffix": after,
        "canonical_solution": row["ground_truth"],
    }


def document_for(problem: dict[str, Any]) -> tuple[str, int, int]:
    """The file as the user has it (an empty line at the hole) and the cursor there."""
    prefix: str = problem["prompt"]
    if not prefix.endswith("\n"):  # random-span holes start mid-line: the cursor is there
        line = prefix.count("\n")
        return prefix + problem["suffix"], line, len(prefix) - prefix.rfind("\n") - 1
    return prefix + "\n" + problem["suffix"], prefix.count("\n"), 0


def completion_for(problem: dict[str, Any], suggestion: str) -> str:
    """What fills the hole: the suggestion, and the empty line's own newline."""
    return suggestion + "\n" if problem["prompt"].endswith("\n") else suggestion


def eval_settings(endpoint: str, model: str | None) -> dict[str, Any]:
    return {
        "backend": {
            "url": endpoint,
            **({"model": model} if model else {}),
            "connectTimeoutMs": 10_000,
            "firstChunkTimeoutMs": 120_000,
            "chunkGapMs": 60_000,
            "totalTimeoutMs": 300_000,
        },
        "completion": {"temperature": 0.0, "reuseTypedSuggestions": False},
    }


async def through_server(args: argparse.Namespace, problems: list[dict[str, Any]]) -> int:
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="headstart-fim-") as tmp:
        workspace, loose = Path(tmp) / "workspace", Path(tmp) / "files"
        workspace.mkdir()
        loose.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADSTART_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["HEADSTART_CACHE_DIR"] = str(Path(tmp) / "cache")
        if args.server_log:
            env["HEADSTART_LOG_FILE"] = str(args.server_log)
        settings = eval_settings(args.endpoint, args.model)
        settings["completion"].update(json.loads(args.settings or "{}"))
        gate = asyncio.Semaphore(args.concurrency)
        async with EditorSession(workspace, settings, server_env=env) as editor:
            await editor.wait_until_indexed(60)

            async def one(n: int, problem: dict[str, Any]) -> dict[str, Any]:
                async with gate:
                    text, line, column = document_for(problem)
                    name = problem["task_id"].replace("/", "_") + ".py"
                    document = editor.open(loose / name, text)
                    try:
                        suggestion, ms = await editor.inline_completion(document, line, column)
                    finally:
                        editor.close(document)
                    latencies.append(ms)
                    if n % 200 == 0:
                        print(f"{n}/{len(problems)}", file=sys.stderr)
                    return {
                        "task_id": problem["task_id"],
                        "completion": completion_for(problem, suggestion),
                        "latency_ms": round(ms, 1),
                    }

            rows = await asyncio.gather(*(one(n, p) for n, p in enumerate(problems, 1)))
    write_rows(args.out, rows)
    print(
        f"{len(rows)} suggestions through the server: latency p50 "
        f"{percentile(latencies, 50):.0f} ms, p99 {percentile(latencies, 99):.0f} ms "
        f"(at {args.concurrency} documents in flight)",
        file=sys.stderr,
    )
    return 0


def plan_for(problem: dict[str, Any], prompting: Prompting, settings: Any) -> Any:
    text, _, _ = document_for(problem)
    offset = len(problem["prompt"])
    ctx = CursorContext(text, offset, "solution.py", "workspace", "python")
    return plan_request(ctx, settings.completion, prompting)


async def raw_outputs(args: argparse.Namespace, problems: list[dict[str, Any]]) -> int:
    async with httpx.AsyncClient(base_url=args.endpoint, timeout=300) as client:
        models = (await client.get("/models")).json()["data"]
        model = args.model or models[0]["id"]
        counter = load_token_counter(None, models[0].get("root") or model)
        prompting = Prompting(choose_template("auto", model, counter), counter)
        settings = load_settings(eval_settings(args.endpoint, model), environ={})
        gate = asyncio.Semaphore(args.concurrency)

        async def one(problem: dict[str, Any]) -> dict[str, Any]:
            request, _ = plan_for(problem, prompting, settings)
            body = {
                "model": model,
                "prompt": request.prompt,
                "max_tokens": args.max_tokens,
                "temperature": 0.0,
                "stop": list(request.stop),
            }
            if request.stop_token_ids:  # as the server sends them (server/backend/client.py)
                body["stop_token_ids"] = list(request.stop_token_ids)
            async with gate:
                reply = (await client.post("/completions", json=body)).json()
            return {"task_id": problem["task_id"], "raw": reply["choices"][0]["text"]}

        started = time.monotonic()
        rows = await asyncio.gather(*(one(p) for p in problems))
    write_rows(args.raw, rows)
    print(f"{len(rows)} raw outputs in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


def replay(args: argparse.Namespace, problems: list[dict[str, Any]]) -> int:
    """The server's filters on recorded raw outputs (offline, for working on the filters).

    With --ceiling, on what a perfect model that runs on past the hole would send: the
    reference middle, then the text after the hole. What the filters keep of it bounds
    what any model can score through them."""
    if args.ceiling:
        raw = {p["task_id"]: p["canonical_solution"] + p["suffix"] for p in problems}
    else:
        opener = lzma.open if args.replay.suffix == ".xz" else open  # docs/results/fim_raw/gpu
        with opener(args.replay, "rt") as lines:
            raw = {r["task_id"]: r["raw"] for r in map(json.loads, lines)}
    counter = load_token_counter(args.tokenizer, "")
    prompting = Prompting(choose_template("qwen", None, counter), counter)
    settings = load_settings(eval_settings("http://127.0.0.1:1/v1", None), environ={})
    rows, read, whole = [], [], 0
    for problem in problems:
        if problem["task_id"] not in raw:
            continue
        _, shape = plan_for(problem, prompting, settings)
        text, _, _ = document_for(problem)
        output = until_stop_token(raw[problem["task_id"]], prompting.template.stop_tokens)
        suggestion = finish_text(output, shape, text, len(problem["prompt"]), "python")
        rows.append(
            {"task_id": problem["task_id"], "completion": completion_for(problem, suggestion)}
        )
        read.append(counter.count(output[: stream_read(output, shape)]))
        whole += _lines(suggestion) == _lines(problem["canonical_solution"])
    write_rows(args.out, rows)
    print(
        f"{len(rows)} answers; the whole reference middle kept in {whole} "
        f"({100 * whole / max(1, len(rows)):.1f}%); tokens of each stream read before its "
        f"stop: mean {sum(read) / max(1, len(read)):.1f}, p50 {percentile(read, 50):.0f}, "
        f"p90 {percentile(read, 90):.0f}"
        if read
        else "no answers",
        file=sys.stderr,
    )
    return 0


def until_stop_token(output: str, stop_tokens: tuple[str, ...]) -> str:
    """`output` up to the first of the template's stop tokens, where the server's request
    (`stop_token_ids`) would have ended it: outputs recorded without them run on past the
    model's end of the middle (`<|repo_name|>` and another file)."""
    ends = [index for token in stop_tokens if (index := output.find(token)) >= 0]
    return output[: min(ends)] if ends else output


def stream_read(output: str, shape: CursorShape) -> int:
    """How much of a streamed `output` the server reads before its stop rules end it
    (they run at every line end; all of it when they never do)."""
    end = output.find("\n")
    while end >= 0:
        if apply_stops(output[: end + 1], shape, final=False)[1]:
            return end + 1
        end = output.find("\n", end + 1)
    return len(output)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=sorted(FILES), default="single")
    parser.add_argument("--data", type=Path, default=DATA, help="the sets' folder")
    parser.add_argument("--endpoint", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="default: the first of GET /models")
    parser.add_argument("--out", type=Path, help="completions for fim_score.py --completions")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--stride", type=int, default=1, help="every Nth problem only")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--settings", help="completion settings as JSON, for a variant")
    parser.add_argument("--server-log", type=Path)
    parser.add_argument("--raw", type=Path, help="record raw model output here instead")
    parser.add_argument("--max-tokens", type=int, default=256, help="for --raw")
    parser.add_argument("--replay", type=Path, help="apply the filters to --raw's output")
    parser.add_argument("--tokenizer", help="for --replay: the model's tokenizer folder")
    parser.add_argument(
        "--ceiling", action="store_true", help="replay a perfect model's output (no --replay)"
    )
    args = parser.parse_args(argv)
    args.endpoint = args.endpoint.rstrip("/")
    problems = load_problems(args.data, args.dataset, args.limit, args.stride)
    if args.raw:
        return asyncio.run(raw_outputs(args, problems))
    if args.out is None:
        parser.error("--out is required")
    if args.replay or args.ceiling:
        return replay(args, problems)
    return asyncio.run(through_server(args, problems))


if __name__ == "__main__":
    sys.exit(main())
