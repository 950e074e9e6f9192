"""Soak: simulated typists against the fake model for a long while, watching every
`headstart serve` for growth: resident memory, open file descriptors and threads, sampled
each minute from /proc. A leak shows as growth after the first minutes (caches filling
and the first imports are expected before that).

    python benchmarks/soak.py --users 10 --minutes 10 --out docs/results/soak

Writes OUT/samples.json and prints, per sample, the servers' totals; at the end, the
growth from the sample at --settle minutes to the last, which the goal wants under 10%.
Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai import FakeBackend  # noqa: E402


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
    return {key: sum(s[key] for s in samples) for key in ("rssKB", "threads", "fds")}


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
            row = {"minute": (time.monotonic() - started) / 60, "servers": len(found)}
            row |= totals(found)
            rows.append(row)
            print(
                f"{row['minute']:6.1f} min  {row['servers']} servers  "
                f"RSS {row['rssKB'] / 1024:7.1f} MB  fds {row['fds']:5}  threads {row['threads']}",
                flush=True,
            )
    settled = [r for r in rows if r["minute"] >= args.settle and r["servers"] == args.users]
    growth = {}
    if len(settled) >= 2:
        first, last = settled[0], settled[-1]
        growth = {key: last[key] / first[key] - 1 for key in ("rssKB", "fds", "threads")}
        print(
            "growth after minute {:.0f}: ".format(first["minute"])
            + ", ".join(f"{key} {value:+.1%}" for key, value in growth.items())
        )
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
