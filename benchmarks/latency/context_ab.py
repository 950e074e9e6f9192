"""Context build time of two checkouts, in lockstep: one build of A, one of B, in turn.

    benchmarks/cache/make_big_workspace.sh /tmp/bigws       # once
    git worktree add /tmp/before <commit>             # the baseline
    python benchmarks/latency/context_ab.py /tmp/before . --workspace /tmp/bigws

On a shared machine the same code's timings move by half between minutes (the host's
other tenants), so two benchmark runs one after the other compare the minutes more than
the code. Here each checkout runs in its own process (its own modules and caches), and
the two take turns build by build, so both see the same minutes. The builds are
`latency/context_bench.py`'s: random cursors in random files (`prepare` first, untimed), then
every keystroke of its replayed typing sessions. Printed per checkout and kind: wall and
thread-CPU p50/p90/p99, the median of the per-build ratio B/A, and how many builds
chose a different context (prefix, suffix or snippets) in A and B.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def sampled_files(root: Path, files: list[str], rng: random.Random) -> Iterator[tuple[str, str]]:
    """Random files of `files` (paths under `root`) with their text, without end;
    unreadable and empty ones skipped. (`latency/context_bench.py` samples with it too.)"""
    while True:
        path = rng.choice(files)
        try:
            text = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if text:
            yield path, text


def builds(
    root: Path, workspace: Path, samples: int, sessions: int
) -> Iterator[tuple[str, Callable[[], Any]]]:
    """(kind, build) in the order both checkouts run them, with `root`'s own modules."""
    # benchmarks/latency in this layout, benchmarks/ in a checkout from before it
    sys.path[:0] = [str(root), str(root / "benchmarks" / "latency"), str(root / "benchmarks")]
    import context_bench as bench  # the checkout's own, found through sys.path

    from cache.index import ProjectIndex
    from cache.queue import FileQueue
    from server.completion.context import Budget, ContextBuilder

    index = ProjectIndex(workspace)
    index.build()
    files = bench.python_files(index)
    budget = Budget(total=2048)
    rng = random.Random(1)
    queue = FileQueue(index)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    trees = open_trees()
    done = 0
    for path, text in sampled_files(index.root, files, rng):
        if done >= samples:
            break
        queue.activate(path)
        builder.prepare(path)
        if trees is not None:
            trees.forget("open")
            trees.tree("open", text, "python")  # as the server parses a document it opens
        for _ in range(10):
            offset = rng.randrange(len(text) + 1)
            done += 1
            yield (
                "random",
                lambda p=path, t=text, o=offset: builder.build(
                    p, t, o, "python", budget, **open_tree(trees, t)
                ),
            )
    for seed in range(1, sessions + 1):
        path, text, start, end = bench.pick_function(index, files, seed)
        body = text[start:end]
        session_queue = FileQueue(index)
        session_queue.activate(path)
        session = ContextBuilder(index, texts=session_queue.texts, recent=session_queue.recent)
        session.prepare(path)
        for typed in bench.keystrokes(body):
            current = text[:start] + body[:typed] + text[end:]
            yield (
                "typing",
                lambda c=current, o=start + typed, s=session, p=path: s.build(
                    p, c, o, "python", budget
                ),
            )


def open_trees() -> Any:
    """The checkout's `DocumentTrees`, where its builds read the open document's tree
    (the server passes it on since it parses documents as they open); else None."""
    try:
        from server.completion.trees import DocumentTrees
    except ImportError:
        return None
    return DocumentTrees() if hasattr(DocumentTrees, "current") else None


def open_tree(trees: Any, text: str) -> dict[str, Any]:
    """The `tree` argument of a build of the open document, for a checkout that takes one
    (`open_trees`); none for an older one."""
    return {} if trees is None else {"tree": trees.current("open", text, "python")}


