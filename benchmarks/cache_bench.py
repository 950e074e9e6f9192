"""Project cache on a large workspace: cold index, warm start, memory, store size, and the
"related files for the active file" query.

    benchmarks/make_big_workspace.sh /tmp/bigws       # stdlib + 32 PyPI sdists
    python benchmarks/cache_bench.py /tmp/bigws

Cold and warm runs are separate `headstart index` processes, so their time includes
start-up and their peak RSS is their own. In the same run, a scan-and-hash pass (no
parsing) is the baseline the cold index is compared with.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cache.fingerprint import digest  # noqa: E402
from cache.index import ProjectIndex  # noqa: E402
from cache.scan import scan  # noqa: E402
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
    return seconds, usage.ru_maxrss / 1024, summary


def scan_and_hash(workspace: Path) -> tuple[float, int]:
    started = time.perf_counter()
    files = 0
    for file in scan(workspace):
        digest(file.abs_path.read_bytes())
        files += 1
    return time.perf_counter() - started, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--queries", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        baseline_s, files = scan_and_hash(args.workspace)
        cold_s, cold_mb, cold_line = timed_index(args.workspace, cache)
        warm_s, warm_mb, warm_line = timed_index(args.workspace, cache)

        index = ProjectIndex(args.workspace, cache_dir=cache)
        index.build()
        paths = sorted(index.records)
        rng = random.Random(7)
        latencies = []
        for path in (rng.choice(paths) for _ in range(args.queries)):
            started = time.perf_counter()
            index.related(path, limit=20)
            latencies.append((time.perf_counter() - started) * 1000)
        index.close()

    print(f"workspace {args.workspace}: {files} indexable files")
    print(f"cold index:  {cold_s:6.2f} s, peak RSS {cold_mb:6.0f} MB   ({cold_line})")
    print(f"warm start:  {warm_s:6.2f} s, peak RSS {warm_mb:6.0f} MB   ({warm_line})")
    print(
        f"baseline scan + read + hash, no parsing: {baseline_s:.2f} s "
        f"(cold index = {cold_s / baseline_s:.1f}x, warm start = {warm_s / baseline_s:.1f}x)"
    )
    print(
        f"related files query ({args.queries} random files, top 20): "
        f"p50 {statistics.median(latencies):.3f} ms, p99 {percentile(latencies, 99):.3f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
