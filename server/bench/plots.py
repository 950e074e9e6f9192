"""`headstart bench plot`: the PNG figures of a bench's results.json.

Two figures (for `--compare`, the first alone: each backend's keystroke time to first
token): the keystroke-to-suggestion CDF of each load step (log time axis, so the
cache hits near a millisecond and the model requests near a hundred both show), and the
stage breakdown of model requests per step (p50 of each server stage, stacked, next to the
p99 of the whole). matplotlib is only needed here, so the bench itself runs without it
(e.g. on a GPU machine with no package index) and is plotted elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server.bench.stats import STAGES


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    """Write latency_cdf.png and stages.png under `out` (a comparison: its CDF alone); the
    paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "compare" in results:
        return [plot_compare(results, out)]

    steps = [s for s in results["steps"] if "skipped" not in s and s["cdfMs"]]
    title = f"{results['backend']['model']}, {results['machine']['cpus']} CPUs"

    figure, axes = plt.subplots(figsize=(8, 5))
    for step in steps:
        cdf = step["cdfMs"]
        axes.plot(cdf, [q / 10 for q in range(len(cdf))], label=f"{step['users']} users")
    floor = results.get("floor")
    if floor and floor["ttftMs"]["p50"] is not None:
        axes.axvline(floor["ttftMs"]["p50"], color="grey", linestyle=":", label="raw TTFT p50")
    axes.set_xscale("log")
    axes.set_xlabel("keystroke to suggestion (ms)")
    axes.set_ylabel("percent of answered keystrokes")
    axes.set_title(f"Keystroke-to-suggestion CDF per load step ({title})")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    cdf_path = out / "latency_cdf.png"
    figure.savefig(cdf_path, dpi=120, bbox_inches="tight")
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(8, 5))
    labels = [str(step["users"]) for step in steps]
    bottom = [0.0] * len(steps)
    for stage in (*STAGES, "transport"):
        heights = [(step["stagesMs"].get(stage) or {}).get("p50") or 0.0 for step in steps]
        axes.bar(labels, heights, bottom=bottom, label=stage)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    p99 = [step["modelRequestsMs"]["p99"] or 0.0 for step in steps]
    axes.plot(labels, p99, "k^--", label="whole request p99")
    axes.set_xlabel("simulated users")
    axes.set_ylabel("ms (p50 of each stage, stacked)")
    axes.set_title(f"Where a model request's time goes ({title})")
    axes.legend(fontsize="small")
    stages_path = out / "stages.png"
    figure.savefig(stages_path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return [cdf_path, stages_path]


def plot_compare(results: dict[str, Any], out: Path) -> Path:
    """`--compare`: the keystroke time-to-first-token CDF of each backend at each step, in
    one figure, a colour per backend and a line style per step."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    styles = ("-", "--", ":", "-.")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for number, step in enumerate(results["steps"]):
        for index, backend in enumerate(results["compare"]):
            replay = step["backends"][backend["url"]].get("replay") or {}
            cdf = replay.get("keystrokeTtftCdfMs") or []
            if not cdf:
                continue
            axes.plot(
                cdf,
                [q / 10 for q in range(len(cdf))],
                color=colours[index % len(colours)],
                linestyle=styles[number % len(styles)],
                label=f"{backend['label']} {backend['engine']}, {step['replayedUsers']} users",
            )
    axes.set_xscale("log")
    axes.set_xlabel("time to first token of a keystroke request (ms)")
    axes.set_ylabel("percent of keystroke requests waited for")
    axes.set_title(f"The same replayed typing on {len(results['compare'])} backends")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    path = out / "latency_cdf.png"
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path
