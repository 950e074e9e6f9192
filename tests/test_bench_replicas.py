"""`headstart bench run --metrics-urls`: the engine's figures of a step over several
replicas (the vLLMs behind a router, whose own URL has no vLLM metrics), summed, and each
replica's prefix-cache hit ratio beside them; read from fake models' real /metrics."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest
from bench_helpers import BENCH_SETTINGS, answered_project, run_bench
from fake_openai import FakeBackend

from server.bench.run import Bench, BenchOptions, Step
from server.bench.stats import step_metrics, sum_metrics

DEAD = "http://127.0.0.1:9/v1"


def complete(fake: FakeBackend, times: int) -> None:
    for _ in range(times):
        httpx.post(
            f"{fake.url}/completions",
            json={"model": fake.model, "prompt": "x = 1\n" * 20, "max_tokens": 4},
            trust_env=False,
        ).raise_for_status()


@contextmanager
def steady_load(fake: FakeBackend) -> Iterator[None]:
    """Completions sent to `fake` every 50 ms while inside: a replica the bench's
    editors do not reach, as another router's users would load it."""
    stop = threading.Event()

    def send() -> None:
        while not stop.wait(0.05):
            with suppress(httpx.HTTPError):
                complete(fake, 1)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def test_replicas_are_read_at_once_summed_and_each_listed(tmp_path: Path) -> None:
    with FakeBackend() as first, FakeBackend() as second:
        bench = Bench(
            BenchOptions(
                root=tmp_path,
                backend_url=first.url,
                out=tmp_path,
                metrics_urls=[first.url, second.base_url, DEAD],  # with /v1 or without
            )
        )
        step = Step(users=1)
        step.metrics_before = asyncio.run(bench._scrape_engines())
        complete(first, 2)
        complete(second, 3)
        step.metrics_after = asyncio.run(bench._scrape_engines())

    summed, replicas = bench._engine_figures(step, seconds=1.0)
    assert summed is None  # one replica did not answer: no sum that leaves it out
    assert len(bench.warnings) == 1 and DEAD in bench.warnings[0]
    assert replicas is not None
    assert [r["url"] for r in replicas] == [first.url, second.base_url, DEAD]
    assert [r["requests"] for r in replicas] == [2, 3, None]
    assert replicas[1]["prefixCacheHitRatio"] > 0  # the same prompt three times
    assert replicas[2]["prefixCacheHitRatio"] is None

    both = step_metrics(
        sum_metrics(step.metrics_before[:2]), sum_metrics(step.metrics_after[:2]), 1.0
    )
    assert both is not None
    assert both["counts"]["requests"] == 5
    prompt_tokens = sum(r["promptTokens"] for r in replicas[:2])
    assert both["counts"]["prompt_tokens"] == prompt_tokens
    alone = step_metrics(step.metrics_before[0], step.metrics_after[0], 1.0)
    assert sum_metrics(step.metrics_before[:1]) == step.metrics_before[0]  # one: as before
    assert alone is not None and alone["counts"]["requests"] == 2


@pytest.mark.timeout(300)
def test_a_bench_run_sums_the_replicas_it_is_given_and_prints_each(
    fake: FakeBackend, tmp_path: Path
) -> None:
    root = answered_project(fake, tmp_path / "project")
    out = tmp_path / "results"
    with FakeBackend() as other, steady_load(other):
        finished = run_bench(
            "run", str(root), "--backend-url", fake.url, "--users", "1",
            "--step-seconds", "4", "--warmup-seconds", "1", "--speed", "2",
            "--floor-prompts", "0", "--out", str(out), "--settings", json.dumps(BENCH_SETTINGS),
            "--metrics-urls", f"{fake.url},{other.base_url}",
        )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["warnings"] == []
    [step] = results["steps"]
    replicas = step["replicas"]
    assert [r["url"] for r in replicas] == [fake.url, other.base_url]
    assert all(r["requests"] > 0 and r["prefixCacheHitRatio"] > 0 for r in replicas)
    counts = step["vllm"]["counts"]
    assert counts["requests"] == sum(r["requests"] for r in replicas)
    assert counts["prompt_tokens"] == sum(r["promptTokens"] for r in replicas)
    assert "replicas: prefix cache " in finished.stdout
