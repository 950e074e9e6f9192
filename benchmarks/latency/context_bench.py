"""Context building on a large workspace: time per build, and prompt-prefix stability.

    benchmarks/cache/make_big_workspace.sh /tmp/bigws       # stdlib + 32 PyPI sdists, once
    python benchmarks/latency/context_bench.py /tmp/bigws

1. Build time: random cursor positions in random Python files. The cache queue is
   activated for each file first, as the server does when a document is opened (not
   timed), and so is `ContextBuilder.prepare` (outlines parsed, imported names resolved,
   related files and definitions rendered), and the document is parsed; then
   `ContextBuilder.build` is timed at several positions of the file, with the
   document's tree looked up as the server does (`DocumentTrees.current`). The first
   build in a file still finds what no import names (local types, calls' return types);
   the others are what moving the cursor costs. Target: p99 <= 5 ms.
2. Prefix stability: a real function's body is deleted and retyped character by
   character; at every keystroke (a newline brings its indentation, as editors auto-indent) the
   context is built and rendered as a Qwen2.5-Coder repo-level FIM
   prompt, and the longest common prefix with the previous keystroke's prompt is divided
   by the prompt's length (characters, and chars/4 tokens). Target: >= 90% on average.

Also timed: the cursor analysis alone on files of ~2,000 lines, without the document's tree
(as hovers and semantic tokens run it). An early sub-target put its p99 at 2 ms; it
measures 3-4 ms. No issue sets it: the build, which runs it with the tree, is held to 5 ms.

The machine's load (`os.getloadavg`) is printed: timings on a shared CPU move with it.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from context_ab import sampled_files  # noqa: E402

from cache.index import ProjectIndex  # noqa: E402
from cache.queue import FileQueue  # noqa: E402
from server.completion.context import Budget, Context, ContextBuilder, estimate_tokens  # noqa: E402
from server.completion.cursor import analyse  # noqa: E402
from server.completion.trees import DocumentTrees  # noqa: E402
from server.metrics import percentile  # noqa: E402


def qwen_prompt(repo: str, path: str, context: Context) -> str:
    """Qwen2.5-Coder's repository-level FIM format, as the template module renders it."""
    parts = [f"<|repo_name|>{repo}\n"]
    parts.extend(f"<|file_sep|>{p}\n{text}" for p, text in context.files())
    parts.append(
        f"<|file_sep|>{path}\n<|fim_prefix|>{context.prefix}"
        f"<|fim_suffix|>{context.suffix}<|fim_middle|>"
    )
    return "".join(parts)


def common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # bisection on slices: C-speed comparisons
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def python_files(index: ProjectIndex, minimum: int = 400) -> list[str]:
    return sorted(
        path
        for path, record in index.records.items()
        if record.language == "python" and record.size >= minimum
    )


def time_cursor(index: ProjectIndex, files: list[str], samples: int, seed: int) -> None:
    """`server.completion.cursor.analyse` alone on a file of about 2,000 lines, without its tree."""
    sized = []
    for path in files:
        record = index.records[path]
        if 50_000 <= record.size <= 120_000:
            text = (index.root / path).read_text(encoding="utf-8", errors="replace")
            if 1800 <= text.count("\n") <= 2200:
                sized.append((path, text))
                if len(sized) == 5:
                    break
    if not sized:
        return
    rng = random.Random(seed)
    times = []
    for _ in range(samples):
        path, text = rng.choice(sized)
        offset = rng.randrange(len(text) + 1)
        started = time.perf_counter()
        analyse(text, offset, "python")
        times.append((time.perf_counter() - started) * 1000)
    print(f"cursor analysis on {len(sized)} files of ~2,000 lines, {samples} cursors ({load()}):")
    print(
        f"  p50 {percentile(times, 50):.2f} ms   p99 {percentile(times, 99):.2f} ms"
        f"   max {max(times):.2f} ms   ({', '.join(p for p, _ in sized[:2])}, ...)"
    )


def time_builds(
    index: ProjectIndex, files: list[str], budget: Budget, samples: int, per_file: int, seed: int
) -> None:
    rng = random.Random(seed)
    queue = FileQueue(index)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    trees = DocumentTrees()
    first: list[float] = []
    typing: list[float] = []
    snippets = 0
    for path, text in sampled_files(index.root, files, rng):
        if len(first) + len(typing) >= samples:
            break
        # As the server does when a document opens, off the request path: activate the
        # cache queue, prepare the builder, parse the document.
        queue.activate(path)
        builder.prepare(path)
        trees.forget("open")
        trees.tree("open", text, "python")
        for number in range(per_file):
            offset = rng.randrange(len(text) + 1)
            started = time.perf_counter()
            tree = trees.current("open", text, "python")
            context = builder.build(path, text, offset, "python", budget, tree=tree)
            elapsed = (time.perf_counter() - started) * 1000
            (first if number == 0 else typing).append(elapsed)
            snippets += len(context.snippets)
    every = first + typing
    print(f"build time over {len(every)} cursors in {len(first)} files ({load()}):")
    for label, values in (("all", every), ("first in a file", first), ("typing", typing)):
        print(
            f"  {label:16} p50 {percentile(values, 50):6.2f} ms   "
            f"p99 {percentile(values, 99):6.2f} ms   max {max(values):6.2f} ms"
        )
    print(f"  snippets per context: {snippets / len(every):.1f}")


