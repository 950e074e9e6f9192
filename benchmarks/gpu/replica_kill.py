"""A replica killed mid-stream behind vllm-router: the stream resumes through the router on
another replica, and the checksum check decides what is kept (docs/team.md).

Against the replicas that `headstart backend start --replicas N` started (read from its
state file): one greedy request is streamed through the router unbroken (the reference);
then the same request again, and once it has streamed `--kill-after` chunks the replica
serving it (the one whose /metrics shows a running request) is killed with its whole
process group. Headstart's resumable stream carries on through the router. Prints whether
the resumed output is identical to the reference, the resumes, and the extra time.

    python benchmarks/gpu/replica_kill.py [--max-tokens 512] [--kill-after 40]

Replicas of one model must give one greedy continuation for the check to hold: real
weights, or vLLM's random weights (`--load-format dummy`, seeded alike in every replica).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.backend.client import CompletionBackend, CompletionRequest, StreamStats  # noqa: E402
from server.backend.process import Worker, read_state  # noqa: E402
from server.backend.resume import ResumePolicy, resumable_stream  # noqa: E402
from server.config import BackendSettings  # noqa: E402

PROMPT = '''import json
from pathlib import Path


def load_settings(path: Path) -> dict:
    """Read the settings file, falling back to defaults for missing keys."""
'''


async def running_requests(client: httpx.AsyncClient, worker: Worker) -> float:
    """vLLM's `num_requests_running` gauge of one replica (0 when it does not answer)."""
    try:
        reply = await client.get(worker.url.removesuffix("/v1") + "/metrics")
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in reply.text.splitlines()
        if line.startswith("vllm:num_requests_running")
    )


async def serving_replica(workers: tuple[Worker, ...]) -> Worker:
    async with httpx.AsyncClient(timeout=2, trust_env=False) as client:
        for _ in range(500):
            counts = await asyncio.gather(*(running_requests(client, w) for w in workers))
            busy = [w for w, count in zip(workers, counts, strict=True) if count > 0]
            if len(busy) == 1:
                return busy[0]
            await asyncio.sleep(0.005)
    raise SystemExit("no single replica was seen serving the stream")


async def stream(
    backend: CompletionBackend,
    request: CompletionRequest,
    policy: ResumePolicy,
    chunks_seen: asyncio.Event | None = None,
    kill_after: int = 0,
) -> tuple[str, float, StreamStats]:
    stats = StreamStats()
    started = time.perf_counter()
    text = ""
    async for snapshot in resumable_stream(backend, request, policy, stats):
        text = snapshot
        if chunks_seen is not None and stats.chunks >= kill_after:
            chunks_seen.set()
    return text, (time.perf_counter() - started) * 1000, stats


async def run(args: argparse.Namespace) -> list[str]:
    state = read_state()
    if state is None or len(state.workers) < 2:
        raise SystemExit("no replicas recorded: `headstart backend start --replicas 2` first")
    settings = BackendSettings(
        url=state.url, first_chunk_timeout_ms=60_000, chunk_gap_ms=5_000, total_timeout_ms=300_000
    )
    backend = CompletionBackend(settings)
    policy = ResumePolicy()
    request = CompletionRequest(
        prompt=PROMPT, max_tokens=args.max_tokens, temperature=0.0, document="ws/settings.py"
    )
    try:
        model = await backend.model()
        reference, reference_ms, _ = await stream(backend, request, policy)
        seen = asyncio.Event()
        broken = asyncio.ensure_future(stream(backend, request, policy, seen, args.kill_after))
        await asyncio.wait_for(seen.wait(), 60)
        victim = await serving_replica(state.workers)
        os.killpg(victim.pid, signal.SIGKILL)
        resumed, resumed_ms, stats = await broken
    finally:
        await backend.aclose()
    return [
        f"command: python benchmarks/gpu/replica_kill.py {' '.join(sys.argv[1:])}",
        f"router {state.url} (model {model}) in front of {len(state.workers)} replicas; "
        f"killed {victim.url} (process group {victim.pid}) after {args.kill_after} chunks",
        f"reference: {len(reference)} characters in {reference_ms:.0f} ms; resumed: "
        f"{len(resumed)} characters in {resumed_ms:.0f} ms, {stats.resumes} resume(s)",
        f"resumed output identical to the unbroken stream: {resumed == reference}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--kill-after", type=int, default=40, help="chunks before the kill")
    args = parser.parse_args()
    print("\n".join(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
