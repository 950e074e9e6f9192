"""benchmarks/load/kv_capacity.py: vLLM's prefix cache with a size, over a trace replayed
as many users the way `headstart bench run --replay` replays it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from conftest import ROOT, load_benchmark
from tokenizer_helpers import tiny_tokenizer

from server.bench.replay import load_traces, phase_s, schedule

SCRIPT = ROOT / "benchmarks" / "load" / "kv_capacity.py"


def capacity() -> ModuleType:
    return load_benchmark("load/kv_capacity")


def test_a_full_cache_evicts_the_least_recently_used_blocks() -> None:
    sim = capacity()
    first, second = list(range(32)), list(range(100, 132))  # two blocks each
    sent = [sim.Replayed(0.0, (0, 0), ids) for ids in (first, second, first)]
    assert list(sim.cached_tokens(sent, 0)) == [0, 0, 32]  # unbounded: seen before, cached
    assert list(sim.cached_tokens(sent, 2)) == [0, 0, 0]  # room for one prompt: evicted
    assert list(sim.cached_tokens(sent, 4)) == [0, 0, 32]


def test_salted_users_and_loops_share_nothing() -> None:
    sim = capacity()
    prompt = list(range(32))
    sent = [sim.Replayed(0.0, salt, prompt) for salt in ((0, 0), (1, 0), (0, 1), (0, 1))]
    assert list(sim.cached_tokens(sent, 0)) == [0, 0, 0, 32]


def write_trace(folder: Path) -> Path:
    """One recorded user typing one line: a request every 0.5 s, over a 4 s span."""
    folder.mkdir()
    head = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))
    lines = [
        {"sent": 100.0 + 0.5 * n, "body": {"prompt": f"{head}value = compute(items"[: -8 + n]}}
        for n in range(6)
    ]
    (folder / "user-0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    spans = {"users": {"user-0": {"start": 100.0, "end": 104.0}}}
    (folder / "recording.json").write_text(json.dumps(spans))
    return folder


def test_users_are_replayed_as_the_bench_replays_them(tmp_path: Path) -> None:
    """The same phases, loops and salts as `server.bench.replay`'s users."""
    sim = capacity()
    traces = load_traces(write_trace(tmp_path / "trace"))
    crowd = sim.crowd(traces, 3, 10.0, lambda prompt: [len(prompt)])
    for user in range(3):
        mine = [(r.at, r.salt[1]) for r in crowd if r.salt[0] == user]
        expected = []
        for at, loop, _ in schedule(traces[0], phase_s(user, traces)):
            if at >= 10.0:
                break
            expected.append((at, loop))
        assert mine == expected and len({loop for _, loop in mine}) > 1
    assert [r.at for r in crowd] == sorted(r.at for r in crowd)


def test_a_smaller_cache_computes_more_for_more_users(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace")
    tokenizer = tmp_path / "tokenizer.json"
    tiny_tokenizer().save(str(tokenizer))
    command = [sys.executable, str(SCRIPT), str(trace), "--users", "1,50"]
    command += ["--tokenizer", str(tokenizer), "--seconds", "12"]

    def cached(cache_tokens: int) -> list[float]:
        printed = subprocess.run(
            [*command, "--cache-tokens", str(cache_tokens)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = [line.split() for line in printed.splitlines()[2:]]
        assert [row[0] for row in rows] == ["1", "50"]
        return [float(row[2].rstrip("%")) for row in rows]

    unbounded, small = cached(0), cached(4096)
    assert unbounded[0] > 50 and abs(unbounded[1] - unbounded[0]) < 10  # they share nothing
    assert small[0] == unbounded[0] and small[1] < unbounded[1] / 2
