"""benchmarks/load/vllm_spans.py: vLLM's `llm_request` spans, as tests/otlp_receiver.py writes
them, read into per-window quantiles of queue, TTFT and prefill, and kept as a small CSV that
reads back to the same table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "load" / "vllm_spans.py"
START_NS = 1_796_557_600_000_000_000  # 2026-12-06 11:46:40 UTC


def span(
    at_s: float, queue_s: float, prompt_tokens: int, name: str = "llm_request"
) -> dict[str, Any]:
    """One span line as the receiver writes it (attributes as Python values)."""
    return {
        "trace_id": "ab" * 16,
        "span_id": "cd" * 8,
        "parent_span_id": "",
        "name": name,
        "start_ns": START_NS + int(at_s * 1e9),
        "end_ns": START_NS + int((at_s + queue_s + 0.05) * 1e9),
        "attributes": {
            "gen_ai.latency.time_in_queue": queue_s,
            "gen_ai.latency.time_to_first_token": queue_s + 0.03,
            "gen_ai.latency.time_in_model_prefill": 0.025,
            "gen_ai.latency.time_in_model_decode": 0.02,
            "gen_ai.usage.prompt_tokens": prompt_tokens,
            "gen_ai.usage.completion_tokens": 7,
        },
        "resource": {"service.name": "vllm"},
    }


def run(*args: str | Path) -> str:
    done = subprocess.run(
        [sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_window_says_how_long_its_requests_queued(tmp_path: Path) -> None:
    spans = [span(1 + i * 0.1, 0.0, 3000) for i in range(50)]  # a calm window: no queue
    spans += [span(21 + i * 0.1, 0.5, 3900) for i in range(30)]  # a busy one: half a second
    spans.append(span(2, 9.0, 10, name="Load model"))  # vLLM's start-up spans are not requests
    source = tmp_path / "spans.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in spans))
    kept = tmp_path / "requests.csv.gz"

    table = run(source, "--window", "20", "--csv", kept).splitlines()

    assert table[0].split()[:2] == ["UTC", "requests"]
    calm, busy = table[1].split(), table[2].split()
    # windows start at the first request, 1 s in
    assert calm[:2] == ["11:46:41", "50"] and calm[2] == "0"  # queue p50 0 ms
    assert busy[:2] == ["11:47:01", "30"] and busy[2] == "500"  # queue p50 500 ms
    assert busy[5] == "530" and busy[8] == "25"  # TTFT and prefill p50, ms
    assert busy[-4] == "3900"  # prompt tokens p50
    assert len(table) == 3
    assert run(kept, "--window", "20").splitlines() == table


def test_a_file_without_requests_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "spans.jsonl"
    source.write_text(json.dumps(span(0, 0, 1, name="Worker init")) + "\n")
    done = subprocess.run(
        [sys.executable, SCRIPT, source], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "no llm_request spans" in done.stderr
