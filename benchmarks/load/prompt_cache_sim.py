"""Which prompt tokens vLLM must compute anew: the prefix cache simulated over a recorded
request trace (`headstart bench run --record DIR`), without a GPU.

vLLM keeps the KV of every full block of 16 prompt tokens, keyed by the block and all
blocks before it, and shares it between requests: a request computes only the tokens
after the longest run of leading blocks some earlier request already had. Under load that
prefill is the engine's main work, so the uncached tokens per request are what a prompt
change must lower. The cache is taken as unbounded (a 1.5B model's KV cache on an H200
holds millions of tokens) and shared by every user of the trace.

    python benchmarks/load/prompt_cache_sim.py DIR [--tokenizer tokenizer.json] [--suffix-tokens N]
        [--same-snippets prefetch|visit] [--head-first NEAR,STRIDE] [--line-start [--heal]]
        [--replicas N]

Prints, for all requests: the mean prompt, the cached share, and the uncached tokens per
request (mean, p50, p90), split by where they start: the context before `<|fim_prefix|>`
(snippets from other files), the text before the cursor, the text after it; then by cause
(a user's first request, the first in another document, a change of the snippets before
the current file, only the text at the cursor) and by what the request was for
(keystroke, continuation, prefetch). With
--suffix-tokens, each prompt's text after the cursor is first cut to N tokens (a what-if:
the server cuts at a line end, within `completion.suffixShare` of the budget). With
--same-snippets, each prompt's snippets are first replaced by those of an earlier request
of its user in the same document: a prefetch's by its keystroke's (`prefetch`), or every
request's by the first of the user's stay in that document (`visit`, an upper bound on
what keeping the snippets steady could save). With --head-first, the current file's
lines at least NEAR above the cursor (split at a multiple of STRIDE lines) go before the
snippets as a block of their own, so that a changed snippet would not cost them.
With --line-start, each prompt is laid out as `completion.promptLayout` lineStart lays it
out: the prefix ends at the cursor line's start and the typed part of the line (unless it
is only white space) goes after `<|fim_middle|>`; with --heal too, without its last token
(`completion.tokenHealing`). "middle" is then the typed part's segment.
With --replicas, the requests are spread over that many vLLM replicas, each with a cache
of its own, as a router would spread them: by document (vllm-router's `consistent_hash`
on the `X-Session-ID` Headstart sends, `backend.affinity`), at random, and round robin;
one line each.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from server.completion.prompt import split_at_line_start  # noqa: E402

BLOCK = 16
"""vLLM's default KV block size, in tokens."""
SEGMENTS = ("context", "prefix", "suffix", "middle")


class Sent(NamedTuple):
    """One recorded request: who sent it, what for (0 keystroke, 1 continuation, 2
    prefetch), and its prompt as token ids."""

    user: str
    priority: int
    ids: list[int]


