"""benchmarks/load/draft_steps_sim.py: vLLM's n-gram drafts, counted in decode steps."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from conftest import load_benchmark


def simulator() -> ModuleType:
    return load_benchmark("load/draft_steps_sim")


def test_the_draft_follows_the_longest_match_at_its_first_occurrence() -> None:
    sim = simulator()
    assert sim.propose([1, 2, 3, 4, 1, 2, 3], 2, 2, 3) == [4, 1]  # [1, 2, 3] matched
    assert sim.propose([5, 1, 2, 7, 1, 2, 8, 1, 2], 1, 2, 2) == [7]  # first, not latest
    assert sim.propose([1, 2, 3, 4], 2, 1, 3) == []  # 4 never came before
    assert sim.propose([1, 2, 9, 2], 3, 2, 3) == []  # only a 1-gram matches: too short
    assert sim.propose([1, 2, 9, 2], 3, 1, 3) == [9, 2]  # fewer than k follow


def test_a_line_copied_from_the_prompt_takes_fewer_steps() -> None:
    sim = simulator()
    copied = sim.Case(prompt=[9, 1, 2, 3, 4, 5, 6], line=[1, 2, 3, 4, 5, 6])
    assert sim.decode_steps(copied, 0, 1, 3) == (5, 0)  # one token a step after the first
    # [1] is found at once: 4 drafts all kept, plus the step's own token
    assert sim.decode_steps(copied, 4, 1, 3) == (1, 4)
    fresh = sim.Case(prompt=[9, 8, 7], line=[1, 2, 3])
    assert sim.decode_steps(fresh, 4, 1, 3) == (2, 0)  # nothing to copy: no gain


def test_the_typed_lines_rest_is_read_from_the_source(tmp_path: Path) -> None:
    sim = simulator()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f(x):\n    y = x + 1\n    return y\n")
    prompt = (
        "<|repo_name|>pkg\n<|file_sep|>pkg/mod.py\n"
        "<|fim_prefix|>def f(x):\n    y = x<|fim_suffix|>\n    return y\n<|fim_middle|>"
    )
    assert sim.typed_rest(prompt, tmp_path) == " + 1"
    elsewhere = prompt.replace("return y", "return z")  # the line below does not match
    assert sim.typed_rest(elsewhere, tmp_path) is None