def digest(context: Any) -> str:
    """A hash of what a build chose: its prefix, suffix and snippets."""
    chosen = [(s.path, s.name, s.start_line, s.text) for s in context.snippets]
    return hashlib.blake2b(repr((context.prefix, context.suffix, chosen)).encode()).hexdigest()


def worker(root: Path, workspace: Path, samples: int, sessions: int) -> None:
    """Run one build per line read from stdin; print its kind, wall and CPU ms, and the
    `digest` of its context."""
    steps = builds(root, workspace, samples, sessions)
    print("ready", flush=True)
    for kind, build in steps:
        if not sys.stdin.readline():
            return
        wall, cpu = time.perf_counter(), time.thread_time()
        context = build()
        wall, cpu = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
        print(kind, wall, cpu, digest(context), flush=True)
    print("done", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="the baseline checkout")
    parser.add_argument("b", type=Path, help="the checkout compared with it")
    parser.add_argument("--workspace", type=Path, default=Path("/tmp/bigws"))
    parser.add_argument("--samples", type=int, default=1000, help="random cursors")
    parser.add_argument("--sessions", type=int, default=8, help="typing sessions")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.workspace, args.samples, args.sessions)
        return

    sys.path.insert(0, str(HERE.parents[2]))
    from server.metrics import percentile

    roots = [args.a.resolve(), args.b.resolve()]
    command = [sys.executable, str(HERE), str(roots[0]), str(roots[1])]
    command += ["--workspace", str(args.workspace), "--samples", str(args.samples)]
    command += ["--sessions", str(args.sessions)]
    # Each its own project cache, indexed afresh (untimed): checkouts of two store
    # schemas would otherwise remove each other's.
    caches = tempfile.TemporaryDirectory(prefix="context-ab-")
    workers = [
        subprocess.Popen(
            [*command, "--worker", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "HEADSTART_CACHE_DIR": f"{caches.name}/{side}"},
        )
        for side, root in enumerate(roots)
    ]
    for process in workers:
        if process.stdout is None or process.stdout.readline().strip() != "ready":
            sys.exit(f"a worker did not start: {process.args}")
    times: list[dict[str, list[tuple[float, float]]]] = [{}, {}]
    differ: dict[str, int] = {}
    turn = 0
    running = True
    while running:
        digests = ["", ""]
        for side in (0, 1) if turn % 2 == 0 else (1, 0):  # who goes first alternates
            process = workers[side]
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("go\n")
            process.stdin.flush()
            fields = process.stdout.readline().split()
            if len(fields) != 4:
                running = False
                break
            times[side].setdefault(fields[0], []).append((float(fields[1]), float(fields[2])))
            digests[side] = fields[3]
        if running:
            differ[fields[0]] = differ.get(fields[0], 0) + (digests[0] != digests[1])
        turn += 1
    for process in workers:
        process.kill()
        process.wait()
    caches.cleanup()
    print(f"workspace {args.workspace}; A = {roots[0]}, B = {roots[1]}; builds in lockstep")
    for name, side in (("A", times[0]), ("B", times[1])):
        for kind, measured in side.items():
            wall = [w for w, _ in measured]
            cpu = [c for _, c in measured]
            print(
                f"  {name} {kind:7} {len(measured):5} builds: wall p50 {percentile(wall, 50):5.2f}"
                f" p90 {percentile(wall, 90):5.2f} p99 {percentile(wall, 99):5.2f} ms;"
                f" CPU p50 {percentile(cpu, 50):5.2f} p99 {percentile(cpu, 99):5.2f} ms"
            )
    for kind in times[0]:
        pairs = zip(times[0][kind], times[1].get(kind, []), strict=False)
        ratios = [b[0] / a[0] for a, b in pairs if a[0] > 0]
        print(
            f"  {kind}: B/A per build, median {percentile(ratios, 50):.3f};"
            f" contexts that differ: {differ.get(kind, 0)} of {len(ratios)}"
        )


if __name__ == "__main__":
    main()