def recorded(trace_dir: Path, tokenizer: Tokenizer) -> list[Sent]:
    """Every recorded request, in the order they were sent (all users)."""
    sent: list[tuple[float, Sent]] = []
    for path in sorted(trace_dir.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            body = record["body"]
            prompt = body["prompt"]
            ids = prompt if isinstance(prompt, list) else tokenizer.encode(prompt).ids
            sent.append((record["sent"], Sent(path.stem, int(body.get("priority", 0)), ids)))
    return [request for _, request in sorted(sent, key=lambda item: item[0])]


def document_of(ids: list[int], file_sep: int, fim_prefix: int) -> tuple[int, ...]:
    """What names a prompt's document: the tokens of the path between the last
    `<|file_sep|>` before `<|fim_prefix|>` and it (the whole prompt's first tokens when
    the template has no such marker)."""
    end = ids.index(fim_prefix) if fim_prefix in ids else min(len(ids), 64)
    start = max((i for i in range(end) if ids[i] == file_sep), default=-1) + 1
    return tuple(ids[start:end])


def routings(
    replicas: int, document: Callable[[list[int]], tuple[int, ...]]
) -> dict[str, Callable[[int, list[int]], int]]:
    """How a router picks a replica for the n-th prompt."""
    chance = random.Random(0)
    return {
        "by document": lambda n, ids: zlib.crc32(repr(document(ids)).encode()) % replicas,
        "random": lambda n, ids: chance.randrange(replicas),
        "round robin": lambda n, ids: n % replicas,
    }


def cut_suffix(ids: list[int], markers: tuple[int, int], limit: int) -> list[int]:
    """The prompt with at most `limit` tokens between `<|fim_suffix|>` and `<|fim_middle|>`."""
    suffix, middle = markers
    if suffix not in ids or middle not in ids:
        return ids
    start, end = ids.index(suffix) + 1, ids.index(middle)
    return ids[: min(end, start + limit)] + ids[end:]


def file_start(ids: list[int], file_sep: int, fim_prefix: int) -> int:
    """Where the current file's part of a prompt starts: its `<|file_sep|>`, the last
    before `<|fim_prefix|>` (0 when the template has no such markers)."""
    end = ids.index(fim_prefix) if fim_prefix in ids else 0
    return max((i for i in range(end) if ids[i] == file_sep), default=0)


def same_snippets(requests: list[Sent], scope: str, file_sep: int, fim_prefix: int) -> list[Sent]:
    """The requests as if the server had shown the same snippets again, for a what-if:
    each prompt's part before its current file replaced by an earlier request's of the
    same user and document. `scope` "prefetch": a prefetch shows its keystroke's (the
    user's last keystroke request); "visit": every request shows the first of the user's
    current stay in the document (an upper bound on what keeping snippets steady saves)."""
    kept = []
    held: dict[str, tuple[tuple[int, ...], list[int]]] = {}
    """Per user: the document and the context part that later requests are given."""
    for request in requests:
        ids = request.ids
        start = file_start(ids, file_sep, fim_prefix)
        document = document_of(ids, file_sep, fim_prefix)
        earlier = held.get(request.user)
        same_document = earlier is not None and earlier[0] == document and start > 0
        if earlier is not None and same_document and (scope == "visit" or request.priority == 2):
            ids = earlier[1] + ids[start:]
        elif scope == "visit" or request.priority == 0:
            held[request.user] = (document, ids[:start])
        kept.append(request._replace(ids=ids))
    return kept


def head_first(
    ids: list[int],
    markers: tuple[int, int, int],
    newlines: frozenset[int],
    near_lines: int,
    stride: int,
) -> list[int]:
    """The prompt with the current file's text far above the cursor moved before the
    snippets, for a what-if: the lines of the prefix before a split point go first, as a
    file block of their own (the file's path, then those lines), and only the rest stays
    in the fill-in-the-middle slot. The split is at least `near_lines` above the cursor,
    at a multiple of `stride` lines, so it stays put while the user types nearby; a
    changed snippet then costs the lines after the split, not the whole file."""
    file_sep, fim_prefix, fim_suffix = markers
    if fim_prefix not in ids or fim_suffix not in ids:
        return ids
    start = file_start(ids, file_sep, fim_prefix)
    first, end = ids.index(fim_prefix) + 1, ids.index(fim_suffix)
    line_ends = [i + 1 for i in range(first, end) if ids[i] in newlines]
    split_line = (len(line_ends) - near_lines) // stride * stride
    if start == 0 or split_line <= 0:
        return ids
    split = line_ends[split_line - 1]
    header = next((i for i in range(start) if ids[i] == file_sep), start)
    head = [file_sep, *ids[start + 1 : first - 1], *ids[first:split]]
    return ids[:header] + head + ids[header:first] + ids[split:]


def line_start(
    ids: list[int], markers: tuple[int, int, int], tokenizer: Tokenizer, heal: bool
) -> list[int]:
    """The prompt with the typed part of the cursor's line moved after `<|fim_middle|>`
    (server.completion.prompt.split_at_line_start), for a what-if; with `heal`, that part's
    last token backed off, as token healing sends it. A resumed request's generated
    tokens stay after it."""
    fim_prefix, fim_suffix, fim_middle = markers
    if not all(marker in ids for marker in markers):
        return ids
    first, cut, middle = ids.index(fim_prefix) + 1, ids.index(fim_suffix), ids.index(fim_middle)
    prefix = tokenizer.decode(ids[first:cut], skip_special_tokens=False)
    above, typed = split_at_line_start(prefix)
    if not typed:
        return ids
    typed_ids = tokenizer.encode(typed, add_special_tokens=False).ids
    if heal:
        typed_ids = typed_ids[:-1]
    above_ids = tokenizer.encode(above, add_special_tokens=False).ids
    return [
        *ids[:first],
        *above_ids,
        *ids[cut : middle + 1],
        *typed_ids,
        *ids[middle + 1 :],
    ]


class PrefixCache:
    """vLLM's block prefix cache: full blocks keyed by a seed (a `cache_salt`) and every
    token before them, the least recently used evicted past `capacity_blocks` (0:
    unbounded)."""

    def __init__(self, capacity_blocks: int = 0) -> None:
        self.capacity_blocks = capacity_blocks
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def cached(self, ids: list[int], seed: int = 0) -> int:
        """How many leading tokens of `ids` it held; then it holds all their full blocks."""
        key, hit, counting = seed, 0, True
        for start in range(0, len(ids) - len(ids) % BLOCK, BLOCK):
            key = hash((key, *ids[start : start + BLOCK]))
            if counting and key in self.blocks:
                hit += BLOCK
                if self.capacity_blocks:
                    self.blocks.move_to_end(key)
            else:
                counting = False
                self.blocks[key] = None
        while self.capacity_blocks and len(self.blocks) > self.capacity_blocks:
            self.blocks.popitem(last=False)
        return hit


def uncached(
    requests: Iterable[list[int]], route: Callable[[int, list[int]], int] | None = None
) -> Iterator[tuple[list[int], int]]:
    """Each prompt and how many of its leading tokens the prefix cache held (the cache
    of the replica `route` sends it to; one cache without it)."""
    caches: dict[int, PrefixCache] = {}
    for n, ids in enumerate(requests):
        yield ids, caches.setdefault(route(n, ids) if route else 0, PrefixCache()).cached(ids)


def figures(cached: list[tuple[list[int], int]]) -> str:
    """The cached share of `uncached`'s prompts, and the tokens computed per request."""
    total = sum(len(ids) for ids, _ in cached)
    per_request = [len(ids) - hit for ids, hit in cached]
    return (
        f"cached {1 - sum(per_request) / total:.1%}; "
        f"uncached per request mean {sum(per_request) / len(per_request):.0f}, "
        f"p50 {percentile(per_request, 0.5)}, p90 {percentile(per_request, 0.9)}"
    )


def summary(sent: list[list[int]], route: Callable[[int, list[int]], int]) -> str:
    """`figures` with the prompts routed by `route`, and how evenly the replicas are
    loaded (the busiest replica's share of the requests)."""
    assigned = [route(n, ids) for n, ids in enumerate(sent)]  # once: "random" draws
    cached = list(uncached(sent, lambda n, _: assigned[n]))
    busiest = max(Counter(assigned).values())
    return f"{figures(cached)}; busiest replica {busiest / len(sent):.0%} of the requests"


CAUSES = ("first request", "another document", "context changed", "at the cursor")
PURPOSES = {0: "keystroke", 1: "continuation", 2: "prefetch"}


def cause_of(
    request: Sent,
    hit: int,
    previous: Sent | None,
    document: Callable[[list[int]], tuple[int, ...]],
    fim_prefix: int,
) -> str:
    """Why a request computes what it does: the user's first, the first after the user
    went to another document, the snippets before the current file changed (so all of the
    file after them is computed again), or only the text at and after the cursor."""
    if previous is None:
        return "first request"
    if document(request.ids) != document(previous.ids):
        return "another document"
    if fim_prefix in request.ids and hit < request.ids.index(fim_prefix):
        return "context changed"
    return "at the cursor"


def by_cause(
    requests: list[Sent],
    hits: list[int],
    document: Callable[[list[int]], tuple[int, ...]],
    fim_prefix: int,
) -> list[str]:
    """One line per cause and per purpose: requests, their share of all computed tokens
    and the tokens each computes (mean)."""
    computed: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    last: dict[str, Sent] = {}
    for request, hit in zip(requests, hits, strict=True):
        cause = cause_of(request, hit, last.get(request.user), document, fim_prefix)
        last[request.user] = request
        purpose = PURPOSES.get(request.priority, f"priority {request.priority}")
        for key in (cause, purpose):
            computed[key] += len(request.ids) - hit
            counts[key] += 1
    total = sum(computed[cause] for cause in CAUSES) or 1
    return [
        f"  {key:17} {counts[key]:5} requests  {computed[key] / total:6.1%} of computed tokens"
        f"  {computed[key] / counts[key]:6.0f} each"
        for key in (*CAUSES, *PURPOSES.values())
        if counts[key]
    ]


def percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, help="a --record folder of user-N.jsonl")
    parser.add_argument("--tokenizer", type=Path, help="tokenizer.json for text prompts")
    parser.add_argument("--suffix-tokens", type=int, help="cut each suffix to this many first")
    parser.add_argument("--replicas", type=int, help="spread the requests over N replicas")
    parser.add_argument(
        "--head-first",
        metavar="NEAR,STRIDE",
        help="first move the current file's lines at least NEAR above the cursor (split "
        "at a multiple of STRIDE lines) before the snippets",
    )
    parser.add_argument(
        "--line-start",
        action="store_true",
        help="first move each prompt's typed part of the cursor line after <|fim_middle|>",
    )
    parser.add_argument(
        "--heal", action="store_true", help="with --line-start, back off its last token"
    )
    parser.add_argument(
        "--same-snippets",
        choices=("prefetch", "visit"),
        help="first give prefetches their keystroke's snippets, or every request the "
        "first of its document visit's",
    )
    args = parser.parse_args()
    if args.tokenizer is None:
        from tokenizer_helpers import real_qwen_tokenizer_file

        args.tokenizer = real_qwen_tokenizer_file()
    tokenizer = Tokenizer.from_file(str(args.tokenizer))
    markers = [tokenizer.token_to_id(t) for t in ("<|fim_prefix|>", "<|fim_suffix|>")]
    middle = tokenizer.token_to_id("<|fim_middle|>")
    requests = recorded(args.trace, tokenizer)
    sent = [request.ids for request in requests]
    if not sent:
        print("no requests in the trace", file=sys.stderr)
        return 1
    file_sep = tokenizer.token_to_id("<|file_sep|>")
    if args.same_snippets:
        requests = same_snippets(requests, args.same_snippets, file_sep, markers[0])
        sent = [request.ids for request in requests]
    if args.suffix_tokens is not None:
        sent = [cut_suffix(ids, (markers[1], middle), args.suffix_tokens) for ids in sent]
    if args.line_start:
        fim = (markers[0], markers[1], middle)
        sent = [line_start(ids, fim, tokenizer, args.heal) for ids in sent]
    if args.head_first:
        near, stride = (int(n) for n in args.head_first.split(","))
        vocabulary = tokenizer.get_vocab()
        newlines = frozenset(i for t, i in vocabulary.items() if "\u010a" in t or "\n" in t)
        fim = (file_sep, markers[0], markers[1])
        sent = [head_first(ids, fim, newlines, near, stride) for ids in sent]

    def document(ids: list[int]) -> tuple[int, ...]:
        return document_of(ids, file_sep, markers[0])

    if args.replicas:
        spread = routings(args.replicas, document)
        for name, route in spread.items():
            print(f"{args.replicas} replicas, routed {name}: {summary(sent, route)}")
        return 0
    cached = list(uncached(sent))
    by_segment = dict.fromkeys(SEGMENTS, 0)
    for ids, hit in cached:
        bounds = [ids.index(m) if m in ids else len(ids) for m in (*markers, middle)]
        starts = (0, *bounds)
        ends = (*bounds, len(ids))
        for name, start, end in zip(SEGMENTS, starts, ends, strict=True):
            by_segment[name] += max(0, end - max(start, hit))
    n = len(cached)
    mean_prompt = sum(len(ids) for ids in sent) / n
    print(f"{n} requests, prompt mean {mean_prompt:.0f} tokens, {figures(cached)}")
    print(
        "uncached tokens by segment: "
        + ", ".join(f"{name} {count / n:.0f}/request" for name, count in by_segment.items())
    )
    requests = [r._replace(ids=ids) for r, ids in zip(requests, sent, strict=True)]  # cut
    print("computed tokens by cause, and by what the request was for:")
    print("\n".join(by_cause(requests, [hit for _, hit in cached], document, markers[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
