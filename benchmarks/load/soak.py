"""Soak: simulated typists against the fake model for a long while, watching every
`headstart serve` for growth: resident memory, open file descriptors and threads, sampled
each minute from /proc, and what each server says it holds (asyncio tasks, pending
messages, the size of each cache: `log.statsIntervalS` lines in a shared log file). A leak
shows as growth after the first minutes (caches filling and the first imports are
expected before that).

    python benchmarks/load/soak.py --users 50 --minutes 60 --settle 5 --out docs/results/soak

Writes OUT/samples.json, OUT/soak.png (with matplotlib) and prints, per sample, the
servers' totals; at the end, the growth from the sample at --settle minutes to the last,
which the goal wants under 10%. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai import FakeBackend  # noqa: E402

from server.lsp.internals import PREFIX  # noqa: E402


def parent(pid: int) -> int:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def servers(ancestor: int) -> list[int]:
    """Pids of the `headstart serve` processes under `ancestor` (the bench's editors)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command[1:4] != [b"-m", b"server", b"serve"]:
            continue
        pid = up = int(entry.name)
        while up > 1 and up != ancestor:
            up = parent(up)
        if up == ancestor:
            found.append(pid)
    return found


def sample(pid: int) -> dict[str, int] | None:
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rssKB": int(fields["VmRSS"].split()[0]),
        "threads": int(fields["Threads"]),
        "fds": fds,
    }


def totals(samples: list[dict[str, int]]) -> dict[str, int]:
    return {key: sum(s[key] for s in samples) for key in PROC_KEYS}


PROC_KEYS = ("rssKB", "threads", "fds")
"""What must not grow once the servers have settled (the caches may, up to their bounds)."""
MOMENTARY_KEYS = ("tasks", "pendingMessages", "modelJobs", "backendConnections")
"""What a sample catches mid-flight: reported as its range after settling."""


class InternalsLog:
    """The servers' `internals:` lines, read from their shared log file as it grows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self.latest: dict[int, dict[str, int]] = {}
        """pid -> the last line it wrote."""

    def read(self) -> None:
        try:
            with self.path.open("rb") as log:
                log.seek(self._offset)
                data = log.read()
        except OSError:
            return
        complete = data.rfind(b"\n") + 1
        self._offset += complete
        for line in data[:complete].decode("utf-8", "replace").splitlines():
            if PREFIX in line:
                with contextlib.suppress(ValueError):
                    values = json.loads(line.rsplit(PREFIX, 1)[1])
                    self.latest[values.pop("pid")] = values

    def totals(self, pids: list[int]) -> dict[str, int]:
        """Each field summed over the servers still running."""
        summed: dict[str, int] = {}
        for pid in pids:
            for key, value in self.latest.get(pid, {}).items():
                summed[key] = summed.get(key, 0) + value
        return summed


def plot(rows: list[dict[str, Any]], settle: float, out: Path) -> Path | None:
    """soak.png: each figure per minute, one panel each; None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in rows[-1] if k not in ("minute", "servers")]
    columns = 3
    figure, axes = plt.subplots(
        (len(keys) + columns - 1) // columns, columns, figsize=(12, 2.4 * len(keys) / columns + 1)
    )
    minutes = [r["minute"] for r in rows]
    for axis, key in zip(axes.flat, keys, strict=False):
        values = [r.get(key, 0) / (1024 if key == "rssKB" else 1) for r in rows]
        axis.plot(minutes, values)
        axis.axvline(settle, color="grey", linestyle=":")
        axis.set_title("RSS (MB)" if key == "rssKB" else key, fontsize=9)
        axis.set_xlabel("minutes", fontsize=8)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
    for axis in list(axes.flat)[len(keys) :]:
        axis.axis("off")
    figure.suptitle(f"{rows[-1]['servers']} servers, summed; dotted: growth counts from here")
    figure.tight_layout()
    path = out / "soak.png"
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=5.0, help="minutes before growth counts")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--out", type=Path, default=Path("soak-results"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    seconds = args.minutes * 60
    log_file = args.out / "servers.log"
    log_file.unlink(missing_ok=True)
    internals = InternalsLog(log_file)
    env = os.environ | {
        "HEADSTART_LOG_FILE": str(log_file),
        "HEADSTART_LOG_STATS_INTERVAL_S": str(max(1, int(args.every))),
    }
    with FakeBackend(default_text="value = compute(items)\n") as fake:
        bench = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "server",
                "bench",
                "run",
                "--backend-url",
                fake.url,
                "--users",
                str(args.users),
                "--step-seconds",
                str(seconds),
                "--warmup-seconds",
                "5",
                "--floor-prompts",
                "0",
                "--out",
                str(args.out / "bench"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        started = time.monotonic()
        rows: list[dict[str, Any]] = []
        while bench.poll() is None:
            time.sleep(args.every)
            pids = servers(bench.pid)
            found = [s for s in (sample(pid) for pid in pids) if s is not None]
            if not found:
                continue
            internals.read()
            row = {"minute": (time.monotonic() - started) / 60, "servers": len(found)}
            row |= totals(found) | internals.totals(pids)
            rows.append(row)
            print(
                f"{row['minute']:6.1f} min  {row['servers']} servers  "
                f"RSS {row['rssKB'] / 1024:7.1f} MB  fds {row['fds']:5}  threads {row['threads']}"
                f"  tasks {row.get('tasks', '?')}  pending {row.get('pendingMessages', '?')}",
                flush=True,
            )
    settled = [r for r in rows if r["minute"] >= args.settle and r["servers"] == args.users]
    growth = {}
    if len(settled) >= 2:
        first, last = settled[0], settled[-1]
        growth = {key: last[key] / first[key] - 1 for key in PROC_KEYS}
        print(
            "growth after minute {:.0f}: ".format(first["minute"])
            + ", ".join(f"{key} {value:+.1%}" for key, value in growth.items())
        )
        ranges = {
            key: [min(r.get(key, 0) for r in settled), max(r.get(key, 0) for r in settled)]
            for key in MOMENTARY_KEYS
        }
        print("after settling: " + ", ".join(f"{k} {lo}-{hi}" for k, (lo, hi) in ranges.items()))
        growth |= {f"{key}Range": value for key, value in ranges.items()}
    if rows and (figure := plot(rows, args.settle, args.out)) is not None:
        print(f"plot: {figure}")
    (args.out / "samples.json").write_text(
        json.dumps(
            {
                "users": args.users,
                "minutes": args.minutes,
                "samples": rows,
                "growthAfterSettle": growth,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
