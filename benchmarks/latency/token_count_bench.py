"""How long counting a prompt's tokens takes, cold and while typing.

A 6,000-character prefix of real Python (the standard library) is counted:
- exact: the tokenizer's own encoding of the whole text (what `TokenCounter.count` does
  for a text it has not seen);
- by lines, cold: a fresh counter, every line encoded (a file just opened);
- by lines, warm: typing replayed, one character per keystroke, the counter's per-line
  cache filled by the keystrokes before (what every keystroke costs);
- fit: `fit_tail` of that prefix to 1,024 tokens (half of the default 2,048-token
  context), warm, as the context builder calls it.

    python benchmarks/latency/token_count_bench.py [--tokenizer PATH/TO/tokenizer.json]

Without --tokenizer it looks for a Qwen tokenizer the way the tests do (HEADSTART_HOME's
model folders, .gpu/models, the Hugging Face cache).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tokenizers import Tokenizer  # noqa: E402

from server.backend.local_vllm import headstart_home  # noqa: E402
from server.completion.token_count import TokenCounter, find_tokenizer_file  # noqa: E402
from server.metrics import percentile  # noqa: E402


def find_qwen_tokenizer() -> Path | None:
    candidates = [os.environ.get("HEADSTART_TEST_TOKENIZER", "")]
    for models in (headstart_home() / "models", ROOT / ".gpu" / "models"):
        if models.is_dir():
            candidates += [str(folder) for folder in sorted(models.iterdir())]
    candidates += ["Qwen/Qwen2.5-Coder-1.5B"]
    for candidate in filter(None, candidates):
        found = find_tokenizer_file(None, candidate)
        if found is not None:
            return found[0]
    return None


def python_sources(chars: int, count: int) -> list[str]:
    """`count` texts of real Python, each at least `chars` + 2,000 characters long."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) >= chars + 2_000:
            texts.append(text)
        if len(texts) == count:
            break
    return texts


def timed(function: Callable[..., object], *args: object) -> float:
    started = time.perf_counter_ns()
    function(*args)
    return (time.perf_counter_ns() - started) / 1e6


def report(name: str, values: list[float]) -> None:
    print(
        f"{name:<46} p50 {statistics.median(values):7.3f} ms   "
        f"p99 {percentile(values, 99):7.3f} ms   (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", help="tokenizer.json or a folder holding one")
    parser.add_argument("--chars", type=int, default=6_000, help="prefix length")
    parser.add_argument("--files", type=int, default=40, help="standard-library files")
    parser.add_argument("--keys", type=int, default=50, help="keystrokes replayed per file")
    parser.add_argument("--budget", type=int, default=1_024, help="tokens for fit_tail")
    args = parser.parse_args()

    path = Path(args.tokenizer) if args.tokenizer else find_qwen_tokenizer()
    if path is not None and path.is_dir():
        path = path / "tokenizer.json"
    if path is None or not path.is_file():
        sys.exit("no tokenizer.json found; pass --tokenizer")
    tokenizer = Tokenizer.from_file(str(path))
    texts = python_sources(args.chars, args.files)
    print(f"tokenizer {path}; {len(texts)} files, prefixes of {args.chars} characters")

    encode = functools.partial(tokenizer.encode, add_special_tokens=False)
    exact, cold, heuristic = [], [], []
    for text in texts:
        prefix = text[: args.chars]
        counter = TokenCounter(tokenizer)
        exact.append(timed(encode, prefix))
        cold.append(timed(counter.count_lines, prefix))
        heuristic.append(timed(TokenCounter().fit_tail, prefix, args.budget))

    warm, fit = [], []
    for text in texts:
        counter = TokenCounter(tokenizer)
        start = args.chars - args.keys
        counter.count_lines(text[start - 200 : start])  # the file was open before typing
        counter.count_lines(text[:start])
        for end in range(start, start + args.keys):
            prefix = text[end - args.chars : end] if end >= args.chars else text[:end]
            warm.append(timed(counter.count_lines, prefix))
            fit.append(timed(counter.fit_tail, prefix, args.budget))

    tokens = [TokenCounter(tokenizer).count(text[: args.chars]) for text in texts]
    print(f"tokens per prefix: p50 {statistics.median(tokens):.0f}")
    report("exact encode, whole prefix (uncached)", exact)
    report("count_lines, cold (empty cache)", cold)
    report("count_lines, warm (typing, one key each)", warm)
    report(f"fit_tail to {args.budget} tokens, warm (typing)", fit)
    report(f"fit_tail to {args.budget} tokens, no tokenizer", heuristic)


if __name__ == "__main__":
    main()
