#!/usr/bin/env python3
"""One slow keystroke's trace as a waterfall, and the stage that held it (a PNG).

From exported spans: a JSONL file of spans as `tests/otlp_receiver.py --out` writes them
(what Headstart and, with `--otlp-traces-endpoint`, vLLM exported to it); the slowest
keystroke's trace is drawn, or the one `--trace` names. Each span is a bar on its own row,
under its parent, coloured by the service that made it; the span that held the keystroke
longest by itself (its time less its children's) is red, and the title says how long.

    python benchmarks/latency/trace_waterfall.py --spans spans.jsonl --out trace.png

`--demo` makes such a keystroke here, with no GPU: the fake model (tests/fake_openai.py)
told to wait `--first-delay-ms` before its first chunk (as a loaded engine's queue and
prefill would), `headstart serve` with `log.openTelemetry` on, exporting to a receiver in
this process, and one key typed in the sample project:

    python benchmarks/latency/trace_waterfall.py --demo --out docs/trace_waterfall.png
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

KEYSTROKE = "headstart.inline_completion"
TYPED = "def total(items):\n    return su\n"
"""The demo's document; the key typed is `m`, after `su`."""
COLOURS = ["#4c72b0", "#55a868", "#8172b2", "#ccb974", "#64b5cd"]
HELD = "#c44e52"

Span = dict[str, Any]


def read_spans(path: Path) -> list[Span]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def keystroke_trace(spans: list[Span], trace_id: str | None) -> list[Span]:
    """The spans of the trace `trace_id`, or of the slowest keystroke's trace."""
    if trace_id is None:
        roots = [s for s in spans if s["name"] == KEYSTROKE]
        if not roots:
            raise SystemExit(f"no {KEYSTROKE} span among {len(spans)} spans")
        trace_id = max(roots, key=lambda s: s["end_ns"] - s["start_ns"])["trace_id"]
    trace = [s for s in spans if s["trace_id"] == trace_id]
    if not trace:
        raise SystemExit(f"no span of trace {trace_id}")
    return trace


def in_tree_order(trace: list[Span]) -> list[tuple[Span, int]]:
    """Each span with its depth, parents before their children, siblings by start."""
    ids = {s["span_id"] for s in trace}
    children: dict[str, list[Span]] = {}
    for span in trace:
        parent = span["parent_span_id"] if span["parent_span_id"] in ids else ""
        children.setdefault(parent, []).append(span)
    ordered: list[tuple[Span, int]] = []

    def visit(parent: str, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s["start_ns"], s["name"])):
            ordered.append((span, depth))
            visit(span["span_id"], depth + 1)

    visit("", 0)
    return ordered


def self_time_ns(span: Span, trace: list[Span]) -> int:
    """A span's time less the union of its children's (what it held by itself)."""
    inside = sorted(
        (max(c["start_ns"], span["start_ns"]), min(c["end_ns"], span["end_ns"]))
        for c in trace
        if c["parent_span_id"] == span["span_id"]
    )
    covered, reach = 0, span["start_ns"]
    for start, end in inside:
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return span["end_ns"] - span["start_ns"] - covered


def service(span: Span) -> str:
    return str(span.get("resource", {}).get("service.name", "unknown"))


