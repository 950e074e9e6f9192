"""A replayed user loops its recorded user's whole span: the pauses before the first request
and after the last stay, so developers who read for seconds between edits put the recorded
load on the backend, not twice it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import BENCH_SETTINGS, answered_project, line_rules, run_bench
from fake_openai import FakeBackend

from server.backend.trace import read_trace
from server.bench.profiles import DeveloperSession, Edit
from server.bench.replay import (
    LOOP_GAP_S,
    RECORDING_FILE,
    ReplayError,
    load_traces,
    phase_s,
    schedule,
)
from server.bench.typing_sessions import LineToType, lines_worth_typing, user_seed

T0 = 1_765_000_000.0
"""A recording's start, seconds since the epoch: the traces' clock."""


def trace_folder(folder: Path, *sent: float, span: tuple[float, float] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"sent": T0 + at, "body": {"prompt": str(at), "priority": 0}, "endMs": 5.0, "end": "done"}
        for at in sent
    ]
    (folder / "user-0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if span is not None:
        users = {"user-0": {"start": T0 + span[0], "end": T0 + span[1]}}
        (folder / RECORDING_FILE).write_text(json.dumps({"users": users}))
    return folder


def first_loops(folder: Path, phase: float = 0.0) -> list[tuple[float, int]]:
    (trace,) = load_traces(folder)
    return [(at, loop) for at, loop, _ in itertools.islice(schedule(trace, phase), 4)]


def test_a_recorded_span_is_one_loop_with_its_leading_and_trailing_silence(
    tmp_path: Path,
) -> None:
    folder = trace_folder(tmp_path, 10.0, 12.0, span=(0.0, 45.0))

    (trace,) = load_traces(folder)
    assert trace.length_s == 45.0
    assert [request.at_s for request in trace.requests] == [10.0, 12.0]
    assert first_loops(folder) == [(10.0, 0), (12.0, 0), (55.0, 1), (57.0, 1)]
    # from a phase, a request before it comes after the wrap, a loop's length on
    assert first_loops(folder, 11.0) == [(1.0, 0), (44.0, 1), (46.0, 1), (89.0, 2)]


def test_copies_of_a_recorded_trace_spread_over_the_recorded_span(tmp_path: Path) -> None:
    traces = load_traces(trace_folder(tmp_path, 10.0, 12.0, span=(0.0, 45.0)))

    phases = sorted(phase_s(user, traces) for user in range(20))
    assert phases[0] == 0.0 and max(phases) > 40.0
    assert max(b - a for a, b in itertools.pairwise([*phases, 45.0])) < 4.5


def test_a_trace_without_a_recorded_span_loops_from_its_first_request_to_its_last(
    tmp_path: Path,
) -> None:
    folder = trace_folder(tmp_path, 10.0, 12.0)

    (trace,) = load_traces(folder)
    assert trace.length_s == 2.0 + LOOP_GAP_S
    assert first_loops(folder) == [(0.0, 0), (2.0, 0), (3.0, 1), (5.0, 1)]


def test_a_span_shorter_than_its_requests_still_leaves_a_gap_after_the_last(
    tmp_path: Path,
) -> None:
    folder = trace_folder(tmp_path, 10.0, 12.0, span=(11.0, 11.5))  # requests outside it

    (trace,) = load_traces(folder)
    assert [request.at_s for request in trace.requests] == [0.0, 2.0]  # from the first
    assert trace.length_s == 2.0 + LOOP_GAP_S


def test_an_unreadable_recorded_span_is_a_clear_error(tmp_path: Path) -> None:
    folder = trace_folder(tmp_path, 10.0)
    (folder / RECORDING_FILE).write_text('{"users": {"user-0": {"start": 1}}}')

    with pytest.raises(ReplayError, match="cannot read the recorded spans"):
        load_traces(folder)


def seed_that_reads_first(lines: list[LineToType]) -> tuple[int, Edit]:
    """A seed whose developer reads for a while before a short first edit: a recording
    of a few seconds more than the edit then holds long silences at both ends."""
    for seed in range(10_000):
        edit = next(DeveloperSession(lines, user_seed(seed, 0)).next_edits())
        if 6.0 <= edit.pause_s <= 10.0 and 1.0 <= edit.typing_s <= 5.0 and not edit.takes[0]:
            return seed, edit
    raise AssertionError("no such seed")


def bench(fake: FakeBackend, out: Path, *args: str) -> dict[str, Any]:
    finished = run_bench(
        "run", "--backend-url", fake.url, "--warmup-seconds", "0", "--floor-prompts", "0",
        "--out", str(out), "--settings", json.dumps(BENCH_SETTINGS), *args,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return results


@pytest.mark.timeout(180)
def test_replayed_developers_send_the_recorded_requests_per_second(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """Record one developer who reads, types, reads; replay it as many users, each over
    the recorded span: the requests a user sends a second are the recorded ones."""
    root = answered_project(fake, tmp_path / "project")
    seed, edit = seed_that_reads_first(lines_worth_typing(root))
    step_s = edit.pause_s + edit.typing_s + 8.0
    traces = tmp_path / "traces"
    bench(
        fake, tmp_path / "recorded", str(root), "--users", "1", "--profile", "developer",
        "--seed", str(seed), "--step-seconds", f"{step_s:.1f}", "--record", str(traces),
    )  # fmt: skip
    sent = read_trace(traces / "user-0.jsonl")
    span = json.loads((traces / RECORDING_FILE).read_text())["users"]["user-0"]
    recorded_s = span["end"] - span["start"]
    assert step_s <= recorded_s <= step_s + 10
    assert span["start"] < sent[0]["sent"] - 5 and sent[-1]["sent"] < span["end"] - 2
    recorded_rate = len(sent) / recorded_s
    (trace,) = load_traces(traces)
    assert trace.length_s == pytest.approx(recorded_s)
    squeezed_s = sent[-1]["sent"] - sent[0]["sent"] + LOOP_GAP_S
    assert recorded_s / squeezed_s > 1.5  # the loop of old would have sent this much more

    fake.reset()
    fake.script(line_rules(root))
    users = 8
    results = bench(
        fake, tmp_path / "replayed", "--users", "0", "--replay", str(traces),
        "--replay-users", str(users), "--step-seconds", f"{trace.length_s:.2f}",
    )  # fmt: skip
    (step,) = results["steps"]
    replayed_rate = step["replay"]["requests"] / users / results["stepSeconds"]
    assert replayed_rate == pytest.approx(recorded_rate, rel=0.25), (replayed_rate, recorded_rate)
