"""How much typing the suggestion cache answers, and how fast, against the fake model.

Replays typing through `headstart serve`: for real lines of real files, the line is cut
after its indentation and retyped key by key, each key a didChange followed by an inline
completion request (round trip = request sent to reply received; the server's own time
per request, handler start to reply, is read from its log). The fake backend
(tests/fake_openai.py) answers every cursor with the real rest of the line, after a fixed
first-token delay and a fixed delay per token, so typing follows what was suggested, as
it does when the model is right. The same replay runs twice in one process, with
`completion.reuseTypedSuggestions` on and then off (the baseline); a reply counts as a
cache hit when the fake saw no request for it.

    python benchmarks/latency/typing_cache_bench.py [--root DIR] [--max-keys 1500] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai import FakeBackend  # noqa: E402

from server.bench.editor_session import EditorSession  # noqa: E402
from server.metrics import percentile  # noqa: E402

SERVER_TIME = re.compile(
    r"inline completion in ([0-9.]+) ms \([^)]*?(, from the suggestion cache)?\)"
)
FIM_PREFIX = "<|fim_prefix|>"
FIM_SUFFIX = "<|fim_suffix|>"


def typing_plan(root: Path, max_keys: int, per_file: int) -> list[tuple[Path, int, int]]:
    """(file, line, column where typing starts) for lines worth retyping, up to max_keys,
    at most per_file lines of each file."""
    plan: list[tuple[Path, int, int]] = []
    keys = 0
    for path in sorted(root.rglob("*.py")):
        taken = 0
        try:
            lines = path.read_text().split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for row, line in enumerate(lines):
            start = len(line) - len(line.lstrip())
            if len(line.strip()) < 12 or line.lstrip().startswith("#") or taken >= per_file:
                continue
            taken += 1
            plan.append((path, row, start))
            keys += len(line) - start
            if keys >= max_keys:
                return plan
    return plan


def rules_for(before: str, line: str, start: int, token_ms: float, first_ms: float) -> list[Any]:
    """One rule per cursor on the line, answering the rest of the real line: its match is
    the line typed so far after the line above (or the prompt's start, on a first line)."""
    above = before.rsplit("\n", 1)[-1] + "\n" if before else FIM_PREFIX
    return [
        {
            "match": f"{above}{line[:column]}{FIM_SUFFIX}",
            "text": line[column:] + "\n",
            "first_delay_ms": first_ms,
            "chunk_delay_ms": token_ms,
        }
        for column in range(start, len(line))
    ]


async def replay(
    root: Path,
    fake: FakeBackend | None,
    plan: list[tuple[Path, int, int]],
    reuse: bool,
    args: Any,
) -> tuple[list[dict[str, Any]], list[tuple[float, bool]]]:
    """Each request's round trip and whether the cache answered it; and the server's own
    time per request (from its log), with whether the cache answered it. Against a real
    backend (no fake), whether the cache answered is read from the server's log."""
    log_file = Path(tempfile.mkdtemp()) / "server.log"
    settings = {
        "backend": {"url": fake.url if fake else args.endpoint},
        "completion": {"reuseTypedSuggestions": reuse},
        "log": {"level": "info", "file": str(log_file)},
    }
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "HEADSTART_CACHE_DIR": tempfile.mkdtemp()}
    records: list[dict[str, Any]] = []
    async with EditorSession(root, settings, server_env=env) as editor:
        await editor.wait_until_indexed(60)
        for path, row, start in plan:
            lines = path.read_text().split("\n")
            target = lines[row]
            lines[row] = target[:start]
            if fake is not None:
                fake.script(
                    rules_for(
                        "\n".join(lines[:row]) if row else "",
                        target,
                        start,
                        args.token_ms,
                        args.first_ms,
                    )
                )
            document = editor.open(path, "\n".join(lines))
            for column in range(start, len(target)):
                if column > start:
                    editor.type(document, row, column - 1, target[column - 1])
                seen = len(fake.events()) if fake else 0
                text, ms = await editor.inline_completion(document, row, column)
                records.append(
                    {
                        "ms": ms,
                        "hit": bool(fake) and len(fake.events()) == seen,
                        "right": text == target[column:],
                    }
                )
            editor.close(document)
            if fake is not None:
                fake.reset()
    server_ms = [
        (float(found.group(1)), bool(found.group(2)))
        for found in SERVER_TIME.finditer(log_file.read_text() if log_file.exists() else "")
    ]
    if fake is None and len(server_ms) == len(records):  # one log line per request
        for record, (_, cached) in zip(records, server_ms, strict=True):
            record["hit"] = cached
    return records, server_ms


