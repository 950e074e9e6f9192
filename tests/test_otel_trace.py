"""End to end: one keystroke is one OpenTelemetry trace, from its edit to the model's stream.

The real server, spawned over LSP as VS Code starts it, asks the fake OpenAI-compatible
model; its spans go over OTLP/HTTP to a real OpenTelemetry collector (Rotel, from its wheel)
that exports them to the test's receiver, which decodes the protobuf with opentelemetry-proto
(without Rotel installed, the server exports to the receiver directly). The fake records the
`traceparent` each request carried. With tracing off, or the extra missing, no header goes
out, nothing is exported, and opentelemetry is never imported.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import fast_settings, server_env, server_with_env, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, send_inline, suggestion, wait_for_log
from lsprotocol import types
from otlp_receiver import OtlpReceiver, RotelCollector, rotel_binary
from pytest_lsp import LanguageClient

ROOT_SPAN = "headstart.inline_completion"
STAGES = {
    "headstart.document.sync",
    "headstart.cursor",
    "headstart.model_info",
    "headstart.context.build",
    "headstart.prompt.render",
    "headstart.queue.wait",
    "headstart.backend.completion",
    "headstart.filters",
}
"""The root's children for a keystroke the model answers (and `headstart.join.wait`)."""
API_KEY = "sk-headstart-test-9d1c0f7e2b"
TYPED = "def total(items):\n    return su█\n"
ANSWER = "(items)"
EXPORT_FAST = {"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiving:
        yield receiving


@pytest.fixture
def collector(receiver: OtlpReceiver, tmp_path: Path) -> Iterator[str]:
    """Where the server sends its spans: Rotel in front of the receiver, where it is
    installed (the dev extra on Linux x86-64), else the receiver itself."""
    binary = rotel_binary()
    if binary is None:
        if os.environ.get("HEADSTART_REQUIRE_E2E"):
            pytest.fail("rotel is not installed (pip install -e '.[dev]')")
        yield receiver.url
        return
    with RotelCollector(binary, receiver.url, tmp_path) as rotel:
        yield rotel.url


async def started(client: LanguageClient, workspace: Path, settings: dict[str, Any]) -> None:
    await start_session(client, "vscode", workspace, settings)


def traced_settings(url: str) -> dict[str, Any]:
    """`log.openTelemetry` on, and timeouts no stalled request in the test reaches."""
    settings = fast_settings(url)
    settings["backend"] |= {"firstChunkTimeoutMs": 20_000, "totalTimeoutMs": 30_000}
    return {**settings, "log": {"openTelemetry": True}}


def type_at(client: LanguageClient, uri: str, at: types.Position, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=at, end=at), text=text
                )
            ],
        )
    )


def after(position: types.Position, characters: int) -> types.Position:
    return types.Position(position.line, position.character + characters)


def stalled_requests(events: list[dict[str, Any]]) -> int:
    """Requests that reached the fake's stalling rule."""
    return sum(event["rule_index"] == 0 for event in events)


def trace_of(spans: list[dict[str, Any]], root: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in spans if s["trace_id"] == root["trace_id"]]


def named(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def roots(spans: list[dict[str, Any]], outcome: str) -> list[dict[str, Any]]:
    return [
        s for s in named(spans, ROOT_SPAN) if s["attributes"].get("headstart.outcome") == outcome
    ]


async def test_a_keystroke_is_one_trace_from_its_edit_to_the_models_stream(
    fake: FakeBackend, workspace: Path, collector: str, receiver: OtlpReceiver
) -> None:
    fake.script([{"match": "stalled", "behaviour": "stall_forever"}], default_text=ANSWER)
    env = server_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector, HEADSTART_API_KEY=API_KEY, **EXPORT_FAST
    )
    async with server_with_env(env) as client:
        await started(client, workspace, traced_settings(fake.url))
        text, position = cursor_at(TYPED)
        uri = open_document(client, workspace / "total.py", text)
        type_at(client, uri, position, "m", 2)  # the keystroke: "su" becomes "sum"
        position = after(position, 1)
        assert await suggestion(client, uri, position) == ANSWER
        type_at(client, uri, position, "(", 3)  # typing the suggestion on: no model request
        assert await suggestion(client, uri, after(position, 1)) == "items)"

        # a stalled request superseded by the next for its document, which is cancelled
        slow_text, slow_at = cursor_at("stalled = 1\nx = █\n")
        slow = open_document(client, workspace / "slow.py", slow_text)
        first = send_inline(client, slow, slow_at, "slow-1")
        await fake.wait_for_async(lambda events: stalled_requests(events) == 1, timeout=5)
        second = send_inline(client, slow, slow_at, "slow-2")
        assert not (await asyncio.wait_for(first, 5)).items  # superseded: answered empty
        await fake.wait_for_async(lambda events: stalled_requests(events) == 2, timeout=5)
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow-2"))
        with pytest.raises(Exception):  # noqa: B017 - the editor's own cancel, answered so
            await asyncio.wait_for(second, 5)

    # the server exported its last spans as it shut down
    spans = receiver.wait_for(
        lambda spans: (
            {"shown", "typed_through", "superseded", "cancelled"}
            <= {s["attributes"].get("headstart.outcome") for s in named(spans, ROOT_SPAN)}
            and len(named(spans, "headstart.backend.completion")) >= 3
        )
    )
    (root,) = roots(spans, "shown")
    trace = trace_of(spans, root)
    by_id = {s["span_id"]: s for s in trace}
    children = [s for s in trace if s["parent_span_id"] == root["span_id"]]
    assert root["parent_span_id"] == "" and root["kind"] == 2  # SERVER: the editor's request
    first_time = {"headstart.join.wait", "headstart.backend.http"}  # and /tokenize, once
    assert STAGES <= {s["name"] for s in children} <= STAGES | first_time
    (request,) = named(trace, "headstart.backend.completion")
    assert request["kind"] == 3  # CLIENT
    inside = {s["name"] for s in trace if s["parent_span_id"] == request["span_id"]}
    assert inside == {"headstart.backend.first_chunk", "headstart.backend.stream"}
    (sync,) = named(trace, "headstart.document.sync")
    assert root["start_ns"] == sync["start_ns"] <= sync["end_ns"]
    for span in trace:  # each stage inside its parent's time
        parent = by_id.get(span["parent_span_id"])
        if parent is not None:
            assert parent["start_ns"] <= span["start_ns"] <= span["end_ns"] <= parent["end_ns"]

    assert root["attributes"]["headstart.document.language"] == "python"
    assert root["attributes"]["rpc.method"] == "textDocument/inlineCompletion"
    assert root["resource"]["service.name"] == "headstart"
    (queue,) = named(trace, "headstart.queue.wait")
    assert queue["attributes"]["headstart.priority"] == "keystroke"
    attributes = request["attributes"]
    assert attributes["headstart.priority"] == "keystroke"
    assert attributes["gen_ai.request.model"] == fake.model
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes["gen_ai.usage.cache_read.input_tokens"] >= 0
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["headstart.stream.end"] == "done"

    # the model got the trace: its request's parent is the backend request's span
    completions = [e for e in fake.events() if e["text"] == ANSWER]
    assert completions[0]["headers"]["traceparent"].split("-")[1:3] == [
        root["trace_id"],
        request["span_id"],
    ]
    (typed,) = roots(spans, "typed_through")
    assert not named(trace_of(spans, typed), "headstart.backend.completion")
    for outcome, end in (("superseded", "cancelled"), ("cancelled", "cancelled")):
        (ended,) = roots(spans, outcome)
        (stalled,) = named(trace_of(spans, ended), "headstart.backend.completion")
        assert stalled["attributes"]["headstart.stream.end"] == end

    # no code, prompt or key in anything exported
    for body in receiver.bodies:
        assert API_KEY.encode() not in body
        assert b"total(items" not in body and b"return su" not in body and b"stalled" not in body


