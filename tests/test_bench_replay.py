"""`headstart bench run --record` and `--replay`: an editor's backend requests are traced,
and replayed users send them again with their timing, their cancels and their bodies, so
a few light processes can stand in for hundreds of editors."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import line_rules, make_project, run_bench
from fake_openai import FakeBackend

from server.backend.trace import read_trace
from server.bench.replay import (
    LOOP_GAP_S,
    ReplayError,
    Trace,
    TracedRequest,
    load_traces,
    phase_s,
    schedule,
)
from server.bench.stats import summarize_replay


def traced(*times: float) -> Trace:
    return Trace(
        "t", tuple(TracedRequest(at, {"prompt": str(at)}, "done", 10.0, 1) for at in times)
    )


def test_a_schedule_loops_its_trace_from_a_phase() -> None:
    trace = traced(0.0, 0.5, 2.0)
    length = 2.0 + LOOP_GAP_S

    from_start = list(itertools.islice(schedule(trace, 0.0), 4))
    assert [(at, loop) for at, loop, _ in from_start] == [(0.0, 0), (0.5, 0), (2.0, 0), (length, 1)]
    shifted = list(itertools.islice(schedule(trace, 0.5), 4))
    assert [request.at_s for _, _, request in shifted] == [0.5, 2.0, 0.0, 0.5]
    assert [at for at, _, _ in shifted] == pytest.approx([0.0, 1.5, length - 0.5, length])
    assert [loop for _, loop, _ in shifted] == [0, 0, 1, 1]  # a loop begins where the trace does


def test_copies_of_a_trace_start_at_spread_phases() -> None:
    traces = [traced(0.0, 9.0), traced(0.0, 4.0)]

    assert phase_s(0, traces) == phase_s(1, traces) == 0.0  # the first copy of each
    phases = sorted(phase_s(user, traces) / traces[0].length_s for user in range(0, 40, 2))
    gaps = [b - a for a, b in itertools.pairwise([*phases, 1.0])]
    assert max(gaps) < 0.1  # 20 copies leave no gap of a tenth of the trace


def test_no_traces_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ReplayError, match="no recorded requests"):
        load_traces(tmp_path)


def test_a_step_summary_separates_waited_for_keystrokes_from_superseded_ones() -> None:
    def record(priority: int, recorded: str, outcome: str, ttft: float | None) -> dict[str, Any]:
        base = {"priority": priority, "recorded": recorded, "outcome": outcome, "lagMs": 1.0}
        return {**base, "ttftMs": ttft} if ttft is not None else base

    summary = summarize_replay(
        [
            record(0, "done", "done", 40.0),
            record(0, "closed", "closed", 60.0),
            record(0, "cancelled", "cancelled", None),
            record(0, "cancelled", "done", 30.0),
            record(2, "done", "done", 200.0),
            {**record(0, "done", "error", None), "status": 503},
        ],
        seconds=2.0,
    )

    assert summary["requests"] == 6 and summary["requestsPerS"] == 3.0
    assert summary["keystrokeTtftMs"]["n"] == 2 and summary["keystrokeTtftMs"]["p99"] == 60.0
    assert summary["supersededAnsweredShare"] == 0.5
    assert summary["backgroundTtftMs"]["p50"] == 200.0
    assert summary["outcomes"]["error"] == 1 and summary["errors"] == ["503"]


@pytest.mark.timeout(300)
def test_a_recorded_editor_is_replayed_request_for_request(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """Record one editor typing against a fake model slow enough that keystrokes
    supersede requests; replay its trace; the fake sees the same bodies, at the same
    times, and the superseded ones closed by the client when the recording closed them."""
    root = make_project(tmp_path / "project")
    slow_lines = [{**rule, "chunk_delay_ms": 40} for rule in line_rules(root)]
    fake.script(slow_lines)
    traces = tmp_path / "traces"
    settings = {
        "backend": {"chunkGapMs": 2000},
        "completion": {"prefetch": False, "joinInFlight": False},  # keys supersede requests
    }
    recorded_run = run_bench(
        "run", str(root), "--backend-url", fake.url, "--users", "1", "--step-seconds", "5",
        "--warmup-seconds", "1", "--floor-prompts", "0", "--record", str(traces),
        "--out", str(tmp_path / "recorded"), "--settings", json.dumps(settings),
    )  # fmt: skip
    assert recorded_run.returncode == 0, recorded_run.stderr[-3000:]
    recorded = read_trace(traces / "user-0.jsonl")
    assert len(recorded) >= 5
    assert {"done", "cancelled"} <= {request["end"] for request in recorded}
    assert [request["body"] for request in recorded] == [e["body"] for e in fake.events()]

    fake.reset()
    fake.script(slow_lines)
    length_s = load_traces(traces)[0].requests[-1].at_s  # from the editor's start (recorded)
    replay_run = run_bench(
        "run", "--backend-url", fake.url, "--users", "0", "--replay", str(traces),
        "--replay-users", "1", "--no-replay-salt", "--step-seconds", f"{length_s + 0.5:.1f}",
        "--warmup-seconds", "0", "--floor-prompts", "0", "--out", str(tmp_path / "replayed"),
    )  # fmt: skip
    assert replay_run.returncode == 0, replay_run.stderr[-3000:]

    replayed = fake.events()[: len(recorded)]
    assert [event["body"] for event in replayed] == [request["body"] for request in recorded]
    offsets = [
        abs(
            (event["received_at"] - replayed[0]["received_at"])
            - (request["sent"] - recorded[0]["sent"])
        )
        for event, request in zip(replayed, recorded, strict=True)
    ]
    assert statistics.median(offsets) < 0.1, offsets
    for event, request in zip(replayed, recorded, strict=True):
        if request["end"] == "cancelled":
            assert event["closed_by"] == "client" and not event["completed"]
            held_s = event["closed_at"] - event["received_at"]
            assert abs(held_s - request["endMs"] / 1000) < 0.25, (held_s, request["endMs"])
    results = json.loads((tmp_path / "replayed" / "results.json").read_text())
    (step,) = results["steps"]
    assert step["replayedUsers"] == 1 and step["replay"]["requests"] >= len(recorded) - 1
    assert step["replay"]["keystrokeTtftMs"]["n"] > 0
    (cores,) = step["replay"]["driverCores"]
    assert 0 < cores < 1.5
    assert "replayed users:" in replay_run.stdout


def write_trace(folder: Path, lines: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "user-0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def replay(fake: FakeBackend, traces: Path, out: Path, *args: str) -> dict[str, Any]:
    finished = run_bench(
        "run", "--backend-url", fake.url, "--users", "0", "--replay", str(traces),
        "--warmup-seconds", "0", "--floor-prompts", "0", "--out", str(out), *args,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return results


def traced_line(sent: float, prompt: str, end: str = "done") -> dict[str, Any]:
    body = {"prompt": prompt, "max_tokens": 8, "stream": True, "priority": 0}
    return {"sent": sent, "body": body, "endMs": 5.0, "chunks": 1, "end": end}


@pytest.mark.timeout(120)
def test_a_keystroke_supersedes_the_users_request_still_waiting_for_its_first_token(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """Recorded, both keys were answered at once; replayed against a backend that now
    takes 2 s to a first token, the second key closes the first, as a server would."""
    fake.script([{"match": "slow", "text": "x\n", "first_delay_ms": 2000}])
    traces = write_trace(
        tmp_path / "traces", [traced_line(10.0, "slow 1"), traced_line(10.4, "fast")]
    )

    results = replay(fake, traces, tmp_path / "out", "--replay-users", "1", "--step-seconds", "1.2")

    first, second = fake.events()[:2]
    assert first["body"]["prompt"] == "slow 1" and second["body"]["prompt"] == "fast"
    assert first["closed_by"] == "client" and not first["completed"]
    assert 0.3 < first["closed_at"] - first["received_at"] < 0.7
    assert second["completed"]
    assert results["steps"][0]["replay"]["outcomes"]["superseded"] == 1


@pytest.mark.timeout(120)
def test_replayed_copies_and_loops_are_salted_apart(fake: FakeBackend, tmp_path: Path) -> None:
    """Two replayed users of one trace each get their own `cache_salt` by default, and a new
    one when the trace starts again: the same prompts sent again must not find the cache
    their previous loop filled. Trace: 3 requests 0.4 s apart, a loop every 1.8 s."""
    fake.script([{"match": "", "text": "x = 1\n"}])
    lines = [traced_line(100.0 + 0.4 * i, f"p{i}") for i in range(3)]
    replay(fake, write_trace(tmp_path / "traces", lines), tmp_path / "out",
           "--replay-users", "2", "--step-seconds", "2.6")  # fmt: skip

    first = [
        e["body"] for e in fake.events() if e["body"]["cache_salt"].startswith("headstart-replay-0")
    ]
    assert [(b["prompt"], b["cache_salt"]) for b in first][:4] == [
        ("p0", "headstart-replay-0-0"), ("p1", "headstart-replay-0-0"),
        ("p2", "headstart-replay-0-0"), ("p0", "headstart-replay-0-1"),
    ]  # fmt: skip
    salts = {event["body"]["cache_salt"] for event in fake.events()}
    assert {salt.rsplit("-", 1)[0] for salt in salts} == {
        "headstart-replay-0",
        "headstart-replay-1",
    }
    assert {event["body"]["model"] for event in fake.events()} == {fake.model}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("ramp_s", [0.0, 3.0])
def test_a_ramp_starts_the_replayed_users_of_a_step_one_after_another(
    fake: FakeBackend, tmp_path: Path, ramp_s: float
) -> None:
    """With --replay-ramp-seconds, the i-th of a step's n replayed users starts at i/n of
    the ramp, so their first prompts (none cached) do not reach the engine together; the
    step is measured after it. Each user's first request then comes at its start plus
    where its phase puts the trace's next request."""
    fake.script([{"match": "", "text": "x = 1\n"}])
    lines = [traced_line(100.0 + 0.1 * i, f"p{i}") for i in range(10)]
    traces = write_trace(tmp_path / "traces", lines)

    results = replay(fake, traces, tmp_path / "out", "--replay-users", "4",
                     "--step-seconds", "2", "--replay-ramp-seconds", str(ramp_s))  # fmt: skip

    firsts: dict[str, float] = {}
    for event in fake.events():
        firsts.setdefault(event["body"]["cache_salt"].split("-")[2], event["received_at"])
    loaded = load_traces(traces)
    due = [
        ramp_s * user / 4 + next(schedule(loaded[0], phase_s(user, loaded)))[0] for user in range(4)
    ]
    got = [firsts[str(user)] - firsts["0"] for user in range(4)]
    want = [at - due[0] for at in due]
    assert all(abs(g - w) < 0.3 for g, w in zip(got, want, strict=True)), (got, want)
    assert results["replayRampSeconds"] == ramp_s


