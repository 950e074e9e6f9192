"""`log.requestTrace`: every request the server sends is recorded with how it ended, so
`headstart bench replay` can send a team's requests again, cancels included."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, open_document, partial_change, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.backend.trace import RequestTrace, read_trace


async def test_each_request_is_traced_with_its_body_and_how_it_ended(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    trace_path = tmp_path / "trace" / "requests.jsonl"
    settings = fast_settings(fake.url)
    settings["log"] = {"requestTrace": str(trace_path)}
    await start_session(fresh, "vscode", workspace, settings)
    fake.script(
        [
            {"match": "x = <|fim_suffix|>", "text": "never_seen\n", "first_delay_ms": 900},
            {"match": "x = c<|fim_suffix|>", "text": "ompute_total(items)\n"},
        ]
    )
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "traced.py", text)
    older = asyncio.ensure_future(suggestion(fresh, uri, position))
    await fake.wait_for_async(lambda events: len(events) == 1)
    fresh.text_document_did_change(partial_change(uri, 2, position, position, "c"))
    typed = types.Position(line=position.line, character=position.character + 1)
    assert await suggestion(fresh, uri, typed) == "ompute_total(items)"
    assert await older == ""

    received = [event["body"] for event in fake.events()]
    for _ in range(100):  # a line is written when its stream ends
        traced = read_trace(trace_path) if trace_path.exists() else []
        if len(traced) == 2:
            break
        await asyncio.sleep(0.05)
    by_end = {request["end"]: request for request in traced}
    assert set(by_end) == {"cancelled", "done"}
    assert [request["body"] for request in traced] == received
    assert by_end["done"]["chunks"] >= 1 and by_end["done"]["firstMs"] <= by_end["done"]["endMs"]
    assert by_end["cancelled"]["chunks"] == 0 and "firstMs" not in by_end["cancelled"]
    assert by_end["cancelled"]["endMs"] < 900
    assert traced[0]["sent"] <= traced[1]["sent"]
    assert by_end["done"]["typesOn"] is True  # "c" typed at the first request's cursor
    assert "typesOn" not in by_end["cancelled"]


def test_a_half_written_line_is_skipped_and_an_unwritable_trace_stops_quietly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    trace = RequestTrace(path)
    trace.record({"prompt": "b"}, sent=2.0, first_ms=None, end_ms=5.0, chunks=0, end="error")
    trace.record({"prompt": "a"}, sent=1.0, first_ms=1.0, end_ms=3.0, chunks=2, end="done")
    trace.close()
    with path.open("a") as out:
        out.write('{"sent": 3.0, "bo')

    assert [r["body"]["prompt"] for r in read_trace(path)] == ["a", "b"]

    blocked = RequestTrace(tmp_path / "file" / "trace.jsonl")
    (tmp_path / "file").write_text("a file where a folder should be")
    blocked.record({}, sent=1.0, first_ms=None, end_ms=1.0, chunks=0, end="done")
    blocked.record({}, sent=1.0, first_ms=None, end_ms=1.0, chunks=0, end="done")
    assert not (tmp_path / "file").is_dir()


async def test_a_line_read_on_for_its_block_is_traced_with_where_the_line_was_shown(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """With `continueInBackground` the suggestion's line is shown while the stream goes on
    for the block; the trace says after how many events (`lineChunks`), so that a replayed
    user whose background work is paused can close the request there, as its server would."""
    trace_path = tmp_path / "requests.jsonl"
    settings = fast_settings(fake.url, continueInBackground=True)
    settings["log"] = {"requestTrace": str(trace_path)}
    await start_session(fresh, "vscode", workspace, settings)
    fake.script([{"match": "", "text": "compute(items)\ny = total(x)\nz = y * 2\n"}])
    text, position = cursor_at("x = █\n")
    uri = open_document(fresh, workspace / "block.py", text)

    assert await suggestion(fresh, uri, position) == "compute(items)"

    for _ in range(100):  # written when the background stream ends
        if trace_path.exists() and read_trace(trace_path):
            break
        await asyncio.sleep(0.05)
    (traced,) = read_trace(trace_path)
    assert traced["end"] == "done"
    assert 1 <= traced["lineChunks"] < traced["chunks"]
