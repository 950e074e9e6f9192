"""OpenAPI diagnostics on a large document, and what they cost the keystrokes meanwhile.

    python benchmarks/aiapi/contract_diagnostics.py [DOC]

DOC defaults to GitHub's description (13 MB of JSON, from npm @octokit/openapi, which
`benchmarks/aiapi/corpus.py` installs into .tools/aiapi-corpus). A real `headstart serve`
is driven over LSP as VS Code drives it, against the fake model server of the tests:

1. Inline completions in a small Python file, one every 100 ms, each in a document of its
   own (a model request each), with no OpenAPI document open: the baseline.
2. The same for 10 s after a copy of DOC whose `openapi` key is renamed is opened: what a
   document that size costs the server without any OpenAPI work (pygls reads 13 MB of
   JSON-RPC, the project cache takes the text).
3. The same while DOC is opened and validated (the worker's start and imports, then the
   validation), until its diagnostics are published; then a blank line added, checked
   by the warm worker; then an edit, and another 5 s later, which stops the first check
   (server.lsp.contracts.SUPERSEDE_AFTER_S) and checks the newest text.

4. With `--generate TARGET` (`client.python`, ...): the document saved as it is now, the
   generate action run on it (`headstart.generateFromContract`), the completions going on
   until its workspace/applyEdit has come (the client applies nothing).

Printed: the time from didOpen (and from each edit) to publishDiagnostics, and each
phase's completion latency (p50, p99, max) as the client sees it. The machine's load is
printed too: timings on a shared CPU move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import SERVER_COMMAND, editor_capabilities, fast_settings, server_env  # noqa: E402
from fake_openai import FakeBackend  # noqa: E402
from lsp_helpers import cursor_at, open_document, suggestion  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient, make_test_lsp_client  # noqa: E402

GITHUB = ROOT / ".tools/aiapi-corpus/node_modules/@octokit/openapi/generated/api.github.com.json"


def say(phase: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {phase}", file=sys.stderr, flush=True)


def spread(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"  {label:34} n={len(values):4}  p50 {statistics.median(values) * 1000:7.1f} ms"
        f"  p99 {p99 * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms"
    )


async def complete(client: LanguageClient, folder: Path, count: list[int]) -> float:
    count[0] += 1
    code, position = cursor_at(f"def total_{count[0]}(items):\n    █\n")
    uri = open_document(client, folder / f"total_{count[0]}.py", code)
    started = time.perf_counter()
    shown = await suggestion(client, uri, position)
    assert shown, "no suggestion"
    return time.perf_counter() - started


async def completions_until(
    client: LanguageClient, folder: Path, count: list[int], done: asyncio.Future[None]
) -> list[float]:
    seen = []
    while not done.done():
        seen.append(await complete(client, folder, count))
        await asyncio.sleep(0.1)
    return seen


def edit(client: LanguageClient, uri: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
                    text="\n",  # a blank line: still valid YAML or JSON
                )
            ],
        )
    )


async def published(client: LanguageClient, uri: str, version: int) -> None:
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and (params.version is None or params.version >= version):
            return


async def generate(
    client: LanguageClient, uri: str, target: str, edits: list[types.ApplyWorkspaceEditParams]
) -> None:
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="headstart.generateFromContract", arguments=[{"uri": uri, "target": target}]
        )
    )
    assert edits, "no workspace/applyEdit came"


async def measure(document: Path, baseline_n: int, target: str | None) -> None:
    with FakeBackend() as fake, tempfile.TemporaryDirectory() as scratch:
        fake.script([{"text": "return total\n", "chunk_chars": 4}])
        folder = Path(scratch)
        text = document.read_text(encoding="utf-8")
        copy = folder / document.name
        copy.write_text(text, encoding="utf-8")
        client = make_test_lsp_client()
        edits: list[types.ApplyWorkspaceEditParams] = []

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            edits.append(params)
            return types.ApplyWorkspaceEditResult(applied=True)

        await client.start_io(*SERVER_COMMAND, env=server_env())
        settings = {**fast_settings(fake.url), "contracts": {"diagnosticsDelayMs": 500}}
        await client.initialize_session(
            types.InitializeParams(
                capabilities=editor_capabilities("vscode"),
                root_uri=folder.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="w")],
                initialization_options=settings,
            )
        )
        count = [0]
        say("baseline")
        await complete(client, folder, count)  # the session's first request: its setup
        baseline = [await complete(client, folder, count) for _ in range(baseline_n)]

        loop = asyncio.get_running_loop()
        language = "json" if copy.suffix == ".json" else "yaml"
        plain = folder / f"plain{copy.suffix}"
        plain.write_text(text.replace("openapi", "openapX", 1), encoding="utf-8")
        done: asyncio.Future[None] = loop.create_future()
        meanwhile = asyncio.ensure_future(completions_until(client, folder, count, done))
        say("the same size, not OpenAPI")
        open_document(client, plain, plain.read_text(encoding="utf-8"), language_id=language)
        await asyncio.sleep(10)
        done.set_result(None)
        control = await meanwhile

        done = loop.create_future()
        meanwhile = asyncio.ensure_future(completions_until(client, folder, count, done))
        started = time.perf_counter()
        say("opened")
        uri = open_document(client, copy, text, language_id=language)
        await published(client, uri, 1)
        opened_s = time.perf_counter() - started
        diagnostics = client.diagnostics.get(uri, [])
        started = time.perf_counter()
        say("edited")
        edit(client, uri, 2)
        await published(client, uri, 2)
        edited_s = time.perf_counter() - started
        started = time.perf_counter()
        say("edited twice")
        edit(client, uri, 3)
        await asyncio.sleep(5)
        edit(client, uri, 4)
        await published(client, uri, 4)
        superseded_s = time.perf_counter() - started
        done.set_result(None)
        during = await meanwhile

        generating: list[float] = []
        if target is not None:
            copy.write_text("\n\n\n" + text, encoding="utf-8")  # the buffer after the 3 edits
            started = time.perf_counter()
            say(f"generate {target}")
            job = asyncio.ensure_future(generate(client, uri, target, edits))
            generating = await completions_until(client, folder, count, job)
            await job
            generate_s = time.perf_counter() - started
        await client.shutdown_session()
        await client.stop()

    size = len(text.encode("utf-8")) / 1e6
    print(f"{document.name}: {size:.1f} MB, {len(diagnostics)} diagnostics")
    print(f"  load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"  didOpen -> publishDiagnostics   {opened_s:6.1f} s (worker start, imports, check)")
    print(f"  didChange -> publishDiagnostics {edited_s:6.1f} s (warm worker, 0.5 s pause in it)")
    print(f"  edit, edit 5 s later -> publish  {superseded_s:6.1f} s (a check past 2 s is stopped)")
    print(spread("completions, no document open", baseline))
    print(spread("completions, same size, not OpenAPI", control))
    print(spread("completions while it is validated", during))
    if target is not None:
        changes = edits[0].edit.document_changes or []
        inserted = sum(
            len(e.new_text)
            for change in changes
            if isinstance(change, types.TextDocumentEdit)
            for e in change.edits
            if isinstance(e, types.TextEdit)
        )
        files = sum(isinstance(change, types.CreateFile) for change in changes)
        print(f"  {target}: {generate_s:.1f} s to workspace/applyEdit, {files} files, "
              f"{inserted / 1e6:.1f} MB")  # fmt: skip
        print(spread(f"completions while {target} runs", generating))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("document", nargs="?", type=Path, default=GITHUB)
    parser.add_argument("--baseline", type=int, default=30, help="completions before it opens")
    parser.add_argument("--generate", metavar="TARGET", help="then run this generate action")
    args = parser.parse_args()
    if not args.document.exists():
        sys.exit(f"{args.document} is missing (benchmarks/aiapi/corpus.py installs it)")
    asyncio.run(measure(args.document, args.baseline, args.generate))


if __name__ == "__main__":
    main()