@pytest.mark.timeout(180)
@pytest.mark.parametrize("throttle_ms", [50, 0])
def test_a_replayed_user_pauses_background_work_as_its_server_would(
    fake: FakeBackend, tmp_path: Path, throttle_ms: int
) -> None:
    """Eight keystrokes whose first tokens take 150 ms, over a 50 ms throttle: the user's
    background work pauses, so the recorded prefetch is not sent and the next keystroke's
    request is closed where its line was shown, not read on for its block. With the
    throttle off (0) both go as recorded."""
    fake.script(
        [
            {"match": "slow", "text": "a\n", "first_delay_ms": 150},
            {"match": "late", "text": "x\ny\nz\n", "chunk_delay_ms": 50},
            {"match": "prefetch", "text": "p\n"},
        ]
    )
    lines = [traced_line(100.0 + 0.5 * k, f"slow {k}") for k in range(8)]
    prefetch = traced_line(103.7, "prefetch")
    prefetch["body"]["priority"] = 2
    late = {**traced_line(103.9, "late"), "chunks": 3, "lineChunks": 1}
    traces = write_trace(tmp_path / "traces", [*lines, prefetch, late])
    settings = json.dumps({"completion": {"backgroundThrottleMs": throttle_ms}})

    results = replay(fake, traces, tmp_path / "out", "--replay-users", "1",
                     "--step-seconds", "4.6", "--settings", settings)  # fmt: skip

    sent = {event["body"]["prompt"]: event for event in fake.events()}
    replayed = results["steps"][0]["replay"]
    assert all(sent[f"slow {k}"]["completed"] for k in range(8))
    if throttle_ms:
        assert "prefetch" not in sent and replayed["throttled"] == 1
        assert sent["late"]["closed_by"] == "client" and not sent["late"]["completed"]
        assert replayed["outcomes"]["closed"] == 1
    else:
        assert sent["prefetch"]["completed"] and replayed["throttled"] == 0
        assert sent["late"]["completed"]


