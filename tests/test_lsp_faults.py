"""End to end: the model backend misbehaves.

Whatever the fake model does (stalls, drops the connection, answers HTTP 500 or garbage),
the server answers every request with a suggestion or an empty result, within its
timeouts, logs why, hangs up on a stalled stream (so vLLM would free the GPU) and keeps
working: the next keystroke's request gets the model's text.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.backend.local_vllm import free_port

TOTAL_TIMEOUT_S = 3.0  # fast_settings' totalTimeoutMs
HANG_GUARD_S = TOTAL_TIMEOUT_S + 2.0  # a request must never take longer: not a speed test

LINE = "x = █\n"
"""A cursor after a plain statement: line mode, so a broken stream leaves nothing."""
LINE_TEXT = "compute_total(items, tax=0.2)\n"
LINE_SUGGESTION = "compute_total(items, tax=0.2)"

BLOCK = "def f(items):█\n"
"""A cursor after a block opener: block mode, so complete lines of a broken stream stay."""
BLOCK_TEXT = "\n    a = 1\n    b = 2\n    return a + b\n"
BLOCK_SUGGESTION = "\n    a = 1\n    b = 2\n    return a + b"
# chunk_chars 8 cuts BLOCK_TEXT into "\n    a =", " 1\n    b", ...: two chunks hold one
# complete line and the start of the next.
TWO_CHUNKS_SALVAGED = "\n    a = 1"


async def timed_suggestion(client: LanguageClient, uri: str, position: types.Position) -> str:
    """The suggestion, failing the test if the server does not answer within its total
    timeout plus some slack (rather than waiting for pytest's timeout)."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            text = await suggestion(client, uri, position)
    except TimeoutError:
        pytest.fail(f"no answer within {HANG_GUARD_S} s: the server hangs")
    elapsed = time.monotonic() - started
    assert elapsed < HANG_GUARD_S, f"the server took {elapsed:.1f} s to answer"
    return text


FAULTS = [
    pytest.param(
        LINE,
        {"behaviour": "stall_forever", "after_chunks": 0},
        "",
        "completion took longer than 3000 ms",
        "client",
        id="first-chunk-never-comes",
    ),
    pytest.param(
        LINE,
        {"behaviour": "stall", "after_chunks": 2},
        "",
        "no next chunk within 500 ms",
        "client",
        id="stall-mid-stream-line",
    ),
    pytest.param(
        BLOCK,
        {"behaviour": "stall", "after_chunks": 2, "chunk_chars": 8},
        TWO_CHUNKS_SALVAGED,
        "no next chunk within 500 ms",
        "client",
        id="stall-mid-stream-block",
    ),
    pytest.param(
        LINE,
        {"behaviour": "drop", "after_chunks": 2},
        "",
        "stream broken",
        "server",
        id="drop-mid-stream-line",
    ),
    pytest.param(
        BLOCK,
        {"behaviour": "drop", "after_chunks": 2, "chunk_chars": 8},
        TWO_CHUNKS_SALVAGED,
        "stream broken",
        "server",
        id="drop-mid-stream-block",
    ),
    pytest.param(
        LINE,
        {"behaviour": "http_500"},
        "",
        "backend answered HTTP 500",
        "server",
        id="http-500",
    ),
    pytest.param(
        LINE,
        {"behaviour": "garbage", "after_chunks": 2},
        "",
        "malformed stream event",
        "server",
        id="garbage-line",
    ),
    pytest.param(
        BLOCK,
        {"behaviour": "garbage", "after_chunks": 2, "chunk_chars": 8},
        TWO_CHUNKS_SALVAGED,
        "malformed stream event",
        "server",
        id="garbage-block",
    ),
    pytest.param(
        BLOCK,
        {"behaviour": "corrupt", "after_chunks": 2, "chunk_chars": 8},
        TWO_CHUNKS_SALVAGED,
        "corrupt text in the stream",
        "client",
        id="corrupt-text-block",
    ),
    pytest.param(
        LINE,
        {"behaviour": "bad_json_body"},
        "",
        "not an SSE data line: '<html>oops</html>'",
        "server",
        id="bad-json-body",
    ),
]


def open_faulty(
    client: LanguageClient,
    fake: FakeBackend,
    workspace: Path,
    document: str,
    fault: dict[str, Any],
) -> tuple[str, types.Position, str, str]:
    """Script `fault` (the default text answers everything else) and open the document:
    its URI, the cursor, the model's whole text and the suggestion it makes."""
    full_text, full_suggestion = (
        (LINE_TEXT, LINE_SUGGESTION) if document == LINE else (BLOCK_TEXT, BLOCK_SUGGESTION)
    )
    fake.script([{**fault, "text": full_text}], default_text=full_text)
    text, position = cursor_at(document)
    uri = open_document(client, workspace / "faulty.py", text)
    return uri, position, full_text, full_suggestion


@pytest.mark.parametrize(("document", "fault", "expected", "logged", "closed_by"), FAULTS)
async def test_a_fault_that_persists_gives_an_empty_or_salvaged_result(
    vscode: LanguageClient,
    fake: FakeBackend,
    workspace: Path,
    document: str,
    fault: dict[str, Any],
    expected: str,
    logged: str,
    closed_by: str,
) -> None:
    """Every attempt fails the same way: the resumes run out (or the total timeout does),
    whatever complete lines came are kept, and the next request works once the backend
    does."""
    uri, position, full_text, full_suggestion = open_faulty(
        vscode, fake, workspace, document, fault
    )

    assert await timed_suggestion(vscode, uri, position) == expected

    broken = (await fake.wait_for_async(lambda events: events[0]["closed_by"] is not None))[0]
    assert broken["behaviour"] == fault["behaviour"]
    assert not broken["completed"]
    # A stalled stream is hung up by the client, which is what makes vLLM free the GPU.
    # The other faults end the exchange on the fake's side before the client reads them.
    assert broken["closed_by"] == closed_by
    assert logged in logs(vscode)
    assert f"(kept {len(expected)} of " in logs(vscode)
    attempts = len(fake.events())
    assert 1 < attempts <= 4  # resumed, at most three times

    fake.script([], default_text=full_text)
    assert await timed_suggestion(vscode, uri, position) == full_suggestion
    assert fake.events()[-1]["completed"]


@pytest.mark.parametrize(("document", "fault", "expected", "logged", "closed_by"), FAULTS)
async def test_a_fault_once_is_resumed_into_the_whole_suggestion(
    vscode: LanguageClient,
    fake: FakeBackend,
    workspace: Path,
    document: str,
    fault: dict[str, Any],
    expected: str,
    logged: str,
    closed_by: str,
) -> None:
    """The fault happens once (`times: 1`): the stream is resumed within the same request
    and the user gets exactly what an unbroken stream gives. A stream cut after some
    chunks is continued from token ids: the original prompt's plus the kept ones."""
    uri, position, _, full_suggestion = open_faulty(
        vscode, fake, workspace, document, {**fault, "times": 1}
    )

    assert await timed_suggestion(vscode, uri, position) == full_suggestion

    await wait_for_log(vscode, "resuming after")
    events = fake.events()
    assert len(events) == 2 and events[1]["completed"]
    if fault.get("after_chunks", 0) > 0:  # chunks came, and the prompt's ids with them
        assert isinstance(events[1]["prompt"], list)
    else:
        assert events[1]["prompt"] == events[0]["prompt"]


async def test_a_slow_backend_within_the_timeouts_gives_the_whole_suggestion(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    fake.script([{"text": LINE_TEXT, "first_delay_ms": 300, "chunk_delay_ms": 50}])
    text, position = cursor_at(LINE)
    uri = open_document(vscode, workspace / "slow.py", text)

    assert await timed_suggestion(vscode, uri, position) == LINE_SUGGESTION
    (event,) = fake.events()
    assert event["completed"] and event["closed_by"] == "server"
    assert "inline completion in" in logs(vscode)
    assert f"line, {len(LINE_SUGGESTION)} chars" in logs(vscode)
    assert "backend:" not in logs(vscode)  # no warning: slow is not broken


async def test_a_long_stall_is_cut_by_the_total_timeout_and_hung_up(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Chunks that each come within the chunk gap but never end are stopped at the total
    timeout; the complete lines received so far are kept."""
    endless = "\n" + "".join(f"    step({n:03})\n" for n in range(200))
    fake.script(
        [{"text": endless, "chunk_chars": 14, "chunk_delay_ms": 400, "times": 1}],
        default_text=BLOCK_TEXT,
    )
    text, position = cursor_at(BLOCK)
    uri = open_document(vscode, workspace / "endless.py", text)

    kept = await timed_suggestion(vscode, uri, position)

    lines = kept.count("step(")
    assert lines >= 1 and kept == endless[: endless.index(f"step({lines:03})") - 5]  # whole lines
    (event,) = await fake.wait_for_async(lambda events: events[0]["closed_by"] is not None)
    assert event["closed_by"] == "client"
    assert "completion took longer than 3000 ms" in logs(vscode)
    assert f"(kept {len(kept)} of " in logs(vscode)
    assert await timed_suggestion(vscode, uri, position) == BLOCK_SUGGESTION


async def test_a_backend_that_comes_up_late_is_used_once_it_is_up(
    fresh: LanguageClient, workspace: Path
) -> None:
    """Nothing answers at first (neither /v1/models nor completions); the model lookup is
    retried by the next request once the backend is up.

    The fake cannot fail /v1/models alone, so the whole backend starts late, on the port
    the server was configured with.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    await start_session(fresh, "vscode", workspace, fast_settings(url))
    text, position = cursor_at(LINE)
    uri = open_document(fresh, workspace / "late.py", text)

    assert await timed_suggestion(fresh, uri, position) == ""
    assert f"cannot reach {url}" in logs(fresh)

    late = FakeBackend(model="late-model", default_text=LINE_TEXT, extra_args=["--port", str(port)])
    with late:
        assert await timed_suggestion(fresh, uri, position) == LINE_SUGGESTION
        # the model name comes from /v1/models, asked again after the first failure
        assert late.events()[-1]["model"] == "late-model"
