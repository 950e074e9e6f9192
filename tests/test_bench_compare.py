"""`headstart bench run --compare A,B --replay TRACES`: the same recorded typing replayed on
two backends (two fake models, each its own process) in turn, step by step, and one table
and one CDF plot of them side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import run_bench
from fake_openai import FakeBackend

from server.bench.compare import run_order


def write_trace(folder: Path, prompts: list[str], **body: Any) -> Path:
    """A recorded editor's trace: a keystroke request every 0.1 s, each read to its end.
    Replayed from any phase, all of them are sent well within a 1.5 s step."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "sent": 100.0 + 0.1 * i,
            "body": {"prompt": prompt, "max_tokens": 8, "stream": True, "priority": 0, **body},
            "endMs": 5.0,
            "chunks": 1,
            "end": "done",
        }
        for i, prompt in enumerate(prompts)
    ]
    (folder / "user-0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def compare(urls: list[str], traces: Path, out: Path) -> dict[str, Any]:
    finished = run_bench(
        "run", "--compare", ",".join(urls), "--replay", str(traces),
        "--replay-users", "1,2", "--step-seconds", "1.5", "--warmup-seconds", "0",
        "--out", str(out),
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    results["stdout"] = finished.stdout
    return results


def test_each_step_runs_on_every_backend_in_an_order_that_turns_around() -> None:
    assert run_order(["a", "b"], [1, 10, 50]) == [
        (1, "a"), (1, "b"), (10, "b"), (10, "a"), (50, "a"), (50, "b"),
    ]  # fmt: skip


@pytest.mark.timeout(240)
def test_two_backends_get_the_same_replayed_load_and_one_table(tmp_path: Path) -> None:
    traces = write_trace(tmp_path / "traces", [f"def f{i}(x):\n    return" for i in range(6)])
    with FakeBackend(default_text=" x\n") as first, FakeBackend(default_text=" x\n") as second:
        results = compare([first.url, second.url], traces, tmp_path / "out")
        prompts = [[e["body"]["prompt"] for e in fake.events()] for fake in (first, second)]

    # the same requests reached both
    assert prompts[0] and sorted(set(prompts[0])) == sorted(set(prompts[1]))
    assert [b["url"] for b in results["compare"]] == [first.url, second.url]
    one, two = results["steps"]
    assert one["order"] == [first.url, second.url] and two["order"] == [second.url, first.url]
    for step in (one, two):
        for url in (first.url, second.url):
            replay = step["backends"][url]["replay"]
            assert replay["requests"] > 0 and replay["outcomes"].get("error", 0) == 0
            assert replay["keystrokeTtftMs"]["n"] > 0 and replay["keystrokeTtftCdfMs"]
            assert step["backends"][url]["vllm"]["prefixCacheHitRatio"] is not None

    table = results["stdout"]
    assert f"A = vllm, fake-coder at {first.url}" in table
    assert f"B = vllm, fake-coder at {second.url}" in table
    rows = [line for line in table.splitlines() if line.strip().startswith(("1 |", "2 |"))]
    assert len(rows) == 2
    for row in rows:
        groups = row.split("|")[1:]
        assert len(groups) == 2
        assert all(group.split()[1] != "-" for group in groups)  # each has its TTFT p50

    pytest.importorskip("matplotlib")
    plotted = run_bench("plot", str(tmp_path / "out" / "results.json"))
    assert plotted.returncode == 0, plotted.stderr
    assert (tmp_path / "out" / "latency_cdf.png").stat().st_size > 0


@pytest.mark.timeout(240)
def test_a_trtllm_backend_gets_the_recorded_load_in_the_fields_it_takes(tmp_path: Path) -> None:
    """Recorded against vLLM, the requests carry `return_token_ids` and vLLM's priorities
    (0 first). A backend that behaves like TensorRT-LLM refuses unknown fields with 400 and
    serves its float priorities highest first: it gets them without the field and with
    the priority turned around, and vLLM gets them as recorded."""
    traces = write_trace(
        tmp_path / "traces", [f"def g{i}(y):\n    return" for i in range(6)], return_token_ids=True
    )
    with (
        FakeBackend(default_text=" y\n") as vllm,
        FakeBackend(default_text=" y\n", extra_args=["--flavor", "trtllm"]) as trtllm,
    ):
        results = compare([vllm.url, trtllm.url], traces, tmp_path / "out")
        sent = {
            name: [e["body"] for e in fake.events()] for name, fake in [("v", vllm), ("t", trtllm)]
        }

    assert [b["engine"] for b in results["compare"]] == ["vllm", "trtllm"]
    for step in results["steps"]:
        for url in (vllm.url, trtllm.url):
            assert step["backends"][url]["replay"]["outcomes"].get("error", 0) == 0
            assert step["backends"][url]["vllm"]["ttftMs"]["p50"] is not None  # its metrics
    assert sent["t"] and all(
        "return_token_ids" not in body and "cache_salt" not in body and body["priority"] == 1.0
        for body in sent["t"]
    )
    assert all(body["return_token_ids"] and body["priority"] == 0 for body in sent["v"])
    assert "B: TensorRT-LLM takes no cache_salt" in results["stdout"]