def pick_function(index: ProjectIndex, files: list[str], seed: int) -> tuple[str, str, int, int]:
    """A random function of 8-30 lines in a random file with project dependencies:
    (path, text, body start offset, body end offset)."""
    rng = random.Random(seed)
    candidates = [p for p in files if index.graph.imports(p)]
    rng.shuffle(candidates)
    for path in candidates:
        text = (index.root / path).read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = text.split("\n")
        functions = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno is not None
            and 8 <= node.end_lineno - node.lineno <= 30
            and node.body[0].lineno > node.lineno
        ]
        if functions:
            node = rng.choice(functions)
            assert node.end_lineno is not None
            start = sum(len(line) + 1 for line in lines[: node.body[0].lineno - 1])
            end = sum(len(line) + 1 for line in lines[: node.end_lineno])
            return path, text, start, end
    raise SystemExit("no function to retype")


def keystrokes(body: str) -> list[int]:
    """How much of `body` is typed after each keystroke: one character at a time, except
    that a newline brings the next line's indentation with it, as editors auto-indent."""
    typed, marks = 0, [0]
    while typed < len(body):
        typed += 1
        if body[typed - 1] == "\n":
            while typed < len(body) and body[typed] in " \t":
                typed += 1
        marks.append(typed)
    return marks


def replay_typing(
    index: ProjectIndex, files: list[str], budget: Budget, seed: int, repo: str
) -> tuple[list[float], list[float]]:
    """One typing session; its build times (ms) and shared-prefix ratios."""
    path, text, start, end = pick_function(index, files, seed)
    body = text[start:end]
    queue = FileQueue(index)
    queue.activate(path)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    builder.prepare(path)
    before, after = text[:start], text[end:]
    previous = ""
    ratios: list[float] = []
    token_ratios: list[float] = []
    times: list[float] = []
    sets_changed = 0
    previous_set: tuple[tuple[str, str], ...] = ()
    for typed in keystrokes(body):
        current = before + body[:typed] + after
        started = time.perf_counter()
        context = builder.build(path, current, start + typed, "python", budget)
        times.append((time.perf_counter() - started) * 1000)
        prompt = qwen_prompt(repo, path, context)
        chosen = tuple((s.path, s.name) for s in context.snippets)
        if previous:
            shared = common_prefix(previous, prompt)
            ratios.append(shared / len(prompt))
            token_ratios.append(estimate_tokens(prompt[:shared]) / estimate_tokens(prompt))
            sets_changed += chosen != previous_set
        previous, previous_set = prompt, chosen
    first_line = body.strip().split("\n")[0][:60]
    print(f"typing session: retyped {len(body)} characters of {path} ({first_line!r}...)")
    print(
        f"  shared prompt prefix between keystrokes: mean {100 * sum(ratios) / len(ratios):.1f}%"
        f" of characters, {100 * sum(token_ratios) / len(token_ratios):.1f}% of chars/4 tokens;"
        f" p10 {100 * percentile(ratios, 10):.1f}%, min {100 * min(ratios):.1f}%"
    )
    print(
        f"  snippet set changed on {sets_changed} of {len(ratios)} keystrokes;"
        f" build p50 {percentile(times, 50):.2f} ms, p99 {percentile(times, 99):.2f} ms"
    )
    print(f"  last prompt: {len(previous)} characters, {len(previous_set)} snippets")
    return times, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workspace", nargs="?", default="/tmp/bigws", type=Path)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=8, help="typing sessions to replay")
    parser.add_argument("--total", type=int, default=2048, help="token budget")
    parser.add_argument(
        "--similar-share",
        type=float,
        default=Budget().similar_share,
        help="share of similar-code chunks (0: off, as completion.similarCodeShare 0)",
    )
    parser.add_argument(
        "--imports-share",
        type=float,
        default=Budget().head_share,
        help="share of the current file's imports when the prefix is cut (0: off, as "
        "completion.importsShare 0)",
    )
    args = parser.parse_args()

    started = time.perf_counter()
    index = ProjectIndex(args.workspace)
    summary = index.build()
    print(
        f"index: {summary.files} files in {time.perf_counter() - started:.1f} s "
        f"({summary.reused} reused from the store)"
    )
    budget = Budget(
        total=args.total, similar_share=args.similar_share, head_share=args.imports_share
    )
    files = python_files(index)
    time_cursor(index, files, args.samples, args.seed)
    time_builds(index, files, budget, args.samples, args.per_file, args.seed)
    times: list[float] = []
    ratios: list[float] = []
    for session in range(args.sessions):
        more_times, more_ratios = replay_typing(
            index, files, budget, args.seed + session, args.workspace.name
        )
        times += more_times
        ratios += more_ratios
    if times:
        print(
            f"all {args.sessions} typing sessions, {len(times)} keystrokes: build p50"
            f" {percentile(times, 50):.2f} ms, p99 {percentile(times, 99):.2f} ms; shared"
            f" prompt prefix mean {100 * sum(ratios) / len(ratios):.1f}%"
        )
    print(load())
    index.close()


if __name__ == "__main__":
    main()
