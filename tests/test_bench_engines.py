"""The bench reads each engine's metrics by that engine's names and from its route: the same
figures (prefix-cache hits, throughput, time to first token, the waiting queue) out of
vLLM's, SGLang's and TensorRT-LLM's Prometheus text, and the engine told from /v1/models.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fake_openai import FakeBackend

from server.bench.engine_metrics import NAMES, engine_at
from server.bench.run import _scrape
from server.bench.stats import metrics_delta, parse_metrics

SGLANG = """# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="q15"} 1000.0
sglang:cached_tokens_total{model_name="q15"} 800.0
sglang:generation_tokens_total{model_name="q15"} 120.0
sglang:num_requests_total{model_name="q15"} 10.0
sglang:num_queue_reqs{model_name="q15"} 3.0
sglang:cache_hit_rate{model_name="q15"} 0.5
sglang:time_to_first_token_seconds_bucket{le="0.01",model_name="q15"} 2.0
sglang:time_to_first_token_seconds_bucket{le="0.02",model_name="q15"} 8.0
sglang:time_to_first_token_seconds_bucket{le="0.04",model_name="q15"} 10.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="q15"} 10.0
sglang:inter_token_latency_seconds_bucket{le="0.005",model_name="q15"} 5.0
sglang:inter_token_latency_seconds_bucket{le="+Inf",model_name="q15"} 5.0
sglang:queue_time_seconds_bucket{le="0.005",model_name="q15"} 5.0
sglang:queue_time_seconds_bucket{le="+Inf",model_name="q15"} 5.0
"""
TRTLLM = """# TYPE trtllm_prompt_tokens_total counter
trtllm_prompt_tokens_total{model_name="q15"} 1000.0
trtllm_prompt_cached_tokens_total{model_name="q15"} 800.0
trtllm_generation_tokens_total{model_name="q15"} 120.0
trtllm_request_success_total{finished_reason="stop",model_name="q15"} 9.0
trtllm_request_success_total{finished_reason="length",model_name="q15"} 1.0
trtllm_num_requests_waiting{model_name="q15"} 3.0
trtllm_time_to_first_token_seconds_bucket{le="0.01",model_name="q15"} 2.0
trtllm_time_to_first_token_seconds_bucket{le="0.02",model_name="q15"} 8.0
trtllm_time_to_first_token_seconds_bucket{le="0.04",model_name="q15"} 10.0
trtllm_time_to_first_token_seconds_bucket{le="+Inf",model_name="q15"} 10.0
trtllm_time_per_output_token_seconds_bucket{le="0.005",model_name="q15"} 5.0
trtllm_time_per_output_token_seconds_bucket{le="+Inf",model_name="q15"} 5.0
trtllm_request_queue_time_seconds_bucket{le="0.005",model_name="q15"} 5.0
trtllm_request_queue_time_seconds_bucket{le="+Inf",model_name="q15"} 5.0
"""
VLLM = """vllm:prefix_cache_queries_total{engine="0",model_name="q15"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="q15"} 800.0
vllm:prompt_tokens_total{engine="0",model_name="q15"} 1000.0
vllm:generation_tokens_total{engine="0",model_name="q15"} 120.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="q15"} 10.0
vllm:num_requests_waiting{engine="0",model_name="q15"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="q15"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="q15"} 8.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="q15"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 10.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.005",model_name="q15"} 5.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 5.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.005",model_name="q15"} 5.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="q15"} 5.0
"""


def later(text: str) -> str:
    """The same engine after a step: 2,000 more prompt tokens, 1,800 of them cached, 100
    more first tokens all in the (0.02, 0.04] bucket, 10 more gaps between tokens and 10
    more queue times within 5 ms, one request waiting."""
    replaced = text
    for before, after in (
        ("} 1000.0", "} 3000.0"),
        ("} 800.0", "} 2600.0"),
        ("} 120.0", "} 220.0"),
        ('le="0.04",model_name="q15"} 10.0', 'le="0.04",model_name="q15"} 110.0'),
        ('le="+Inf",model_name="q15"} 10.0', 'le="+Inf",model_name="q15"} 110.0'),
        ('le="0.04",model_name="q15"} 10.0', 'le="0.04",model_name="q15"} 110.0'),
        ('le="+Inf",model_name="q15"} 10.0', 'le="+Inf",model_name="q15"} 110.0'),
        ("} 3.0", "} 1.0"),
        ("} 5.0", "} 15.0"),
    ):
        replaced = replaced.replace(before, after)
    return replaced


@pytest.mark.parametrize(
    ("engine", "text"), [("vllm", VLLM), ("sglang", SGLANG), ("trtllm", TRTLLM)]
)
def test_each_engines_metrics_give_the_same_figures(engine: str, text: str) -> None:
    names = NAMES[engine]
    before = parse_metrics(text, names)
    assert before["counters"]["requests"] == 10.0  # summed over finish reasons
    assert before["queue"] == 3.0

    delta = metrics_delta(before, parse_metrics(later(text), names), seconds=10.0)

    assert delta["prefixCacheHitRatio"] == pytest.approx(0.9)  # 1,800 of 2,000
    assert delta["promptTokensPerS"] == pytest.approx(200.0)
    assert delta["computedPromptTokensPerS"] == pytest.approx(20.0)  # 200 of the 2,000
    assert delta["generationTokensPerS"] == pytest.approx(10.0)
    assert delta["ttftMs"] == {"p50": 40.0, "p99": 40.0}
    assert delta["itlMs"] == {"p50": 5.0, "p99": 5.0}
    assert delta["queueTimeMs"] == {"p50": 5.0, "p99": 5.0}
    assert delta["waitingAtEnd"] == 1.0


def test_one_engines_names_find_nothing_in_anothers_metrics() -> None:
    assert parse_metrics(SGLANG, NAMES["vllm"]) == {
        "counters": {},
        "histograms": {},
        "queue": None,
    }
    assert parse_metrics(VLLM, NAMES["trtllm"])["counters"] == {}


@pytest.mark.parametrize("flavor", ["vllm", "sglang", "trtllm"])
def test_the_engine_is_told_from_its_models_and_its_metrics_read_from_its_route(
    flavor: str,
) -> None:
    """A fake that answers as the engine does: its `owned_by`, and its metrics where the
    engine keeps them (TensorRT-LLM's /metrics is JSON, its Prometheus text elsewhere)."""
    with FakeBackend(extra_args=["--flavor", flavor]) as fake:
        fake.script([{"match": "x = 1", "text": "return x + 1", "chunk_delay_ms": 2}])
        for _ in range(3):
            httpx.post(
                f"{fake.url}/completions",
                json={
                    "model": fake.model,
                    "prompt": "x = 1\n" * 20,
                    "max_tokens": 4,
                    "stream": True,
                },
                trust_env=False,
            ).raise_for_status()

        engine = engine_at(fake.url)
        scraped = asyncio.run(_scrape(fake.url, NAMES[engine]))

    assert engine == flavor
    assert scraped["counters"]["prefix_cache_queries"] > 0
    assert scraped["counters"]["prefix_cache_hits"] > 0  # the same prompt three times
    assert scraped["counters"]["requests"] == 3
    assert max(scraped["histograms"]["ttft"].values()) == 3  # three first tokens
    assert max(scraped["histograms"]["itl"].values()) == 3  # three streams' token gaps


def test_a_server_that_is_no_known_engine_is_read_as_vllm() -> None:
    assert engine_at("http://127.0.0.1:9/v1", timeout_s=0.5) == "vllm"
