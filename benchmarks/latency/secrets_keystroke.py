"""What masking secrets costs a keystroke: the open document's prefix and suffix (and the
current file's pieces) are masked on every prompt build (`server.completion.secrets`).

A 100 KB Python file is made of real modules of the installed packages, with a few
credentials pasted in; lines are retyped key by key, and after every key the prompt is
built as the server builds it (`plan_request`, no project), once with masking and once
without (the order alternating per keystroke), in the same run. Reported: p50/p99 of the
masking call alone and of the whole prompt build with and without it, in milliseconds of
wall time and of the thread's CPU time (on a loaded machine a 4 ms scheduler tick lands in
the wall-time tail whatever runs);
and, once, what the index's scan of the file costs when the editor opens it (which fills
the per-line memo) and again after an edit (the debounced buffer refresh).

    .venv/bin/python benchmarks/latency/secrets_keystroke.py --keys 3000 \
        --out /tmp/secrets_keys.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import server.completion.request as request_module  # noqa: E402
from cache.secrets import scan_file  # noqa: E402
from cache.secrets.gitleaks import rule_set  # noqa: E402
from server.completion.request import CursorContext, plan_request  # noqa: E402
from server.completion.secrets import mask_document  # noqa: E402
from server.config import CompletionSettings  # noqa: E402
from server.metrics import percentile  # noqa: E402

PASTED = (
    'STRIPE_KEY = "sk_live_51Hc8ZqLmNoPqRsTuVwXyZ0123456789abcdEFGHijkl"\n'
    'DATABASE_URL = "postgres://shop:Pg_s3cret!2024@db.internal:5432/shop"\n'
    'GITHUB_TOKEN = "ghp_R8kL2mN5pQ7sT1vW4yZ6bC9dF3gH0jK2lM4n"\n'
)


def big_file(size: int) -> str:
    """Real modules of the standard library and installed packages, up to `size` chars."""
    pieces, total = [PASTED], len(PASTED)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("argparse.py", "inspect.py", "typing.py", "dataclasses.py", "pathlib.py"):
        text = (stdlib / name).read_text()
        pieces.append(text)
        total += len(text)
        if total >= size:
            break
    text = "".join(pieces)[:size]
    return text[: text.rfind("\n") + 1]


def keystrokes(text: str, keys: int, seed: int) -> list[tuple[str, int]]:
    """(text, cursor) after each key: lines cut a few characters in and retyped."""
    rng = random.Random(seed)
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if len(line.strip()) >= 16]
    out: list[tuple[str, int]] = []
    while len(out) < keys:
        row = rng.choice(candidates)
        line = lines[row]
        start = len(line) - len(line.lstrip()) + 2
        before = "\n".join(lines[:row])
        after = "\n".join(lines[row + 1 :])
        for end in range(start, min(len(line), start + 12)):
            typed = before + "\n" + line[:end]
            out.append((typed + "\n" + after, len(typed)))
    return out[:keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=100)
    parser.add_argument("--keys", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    text = big_file(args.kb * 1000)
    settings = CompletionSettings()
    path = "shop/big_module.py"
    masked_build, bare_build, masking = [], [], []
    real_document, real_snippet = request_module.mask_document, request_module.mask_snippet

    def bare(on: bool) -> None:
        request_module.mask_document = (  # type: ignore[assignment]
            (lambda prefix, suffix, document, path: (prefix, suffix)) if on else real_document
        )
        request_module.mask_snippet = (  # type: ignore[assignment]
            (lambda text, path, current, document: text) if on else real_snippet
        )

    data = text.encode()
    started = time.perf_counter()
    rule_set()
    load_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    scan_file(data, path)  # what the index does when the editor opens the file
    open_ms = (time.perf_counter() - started) * 1000
    for warm in keystrokes(text, 50, args.seed + 1):  # tokenizer, memos, lazy imports
        plan_request(CursorContext(warm[0], warm[1], path, "bench", "python"), settings)
    masking_cpu: list[float] = []
    masked_cpu: list[float] = []
    bare_cpu: list[float] = []
    for number, (document, offset) in enumerate(keystrokes(text, args.keys, args.seed)):
        ctx = CursorContext(document, offset, path, "bench", "python")
        arms = [(True, masked_build, masked_cpu), (False, bare_build, bare_cpu)]
        for masked, times, cpu in arms if number % 2 else arms[::-1]:
            bare(not masked)
            started, started_cpu = time.perf_counter(), time.thread_time()
            plan_request(ctx, settings)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
        bare(False)
        prefix, suffix = document[:offset][-6000:], document[offset:][:1500]
        started, started_cpu = time.perf_counter(), time.thread_time()
        mask_document(prefix, suffix, document, path)
        masking.append((time.perf_counter() - started) * 1000)
        masking_cpu.append((time.thread_time() - started_cpu) * 1000)
    started = time.perf_counter()
    scan_file(keystrokes(text, 1, args.seed + 2)[0][0].encode(), path)
    refresh_ms = (time.perf_counter() - started) * 1000

    def summary(times: list[float]) -> dict[str, float]:
        ordered = sorted(times)
        return {"p50": percentile(ordered, 50), "p99": percentile(ordered, 99)}

    result = {
        "file_chars": len(text),
        "keystrokes": args.keys,
        "rules_load_ms": load_ms,
        "scan_on_open_ms": open_ms,
        "rescan_after_edit_ms": refresh_ms,
        "masking_ms": summary(masking),
        "build_masked_ms": summary(masked_build),
        "build_bare_ms": summary(bare_build),
        "cpu_masking_ms": summary(masking_cpu),
        "cpu_build_masked_ms": summary(masked_cpu),
        "cpu_build_bare_ms": summary(bare_cpu),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
