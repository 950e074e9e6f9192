"""Project cache on a large workspace: cold index, warm start, memory, store size, the
"related files for the active file" query, outlines on demand and single-file updates.

    benchmarks/cache/make_big_workspace.sh /tmp/bigws       # stdlib + 32 PyPI sdists
    python benchmarks/cache/cache_bench.py /tmp/bigws

Cold and warm runs are separate `headstart index` processes, so their time includes
start-up and their peak RSS is their own (worker processes included: the largest one).
In the same run, a scan-and-hash pass (no parsing) is the baseline the cold index is
compared with, and the load average before and after says how busy the machine was.

Updates are measured the way the server makes them: editor buffers (`persist=False`) of
random mid-size Python files, then one file created and deleted on disk (and gone again
when the benchmark ends).
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cache.fingerprint import digest  # noqa: E402
from cache.index import ProjectIndex  # noqa: E402
from cache.scan import scan  # noqa: E402
from server.completion.trees import DocumentTrees  # noqa: E402
from server.metrics import percentile  # noqa: E402


def timed_index(workspace: Path, cache: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and summary line of one `headstart index` process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "index", str(workspace), "--cache-dir", str(cache)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    summary = process.stdout.read().strip()
    _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS
    seconds = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"headstart index failed ({status}): {summary}")
    return seconds, usage.ru_maxrss / 1024, summary.split(" at ")[0]


def scan_and_hash(workspace: Path) -> tuple[float, int]:
    started = time.perf_counter()
    files = 0
    for file in scan(workspace):
        digest(file.abs_path.read_bytes())
        files += 1
    return time.perf_counter() - started, files


def milliseconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def spread(values: list[float]) -> str:
    return f"p50 {statistics.median(values):.2f} ms, p99 {percentile(values, 99):.2f} ms"


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def refresh_after_a_key(
    index: ProjectIndex, workspace: Path, sample: list[str]
) -> tuple[list[float], list[float]]:
    """`update_file` for a key typed in an open buffer, as the server refreshes it after a
    pause in typing (on its event loop, so the next key waits for it): parsing the whole
    file again, then outlining the tree the server keeps for the open document, re-parsed
    incrementally (`DocumentTrees`); the two in turns over the same files."""
    trees = DocumentTrees()
    update = functools.partial(index.update_file, persist=False)
    whole, kept = [], []
    for path in sample:
        text = (workspace / path).read_bytes().decode("utf-8", "replace")
        uri = f"file:///{path}"
        trees.tree(uri, text, "python")  # the document opened
        middle = text.find("\n", len(text) // 2) + 1
        typed = text[:middle] + "x" + text[middle:]
        whole.append(milliseconds(functools.partial(update, path, typed.encode())))
        typed = text[:middle] + "xy" + text[middle:]  # another key: the index sees a change
        tree = functools.partial(trees.kept, uri, typed)
        kept.append(milliseconds(functools.partial(update, path, typed.encode(), parsed=tree)))
        trees.forget(uri)
    return whole, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument(
        "--max-kb", type=int, default=40, help="the largest files sampled for outlines and updates"
    )
    args = parser.parse_args()
    rng = random.Random(7)
    before = load()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        baseline_s, files = scan_and_hash(args.workspace)
        cold_s, cold_mb, cold_line = timed_index(args.workspace, cache)
        warm_s, warm_mb, warm_line = timed_index(args.workspace, cache)

        index = ProjectIndex(args.workspace, cache_dir=cache)
        index.build()
        paths = sorted(index.records)
        related = [
            milliseconds(lambda: index.related(rng.choice(paths))) for _ in range(args.queries)
        ]

        python = [
            p
            for p in paths
            if p.endswith(".py") and 2_000 <= index.records[p].size <= args.max_kb * 1_000
        ]
        sample = rng.sample(python, min(args.updates, len(python)))
        parsed = [milliseconds(lambda p=p: index.outline(p)) for p in sample]  # made now
        cached = [milliseconds(lambda p=p: index.outline(p)) for p in sample[-50:]]  # LRU
        first_update = milliseconds(
            lambda: index.update_file(sample[0], (args.workspace / sample[0]).read_bytes() + b"\n")
        )
        updates = []
        for path in sample:
            data = (
                args.workspace / path
            ).read_bytes() + b"\nimport json\n\ndef added() -> None: ...\n"
            updates.append(
                milliseconds(lambda p=path, d=data: index.update_file(p, d, persist=False))
            )
        refresh_whole, refresh_kept = refresh_after_a_key(index, args.workspace, sample)
        for path in sample:  # the disk wins again
            index.update_file(path)
        created = args.workspace / Path(sample[0]).parent / "_headstart_bench_new.py"
        relative = created.relative_to(args.workspace).as_posix()
        try:
            created.write_text("import os\n\ndef new() -> None: ...\n")
            create_ms = milliseconds(lambda: index.update_file(relative))
            created.unlink()
            delete_ms = milliseconds(lambda: index.update_file(relative))
            created.write_text("import os\n\ndef new() -> None: ...\n")
            create_again_ms = milliseconds(lambda: index.update_file(relative))
        finally:
            created.unlink(missing_ok=True)
            index.remove_file(relative)
        index.close()  # saves the outlines made on demand

        index = ProjectIndex(args.workspace, cache_dir=cache)
        index.build()
        stored = [milliseconds(lambda p=p: index.outline(p)) for p in sample]
        index.close()
    after = load()

    print(f"workspace {args.workspace}: {files} indexable files; {before} before, {after} after")
    print(f"cold index:  {cold_s:6.2f} s, peak RSS {cold_mb:6.0f} MB   ({cold_line})")
    print(f"warm start:  {warm_s:6.2f} s, peak RSS {warm_mb:6.0f} MB   ({warm_line})")
    print(
        f"baseline scan + read + hash, no parsing: {baseline_s:.2f} s "
        f"(cold index = {cold_s / baseline_s:.1f}x, warm start = {warm_s / baseline_s:.1f}x)"
    )
    print(f"related files query ({args.queries} random files, top 20): {spread(related)}")
    print(
        f"outline() of {len(sample)} Python files of 2-{args.max_kb} KB: made on first use "
        f"{spread(parsed)}; "
        f"from the LRU {spread(cached)}; from the store in the next session {spread(stored)}"
    )
    print(
        f"update_file, editor buffer of one of those files (persist=False): {spread(updates)}; "
        f"the first update after start {first_update:.1f} ms (builds the resolver)"
    )
    print(
        f"update_file, one key typed in an open buffer of one of those files: parsing it "
        f"again {spread(refresh_whole)}; outlining the open document's kept tree "
        f"{spread(refresh_kept)}"
    )
    print(
        f"update_file, a new file on disk {create_ms:.1f} ms (the first one builds the import "
        f"token index), deleted {delete_ms:.1f} ms, created again {create_again_ms:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
