"""The tests' fake model as an oracle (tests/fake_oracle.py) answers a prompt laid out at the
line's start (`completion.promptLayout` lineStart and auto) as it answers the cursor layout:
the typed part after the middle marker is part of what precedes the cursor."""

from __future__ import annotations

from pathlib import Path

from fake_oracle import Oracle


def test_the_oracle_reads_both_layouts(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return compute(items)\n")
    oracle = Oracle(tmp_path, right_share=1.0, wrong="WRONG")
    head = "<|file_sep|>m.py\n<|fim_prefix|>def f():\n"
    cursor = f"{head}    return comp<|fim_suffix|>\n<|fim_middle|>"
    line_start = f"{head}<|fim_suffix|>\n<|fim_middle|>    return comp"

    assert oracle.answer(cursor) == "ute(items)\n"
    assert oracle.answer(line_start) == "ute(items)\n"
