"""Where each serving engine keeps its Prometheus metrics, and what it calls them.

The bench reads the same figures from every engine (prefix-cache hits, throughput, time to
first token, the time between tokens, the time a request queued, the waiting queue), but
vLLM, SGLang and TensorRT-LLM name them differently, and TensorRT-LLM serves them at
/prometheus/metrics (its /metrics is JSON). The names come
from each engine's source: vLLM 0.25's metrics, SGLang's `metrics/collector.py`,
TensorRT-LLM's `metrics/collector.py`. A backend says which engine it is in /v1/models
(`owned_by`); anything else is read with vLLM's names, and what it lacks is left out.

The prefix-cache hit ratio is hits over queried prompt tokens: vLLM counts both in whole
blocks, SGLang and TensorRT-LLM count cached tokens against all prompt tokens, so the
ratios agree in meaning, not to the block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import httpx

from server.backend.engines import engine_of

COUNTER_KEYS: Final = (
    "prefix_cache_queries",
    "prefix_cache_hits",
    "prompt_tokens",
    "generation_tokens",
    "requests",
    "api_server_cpu_seconds",
    "completion_posts",
    "draft_tokens",
    "accepted_tokens",
)
"""Our names for the counters the bench differences over a step."""

HISTOGRAM_KEYS: Final = ("ttft", "itl", "queue_time")
"""Our names for the histograms the bench differences over a step: time to first token,
time between a request's tokens (a decode step, where prefills share it), time a request
waited before it was scheduled."""


@dataclass(frozen=True)
class MetricNames:
    path: str
    """Where the Prometheus text is, beside /v1."""
    counters: Mapping[str, tuple[str, str]]
    """Our name -> (metric, a label its samples must carry, "" for any); each summed over
    its matching label sets, `_total` or not."""
    histograms: Mapping[str, str]
    """Our name (HISTOGRAM_KEYS) -> the engine's histogram; a key left out is not read."""
    queue: str
    """The gauge of requests waiting to be scheduled."""


_PROCESS = {
    "api_server_cpu_seconds": ("process_cpu_seconds", ""),
    "completion_posts": ("http_requests", 'handler="/v1/completions"'),
}
"""`process_cpu_seconds` is the API server process's own (prometheus_client's process
collector), not the engine's. `completion_posts` counts POSTs to /v1/completions however
they ended (vLLM 0.25 counts no aborted request under finished_reason="abort"); vLLM has
both, the others may have neither, and then those figures are left out."""

NAMES: Final[Mapping[str, MetricNames]] = {
    "vllm": MetricNames(
        "/metrics",
        {
            "prefix_cache_queries": ("vllm:prefix_cache_queries", ""),
            "prefix_cache_hits": ("vllm:prefix_cache_hits", ""),
            "prompt_tokens": ("vllm:prompt_tokens", ""),
            "generation_tokens": ("vllm:generation_tokens", ""),
            "requests": ("vllm:request_success", ""),
            "draft_tokens": ("vllm:spec_decode_num_draft_tokens", ""),  # speculative decoding
            "accepted_tokens": ("vllm:spec_decode_num_accepted_tokens", ""),
            **_PROCESS,
        },
        {
            "ttft": "vllm:time_to_first_token_seconds",
            "itl": "vllm:inter_token_latency_seconds",
            "queue_time": "vllm:request_queue_time_seconds",
        },
        "vllm:num_requests_waiting",
    ),
    "sglang": MetricNames(
        "/metrics",  # with --enable-metrics
        {
            "prefix_cache_queries": ("sglang:prompt_tokens", ""),
            "prefix_cache_hits": ("sglang:cached_tokens", ""),  # not cache_hit_rate: a gauge
            "prompt_tokens": ("sglang:prompt_tokens", ""),
            "generation_tokens": ("sglang:generation_tokens", ""),
            "requests": ("sglang:num_requests", ""),
            **_PROCESS,
        },
        {
            "ttft": "sglang:time_to_first_token_seconds",
            "itl": "sglang:inter_token_latency_seconds",
            "queue_time": "sglang:queue_time_seconds",
        },
        "sglang:num_queue_reqs",
    ),
    "trtllm": MetricNames(
        "/prometheus/metrics",  # with return_perf_metrics
        {
            "prefix_cache_queries": ("trtllm_prompt_tokens", ""),
            "prefix_cache_hits": ("trtllm_prompt_cached_tokens", ""),
            "prompt_tokens": ("trtllm_prompt_tokens", ""),
            "generation_tokens": ("trtllm_generation_tokens", ""),
            "requests": ("trtllm_request_success", ""),
            **_PROCESS,
        },
        {
            "ttft": "trtllm_time_to_first_token_seconds",
            "itl": "trtllm_time_per_output_token_seconds",  # a request's mean, not each gap
            "queue_time": "trtllm_request_queue_time_seconds",
        },
        "trtllm_num_requests_waiting",
    ),
}


def engine_at(url: str, timeout_s: float = 10.0) -> str:
    """The engine serving at `url` (…/v1), from its /v1/models `owned_by`; "vllm" for any
    other server or none (its metrics are then read by vLLM's names)."""
    try:
        reply = httpx.get(f"{url.rstrip('/')}/models", timeout=timeout_s, trust_env=False)
        owned_by = str(reply.json()["data"][0].get("owned_by", ""))
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return "vllm"
    return engine_of(owned_by) or "vllm"
