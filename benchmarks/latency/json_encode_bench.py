#!/usr/bin/env python3
"""What encoding a keystroke's request body costs: json (as httpx would) against orjson
(server.backend.client.json_body), in turns, on a body of N token ids like the one a
keystroke sends vLLM. Prints p50/p99 per encoder and their ratio.

    python benchmarks/latency/json_encode_bench.py --tokens 4096 --rounds 5000
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from server.backend.client import json_body


def with_json(body: dict[str, Any]) -> bytes:
    """The encoder before orjson: json.dumps as httpx calls it."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5000)
    args = parser.parse_args()
    rng = random.Random(39)
    body = {
        "model": "q15",
        "prompt": [rng.randrange(151_000) for _ in range(args.tokens)],
        "max_tokens": 64,
        "temperature": 0.0,
        "stop": ["<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|im_end|>"],
        "stream": True,
        "return_token_ids": True,
        "stop_token_ids": [151643, 151664, 151659, 151645],
        "priority": 0,
    }
    assert json.loads(json_body(body)) == json.loads(with_json(body))
    encoders: dict[str, Callable[[dict[str, Any]], bytes]] = {
        "json": with_json,
        "orjson (json_body)": json_body,
    }
    times: dict[str, list[float]] = {name: [] for name in encoders}
    gc.collect()
    for _ in range(args.rounds):  # in turns, so both see the same machine
        for name, encode in encoders.items():
            started = time.perf_counter()
            encode(body)
            times[name].append((time.perf_counter() - started) * 1000)
    print(f"a body of {args.tokens} token ids, {args.rounds} rounds in turns (ms)")
    for name, values in times.items():
        print(f"  {name:20} p50 {percentile(values, 0.5):.3f}  p99 {percentile(values, 0.99):.3f}")
    base, new = times["json"], times["orjson (json_body)"]
    print(
        f"  ratio json/orjson: p50 {percentile(base, 0.5) / percentile(new, 0.5):.1f}x, "
        f"p99 {percentile(base, 0.99) / percentile(new, 0.99):.1f}x"
    )


if __name__ == "__main__":
    main()
