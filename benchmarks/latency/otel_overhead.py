#!/usr/bin/env python3
"""What OpenTelemetry tracing costs a keystroke: tracing off against on, in the same run.

Two editors (server.bench.editor_session), each with its own `headstart serve` on its own
copy of the sample project, type the same keys in turns against one fake model that answers
at once (tests/fake_openai.py); one server has `log.openTelemetry` off, the other on,
exporting every span over OTLP/HTTP to a receiver in this process (tests/otlp_receiver.py,
the SDK's BatchSpanProcessor doing the work on its own thread, as in use). Every key is a
model request (the typed character never continues the suggestion). For each arm: the
server's own time per keystroke (`serverMs` of `$/headstart/completionReport`) and the
editor's round trip, p50 and p99, and their ratio on/off.

Off, the request path only asks `tracing.enabled()` and enters the shared do-nothing span at
each stage: `--calls` times those calls alone, as many as one keystroke makes.

    .venv/bin/python benchmarks/latency/otel_overhead.py [--keys 400]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai import FakeBackend  # noqa: E402
from otlp_receiver import OtlpReceiver  # noqa: E402

from server import tracing  # noqa: E402
from server.bench.editor_session import EditorSession  # noqa: E402
from server.metrics import percentiles  # noqa: E402

LINE = "def total(items):\n    result = 0\n    "
KEYS = "abcdefghijklmnopqrstuvwxyz"
ANSWER = "pass"
"""What the fake answers: no typed letter continues it, so every key asks the model."""

SPANS_PER_KEY = 6
"""`with tracing.span(...)` blocks one model request enters: model info, context, prompt,
queue wait, filters, and the join wait."""
CHECKS_PER_KEY = 7
"""`tracing.enabled()` tests one keystroke makes: the edit applied, didChange, the request's
root span, the request body, the backend request, the stop rules' timing, the prefetch."""


def settings(url: str, traced: bool) -> dict[str, Any]:
    return {
        "backend": {"url": url},
        "completion": {"prefetch": False},
        "log": {"completionReports": "timings", "openTelemetry": traced},
    }


def server_env(cache: Path, receiver: OtlpReceiver) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADSTART_", "OTEL_"))}
    env |= {"PYTHONPATH": str(ROOT), "HEADSTART_CACHE_DIR": str(cache)}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    return env


async def type_in_turns(
    url: str, workdir: Path, receiver: OtlpReceiver, keys: int
) -> dict[str, dict[str, list[float]]]:
    arms = {"off": False, "on": True}
    sessions: dict[str, EditorSession] = {}
    documents = {}
    figures: dict[str, dict[str, list[float]]] = {a: {"server": [], "trip": []} for a in arms}
    reports: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    try:
        for arm, traced in arms.items():
            root = Path(shutil.copytree(ROOT / "examples" / "sample_project", workdir / arm))
            session = EditorSession(
                root, settings(url, traced), server_env(workdir / "cache", receiver)
            )
            await session.__aenter__()
            session.on_completion_report = reports[arm].append
            sessions[arm] = session
            documents[arm] = session.open(root / "overhead.py", LINE)
        for key in range(keys + 20):  # the first 20 warm up (tokenizer, first connection)
            order = list(arms) if key % 2 == 0 else list(reversed(arms))
            for arm in order:
                session, document = sessions[arm], documents[arm]
                line, column = 2, 4 + key % 60
                if column == 4 and key:
                    session.replace(document, 2, 4, len(document.lines[2].rstrip("\n")), "")
                session.type(document, line, column, KEYS[key % len(KEYS)])
                reports[arm].clear()
                _, trip_ms = await session.inline_completion(document, line, column + 1)
                for _ in range(100):
                    if reports[arm]:
                        break
                    await asyncio.sleep(0.001)
                if key >= 20 and reports[arm]:
                    figures[arm]["server"].append(float(reports[arm][0]["serverMs"]))
                    figures[arm]["trip"].append(trip_ms)
    finally:
        for session in sessions.values():
            await session.__aexit__(None, None, None)
    return figures


def off_path_ns(rounds: int = 200_000) -> tuple[float, float]:
    """Nanoseconds per do-nothing span block and per `enabled()` test, tracing off."""
    tracing.configure(False, {})
    started = time.perf_counter_ns()
    for _ in range(rounds):
        with tracing.span("headstart.context.build") as span:
            span.set("headstart.suggestion.chars", 1)
    per_span = (time.perf_counter_ns() - started) / rounds
    started = time.perf_counter_ns()
    for _ in range(rounds):
        tracing.enabled()
    per_check = (time.perf_counter_ns() - started) / rounds
    return per_span, per_check


def report(figures: dict[str, dict[str, list[float]]], receiver: OtlpReceiver) -> None:
    print(f"{'':14}{'p50 ms':>9}{'p99 ms':>9}   keys")
    quantiles: dict[str, dict[str, list[float]]] = {}
    for what, title in (("server", "server time"), ("trip", "round trip")):
        for arm in ("off", "on"):
            values = figures[arm][what]
            p50, p99 = percentiles(values, [50, 99])
            quantiles.setdefault(what, {})[arm] = [p50, p99]
            print(f"{title + ' ' + arm:14}{p50:9.2f}{p99:9.2f}   {len(values)}")
        off, on = quantiles[what]["off"], quantiles[what]["on"]
        print(f"{title + ' on/off':14}{on[0] / off[0]:9.2f}{on[1] / off[1]:9.2f}")
    roots = sum(s["name"] == "headstart.inline_completion" for s in receiver.spans())
    print(f"spans exported by the traced server: {len(receiver.spans())} ({roots} keystrokes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=400, help="keys each arm types")
    args = parser.parse_args()
    per_span, per_check = off_path_ns()
    off_ns = SPANS_PER_KEY * per_span + CHECKS_PER_KEY * per_check
    print(
        f"tracing off: {per_span:.0f} ns a span block, {per_check:.0f} ns an enabled() test; "
        f"one keystroke's {SPANS_PER_KEY} blocks and {CHECKS_PER_KEY} tests: "
        f"{off_ns / 1000:.2f} µs"
    )
    with (
        tempfile.TemporaryDirectory(prefix="otel-overhead-") as workdir,
        FakeBackend(default_text=ANSWER) as fake,
        OtlpReceiver() as receiver,
    ):
        figures = asyncio.run(type_in_turns(fake.url, Path(workdir), receiver, args.keys))
        time.sleep(0.5)
        report(figures, receiver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