SHADOW_OTEL = "raise ImportError('opentelemetry imported while tracing is off')\n"
"""An `opentelemetry` package first on the server's path: importing it fails, as it does
where the extra is not installed, and shows whether anything imported it."""


@pytest.fixture
def no_otel(tmp_path: Path) -> str:
    package = tmp_path / "shadow" / "opentelemetry"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SHADOW_OTEL)
    return str(package.parent)


OFF_CASES = {
    "setting off": ({}, False),
    "OTEL_SDK_DISABLED": ({"OTEL_SDK_DISABLED": "true"}, True),
    "OTEL_TRACES_EXPORTER=none": ({"OTEL_TRACES_EXPORTER": "none"}, True),
}


@pytest.mark.parametrize("case", OFF_CASES)
async def test_tracing_off_sends_no_traceparent_exports_nothing_and_imports_no_opentelemetry(
    case: str, fake: FakeBackend, workspace: Path, receiver: OtlpReceiver, no_otel: str
) -> None:
    variables, setting = OFF_CASES[case]
    env = server_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, **EXPORT_FAST, **variables)
    env["PYTHONPATH"] = os.pathsep.join([no_otel, env["PYTHONPATH"]])
    settings = {**fast_settings(fake.url), "log": {"openTelemetry": setting}}
    fake.script(default_text=ANSWER)
    async with server_with_env(env) as client:
        await started(client, workspace, settings)
        text, position = cursor_at(TYPED)
        uri = open_document(client, workspace / "total.py", text)
        assert await suggestion(client, uri, position) == ANSWER
        assert "opentelemetry" not in logs(client).lower()
    await asyncio.sleep(0.3)  # the server has exited: anything it would export is out
    assert receiver.bodies == []
    assert all("traceparent" not in event["headers"] for event in fake.events())


async def test_the_environments_exporter_turns_it_on_and_a_missing_extra_is_said(
    fake: FakeBackend, workspace: Path, receiver: OtlpReceiver, no_otel: str
) -> None:
    """OTEL_TRACES_EXPORTER alone turns tracing on; without the extra the server says
    what to install and answers as before."""
    fake.script(default_text=ANSWER)
    text, position = cursor_at(TYPED)
    for missing in (False, True):
        env = server_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_TRACES_EXPORTER="otlp", **EXPORT_FAST
        )
        if missing:
            env["PYTHONPATH"] = os.pathsep.join([no_otel, env["PYTHONPATH"]])
        async with server_with_env(env) as client:
            await started(client, workspace, fast_settings(fake.url))
            uri = open_document(client, workspace / f"total_{missing}.py", text)
            assert await suggestion(client, uri, position) == ANSWER
            if missing:
                await wait_for_log(client, "pip install 'headstart[otel]'")
    traced, untraced = fake.events()
    assert "traceparent" in traced["headers"] and "traceparent" not in untraced["headers"]
    spans = receiver.wait_for(lambda spans: bool(named(spans, ROOT_SPAN)))
    assert {s["trace_id"] for s in named(spans, ROOT_SPAN)} == {
        traced["headers"]["traceparent"].split("-")[1]
    }


def test_importing_the_server_imports_no_opentelemetry() -> None:
    """The request path's modules, loaded and tracing configured off, leave opentelemetry
    out of the process (while the extra is installed here)."""
    import subprocess

    check = (
        "import sys; import server.lsp.handlers; from server import tracing; "
        "tracing.configure(False, {}); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    env = server_env()
    out = subprocess.run(
        [sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
