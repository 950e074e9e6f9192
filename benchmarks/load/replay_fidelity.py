"""Does a replayed user load a backend as the real editor it was recorded from? (no GPU)

Replay is only worth its figures if, under a load heavier than the recording's, replayed
users send what real editors' servers would send: fewer requests as keys join running
ones, no prefetches while background work is paused. This runs the same typing three
ways against the fake model made compute-bound (tests/fake_engine.py: prompt tokens not
in its prefix cache queue for one prefill of a fixed rate, by priority):

1. record: real editors against the fake with no queue (a light load);
2. real: the same editors, the same keys, against the loaded fake;
3. replay: their recorded traces replayed, as many users, against a fresh loaded fake;
   and, given `--before TREE` (a checkout of older code), replayed by that code too.

Each arm's requests are counted where the backend sees them (the fake's event log), by
priority, with their time to first token; a faithful replay is close to `real`.

    python benchmarks/load/replay_fidelity.py --users 3 --seconds 60 --rate 4000 \
        [--before /tmp/before] [--out /tmp/replay-fidelity]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from fake_openai import FakeBackend  # noqa: E402

from server.bench.stats import parse_metrics, quantiles  # noqa: E402

WARMUP_S = 5


def bench(tree: Path, url: str, out: Path, args: argparse.Namespace, *extra: str) -> None:
    """One `headstart bench run` of `tree`'s code; its output goes to out.txt."""
    command = [sys.executable, "-m", "server", "bench", "run", "--backend-url", url]
    command += ["--step-seconds", str(args.seconds), "--warmup-seconds", str(WARMUP_S)]
    command += ["--floor-prompts", "0", "--out", str(out), *extra]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(f"{out}.txt", "w") as log:
        subprocess.run(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)


def engine_counters(fake: FakeBackend) -> dict[str, float]:
    """The fake's counters, read as the bench reads vLLM's (`parse_metrics`)."""
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    counters: dict[str, float] = parse_metrics(text)["counters"]
    return counters


def summarize(name: str, events: list[dict[str, Any]], computed: float) -> dict[str, Any]:
    """What the backend saw: requests a second by priority, keystrokes' first tokens,
    the share of keystroke requests closed before it, and prompt tokens a second that
    missed the prefix cache (sent to be prefilled, whether or not they were)."""
    times = [e["received_at"] for e in events]
    span = max(times) - min(times) if len(times) > 1 else 1.0
    by_priority: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        by_priority.setdefault(int((event["body"] or {}).get("priority", 0)), []).append(event)
    keys = by_priority.get(0, [])
    ttft = quantiles(
        [1000 * (e["first_chunk_at"] - e["received_at"]) for e in keys if e["first_chunk_at"]]
    )
    unanswered = sum(1 for e in keys if not e["first_chunk_at"])
    return {
        "arm": name,
        "requests": len(events),
        "perSecond": len(events) / span,
        "byPriority": {p: len(v) for p, v in sorted(by_priority.items())},
        "keystrokeTtftP50Ms": ttft["p50"],
        "keystrokeTtftP99Ms": ttft["p99"],
        "keystrokesClosedBeforeFirstToken": unanswered / len(keys) if keys else 0.0,
        "uncachedTokensPerSecond": computed / span,
    }


def run_arm(
    name: str, tree: Path, args: argparse.Namespace, rate: float | None, *extra: str
) -> dict[str, Any]:
    """One bench run against a fresh fake; the fake's view of it."""
    fake_args = [] if rate is None else ["--prefill-tokens-per-s", str(rate)]
    with FakeBackend(default_text=args.text, extra_args=[*fake_args, "--quiet"]) as fake:
        bench(tree, fake.url, args.out / name, args, *extra)
        counters = engine_counters(fake)
        events = [e for e in fake.events() if e["status"] == 200]
    uncached = counters["prefix_cache_queries"] - counters["prefix_cache_hits"]
    summary = summarize(name, events, uncached)
    print(
        f"{name:>14}: {summary['requests']:5d} requests, {summary['perSecond']:5.1f}/s "
        f"by priority {summary['byPriority']}; keystroke TTFT p50/p99 "
        f"{_ms(summary['keystrokeTtftP50Ms'])}/{_ms(summary['keystrokeTtftP99Ms'])} ms, "
        f"{100 * summary['keystrokesClosedBeforeFirstToken']:.1f}% closed before it; "
        f"{summary['uncachedTokensPerSecond']:.0f} uncached prompt tokens/s",
        flush=True,
    )
    return summary


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=60, help="each run's measured step")
    parser.add_argument("--rate", type=float, default=4000, help="the loaded fake's prefill")
    parser.add_argument("--text", default="value = compute(items)\n", help="the fake's answer")
    parser.add_argument("--before", type=Path, help="also replay with this checkout's code")
    parser.add_argument("--out", type=Path, default=Path("/tmp/replay-fidelity"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    traces = args.out / "traces"
    users = ["--users", str(args.users)]
    started = time.time()
    summaries = [
        run_arm("record", ROOT, args, None, *users, "--record", str(traces)),
        run_arm("real", ROOT, args, args.rate, *users),
    ]
    replay = ["--users", "0", "--replay", str(traces), "--replay-users", str(args.users)]
    summaries.append(run_arm("replay", ROOT, args, args.rate, *replay))
    if args.before is not None:
        summaries.append(run_arm("replay-before", args.before, args, args.rate, *replay))
    results = {"rate": args.rate, "users": args.users, "seconds": args.seconds, "arms": summaries}
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"{time.time() - started:.0f} s; results in {args.out}/results.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
