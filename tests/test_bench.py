"""`headstart bench`: typing sessions, the step figures, and a whole run end to end.

The end-to-end test runs `headstart bench run` as a process against the fake model (which
answers each typed line with its real rest, and counts vLLM's prefix-cache metrics), with
simulated editors that are real LSP clients of their own `headstart serve`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import BENCH_SETTINGS, answered_project, line_rules, make_project, run_bench
from conftest import server_env
from fake_openai import FakeBackend
from lsprotocol import types
from tokenizer_helpers import real_qwen_tokenizer_file

from server.bench.editor_session import EditorSession
from server.bench.run import report
from server.bench.stats import (
    histogram_quantile,
    metrics_delta,
    parse_metrics,
    step_metrics,
    summarize,
)
from server.bench.typing_sessions import TypingSession, TypingSpeed, lines_worth_typing
from server.bench.user import SimulatedUser


def test_lines_worth_typing_skips_comments_short_lines_and_hidden_folders(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / ".venv").mkdir()
    (root / ".venv" / "x.py").write_text("value = compute_something_long()\n")
    (root / "README.md").write_text("Shop prices are computed with tax included.\n")
    lines = {(line.path.name, line.typed) for line in lines_worth_typing(root)}
    assert ("prices.py", "return round(amount * (1 + TAX_RATE), 2)") in lines
    assert ("cart.py", "subtotal = sum(items)") in lines
    assert not any("rate is fixed" in typed or typed == '"""Prices."""' for _, typed in lines)
    assert ("prices.py", "TAX_RATE = 0.2") in lines  # 14 characters: kept
    assert not any(name in ("x.py", "README.md") for name, _ in lines)
    markdown = lines_worth_typing(root, frozenset({"markdown"}))
    assert [line.typed for line in markdown] == ["Shop prices are computed with tax included."]


def test_typing_sessions_are_seeded_and_paced_like_people(tmp_path: Path) -> None:
    lines = lines_worth_typing(make_project(tmp_path))
    speed = TypingSpeed()

    def first_lines(seed: int) -> list[str]:
        session = TypingSession(lines, seed, speed)
        taken = session.next_lines()
        return [next(taken).typed for _ in range(20)]

    assert first_lines(1) == first_lines(1)
    assert first_lines(1) != first_lines(2)

    session = TypingSession(lines, 0, speed)
    inside_words = [session.key_gap_s("a") * 1000 for _ in range(4000)]
    after_words = [session.key_gap_s(" ") * 1000 for _ in range(4000)]
    assert math.isclose(statistics.median(inside_words), speed.key_ms, rel_tol=0.1)
    assert statistics.median(after_words) > statistics.median(inside_words) + 80
    faster = TypingSession(lines, 0, speed.scaled(2.0))
    fast_gaps = [faster.key_gap_s("a") * 1000 for _ in range(4000)]
    assert math.isclose(statistics.median(fast_gaps), speed.key_ms / 2, rel_tol=0.1)
    accepted = sum(session.accepts() for _ in range(4000)) / 4000
    assert math.isclose(accepted, speed.accept_share, abs_tol=0.05)


def test_a_user_stays_in_a_file_for_the_lines_of_a_visit(tmp_path: Path) -> None:
    """With `lines_per_visit`, the user types that many lines in one file (in runs at
    random places of it) before going to another; by default a run of 1-4 lines."""
    lines = lines_worth_typing(make_project(tmp_path))
    session = TypingSession(lines, 3, TypingSpeed(), lines_per_visit=6)
    taken = session.next_lines()
    paths = [next(taken).path for _ in range(200)]
    stays = [len(list(group)) for _, group in itertools.groupby(paths)]
    assert all(stay >= 6 for stay in stays[:-1]), stays  # the last is cut off by the 200
    assert len(stays) > 5  # and the user does move on
    default = TypingSession(lines, 3, TypingSpeed()).next_lines()
    default_stays = [
        len(list(g)) for _, g in itertools.groupby(next(default).path for _ in range(200))
    ]
    assert min(default_stays[:-1]) < 6


async def test_an_editor_typing_past_an_emoji_edits_where_the_server_sees_it(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """The scripted editor counts columns in code points and speaks UTF-16, as VS Code
    does: an emoji takes two UTF-16 units, so edits after it must land one unit further
    (counting code points doubled the keys typed after it in the server's document)."""
    root = make_project(tmp_path)
    fake.script([{"match": "<|fim_suffix|>", "text": " + 1\n"}])
    typed = 'hands = "\U0001f46d" + label'
    settings = {"backend": {"url": fake.url}, "completion": {"prefetch": False}}
    async with EditorSession(root, settings, server_env()) as editor:
        document = editor.open(root / "emoji.py", "x = 1\n", "python")
        for column, char in enumerate(typed):
            editor.type(document, 1, column, char)
        text, _ = await editor.inline_completion(document, 1, len(typed))
    assert text == " + 1"
    assert (
        fake.events()[-1]["prompt"]
        .split("<|fim_prefix|>")[1]
        .startswith(f"x = 1\n{typed}<|fim_suffix|>")
    )


VLLM_METRICS = """# HELP vllm:prefix_cache_queries Prefix cache queries, in queried tokens.
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="q15"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="q15"} 800.0
vllm:prompt_tokens_total{engine="0",model_name="q15"} 1000.0
vllm:generation_tokens_total{engine="0",model_name="q15"} 120.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="q15"} 9.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="q15"} 1.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="q15"} 0.0
process_cpu_seconds_total 2.5
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 14.0
http_requests_total{handler="/metrics",method="GET",status="2xx"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="q15"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="q15"} 8.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="q15"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 10.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.005",model_name="q15"} 90.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="q15"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.025",model_name="q15"} 111.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 111.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.0",model_name="q15"} 12.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="q15"} 12.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 12.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="q15"} 400.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="q15"} 130.0
"""


def test_vllm_metrics_are_differenced_over_a_step() -> None:
    before = parse_metrics(VLLM_METRICS)
    assert before["counters"]["requests"] == 10.0  # summed over label sets
    assert before["counters"]["completion_posts"] == 14
    after_text = (
        VLLM_METRICS.replace("1000.0", "3000.0")
        .replace("cpu_seconds_total 2.5", "cpu_seconds_total 3.5")
        .replace('status="2xx"} 14.0', 'status="2xx"} 214.0')
        .replace('reason="stop",model_name="q15"} 9.0', 'reason="stop",model_name="q15"} 109.0')
        .replace(
            'finished_reason="abort",model_name="q15"} 4.0',
            'finished_reason="abort",model_name="q15"} 54.0',
        )
        .replace("} 800.0", "} 2600.0")
        .replace('le="0.04",model_name="q15"} 10.0', 'le="0.04",model_name="q15"} 110.0')
        .replace('le="+Inf",model_name="q15"} 10.0', 'le="+Inf",model_name="q15"} 110.0')
        # 100 new gaps between tokens: 60 within 5 ms, 40 over 10 ms and up to 25 ms
        .replace('le="0.005",model_name="q15"} 90.0', 'le="0.005",model_name="q15"} 150.0')
        .replace('le="0.01",model_name="q15"} 100.0', 'le="0.01",model_name="q15"} 160.0')
        .replace("} 111.0", "} 211.0")
        .replace("} 400.0", "} 600.0")  # 200 new draft tokens, 150 of them accepted
        .replace("} 130.0", "} 280.0")
    )
    delta = metrics_delta(before, parse_metrics(after_text), seconds=10.0)
    assert delta["prefixCacheHitRatio"] == pytest.approx(0.9)  # 1800 of 2000
    assert delta["promptTokensPerS"] == pytest.approx(200.0)
    assert delta["unfinishedShare"] == pytest.approx(0.5)  # 100 of 200 POSTs finished
    assert delta["apiServerCpuMsPerRequest"] == pytest.approx(5.0)  # 1 s over 200 POSTs
    # all 100 new first tokens came in the (0.02, 0.04] bucket
    assert delta["ttftMs"] == {"p50": 40.0, "p99": 40.0}
    assert delta["itlMs"] == {"p50": 5.0, "p99": 25.0}  # the step's gaps, not the earlier ones
    assert delta["queueTimeMs"] == {"p50": None, "p99": None}  # none queued in the step
    assert delta["draftAcceptedShare"] == pytest.approx(0.75)  # 150 of 200 draft tokens
    assert histogram_quantile({0.01: 5.0, 0.02: 10.0, math.inf: 10.0}, 50) == 10.0
    assert histogram_quantile({}, 50) is None
    assert delta["postsPerS"] == pytest.approx(20.0)
    unanswered = parse_metrics("")  # an overloaded API server timed the read out
    assert step_metrics(before, unanswered, 10.0) is None  # not a negative delta
    assert step_metrics(unanswered, before, 10.0) is None
    assert step_metrics(before, parse_metrics(after_text), 10.0) == delta


def test_a_step_summary_counts_outcomes_and_splits_the_stream_stage() -> None:
    records: list[dict[str, Any]] = [
        {
            "outcome": "answered",
            "ms": 30.0,
            "cached": False,
            "serverMs": 25.0,
            "timings": {"context": 2.0, "first_chunk": 10.0, "stream": 18.0},
            "right": True,
            "background": "paused",
            "prompts": "small",
            "mode": "line",
        },
        {"outcome": "answered", "ms": 90.0, "cached": False, "mode": "block"},
        {
            "outcome": "answered",
            "ms": 2.0,
            "cached": True,
            "serverMs": 0.5,
            "timings": {"cached": 0.1},
        },
        {"outcome": "superseded"},
        {"outcome": "answered", "ms": 40.0, "error": "backend unreachable"},
        {"accepted": 12},
    ]
    summary = summarize(records, lags=[1.0, 2.0], seconds=2.5)
    assert summary["keys"] == 5 and summary["keysPerS"] == 2.0
    assert summary["outcomes"] == {"answered": 3, "superseded": 1, "error": 1}
    assert summary["accepted"] == 1 and summary["rightSuggestions"] == 1
    assert summary["completionCacheHitRatio"] == 1 / 3
    assert summary["backgroundPausedShare"] == 1 / 3  # the server throttled one answer
    assert summary["smallPromptsShare"] == 1 / 3  # and sent smaller prompts after it
    assert summary["keystrokeToSuggestionMs"]["p50"] == 30.0
    by_mode = summary["modelRequestsByModeMs"]  # a block waits for its end, a line for its
    assert {mode: (q["n"], q["p50"]) for mode, q in by_mode.items()} == {
        "block": (1, 90.0),
        "line": (1, 30.0),
    }
    assert "model requests by mode: block n=1 p50 90.0 p99 90.0, line n=1" in report(
        {
            "backend": {"model": "m", "url": "u"},
            "machine": {"cpus": 2},
            "stepSeconds": 2.5,
            "workers": 1,
            "steps": [{**summary, "users": 1, "vllm": None, "loadAverage": 0.1}],
        }
    )
    assert summary["stagesMs"]["stream"]["p50"] == 8.0  # after the first chunk
    assert summary["stagesMs"]["transport"]["p50"] == 5.0
    assert summary["errors"] == ["backend unreachable"]


def test_a_suggestion_is_right_only_when_it_is_the_rest_of_the_line(tmp_path: Path) -> None:
    """At the end of a typed line there is no rest: a next-line suggestion is not it."""
    root = make_project(tmp_path)
    session = TypingSession(lines_worth_typing(root), 0, TypingSpeed())
    emitted: list[dict[str, Any]] = []
    user = SimulatedUser(0, root, session, {}, {}, emitted.append)

    async def judge(text: str, rest: str, version: int) -> bool:
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        reply.set_result(
            types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=text)])
        )
        record: dict[str, Any] = {"t": 0.0}
        user._answered((f"request {version}", reply, record), ("uri", version, 0, 0), rest)
        return bool(record["right"])

    assert asyncio.run(judge("sum(items)\n", "sum(items)", 1))
    assert not asyncio.run(judge("sum(item)", "sum(items)", 2))
    assert not asyncio.run(judge("\nreturn total", "", 3))
    # each answer waits for its server's report, which comes after the reply
    assert emitted == [] and len(user.awaiting_report) == 3
    user._on_report({"uri": "uri", "version": 2, "line": 0, "character": 0, "serverMs": 7.5})
    assert [(r["outcome"], r["right"], r["serverMs"]) for r in emitted] == [
        ("answered", False, 7.5)
    ]
    asyncio.run(user._flush_reports(wait_s=0))  # the run's end: the rest go without
    assert len(emitted) == 3 and all(r["outcome"] == "answered" for r in emitted)


