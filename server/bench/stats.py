"""The figures of one load step of `headstart bench`, from the users' records and the
engine's metrics (vLLM's, SGLang's or TensorRT-LLM's) read before and after the step.

Latency is reported as p50/p99/p999 (nearest rank), never as a mean. vLLM's counters are
differences across the step, so a step is not charged for what came before it; its time to
first token, time between tokens and queue time are estimated from the histograms' buckets
(the bucket edge where the quantile falls), which is as precise as vLLM's buckets.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from server.bench.engine_metrics import COUNTER_KEYS, HISTOGRAM_KEYS, NAMES, MetricNames
from server.metrics import percentile, percentiles

Record = dict[str, Any]

STAGES = ("model_info", "context", "prompt", "queue", "first_chunk", "stream", "filters")
"""The server's stages in order (server.completion.request.Suggestion.timings_ms; `stream` counted
here from the first chunk on); with `transport` (the round trip less the server's own
time) they add up to keystroke-to-suggestion."""

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([-+0-9.eEinfNa]+)$", re.M)
_LE = re.compile(r'le="([^"]+)"')


def parse_metrics(text: str, names: MetricNames = NAMES["vllm"]) -> dict[str, Any]:
    """An engine's counters (summed over label sets), its histograms' buckets (each summed
    over label sets) and its waiting queue, by the engine's `names`
    (server.bench.engine_metrics)."""
    counters: dict[str, float] = defaultdict(float)
    buckets: dict[str, dict[float, float]] = {key: defaultdict(float) for key in names.histograms}
    by_bucket_name = {metric + "_bucket": key for key, metric in names.histograms.items()}
    queue: float | None = None
    for name, labels, value in _SAMPLE.findall(text):
        for key, (metric, label) in names.counters.items():
            if name in (metric, metric + "_total") and label in (labels or ""):
                counters[key] += float(value)
        if name in by_bucket_name:
            edge = _LE.search(labels or "")
            if edge:
                buckets[by_bucket_name[name]][float(edge.group(1))] += float(value)
        elif name == names.queue:
            queue = (queue or 0.0) + float(value)
    histograms = {key: dict(edges) for key, edges in buckets.items() if edges}
    return {"counters": dict(counters), "histograms": histograms, "queue": queue}


def no_metrics() -> dict[str, Any]:
    """A read of /metrics that did not answer, shaped as `parse_metrics`'s."""
    return {"counters": {}, "histograms": {}, "queue": None}


def metrics_delta(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, Any]:
    """What vLLM did during a step: prefix-cache hit ratio, throughput, the prompt tokens it
    computed (those its prefix cache did not hold: what bounds users per GPU), the quantiles of
    its time to first token, time between tokens and queue time, the share of completion
    requests it did not finish (closed early by the client, or still running at the step's
    end), its API server's CPU time per completion request, and, with speculative decoding,
    the share of draft tokens it accepted."""
    counts = {
        key: after["counters"].get(key, 0.0) - before["counters"].get(key, 0.0)
        for key in COUNTER_KEYS
    }
    queries, posts = counts["prefix_cache_queries"], counts["completion_posts"]
    drafts = counts["draft_tokens"]
    quantiles = {key: _histogram_delta(before, after, key) for key in HISTOGRAM_KEYS}
    return {
        "prefixCacheHitRatio": counts["prefix_cache_hits"] / queries if queries else None,
        "promptTokensPerS": counts["prompt_tokens"] / seconds,
        "computedPromptTokensPerS": (queries - counts["prefix_cache_hits"]) / seconds,
        "generationTokensPerS": counts["generation_tokens"] / seconds,
        "requestsPerS": counts["requests"] / seconds,
        "postsPerS": posts / seconds,
        "unfinishedShare": 1 - counts["requests"] / posts if posts else None,
        "apiServerCpuMsPerRequest": (
            counts["api_server_cpu_seconds"] * 1000 / posts if posts else None
        ),
        "ttftMs": quantiles["ttft"],
        "itlMs": quantiles["itl"],
        "queueTimeMs": quantiles["queue_time"],
        "draftAcceptedShare": counts["accepted_tokens"] / drafts if drafts else None,
        "waitingAtEnd": after.get("queue"),
        "counts": counts,
    }


def _histogram_delta(
    before: dict[str, Any], after: dict[str, Any], key: str
) -> dict[str, float | None]:
    """p50 and p99 of what one histogram counted between two reads (None: not counted)."""
    old, new = before["histograms"].get(key, {}), after["histograms"].get(key, {})
    buckets = {edge: count - old.get(edge, 0.0) for edge, count in new.items()}
    return {f"p{q:g}": histogram_quantile(buckets, q) for q in (50, 99)}


