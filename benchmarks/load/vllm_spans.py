#!/usr/bin/env python3
"""Where a request's time went inside vLLM, window by window, from its own trace spans.

vLLM started with `--otlp-traces-endpoint` writes one `llm_request` span per request it
finished (none for a request the client aborted), with its time in the queue, in prefill
and in decode. Collected by tests/otlp_receiver.py (one JSON span a line), this prints, for
each window of the run, how many requests finished and the p50 / p99 of each stage, so a
slow step's keystrokes can be told apart: waiting for the engine (queue), or the engine
being slow at them (prefill, decode).

    python benchmarks/load/vllm_spans.py spans.jsonl[.gz] [--window 20] [--csv out.csv.gz]

`--csv` keeps only what the table is made of (one row a request), small enough to keep
beside the results (docs/results/bench/h100-7d9eea9/vllm_requests.csv.gz); the script reads
that file back as well.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from server.metrics import percentiles

FIELDS = {
    "queue": "gen_ai.latency.time_in_queue",
    "ttft": "gen_ai.latency.time_to_first_token",
    "prefill": "gen_ai.latency.time_in_model_prefill",
    "decode": "gen_ai.latency.time_in_model_decode",
    "prompt": "gen_ai.usage.prompt_tokens",
    "completion": "gen_ai.usage.completion_tokens",
}
"""A column of the table and the span attribute it is read from (seconds or tokens)."""


def open_text(path: Path, mode: str = "rt") -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")  # type: ignore[return-value]
    return path.open(mode.replace("t", ""), encoding="utf-8")


def requests(path: Path) -> Iterator[dict[str, float]]:
    """One row a finished request: its start (ns) and the FIELDS."""
    with open_text(path) as file:
        if ".csv" in path.name:
            for record in csv.DictReader(file):
                yield {str(key): float(value) for key, value in record.items()}
            return
        for line in file:
            span = json.loads(line)
            if span.get("name") != "llm_request":
                continue
            attributes = span.get("attributes", {})
            row = {"start_ns": float(span["start_ns"])}
            row.update({key: float(attributes.get(name, 0.0)) for key, name in FIELDS.items()})
            yield row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spans", type=Path, help="the receiver's JSONL (or this script's CSV)")
    parser.add_argument("--window", type=float, default=20.0, help="seconds a row covers")
    parser.add_argument("--csv", type=Path, help="also write the rows read, as CSV (.gz ok)")
    args = parser.parse_args()
    rows = sorted(requests(args.spans), key=lambda row: row["start_ns"])
    if not rows:
        print(f"no llm_request spans in {args.spans}", file=sys.stderr)
        return 1
    if args.csv:
        with open_text(args.csv, "wt") as out:
            writer = csv.DictWriter(out, fieldnames=["start_ns", *FIELDS])
            writer.writeheader()
            for row in rows:  # ns to the microsecond, seconds to the 0.1 ms: a third the size
                writer.writerow({k: round(v, -3 if k == "start_ns" else 4) for k, v in row.items()})
    start = rows[0]["start_ns"]
    windows: dict[int, list[dict[str, float]]] = {}
    for row in rows:
        windows.setdefault(int((row["start_ns"] - start) / 1e9 // args.window), []).append(row)
    print(
        f"{'UTC':>8} {'requests':>8}  queue p50/p99 ms  TTFT p50/p99 ms  "
        "prefill p50/p99 ms  prompt tokens p50  answer tokens p50/p99"
    )
    for index in sorted(windows):
        group = windows[index]
        p50, p99 = {}, {}
        for key in FIELDS:
            p50[key], p99[key] = percentiles([row[key] for row in group], [50, 99])
        print(
            f"{time.strftime('%H:%M:%S', time.gmtime(start / 1e9 + index * args.window))} "
            f"{len(group):>8}  "
            f"{1000 * p50['queue']:>6.0f} / {1000 * p99['queue']:>5.0f}  "
            f"{1000 * p50['ttft']:>6.0f} / {1000 * p99['ttft']:>5.0f}  "
            f"{1000 * p50['prefill']:>8.0f} / {1000 * p99['prefill']:>5.0f}  "
            f"{p50['prompt']:>17.0f}  "
            f"{p50['completion']:>10.0f} / {p99['completion']:.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