def run_steps(
    fake: FakeBackend, root: Path, out: Path, users: str, settings: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`headstart bench run` on `root` against `fake` in 6 s steps of `users`, its floor
    10 prompts: the finished run (checked to have succeeded) and its results.json."""
    finished = run_bench(
        "run", str(root), "--backend-url", fake.url, "--users", users,
        "--step-seconds", "6", "--warmup-seconds", "1", "--speed", "2",
        "--floor-prompts", "10", "--out", str(out), "--settings", json.dumps(settings),
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    return finished, json.loads((out / "results.json").read_text())


@pytest.mark.timeout(300)
def test_the_floor_sends_prompts_of_token_ids_as_the_server_did(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """Against a vLLM whose tokenizer is here the server sends prompts as token ids; the
    floor sends the same ids straight to the backend (it once skipped every such prompt,
    so no vLLM run since had a floor)."""
    root = answered_project(fake, tmp_path / "project")
    fake.script(line_rules(root), tokenizer=real_qwen_tokenizer_file())
    settings = {
        "backend": {**BENCH_SETTINGS["backend"], "promptTokenIds": True},
        "completion": {
            **BENCH_SETTINGS["completion"],
            "tokenizer": str(real_qwen_tokenizer_file()),
            "promptLayout": "cursor",
        },
    }
    _, results = run_steps(fake, root, tmp_path / "results", "1", settings)
    prompts = [event["body"]["prompt"] for event in fake.events()]
    assert prompts and all(isinstance(prompt, list) for prompt in prompts)
    assert results["floor"]["prompts"] > 0 and results["floor"]["ttftMs"]["p50"] > 0
    # the floor's copies are the server's bodies, with a cache salt of their own
    floored = [dict(e["body"]) for e in fake.events() if "cache_salt" in e["body"]]
    servers = [e["body"] for e in fake.events() if "cache_salt" not in e["body"]]
    assert len(floored) >= results["floor"]["prompts"]
    assert all(body.pop("cache_salt") and body in servers for body in floored)


@pytest.mark.timeout(300)
def test_bench_runs_load_steps_against_a_backend_and_plots_them(
    fake: FakeBackend, tmp_path: Path
) -> None:
    root = answered_project(fake, tmp_path / "project")
    out = tmp_path / "results"
    finished, results = run_steps(fake, root, out, "1,2", BENCH_SETTINGS)
    assert [step["users"] for step in results["steps"]] == [1, 2]
    assert results["failures"] == []
    for step in results["steps"]:
        assert step["outcomes"].get("answered", 0) > 0
        assert step["keystrokeToSuggestionMs"]["p50"] > 0
        assert len(step["cdfMs"]) == 1001
        assert step["vllm"]["prefixCacheHitRatio"] > 0.3  # consecutive keys share prefixes
    stages = results["steps"][0]["stagesMs"]
    assert {"context", "prompt", "first_chunk", "stream", "filters", "transport"} <= set(stages)
    assert sum(step["rightSuggestions"] for step in results["steps"]) > 0
    modes = {mode for step in results["steps"] for mode in step["modelRequestsByModeMs"]}
    assert modes and modes <= {"line", "block"}  # the server's reports say which
    assert results["floor"]["prompts"] > 0 and results["floor"]["ttftMs"]["p50"] > 0
    assert "users  keys/s" in finished.stdout and "floor:" in finished.stdout

    plotted = run_bench("plot", str(out / "results.json"))
    assert plotted.returncode == 0, plotted.stderr
    for name in ("latency_cdf.png", "stages.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_says_when_the_backend_does_not_answer(tmp_path: Path) -> None:
    finished = run_bench(
        "run", str(make_project(tmp_path)), "--backend-url", "http://127.0.0.1:9/v1",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert finished.returncode == 1
    assert "does not answer GET /models" in finished.stderr
    assert "Traceback" not in finished.stderr