def step_metrics(
    before: dict[str, Any], after: dict[str, Any], seconds: float
) -> dict[str, Any] | None:
    """`metrics_delta` of a step, or None unless both reads of /metrics answered: an
    overloaded API server may time out one, and a missing read is no zero."""
    if not before["counters"] or not after["counters"]:
        return None
    return metrics_delta(before, after, seconds)


def sum_metrics(reads: list[dict[str, Any]]) -> dict[str, Any]:
    """Several engines' reads of /metrics (`parse_metrics`) as one engine's: the replicas
    behind a router, their counters, histograms and waiting queues added up. One read
    that did not answer leaves the sum empty, as a missing read is no zero."""
    if not reads or any(not read["counters"] for read in reads):
        return no_metrics()
    counters: dict[str, float] = defaultdict(float)
    histograms: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for read in reads:
        for key, value in read["counters"].items():
            counters[key] += value
        for key, edges in read["histograms"].items():
            for edge, count in edges.items():
                histograms[key][edge] += count
    queues = [read["queue"] for read in reads if read["queue"] is not None]
    return {
        "counters": dict(counters),
        "histograms": {key: dict(edges) for key, edges in histograms.items()},
        "queue": sum(queues) if queues else None,
    }


def replica_figures(
    url: str, before: dict[str, Any], after: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """One replica's part of a step: its prefix-cache hit ratio, the requests it finished
    and the prompt tokens it took (None where a read of its /metrics did not answer)."""
    delta = step_metrics(before, after, seconds)
    if delta is None:
        return {"url": url, "prefixCacheHitRatio": None, "requests": None, "promptTokens": None}
    return {
        "url": url,
        "prefixCacheHitRatio": delta["prefixCacheHitRatio"],
        "requests": round(delta["counts"]["requests"]),
        "promptTokens": round(delta["counts"]["prompt_tokens"]),
    }


def histogram_quantile(buckets: dict[float, float], q: float) -> float | None:
    """The upper edge (ms) of the cumulative bucket where the q-th percentile falls."""
    if not buckets:
        return None
    edges = sorted(buckets)
    total = buckets[edges[-1]]
    if total <= 0:
        return None
    for edge in edges:
        if buckets[edge] >= total * q / 100:
            return edge * 1000
    return None


def quantiles(values: list[float]) -> dict[str, float | int | None]:
    """n, p50, p99 and p999 of `values` (None when there are none)."""
    if not values:
        return {"n": 0, "p50": None, "p99": None, "p999": None}
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "p999": percentile(values, 99.9),
    }


def cdf(values: list[float]) -> list[float]:
    """The 0th, 0.1st, ..., 100th percentiles of `values` ([] without any), for a CDF plot."""
    return percentiles(values, [q / 10 for q in range(1001)]) if values else []


def _share(count: int, of: list[Record]) -> float | None:
    """`count` as a share of the records `of` (None when there are none)."""
    return count / len(of) if of else None


