"""Hover hints and semantic tokens on a large workspace: the server's time per request.

    benchmarks/cache/make_big_workspace.sh /tmp/bigws       # stdlib + 32 PyPI sdists, once
    python benchmarks/latency/hover_bench.py /tmp/bigws

1. Hover (target p99 <= 5 ms; wall time, and the thread's CPU time, which a machine
   shared with other work does not inflate): random Python files of the workspace are opened as the
   server opens them (the cache queue activated, `ContextBuilder.prepare` run: not timed),
   then hovers at random identifiers of each file are timed as the handler runs them:
   the position converted to an offset (pygls' TextDocument, UTF-16), the name resolved
   (`server.features.hover.hover_at`: cursor analysis, import-graph resolution, the completion
   context's memory), the markdown rendered and the identifier's range converted back.
   Reported for every hover and for those that found a definition in another file.
2. Semantic tokens on files of about 2,000 lines: a first request (the whole parse, the
   walk, the project's names, the encoding), and a request after a one-character edit (an
   incremental re-parse, then the same walk), as `textDocument/semanticTokens/full` and
   `/full/delta` run them.

The machine's load (`os.getloadavg`) is printed: timings on a shared CPU move with it.
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from context_bench import load, python_files  # noqa: E402  (beside this script)
from lsprotocol import types  # noqa: E402
from pygls.workspace import TextDocument  # noqa: E402

from cache.index import ProjectIndex  # noqa: E402
from cache.paths import path_to_uri  # noqa: E402
from cache.queue import FileQueue  # noqa: E402
from server.completion.context import ContextBuilder  # noqa: E402
from server.completion.trees import DocumentTrees  # noqa: E402
from server.features.hover import hover_at, render  # noqa: E402
from server.features.semantic_tokens.document import DocumentTokens  # noqa: E402
from server.features.semantic_tokens.encoding import Columns, delta, encode  # noqa: E402
from server.features.semantic_tokens.legend import FULL_LEGEND  # noqa: E402
from server.features.semantic_tokens.project import project_names  # noqa: E402
from server.metrics import percentile  # noqa: E402

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def summary(label: str, values: list[float]) -> str:
    return (
        f"  {label:22} n={len(values):5}  p50 {percentile(values, 50):6.3f} ms   "
        f"p99 {percentile(values, 99):6.3f} ms   max {max(values):7.3f} ms"
    )


def time_hovers(
    index: ProjectIndex, files: list[str], samples: int, per_file: int, seed: int
) -> None:
    rng = random.Random(seed)
    queue = FileQueue(index)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    every: list[float] = []
    found: list[float] = []
    first: list[float] = []
    cpu: list[float] = []
    while len(every) < samples:
        path = rng.choice(files)
        try:
            text = (index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        names = list(IDENTIFIER.finditer(text))
        if not names:
            continue
        queue.activate(path)
        builder.prepare(path)  # as the server does when the document is opened
        document = TextDocument(path_to_uri(index.root / path), text)
        for number in range(per_file):
            match = rng.choice(names)
            offset = rng.randrange(match.start(), match.end() + 1)
            position = document.client_position_at_offset(offset)
            started, started_cpu = time.perf_counter(), time.thread_time()
            at = document.offset_at_position(position)
            info = hover_at(builder, path, text, at, "python")
            if info is not None:
                link = f"{path_to_uri(index.root / info.path)}#L1"
                render(info, "python", True, link)
                types.Range(
                    start=document.client_position_at_offset(info.start),
                    end=document.client_position_at_offset(info.end),
                )
            elapsed = (time.perf_counter() - started) * 1000
            cpu.append((time.thread_time() - started_cpu) * 1000)
            every.append(elapsed)
            if number == 0:
                first.append(elapsed)
            if info is not None:
                found.append(elapsed)
    files_seen = len(first)
    print(f"hover over {len(every)} identifiers in {files_seen} files ({load()}):")
    print(summary("every hover", every))
    print(summary("with a definition", found))
    print(summary("first in a file", first))
    print(summary("every hover, CPU time", cpu))


def sized_files(index: ProjectIndex, files: list[str], count: int) -> list[tuple[str, str]]:
    """Python files of 1,800-2,200 lines."""
    out = []
    for path in files:
        record = index.records[path]
        if 50_000 <= record.size <= 140_000:
            text = (index.root / path).read_text(encoding="utf-8", errors="replace")
            if 1800 <= text.count("\n") <= 2200:
                out.append((path, text))
                if len(out) == count:
                    break
    return out


def time_tokens(index: ProjectIndex, files: list[str], rounds: int, seed: int) -> None:
    sized = sized_files(index, files, 5)
    if not sized:
        print("no Python file of about 2,000 lines")
        return
    rng = random.Random(seed)
    queue = FileQueue(index)
    builder = ContextBuilder(index, texts=queue.texts, recent=queue.recent)
    cold: list[float] = []
    edited: list[float] = []
    names_ms: list[float] = []
    cold_cpu: list[float] = []
    edited_cpu: list[float] = []
    counts = []
    for round_ in range(rounds):
        for path, text in sized:
            store = DocumentTokens(DocumentTrees())
            uri = f"file:///{path}#{round_}"
            started, started_cpu = time.perf_counter(), time.thread_time()
            names = project_names(builder, path, text)
            middle = time.perf_counter()
            tokens = store.tokens(uri, text, "python", names)
            assert tokens is not None
            data = encode(tokens, FULL_LEGEND, Columns(text))
            cold.append((time.perf_counter() - started) * 1000)
            cold_cpu.append((time.thread_time() - started_cpu) * 1000)
            names_ms.append((middle - started) * 1000)
            counts.append(len(tokens))
            offset = rng.randrange(len(text))
            changed = text[:offset] + "x" + text[offset:]
            started, started_cpu = time.perf_counter(), time.thread_time()
            names = project_names(builder, path, changed)
            tokens = store.tokens(uri, changed, "python", names)
            assert tokens is not None
            delta(data, encode(tokens, FULL_LEGEND, Columns(changed)))
            edited.append((time.perf_counter() - started) * 1000)
            edited_cpu.append((time.thread_time() - started_cpu) * 1000)
    lines = sum(text.count("\n") for _, text in sized) // len(sized)
    print(
        f"semantic tokens on {len(sized)} files of ~{lines} lines, ~{sum(counts) // len(counts)} "
        f"tokens each ({', '.join(p for p, _ in sized[:2])}, ...; {load()}):"
    )
    print(summary("first request", cold))
    print(summary("after a 1-char edit", edited))
    print(summary("  of which project names", names_ms))
    print(summary("first request, CPU", cold_cpu))
    print(summary("after an edit, CPU", edited_cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workspace", nargs="?", default="/tmp/bigws", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--per-file", type=int, default=20)
    parser.add_argument("--token-rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    index = ProjectIndex(args.workspace, cache_dir=args.cache_dir)
    built = index.build()
    print(
        f"index: {built.files} files in {time.perf_counter() - started:.1f} s "
        f"({built.reused} reused from the store)"
    )
    gc.freeze()  # as the server does once the index is built (server.workspace.project)
    files = python_files(index)
    time_hovers(index, files, args.samples, args.per_file, args.seed)
    time_tokens(index, files, args.token_rounds, args.seed)
    print(load())
    index.close()


if __name__ == "__main__":
    main()
