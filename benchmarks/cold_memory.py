"""How much of a build's time is cold memory: one timed build per file, three ways.

    python benchmarks/cold_memory.py /tmp/bigws --files 600 --seed 7

Each sampled file is opened as `context_bench.py` opens it (cache queue activated,
`ContextBuilder.prepare`, the document parsed); then one build at a random cursor is timed:

- first:   right after that, as a file's first build;
- warm:    after one untimed build at another cursor of the file (its memos and the CPU
           caches warm);
- flushed: after that untimed build and then a read of 64 MB (the memos warm, the CPU
           caches not).

Files take the three ways in turn, so each way gets a third of them. Where "flushed" is as
slow as "first", a first build is slow for the memory it touches, not for memos missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from context_ab import sampled_files  # noqa: E402
from context_bench import python_files  # noqa: E402

from cache.index import ProjectIndex  # noqa: E402
from cache.queue import FileQueue  # noqa: E402
from server.completion.context import Budget, ContextBuilder  # noqa: E402
from server.completion.trees import DocumentTrees  # noqa: E402
from server.metrics import percentile  # noqa: E402

WAYS = ("first", "warm", "flushed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workspace", nargs="?", default="/tmp/bigws", type=Path)
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    index = ProjectIndex(args.workspace)
    index.build()
    queue = FileQueue(index)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    trees = DocumentTrees()
    budget = Budget()
    other_memory = np.ones(8 << 20)  # 64 MB, more than the CPU caches hold
    rng = random.Random(args.seed)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for number, (path, text) in enumerate(sampled_files(index.root, python_files(index), rng)):
        if number >= args.files:
            break
        way = WAYS[number % len(WAYS)]
        queue.activate(path)
        builder.prepare(path)
        trees.forget("open")
        trees.tree("open", text, "python")
        tree = trees.current("open", text, "python")
        timed, other = rng.randrange(len(text) + 1), rng.randrange(len(text) + 1)
        if way != "first":
            builder.build(path, text, other, "python", budget, tree=tree)
        if way == "flushed":
            other_memory.sum()
        started = time.perf_counter()
        builder.build(path, text, timed, "python", budget, tree=tree)
        times[way].append((time.perf_counter() - started) * 1000)
    index.close()
    for way, values in times.items():
        print(
            f"{way:8} {len(values)} builds: p50 {percentile(values, 50):.2f} ms, "
            f"p90 {percentile(values, 90):.2f} ms, p99 {percentile(values, 99):.2f} ms"
        )


if __name__ == "__main__":
    main()