def summarize(records: list[Record], lags: list[float], seconds: float) -> dict[str, Any]:
    """The users' side of one step: outcomes, keystroke-to-suggestion, stages, cache, and
    what developers did (edits, pauses, suggestions shown and taken; 0 for typists)."""
    keys = [r for r in records if "outcome" in r]
    answered = [r for r in keys if r["outcome"] == "answered" and "error" not in r]
    cached = [r for r in answered if r.get("cached")]
    joined = [r for r in answered if r.get("joined")]
    model = [r for r in answered if not r.get("cached")]
    stages: dict[str, list[float]] = defaultdict(list)
    for record in model:
        timings = dict(record.get("timings") or {})
        if "stream" in timings and "first_chunk" in timings:
            timings["stream"] -= timings["first_chunk"]
        for stage in STAGES:
            if stage in timings:
                stages[stage].append(timings[stage])
        if record.get("serverMs") is not None:
            stages["transport"].append(max(0.0, record["ms"] - record["serverMs"]))
    outcomes: dict[str, int] = defaultdict(int)
    for record in keys:
        outcomes["error" if "error" in record else record["outcome"]] += 1
    errors = sorted({str(r["error"]) for r in keys if "error" in r})
    return {
        "keys": len(keys),
        "keysPerS": len(keys) / seconds,
        "outcomes": dict(outcomes),
        "accepted": sum(1 for r in records if "accepted" in r),
        "shown": sum(1 for r in records if "shown" in r),
        "edits": sum(1 for r in records if "edit" in r),
        "midLineEdits": sum(1 for r in records if r.get("midLine")),
        "fileChanges": sum(1 for r in records if r.get("newFile")),
        "pauses": sum(1 for r in records if "pause" in r),
        "pauseSeconds": sum(r["pause"] for r in records if "pause" in r),
        "rightSuggestions": sum(1 for r in answered if r.get("right")),
        "completionCacheHitRatio": _share(len(cached), answered),
        "joinedShare": _share(len(joined), answered),
        "joinMissedShare": _share(
            sum(1 for r in model if "join_wait" in (r.get("timings") or {})), answered
        ),
        "backgroundPausedShare": _share(
            sum(1 for r in answered if r.get("background") == "paused"), answered
        ),
        "smallPromptsShare": _share(
            sum(1 for r in answered if r.get("prompts") == "small"), answered
        ),
        "keystrokeToSuggestionMs": quantiles([r["ms"] for r in answered]),
        "modelRequestsMs": quantiles([r["ms"] for r in model]),
        "modelRequestsByModeMs": by_mode(model),
        "cacheHitsMs": quantiles([r["ms"] for r in cached]),
        "stagesMs": {stage: quantiles(values) for stage, values in stages.items()},
        "driverLagMs": quantiles(lags),
        "errors": errors[:10],
    }


def by_mode(model: list[Record]) -> dict[str, dict[str, Any]]:
    """Model requests' keystroke-to-suggestion by the suggestion's mode (line, block): a
    block is answered at its end, a line at the line's end, so the two tails differ."""
    modes: dict[str, list[float]] = defaultdict(list)
    for record in model:
        if record.get("mode"):
            modes[record["mode"]].append(record["ms"])
    return {mode: quantiles(values) for mode, values in sorted(modes.items())}


def keystroke_latencies(records: list[Record]) -> list[float]:
    """Keystroke-to-suggestion of every answered key (for the CDF plot)."""
    return [r["ms"] for r in records if r.get("outcome") == "answered" and "error" not in r]


def summarize_replay(records: list[Record], seconds: float) -> dict[str, Any]:
    """The replayed users' side of one step (`server.bench.replay`): how fast the backend
    answered the requests keystrokes wait for, and how late the driver sent them.

    "Waited for" are keystroke requests (priority 0) that the recording read to an
    answer (ended done or closed); a keystroke request the recording cancelled was
    superseded, so only whether its first token came before the cancel is counted.
    Prefetches a paused user did not send count as `throttled`, not as requests. A
    keystroke request that waited, unsent, for the running one it typed on (`joinMs`) has
    that wait in its time to first token: the user waited for it too."""
    outcomes: dict[str, int] = defaultdict(int)
    for record in records:
        outcomes[record["outcome"]] += 1
    throttled = outcomes.pop("throttled", 0)
    records = [r for r in records if r["outcome"] != "throttled"]
    keystrokes = [r for r in records if r["priority"] == 0 and r["outcome"] != "error"]
    waited = [r for r in keystrokes if r["recorded"] in ("done", "closed")]
    superseded = [r for r in keystrokes if r["recorded"] == "cancelled"]
    first_tokens = [r.get("joinMs", 0.0) + r["ttftMs"] for r in waited if "ttftMs" in r]
    return {
        "requests": len(records),
        "requestsPerS": len(records) / seconds,
        "outcomes": dict(outcomes),
        "throttled": throttled,
        "pausedShare": (
            sum(1 for r in keystrokes if r.get("paused")) / len(keystrokes) if keystrokes else None
        ),
        "keystrokeTtftMs": quantiles(first_tokens),
        "keystrokeTtftCdfMs": cdf(first_tokens),
        "joinedShare": (
            sum(1 for r in keystrokes if "joinMs" in r) / len(keystrokes) if keystrokes else None
        ),
        "keystrokeNoAnswer": sum(1 for r in waited if "ttftMs" not in r),
        "supersededAnsweredShare": (
            sum(1 for r in superseded if "ttftMs" in r) / len(superseded) if superseded else None
        ),
        "backgroundTtftMs": quantiles(
            [r["ttftMs"] for r in records if r["priority"] > 0 and "ttftMs" in r]
        ),
        "sendLagMs": quantiles([r["lagMs"] for r in records]),
        "errors": sorted(
            {str(r.get("error") or r.get("status")) for r in records if r["outcome"] == "error"}
        )[:10],
    }