def draw(trace: list[Span], out: Path, caption: str) -> str:
    """The waterfall PNG; returns the line that names the stage that held the keystroke."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = in_tree_order(trace)
    start = min(s["start_ns"] for s in trace)
    root = rows[0][0]
    total_ms = (root["end_ns"] - root["start_ns"]) / 1e6
    held = max(trace, key=lambda s: self_time_ns(s, trace))
    held_ms = self_time_ns(held, trace) / 1e6
    services = sorted({service(s) for s in trace}, key=lambda n: (n != "headstart", n))
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(services)}

    height = 0.42 * len(rows) + 1.9
    figure, axes = plt.subplots(figsize=(11, height))
    for row, (span, depth) in enumerate(rows):
        left = (span["start_ns"] - start) / 1e6
        width = max((span["end_ns"] - span["start_ns"]) / 1e6, 0.05)
        is_held = span["span_id"] == held["span_id"]
        axes.barh(
            row, width, left=left, height=0.6, color=HELD if is_held else colour[service(span)]
        )
        label = f"{'  ' * depth}{span['name']}"
        axes.text(-0.01, row, label, transform=axes.get_yaxis_transform(), ha="right",
                  va="center", fontsize=9, family="monospace")  # fmt: skip
        note = f" {width:.1f} ms"
        outcome = span["attributes"].get("headstart.outcome")
        if outcome:
            note += f" ({outcome})"
        axes.text(left + width, row, note, va="center", fontsize=8)
    axes.set_yticks([])
    axes.invert_yaxis()
    axes.set_xlabel("ms since the keystroke's edit reached the server")
    axes.set_xlim(0, total_ms * 1.18)
    verdict = (
        f"{held['name']} held it: {held_ms:.0f} of {total_ms:.0f} ms ({held_ms / total_ms:.0%})"
    )
    axes.set_title(f"One keystroke, {total_ms:.0f} ms: {verdict}", fontsize=11)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in services]
    handles.append(plt.Rectangle((0, 0), 1, 1, color=HELD))
    axes.legend(handles, [*services, "held it"], loc="center right", fontsize=8)
    figure.text(0.01, 0.01, "\n".join(textwrap.wrap(caption, 150)), fontsize=8, style="italic")
    figure.subplots_adjust(left=0.3, right=0.97, top=1 - 0.45 / height, bottom=1.05 / height)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return verdict


async def demo_keystroke(url: str, workdir: Path, collector_url: str) -> None:
    from server.bench.editor_session import EditorSession

    project = Path(shutil.copytree(ROOT / "examples" / "sample_project", workdir / "project"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADSTART_", "OTEL_"))}
    env |= {"PYTHONPATH": str(ROOT), "HEADSTART_CACHE_DIR": str(workdir / "cache")}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": collector_url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    settings = {
        "backend": {"url": url},
        "completion": {"prefetch": False},
        "log": {"openTelemetry": True},
    }
    async with EditorSession(project, settings, env) as editor:
        await editor.wait_until_indexed(30)
        document = editor.open(project / "total.py", TYPED)
        await editor.inline_completion(document, 1, 13)  # the first: tokenizer, connection
        editor.type(document, 1, 13, "m")
        await editor.inline_completion(document, 1, 14)


def run_demo(first_delay_ms: float, spans_file: Path) -> list[Span]:
    """One slow keystroke against the fake model, its spans also written to `spans_file`."""
    from fake_openai import FakeBackend
    from otlp_receiver import OtlpReceiver, RotelCollector, rotel_binary

    with (
        tempfile.TemporaryDirectory(prefix="trace-waterfall-") as workdir,
        FakeBackend(default_text="(items)") as fake,
        OtlpReceiver(spans_file) as receiver,
    ):
        rule = {"match": "return sum", "text": "(items)", "first_delay_ms": first_delay_ms}
        fake.script([{**rule, "chunk_chars": 2, "chunk_delay_ms": 8}])
        binary = rotel_binary()
        if binary is None:
            asyncio.run(demo_keystroke(fake.url, Path(workdir), receiver.url))
        else:
            with RotelCollector(binary, receiver.url, Path(workdir)) as rotel:
                asyncio.run(demo_keystroke(fake.url, Path(workdir), rotel.url))
        slow = lambda spans: any(  # noqa: E731
            s["name"] == KEYSTROKE and s["end_ns"] - s["start_ns"] > first_delay_ms * 1e6
            for s in spans
        )
        return receiver.wait_for(slow)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=Path, help="JSONL spans (tests/otlp_receiver.py --out)")
    parser.add_argument("--trace", help="the trace id to draw (default: the slowest keystroke)")
    parser.add_argument("--demo", action="store_true", help="make a slow keystroke here first")
    parser.add_argument("--first-delay-ms", type=float, default=350.0)
    parser.add_argument("--caption", help="the figure's caption")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args()
    if args.demo:
        spans_file = args.spans or args.out.with_suffix(".spans.jsonl")
        spans_file.unlink(missing_ok=True)
        spans = run_demo(args.first_delay_ms, spans_file)
        caption = args.caption or (
            "Made here without a GPU: the fake OpenAI-compatible model (tests/fake_openai.py) "
            f"waits {args.first_delay_ms:.0f} ms before its first chunk, as a loaded engine's "
            "queue and prefill would; exported through the Rotel collector. "
            "benchmarks/latency/trace_waterfall.py --demo"
        )
    elif args.spans is not None:
        spans = read_spans(args.spans)
        caption = args.caption or f"{args.spans.name}: the slowest keystroke's trace"
    else:
        parser.error("give --spans FILE, or --demo")
    trace = keystroke_trace(spans, args.trace)
    print(draw(trace, args.out, caption))
    print(f"{len(trace)} spans of trace {trace[0]['trace_id']} drawn in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
