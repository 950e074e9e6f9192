"""What token-id prompts save: vLLM's API-server CPU per request, text against ids.

    python benchmarks/latency/prompt_token_ids.py --url http://127.0.0.1:8000/v1 --repo DIR \\
        [--files 6] [--keys 40] [--rounds 2] [--context-tokens 4096] [--out results.json]

Keystrokes are simulated on the largest Python files of DIR: the cursor steps one
character at a time through `--keys` characters from the middle of each file, and each
step's prompt is built as the server builds it for the current file (4,096 tokens by
default). The same prompts go to vLLM as text and as token ids (streamed, one token each),
alternating `--rounds` times so that drift in the machine hits both alike; vLLM's own
`process_cpu_seconds_total` (its API server process) and its /v1/completions POST count,
read before and after each block, give the CPU per request. Also printed: what encoding
costs the language server per keystroke, a piece at a time (cached) against whole prompts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.bench.stats import parse_metrics  # noqa: E402
from server.completion.prompt_tokens import PromptEncoder  # noqa: E402
from server.completion.request import CursorContext, plan_request  # noqa: E402
from server.completion.token_count import load_token_counter  # noqa: E402
from server.config import CompletionSettings  # noqa: E402
from server.metrics import percentile  # noqa: E402


def keystroke_prompts(repo: Path, files: int, keys: int, context_tokens: int) -> list[str]:
    """The prompts of `keys` keystrokes in each of the `files` largest Python files."""
    paths = sorted(repo.rglob("*.py"), key=lambda path: path.stat().st_size)[-files:]
    settings = CompletionSettings(context_tokens=context_tokens)
    prompts = []
    for path in paths:
        text = path.read_text(errors="replace")
        start = text.index("\n", len(text) // 2) + 1
        for offset in range(start, min(len(text), start + keys)):
            ctx = CursorContext(text, offset, str(path.relative_to(repo)), repo.name)
            prompts.append(plan_request(ctx, settings)[0].prompt)
    return prompts


def api_server_counters(base: str) -> tuple[float, float]:
    """(CPU seconds, /v1/completions POSTs) of vLLM's API server so far."""
    counters = parse_metrics(httpx.get(f"{base}/metrics", timeout=30).text)["counters"]
    return counters["api_server_cpu_seconds"], counters["completion_posts"]


def send_all(url: str, model: str, prompts: list[Any]) -> None:
    with httpx.Client(timeout=120) as client:
        for prompt in prompts:
            body = {"model": model, "prompt": prompt, "max_tokens": 1, "stream": True}
            with client.stream("POST", f"{url}/completions", json=body) as reply:
                reply.raise_for_status()
                for _ in reply.iter_lines():
                    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="vLLM's OpenAI base URL (…/v1)")
    parser.add_argument("--repo", type=Path, required=True, help="a package to type in")
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--context-tokens", type=int, default=4096, help="below vLLM's --max-model-len"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    url = args.url.rstrip("/")
    base = url.removesuffix("/v1")

    model = httpx.get(f"{url}/models", timeout=30).json()["data"][0]
    counter = load_token_counter(None, model.get("root") or model["id"])
    if counter.tokenizer is None:
        sys.exit(f"no tokenizer for {model['id']} here (the model's folder is needed)")
    prompts = keystroke_prompts(args.repo, args.files, args.keys, args.context_tokens)

    encoder = PromptEncoder(counter.tokenizer)
    piece_ms, whole_ms, ids = [], [], []
    for prompt in prompts:  # in typing order: each keystroke re-encodes a piece or two
        started = time.perf_counter()
        encoded = encoder.encode(prompt)
        piece_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        whole = counter.tokenizer.encode(prompt).ids
        whole_ms.append((time.perf_counter() - started) * 1000)
        assert encoded == whole, "the pieces' ids are the whole prompt's"
        ids.append(encoded)
    tokens = [len(prompt_ids) for prompt_ids in ids]

    send_all(url, model["id"], prompts[:5])  # warm the engine up
    cpu_ms: dict[str, list[float]] = {"text": [], "ids": []}
    for _ in range(args.rounds):
        for mode, batch in (("text", prompts), ("ids", ids)):
            cpu_before, posts_before = api_server_counters(base)
            send_all(url, model["id"], batch)
            cpu_after, posts_after = api_server_counters(base)
            cpu_ms[mode].append((cpu_after - cpu_before) * 1000 / (posts_after - posts_before))

    results = {
        "model": model["id"],
        "repo": args.repo.name,
        "prompts": len(prompts),
        "promptTokens": {"p50": percentile(tokens, 50), "max": max(tokens)},
        "apiServerCpuMsPerRequest": cpu_ms,
        "encodeMs": {
            "pieces": {"p50": percentile(piece_ms, 50), "p99": percentile(piece_ms, 99)},
            "whole": {"p50": percentile(whole_ms, 50), "p99": percentile(whole_ms, 99)},
            "piecesEncoded": encoder.pieces_encoded,
        },
    }
    text_ms = min(cpu_ms["text"])
    ids_ms = min(cpu_ms["ids"])
    print(
        f"{len(prompts)} keystroke prompts from {args.repo.name} ({model['id']}), "
        f"p50 {results['promptTokens']['p50']:.0f} tokens\n"
        f"vLLM API server CPU per request: text {fmt(cpu_ms['text'])} ms, "
        f"token ids {fmt(cpu_ms['ids'])} ms (best rounds: {ids_ms / text_ms:.2f}x)\n"
        f"encoding here per keystroke: pieces p50 {percentile(piece_ms, 50):.2f} ms "
        f"p99 {percentile(piece_ms, 99):.2f} ms; whole prompt p50 "
        f"{percentile(whole_ms, 50):.2f} ms p99 {percentile(whole_ms, 99):.2f} ms; "
        f"{encoder.pieces_encoded} pieces encoded for {len(prompts)} prompts"
    )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


def fmt(values: list[float]) -> str:
    return "/".join(f"{value:.2f}" for value in values)


if __name__ == "__main__":
    main()
