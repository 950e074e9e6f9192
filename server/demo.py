"""`headstart demo`: the server on the sample project, driven over LSP as an editor would.

It spawns `headstart serve`, opens files of examples/sample_project, retypes the end of
a few real lines one keystroke at a time (didChange + inlineCompletion after each key,
as VS Code does) and prints every suggestion with its round-trip latency.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from cache.paths import path_to_uri
from server.local_vllm import LocalBackend, served_models, start_local_vllm

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample_project"


@dataclass(frozen=True)
class Scenario:
    """Retype `line` of `file` from column `keep` on, `typed` characters, key by key."""

    file: str
    line: str
    keep: int
    typed: int


SCENARIOS = (
    Scenario("inventory/pricing.py", "    return sum(item.value() for item in warehouse", 11, 6),
    Scenario("inventory/stock.py", "    if current is None or current.quantity < quantity:", 7, 5),
    Scenario("inventory/report.py", "    net = total_value(warehouse)", 4, 6),
    Scenario("inventory/models.py", "        return self.unit_price * self.quantity", 15, 5),
)


@dataclass
class Keystroke:
    scenario: Scenario
    typed: str
    suggestion: str
    latency_ms: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def capabilities() -> types.ClientCapabilities:
    """What VS Code (with vscode-languageclient 10) announces for what we use."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            inline_completion=types.InlineCompletionClientCapabilities(),
        ),
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16]
        ),
    )


async def run_session(url: str, first_chunk_timeout_ms: int) -> list[Keystroke]:
    client = LanguageClient("headstart-demo", "1")
    warnings: list[str] = []

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        if params.type in (types.MessageType.Error, types.MessageType.Warning):
            warnings.append(params.message)

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(params: types.ConfigurationParams) -> list[object]:
        return [None for _ in params.items]

    await client.start_io(sys.executable, "-m", "server", "serve")
    options = {
        "backend": {
            "url": url,
            "firstChunkTimeoutMs": first_chunk_timeout_ms,
            "totalTimeoutMs": first_chunk_timeout_ms + 10_000,
        }
    }
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities(),
            root_uri=path_to_uri(SAMPLE),
            workspace_folders=[types.WorkspaceFolder(uri=path_to_uri(SAMPLE), name=SAMPLE.name)],
            initialization_options=options,
            client_info=types.ClientInfo(name="headstart demo"),
        )
    )
    client.initialized(types.InitializedParams())
    strokes: list[Keystroke] = []
    try:
        for scenario in SCENARIOS:
            strokes.extend(await replay(client, scenario))
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    for message in warnings:
        print(f"  server log: {message}")
    return strokes


async def replay(client: LanguageClient, scenario: Scenario) -> list[Keystroke]:
    path = SAMPLE / scenario.file
    original = path.read_text()
    row = next(i for i, line in enumerate(original.splitlines()) if line.startswith(scenario.line))
    lines = original.splitlines(keepends=True)
    target = lines[row].rstrip("\n")
    lines[row] = target[: scenario.keep] + "\n"
    uri = path_to_uri(path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text="".join(lines))
        )
    )
    strokes = []
    column = scenario.keep
    for version, char in enumerate(target[scenario.keep : scenario.keep + scenario.typed], 2):
        here = types.Position(line=row, character=column)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=here, end=here), text=char
                    )
                ],
            )
        )
        column += 1
        started = time.perf_counter()
        result = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=row, character=column),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
            )
        )
        latency = (time.perf_counter() - started) * 1000
        items = result.items if isinstance(result, types.InlineCompletionList) else result or []
        text = items[0].insert_text if items else ""
        strokes.append(Keystroke(scenario, target[:column], str(text), latency))
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    return strokes


def report(strokes: list[Keystroke]) -> None:
    current = None
    for stroke in strokes:
        if stroke.scenario is not current:
            current = stroke.scenario
            print(f"\n{current.file}: retyping {current.line.strip()!r}")
        shown = stroke.suggestion.replace("\n", "⏎")[:60]
        print(f"  {stroke.latency_ms:7.1f} ms  {stroke.typed.strip()!s:<40} │ {shown}")
    latencies = [s.latency_ms for s in strokes]
    answered = sum(1 for s in strokes if s.suggestion)
    print(
        f"\n{len(strokes)} keystrokes, {answered} with a suggestion; round trip "
        f"p50 {statistics.median(latencies):.1f} ms, p99 {percentile(latencies, 99):.1f} ms"
    )


def main(backend_url: str | None = None, model_dir: str | None = None) -> int:
    url = backend_url or os.environ.get("HEADSTART_BACKEND_URL")
    model_dir = model_dir or os.environ.get("HEADSTART_MODEL")
    if model_dir and not Path(model_dir).is_dir():
        print(
            f"HEADSTART_MODEL={model_dir} is not a local folder; no model hub is reachable,"
            " so give the path of a downloaded model.",
            file=sys.stderr,
        )
        return 2
    local: LocalBackend | None = None
    if url:
        models = served_models(url)
        if models is None:
            print(f"The configured backend {url} does not answer /models.", file=sys.stderr)
            return 1
        print(f"Backend: {url} (configured), models: {', '.join(models)}")
        first_chunk_ms = 5_000
    else:
        print(
            "No backend configured (HEADSTART_BACKEND_URL); starting vLLM on this machine"
            " (the first run installs vLLM's CPU build if there is no GPU: ~10 minutes)...",
            flush=True,
        )
        started = time.monotonic()
        local = start_local_vllm(model_dir)
        url = local.url
        print(
            f"Backend: {local.description}, ready in {time.monotonic() - started:.0f} s"
            f" at {url} (log: {local.log_path})"
        )
        first_chunk_ms = 60_000 if "CPU" in local.description else 5_000
    try:
        if local is not None and local.dummy_weights:
            print(
                "\nNOTE: no model weights are on this machine, so vLLM runs with random (dummy)"
                " weights.\nThe suggestions below are NOISE: they show the whole pipeline"
                " working (LSP, prompt,\nstreaming, stop rules, latency), not quality. For real"
                " suggestions point Headstart at\na real model: HEADSTART_BACKEND_URL="
                "http://HOST:8000/v1 (any vLLM or OpenAI-compatible\nserver), or"
                " HEADSTART_MODEL=/path/to/Qwen2.5-Coder-1.5B (a local folder)."
            )
        strokes = asyncio.run(run_session(url, first_chunk_ms))
        report(strokes)
        return 0 if strokes else 1
    finally:
        if local is not None:
            local.stop()
