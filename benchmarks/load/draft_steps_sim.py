"""How many decode steps a suggestion's first line takes with vLLM's n-gram speculative
decoding (`--speculative-config '{"method": "ngram", ...}'`), without a GPU.

A keystroke's reply waits for its line: the first token comes with the prompt's prefill,
each later one costs a decode step, and under load a decode step shares the GPU with
other users' prefills (tens of ms). The n-gram proposer drafts up to K tokens by finding
the context's last N tokens (the longest N in [MIN, MAX]) earlier in the prompt and
output, and copying what followed their first occurrence; one step then checks the
drafts and keeps the ones that match what the model would have produced, plus one token
of its own. With greedy decoding the output is the same, so the steps a line takes can be
counted from the prompt and the output alone.

Two sources of (prompt, output):

    # the repo-level tasks: prompts as the server builds them (a fake model's /_events
    # after benchmarks/quality/repo_eval.py ran against it), outputs from a real model's results
    python benchmarks/load/draft_steps_sim.py --tokenizer tokenizer.json \\
        --events EVENTS.json --tasks tasks.jsonl --predictions results.jsonl
    # recorded typing (headstart bench run --record DIR): each keystroke's prompt, and
    # the rest of the typed line from the workspace's source as the output (where the
    # model is right)
    python benchmarks/load/draft_steps_sim.py --tokenizer tokenizer.json --traces DIR --source ROOT

Prints the tokens to the line end and the decode steps with no drafts, then, for each
setting, the steps (mean, ratio, p50/p90/p99) and the draft tokens a step checks (the
extra work each step does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from server.metrics import percentiles

SETTINGS = ((2, 1, 3), (2, 2, 4), (4, 1, 3), (4, 2, 4), (4, 3, 5), (6, 2, 4))
"""(K draft tokens, MIN, MAX n-gram length) compared by default."""


class Case(NamedTuple):
    """One request: its prompt and the output tokens up to and with the first newline."""

    prompt: list[int]
    line: list[int]


def propose(context: Sequence[int], k: int, shortest: int, longest: int) -> list[int]:
    """vLLM's n-gram draft (v1/spec_decode/ngram_proposer.py): the longest suffix of
    `context` of `shortest`..`longest` tokens that occurred before, at its first
    occurrence, and up to `k` tokens that followed it; none if no such suffix."""
    size = len(context)
    for n in range(min(longest, size - 1), shortest - 1, -1):
        tail = list(context[size - n :])
        for start in range(size - n):
            if context[start] == tail[0] and list(context[start : start + n]) == tail:
                return list(context[start + n : start + n + k])
    return []


def decode_steps(case: Case, k: int, shortest: int, longest: int) -> tuple[int, int]:
    """(decode steps, draft tokens checked) to produce `case.line` after the prefill's
    first token; k 0 drafts nothing (one token a step)."""
    context = [*case.prompt, case.line[0]]
    produced, steps, checked = 1, 0, 0
    while produced < len(case.line):
        draft = propose(context, k, shortest, longest) if k else []
        kept = 0
        while (
            kept < len(draft)
            and produced + kept < len(case.line)
            and draft[kept] == case.line[produced + kept]
        ):
            kept += 1
        new = min(kept + 1, len(case.line) - produced)
        context += case.line[produced : produced + new]
        produced += new
        steps += 1
        checked += len(draft)
    return steps, checked


def first_line(tokenizer: Tokenizer, text: str) -> list[int]:
    """`text`'s tokens up to and with the first that holds a newline (the server replies
    once the line ends)."""
    ids = tokenizer.encode(text).ids
    for i, token in enumerate(ids):
        if "\n" in tokenizer.decode([token]):
            return ids[: i + 1]
    return ids


def from_eval(tokenizer: Tokenizer, events: Path, tasks: Path, predictions: Path) -> Iterator[Case]:
    """Repo-level tasks: the keystroke prompt the server sent for each task (found by the
    task's text before the cursor) and the model's first line for it."""
    sent = [str(e["prompt"]) for e in json.loads(events.read_text())]
    lines = {}
    for row in map(json.loads, predictions.read_text().splitlines()):
        if row.get("strategy", "headstart") == "headstart":
            lines[row["task_id"]] = row["prediction"]
    for task in map(json.loads, tasks.read_text().splitlines()):
        key = task["prefix"][-150:] + "<|fim_suffix|>"
        prompt = next((p for p in sent if key in p), None)
        if prompt is not None and task["task_id"] in lines:
            yield Case(
                tokenizer.encode(prompt).ids, first_line(tokenizer, lines[task["task_id"]] + "\n")
            )


def from_traces(tokenizer: Tokenizer, traces: Path, source: Path) -> Iterator[Case]:
    """Recorded typing: each keystroke request's prompt, and the rest of the line being
    typed, read from the file in `source` where the lines around the cursor are."""
    for trace in sorted(traces.glob("*.jsonl")):
        for record in map(json.loads, trace.read_text().splitlines()):
            body = record["body"]
            if body.get("priority") != 0 or not isinstance(body["prompt"], list):
                continue
            text = tokenizer.decode(body["prompt"], skip_special_tokens=False)
            rest = typed_rest(text, source)
            if rest:
                yield Case(body["prompt"], first_line(tokenizer, rest + "\n"))


def typed_rest(prompt: str, source: Path) -> str | None:
    """The rest of the cursor's line in the source file, found by the line above the
    cursor, the text typed so far and the line below; None if not found."""
    head, _, fim = prompt.rpartition("<|fim_prefix|>")
    path = head.rsplit("<|file_sep|>", 1)[-1].strip()
    before, _, after = fim.partition("<|fim_suffix|>")
    typed = before.rsplit("\n", 1)[-1]
    above = before.rsplit("\n", 2)[-2] if "\n" in before else None
    below = after.split("\n")[1] if after.startswith("\n") and "\n" in after[1:] else None
    try:
        lines = (source / path).read_text(errors="replace").split("\n")
    except OSError:
        return None
    for i in range(1, len(lines) - 1):
        if lines[i - 1] == above and lines[i].startswith(typed) and below in (None, lines[i + 1]):
            return lines[i][len(typed) :] or None
    return None


def report(cases: Sequence[Case], settings: Iterable[tuple[int, int, int]]) -> list[str]:
    """The table: tokens to the line end, then decode steps per setting."""
    tokens = [len(c.line) for c in cases]
    base = [len(c.line) - 1 for c in cases]
    out = [
        f"{len(cases)} requests; tokens to the line end {_spread(tokens)}",
        f"  no drafts: decode steps mean {statistics.mean(base):.2f} {_spread(base)}",
    ]
    for k, shortest, longest in settings:
        runs = [decode_steps(c, k, shortest, longest) for c in cases]
        steps = [s for s, _ in runs]
        ratio = statistics.mean(steps) / statistics.mean(base) if any(base) else 1.0
        out.append(
            f"  k={k} n={shortest}..{longest}: steps mean {statistics.mean(steps):.2f} "
            f"({ratio:.2f}x) {_spread(steps)}; "
            f"draft tokens checked per step {sum(c for _, c in runs) / max(1, sum(steps)):.2f}"
        )
    return out


def _spread(values: list[int]) -> str:
    """p50, p90 and p99 (nearest rank, as the bench reports them)."""
    p50, p90, p99 = percentiles([float(v) for v in values], [50, 90, 99])
    return f"p50 {p50:.0f} p90 {p90:.0f} p99 {p99:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", required=True, type=Path, help="the model's tokenizer.json")
    parser.add_argument("--events", type=Path, help="a fake model's GET /_events (JSON)")
    parser.add_argument("--tasks", type=Path, help="the task set's tasks.jsonl")
    parser.add_argument("--predictions", type=Path, help="a real model's repo_eval results")
    parser.add_argument("--traces", type=Path, help="a `headstart bench run --record` folder")
    parser.add_argument("--source", type=Path, help="the workspace the traces typed in")
    args = parser.parse_args(argv)
    tokenizer = Tokenizer.from_file(str(args.tokenizer))
    if args.traces and args.source:
        cases = list(from_traces(tokenizer, args.traces, args.source))
    elif args.events and args.tasks and args.predictions:
        cases = list(from_eval(tokenizer, args.events, args.tasks, args.predictions))
    else:
        parser.error("give --traces and --source, or --events, --tasks and --predictions")
    if not cases:
        print("no requests matched", file=sys.stderr)
        return 1
    print("\n".join(report(cases, SETTINGS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
