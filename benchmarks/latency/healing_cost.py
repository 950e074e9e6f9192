"""What token healing costs vLLM per request: the same keystroke prompts sent plain and
healed (the typed part's last characters taken off the prompt and the answer made to start
with them by a `structured_outputs` regex, as `completion.tokenHealing` sends them), in
turns, and the first-token and whole-answer latencies of each; then the same at a
concurrency, where grammar work is shared by the batch. Checks that every healed answer
does start with the characters (vLLM's regex dialect reads the server's pattern), and
whether a healed answer can still end on each of the template's special tokens (a grammar
may mask tokens that no regex spells): each is pushed with a logit bias, plain and healed.

    python benchmarks/latency/healing_cost.py --endpoint http://127.0.0.1:8000/v1 [--requests 40]
        [--concurrency 16] [--max-tokens 32]

Each request types a different word at the end of one line of a ~2k-token Qwen prompt
(the line-start layout), so the prompt before the middle marker is in vLLM's prefix cache,
as while typing, and every regex is new to the grammar compiler (no cache hit).
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

from server.backend.client import starting_with  # noqa: E402
from server.completion.prompt import TEMPLATES  # noqa: E402

WORDS = [f"{stem}_{n}" for n in range(200) for stem in ("total", "items", "conf", "price")]


def keystroke_prompts(count: int) -> list[tuple[str, str]]:
    """(full prompt, typed part of the line) for `count` keystrokes on one file."""
    code = (ROOT / "server" / "completion" / "request.py").read_text()
    above, below = code[:7000], code[7000:9000]
    cut = above.rfind("\n") + 1
    above = above[:cut]
    prompts = []
    for n in range(count):
        typed = f"        value = self.{WORDS[n % len(WORDS)]}"
        prompt = TEMPLATES["qwen"].prompt(
            repo_name="headstart",
            file_path="server/completion/request.py",
            prefix=above + typed,
            suffix="\n" + below,
            layout="lineStart",
        )
        prompts.append((prompt.text, prompt.middle))
    return prompts


async def one(
    client: httpx.AsyncClient, model: str, prompt: str, forced: str, max_tokens: int
) -> tuple[float, float, str]:
    """(ms to the first chunk, ms to the end, the answer's text)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    if forced:
        body["structured_outputs"] = {"regex": starting_with(forced)}
    started = time.perf_counter()
    first: float | None = None
    text = ""
    async with client.stream("POST", "/completions", json=body) as response:
        if response.status_code != 200:
            raise SystemExit(f"HTTP {response.status_code}: {(await response.aread())[:300]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            piece = chunk["choices"][0]["text"] if chunk.get("choices") else ""
            if piece and first is None:
                first = time.perf_counter()
            text += piece
    ended = time.perf_counter()
    return ((first or ended) - started) * 1000, (ended - started) * 1000, text


async def special_token_ends(client: httpx.AsyncClient, model: str) -> None:
    """Per Qwen special token that ends an answer: what comes when it is made the likely
    next token right after the forced characters, without the regex and with it."""
    template = TEMPLATES["qwen"]
    prompt = template.prompt(
        repo_name="r",
        file_path="a.py",
        prefix="def f():\n    return x",
        suffix="\n",
        layout="lineStart",
    ).text
    for token, token_id in zip(template.stop_tokens, template.stop_token_ids, strict=True):
        for forced in ("", ".y"):
            body: dict[str, Any] = {
                "model": model,
                "prompt": prompt,
                "max_tokens": 8,
                "temperature": 0.0,
                "logit_bias": {str(token_id): 100},
                "stop_token_ids": list(template.stop_token_ids),
            }
            if forced:
                body["structured_outputs"] = {"regex": starting_with(forced)}
            reply = (await client.post("/completions", json=body)).json()
            choice = reply["choices"][0]
            print(
                f"{token:15} {'healed' if forced else 'plain':6} {choice['text']!r:40} "
                f"finish {choice['finish_reason']}, stop {choice.get('stop_reason')}"
            )


def summary(name: str, rows: list[tuple[float, float, str]]) -> str:
    firsts, totals = [r[0] for r in rows], [r[1] for r in rows]
    return (
        f"{name:7} first chunk p50 {statistics.median(firsts):6.1f} ms, mean "
        f"{statistics.fmean(firsts):6.1f}; whole answer p50 {statistics.median(totals):6.1f} ms,"
        f" mean {statistics.fmean(totals):6.1f} ({len(rows)} requests)"
    )


async def run(args: argparse.Namespace) -> int:
    async with httpx.AsyncClient(base_url=args.endpoint, timeout=120) as client:
        model = (await client.get("/models")).json()["data"][0]["id"]
        prompts = keystroke_prompts(2 * args.requests + args.concurrency * 4)
        text, _ = prompts[-1]
        await one(client, model, text, "", 1)  # the shared prefix into the cache
        plain, healed, wrong = [], [], 0
        for n in range(args.requests):  # in turns, one at a time
            text, typed = prompts[n]
            plain.append(await one(client, model, text, "", args.max_tokens))
            forced = typed[-3:]
            row = await one(client, model, text[: -len(forced)], forced, args.max_tokens)
            healed.append(row)
            wrong += not row[2].startswith(forced)
        print(summary("plain", plain))
        print(summary("healed", healed))
        print(f"healed answers not starting with the forced characters: {wrong}")
        for name, heal in (("plain", False), ("healed", True), ("plain", False)):
            batch = prompts[args.requests : args.requests + args.concurrency]
            started = time.perf_counter()
            rows = await asyncio.gather(
                *(
                    one(
                        client,
                        model,
                        text[:-3] if heal else text,
                        typed[-3:] if heal else "",
                        args.max_tokens,
                    )
                    for text, typed in batch
                )
            )
            wall = (time.perf_counter() - started) * 1000
            print(f"{summary(name, rows)}; {args.concurrency} at once, {wall:.0f} ms in all")
        await special_token_ends(client, model)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
