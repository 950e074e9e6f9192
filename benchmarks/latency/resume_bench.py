"""Fault injection: streams broken at a random point, resumed, compared with unbroken ones.

Between Headstart's backend client and the model sits a TCP proxy that, when armed, resets
the connection of the next completion response after a chosen number of bytes (a real
network fault: the client sees a reset mid-stream). For every stream the same request is
made twice through the proxy: once unbroken (the reference, which also gives the
response's size) and once broken at a uniformly random byte of that size, and resumed by
`server.backend.resume.resumable_stream`. Reported: the share of resumed outputs identical to the
reference, and the extra time a resume costs (broken minus unbroken, p50/p99).

    python benchmarks/latency/resume_bench.py [--streams 1000]            # the fake model (tests/)
    python benchmarks/latency/resume_bench.py --endpoint http://127.0.0.1:8000/v1 --streams 200

Against the fake, each stream's text is scripted and the fake continues a token-id prompt
where the cut stream left off, as a deterministic model does. Against vLLM the prompts
are HumanEval-infilling problems as the server would prompt them, greedy decoding.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from cutting_proxy import CuttingProxy  # noqa: E402

from server.backend.client import CompletionBackend, CompletionRequest, StreamStats  # noqa: E402
from server.backend.resume import ResumePolicy, resumable_stream  # noqa: E402
from server.config import BackendSettings  # noqa: E402
from server.metrics import percentile  # noqa: E402


async def one_stream(
    backend: CompletionBackend, request: CompletionRequest, policy: ResumePolicy
) -> tuple[str, float, int]:
    stats = StreamStats()
    text = ""
    started = time.perf_counter()
    async for snapshot in resumable_stream(backend, request, policy, stats):
        text = snapshot
    return text, (time.perf_counter() - started) * 1000, stats.resumes


def fake_requests(count: int, rng: random.Random) -> tuple[list[CompletionRequest], list[Any]]:
    words = ["items", "total", "self.cache", "value", "result", "count", "key", "node"]
    requests, rules = [], []
    for n in range(count):
        lines = [
            f"{rng.choice(words)} = {rng.choice(words)}({rng.randint(0, 99)}, {rng.choice(words)})"
            for _ in range(rng.randint(2, 8))
        ]
        text = "\n    ".join(lines) + "\n"
        marker = f"<stream {n}>"
        rules.append({"match": marker, "text": text, "chunk_chars": rng.randint(2, 6)})
        requests.append(CompletionRequest(prompt=f"def f{n}():\n    {marker}\n", max_tokens=256))
    return requests, rules


def vllm_requests(count: int, endpoint: str) -> list[CompletionRequest]:
    sys.path.insert(0, str(ROOT / "benchmarks" / "quality"))
    import fim_server_eval as fim
    import httpx

    from server.completion.prompt import choose_template
    from server.completion.request import Prompting
    from server.completion.token_count import load_token_counter
    from server.config import load_settings

    models = httpx.get(f"{endpoint}/models", timeout=30).json()["data"]
    counter = load_token_counter(None, models[0].get("root") or models[0]["id"])
    prompting = Prompting(choose_template("auto", models[0]["id"], counter), counter)
    settings = load_settings({}, environ={})
    problems = fim.load_problems(fim.DATA, "multi", count, 5815 // max(count, 1) or 1)
    requests = []
    for problem in problems:
        request, _ = fim.plan_for(problem, prompting, settings)
        requests.append(
            CompletionRequest(
                prompt=request.prompt, max_tokens=128, stop=request.stop, temperature=0.0
            )
        )
    return requests


async def run(args: argparse.Namespace) -> list[str]:
    rng = random.Random(args.seed)
    fake = None
    if args.endpoint:
        endpoint = args.endpoint.rstrip("/")
        requests = vllm_requests(args.streams, endpoint)
    else:
        from fake_openai import FakeBackend

        fake = FakeBackend().start()
        endpoint = fake.url
        requests, rules = fake_requests(args.streams, rng)
        fake.script(rules)
    import httpx

    url = httpx.URL(endpoint)
    proxy = CuttingProxy(url.host, url.port or 80)
    port = await proxy.start()
    settings = BackendSettings(
        url=f"http://127.0.0.1:{port}{url.path}",
        first_chunk_timeout_ms=30_000,
        chunk_gap_ms=args.chunk_gap_ms,
        total_timeout_ms=60_000,
    )
    backend = CompletionBackend(settings)
    policy = ResumePolicy(backoff_ms=args.backoff_ms)
    identical, extra_ms, resumes, skipped = 0, [], [], 0
    try:
        await backend.model()
        for n, request in enumerate(requests):
            reference, ref_ms, _ = await one_stream(backend, request, policy)
            size = proxy.last_response_bytes
            if size < 2:
                skipped += 1
                continue
            proxy.cut = rng.randint(1, size - 1)
            resumed, broken_ms, count = await one_stream(backend, request, policy)
            identical += resumed == reference
            extra_ms.append(broken_ms - ref_ms)
            resumes.append(count)
            if resumed != reference and args.show_diffs:
                print(f"#{n}: {reference!r}\n  != {resumed!r}", file=sys.stderr)
            if (n + 1) % 100 == 0:
                print(f"{n + 1}/{len(requests)}", file=sys.stderr)
    finally:
        await backend.aclose()
        await proxy.close()
        if fake is not None:
            fake.stop()
    total = len(extra_ms)
    return [
        f"command: python benchmarks/latency/resume_bench.py {' '.join(sys.argv[1:])}",
        f"backend: {args.endpoint or 'the fake model (tests/fake_openai.py)'}; "
        f"policy: overlap {policy.overlap_tokens} tokens, backoff {policy.backoff_ms} ms",
        f"{total} streams broken at a random byte of the response (+{skipped} empty, skipped)",
        f"resumed output identical to the unbroken stream: {identical}/{total} "
        f"({identical / max(total, 1):.1%})",
        f"resumes per stream: mean {statistics.fmean(resumes) if resumes else 0:.2f}, "
        f"max {max(resumes, default=0)}",
        f"extra time of a broken stream: p50 {percentile(extra_ms, 50):.1f} ms, "
        f"p99 {percentile(extra_ms, 99):.1f} ms",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", help="a real backend (default: the fake model)")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backoff-ms", type=float, default=50.0)
    parser.add_argument("--chunk-gap-ms", type=int, default=800)
    parser.add_argument("--show-diffs", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = asyncio.run(run(args))
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
