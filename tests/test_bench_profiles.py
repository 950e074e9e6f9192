"""The developer profile of `headstart bench run`: its plan's statistics are its documented
parameters, and a run with it types, pauses and takes a suggestion, end to end.

The plan needs no server (it is drawn from the seed alone), so its figures are checked over
twenty simulated hours; the end-to-end run is `headstart bench run --profile developer` as
a process against the fake model, with simulated editors that are real LSP clients.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import pytest
from bench_helpers import BENCH_SETTINGS, answered_project, make_project, run_bench
from fake_openai import FakeBackend

from server.bench.profiles import DeveloperProfile, DeveloperSession, Edit, plan
from server.bench.typing_sessions import LineToType, lines_worth_typing, user_seed

HOURS = 20


def dense_workspace(root: Path) -> list[LineToType]:
    """Eight files of 300 lines, each worth typing: moves land where they aim."""
    for number in range(8):
        rows = [
            f"    value_{i} = compute_total(alpha_{i}, beta) + {i * 7}" + " * gamma" * (i % 5)
            for i in range(300)
        ]
        (root / f"module_{number}.py").write_text("def build():\n" + "\n".join(rows) + "\n")
    return lines_worth_typing(root)


@pytest.fixture(scope="module")
def long_plan(tmp_path_factory: pytest.TempPathFactory) -> list[Edit]:
    lines = dense_workspace(tmp_path_factory.mktemp("dense"))
    return plan(DeveloperSession(lines, 7), HOURS * 3600)


def test_the_plan_types_at_the_studies_rate_and_share_of_time(long_plan: list[Edit]) -> None:
    profile = DeveloperProfile()
    typing = sum(edit.typing_s for edit in long_plan)
    pauses = sum(edit.pause_s for edit in long_plan)
    keys = sum(len(edit.typed) for edit in long_plan)
    # 52 words a minute of 5 characters (Dhakal et al. 2018): 4.33 characters a second
    assert math.isclose(keys / typing, 52 * 5 / 60, rel_tol=0.03)
    # typing 30% of the time, reading and thinking the rest (CUPS)
    assert math.isclose(typing / (typing + pauses), profile.typing_share, abs_tol=0.03)
    assert all(edit.pause_s > 0 for edit in long_plan)
    assert math.isclose(typing + pauses, HOURS * 3600, rel_tol=0.01)


def test_the_plan_moves_nearby_edits_inside_lines_and_changes_files(
    long_plan: list[Edit],
) -> None:
    profile = DeveloperProfile()
    minutes = sum(edit.pause_s + edit.typing_s for edit in long_plan) / 60
    mid_line = [edit for edit in long_plan if edit.mid_line]
    assert math.isclose(len(mid_line) / len(long_plan), profile.mid_line_share, abs_tol=0.03)
    assert all(edit.typed and edit.end < len(edit.line.text) for edit in mid_line)
    assert all(
        edit.start == edit.line.start or not edit.line.text[edit.start - 1].isalnum()
        for edit in mid_line
    )  # a mid-line edit starts at a word
    assert all(edit.end == len(edit.line.text) for edit in long_plan if not edit.mid_line)
    stays = [pair for pair in itertools.pairwise(long_plan) if not pair[1].new_file]
    assert all(a.line.path == b.line.path for a, b in stays)
    distances = [abs(b.line.row - a.line.row) for a, b in stays]
    assert abs(statistics.median(distances) - profile.move_lines) <= 2
    # one move a burst: about two a minute here, all but the file changes within a file
    assert 1.0 < len(long_plan) / minutes < 4.0
    changes = [edit for edit in long_plan[1:] if edit.new_file]
    assert all(
        edit.line.path != before.line.path
        for before, edit in itertools.pairwise(long_plan)
        if edit.new_file
    )
    assert math.isclose(minutes / len(changes), profile.file_minutes, rel_tol=0.25)


def test_the_plan_takes_the_published_share_of_shown_suggestions(long_plan: list[Edit]) -> None:
    takes = [take for edit in long_plan for take in edit.takes]
    # Copilot's acceptance rate, 27% (Ziegler et al. 2022)
    assert math.isclose(sum(takes) / len(takes), 0.27, abs_tol=0.01)
    assert all(len(edit.takes) == len(edit.typed) == len(edit.gaps_s) for edit in long_plan)


def test_the_plan_is_seeded_and_deaf_to_what_the_server_does(tmp_path: Path) -> None:
    lines = lines_worth_typing(make_project(tmp_path))

    def edits(seed: int, react: bool) -> list[tuple[int, int, int, float]]:
        session = DeveloperSession(lines, seed)
        found = []
        for edit in session.next_edits():
            if react:  # reaction times drawn while typing leave the plan as it was
                session.accept_delay_s()
            found.append((edit.line.row, edit.start, edit.end, edit.pause_s))
            if len(found) == 30:
                return found
        return found

    assert edits(1, react=False) == edits(1, react=True)
    assert edits(1, react=False) != edits(2, react=False)


def test_the_developer_profile_takes_no_typist_options(tmp_path: Path) -> None:
    refused = run_bench(
        "run", str(make_project(tmp_path)), "--profile", "developer", "--speed", "2",
        "--backend-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--speed and --lines-per-visit are the typist's" in refused.stderr


def first_edit_that_takes(lines: list[LineToType]) -> tuple[int, Edit]:
    """A seed whose first user starts with a short pause, then a line's end to type, and
    takes the first suggestion shown: a short run then sees all three."""
    for seed in range(10_000):
        edit = next(DeveloperSession(lines, user_seed(seed, 0)).next_edits())
        if (
            1.2 <= edit.pause_s <= 4
            and not edit.mid_line
            and len(edit.typed) >= 8
            and edit.typing_s <= 10
            and edit.takes[0]
        ):
            return seed, edit
    raise AssertionError("no such seed")


@pytest.mark.timeout(300)
def test_a_developer_run_types_pauses_and_takes_a_suggestion(
    fake: FakeBackend, tmp_path: Path
) -> None:
    root = answered_project(fake, tmp_path / "project")
    seed, edit = first_edit_that_takes(lines_worth_typing(root))
    out = tmp_path / "results"
    finished = run_bench(
        "run", str(root), "--backend-url", fake.url, "--users", "1", "--profile", "developer",
        "--seed", str(seed), "--step-seconds", f"{edit.pause_s + edit.typing_s + 4:.1f}",
        "--warmup-seconds", "0", "--floor-prompts", "0", "--out", str(out),
        "--settings", json.dumps(BENCH_SETTINGS),
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["profile"] == "developer" and results["failures"] == []
    assert results["developerProfile"]["accept_share"] == 0.27
    (step,) = results["steps"]
    assert step["keys"] > 0 and step["outcomes"].get("answered", 0) > 0
    assert step["shown"] >= 1 and step["accepted"] >= 1  # the first suggestion shown: Tab
    assert step["pauses"] >= 1 and step["pauseSeconds"] > 0  # after the edit: reading
    assert step["edits"] >= 1
    assert step["keys"] < len(edit.typed)  # Tab typed the rest of the line
    assert "developers:" in finished.stdout and "shown suggestions taken" in finished.stdout
