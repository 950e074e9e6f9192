"""`headstart bench run --compare URL1,URL2,...`: one recorded typing load, several backends.

Comparing engines (vLLM, SGLang, TensorRT-LLM) means putting the very same load on each:
the requests recorded editors' servers sent (`--record`), replayed with their timing and
cancels (`server.bench.replay`), the same replayed users with the same phases on every
backend. Each step runs on each backend in turn, and the order turns around from one step
to the next (A B, B A, ...), so that neither backend always meets the warmer machine or
the other's leftovers. One table then puts the backends side by side, a column group each,
and `headstart bench plot` draws their keystroke time-to-first-token CDFs in one figure.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.bench.run import Bench, BenchOptions

LETTERS = "ABCDEFGHIJ"


@dataclass
class CompareOptions:
    backends: list[str]
    replay: Path
    replay_users: list[int]
    out: Path
    step_s: float = 60.0
    warmup_s: float = 10.0
    replay_salt: bool = True
    replay_drivers: int | None = None
    replay_ramp_s: float = 0.0
    progress_bar: bool = True


def run_order(backends: list[str], steps: list[int]) -> list[tuple[int, str]]:
    """(replayed users, backend) in the order they run: each step on every backend, the
    order reversed on every other step."""
    return [(users, url) for n, users in enumerate(steps) for url in _turn(backends, n)]


def _turn(backends: list[str], step: int) -> list[str]:
    return backends if step % 2 == 0 else backends[::-1]


def run(options: CompareOptions) -> dict[str, Any]:
    """Every (step, backend) of `run_order`, as a bench of replayed users alone; the
    results, per step, per backend."""
    started = time.time()
    cells: dict[tuple[int, str], dict[str, Any]] = {}
    backends: dict[str, dict[str, Any]] = {}
    for users, url in run_order(options.backends, options.replay_users):
        letter = LETTERS[options.backends.index(url)]
        if not options.progress_bar:
            print(f"{time.strftime('%H:%M:%S')} {letter} = {url}", file=sys.stderr, flush=True)
        bench = Bench(
            BenchOptions(
                root=Path.cwd(),
                backend_url=url,
                out=options.out,
                users=[0],
                step_s=options.step_s,
                warmup_s=options.warmup_s,
                floor_prompts=0,
                progress_bar=options.progress_bar,
                replay=options.replay,
                replay_users=[users],
                replay_salt=options.replay_salt,
                replay_drivers=options.replay_drivers,
                replay_ramp_s=options.replay_ramp_s,
            )
        )
        results = asyncio.run(bench.run())
        backends[url] = {**results["backend"], "label": letter}
        cells[(users, url)] = {
            **results["steps"][0],
            "failures": results["failures"],
            "warnings": results["warnings"],
        }
    steps = []
    for number, users in enumerate(options.replay_users):
        steps.append(
            {
                "replayedUsers": users,
                "order": _turn(options.backends, number),
                "backends": {url: cells[(users, url)] for url in options.backends},
            }
        )
    return {
        "command": "headstart bench run " + " ".join(sys.argv[3:]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "compare": [backends[url] for url in options.backends],
        "replay": str(options.replay),
        "replaySalt": options.replay_salt,
        "stepSeconds": options.step_s,
        "steps": steps,
    }


COLUMNS = (
    f"{'req/s':>6} {'TTFT p50':>8} {'p99':>7} {'p999':>7} {'answ.':>6} {'err':>4} "
    f"{'eng.TTFT':>8} {'prefix':>6}"
)
"""A backend's column group: requests a second sent; time to first token (p50, p99, p999)
of the keystroke requests the recording waited for; the superseded ones answered before
their cancel; errors; the engine's own TTFT p50 and prefix-cache hit ratio (its metrics)."""


def report(results: dict[str, Any]) -> str:
    """The backends side by side: a row per step, a column group per backend."""
    backends = results["compare"]
    out = [
        f"headstart bench --compare: the traces of {results['replay']} replayed on "
        f"{len(backends)} backends in turn, {results['stepSeconds']:.0f} s a step",
        *(f"  {b['label']} = {b['engine']}, {b['model']} at {b['url']}" for b in backends),
        f"{'':>8} | "
        + " | ".join(f"{b['label'] + ' (' + b['engine'] + ')':^{len(COLUMNS)}}" for b in backends),
        f"{'replayed':>8} | " + " | ".join(COLUMNS for _ in backends),
    ]
    for step in results["steps"]:
        groups = [_group(step["backends"][b["url"]]) for b in backends]
        out.append(f"{step['replayedUsers']:>8} | " + " | ".join(groups))
    for backend in backends:
        for step in results["steps"]:
            cell = step["backends"][backend["url"]]
            out += [f"{backend['label']}: failed: {failure}" for failure in cell["failures"]]
        warnings = {
            w for step in results["steps"] for w in step["backends"][backend["url"]]["warnings"]
        }
        out += [f"{backend['label']}: {warning}" for warning in sorted(warnings)]
    return "\n".join(out)


def _group(cell: dict[str, Any]) -> str:
    replay, engine = cell.get("replay") or {}, cell.get("vllm") or {}
    keystroke = replay.get("keystrokeTtftMs") or {}
    return (
        f"{replay.get('requestsPerS', 0):>6.1f} {_ms(keystroke.get('p50')):>8} "
        f"{_ms(keystroke.get('p99')):>7} {_ms(keystroke.get('p999')):>7} "
        f"{_ratio(replay.get('supersededAnsweredShare')):>6} "
        f"{(replay.get('outcomes') or {}).get('error', 0):>4} "
        f"{_ms((engine.get('ttftMs') or {}).get('p50')):>8} "
        f"{_ratio(engine.get('prefixCacheHitRatio')):>6}"
    )


def _ms(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "-"


def _ratio(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "-"
