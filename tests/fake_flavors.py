"""How the fake model (fake_openai.py --flavor) tells vLLM, SGLang and TensorRT-LLM apart.

Why: the engines serve the same OpenAI API but differ where Headstart and its bench look:
what /v1/models says in `owned_by`, where the Prometheus metrics are and what they are
called, and which request fields a completion may carry. A fake that differs in exactly
those places lets the engine handling be tested on a real socket without a GPU. The names
follow each engine's source (vLLM 0.25, SGLang's metrics/collector.py, TensorRT-LLM's
metrics/collector.py and serve/openai_protocol.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FLAVORS = ("vllm", "sglang", "trtllm")
OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}
METRICS_PATH = {"vllm": "/metrics", "sglang": "/metrics", "trtllm": "/prometheus/metrics"}
BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
"""The histograms' bucket edges (s): time to first token and time between tokens."""

TRTLLM_FIELDS = frozenset(
    {
        "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
        "max_tokens", "n", "presence_penalty", "seed", "stop", "stream", "stream_options",
        "suffix", "temperature", "top_p", "user", "lora_request", "prompt_ignore_length",
        "use_beam_search", "top_k", "top_p_min", "min_p", "repetition_penalty",
        "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output",
        "ignore_eos", "min_tokens", "skip_special_tokens", "spaces_between_special_tokens",
        "truncate_prompt_tokens", "return_context_logits", "detokenize",
        "thinking_token_budget", "add_special_tokens", "response_format",
        "disaggregated_params", "priority", "conversation_params",
    }
)  # fmt: skip
"""TensorRT-LLM's CompletionRequest fields: its models forbid any other (extra="forbid"),
so vLLM's `return_token_ids` and `cache_salt` are answered with 400."""


@dataclass
class EngineStats:
    """What an engine counts, besides its prefix cache, that the fake counts too."""

    generation_tokens: int = 0
    finished: int = 0
    first_token_s: list[float] = field(default_factory=list)
    token_gap_s: list[float] = field(default_factory=list)
    """Each finished stream's mean time between its chunks."""


def refusal(flavor: str, body: Mapping[str, Any]) -> str | None:
    """Why the engine answers this completion body with 400, in its words; None if not."""
    if flavor != "trtllm":
        return None
    extra = sorted(set(body) - TRTLLM_FIELDS)
    if extra:
        return (
            f"[{{'type': 'extra_forbidden', 'loc': ('body', '{extra[0]}'), "
            f"'msg': 'Extra inputs are not permitted', 'input': {body[extra[0]]!r}}}]"
        )
    priority = body.get("priority")
    if priority is not None and not (isinstance(priority, int | float) and 0 <= priority <= 1):
        return (
            "[{'type': 'less_than_equal', 'loc': ('body', 'priority'), "
            f"'msg': 'Input should be less than or equal to 1', 'input': {priority!r}}}]"
        )
    return None


ITL_NAMES = {
    "vllm": "vllm:inter_token_latency_seconds",
    "sglang": "sglang:inter_token_latency_seconds",
    "trtllm": "trtllm_time_per_output_token_seconds",
}
"""Each engine's histogram of the time between a request's tokens."""


def metrics(
    flavor: str, path: str, model: str, prompt: int, cached: int, stats: EngineStats
) -> tuple[str, str] | None:
    """(body, content type) of an SGLang or TensorRT-LLM metrics route; None where the
    engine has none there. `prompt` and `cached` are prompt tokens and those found in the
    prefix cache."""
    if flavor == "trtllm" and path == "/metrics":
        return "[]", "application/json"  # its iteration stats, not Prometheus
    if flavor == "vllm" or path != METRICS_PATH[flavor]:
        return None
    prefix = "sglang:" if flavor == "sglang" else "trtllm_"
    labels = f'{{model_name="{model}"}}'
    cached_name = "cached_tokens" if flavor == "sglang" else "prompt_cached_tokens"
    finished = "num_requests" if flavor == "sglang" else "request_success"
    waiting = "num_queue_reqs" if flavor == "sglang" else "num_requests_waiting"
    lines = [
        f"{prefix}prompt_tokens_total{labels} {prompt}",
        f"{prefix}{cached_name}_total{labels} {cached}",
        f"{prefix}generation_tokens_total{labels} {stats.generation_tokens}",
        f"{prefix}{finished}_total{labels} {stats.finished}",
        f"{prefix}{waiting}{labels} 0",
        *histogram_lines(f"{prefix}time_to_first_token_seconds", model, stats.first_token_s),
        *histogram_lines(ITL_NAMES[flavor], model, stats.token_gap_s),
    ]
    if flavor == "sglang":
        rate = cached / prompt if prompt else 0.0
        lines.append(f"sglang:cache_hit_rate{labels} {rate}")  # a gauge: not differenced
    return "\n".join(lines) + "\n", "text/plain; version=0.0.4"


def histogram_lines(name: str, model: str, values: list[float]) -> list[str]:
    """A histogram's cumulative buckets, as prometheus_client writes them."""
    lines = []
    for edge in (*BUCKETS, float("inf")):
        count = sum(1 for s in values if s <= edge)
        le = "+Inf" if edge == float("inf") else f"{edge:g}"
        lines.append(f'{name}_bucket{{le="{le}",model_name="{model}"}} {count}')
    return lines