def prefix_cache(endpoint: str) -> tuple[float, float]:
    """vLLM's prefix-cache counters (queried tokens, hit tokens) from /metrics."""
    base = endpoint.rstrip("/").removesuffix("/v1")
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as reply:
        body = reply.read().decode()
    totals = {"queries": 0.0, "hits": 0.0}
    for found in re.finditer(
        r"^vllm:prefix_cache_(queries|hits)_total\{[^}]*\} ([0-9.e+]+)$", body, re.M
    ):
        totals[found.group(1)] += float(found.group(2))
    return totals["queries"], totals["hits"]


def line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<34} (none)"
    return (
        f"{name:<34} n {len(values):5d}   p50 {statistics.median(values):7.2f} ms   "
        f"p99 {percentile(values, 99):7.2f} ms"
    )


def report(
    name: str, records: list[dict[str, Any]], server_ms: list[tuple[float, bool]]
) -> list[str]:
    hits = [r["ms"] for r in records if r["hit"]]
    misses = [r["ms"] for r in records if not r["hit"]]
    right = sum(r["right"] for r in records)
    return [
        f"{name}: {len(records)} requests, {len(hits) / len(records):.1%} answered from the "
        f"cache, {right} suggestions equal to the real rest of the line",
        line("  cache hits (no model request)", hits),
        line("  misses (model request)", misses),
        line("  all requests", [r["ms"] for r in records]),
        line("  server time, cache hits", [ms for ms, cached in server_ms if cached]),
        line("  server time, model requests", [ms for ms, cached in server_ms if not cached]),
    ]


async def main_async(args: Any) -> list[str]:
    root = args.root.resolve()
    plan = typing_plan(root, args.max_keys, args.lines_per_file)
    out = [
        f"command: python benchmarks/latency/typing_cache_bench.py {' '.join(sys.argv[1:])}",
        f"workspace: {root}; {len(plan)} lines retyped from their indentation, one key at a time",
        f"fake backend: first token after {args.first_ms} ms, then {args.token_ms} ms per "
        "token (4 characters); it answers the real rest of the line",
        f"load: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start",
    ]
    if args.endpoint:
        out[2] = f"backend: {args.endpoint} (a real model; the typed text is the real line)"
        for name, reuse in (("cache on", True), ("cache off (baseline)", False)):
            before = prefix_cache(args.endpoint)
            started = time.perf_counter()
            records, server_ms = await replay(root, None, plan, reuse, args)
            out += report(name, records, server_ms)
            out.append(f"  replay took {time.perf_counter() - started:.1f} s")
            after = prefix_cache(args.endpoint)
            queries, hits = after[0] - before[0], after[1] - before[1]
            if queries:
                out.append(
                    f"  vLLM prefix cache: {hits:.0f} of {queries:.0f} prompt tokens hit "
                    f"({hits / queries:.1%})"
                )
    else:
        with FakeBackend() as fake:
            for name, reuse in (("cache on", True), ("cache off (baseline)", False)):
                started = time.perf_counter()
                records, server_ms = await replay(root, fake, plan, reuse, args)
                out += report(name, records, server_ms)
                out.append(f"  replay took {time.perf_counter() - started:.1f} s")
    out.append(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT / "examples" / "sample_project")
    parser.add_argument("--max-keys", type=int, default=1500)
    parser.add_argument("--lines-per-file", type=int, default=6)
    parser.add_argument("--first-ms", type=float, default=20.0, help="time to first token")
    parser.add_argument("--token-ms", type=float, default=2.0, help="delay per token")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--endpoint", help="a real backend (vLLM) instead of the fake model")
    args = parser.parse_args()
    out = asyncio.run(main_async(args))
    print("\n".join(out))
    if args.out:
        args.out.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
