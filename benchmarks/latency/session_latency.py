"""Keystroke latency through `headstart serve`, next to the backend's own latency.

Replays typing on the sample project: for many real lines, the line is cut a few
characters in and retyped key by key; after every key an inline completion is asked for
over LSP (round trip = request sent to reply received, as the editor sees it). For the
very same prompt the backend is also asked directly, over a plain HTTP stream: its time
to first token (TTFT) and the time until the same stop rules end the suggestion. The
order alternates per keystroke so that neither side always gets the warmer prefix cache.

    python benchmarks/latency/session_latency.py --backend-url http://127.0.0.1:8000/v1 --out r.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.bench.editor_session import EditorSession  # noqa: E402
from server.completion.request import CursorContext, plan_request  # noqa: E402
from server.completion.stops import apply_stops  # noqa: E402
from server.config import CompletionSettings  # noqa: E402
from server.metrics import percentile  # noqa: E402

SAMPLE = ROOT / "examples" / "sample_project"


def keystroke_plan(keys_per_line: int) -> list[tuple[Path, int, int]]:
    """(file, line, column where typing starts) for every line worth retyping."""
    plan = []
    for path in sorted(SAMPLE.rglob("*.py")):
        for row, line in enumerate(path.read_text().split("\n")):
            start = len(line) - len(line.lstrip()) + 4
            if len(line.strip()) >= 12 and start + keys_per_line <= len(line):
                plan.append((path, row, start))
    return plan


async def raw_stream(
    client: httpx.AsyncClient, model: str, text: str, offset: int, file_path: str
) -> dict[str, Any]:
    """Ask the backend directly for the prompt the server builds; time it."""
    request, shape = plan_request(
        CursorContext(text, offset, file_path, SAMPLE.name), CompletionSettings()
    )
    body = {
        "model": model,
        "prompt": request.prompt,
        "stream": True,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "stop": list(request.stop),
        "stop_token_ids": list(request.stop_token_ids),
    }
    started = time.perf_counter()
    first = None
    received = ""
    kept = ""
    async with client.stream("POST", "/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])["choices"][0].get("text") or ""
            if first is None:
                first = time.perf_counter()
            received += chunk
            kept, done = apply_stops(received, shape, final=False)
            if done:
                break
        else:
            kept = apply_stops(received, shape, final=True)[0]
    ended = time.perf_counter()
    return {
        "ttft_ms": ((first or ended) - started) * 1000,
        "suggestion_ms": (ended - started) * 1000,
        "text": kept,
        "prompt_chars": len(request.prompt),
    }


def summary(name: str, values: list[float]) -> str:
    return (
        f"{name:<44} p50 {statistics.median(values):7.1f} ms   p99 {percentile(values, 99):7.1f} ms"
    )


async def run(url: str, keys_per_line: int, max_keys: int) -> dict[str, Any]:
    plan = keystroke_plan(keys_per_line)
    records: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=url, timeout=30, trust_env=False) as raw:
        model = (await raw.get("/models")).json()["data"][0]["id"]
        # every keystroke must reach the model to compare with the raw stream, so the
        # suggestion cache is off (benchmarks/latency/typing_cache_bench.py measures it)
        settings = {"backend": {"url": url}, "completion": {"reuseTypedSuggestions": False}}
        async with EditorSession(SAMPLE, settings) as editor:
            for path, row, start in plan:
                if len(records) >= max_keys:
                    break
                lines = path.read_text().split("\n")
                target = lines[row]
                lines[row] = target[:start]
                document = editor.open(path, "\n".join(lines))
                for column in range(start, start + keys_per_line):
                    editor.type(document, row, column, target[column])
                    text = "\n".join(document.lines)
                    offset = sum(len(line) + 1 for line in document.lines[:row]) + column + 1
                    relative = path.relative_to(SAMPLE).as_posix()
                    if len(records) % 2 == 0:
                        direct = await raw_stream(raw, model, text, offset, relative)
                        lsp_text, lsp_ms = await editor.inline_completion(document, row, column + 1)
                    else:
                        lsp_text, lsp_ms = await editor.inline_completion(document, row, column + 1)
                        direct = await raw_stream(raw, model, text, offset, relative)
                    records.append(
                        {
                            **direct,
                            "lsp_ms": lsp_ms,
                            "lsp_text": lsp_text,
                            "expected": target[column + 1 :],
                            "file": relative,
                            "line": row,
                            "column": column + 1,
                        }
                    )
                editor.close(document)
    return {
        "backend": url,
        "model": model,
        "keystrokes": records,
        "server_warnings": editor.warnings,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend-url", required=True)
    parser.add_argument("--keys-per-line", type=int, default=6)
    parser.add_argument("--max-keystrokes", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args.backend_url, args.keys_per_line, args.max_keystrokes))
    records = result["keystrokes"]
    lsp = [r["lsp_ms"] for r in records]
    overhead = [r["lsp_ms"] - r["suggestion_ms"] for r in records]
    same = sum(1 for r in records if r["lsp_text"] == r["text"])
    print(f"backend {result['backend']} model {result['model']}: {len(records)} keystrokes")
    print(summary("LSP round trip (headstart serve)", lsp))
    print(summary("backend TTFT, same prompt (raw stream)", [r["ttft_ms"] for r in records]))
    print(summary("backend time to same stop (raw stream)", [r["suggestion_ms"] for r in records]))
    print(summary("server overhead (LSP - raw time to stop)", overhead))
    print(
        f"ratio LSP p50 / raw-to-stop p50: "
        f"{statistics.median(lsp) / statistics.median([r['suggestion_ms'] for r in records]):.2f}"
    )
    print(f"same suggestion text via LSP and raw: {same}/{len(records)}")
    exact = sum(1 for r in records if r["lsp_text"].strip() and r["lsp_text"] == r["expected"])
    print(f"suggestion == the real rest of the line: {exact}/{len(records)}")
    print(f"prompt size p50: {statistics.median([r['prompt_chars'] for r in records]):.0f} chars")
    if result["server_warnings"]:
        print(
            f"server warnings: {len(result['server_warnings'])}, first: "
            f"{result['server_warnings'][0]}"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