@pytest.mark.timeout(120)
def test_a_key_that_types_on_a_running_request_waits_for_it_instead_of_closing_it(
    fake: FakeBackend, tmp_path: Path
) -> None:
    """Recorded at a light load, each key's request came after the one before had ended.
    Replayed against a backend that now takes 600 ms to a first token, the keys that typed
    on (`typesOn`) wait for the running request, as a server joining it would, and the
    second of them drops the first, which is never sent."""
    fake.script(
        [{"match": "slow", "text": "x\n", "first_delay_ms": 600}, {"match": "", "text": "y\n"}]
    )
    lines = [
        traced_line(10.0, "slow 1"),
        {**traced_line(10.2, "typed 2"), "typesOn": True},
        {**traced_line(10.3, "typed 3"), "typesOn": True},
        # past the step's end: never sent, it makes the loop longer than the step, so that
        # a loaded machine has seconds to finish the three keys before the step stops them
        # (a request still in flight at the end is not counted)
        traced_line(14.0, "never sent"),
    ]
    results = replay(fake, write_trace(tmp_path / "traces", lines), tmp_path / "out",
                     "--replay-users", "1", "--step-seconds", "3")  # fmt: skip

    slow, typed = fake.events()[:2]
    assert [slow["body"]["prompt"], typed["body"]["prompt"]] == ["slow 1", "typed 3"]
    assert slow["completed"] and typed["received_at"] >= slow["first_chunk_at"]
    replayed = results["steps"][0]["replay"]
    assert replayed["outcomes"]["superseded"] == 1  # "typed 2", dropped unsent
    assert replayed["joinedShare"] == pytest.approx(1 / 3)
    assert replayed["keystrokeTtftMs"]["n"] == 2
    assert replayed["keystrokeTtftMs"]["p50"] >= 250  # "typed 3": ~0.3 s joined, then its own
