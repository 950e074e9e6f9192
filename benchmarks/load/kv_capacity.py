"""How many users one vLLM's KV cache holds: the prefix cache simulated with a size, over
a recorded trace (`headstart bench run --record DIR`) replayed as many users, without a
GPU.

`prompt_cache_sim.py` takes the cache as unbounded. It is not: vLLM keeps the KV of at
most `num_gpu_blocks` blocks of 16 tokens (its /metrics `cache_config_info`; 100,503 on
an H100 at `--gpu-memory-utilization 0.6`, 1.61M tokens) and reuses the least recently
used free ones. A replayed user's prompts are its own (`headstart bench run --replay`
salts them per user and per loop), so its next request finds its prompt cached only if
fewer than the cache's worth of other users' blocks came in between; a developer's pause
is seconds.

The users are replayed as `bench run --replay` replays them (`server.bench.replay`:
user k is trace k mod n from its own phase, looping over the recorded span, salted per
loop), every request sent on time and computed at once: no queue, no cancelled request,
so this is what the cache alone allows. Prints, per number of users, the requests a
second, the cached share and the prompt tokens computed per request and per second (what
the engine must keep up with: vLLM queued past about 100-150k a second on one H100 with
the 1.5B model, docs/bench.md), over the requests sent between --warmup and --seconds:

    python benchmarks/load/kv_capacity.py DIR --users 100,500,1000 --cache-tokens 1608048 \
        [--tokenizer tokenizer.json] [--seconds 35] [--warmup 5]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from prompt_cache_sim import BLOCK, PrefixCache  # noqa: E402

from server.bench.replay import ReplayError, Trace, load_traces, phase_s, schedule  # noqa: E402


class Replayed(NamedTuple):
    """One request of a replayed user: when (seconds from the replay's start), its cache
    salt (user, loop), and the prompt as token ids."""

    at: float
    salt: tuple[int, int]
    ids: list[int]


def crowd(traces: list[Trace], users: int, seconds: float, encode: Encode) -> list[Replayed]:
    """`users` replayed users' requests over `seconds`, in the order they are sent."""
    sent: list[Replayed] = []
    for user in range(users):
        trace = traces[user % len(traces)]
        for at, loop, request in schedule(trace, phase_s(user, traces)):
            if at >= seconds:
                break
            sent.append(Replayed(at, (user, loop), encode(request.body["prompt"])))
    return sorted(sent, key=lambda r: r.at)


def cached_tokens(requests: Iterable[Replayed], capacity_blocks: int) -> Iterator[int]:
    """How many leading tokens of each prompt one cache of `capacity_blocks` (0:
    unbounded) held, each user's loop salted apart."""
    cache = PrefixCache(capacity_blocks)
    for request in requests:
        yield cache.cached(request.ids, hash(request.salt))


def capacity_line(
    traces: list[Trace],
    users: int,
    cache_tokens: int,
    seconds: float,
    warmup: float,
    encode: Encode,
) -> str:
    """One row: `users` replayed users against a cache of `cache_tokens` tokens."""
    replay = crowd(traces, users, seconds, encode)
    hits = list(cached_tokens(replay, cache_tokens // BLOCK))
    measured = [(r, hit) for r, hit in zip(replay, hits, strict=True) if r.at >= warmup]
    window = max(1e-9, seconds - warmup)
    total = sum(len(r.ids) for r, _ in measured) or 1
    computed = sum(len(r.ids) - hit for r, hit in measured)
    n = max(1, len(measured))
    return (
        f"{users:6} {len(measured) / window:11.1f} {1 - computed / total:8.1%} "
        f"{computed / n:17.0f} {computed / window:11.0f}"
    )


class Encode:
    """A prompt as token ids: as recorded when the server sent ids, else tokenized (each
    distinct text once: replayed users send the same prompts many times)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.known: dict[str, list[int]] = {}

    def __call__(self, prompt: str | list[int]) -> list[int]:
        if isinstance(prompt, list):
            return prompt
        found = self.known.get(prompt)
        if found is None:
            found = self.known[prompt] = self.tokenizer.encode(prompt).ids
        return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, help="a --record folder of user-N.jsonl")
    parser.add_argument("--users", required=True, help="replayed users, e.g. 100,500,1000")
    parser.add_argument(
        "--cache-tokens", type=int, required=True, help="KV cache size (0: unbounded)"
    )
    parser.add_argument("--tokenizer", type=Path, help="tokenizer.json for text prompts")
    parser.add_argument("--seconds", type=float, default=35.0, help="length of the replay")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds not measured")
    args = parser.parse_args()
    if args.tokenizer is None:
        from tokenizer_helpers import real_qwen_tokenizer_file

        args.tokenizer = real_qwen_tokenizer_file()
    encode = Encode(Tokenizer.from_file(str(args.tokenizer)))
    try:
        traces = load_traces(args.trace)
    except ReplayError as exc:
        print(f"kv_capacity.py: {exc}", file=sys.stderr)
        return 1
    print(f"cache of {args.cache_tokens:,} tokens; {args.warmup:g}-{args.seconds:g} s measured")
    print(" users  requests/s   cached  computed/request  computed/s")
    for users in (int(n) for n in args.users.split(",")):
        print(capacity_line(traces, users, args.cache_tokens, args.seconds, args.warmup, encode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
