"""The project store on its own: load (a warm start's read), saves and outline reads, for
the store of this checkout and the store of an older commit, side by side.

    benchmarks/cache/make_big_workspace.sh /tmp/bigws       # stdlib + 32 PyPI sdists
    python benchmarks/cache/store_bench.py /tmp/bigws

Schema 5 (this checkout) keeps records in 256 buckets and reads them with diskcache's public
`get`; schema 4 (`--old-rev`, the last commit before it) kept one entry per file and read
them all with one SQL query against diskcache's private connection (`cache._sql`). The
records and outlines are real: the workspace is indexed once, and `--copies N` repeats its
records under N folder prefixes to stand for a larger workspace. Old and new take turns
in every round, so a busy minute slows both alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cache import store as new_store  # noqa: E402
from cache.index import ProjectIndex  # noqa: E402
from cache.model import FileRecord, Outline  # noqa: E402
from server.metrics import percentile  # noqa: E402

OLD_REV = "7ec6e07"
"""The last commit whose store read its records with a private SQL query (schema 4)."""


def old_store_module(rev: str, folder: Path) -> ModuleType:
    """cache/store.py as it was at `rev`, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{rev}:cache/store.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    path = folder / "old_store.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("old_store", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workspace_records(
    workspace: Path, cache: Path, copies: int, sample: int
) -> tuple[dict[str, FileRecord], list[tuple[str, str, Outline]]]:
    """Every record of the indexed workspace (repeated `copies` times under copy<i>/) and
    the outlines of `sample` random Python files (repeated alike)."""
    index = ProjectIndex(workspace, cache_dir=cache)
    index.build()
    records = dict(index.records)
    python = sorted(path for path in records if path.endswith(".py"))
    outlines = []
    for path in random.Random(7).sample(python, min(sample, len(python))):
        outline = index.outline(path)
        if outline is not None:
            outlines.append((path, records[path].digest, outline))
    index.close()
    if copies <= 1:
        return records, outlines
    prefixed = {
        f"copy{i}/{path}": replace(record, path=f"copy{i}/{path}")
        for i in range(copies)
        for path, record in records.items()
    }
    copied = [(f"copy{i}/{p}", d, o) for i in range(copies) for p, d, o in outlines]
    return prefixed, copied


def milliseconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def spread(values: list[float]) -> str:
    return f"p50 {statistics.median(values):8.2f} ms  p99 {percentile(values, 99):8.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--old-rev", default=OLD_REV, help="the commit of the old store")
    parser.add_argument("--copies", type=int, default=1, help="repeat the records N times")
    parser.add_argument("--loads", type=int, default=30)
    parser.add_argument("--saves", type=int, default=500, help="single-record saves")
    parser.add_argument("--outlines", type=int, default=500, help="outlines saved and read")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stores: dict[str, Any] = {
            f"old ({args.old_rev}, schema 4)": old_store_module(args.old_rev, folder),
            f"new (schema {new_store.SCHEMA_VERSION})": new_store,
        }
        records, outlines = workspace_records(
            args.workspace, folder / "index", args.copies, args.outlines
        )
        opened = {
            name: module.ProjectStore(args.workspace, folder / name.split()[0])
            for name, module in stores.items()
        }
        timings: dict[str, dict[str, list[float]]] = {name: {} for name in stores}

        def timed(name: str, what: str, action: Callable[[], object]) -> None:
            timings[name].setdefault(what, []).append(milliseconds(action))

        for name, store in opened.items():
            timed(name, "save every record at once", partial(store.save, records))
            for start in range(0, len(outlines), 256):  # as the index saves them
                batch = outlines[start : start + 256]
                timed(name, "save 256 outlines", partial(store.save, {}, outlines=batch))
        for _ in range(args.loads):
            for name, store in opened.items():
                timed(name, "load (warm start)", store.load)
        paths = sorted(records)
        for i in range(args.saves):
            path = rng.choice(paths)
            edited = replace(records[path], mtime_ns=records[path].mtime_ns + i + 1)
            for name, store in opened.items():
                timed(name, "save one record", partial(store.save, {path: edited}))
        for path, digest, _ in outlines:
            for name, store in opened.items():
                timed(name, "load one outline", partial(store.load_outline, path, digest))
        for name, store in opened.items():
            loaded = store.load()
            assert len(loaded) == len(records), (name, len(loaded), len(records))
            sizes = store.size_bytes() / 1e6
            store.close()
            timings[name]["store size"] = [sizes]
    print(f"load average {' '.join(f'{value:.2f}' for value in os.getloadavg())} at the end")
    print(
        f"workspace {args.workspace}: {len(records)} records"
        + (f" ({args.copies} copies)" if args.copies > 1 else "")
        + f", {len(outlines)} outlines; {args.loads} loads, {args.saves} single saves"
    )
    for what in timings[next(iter(timings))]:
        for name in stores:
            values = timings[name][what]
            shown = f"{values[0]:.1f} MB" if what == "store size" else spread(values)
            print(f"{what:28} {name:28} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
